#pragma once
// Regions (--region, JOULES_REGION): which kind of place a text names, its grid carbon intensity
// in the tables compiled into joules (data/README.md), and, for a text the tables do not list,
// the closest names they do list (docs/carbon.md).
//
//   ISO 3166-1 alpha-2 or alpha-3   DE, DEU (both give DE)     grid_intensity.csv
//   US state (ISO 3166-2)           US-CA                      grid_intensity.csv
//   cloud region                    gcp:europe-west4           cloud_regions.csv
//
// Pure logic over the tables given (tests pass their own); the shipped ones by default.
// Thread-safety: free functions; the shipped tables are immutable after their first use.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/csv.hpp"

namespace joules::carbon {

// A grid carbon intensity and its provenance.
struct intensity {
  double g_per_kwh = 0.0;
  std::string region;       // normalised: "DE" (for de, DEU), "US-CA", "gcp:europe-west4"
  std::string name;         // "Germany", "California", "gcp europe-west4 (Eemshaven, NL)"
  std::string source;       // the publisher, or "--carbon-intensity"
  std::optional<int> year;  // the year the figure describes
  // user | country_average | us_state_average | cloud_provider (the provider's own figure for
  // the region) | cloud_region_location (the grid average where the region is)
  std::string method;
  std::string licence;
  std::string attribution;  // the credit line the licence asks for (CC BY), else empty
};

// Which kind of region a text names.  Malformed text is region_kind::malformed.
enum class region_kind { country, us_state, cloud, malformed };
region_kind classify_region(std::string_view region);

// "de" -> "DE", "GCP:Europe-West4" -> "gcp:europe-west4": case only, no table.
std::string normalised_region(std::string_view region);

// The rows (header skipped) of grid_intensity.csv and cloud_regions.csv.
struct region_tables {
  std::span<const csv_row>
      grid;  // region,alpha3,name,g_co2e_per_kwh,year,source,licence[,attribution]
  std::span<const csv_row>
      cloud;  // provider,region,location,city,g_co2e_per_kwh,year,source,licence
};
const region_tables& shipped_region_tables();

struct region_match {
  std::string region;             // normalised and canonical: "DE" for DEU
  std::optional<intensity> grid;  // nullopt: the tables list the region without a figure
  std::string missing;            // then: why, in words
};

// The region `text` names, when the tables list it.  `text` must not be malformed.
std::optional<region_match> find_region(std::string_view text,
                                        const region_tables& tables = shipped_region_tables());

// Up to `n` regions of the tables that `text` may have meant, closest first: known aliases
// (UK -> GB), a country or state named in full, then codes and cloud regions within a small edit
// distance or sharing the longest prefix.  Each as "GB (United Kingdom)" or "gcp:europe-west9
// (Paris, FR)".  Empty when nothing is close.
std::vector<std::string> close_regions(std::string_view text,
                                       const region_tables& tables = shipped_region_tables(),
                                       std::size_t n = 3);

}  // namespace joules::carbon
