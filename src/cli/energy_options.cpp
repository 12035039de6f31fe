#include "cli/energy_options.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kComponents = "CPU and DRAM (RAPL)";
constexpr std::string_view kCarbon = "Carbon and cost";

double number(const parsed_args& args, std::string_view name, std::string_view expected) {
  const auto v = args.get(name);
  const auto d = parse_double(*v);
  if (!d) throw usage_error(fmt::format("--{} '{}': expected {}", name, *v, expected));
  return *d;
}

}  // namespace

const std::vector<option_spec>& component_option_specs() {
  static const std::vector<option_spec> options = {
      {"components", 0, "LIST",
       "What to measure: a comma-separated list of gpu, cpu (RAPL package domains) and dram "
       "(RAPL DRAM domains). Named components that cannot be measured are an error, with the "
       "fix; JOULES_POWERCAP_ROOT points RAPL at another powercap tree.",
       "gpu, plus cpu and dram where RAPL can be read (what cannot is said in the summary)", false,
       kComponents},
      {"estimate-cpu", 0, "",
       "Where RAPL cannot measure the CPU, estimate it as TDP x (0.1 + 0.9 x utilisation), "
       "labelled estimated, with the TDP of the CPU model from joules' table (or --cpu-tdp).",
       "", false, kComponents},
      {"cpu-tdp", 0, "W", "TDP of one CPU socket in watts for --estimate-cpu, 1 to 2000.",
       "the CPU model's, from data/cpu_tdp.csv", false, kComponents},
  };
  return options;
}

const std::vector<option_spec>& carbon_option_specs() {
  static const std::vector<option_spec> options = {
      {"pue", 0, "X",
       "Power usage effectiveness of the facility, 1.0 to 5.0: the measured energy times X is "
       "what the grid delivered (cooling, power conversion).",
       "1.0 (the measured devices only)", false, kCarbon},
      {"carbon-intensity", 0, "G",
       "Carbon intensity of the electricity in grams of CO2e per kWh, 0 to 2000; overrides "
       "--region's.",
       "from --region", false, kCarbon},
      {"region", 0, "REGION",
       "Where the electricity comes from, for its carbon intensity (shipped tables, no network): "
       "an ISO country code (DE, FRA), a US state (US-CA) or a cloud region (gcp:europe-west4, "
       "aws:us-east-1, azure:westeurope). One the tables do not list is an error, with the "
       "closest they do, unless --carbon-intensity gives the figure.",
       "JOULES_REGION, else none: energy only, no CO2e", false, kCarbon},
      {"price-per-kwh", 0, "P", "Price of one kWh, for the energy cost (PUE included).", "", false,
       kCarbon},
      {"currency", 0, "CODE", "ISO 4217 code of --price-per-kwh's currency.", "USD", false,
       kCarbon},
  };
  return options;
}

void read_component_options(const parsed_args& args, component_options& out) {
  if (auto v = args.get("components")) {
    out.named = true;
    out.gpu = out.cpu = out.dram = false;
    for (const auto& part : split(*v, ',')) {
      const auto c = trim(part);
      if (c == "gpu") {
        out.gpu = true;
      } else if (c == "cpu") {
        out.cpu = true;
      } else if (c == "dram") {
        out.dram = true;
      } else {
        throw usage_error(fmt::format(
            "--components '{}': expected a comma-separated list of gpu, cpu and dram", *v));
      }
    }
  }
  out.estimate_cpu = args.has("estimate-cpu");
  if (args.has("cpu-tdp")) {
    const double w = number(args, "cpu-tdp", "watts from 1 to 2000");
    if (!(w >= 1.0 && w <= 2000.0)) {
      throw usage_error(
          fmt::format("--cpu-tdp '{}': expected watts from 1 to 2000", *args.get("cpu-tdp")));
    }
    if (!out.estimate_cpu) throw usage_error("--cpu-tdp applies only with --estimate-cpu");
    out.cpu_tdp_w = w;
  }
  if (out.estimate_cpu && !out.cpu) {
    throw usage_error("--estimate-cpu: --components leaves out cpu");
  }
}

carbon::settings read_carbon_settings(const parsed_args& args) {
  carbon::settings s;
  // The text goes along so that messages echo what was typed ("1e9", not "1000000000").
  if (args.has("pue")) {
    s.pue = number(args, "pue", "a number from 1.0 to 5.0, e.g. 1.2");
    s.pue_text = *args.get("pue");
  }
  if (args.has("carbon-intensity")) {
    s.carbon_intensity = number(args, "carbon-intensity", "grams of CO2e per kWh, e.g. 350");
    s.carbon_intensity_text = *args.get("carbon-intensity");
  }
  if (args.has("price-per-kwh")) {
    s.price_per_kwh = number(args, "price-per-kwh", "a price per kWh, e.g. 0.25");
    s.price_per_kwh_text = *args.get("price-per-kwh");
  }
  if (auto c = args.get("currency")) {
    if (!args.has("price-per-kwh"))
      throw usage_error("--currency applies only with --price-per-kwh");
    s.currency = *c;
  }
  if (auto r = args.get("region")) {
    s.region = *r;
    s.region_from = "--region";
  } else if (const char* env = std::getenv("JOULES_REGION"); env != nullptr && *env != '\0') {
    s.region = std::string(env);
    s.region_from = "JOULES_REGION";
  }
  return s;
}

}  // namespace joules::cli
