#include "export/otlp/otlp_json.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "http/http_client.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

using nlohmann::json;

json request(const exposition& e) {
  otlp_batch_info info;
  info.resource = {{"service.name", "joules"}, {"host.name", "node-1"}, {"joules.run_id", "r7"}};
  info.time_unix_nano = 1700000000123456789;
  info.start_unix_nano = 1700000000000000000;
  std::string body;
  write_otlp_json(e, info, body);
  return json::parse(body);
}

const json* metric(const json& req, std::string_view name) {
  for (const auto& m : req["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]) {
    if (m["name"] == name) return &m;
  }
  return nullptr;
}

TEST(OtlpJson, ResourceScopeAndTheTwoKindsOfMetric) {
  exposition e;
  const label_set gpu0{{"gpu", "0"}, {"uuid", "GPU-a"}, {"model", "H100 \"SXM\"\nx"}};
  e.add_family("joules_gpu_power_watts", "Power.", metric_type::gauge).add(gpu0, 312.5);
  e.add_family("joules_run_energy_joules_total", "Energy.", metric_type::counter).add({}, 1000.0);
  e.add_family("joules_run_steps_total", "Steps.", metric_type::counter).add({}, 42);
  e.add_family("joules_empty", "No samples: left out.", metric_type::gauge);
  const json r = request(e);

  const auto& attrs = r["resourceMetrics"][0]["resource"]["attributes"];
  ASSERT_EQ(attrs.size(), 3U);
  EXPECT_EQ(attrs[0]["key"], "service.name");
  EXPECT_EQ(attrs[0]["value"]["stringValue"], "joules");
  EXPECT_EQ(attrs[2]["value"]["stringValue"], "r7");
  EXPECT_EQ(r["resourceMetrics"][0]["scopeMetrics"][0]["scope"]["name"], "joules");
  EXPECT_EQ(r["resourceMetrics"][0]["scopeMetrics"][0]["metrics"].size(), 3U);
  EXPECT_EQ(metric(r, "joules_empty"), nullptr);

  const json& power = *metric(r, "joules_gpu_power_watts");
  EXPECT_EQ(power["unit"], "W");
  EXPECT_EQ(power["description"], "Power.");
  ASSERT_TRUE(power.contains("gauge"));
  const json& p = power["gauge"]["dataPoints"][0];
  EXPECT_EQ(p["timeUnixNano"], "1700000000123456789");  // int64 as a string
  EXPECT_FALSE(p.contains("startTimeUnixNano"));
  EXPECT_EQ(p["asDouble"], 312.5);
  // Labels come back unescaped: quotes and newlines as they were.
  EXPECT_EQ(p["attributes"][2]["key"], "model");
  EXPECT_EQ(p["attributes"][2]["value"]["stringValue"], "H100 \"SXM\"\nx");

  const json& energy = *metric(r, "joules_run_energy_joules_total");
  EXPECT_EQ(energy["unit"], "J");
  ASSERT_TRUE(energy.contains("sum"));
  EXPECT_EQ(energy["sum"]["aggregationTemporality"], 2);  // CUMULATIVE, an integer
  EXPECT_EQ(energy["sum"]["isMonotonic"], true);
  const json& ep = energy["sum"]["dataPoints"][0];
  EXPECT_EQ(ep["startTimeUnixNano"], "1700000000000000000");
  EXPECT_EQ(ep["asDouble"], 1000.0);  // energy is a real quantity even when whole
  EXPECT_TRUE(ep["attributes"].empty());

  const json& steps = *metric(r, "joules_run_steps_total");
  EXPECT_EQ(steps["unit"], "");
  EXPECT_EQ(steps["sum"]["dataPoints"][0]["asInt"], "42");
}

TEST(OtlpJson, NonFiniteValuesAreLeftOutAndFractionsStayDoubles) {
  exposition e;
  auto& f = e.add_family("joules_gpu_processes_total", "x", metric_type::counter);
  f.add(label_set{{"a", "1"}}, 2.0);
  f.add(label_set{{"a", "2"}}, 2.5);  // not whole: the family is written asDouble
  auto& g = e.add_family("joules_g", "y", metric_type::gauge);
  g.add(label_set{{"a", "1"}}, std::numeric_limits<double>::quiet_NaN());
  g.add(label_set{{"a", "2"}}, std::numeric_limits<double>::infinity());
  g.add(label_set{{"a", "3"}}, -1.0);
  const json r = request(e);
  const json& c = *metric(r, "joules_gpu_processes_total");
  EXPECT_EQ(c["sum"]["dataPoints"][0]["asDouble"], 2.0);
  EXPECT_EQ(c["sum"]["dataPoints"][1]["asDouble"], 2.5);
  const json& gg = *metric(r, "joules_g");
  ASSERT_EQ(gg["gauge"]["dataPoints"].size(), 1U);
  EXPECT_EQ(gg["gauge"]["dataPoints"][0]["asDouble"], -1.0);
}

TEST(OtlpJson, KwhCo2eAndCostAreQuantitiesEvenWhenWhole) {
  exposition e;
  for (const char* name :
       {"joules_run_energy_kwh_total", "joules_run_co2e_grams_total", "joules_run_cost_total"})
    e.add_family(name, "x", metric_type::counter).add(label_set{}, 0.0);
  const json r = request(e);
  for (const char* name :
       {"joules_run_energy_kwh_total", "joules_run_co2e_grams_total", "joules_run_cost_total"}) {
    EXPECT_EQ((*metric(r, name))["sum"]["dataPoints"][0]["asDouble"], 0.0) << name;
  }
}

TEST(OtlpJson, UnitsFromTheNames) {
  EXPECT_EQ(otlp_unit("joules_gpu_power_watts"), "W");
  EXPECT_EQ(otlp_unit("joules_gpu_energy_joules_total"), "J");
  EXPECT_EQ(otlp_unit("joules_run_step_duration_seconds_total"), "s");
  EXPECT_EQ(otlp_unit("joules_gpu_memory_used_bytes"), "By");
  EXPECT_EQ(otlp_unit("joules_gpu_pcie_tx_bytes_per_second"), "By/s");
  EXPECT_EQ(otlp_unit("joules_gpu_temperature_celsius"), "Cel");
  EXPECT_EQ(otlp_unit("joules_gpu_sm_clock_hertz"), "Hz");
  EXPECT_EQ(otlp_unit("joules_gpu_utilization_ratio"), "1");
  EXPECT_EQ(otlp_unit("joules_up"), "");
  EXPECT_EQ(otlp_unit("joules_run_energy_kwh_total"), "kW.h");
  EXPECT_EQ(otlp_unit("joules_run_co2e_grams_total"), "g");
  EXPECT_EQ(otlp_unit("joules_carbon_intensity_grams_per_kwh"), "g/kW.h");
}

TEST(OtlpJson, LabelTextRoundTrips) {
  const label_set l{
      {"a", "x"}, {"b", "say \"hi\""}, {"c", "C:\\path\\"}, {"d", "two\nlines"}, {"e", ""}};
  const auto back = parse_label_text(l.text());
  ASSERT_EQ(back.size(), 5U);
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].first, l.labels()[i].name);
    EXPECT_EQ(back[i].second, l.labels()[i].value);
  }
  EXPECT_TRUE(parse_label_text("").empty());
}

