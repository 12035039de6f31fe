#pragma once
// The pieces monitor's screens share (screen.cpp's overview, frame.cpp and detail_views.cpp):
// colours, how an outside string is shown, the title and node lines, a GPU's full block and the
// process table.  Internal to src/monitor; pure.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "monitor/layout.hpp"
#include "monitor/view.hpp"

namespace joules::monitor {

// ANSI SGR codes, used only when colour is on (a terminal, NO_COLOR unset, TERM not dumb).
inline constexpr std::string_view kBold = "1";
inline constexpr std::string_view kDim = "2";
inline constexpr std::string_view kReverse = "7";
inline constexpr std::string_view kRed = "31";
inline constexpr std::string_view kGreen = "32";
inline constexpr std::string_view kYellow = "33";
inline constexpr std::string_view kCyan = "36";
inline constexpr std::string_view kAlert = "1;31";
inline constexpr std::size_t kLabel = 10;  // " throttle ": the labels' column in full blocks

// A name from the driver, the host or /proc (a process may name itself anything, escape
// sequences included) as the screen shows it: never acted on by the terminal.
std::string shown(std::string_view outside);

// `line` (no colour in it) cut to `width` cells, with "…" as its last when it was longer: a
// command line cut, not a column that ends short.
std::string ellipsized(const std::string& line, std::size_t width);

// The power limit shown against a device's power: the enforced limit read with its health,
// else the one probed at open.
std::optional<double> limit_of(const device_view& d);

std::string label(std::string_view name);  // " power    ": a full block's margin
std::string percent(std::string_view name, const std::optional<double>& v);    // "sm 88%"
std::string percent(std::string_view name, const std::optional<unsigned>& v);  // "" if unknown
std::string celsius(const std::optional<double>& c);                           // "61°C", "-"
std::string gpu_title(const device_view& d, const painter& paint);             // "GPU 0"
std::string power_bar(const device_view& d, std::size_t width, const painter& paint);
// The health flags: "ok", or each warning and critical finding's flag in colour.
items health_flags(const device_view& d, const painter& paint);
std::string clock_pair(const std::optional<unsigned>& now, const std::optional<unsigned>& max);
// The active clock-event reasons, one item each: "power cap", "sw thermal"; "none", "-".
items throttle_reasons(const device_view& d, const painter& paint);
std::string lost_mark(const device_view& d, const painter& paint);  // "LOST" or ""
std::string watts_pair(const device_view& d);                       // "350 W / 700 W"
std::string memory_text(const health_reading& h);  // "8.0 GiB / 79.6 GiB (512 MiB reserved)"
std::string pcie_text(const health_reading& h);    // "pcie gen3 x8 (max gen5 x16)"
std::string pcie_rates(const health_reading& h);   // "tx 1.5 GB/s rx 2.5 GB/s"
std::string nvlink_text(const health_reading& h);
std::string nvlink_links_text(const health_reading& h);  // "nvlink 17/18 up", "" without links
items use_items(const health_reading& h);  // "gpu 97%", "sm 88%", ...; {"-"} when none
// The sparkline with its span and peak: " 60 s     ▁▂▃…  peak 695 W".
std::string spark_line(const screen_model& m, const device_view& d, std::size_t width,
                       std::size_t indent, const painter& paint);
// A warning or critical finding, or lost.
// The latest XID with its meaning, and how many XIDs in all (docs/xid.md).
items xid_items(const health_reading& h, const painter& paint);
bool has_problems(const device_view& d);
// The sparkline of the last `span_s` of power, in `columns` cells, scaled to the limit.
std::string spark(const device_view& d, double now_s, std::size_t columns, double span_s);

// The title line (host, source, interval, clock; "paused" when `paused`), the stale line, the
// node's totals, the CPU and DRAM rows, and a blank line.
lines header(const screen_model& m, std::size_t width, const painter& paint, bool paused);

// A GPU's full block: name and identifiers, power with its bar and energy, utilisation, memory
// and temperatures, clocks, links, throttle reasons and health; then its sparkline and a blank
// line when `spark`.
void full_block(lines& out, const screen_model& m, const device_view& d, std::size_t width,
                const painter& paint, bool spark);

// The table of processes: a title line and one row per process (PID, user, GPU, memory, SM
// utilisation, share of the GPU's energy, that share's power now and energy, command), within
// `room` lines of `width` cells; the rows that do not fit are counted on the last line.
void process_table(lines& out, const std::vector<const process_row*>& rows, std::size_t room,
                   std::size_t width, const painter& paint);

// The views (each at most `height` lines, not yet cut to `width`): the overview (screen.cpp),
// one GPU in detail, the graphs of every GPU, and the processes (detail_views.cpp).
lines overview(const screen_model& m, std::size_t width, std::size_t height, const painter& paint,
               bool paused);
lines focus_view(const screen_model& m, const device_view& d, std::size_t width, std::size_t height,
                 const painter& paint, bool paused);
lines graphs_view(const screen_model& m, const std::vector<std::size_t>& order, std::size_t width,
                  std::size_t height, const painter& paint, bool paused);
lines processes_view(const screen_model& m, const ui_state& ui, std::size_t width,
                     std::size_t height, const painter& paint, bool paused);

}  // namespace joules::monitor
