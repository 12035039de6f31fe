#pragma once
// One token source as joules follows it: an inference server's /metrics page scraped at an
// interval (scrape_model), or a server's log lines (log_model).  Each turns what it observes,
// with the GPUs' energy at the same instants, into intervals (attribution.hpp) and keeps the
// view that /metrics, monitor, the records and the summary show (source_view).
//
// Pure: the caller does the I/O and reads the energy; the unit tests drive these directly.
// Not thread-safe: one per source, used by that source's thread.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokens/attribution.hpp"
#include "tokens/counter_deltas.hpp"
#include "tokens/log_lines.hpp"
#include "tokens/server_page.hpp"

namespace joules::tokens {

struct source_identity {
  std::string endpoint;        // the URL without its query, or "log"
  std::vector<unsigned> gpus;  // NVML indices of the server's GPUs
  bool estimated = false;      // counts from log lines, not counters
};

struct source_view {
  source_identity id;
  std::string server;      // "vllm", "sglang", "tgi", "llamacpp", "custom"; "" until known
  std::string model_name;  // the model_name label(s) of its counters, comma-joined; may be ""
  bool up = false;         // the latest scrape read the counters
  std::string last_error;  // why not, while not up
  std::uint64_t scrapes = 0;
  std::uint64_t scrape_errors = 0;
  std::uint64_t counter_resets = 0;
  window_totals live;
  window_totals one_minute;
  window_totals five_minutes;
  window_totals run;
};

// Why a scrape gave no counts, for saying it once per change rather than every scrape.
enum class scrape_failure { none, no_response, http_status, too_large, not_text, no_counters };

class scrape_model {
 public:
  explicit scrape_model(source_identity id);

  // One scrape at t_s (monotonic seconds): its page (or `failure` and `error` when there is
  // none) and the energy of the source's GPUs at t_s (nullopt when unknown).
  void observe(double t_s, const std::optional<page_reading>& page, scrape_failure failure,
               const std::string& error, std::optional<double> energy_j);

  const source_view& view() const { return view_; }
  // The intervals added since the previous call, summed (for the periodic record).
  window_totals take_period();
  // A line for people when the source's state changed (first counts, down, up again).
  std::optional<std::string> take_notice();

 private:
  void add(const interval& iv);

  source_view view_;
  counter_deltas deltas_;
  attribution attribution_;
  window_totals period_;
  struct point {
    double t_s;
    std::optional<double> energy_j;
    bool ok;
    std::optional<double> running;
  };
  std::optional<point> previous_;
  scrape_failure noticed_ = scrape_failure::none;
  bool announced_ = false;
  std::optional<double> down_since_s_;
  std::optional<std::string> notice_;
};

// Tokens from log lines: each line's count (or rate times its span) closes an interval at the
// line's arrival.  Lines within kMergeS of each other fall into one interval (a server printing
// the lines of several engines at once).
class log_model {
 public:
  static constexpr double kMergeS = 0.5;
  // vLLM's default VLLM_LOG_STATS_INTERVAL, until the lines show the server's own.
  static constexpr double kDefaultStatsIntervalS = 10.0;

  using energy_at = std::function<std::optional<double>(double t_s)>;

  // `start_s`: when the server was started; nothing before its first line is attributed.
  log_model(source_identity id, double start_s);

  // A line at t_s that reported `tokens`.
  void observe(double t_s, const log_tokens& tokens, const energy_at& energy);
  // Time passes: an interval left open for kMergeS is closed, so that the view shows it.
  void tick(double now_s, const energy_at& energy);
  // The run ended at t_s: the interval still open is closed; what follows the last line is not
  // attributed (the server's next line would have said).
  void close(double t_s, const energy_at& energy);

  const source_view& view() const { return view_; }
  bool seen() const { return seen_; }
  window_totals take_period();

 private:
  struct pending {
    double start_s;
    double end_s;
    double input = 0.0;
    double output = 0.0;
    double requests = 0.0;
    bool input_known = false;
    bool requests_known = false;
  };
  void flush(const energy_at& energy);
  void add_span(double start_s, double end_s, interval_state state, const energy_at& energy);
  double typical_interval(const std::pair<int, int>& stream) const;

  source_view view_;
  attribution attribution_;
  window_totals period_;
  double start_s_;
  double last_s_;  // the end of the latest interval
  bool seen_ = false;
  std::optional<pending> open_;
  std::map<std::pair<int, int>, double> stream_last_s_;
  std::map<std::pair<int, int>, std::vector<double>> stream_gaps_s_;
};

}  // namespace joules::tokens
