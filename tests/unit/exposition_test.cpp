#include "export/metrics/exposition.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <locale>
#include <random>
#include <set>
#include <sstream>

#include "export/metrics/label_policy.hpp"
#include "export/metrics/text_format.hpp"
#include "fixtures/sample_exposition.hpp"
#include "golden.hpp"

namespace joules::exporter {
namespace {

std::string value_text(double v) {
  std::string out;
  append_sample_value(out, v);
  return out;
}

std::string label_text(std::string_view v) {
  std::string out;
  append_label_value_escaped(out, v);
  return out;
}

TEST(MetricNames, FollowThePrometheusGrammar) {
  for (const auto* ok : {"a", "_a", ":a", "joules_gpu_power_watts", "job:rate5m", "A9_:"}) {
    EXPECT_TRUE(is_valid_metric_name(ok)) << ok;
  }
  for (const auto* bad : {"", "9a", "a-b", "a b", "a.b", "__reserved", "é", "a\n"}) {
    EXPECT_FALSE(is_valid_metric_name(bad)) << bad;
  }
}

TEST(LabelNames, FollowThePrometheusGrammarWithoutColons) {
  for (const auto* ok : {"a", "_a", "gpu", "modelName", "_9"}) {
    EXPECT_TRUE(is_valid_label_name(ok)) << ok;
  }
  for (const auto* bad : {"", "9a", "a:b", "a-b", "__name__", "__x", "a b"}) {
    EXPECT_FALSE(is_valid_label_name(bad)) << bad;
  }
}

TEST(LabelNames, SanitizedIntoValidNames) {
  EXPECT_EQ(sanitize_label_name("team"), "team");
  EXPECT_EQ(sanitize_label_name("cost-center"), "cost_center");
  EXPECT_EQ(sanitize_label_name("9lives"), "_9lives");
  EXPECT_EQ(sanitize_label_name(""), "_");
  EXPECT_EQ(sanitize_label_name("__name__"), "label__name__");
  EXPECT_EQ(sanitize_label_name("a:b.c d"), "a_b_c_d");
  EXPECT_EQ(sanitize_label_name("caf\xC3\xA9"), "caf_");  // one `_` per UTF-8 character
  EXPECT_EQ(sanitize_label_name("-x"), "_x");
  for (const auto* raw : {"", "9", "__", "___", "-", "\xFF\xFE", "a\nb", "\xE2\x82\xAC"}) {
    EXPECT_TRUE(is_valid_label_name(sanitize_label_name(raw))) << raw;
  }
}

TEST(Registration, RejectsBadNamesAndSuffixes) {
  exposition e;
  EXPECT_THROW(e.add_family("bad-name", "h", metric_type::gauge), std::invalid_argument);
  EXPECT_THROW(e.add_family("__x", "h", metric_type::gauge), std::invalid_argument);
  EXPECT_THROW(e.add_family("joules_energy_joules", "h", metric_type::counter),
               std::invalid_argument);
  EXPECT_THROW(e.add_family("joules_build", "h", metric_type::info), std::invalid_argument);
  EXPECT_NO_THROW(e.add_family("joules_energy_joules_total", "h", metric_type::counter));
  EXPECT_THROW(e.add_family("joules_energy_joules_total", "h", metric_type::counter),
               std::invalid_argument);
  EXPECT_THROW(e.add_family("joules_energy_joules_total", "other", metric_type::gauge),
               std::invalid_argument);
  // dcgm-exporter's names, allowed only when asked for.
  EXPECT_NO_THROW(e.add_family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "h", metric_type::counter,
                               naming::compat));
  EXPECT_THROW(e.add_family("DCGM-bad", "h", metric_type::gauge, naming::compat),
               std::invalid_argument);
  EXPECT_EQ(e.families().size(), 2U);
  EXPECT_NE(e.find("joules_energy_joules_total"), nullptr);
  EXPECT_EQ(e.find("nope"), nullptr);
}

TEST(LabelSets, ValidateEscapeAndKeepOrder) {
  EXPECT_THROW(label_set({{"bad-name", "x"}}), std::invalid_argument);
  EXPECT_THROW(label_set({{"__name__", "x"}}), std::invalid_argument);
  EXPECT_THROW(label_set({{"a", "1"}, {"a", "2"}}), std::invalid_argument);
  const label_set l{{"gpu", "0"}, {"model", "say \"hi\"\\\n"}};
  EXPECT_EQ(l.text(), R"(gpu="0",model="say \"hi\"\\\n")");
  EXPECT_EQ(l.find("model"), "say \"hi\"\\\n");
  EXPECT_EQ(l.find("nope"), std::nullopt);
  const label_set swapped{{"model", "say \"hi\"\\\n"}, {"gpu", "0"}};
  EXPECT_NE(swapped.text(), l.text());
  EXPECT_EQ(swapped.key(), l.key());
  EXPECT_EQ(swapped.key_hash(), l.key_hash());
  const label_set more = l.with("reason", "hw_slowdown");
  EXPECT_EQ(more.size(), 3U);
  EXPECT_EQ(l.size(), 2U);
  EXPECT_THROW(static_cast<void>(l.with("gpu", "1")), std::invalid_argument);
}

TEST(Samples, DuplicateLabelSetsAreRejectedInAnyOrder) {
  exposition e;
  auto& f = e.add_family("joules_x", "h", metric_type::gauge);
  f.add({{"a", "1"}, {"b", "2"}}, 1);
  f.add({{"a", "1"}, {"b", "3"}}, 1);
  f.add({}, 1);
  EXPECT_THROW(f.add({{"b", "2"}, {"a", "1"}}, 2), std::invalid_argument);
  EXPECT_THROW(f.add({}, 2), std::invalid_argument);
  EXPECT_EQ(f.size(), 3U);
  // The same labels in another family are another series.
  e.add_family("joules_y", "h", metric_type::gauge).add({{"a", "1"}, {"b", "2"}}, 1);
  // After clear_samples() the family is empty again and takes the same series.
  e.clear_samples();
  EXPECT_TRUE(f.empty());
  EXPECT_NO_THROW(f.add({{"b", "2"}, {"a", "1"}}, 2));
}

TEST(Samples, DuplicatesAreFoundInLargeFamiliesToo) {
  exposition e;
  auto& f = e.add_family("joules_x", "h", metric_type::gauge);
  std::vector<label_set> sets;
  for (int i = 0; i < 1000; ++i)
    sets.push_back({{"gpu", std::to_string(i % 100)}, {"i", std::to_string(i)}});
  for (int scrape = 0; scrape < 3; ++scrape) {
    e.clear_samples();
    for (const auto& l : sets)
      f.add(l, 1);
    EXPECT_EQ(f.size(), 1000U);
    for (const int i : {0, 15, 16, 17, 500, 999}) {
      const label_set reordered{{"i", std::to_string(i)}, {"gpu", std::to_string(i % 100)}};
      EXPECT_THROW(f.add(reordered, 2), std::invalid_argument) << i;
    }
    EXPECT_NO_THROW(f.add({{"gpu", "0"}, {"i", "1000"}}, 1));
  }
}

TEST(Samples, UnknownReadingsAreLeftOut) {
  exposition e;
  auto& f = e.add_family("joules_power_watts", "h", metric_type::gauge);
  f.add_if_known({{"gpu", "0"}}, std::nullopt);
  f.add_if_known({{"gpu", "1"}}, 0.0);
  EXPECT_EQ(e.text(),
            "# HELP joules_power_watts h\n# TYPE joules_power_watts gauge\n"
            "joules_power_watts{gpu=\"1\"} 0\n");
}

TEST(Samples, RefillingReusesTheBuffers) {
  exposition e;
  auto& f = e.add_family("joules_x", "h", metric_type::gauge);
  const label_set l{{"uuid", "GPU-8c8d4f1e-3b57-a1f2-9c0e-5d6b7a8e9f01-and-then-some"}};
  f.add(l, 1);
  const char* labels_before = f.samples()[0].labels.data();
  const sample* slot_before = f.samples().data();
  for (int i = 0; i < 3; ++i) {
    e.clear_samples();
    f.add(l, i);
  }
  EXPECT_EQ(f.samples().data(), slot_before);
  EXPECT_EQ(f.samples()[0].labels.data(), labels_before);
  EXPECT_EQ(f.samples()[0].value, 2);
}

TEST(TextFormat, SpecialValuesAndIntegers) {
  EXPECT_EQ(value_text(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(value_text(-std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(value_text(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(value_text(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(value_text(0.0), "0");
  EXPECT_EQ(value_text(-0.0), "0");
  EXPECT_EQ(value_text(1.0), "1");
  EXPECT_EQ(value_text(-42.0), "-42");
  EXPECT_EQ(value_text(1e15), "1000000000000000");
  EXPECT_EQ(value_text(4.2e15), "4200000000000000");
  EXPECT_EQ(value_text(9007199254740993.0), "9007199254740992");        // the double nearest 2^53+1
  EXPECT_EQ(value_text(9223372036854774784.0), "9223372036854774784");  // largest below 2^63
  // Beyond int64, std::to_chars still picks the plain form when it is the shorter one.
  EXPECT_EQ(value_text(9223372036854775808.0), "9223372036854775808");
  EXPECT_EQ(value_text(1e20), "1e+20");
  EXPECT_EQ(value_text(0.1), "0.1");
  EXPECT_EQ(value_text(312.5), "312.5");
  EXPECT_EQ(value_text(1e-7), "1e-07");
  EXPECT_EQ(value_text(1e300), "1e+300");
  EXPECT_EQ(value_text(std::numeric_limits<double>::denorm_min()), "5e-324");
}

TEST(TextFormat, EveryFiniteDoubleReadsBackToFifteenDigitsAndInOrder) {
  // Values are written without float noise (util/number_text.hpp): exact when their shortest
  // form has at most 15 significant digits or they are integers, else rounded to 15; and a
  // larger value never reads back smaller, so counters stay monotonic.
  std::mt19937_64 rng(42);
  const auto read_back = [](const std::string& s) {
    double back = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), back);
    EXPECT_EQ(r.ec, std::errc()) << s;
    EXPECT_EQ(r.ptr, s.data() + s.size()) << s;
    return back;
  };
  for (int i = 0; i < 200000; ++i) {
    const auto v = std::bit_cast<double>(rng());
    if (!std::isfinite(v)) continue;
    const double back = read_back(value_text(v));
    ASSERT_LE(std::fabs(back - v), 1e-14 * std::fabs(v)) << value_text(v);
    const double next = std::nextafter(v, std::numeric_limits<double>::infinity());
    if (std::isfinite(next)) {
      ASSERT_LE(back, read_back(value_text(next))) << v;
    }
  }
  for (const double exact : {0.1, 0.25, 1e-7, 123456.789012, 4.2e15, 9007199254740993.0})
    EXPECT_EQ(read_back(value_text(exact)), exact);
}

TEST(TextFormat, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(label_text("plain"), "plain");
  EXPECT_EQ(label_text("a\"b"), "a\\\"b");
  EXPECT_EQ(label_text("a\\b"), "a\\\\b");
  EXPECT_EQ(label_text("a\nb"), "a\\nb");
  EXPECT_EQ(label_text("tab\tand\rcr"), "tab\tand\rcr");  // only \ " and newline are escaped
  EXPECT_EQ(label_text("\xE2\x82\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(label_text("a\xFF"
                       "b\xC3"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(label_text("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  std::string help;
  append_help_escaped(help, "say \"x\"\\\nnext");
  EXPECT_EQ(help, "say \"x\"\\\\\\nnext");
}

TEST(TextFormat, FamiliesAreContiguousInRegistrationOrder) {
  exposition e;
  auto& b = e.add_family("joules_b", "B.", metric_type::gauge);
  auto& a = e.add_family("joules_a_total", "", metric_type::counter);
  e.add_family("joules_empty", "Never filled.", metric_type::gauge);
  auto& info = e.add_family("joules_build_info", "Build.", metric_type::info);
  a.add({{"gpu", "0"}}, 1);
  b.add({{"gpu", "0"}}, 2);
  a.add({{"gpu", "1"}}, 3, 1700000000000);
  b.add({{"gpu", "1"}}, 4);
  info.add_info({{"version", "0.1.0"}});
  EXPECT_EQ(e.text(),
            "# HELP joules_b B.\n"
            "# TYPE joules_b gauge\n"
            "joules_b{gpu=\"0\"} 2\n"
            "joules_b{gpu=\"1\"} 4\n"
            "# TYPE joules_a_total counter\n"
            "joules_a_total{gpu=\"0\"} 1\n"
            "joules_a_total{gpu=\"1\"} 3 1700000000000\n"
            "# HELP joules_build_info Build.\n"
            "# TYPE joules_build_info gauge\n"
            "joules_build_info{version=\"0.1.0\"} 1\n");
}

// A numpunct that writes "1.234,5", as de_DE does.
struct comma_numpunct : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

std::string golden_text() {
  exposition e;
  test::fill_golden_exposition(e);
  return e.text();
}

TEST(TextFormat, IgnoresTheLocale) {
  const std::string c_locale = golden_text();
  const std::locale saved =
      std::locale::global(std::locale(std::locale::classic(), new comma_numpunct));
  const std::string custom = golden_text();
  std::locale::global(saved);
  EXPECT_EQ(custom, c_locale);

  // The real thing: scripts/install-deps test makes the locale (make test runs it).
  ASSERT_NE(std::setlocale(LC_ALL, "de_DE.UTF-8"), nullptr)
      << "de_DE.UTF-8 is not installed: run scripts/install-deps test";
  std::locale::global(std::locale("de_DE.UTF-8"));
  const std::string german = golden_text();
  std::ostringstream probe;
  probe << 0.5;
  std::locale::global(saved);
  std::setlocale(LC_ALL, "C");
  EXPECT_EQ(german, c_locale);
  EXPECT_EQ(probe.str(), "0,5");  // the locale was really in force
}

TEST(Golden, RepresentativeExposition) {
  testing::expect_golden("exposition.prom", golden_text());
}

TEST(Golden, DcgmCompatibleNames) {
  exposition e;
  test::fill_dcgm_compat_exposition(e);
  testing::expect_golden("dcgm.prom", e.text());
}

TEST(NodeExposition, EightGpusKeepEachFamilyContiguous) {
  test::node_exposition node(8);
  node.fill(1);
  std::string first;
  node.exposition().write(first);
  node.fill(2);
  std::string second;
  node.exposition().write(second);
  EXPECT_NE(first, second);  // the readings moved
  std::set<std::string> finished;
  std::string current;
  std::size_t samples = 0;
  std::istringstream lines(second);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("#")) continue;
    ++samples;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    if (name != current) {
      ASSERT_TRUE(finished.insert(name).second) << name << " appears in two places";
      current = name;
    }
  }
  EXPECT_EQ(finished.size(), node.families());
  EXPECT_EQ(samples, 1 + 8 * (1 + 37 + 8 + 4));
}

TEST(LabelPolicy, UserLabelsNeverOverrideBuiltins) {
  const std::vector<std::pair<std::string, std::string>> user = {
      {"team", "infra"},      {"gpu", "mine"},      {"cost-center", "42"}, {"label_gpu", "x"},
      {"hostname", "laptop"}, {"__name__", "evil"}, {"cost_center", "43"}, {"9", "nine"}};
  const user_labels r = apply_label_policy(user);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"team", "infra"},
      {"label_gpu", "mine"},
      {"cost_center", "42"},
      {"label_gpu_2", "x"},  // the name the clash took is taken
      {"label_hostname", "laptop"},
      {"label__name__", "evil"},
      {"cost_center_2", "43"},
      {"_9", "nine"}};
  EXPECT_EQ(r.labels, expected);
  ASSERT_EQ(r.renamed.size(), 7U);
  EXPECT_EQ(r.renamed[0], "label 'gpu' is exposed as 'label_gpu': joules sets 'gpu' itself");
  EXPECT_EQ(r.renamed[1],
            "label 'cost-center' is exposed as 'cost_center': Prometheus label names are "
            "[a-zA-Z_][a-zA-Z0-9_]*");
  EXPECT_EQ(r.renamed[2],
            "label 'label_gpu' is exposed as 'label_gpu_2': 'label_gpu' is already taken");
  for (const auto& [name, value] : r.labels)
    EXPECT_TRUE(is_valid_label_name(name)) << name;
}

TEST(LabelPolicy, TakesTheCallersBuiltins) {
  const std::vector<std::pair<std::string, std::string>> user = {{"step", "1"}, {"gpu", "2"}};
  const std::array<std::string_view, 1> builtin = {"step"};
  const user_labels r = apply_label_policy(user, builtin);
  ASSERT_EQ(r.labels.size(), 2U);
  EXPECT_EQ(r.labels[0].first, "label_step");
  EXPECT_EQ(r.labels[1].first, "gpu");
  EXPECT_TRUE(apply_label_policy({}).labels.empty());
}

}  // namespace
}  // namespace joules::exporter
