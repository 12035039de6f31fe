// Carbon and cost: the shipped tables hold the published values, factors flow into every output
// with their provenance, and an unknown region means energy only.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "carbon/carbon.hpp"
#include "data/csv.hpp"
#include "util/error.hpp"

namespace joules::carbon {
namespace {

std::string de_attribution() {
  return "Ember (2025); Energy Institute - Statistical Review of World Energy (2025) - with major "
         "processing by Our World in Data";
}

TEST(CarbonTables, KnownPublishedValues) {
  // Our World in Data (Ember, Energy Institute): latest year per country.
  const auto de = lookup_region("DE");
  ASSERT_TRUE(de);
  EXPECT_NEAR(de->g_per_kwh, 344.1, 1e-9);
  EXPECT_EQ(de->year, 2024);
  EXPECT_EQ(de->method, "country_average");
  EXPECT_EQ(de->licence, "CC BY 4.0");
  EXPECT_NE(de->source.find("Our World in Data"), std::string::npos);
  EXPECT_EQ(de->attribution,
            "Ember (2025); Energy Institute - Statistical Review of World Energy (2025) - with "
            "major processing by Our World in Data");
  EXPECT_NEAR(lookup_region("FRA")->g_per_kwh, 44.2, 1e-9);  // alpha-3 too
  EXPECT_NEAR(lookup_region("se")->g_per_kwh, 35.8, 1e-9);   // any case
  // EPA eGRID2023 state rates, lb/MWh x 0.45359237: California 394.769 -> 179.1 g/kWh.
  const auto ca = lookup_region("US-CA");
  EXPECT_NEAR(ca->g_per_kwh, 179.1, 1e-9);
  EXPECT_EQ(ca->year, 2023);
  EXPECT_EQ(ca->method, "us_state_average");
  EXPECT_TRUE(ca->attribution.empty());  // public domain
  // Google's own figure for its region, of 2023 (region-carbon-info data/yearly/2023.csv).
  const auto gcp = lookup_region("gcp:europe-west4");
  EXPECT_EQ(gcp->g_per_kwh, 236.0);
  EXPECT_EQ(gcp->year, 2023);
  EXPECT_EQ(gcp->method, "cloud_provider");
  EXPECT_EQ(lookup_region("gcp:europe-north1")->g_per_kwh, 46.0);
  // AWS and Azure publish none: the grid of the region's location.
  const auto aws = lookup_region("aws:us-east-1");
  EXPECT_EQ(aws->method, "cloud_region_location");
  EXPECT_NEAR(aws->g_per_kwh, lookup_region("US-VA")->g_per_kwh, 1e-12);
  EXPECT_EQ(aws->year, lookup_region("US-VA")->year);
  EXPECT_NE(aws->source.find("US-VA"), std::string::npos);
  EXPECT_NEAR(lookup_region("azure:westeurope")->g_per_kwh, lookup_region("NL")->g_per_kwh, 1e-12);
  EXPECT_FALSE(lookup_region("ZZ"));
  EXPECT_FALSE(lookup_region("gcp:mars-north1"));
}

TEST(CarbonTables, EveryTableIsThereAndParses) {
  std::map<std::string, std::size_t> rows;
  for (const auto& t : tables())
    rows[t.name] = t.rows;
  EXPECT_GT(rows["grid_intensity.csv"], 250U);  // 212 countries + 51 US states and DC
  EXPECT_GT(rows["cloud_regions.csv"], 100U);
  EXPECT_GT(rows["cpu_tdp.csv"], 4000U);
  EXPECT_EQ(rows["equivalents.csv"], 1U);
  // Every row says where its figure comes from, under which licence and of which year.
  for (const auto& r : shipped_region_tables().grid) {
    ASSERT_GE(r.size(), 8U) << r[0];
    EXPECT_FALSE(r[4].empty() || r[5].empty() || r[6].empty()) << r[0];
    EXPECT_EQ(r[6] == "CC BY 4.0", !r[7].empty()) << r[0];  // CC BY rows carry the credit line
  }
  for (const auto& r : shipped_region_tables().cloud) {
    ASSERT_EQ(r.size(), 8U);
    if (r[0] == "gcp") {
      EXPECT_EQ(r[5], "2023") << r[1];
    }
    EXPECT_TRUE(lookup_region(r[0] + ":" + r[1])) << r[1];  // every cloud region has a figure
  }
}

TEST(CarbonCsv, QuotesAndCommas) {
  const auto rows = parse_csv("a,b\n\"x, y\",\"say \"\"hi\"\"\"\r\n\nlast,\n", true);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0], (csv_row{"x, y", "say \"hi\""}));
  EXPECT_EQ(rows[1], (csv_row{"last", ""}));
}

