// Carbon and cost: the shipped tables hold the published values, factors flow into every output
// with their provenance, and an unknown region means energy only.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "carbon/carbon.hpp"
#include "carbon/csv.hpp"
#include "util/error.hpp"

namespace joules::carbon {
namespace {

TEST(CarbonTables, KnownPublishedValues) {
  // Our World in Data (Ember, Energy Institute): latest year per country.
  const auto de = lookup_region("DE");
  ASSERT_TRUE(de);
  EXPECT_NEAR(de->g_per_kwh, 344.1, 1e-9);
  EXPECT_EQ(de->year, 2024);
  EXPECT_EQ(de->method, "country_average");
  EXPECT_EQ(de->licence, "CC BY 4.0");
  EXPECT_NE(de->source.find("Our World in Data"), std::string::npos);
  EXPECT_NEAR(lookup_region("FRA")->g_per_kwh, 44.2, 1e-9);  // alpha-3 too
  EXPECT_NEAR(lookup_region("se")->g_per_kwh, 35.8, 1e-9);   // any case
  // EPA eGRID2023 state rates, lb/MWh x 0.45359237: California 394.769 -> 179.1 g/kWh.
  const auto ca = lookup_region("US-CA");
  EXPECT_NEAR(ca->g_per_kwh, 179.1, 1e-9);
  EXPECT_EQ(ca->year, 2023);
  EXPECT_EQ(ca->method, "us_state_average");
  // Google's own figure for its region.
  const auto gcp = lookup_region("gcp:europe-west4");
  EXPECT_EQ(gcp->g_per_kwh, 236.0);
  EXPECT_EQ(gcp->method, "cloud_provider");
  // AWS and Azure publish none: the grid of the region's location.
  const auto aws = lookup_region("aws:us-east-1");
  EXPECT_EQ(aws->method, "cloud_region_location");
  EXPECT_NEAR(aws->g_per_kwh, lookup_region("US-VA")->g_per_kwh, 1e-12);
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

TEST(CarbonResolve, NoRegionOrUnknownRegionMeansEnergyOnly) {
  const auto none = assess(resolve(settings{}), 3.6e6);
  EXPECT_FALSE(none.co2e_g);
  EXPECT_FALSE(none.car_km);
  EXPECT_NE(summary_text(none).find("no CO2e: no region given"), std::string::npos);

  settings s;
  s.region = "ZZ";
  s.region_from = "JOULES_REGION";
  const auto unknown = assess(resolve(s), 3.6e6);
  EXPECT_FALSE(unknown.co2e_g);
  EXPECT_EQ(unknown.basis.note.find("region 'ZZ' (from JOULES_REGION) is not in joules' tables"),
            0U);
  json_writer w;
  write_json(w, unknown);
  const auto j = nlohmann::json::parse(w.str());
  EXPECT_TRUE(j["co2e_g"].is_null());
  EXPECT_TRUE(j["co2e"].is_null());
  EXPECT_EQ(j["energy_kwh"], 1.0);
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
  try {
    resolve(with([](settings& s) { s.region = "Germany"; }));
  } catch (const usage_error& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 20), "--region 'Germany': ");
  }
}

}  // namespace
}  // namespace joules::carbon
