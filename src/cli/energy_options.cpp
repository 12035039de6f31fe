// --pue, --carbon-intensity, --region, --price-per-kwh, --currency (docs/carbon.md).

#include <cstdlib>

#include "cli/shared_options.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kCarbon = "Carbon and cost";

}  // namespace

void declare_carbon(options::option_table& t, carbon::settings& out) {
  t.group(kCarbon);
  t.number("pue", "X",
           "Power usage effectiveness of the facility: the measured energy times X is what the "
           "grid delivered (cooling, power conversion).",
           "1.0: the measured devices only", 1.0, 5.0,
           "a power usage effectiveness from 1.0 to 5.0, e.g. 1.2",
           [&out](double v, const std::string& text) {
             out.pue = v;
             out.pue_text = text;
           });
  t.number("carbon-intensity", "G",
           "Carbon intensity of the electricity in grams of CO2e per kWh; overrides --region's.",
           "from --region", 0.0, 2000.0, "grams of CO2e per kWh from 0 to 2000, e.g. 350",
           [&out](double v, const std::string& text) {
             out.carbon_intensity = v;
             out.carbon_intensity_text = text;
           });
  t.text("region", 0, "REGION",
         "Where the electricity comes from, for its carbon intensity (shipped tables, no "
         "network): an ISO country code (DE, FRA), a US state (US-CA) or a cloud region "
         "(gcp:europe-west4, aws:us-east-1, azure:westeurope). One the tables do not list is an "
         "error, with the closest they do, unless --carbon-intensity gives the figure.",
         "JOULES_REGION, else none: energy only, no CO2e", [&out](const std::string& v) {
           out.region = v;
           out.region_from = "--region";
         });
  CLI::Option* price =
      t.number("price-per-kwh", "P", "Price of one kWh, for the energy cost (PUE included).", "",
               0.0, 1000.0, "a price per kWh from 0 to 1000, e.g. 0.25",
               [&out](double v, const std::string& text) {
                 out.price_per_kwh = v;
                 out.price_per_kwh_text = text;
               });
  CLI::Option* currency =
      t.text("currency", 0, "CODE", "ISO 4217 code of --price-per-kwh's currency.", "USD",
             [&out](const std::string& v) { out.currency = v; });
  t.needs(currency, price);
}

carbon::factors resolve_carbon(carbon::settings s) {
  if (!s.region) {
    if (const char* env = std::getenv("JOULES_REGION"); env != nullptr && *env != '\0') {
      s.region = std::string(env);
      s.region_from = "JOULES_REGION";
    }
  }
  return carbon::resolve(s);
}

}  // namespace joules::cli
