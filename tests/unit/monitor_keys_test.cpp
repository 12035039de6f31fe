// monitor's keyboard: the bytes terminals send for each key, and what each key changes.
#include <gtest/gtest.h>

#include "monitor/keys.hpp"

namespace joules::monitor {
namespace {

std::vector<key> kinds(std::string_view bytes) {
  std::vector<key> out;
  for (const auto& k : decode_keys(bytes))
    out.push_back(k.what);
  return out;
}

TEST(MonitorKeys, LettersControlKeysAndDigits) {
  EXPECT_EQ(kinds("q"), std::vector<key>{key::quit});
  EXPECT_EQ(kinds("Q\x03\x1c"), (std::vector<key>{key::quit, key::quit, key::quit}));
  EXPECT_EQ(kinds("\x1a"), std::vector<key>{key::suspend});
  EXPECT_EQ(kinds("?srpv 0"), (std::vector<key>{key::help, key::sort, key::reverse, key::pause,
                                                key::view, key::pause, key::back}));
  const auto d = decode_keys("3");
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0], (key_press{key::digit, 3}));
  EXPECT_EQ(kinds("x\r"), (std::vector<key>{key::other, key::other}));
}

TEST(MonitorKeys, ArrowsInBothCursorModesAndEsc) {
  EXPECT_EQ(kinds("\x1b[C\x1b[D"), (std::vector<key>{key::right, key::left}));
  EXPECT_EQ(kinds("\x1bOC\x1bOD"), (std::vector<key>{key::right, key::left}));  // application mode
  EXPECT_EQ(kinds("\x1b[1;2C"), std::vector<key>{key::right});                  // Shift-→
  EXPECT_EQ(kinds("\x1b"), std::vector<key>{key::back});
  // Esc typed just before another key: both.
  EXPECT_EQ(kinds("\x1bv"), (std::vector<key>{key::back, key::view}));
  EXPECT_EQ(kinds("\x1b\x1b"), (std::vector<key>{key::back, key::back}));
  // Other sequences are one key each: F5 (ESC [ 1 5 ~) is not "1" and "5".
  EXPECT_EQ(kinds("\x1b[15~\x1b[A"), (std::vector<key>{key::other, key::other}));
  EXPECT_EQ(kinds("\x1b[15~q"), (std::vector<key>{key::other, key::quit}));
}

TEST(MonitorKeys, AnEscapeSequenceSplitBetweenReadsIsWaitedFor) {
  EXPECT_TRUE(incomplete_escape("\x1b"));
  EXPECT_TRUE(incomplete_escape("q\x1b["));
  EXPECT_TRUE(incomplete_escape("\x1b[1;"));
  EXPECT_TRUE(incomplete_escape("\x1bO"));
  EXPECT_FALSE(incomplete_escape("\x1b[C"));
  EXPECT_FALSE(incomplete_escape("\x1bOD"));
  EXPECT_FALSE(incomplete_escape("\x1bv"));
  EXPECT_FALSE(incomplete_escape("qv"));
}

TEST(MonitorKeys, SortCyclesAndReverses) {
  ui_state ui;
  const std::vector<unsigned> gpus = {0, 1, 2};
  std::vector<std::string_view> seen;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(apply(ui, {key::sort, 0}, gpus), key_effect::redraw);
    seen.push_back(to_string(ui.sort));
  }
  EXPECT_EQ(seen, (std::vector<std::string_view>{"power", "utilisation", "memory", "temperature",
                                                 "index"}));
  apply(ui, {key::reverse, 0}, gpus);
  EXPECT_TRUE(ui.reverse);
  apply(ui, {key::reverse, 0}, gpus);
  EXPECT_FALSE(ui.reverse);
}

TEST(MonitorKeys, ArrowsAndDigitsFocusAGpuAndEscGoesBack) {
  ui_state ui;
  const std::vector<unsigned> gpus = {2, 3, 5};  // --gpus 2,3,5
  apply(ui, {key::right, 0}, gpus);
  EXPECT_EQ(ui.focus, 2U);
  apply(ui, {key::right, 0}, gpus);
  EXPECT_EQ(ui.focus, 3U);
  apply(ui, {key::left, 0}, gpus);
  apply(ui, {key::left, 0}, gpus);  // wraps to the last
  EXPECT_EQ(ui.focus, 5U);
  EXPECT_EQ(apply(ui, {key::back, 0}, gpus), key_effect::redraw);
  EXPECT_FALSE(ui.focus);
  EXPECT_EQ(apply(ui, {key::back, 0}, gpus), key_effect::none);
  apply(ui, {key::left, 0}, gpus);
  EXPECT_EQ(ui.focus, 5U);
  apply(ui, {key::digit, 1}, gpus);  // the first GPU shown
  EXPECT_EQ(ui.focus, 2U);
  EXPECT_EQ(apply(ui, {key::digit, 4}, gpus), key_effect::none);  // there is no fourth
  EXPECT_EQ(ui.focus, 2U);
  // A view key leaves the detailed view for the next view.
  apply(ui, {key::view, 0}, gpus);
  EXPECT_FALSE(ui.focus);
  EXPECT_EQ(ui.view, view_kind::processes);
  apply(ui, {key::view, 0}, gpus);
  EXPECT_EQ(ui.view, view_kind::graphs);
  apply(ui, {key::view, 0}, gpus);
  EXPECT_EQ(ui.view, view_kind::overview);
}

TEST(MonitorKeys, HelpClosesOnAnyKeyButQuitAndPauseToggles) {
  ui_state ui;
  const std::vector<unsigned> gpus = {0};
  apply(ui, {key::help, 0}, gpus);
  EXPECT_TRUE(ui.help);
  // A key while the help is open closes it and does nothing else.
  EXPECT_EQ(apply(ui, {key::sort, 0}, gpus), key_effect::redraw);
  EXPECT_FALSE(ui.help);
  EXPECT_EQ(ui.sort, sort_key::index);
  apply(ui, {key::help, 0}, gpus);
  EXPECT_EQ(apply(ui, {key::quit, 0}, gpus), key_effect::quit);
  EXPECT_EQ(apply(ui, {key::suspend, 0}, gpus), key_effect::suspend);
  apply(ui, {key::pause, 0}, gpus);  // closes the help
  apply(ui, {key::pause, 0}, gpus);
  EXPECT_TRUE(ui.paused);
  apply(ui, {key::pause, 0}, gpus);
  EXPECT_FALSE(ui.paused);
}

}  // namespace
}  // namespace joules::monitor
