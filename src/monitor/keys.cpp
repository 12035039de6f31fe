#include "monitor/keys.hpp"

#include <algorithm>

namespace joules::monitor {
namespace {

constexpr char kEsc = 0x1b;
constexpr char kCtrlC = 0x03;
constexpr char kCtrlBackslash = 0x1c;
constexpr char kCtrlZ = 0x1a;

// The length of the escape sequence at bytes[i] (an ESC), and the key it is.  CSI sequences
// (ESC [ parameters final) and SS3 ones (ESC O final) are read whole; ESC alone is Esc.
std::size_t escape_sequence(std::string_view bytes, std::size_t i, key& out) {
  out = key::other;
  if (i + 1 >= bytes.size()) {
    out = key::back;
    return 1;
  }
  const char intro = bytes[i + 1];
  if (intro == 'O') {  // application cursor mode: ESC O C
    if (i + 2 >= bytes.size()) return 2;
    if (bytes[i + 2] == 'C') out = key::right;
    if (bytes[i + 2] == 'D') out = key::left;
    return 3;
  }
  if (intro == '[') {
    std::size_t j = i + 2;
    // Parameter and intermediate bytes (0x20-0x3f), then one final byte (0x40-0x7e).
    while (j < bytes.size() && bytes[j] >= 0x20 && bytes[j] <= 0x3f)
      ++j;
    if (j >= bytes.size()) return j - i;
    const bool plain = j == i + 2;  // no parameters: ESC [ C
    // "ESC [ 1 ; 2 C" is Shift-→: an arrow all the same.
    if (plain || bytes.substr(i + 2, 2) == "1;") {
      if (bytes[j] == 'C') out = key::right;
      if (bytes[j] == 'D') out = key::left;
    }
    return j + 1 - i;
  }
  // Esc then another key within one read (typed fast, or Alt-<key>, which monitor does not
  // use): Esc, and the key after it decoded on its own.
  out = key::back;
  return 1;
}

}  // namespace

std::vector<key_press> decode_keys(std::string_view bytes) {
  std::vector<key_press> out;
  for (std::size_t i = 0; i < bytes.size();) {
    const char c = bytes[i];
    if (c == kEsc) {
      key k = key::other;
      i += escape_sequence(bytes, i, k);
      out.push_back({k, 0});
      continue;
    }
    ++i;
    switch (c) {
      case 'q':
      case 'Q':
      case kCtrlC:
      case kCtrlBackslash:
        out.push_back({key::quit, 0});
        break;
      case kCtrlZ:
        out.push_back({key::suspend, 0});
        break;
      case '?':
        out.push_back({key::help, 0});
        break;
      case 's':
        out.push_back({key::sort, 0});
        break;
      case 'r':
        out.push_back({key::reverse, 0});
        break;
      case 'p':
      case ' ':
        out.push_back({key::pause, 0});
        break;
      case 'v':
        out.push_back({key::view, 0});
        break;
      case '0':
        out.push_back({key::back, 0});
        break;
      default:
        if (c >= '1' && c <= '9') {
          out.push_back({key::digit, static_cast<unsigned>(c - '0')});
        } else {
          out.push_back({key::other, 0});  // no key of monitor's, but it closes the help
        }
        break;
    }
  }
  return out;
}

bool incomplete_escape(std::string_view bytes) {
  const std::size_t esc = bytes.rfind(kEsc);
  if (esc == std::string_view::npos) return false;
  const std::string_view tail = bytes.substr(esc + 1);
  if (tail.empty()) return true;
  if (tail[0] == 'O') return tail.size() < 2;
  if (tail[0] != '[') return false;
  for (std::size_t i = 1; i < tail.size(); ++i) {
    if (tail[i] < 0x20 || tail[i] > 0x3f) return false;  // the final byte arrived
  }
  return true;
}

std::string_view to_string(view_kind v) {
  switch (v) {
    case view_kind::overview:
      return "overview";
    case view_kind::processes:
      return "processes";
    case view_kind::graphs:
      return "graphs";
  }
  return "overview";
}

std::string_view to_string(sort_key s) {
  switch (s) {
    case sort_key::index:
      return "index";
    case sort_key::power:
      return "power";
    case sort_key::utilisation:
      return "utilisation";
    case sort_key::memory:
      return "memory";
    case sort_key::temperature:
      return "temperature";
  }
  return "index";
}

key_effect apply(ui_state& ui, key_press k, const std::vector<unsigned>& gpus) {
  if (k.what == key::quit) return key_effect::quit;
  if (k.what == key::suspend) return key_effect::suspend;
  if (ui.help) {
    ui.help = false;
    return key_effect::redraw;
  }
  // The focused GPU's place among those shown, when it is one of them.
  auto at = ui.focus ? std::find(gpus.begin(), gpus.end(), *ui.focus) : gpus.end();
  switch (k.what) {
    case key::help:
      ui.help = true;
      return key_effect::redraw;
    case key::sort:
      ui.sort = static_cast<sort_key>((static_cast<int>(ui.sort) + 1) %
                                      (static_cast<int>(sort_key::temperature) + 1));
      return key_effect::redraw;
    case key::reverse:
      ui.reverse = !ui.reverse;
      return key_effect::redraw;
    case key::pause:
      ui.paused = !ui.paused;
      return key_effect::redraw;
    case key::view:
      ui.view = static_cast<view_kind>((static_cast<int>(ui.view) + 1) %
                                       (static_cast<int>(view_kind::graphs) + 1));
      ui.focus.reset();
      return key_effect::redraw;
    case key::back:
      if (!ui.focus) return key_effect::none;
      ui.focus.reset();
      return key_effect::redraw;
    case key::digit:
      if (k.digit == 0 || k.digit > gpus.size()) return key_effect::none;
      ui.focus = gpus[k.digit - 1];
      return key_effect::redraw;
    case key::right:
    case key::left: {
      if (gpus.empty()) return key_effect::none;
      const bool right = k.what == key::right;
      if (at == gpus.end()) {
        ui.focus = right ? gpus.front() : gpus.back();
      } else {
        const auto i = static_cast<std::size_t>(at - gpus.begin());
        ui.focus = gpus[right ? (i + 1) % gpus.size() : (i + gpus.size() - 1) % gpus.size()];
      }
      return key_effect::redraw;
    }
    default:
      return key_effect::none;
  }
}

}  // namespace joules::monitor
