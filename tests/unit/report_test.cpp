// The records read back (src/report): the reader's diagnostics, the figures of a run against the
// records they come from, the statistics, diff and aggregate; sample buckets (src/record); the
// HTML escaping of outside strings (src/text).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "record/sample_records.hpp"
#include "render/report_html.hpp"
#include "report/aggregate.hpp"
#include "report/diff.hpp"
#include "report/reader.hpp"
#include "report/stats.hpp"
#include "report/summary.hpp"
#include "text/escape.hpp"

namespace joules::report {
namespace {

using nlohmann::json;

json header(std::string_view type, std::string_view host = "h1", std::string_view run = "r1") {
  return {{"type", type},  {"schema_version", 1}, {"time", "2026-11-23T10:00:00.000000Z"},
          {"run_id", run}, {"hostname", host},    {"labels", json::object()}};
}

// A small wrap run: setup, 20 steps of 100 J / 0.1 s on two GPUs (GPU 1 using 10 % more),
// an eval phase, a tail and session_end.
std::string wrap_records(std::string_view host = "h1", double scale = 1.0) {
  std::string out;
  auto add = [&](json j) { out += j.dump() + "\n"; };
  json start = header("session_start", host);
  start.update({{"subcommand", "wrap"},
                {"start_monotonic_s", 100.0},
                {"start_time", "2026-11-23T10:00:00Z"},
                {"backend", "sim"},
                {"user", "ada"},
                {"command", {"python", "train.py"}},
                {"devices",
                 {{{"kind", "gpu"}, {"index", 0}, {"uuid", "G0"}, {"name", "X"}},
                  {{"kind", "gpu"}, {"index", 1}, {"uuid", "G1"}, {"name", "X"}}}}});
  add(start);
  double t = 100.0;
  std::uint64_t w = 0;
  auto window = [&](bool step, std::uint64_t n, double e, double d, std::string phase) {
    json j = header(step ? "step" : "phase", host);
    j.update({{"window", w++},
              {"start_monotonic_s", t},
              {"end_monotonic_s", t + d},
              {"duration_s", d},
              {"energy_j", e * scale},
              {"method", "simulated"}});
    if (step) {
      j.update({{"step", n},
                {"step_gap", 1},
                {"tokens", 1000.0},
                {"gpus",
                 {{{"index", 0}, {"energy_j", e * scale / 2.1}},
                  {{"index", 1}, {"energy_j", e * scale * 1.1 / 2.1}}}}});
    } else {
      j["phase"] = phase;
    }
    t += d;
    add(j);
  };
  window(false, 0, 50.0, 1.0, "setup");
  for (std::uint64_t s = 1; s <= 20; ++s) {
    window(true, s, 100.0 + (s % 2 == 0 ? 2.0 : -2.0), 0.1, "");
    if (s == 10) window(false, 0, 30.0, 0.3, "eval");
  }
  window(false, 0, 1.0, 0.01, "tail");
  json p = header("prediction", host);
  p.update(
      {{"at_step", 5}, {"total_steps", 20}, {"energy_j", 2200.0 * scale}, {"duration_s", 3.0}});
  add(p);
  json end = header("session_end", host);
  const double energy = (50.0 + 20 * 100.0 + 30.0 + 1.0) * scale;
  end.update(
      {{"status", "completed"},
       {"duration_s", t - 100.0},
       {"energy_j", energy},
       {"end_monotonic_s", t},
       {"peak_power_w", 1500.0},
       {"method", "simulated"},
       {"devices",
        {{{"kind", "gpu"}, {"index", 0}, {"uuid", "G0"}, {"energy_j", energy / 2}},
         {{"kind", "gpu"}, {"index", 1}, {"uuid", "G1"}, {"energy_j", energy / 2}}}},
       {"carbon",
        {{"co2e_g", 1.0 * scale},
         {"cost", 0.5 * scale},
         {"co2e",
          {{"intensity_g_per_kwh", 400.0}, {"source", "Ember"}, {"year", 2024}, {"region", "DE"}}},
         {"cost_basis", {{"currency", "EUR"}, {"price_per_kwh", 0.3}}}}},
       {"wrap",
        {{"steps", 20},
         {"energy_per_step_j", 100.0 * scale},
         {"tokens", 20000.0},
         {"joules_per_token", 0.1 * scale}}}});
  add(end);
  return out;
}

TEST(ReportReader, ReadsRecordsAndSaysWhatItSkipped) {
  std::string text = wrap_records();
  text += R"({"type":"gpu_topology","schema_version":2,"run_id":"r1","hostname":"h1"})"
          "\n";
  text += "not json\n";
  text += R"({"type":"step","schema_version":1,"run_id":"r1","hostname":"h1"})"
          "\n";
  text += R"({"type":"phase","schema_version":1,"run_id":"r1","hos)";
  reader r;
  const file_result f = r.add_file("a.jsonl", text);
  EXPECT_FALSE(f.unusable);
  const record_set set = r.take();
  ASSERT_EQ(set.runs.size(), 1u);
  const node& n = set.runs[0].nodes[0];
  EXPECT_EQ(n.windows.size(), 23u);
  EXPECT_EQ(n.user, "ada");
  std::vector<std::string> seen;
  for (const auto& w : set.warnings)
    seen.push_back(fmt::format("{}:{}: {}", w.file, w.line, w.message));
  auto has = [&](std::string_view needle) {
    return std::any_of(seen.begin(), seen.end(),
                       [&](const std::string& s) { return s.find(needle) != std::string::npos; });
  };
  EXPECT_TRUE(has("a.jsonl:27: record type 'gpu_topology' is unknown"))
      << ::testing::PrintToString(seen);
  EXPECT_TRUE(has("a.jsonl:28: not a JSON record"));
  EXPECT_TRUE(has("a.jsonl:29: step record without the fields it needs"));
  EXPECT_TRUE(has("a.jsonl:30: the last line is cut off"));
  EXPECT_TRUE(has("schema version 2"));
}

TEST(ReportReader, RefusesFilesThatAreNotRecords) {
  reader r;
  EXPECT_EQ(r.add_file("e", "").unusable->message, "the file is empty: it holds no records");
  const auto u = r.add_file("t", "a,b,c\n1,2,3\n").unusable;
  ASSERT_TRUE(u);
  EXPECT_EQ(u->line, 1u);
  EXPECT_TRUE(r.add_file("j", "[1,2]\n{\"a\":1}\n").unusable);
}

TEST(ReportSummary, FiguresAreTheRecordsFigures) {
  const record_set set = read_text("a.jsonl", wrap_records());
  const run_summary s = summarize(set.runs.at(0));
  EXPECT_DOUBLE_EQ(*s.energy_j.value, 2081.0);
  EXPECT_DOUBLE_EQ(*s.co2e_g.value, 1.0);
  EXPECT_DOUBLE_EQ(*s.cost.value, 0.5);
  EXPECT_EQ(s.currency, "EUR");
  EXPECT_DOUBLE_EQ(*s.energy_per_step_j.value, 100.0);
  EXPECT_DOUBLE_EQ(*s.energy_per_token_j.value, 0.1);
  EXPECT_NEAR(*s.duration_s.value, 3.31, 1e-9);
  EXPECT_NE(s.energy_j.source.find("session_end.energy_j"), std::string::npos);
  EXPECT_NE(s.co2e_g.source.find("400 g/kWh (Ember 2024 DE)"), std::string::npos);
  // Phases add up to the total, in the order a run goes.
  ASSERT_EQ(s.phases.size(), 4u);
  EXPECT_EQ(s.phases[0].name, "setup");
  EXPECT_EQ(s.phases[1].name, "steps");
  EXPECT_EQ(s.phases[3].name, "tail");
  double sum = 0;
  for (const auto& p : s.phases)
    sum += p.energy_j;
  EXPECT_NEAR(sum, 2081.0, 1e-9);
  // GPU 1 uses 10 % more per step than GPU 0: 4.76 % above the median of the two.
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_NEAR(*s.gpus[1].deviation, 1.1 / 1.05 - 1.0, 1e-12);
  // The prediction (2200 J) against the energy to step 20 (all but the tail: 2080 J).
  ASSERT_EQ(s.predictions.size(), 1u);
  EXPECT_NEAR(*s.predictions[0].actual_energy_j, 2080.0, 1e-9);
  EXPECT_NEAR(*s.predictions[0].error, 120.0 / 2080.0, 1e-12);
  // Steps alternate 98 and 102 J: the batch means see the noise.
  EXPECT_NEAR(*s.step_energy.value, 100.0, 1e-9);
  ASSERT_TRUE(s.step_energy.standard_error);
  EXPECT_LT(*s.step_energy.standard_error, 2.0);
}

TEST(ReportSummary, NodesOfOneRunAddUpAndCutOffNodesCountTheirWindows) {
  reader r;
  r.add_file("a", wrap_records("h1"));
  std::string b = wrap_records("h2");
  b = b.substr(0, b.rfind('\n', b.find("\"session_end\"")) + 1);  // cut before session_end
  r.add_file("b", b);
  const record_set set = r.take();
  ASSERT_EQ(set.runs.size(), 1u);
  const run_summary s = summarize(set.runs[0]);
  EXPECT_EQ(s.hosts.size(), 2u);
  EXPECT_FALSE(s.complete);
  EXPECT_NEAR(*s.energy_j.value, 2081.0 * 2, 1e-9);
  EXPECT_EQ(s.gpus.size(), 4u);
  EXPECT_EQ(s.steps_series.size(), 20u);
  EXPECT_NEAR(s.steps_series[0].energy_j, 98.0 * 2, 1e-9);
}

TEST(ReportDiff, ChangesAgainstNoise) {
  const auto a = summarize(read_text("a", wrap_records("h1", 1.0)).runs.at(0));
  const auto b = summarize(read_text("b", wrap_records("h1", 1.2)).runs.at(0));
  const diff_result d = compare({a}, {b});
  ASSERT_GE(d.rows.size(), 4u);
  EXPECT_EQ(d.rows[0].name, "energy");
  EXPECT_NEAR(*d.rows[0].change, 0.2, 1e-12);
  EXPECT_EQ(d.rows[d.gate].name, "energy per token");
  const auto& per_step = d.rows[2];
  ASSERT_TRUE(per_step.exceeds_noise);
  EXPECT_TRUE(*per_step.exceeds_noise);
  const diff_result same = compare({a}, {a});
  EXPECT_FALSE(*same.rows[2].exceeds_noise);
  EXPECT_DOUBLE_EQ(*same.rows[0].change, 0.0);
}

TEST(ReportDiff, RepeatsGiveTheirSpreadAsNoise) {
  // Side A: two runs, 100 and 104 J/step; side B one at 102: within their spread.
  const auto a1 = summarize(read_text("a1", wrap_records("h1", 1.0)).runs.at(0));
  const auto a2 = summarize(read_text("a2", wrap_records("h1", 1.04)).runs.at(0));
  const auto b = summarize(read_text("b", wrap_records("h1", 1.02)).runs.at(0));
  const diff_result d = compare({a1, a2}, {b});
  const auto& per_step = d.rows[2];
  EXPECT_NEAR(*per_step.a, 102.0, 1e-9);
  EXPECT_NEAR(*per_step.change, 0.0, 1e-12);
  ASSERT_TRUE(per_step.noise);
  EXPECT_FALSE(*per_step.exceeds_noise);
  EXPECT_NE(d.notes.back().find("A holds 2 run(s), B 1"), std::string::npos);
}

TEST(ReportSummary, HealthEventsFromTheEndAndTheSamples) {
  std::string text = wrap_records();
  // A degraded end, and GPU 1 in thermal slowdown over two consecutive sample buckets.
  const std::size_t line = text.rfind('\n', text.find("\"session_end\"")) + 1;
  json end = json::parse(text.substr(line));
  text = text.substr(0, line);
  end["status"] = "measurement_degraded";
  end["degradations"] = {"GPU 1: 3 reading(s) failed"};
  for (int k = 0; k < 3; ++k) {
    json smp = header("sample");
    smp.update(
        {{"start_monotonic_s", 101.0 + k},
         {"end_monotonic_s", 102.0 + k},
         {"devices",
          {{{"kind", "gpu"},
            {"index", 1},
            {"power_w", {{"mean", 600.0}}},
            {"clock_events", k < 2 ? json{"hw_thermal", "power_cap"} : json{"power_cap"}}}}}});
    text += smp.dump() + "\n";
  }
  text += end.dump() + "\n";
  const run_summary s = summarize(read_text("a", text).runs.at(0));
  std::vector<std::string> what;
  for (const auto& e : s.health)
    what.push_back(e.what);
  EXPECT_EQ(what, (std::vector<std::string>{"GPU 1: 3 reading(s) failed",
                                            "GPU 1: clock event hw_thermal from 1 s to 3 s",
                                            "the run ended measurement_degraded"}))
      << ::testing::PrintToString(what);
}

TEST(ReportAggregate, GroupsAndTotals) {
  reader r;
  r.add_file("a", wrap_records("h1"));
  r.add_file("b", wrap_records("h2"));
  std::string other = wrap_records("h1");
  for (std::size_t at = other.find("\"r1\""); at != std::string::npos; at = other.find("\"r1\""))
    other.replace(at, 4, "\"r2\"");
  r.add_file("c", other);
  const record_set set = r.take();
  const aggregate_result by_host = aggregate(set, {group_key::host});
  ASSERT_EQ(by_host.rows.size(), 2u);
  EXPECT_EQ(by_host.rows[0].key[0], "h1");
  EXPECT_EQ(by_host.rows[0].runs, 2u);
  EXPECT_EQ(by_host.total.runs, 2u);
  EXPECT_EQ(by_host.total.nodes, 3u);
  EXPECT_NEAR(by_host.total.energy_j, 3 * 2081.0, 1e-9);
  EXPECT_NEAR(*by_host.total.co2e_g, 3.0, 1e-12);
  const aggregate_result by_user_day = aggregate(set, {group_key::user, group_key::day});
  ASSERT_EQ(by_user_day.rows.size(), 1u);
  EXPECT_EQ(by_user_day.rows[0].key, (std::vector<std::string>{"ada", "2026-11-23"}));
}

TEST(ReportStats, QuantilesHistogramsAndDecimation) {
  EXPECT_DOUBLE_EQ(*quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_FALSE(quantile({}, 0.5));
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i)
    v.push_back(i);
  const histogram h = make_histogram(v, 10);
  std::uint64_t n = h.below + h.above;
  for (const auto c : h.counts)
    n += c;
  EXPECT_EQ(n, 1000u);
  std::vector<series_point> pts;
  for (int i = 0; i < 1000; ++i)
    pts.push_back({static_cast<double>(i), static_cast<double>(i % 10), 1.0, {}, {}});
  const auto b = decimate(pts, 0, 1000, 100);
  ASSERT_EQ(b.size(), 100u);
  EXPECT_DOUBLE_EQ(b[0].min, 0.0);
  EXPECT_DOUBLE_EQ(b[0].max, 9.0);
  EXPECT_DOUBLE_EQ(b[0].mean, 4.5);
  // Independent noise: the batch means' standard error is near sd/sqrt(n).
  std::vector<double> num, den;
  for (int i = 0; i < 400; ++i) {
    num.push_back(i % 2 == 0 ? 9.0 : 11.0);
    den.push_back(1.0);
  }
  const ratio_estimate e = batch_ratio(num, den);
  EXPECT_DOUBLE_EQ(*e.value, 10.0);
  EXPECT_LT(*e.standard_error, 0.01);
}

TEST(SampleBuckets, WidenAsTheRunGrowsAndAddUp) {
  EXPECT_DOUBLE_EQ(sample_buckets::width_at(0.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(sample_buckets::width_at(99.9, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(sample_buckets::width_at(100.0, 0.1), 0.2);
  EXPECT_DOUBLE_EQ(sample_buckets::width_at(86400.0, 0.1), 102.4);
  run_context ctx;
  ctx.run_id = "r";
  ctx.hostname = "h";
  ctx.start_mono = mono_time(std::chrono::seconds(10));
  device_info d;
  d.uuid = "G0";
  ctx.devices.push_back(d);
  sample_buckets b(ctx, std::chrono::milliseconds(100));
  std::vector<std::string> records;
  // 300 W for 250 s, read every 50 ms between the edges: energy counts from 0 at the start.
  for (int i = 1; i <= 5000; ++i) {
    const double since = (i - 0.5) * 0.05;
    for (auto& r : b.add(10.0 + since, {{300.0, 300.0 * since, false, nullptr}}))
      records.push_back(std::move(r));
  }
  for (auto& r : b.finish(260.0))
    records.push_back(std::move(r));
  // 1000 buckets of 0.1 s, 500 of 0.2 s, then 0.4 s ones to 250 s.
  EXPECT_EQ(records.size(), 1000u + 500u + 125u);
  double energy = 0, previous_end = 10.0;
  for (const auto& r : records) {
    const json j = json::parse(r);
    EXPECT_NEAR(j["start_monotonic_s"].get<double>(), previous_end, 1e-9);
    previous_end = j["end_monotonic_s"].get<double>();
    energy += j["energy_j"].get<double>();
    EXPECT_NEAR(j["devices"][0]["power_w"]["mean"].get<double>(), 300.0, 1e-6);
  }
  EXPECT_NEAR(energy, 300.0 * 249.975, 1e-6);
}

TEST(HtmlEscape, OutsideStringsStayText) {
  EXPECT_EQ(text::escape_for_html("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  EXPECT_EQ(text::escape_for_html("a\nb\x1b[31m"), "a\\nb\\x1b[31m");
  const record_set set = read_text("a", wrap_records("<b>host</b>"));
  const std::string page = render::report_page(set, "joules test");
  EXPECT_EQ(page.find("<b>host</b>"), std::string::npos);
  EXPECT_NE(page.find("&lt;b&gt;host&lt;/b&gt;"), std::string::npos);
}

}  // namespace
}  // namespace joules::report
