// The Prometheus text reader of token sources (src/tokens/text_parser.hpp): the format's rules,
// its escapes, errors with their line, locale independence.
#include "tokens/text_parser.hpp"

#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <string>
#include <vector>

namespace joules::tokens {
namespace {

struct seen {
  std::string name;
  std::string labels;
  double value;
};

std::vector<seen> samples(std::string_view page, std::optional<parse_error>* error = nullptr) {
  std::vector<seen> out;
  auto e = parse_text_format(page, [&](const sample_view& v) {
    out.push_back({std::string(v.name), std::string(v.labels), v.value});
  });
  if (error != nullptr)
    *error = e;
  else
    EXPECT_FALSE(e) << e->line << ": " << e->what;
  return out;
}

TEST(TextParser, ReadsSamplesWithAndWithoutLabels) {
  const auto s = samples(
      "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
      "# TYPE vllm:prompt_tokens_total counter\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 1234.0\n"
      "process_start_time_seconds 1.7e9\n"
      "\n"
      "  x_total\t{ a = \"b\" , } \t 5 1712345678901\n");
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(s[0].name, "vllm:prompt_tokens_total");
  EXPECT_EQ(s[0].labels, "engine=\"0\",model_name=\"m\"");
  EXPECT_EQ(s[0].value, 1234.0);
  EXPECT_EQ(s[1].value, 1.7e9);
  EXPECT_EQ(s[2].name, "x_total");
  EXPECT_EQ(s[2].value, 5.0);
  EXPECT_EQ(decode_labels(s[2].labels), (label_pairs{{"a", "b"}}));
}

TEST(TextParser, DecodesTheThreeEscapesOfLabelValues) {
  const auto s = samples(R"(m{path="C:\\dir",q="say \"hi\"",nl="a\nb"} 1)"
                         "\n");
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(decode_labels(s[0].labels),
            (label_pairs{{"path", "C:\\dir"}, {"q", "say \"hi\""}, {"nl", "a\nb"}}));
}

TEST(TextParser, ReadsSpecialValuesAsGoDoes) {
  const auto s = samples("a NaN\nb +Inf\nc -Inf\nd inf\ne -0.5e-3\nf .5\n");
  ASSERT_EQ(s.size(), 6U);
  EXPECT_TRUE(std::isnan(s[0].value));
  EXPECT_EQ(s[1].value, INFINITY);
  EXPECT_EQ(s[2].value, -INFINITY);
  EXPECT_EQ(s[3].value, INFINITY);
  EXPECT_EQ(s[4].value, -0.0005);
  EXPECT_EQ(s[5].value, 0.5);
}

TEST(TextParser, NamesTheFirstBadLine) {
  struct bad_case {
    const char* page;
    std::size_t line;
    const char* what;
  };
  for (const auto& c : std::vector<bad_case>{
           {"<!DOCTYPE html>\n<html>\n", 1, "metric name"},
           {"ok 1\n{\"error\": 1}\n", 2, "metric name"},
           {"a{b=\"c\" 1\n", 1, "expected , or }"},
           {"a{b=\"c\\t\"} 1\n", 1, "invalid escape"},
           {"a{b=c} 1\n", 1, "open a label value"},
           {"a{1b=\"c\"} 1\n", 1, "label name"},
           {"a 1,5\n", 1, "number"},
           {"a\n", 1, "value"},
           {"a 1 2 3\n", 1, "unexpected text"},
           {"a 1 12.5\n", 1, "timestamp"},
           {"# TYPE a counterz\n", 1, "# TYPE"},
           {"# HELP 9a text\n", 1, "metric name"},
           {"# HELP a bad \\t escape\n", 1, "escape"},
           {"a 1e400\n", 1, "number"},
           {"a{b=\"unterminated} 1\n", 1, "close a label value"},
       }) {
    std::optional<parse_error> e;
    samples(c.page, &e);
    ASSERT_TRUE(e) << c.page;
    EXPECT_EQ(e->line, c.line) << c.page;
    EXPECT_NE(e->what.find(c.what), std::string::npos) << c.page << " -> " << e->what;
  }
}

TEST(TextParser, CommentsEofAndExemplarsAreNotSamples) {
  const auto s = samples(
      "# a comment of any kind\n#\n# HELP\n# UNIT x_seconds seconds\n"
      "x_bucket{le=\"1\"} 3 # {trace_id=\"abc\"} 0.5 1.0\n# EOF\nnot read at all {\n");
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0].value, 3.0);
}

TEST(TextParser, NumbersIgnoreTheLocale) {
  // A decimal comma locale, when the machine has it (scripts/install-deps test makes it).
  const char* old = std::setlocale(LC_ALL, nullptr);
  const std::string saved = old != nullptr ? old : "C";
  if (std::setlocale(LC_ALL, "de_DE.UTF-8") == nullptr) GTEST_SKIP() << "no de_DE.UTF-8 locale";
  const auto s = samples("a 0.25\n");
  std::setlocale(LC_ALL, saved.c_str());
  ASSERT_EQ(s.size(), 1U);
  EXPECT_EQ(s[0].value, 0.25);
}

TEST(TextParser, LabelMatchersAsUsersWriteThem) {
  EXPECT_EQ(parse_label_matchers("{model=\"m\",kind=\"out\"}"),
            (label_pairs{{"model", "m"}, {"kind", "out"}}));
  EXPECT_EQ(parse_label_matchers("{}"), label_pairs{});
  EXPECT_FALSE(parse_label_matchers("{model=m}"));
  EXPECT_FALSE(parse_label_matchers("{model=\"m\"} trailing"));
  EXPECT_FALSE(parse_label_matchers("model=\"m\""));
  EXPECT_TRUE(is_metric_name("vllm:generation_tokens_total"));
  EXPECT_FALSE(is_metric_name("9lives"));
  EXPECT_FALSE(is_metric_name(""));
}

TEST(TextParser, ABigPageIsReadWholeAndInOrder) {
  std::string page;
  for (int i = 0; i < 20000; ++i)
    page +=
        "h_bucket{le=\"" + std::to_string(i) + "\",model_name=\"m\"} " + std::to_string(i) + "\n";
  double sum = 0.0;
  std::size_t n = 0;
  EXPECT_FALSE(parse_text_format(page, [&](const sample_view& v) {
    sum += v.value;
    ++n;
  }));
  EXPECT_EQ(n, 20000U);
  EXPECT_EQ(sum, 19999.0 * 20000.0 / 2.0);
}

}  // namespace
}  // namespace joules::tokens
