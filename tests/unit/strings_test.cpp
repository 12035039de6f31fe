#include "util/strings.hpp"

#include <gtest/gtest.h>

namespace joules {
namespace {

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split("x", ','), (std::vector<std::string>{"x"}));
}

TEST(Strings, Trim) {
  EXPECT_EQ(trim("  a b \t\n"), "a b");
  EXPECT_EQ(trim("   "), "");
}

TEST(Strings, ParseUintRejectsAnythingButAWholeNumberInRange) {
  EXPECT_EQ(parse_uint("100", 1, 1000), 100U);
  EXPECT_FALSE(parse_uint("0", 1, 1000));
  EXPECT_FALSE(parse_uint("1001", 1, 1000));
  EXPECT_FALSE(parse_uint("-1", 0, 1000));
  EXPECT_FALSE(parse_uint("10ms", 0, 1000));
  EXPECT_FALSE(parse_uint(" 10", 0, 1000));
  EXPECT_FALSE(parse_uint("", 0, 1000));
}

TEST(Strings, ParseDouble) {
  EXPECT_EQ(parse_double("0.25"), 0.25);
  EXPECT_FALSE(parse_double("1,5"));
  EXPECT_FALSE(parse_double("nan"));
  EXPECT_FALSE(parse_double("inf"));
}

TEST(Strings, FormatJoules) {
  EXPECT_EQ(format_joules(778168.2), "778168 J");
  EXPECT_EQ(format_joules(412.34), "412.3 J");
  EXPECT_EQ(format_joules(1.234), "1.23 J");
  EXPECT_EQ(format_joules(0.0412), "0.0412 J");
}

TEST(Strings, WrapWordsKeepsANumberWithItsUnitAndTheWordBefore) {
  // "681 W" and "and 0.00793 J/token" are never parted; a group longer than a line stays whole.
  EXPECT_EQ(wrap_words("peak 681 W and 0.00793 J/token", 0, 2, 12),
            "peak 681 W\n  and 0.00793 J/token");
  EXPECT_EQ(wrap_words("power 354 W", 0, 0, 9), "power\n354 W");
}

TEST(Strings, WrapWordsStartsAtTheGivenColumnAndCountsCodePoints) {
  EXPECT_EQ(wrap_words("a b c", 10, 10, 14), "a b\n          c");
  EXPECT_EQ(wrap_words("x°C y°C z°C", 0, 0, 7), "x°C y°C\nz°C");
  EXPECT_EQ(wrap_words("  spaced   out  ", 0, 0, 80), "spaced out");
  EXPECT_EQ(wrap_words("", 0, 0, 80), "");
}

}  // namespace
}  // namespace joules
