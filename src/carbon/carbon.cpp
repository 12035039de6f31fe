#include "carbon/carbon.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "data/csv.hpp"
#include "data/embedded_data.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::carbon {
namespace {

constexpr double kJoulesPerKwh = 3.6e6;

const std::vector<csv_row>& rows_of(std::string_view name) {
  // Each table is parsed the first time it is asked for, and only then: a run that names no
  // region must not pay for parsing them all (the CPU table alone is ~5000 rows) at start-up.
  // Any thread may ask (the mutex guards the cache; map entries never move).
  static std::mutex mu;
  static std::map<std::string_view, std::vector<csv_row>> parsed;
  static const std::vector<csv_row> none;
  std::lock_guard lock(mu);
  if (const auto it = parsed.find(name); it != parsed.end()) return it->second;
  for (const auto& f : data::files()) {
    if (f.name == name) return parsed[f.name] = parse_csv(f.text, /*skip_header=*/true);
  }
  return none;
}

std::optional<equivalent> car_equivalent() {
  for (const auto& r : rows_of("equivalents.csv")) {
    if (r.size() < 6 || r[0] != "car_km") continue;
    const auto g = parse_double(r[1]);
    if (!g || *g <= 0) continue;
    return equivalent{r[0], *g, r[2], parse_year(r[3]), r[4]};
  }
  return std::nullopt;
}

// A number of the settings as the user typed it, else as joules prints it.
std::string shown(const std::string& text, double value) {
  return text.empty() ? fmt::format("{}", value) : text;
}

// "--region 'UK'" or "JOULES_REGION 'UK' (from the environment)".
std::string region_origin(const settings& s) {
  return s.region_from == "JOULES_REGION"
             ? fmt::format("JOULES_REGION '{}' (from the environment)", *s.region)
             : fmt::format("{} '{}'", s.region_from, *s.region);
}

// "; did you mean GB (United Kingdom)?" or "" when nothing is close.
std::string suggestion(const std::string& region, const region_tables& tables) {
  const auto close = close_regions(region, tables);
  if (close.empty()) return "";
  std::string list = close.front();
  for (std::size_t i = 1; i < close.size(); ++i)
    list += (i + 1 == close.size() ? " or " : ", ") + close[i];
  return fmt::format("; did you mean {}?", list);
}

// For people: 3 significant digits in plain decimals (0.0000661, 4.18, 1234), never exponents.
std::string num(double v) {
  if (v == 0.0 || !std::isfinite(v)) return "0";
  const double a = std::abs(v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  const int decimals = std::min(12, 2 - static_cast<int>(std::floor(std::log10(a))));
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0')
      s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// "Ember and Energy Institute, via Our World in Data (carbon-intensity-electricity)" -> without
// the parenthesis: the records keep the whole name.
std::string short_source(const std::string& source) {
  const auto p = source.find(" (");
  return p == std::string::npos ? source : source.substr(0, p);
}

std::string distance(double km) {
  if (km >= 1.0) return fmt::format("{} km", num(km));
  return fmt::format("{} m", num(km * 1000.0));
}

}  // namespace

std::optional<intensity> lookup_region(std::string_view region) {
  auto m = find_region(region);
  return m ? m->grid : std::nullopt;
}

factors resolve(const settings& s) {
  // No region, no lookup: start-up does not pay for parsing the region tables.
  return s.region ? resolve(s, shipped_region_tables()) : resolve(s, region_tables{});
}

factors resolve(const settings& s, const region_tables& tables) {
  factors f;
  if (s.pue) {
    if (!(*s.pue >= 1.0 && *s.pue <= 5.0)) {
      throw usage_error(
          fmt::format("--pue '{}': expected a power usage effectiveness from 1.0 to 5.0, e.g. 1.2",
                      shown(s.pue_text, *s.pue)));
    }
    f.pue = *s.pue;
    f.pue_source = "--pue";
  }
  std::optional<region_match> match;
  if (s.region) {
    const std::string& r = *s.region;
    if (classify_region(r) == region_kind::malformed) {
      throw usage_error(fmt::format(
          "{}: expected an ISO country code (DE, FRA), a US state (US-CA) or a cloud region "
          "(gcp:europe-west4, aws:us-east-1, azure:westeurope){}",
          region_origin(s), suggestion(r, tables)));
    }
    match = find_region(r, tables);
    // A region the tables do not list is a typo or a place joules cannot price: never run on
    // without the CO2e the user asked for.  With --carbon-intensity it is only a label.
    if (!match && !s.carbon_intensity) {
      throw usage_error(
          fmt::format("{} is not in joules' tables{} (docs/carbon.md says which regions they hold; "
                      "--carbon-intensity G gives "
                      "the figure for any region)",
                      region_origin(s), suggestion(r, tables)));
    }
    f.region = match ? match->region : normalised_region(r);
  }
  if (s.carbon_intensity) {
    const double g = *s.carbon_intensity;
    if (!(g >= 0.0 && g <= 2000.0)) {
      throw usage_error(fmt::format(
          "--carbon-intensity '{}': expected grams of CO2e per kWh from 0 to 2000, e.g. 350",
          shown(s.carbon_intensity_text, g)));
    }
    intensity i;
    i.g_per_kwh = g;
    i.region = f.region;
    i.name = f.region;
    i.source = "--carbon-intensity";
    i.method = "user";
    f.grid = i;
  } else if (match) {
    f.grid = match->grid;
    if (!f.grid) {
      f.note =
          fmt::format("region '{}' (from {}): {}; give --carbon-intensity G for a carbon figure",
                      f.region, s.region_from, match->missing);
    }
  } else {
    f.note = "no region given (--region, JOULES_REGION) and no --carbon-intensity";
  }
  if (s.price_per_kwh) {
    const double p = *s.price_per_kwh;
    if (!(p >= 0.0 && p <= 1000.0)) {
      throw usage_error(
          fmt::format("--price-per-kwh '{}': expected a price per kWh from 0 to 1000, e.g. 0.25",
                      shown(s.price_per_kwh_text, p)));
    }
    f.cost = price{p, s.currency, "--price-per-kwh"};
  }
  const bool iso_currency =
      s.currency.size() == 3 && std::all_of(s.currency.begin(), s.currency.end(),
                                            [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!iso_currency) {
    throw usage_error(fmt::format(
        "--currency '{}': expected a three-letter ISO 4217 code in capitals, e.g. EUR or USD",
        s.currency));
  }
  f.car = car_equivalent();
  return f;
}

assessment assess(const factors& f, double energy_j) {
  assessment a;
  a.basis = f;
  a.energy_j = energy_j;
  a.energy_kwh = energy_j / kJoulesPerKwh;
  a.facility_energy_kwh = a.energy_kwh * f.pue;
  if (f.grid) a.co2e_g = a.facility_energy_kwh * f.grid->g_per_kwh;
  if (f.cost) a.cost = a.facility_energy_kwh * f.cost->per_kwh;
  if (a.co2e_g && f.car) a.car_km = *a.co2e_g / f.car->g_per_unit;
  return a;
}

void write_factors_json(json_writer& w, const factors& f) {
  w.begin_object();
  w.field("pue", f.pue).field("pue_source", f.pue_source);
  w.field("region", f.region.empty() ? std::optional<std::string>() : std::optional(f.region));
  w.key("intensity");
  if (f.grid) {
    const intensity& i = *f.grid;
    w.begin_object();
    w.field("g_per_kwh", i.g_per_kwh);
    w.field("region", i.region.empty() ? std::optional<std::string>() : std::optional(i.region));
    w.field("name", i.name.empty() ? std::optional<std::string>() : std::optional(i.name));
    w.field("source", i.source).field("year", i.year).field("method", i.method);
    w.field("licence", i.licence.empty() ? std::optional<std::string>() : std::optional(i.licence));
    w.field("attribution",
            i.attribution.empty() ? std::optional<std::string>() : std::optional(i.attribution));
    w.end_object();
  } else {
    w.null();
  }
  w.key("price");
  if (f.cost) {
    w.begin_object()
        .field("per_kwh", f.cost->per_kwh)
        .field("currency", f.cost->currency)
        .field("source", f.cost->source)
        .end_object();
  } else {
    w.null();
  }
  w.field("note", f.note.empty() ? std::optional<std::string>() : std::optional(f.note));
  w.end_object();
}

void write_json(json_writer& w, const assessment& a) {
  const factors& f = a.basis;
  const std::optional<std::string> region =
      f.region.empty() ? std::nullopt : std::optional(f.region);
  w.begin_object();
  w.field("energy_kwh", a.energy_kwh);
  w.field("pue", f.pue).field("pue_source", f.pue_source);
  w.field("facility_energy_kwh", a.facility_energy_kwh);
  w.field("co2e_g", a.co2e_g);
  w.key("co2e");
  if (f.grid) {
    const intensity& i = *f.grid;
    w.begin_object();
    w.field("g", a.co2e_g).field("intensity_g_per_kwh", i.g_per_kwh);
    w.field("source", i.source).field("year", i.year);
    w.field("region", i.region.empty() ? region : std::optional(i.region));
    w.field("method", i.method);
    w.field("name", i.name.empty() ? std::optional<std::string>() : std::optional(i.name));
    w.field("licence", i.licence.empty() ? std::optional<std::string>() : std::optional(i.licence));
    w.field("attribution",
            i.attribution.empty() ? std::optional<std::string>() : std::optional(i.attribution));
    w.end_object();
  } else {
    w.null();
  }
  w.field("cost", a.cost);
  w.key("cost_basis");
  if (f.cost) {
    w.begin_object();
    w.field("amount", a.cost).field("currency", f.cost->currency);
    w.field("price_per_kwh", f.cost->per_kwh).field("source", f.cost->source);
    w.field("year", std::optional<int>()).field("region", region).field("method", "user_price");
    w.end_object();
  } else {
    w.null();
  }
  w.key("equivalent");
  if (a.car_km && f.car) {
    w.begin_object();
    w.field("car_km", a.car_km).field("g_per_km", f.car->g_per_unit);
    w.field("source", f.car->source).field("year", f.car->year);
    w.end_object();
  } else {
    w.null();
  }
  w.field("note", f.note.empty() ? std::optional<std::string>() : std::optional(f.note));
  w.end_object();
}

void write_fields(json_writer& w, const assessment& a) {
  w.field("energy_kwh", a.energy_kwh);
  w.field("facility_energy_kwh", a.facility_energy_kwh);
  w.field("co2e_g", a.co2e_g);
  w.field("cost", a.cost);
}

std::vector<std::pair<std::string, std::string>> summary_pieces(const assessment& a) {
  const factors& f = a.basis;
  std::string s;
  if (f.pue != 1.0) {
    s += fmt::format("{} kWh x PUE {} = {} kWh", num(a.energy_kwh), num(f.pue),
                     num(a.facility_energy_kwh));
  } else {
    s += fmt::format("{} kWh", num(a.energy_kwh));
  }
  if (a.co2e_g && f.grid) {
    const intensity& i = *f.grid;
    const std::string where = i.region.empty() ? std::string() : i.region + ", ";
    const std::string year = i.year ? fmt::format(" {}", *i.year) : std::string();
    s += fmt::format(", {} g CO2e ({}{} g/kWh, {}{})", num(*a.co2e_g), where, num(i.g_per_kwh),
                     short_source(i.source), year);
  }
  if (a.cost && f.cost) s += fmt::format(", {} {}", num(*a.cost), f.cost->currency);
  if (a.car_km) s += fmt::format(", like driving {} by car", distance(*a.car_km));
  std::vector<std::pair<std::string, std::string>> out = {{"energy", s}};
  if (!a.co2e_g) out.emplace_back("CO2e", fmt::format("no CO2e: {}", f.note));
  return out;
}

std::string summary_text(const assessment& a) {
  std::string s;
  for (const auto& [label, text] : summary_pieces(a))
    s += "; " + text;
  return s;
}

std::vector<table_info> tables() {
  std::vector<table_info> out;
  for (const auto& f : data::files())
    out.push_back({std::string(f.name), rows_of(f.name).size()});
  return out;
}

}  // namespace joules::carbon
