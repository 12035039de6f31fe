#pragma once
// The keys of `joules monitor` and what they change: the view, the sort, the pause, the focused
// GPU and the help overlay.  The bytes a terminal sends are decoded here (letters, control keys,
// Esc and the arrow keys in both cursor modes), so that the whole keyboard can be unit-tested
// without a terminal.  Pure; the main thread only.

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace joules::monitor {

enum class key {
  quit,     // q, Q, Ctrl-C, Ctrl-backslash
  suspend,  // Ctrl-Z
  help,     // ?
  sort,     // s: the next sort key
  reverse,  // r
  pause,    // p, space
  left,     // ←
  right,    // →
  back,     // Esc, 0: all GPUs again
  view,     // v: the next view
  digit,    // 1-9: focus the Nth GPU
  other,    // any other key or sequence: it closes the help
};

struct key_press {
  key what = key::other;
  unsigned digit = 0;  // 1-9, for key::digit
  bool operator==(const key_press&) const = default;
};

// The keys in `bytes`, as one read from the terminal returned them.  An escape sequence (an
// arrow key: ESC [ C, or ESC O C in application cursor mode) arrives whole in one read; an ESC
// that ends the read is the Esc key.  Other sequences (function keys, a mouse report) are one
// key::other each, never taken for the letters inside them.
std::vector<key_press> decode_keys(std::string_view bytes);
// Whether `bytes` ends inside an escape sequence (an ESC, or ESC [ or ESC O without its final
// byte): the rest may still be on its way.
bool incomplete_escape(std::string_view bytes);

enum class view_kind { overview, processes, graphs };
enum class sort_key { index, power, utilisation, memory, temperature };
std::string_view to_string(view_kind v);
std::string_view to_string(sort_key s);

// What the person chose.  `focus` is the NVML index of the GPU shown in detail.
struct ui_state {
  view_kind view = view_kind::overview;
  sort_key sort = sort_key::index;
  bool reverse = false;
  bool paused = false;
  bool help = false;
  std::optional<unsigned> focus;
};

// What the main loop does after a key.
enum class key_effect { none, redraw, quit, suspend };

// Applies `k` to `ui`.  `gpus`: the NVML indices of the GPUs shown, in index order (← and →
// step through them, 1-9 pick the Nth).  While the help overlay is open, a key other than quit
// or suspend only closes it.
key_effect apply(ui_state& ui, key_press k, const std::vector<unsigned>& gpus);

}  // namespace joules::monitor
