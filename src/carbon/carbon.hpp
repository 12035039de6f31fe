#pragma once
// Energy into kWh, CO2e and money, every factor with where it came from (DESIGN.md invariant 3;
// docs/carbon.md).
//
//   facility kWh = measured kWh x PUE              (--pue, default 1.0: the measured devices only)
//   CO2e (g)     = facility kWh x grid intensity   (--carbon-intensity, else --region, else
//                                                   JOULES_REGION, looked up in data/)
//   cost         = facility kWh x price            (--price-per-kwh, --currency)
//
// No region, no network, no guessing: without a region or an intensity there is no CO2e, and the
// records say why.  Regions: ISO 3166-1 countries (DE, DEU), US states (US-CA), cloud regions
// (gcp:europe-west4, aws:us-east-1, azure:westeurope).
//
// Thread-safety: factors and assessments are plain values; the tables are immutable after their
// first use (a function-local static).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/json_writer.hpp"

namespace joules::carbon {

// A grid carbon intensity and its provenance.
struct intensity {
  double g_per_kwh = 0.0;
  std::string region;  // as the user gave it, normalised: "DE", "US-CA", "gcp:europe-west4"
  std::string name;    // "Germany", "California", "gcp europe-west4 (Eemshaven, NL)"
  std::string source;  // the publisher, or "--carbon-intensity"
  std::optional<int> year;
  // user | country_average | us_state_average | cloud_provider (the provider's own figure for
  // the region) | cloud_region_location (the grid average where the region is)
  std::string method;
  std::string licence;
};

struct price {
  double per_kwh = 0.0;
  std::string currency = "USD";
  std::string source = "--price-per-kwh";
};

// A familiar equivalent for people: the CO2e of driving a car one km.
struct equivalent {
  std::string name;  // "car_km"
  double g_per_unit = 0.0;
  std::string unit;
  std::optional<int> year;
  std::string source;
};

// What the options say (cli/energy_options.hpp reads them).
struct settings {
  std::optional<double> pue;
  std::optional<double> carbon_intensity;  // gCO2e/kWh
  std::optional<std::string> region;
  std::string region_from = "--region";  // or "JOULES_REGION"
  std::optional<double> price_per_kwh;
  std::string currency = "USD";
};

struct factors {
  double pue = 1.0;
  std::string pue_source = "default";  // or "--pue"
  std::optional<intensity> grid;
  std::optional<price> cost;
  std::optional<equivalent> car;
  std::string region;  // the region given, even when it is not in the tables
  std::string note;    // why there is no CO2e, when there is none
};

// Which kind of region a text names.  Throws nothing; malformed text is region_kind::malformed.
enum class region_kind { country, us_state, cloud, malformed };
region_kind classify_region(std::string_view region);

// The intensity of a region from the shipped tables; nullopt when it is well formed but not in
// them.  `region` must not be malformed.
std::optional<intensity> lookup_region(std::string_view region);

// Settings into factors.  Throws usage_error (naming the value and what is accepted) for a
// malformed region or out-of-range numbers; a region that is well formed but unknown gives
// factors without an intensity and a note.
factors resolve(const settings& s);

struct assessment {
  double energy_j = 0.0;
  double energy_kwh = 0.0;           // measured
  double facility_energy_kwh = 0.0;  // x PUE
  std::optional<double> co2e_g;
  std::optional<double> cost;
  std::optional<double> car_km;
  factors basis;  // the factors used
};

assessment assess(const factors& f, double energy_j);

// The factors as a JSON object (session_start "carbon"; Prometheus info labels).
void write_factors_json(json_writer& w, const factors& f);
// A full assessment as a JSON object (session_end "carbon"), provenance included.
void write_json(json_writer& w, const assessment& a);
// The numbers only, as fields of the current object (step and phase records: the provenance is
// in session_start and session_end): energy_kwh, co2e_g, cost.
void write_fields(json_writer& w, const assessment& a);

// For the summary line: "; 0.25 kWh, 86 g CO2e (DE 344 g/kWh, Ember ... 2024), 0.08 EUR, like
// driving 0.8 km" or "; no CO2e: ...".
std::string summary_text(const assessment& a);

// The named data tables and their row counts, for joules doctor and tests.
struct table_info {
  std::string name;
  std::size_t rows = 0;
};
std::vector<table_info> tables();

}  // namespace joules::carbon
