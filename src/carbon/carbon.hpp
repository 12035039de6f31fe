#pragma once
// Energy into kWh, CO2e and money, every factor with where it came from (docs/carbon.md).
//
//   facility kWh = measured kWh x PUE              (--pue, default 1.0: the measured devices only)
//   CO2e (g)     = facility kWh x grid intensity   (--carbon-intensity, else --region, else
//                                                   JOULES_REGION, looked up in data/)
//   cost         = facility kWh x price            (--price-per-kwh, --currency)
//
// No network, no guessing: without a region or an intensity there is no CO2e, and the records say
// why; a region the tables do not list is bad input (with the closest names they do list), never
// replaced by another.  Regions: regions.hpp.
//
// Thread-safety: factors and assessments are plain values; the tables are immutable after their
// first use (a function-local static).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "carbon/regions.hpp"
#include "util/json_writer.hpp"

namespace joules::carbon {

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

// What the options say (src/cli/shared_options.cpp declares them).
struct settings {
  std::optional<double> pue;
  std::optional<double> carbon_intensity;  // gCO2e/kWh
  std::optional<std::string> region;
  std::string region_from = "--region";  // or "JOULES_REGION"
  std::optional<double> price_per_kwh;
  std::string currency = "USD";
  // The numbers as the user typed them, for messages ("1e9" stays 1e9); empty: the value.
  std::string pue_text;
  std::string carbon_intensity_text;
  std::string price_per_kwh_text;
};

struct factors {
  double pue = 1.0;
  std::string pue_source = "default";  // or "--pue"
  std::optional<intensity> grid;
  std::optional<price> cost;
  std::optional<equivalent> car;
  std::string region;  // the region given, normalised ("DE" for DEU)
  std::string note;    // why there is no CO2e, when there is none
};

// The intensity of a region from the shipped tables; nullopt when they do not list it or list
// it without a figure.  `region` must not be malformed.
std::optional<intensity> lookup_region(std::string_view region);

// Settings into factors.  Throws usage_error (one line naming the value, where it came from and
// what is accepted) for out-of-range numbers, a malformed region, and a region the tables do not
// list (with the closest ones they do) unless --carbon-intensity gives the figure.  A region the
// tables list without a figure gives factors without an intensity and a note.
factors resolve(const settings& s, const region_tables& tables);
// The same against the shipped tables, which are parsed only when a region is given.
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
// The same as (label, text) pieces: "energy" (kWh, CO2e, cost), and "CO2e" (why there is none).
std::vector<std::pair<std::string, std::string>> summary_pieces(const assessment& a);

// The named data tables and their row counts, for joules doctor and tests.
struct table_info {
  std::string name;
  std::size_t rows = 0;
};
std::vector<table_info> tables();

}  // namespace joules::carbon