TEST(CarbonRegion, Forms) {
  EXPECT_EQ(classify_region("DE"), region_kind::country);
  EXPECT_EQ(classify_region("DEU"), region_kind::country);
  EXPECT_EQ(classify_region("US-CA"), region_kind::us_state);
  EXPECT_EQ(classify_region("gcp:europe-west4"), region_kind::cloud);
  EXPECT_EQ(classify_region("AWS:us-east-1"), region_kind::cloud);
  EXPECT_EQ(classify_region("Germany"), region_kind::malformed);
  EXPECT_EQ(classify_region("ibm:us-south"), region_kind::malformed);
  EXPECT_EQ(classify_region("DE-BY"), region_kind::malformed);
  EXPECT_EQ(classify_region(""), region_kind::malformed);
}

TEST(CarbonResolve, FactorsFlowIntoTheAssessment) {
  settings s;
  s.region = "de";
  s.pue = 1.5;
  s.price_per_kwh = 0.3;
  s.currency = "EUR";
  const factors f = resolve(s);
  EXPECT_EQ(f.region, "DE");
  const assessment a = assess(f, 3.6e6 * 2);  // 2 kWh measured
  EXPECT_DOUBLE_EQ(a.energy_kwh, 2.0);
  EXPECT_DOUBLE_EQ(a.facility_energy_kwh, 3.0);
  EXPECT_NEAR(*a.co2e_g, 3.0 * 344.1, 1e-9);
  EXPECT_NEAR(*a.cost, 0.9, 1e-12);
  EXPECT_NEAR(*a.car_km, 3.0 * 344.1 / 106.8, 1e-9);

  json_writer w;
  write_json(w, a);
  const auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j["pue"], 1.5);
  EXPECT_EQ(j["pue_source"], "--pue");
  EXPECT_DOUBLE_EQ(j["co2e_g"].get<double>(), *a.co2e_g);
  EXPECT_EQ(j["co2e"]["region"], "DE");
  EXPECT_EQ(j["co2e"]["year"], 2024);
  EXPECT_EQ(j["co2e"]["method"], "country_average");
  EXPECT_EQ(j["cost_basis"]["currency"], "EUR");
  EXPECT_EQ(j["cost_basis"]["region"], "DE");
  EXPECT_EQ(j["cost_basis"]["method"], "user_price");
  EXPECT_EQ(j["equivalent"]["g_per_km"], 106.8);
  EXPECT_TRUE(j["note"].is_null());

  const std::string line = summary_text(a);
  EXPECT_EQ(line.substr(0, 28), "; 2 kWh x PUE 1.5 = 3 kWh, 1");
  EXPECT_NE(line.find("g CO2e (DE, 344 g/kWh, Ember and Energy Institute, via Our World in Data "
                      "2024)"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(", 0.9 EUR"), std::string::npos) << line;
  EXPECT_NE(line.find("like driving 9.67 km by car"), std::string::npos) << line;
}

TEST(CarbonResolve, UserIntensityWinsAndIsLabelled) {
  settings s;
  s.region = "FR";
  s.carbon_intensity = 100.0;
  const auto a = assess(resolve(s), 3.6e6);
  EXPECT_DOUBLE_EQ(*a.co2e_g, 100.0);
  EXPECT_EQ(a.basis.grid->method, "user");
  EXPECT_EQ(a.basis.grid->source, "--carbon-intensity");
  EXPECT_EQ(a.basis.grid->region, "FR");
}

TEST(CarbonResolve, NoRegionMeansEnergyOnly) {
  const auto none = assess(resolve(settings{}), 3.6e6);
  EXPECT_FALSE(none.co2e_g);
  EXPECT_FALSE(none.car_km);
  EXPECT_NE(summary_text(none).find("no CO2e: no region given"), std::string::npos);
  json_writer w;
  write_json(w, none);
  const auto j = nlohmann::json::parse(w.str());
  EXPECT_TRUE(j["co2e_g"].is_null());
  EXPECT_TRUE(j["co2e"].is_null());
  EXPECT_EQ(j["energy_kwh"], 1.0);
}

