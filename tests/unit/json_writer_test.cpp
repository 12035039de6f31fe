#include "util/json_writer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>

namespace joules {
namespace {

TEST(JsonWriter, WritesNestedValuesThatParse) {
  json_writer w;
  w.begin_object().field("a", 1).field("b", "x\"y\\z\n").key("c").begin_array();
  w.value(1.5).value(true).null().begin_object().end_object().end_array();
  w.field("d", std::optional<double>{}).field("e", std::optional<int>{7}).end_object();
  const auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j["a"], 1);
  EXPECT_EQ(j["b"], "x\"y\\z\n");
  EXPECT_EQ(j["c"].size(), 4U);
  EXPECT_TRUE(j["d"].is_null());
  EXPECT_EQ(j["e"], 7);
}

TEST(JsonWriter, NonFiniteNumbersBecomeNull) {
  json_writer w;
  w.begin_array().value(std::numeric_limits<double>::quiet_NaN());
  w.value(std::numeric_limits<double>::infinity()).value(-0.0).end_array();
  EXPECT_EQ(w.str(), "[null,null,0]");
}

TEST(JsonWriter, NumbersRoundTripExactly) {
  json_writer w;
  w.begin_array().value(0.1).value(1234567.891011).value(1e-7).value(std::int64_t{-42}).end_array();
  const auto j = nlohmann::json::parse(w.str());
  EXPECT_EQ(j[0].get<double>(), 0.1);
  EXPECT_EQ(j[1].get<double>(), 1234567.891011);
  EXPECT_EQ(j[2].get<double>(), 1e-7);
  EXPECT_EQ(j[3].get<int>(), -42);
}

TEST(JsonWriter, EscapesControlCharactersAndReplacesInvalidUtf8) {
  std::string out;
  append_json_escaped(out, std::string("a\x01\x7f\tb", 5));
  EXPECT_EQ(out, "a\\u0001\\u007f\\tb");
  out.clear();
  append_json_escaped(
      out, "ok \xE2\x82\xAC \xFF \xC3 \xED\xA0\x80 end");  // euro, bad, truncated, surrogate
  EXPECT_EQ(out,
            "ok \xE2\x82\xAC \xEF\xBF\xBD \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD end");
  EXPECT_EQ(nlohmann::json::parse("\"" + out + "\"").size(), 1U);
}

TEST(JsonWriter, C1ControlsAreEscapedSoThatATerminalNeverActsOnThem) {
  // U+009B is CSI: a terminal in 8-bit mode would start a sequence at it.
  std::string out;
  append_json_escaped(out,
                      "a\xC2\x9B"
                      "2Jb \xC2\xA0");  // CSI, then a no-break space (kept)
  EXPECT_EQ(out, "a\\u009b2Jb \xC2\xA0");
  EXPECT_EQ(nlohmann::json::parse("\"" + out + "\"").get<std::string>(),
            "a\xC2\x9B"
            "2Jb \xC2\xA0");
}

}  // namespace
}  // namespace joules

TEST(NumberText, FloatNoiseIsNotWrittenAndShortFormsStay) {
  const auto text = [](double d) {
    std::string s;
    joules::append_json_number(s, d);
    return s;
  };
  EXPECT_EQ(text(0.1 + 0.2), "0.3");
  EXPECT_EQ(text(13.86 / 1000.0), "0.01386");
  EXPECT_EQ(text(0.1), "0.1");
  EXPECT_EQ(text(1e-7), "1e-07");
  EXPECT_EQ(text(123456.789012), "123456.789012");
  EXPECT_EQ(text(1.0 / 3.0), "0.333333333333333");
  // Rounding never makes a larger value print smaller (counters stay monotonic).
  EXPECT_EQ(text(0.30000000000000004), text(0.3));
}