TEST(HttpUrl, ParsedOrRefusedWithTheOptionNamed) {
  auto u = parse_http_url("http://127.0.0.1:4318/v1/metrics", "--otlp");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 4318);
  EXPECT_EQ(u.path, "/v1/metrics");
  EXPECT_EQ(u.authority(), "127.0.0.1:4318");
  u = parse_http_url("http://collector", "--otlp");
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.path, "/");
  u = parse_http_url("http://[::1]:4318", "--otlp");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.authority(), "[::1]:4318");
  EXPECT_FALSE(u.https);
  u = parse_http_url("https://otel.example.com/v1/metrics?api-key=s3cret", "--otlp");
  EXPECT_TRUE(u.https);
  EXPECT_EQ(u.port, 443);
  EXPECT_EQ(u.text(), "https://otel.example.com:443/v1/metrics?api-key=s3cret");
  EXPECT_EQ(u.display(), "https://otel.example.com:443/v1/metrics");  // no query: it may be a key
  for (const auto* bad : {"ftp://c:4318", "c:4318", "http://", "http://c:0", "http://c:99999",
                          "http://c:x", "http://user@c:1", "https://user:pw@c/", "http://[::1",
                          "http://c/a b", "http://::1:80/", "https://c%2f:1/"}) {
    try {
      parse_http_url(bad, "--otlp");
      ADD_FAILURE() << bad;
    } catch (const usage_error& e) {
      EXPECT_NE(std::string(e.what()).find("--otlp"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace joules::exporter