std::string usage_message(const settings& s, const region_tables& t = shipped_region_tables()) {
  try {
    (void)resolve(s, t);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(CarbonResolve, ARegionTheTablesDoNotListIsBadInputWithTheClosestNames) {
  settings s;
  s.region = "UK";
  EXPECT_EQ(usage_message(s),
            "--region 'UK' is not in joules' tables; did you mean GB (United Kingdom)? "
            "(docs/carbon.md says which regions they hold; --carbon-intensity G gives the figure "
            "for any region)");
  s.region_from = "JOULES_REGION";
  EXPECT_EQ(usage_message(s).find("JOULES_REGION 'UK' (from the environment) is not in joules' "
                                  "tables; did you mean GB (United Kingdom)?"),
            0U);
  s.region = "gcp:europe-west99";
  s.region_from = "--region";
  EXPECT_NE(usage_message(s).find("; did you mean gcp:europe-west9 (Paris, FR), gcp:europe-west1 "
                                  "(St. Ghislain, BE) or gcp:europe-west10 (Berlin, DE)?"),
            std::string::npos)
      << usage_message(s);
  s.region = "Germany";  // malformed, but plainly meant
  EXPECT_EQ(usage_message(s).find("--region 'Germany': expected an ISO country code"), 0U);
  EXPECT_NE(usage_message(s).find("; did you mean DE (Germany)?"), std::string::npos);
  s.region = "QQQ";  // nothing close: no suggestion, still an error
  EXPECT_EQ(usage_message(s).find("did you mean"), std::string::npos) << usage_message(s);
  EXPECT_EQ(usage_message(s).find("--region 'QQQ' is not in joules' tables ("), 0U);
  // With --carbon-intensity the region is only a label: any well-formed one will do.
  s.region = "uk";
  s.carbon_intensity = 200.0;
  const factors f = resolve(s);
  EXPECT_EQ(f.region, "UK");
  EXPECT_EQ(f.grid->g_per_kwh, 200.0);
}

TEST(CarbonRegion, ClosestNames) {
  EXPECT_EQ(close_regions("UK"), (std::vector<std::string>{"GB (United Kingdom)"}));
  EXPECT_EQ(close_regions("el"), (std::vector<std::string>{"GR (Greece)"}));
  EXPECT_EQ(close_regions("california"), (std::vector<std::string>{"US-CA (California)"}));
  EXPECT_EQ(close_regions("DE-BY"), (std::vector<std::string>{"DE (Germany)"}));
  EXPECT_EQ(close_regions("DEX").front(), "DE (Germany)");  // alpha-3 DEU is one edit away
  EXPECT_EQ(close_regions("aws:westeurope").front(), "azure:westeurope (Netherlands, NL)");
  EXPECT_EQ(close_regions("gcp:us-east-1").front(), "aws:us-east-1 (Northern Virginia, US-VA)");
  EXPECT_EQ(close_regions("gcp:us-central2").front(), "gcp:us-central1 (Council Bluffs, US-IA)");
  // Nothing within a few edits: the regions sharing the longest prefix.
  EXPECT_EQ(close_regions("gcp:europe-foo"),
            (std::vector<std::string>{"gcp:europe-central2 (Warsaw, PL)",
                                      "gcp:europe-north1 (Hamina, FI)",
                                      "gcp:europe-southwest1 (Madrid, ES)"}));
  EXPECT_TRUE(close_regions("QQQ").empty());  // two edits from QAT and QA
}

TEST(CarbonRegion, Alpha3IsTheCountrysAlpha2Everywhere) {
  settings s;
  s.region = "deu";
  const auto a = assess(resolve(s), 3.6e6);
  EXPECT_EQ(a.basis.region, "DE");
  EXPECT_EQ(a.basis.grid->region, "DE");
  json_writer w;
  write_json(w, a);
  const auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j["co2e"]["region"], "DE");
  json_writer w2;
  write_factors_json(w2, a.basis);
  const auto k = nlohmann::json::parse(w2.str());
  EXPECT_EQ(k["region"], "DE");
  EXPECT_EQ(k["intensity"]["region"], "DE");
  EXPECT_EQ(k["intensity"]["attribution"], de_attribution());
  EXPECT_NE(summary_text(a).find("g CO2e (DE, 344 g/kWh"), std::string::npos);
}

TEST(CarbonRegion, AKnownRegionWithoutAFigureIsANote) {
  // Tables of our own: a country listed without a figure, a cloud region located in it, and one
  // located in a place the tables do not list.
  const std::vector<csv_row> grid = {
      {"XA", "XAA", "Testland", "", "2024", "a source", "a licence"},
      {"XB", "XBB", "Otherland", "100.0", "2024", "a source", "a licence"}};
  const std::vector<csv_row> cloud = {
      {"gcp", "test-east1", "XA", "Testville", "", "", "located by hand", ""},
      {"gcp", "test-west1", "XC", "Nowhere", "", "", "located by hand", ""},
      {"gcp", "test-north1", "XB", "Elsewhere", "", "", "located by hand", ""}};
  const region_tables t{grid, cloud};
  settings s;
  s.region = "xaa";
  const factors f = resolve(s, t);
  EXPECT_EQ(f.region, "XA");
  EXPECT_FALSE(f.grid);
  EXPECT_EQ(f.note,
            "region 'XA' (from --region): joules' tables list Testland (XA) without a carbon "
            "intensity; give --carbon-intensity G for a carbon figure");
  EXPECT_NE(summary_text(assess(f, 1.0)).find("; no CO2e: region 'XA'"), std::string::npos);
  s.region = "gcp:test-east1";
  EXPECT_NE(resolve(s, t).note.find("gcp:test-east1 is in XA: joules' tables list Testland"),
            std::string::npos);
  s.region = "gcp:test-west1";
  EXPECT_NE(resolve(s, t).note.find("gcp:test-west1 is in XC, which joules' tables do not list"),
            std::string::npos);
  s.region = "gcp:test-north1";
  const factors located = resolve(s, t);
  ASSERT_TRUE(located.grid);
  EXPECT_EQ(located.grid->g_per_kwh, 100.0);
  EXPECT_EQ(located.grid->method, "cloud_region_location");
  s.region = "gcp:test-eest1";  // not listed at all: an error, with the closest
  EXPECT_NE(usage_message(s, t).find("did you mean gcp:test-east1 (Testville, XA)"),
            std::string::npos)
      << usage_message(s, t);
}

TEST(CarbonResolve, BadValuesAreUsageErrors) {
  auto with = [](auto change) {
    settings s;
    change(s);
    return s;
  };
  EXPECT_THROW(resolve(with([](settings& s) { s.region = "Germany"; })), usage_error);
  EXPECT_THROW(resolve(with([](settings& s) { s.pue = 0.9; })), usage_error);
  EXPECT_THROW(resolve(with([](settings& s) { s.carbon_intensity = -1; })), usage_error);
  EXPECT_THROW(resolve(with([](settings& s) { s.price_per_kwh = -0.1; })), usage_error);
  EXPECT_THROW(resolve(with([](settings& s) { s.currency = "euro"; })), usage_error);
  EXPECT_THROW(resolve(with([](settings& s) { s.currency = "EU1"; })), usage_error);
  // Numbers are echoed as typed.
  EXPECT_EQ(usage_message(with([](settings& s) {
              s.carbon_intensity = 1e9;
              s.carbon_intensity_text = "1e9";
            })),
            "--carbon-intensity '1e9': expected grams of CO2e per kWh from 0 to 2000, e.g. 350");
  EXPECT_EQ(usage_message(with([](settings& s) {
              s.pue = 10.0;
              s.pue_text = "1e1";
            })).substr(0, 12),
            "--pue '1e1':");
  EXPECT_EQ(usage_message(with([](settings& s) {
              s.price_per_kwh = -1.0;
              s.price_per_kwh_text = "-1.00";
            })).substr(0, 24),
            "--price-per-kwh '-1.00':");
  try {
    resolve(with([](settings& s) { s.region = "Germany"; }));
  } catch (const usage_error& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 20), "--region 'Germany': ");
  }
}

}  // namespace
}  // namespace joules::carbon
