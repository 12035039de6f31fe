#pragma once
// Joules per token: the energy of a server's GPUs over each interval between two of its token
// counts, divided by the tokens counted in it.  docs/inference.md derives every figure here.
//
// An interval is one of three states:
//   - active: tokens were counted in it, or the server said a request was running at either
//     end (llama.cpp and TGI count a request's tokens only when it ends);
//   - idle: no token and no running request: its energy is reported apart, so that J/token at
//     load is what serving costs and the idle share stays visible;
//   - gap: the server did not answer at one end (down, slow, restarting) or the energy at an end
//     is unknown: neither its energy nor its tokens enter a J/token figure; its length and energy
//     are reported as such, never as zero tokens (which would read as a spike of J/token) nor as
//     tokens without energy.
//
// Windows: the live one (the last interval), the last 60 s and 300 s (the intervals that end
// within them, whole), and the run (every interval since the first count).
//
// Pure; not thread-safe (one per source).

#include <deque>
#include <optional>

namespace joules::tokens {

enum class interval_state { active, idle, gap };

struct interval {
  double start_s = 0.0;  // monotonic seconds
  double end_s = 0.0;
  interval_state state = interval_state::gap;
  std::optional<double> energy_j;  // of the source's GPUs over it; unknown for some gaps
  double input_tokens = 0.0;
  double output_tokens = 0.0;
  double requests = 0.0;
  bool input_known = false;
  bool requests_known = false;
};

// active if tokens moved or a request ran at either end (when the server says), else idle.
interval_state classify(double input_tokens, double output_tokens,
                        std::optional<double> running_start, std::optional<double> running_end);

// The sums of a window and what they make.  Energies in J, durations in s.
struct window_totals {
  std::size_t intervals = 0;
  double start_s = 0.0;  // of its first interval
  double end_s = 0.0;    // of its last
  double active_s = 0.0;
  double idle_s = 0.0;
  double gap_s = 0.0;
  std::size_t gaps = 0;
  double active_energy_j = 0.0;
  double idle_energy_j = 0.0;
  double gap_energy_j = 0.0;  // of the gaps whose energy is known
  double input_tokens = 0.0;
  double output_tokens = 0.0;
  double requests = 0.0;
  bool input_known = false;     // some interval counted input tokens
  bool requests_known = false;  // some interval counted requests

  void add(const interval& iv);

  // Active energy per output token (J/token at load); unknown without an output token.
  std::optional<double> energy_per_output_token_j() const;
  // Active energy per token, input and output (unknown without an input counter).
  std::optional<double> energy_per_token_j() const;
  std::optional<double> output_tokens_per_j() const;
  std::optional<double> energy_per_request_j() const;
  // With the idle energy: what the served tokens cost in all, idle time included.
  std::optional<double> energy_per_output_token_with_idle_j() const;
  // Idle energy over active plus idle (0-1).
  std::optional<double> idle_energy_ratio() const;
  std::optional<double> output_tokens_per_s() const;  // over active and idle time
  std::optional<double> input_tokens_per_s() const;
  std::optional<double> avg_power_w() const;  // of the GPUs, over active and idle time
};

class attribution {
 public:
  static constexpr double kOneMinuteS = 60.0;
  static constexpr double kFiveMinutesS = 300.0;

  // Intervals in time order.
  void add(const interval& iv);

  // The last interval alone.
  window_totals live() const;
  // The intervals that end within the last `seconds` before the end of the latest one.
  window_totals last(double seconds) const;
  const window_totals& run() const { return run_; }
  bool empty() const { return run_.intervals == 0; }

 private:
  std::deque<interval> recent_;  // those ending within kFiveMinutesS of the latest
  window_totals run_;
};

}  // namespace joules::tokens
