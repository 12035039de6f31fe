#pragma once
// Joules per token of inference servers in a session (`serve`, `monitor`, `run`, `wrap`): one
// token source per --tokens-from URL, each tied to its GPUs (@gpus=, else all the session's
// GPUs), or, in `wrap` without a URL, the command's own log lines.  Every source reads the
// energy of its GPUs at the instants it counted tokens from a history (tokens/energy_history.hpp)
// that asks the sampler's accounting first and falls back on the snapshots a follower thread
// copies into it; the sources publish their views on a board that /metrics, OTLP, monitor and
// the summary read.  docs/inference.md.
//
// Thread-safety: construction, start(), finish() and summary() from the session's thread;
// on_line() from wrap's loop; board() from any thread.  The hooks are called on the sources'
// threads.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http/http_client.hpp"
#include "record/session_records.hpp"
#include "record/summary.hpp"
#include "sampler/sampler.hpp"
#include "tokens/board.hpp"
#include "tokens/energy_history.hpp"
#include "tokens/log_source.hpp"
#include "tokens/scrape_source.hpp"
#include "tokens/server_page.hpp"

namespace joules::session {

struct token_source_spec {
  std::string text;  // as given
  exporter::http_url url;
  std::vector<unsigned> gpus;  // NVML indices; empty: every GPU of the session
};

struct inference_settings {
  std::vector<token_source_spec> sources;        // --tokens-from
  std::vector<tokens::metric_selector> metrics;  // --tokens-metric
  std::chrono::milliseconds interval{1000};      // --tokens-interval
  bool logs = false;  // wrap: the command's log lines when no URL is given

  bool any() const { return !sources.empty() || logs; }
};

// --tokens-from's URL[@gpus=LIST].  Throws usage_error naming the value and what is accepted.
token_source_spec parse_token_source(const std::string& text);
// The rules between several --tokens-from: each with @gpus= and no GPU in two of them, no URL
// twice.  Throws usage_error.
void check_token_sources(const std::vector<token_source_spec>& sources);

class inference_tracker {
 public:
  struct hooks {
    // A line for people, without the "joules: " prefix.
    std::function<void(const std::string&)> notice;
    // A JSONL record, when the session writes records (run, wrap).
    std::function<void(std::string)> record;
  };

  // `devices`: the sampled ones, in snapshot order.  `ctx`: the run's context for records
  // (null without records).  Throws usage_error when an @gpus= names a GPU the session does not
  // read.
  inference_tracker(const inference_settings& settings, const sampler& readings,
                    const std::vector<device_info>& devices, const run_context* ctx, hooks h);
  ~inference_tracker();
  inference_tracker(const inference_tracker&) = delete;
  inference_tracker& operator=(const inference_tracker&) = delete;

  // Replaces the hooks (before start()): wrap hands the lines to its loop.
  void set_hooks(hooks h) { hooks_ = std::move(h); }

  // After the sampler's start: the follower and the sources begin; `t` is when the measured
  // command (the server, for log lines) started.
  void start(mono_time t);
  // wrap: one line of the command's output, stamped on arrival.  Cheap for other lines.
  void on_line(std::string_view line, mono_time t);
  // The session ends at `end`, before the sampler stops: a last scrape of every URL (at most
  // 2 s), the last log lines, the final records.
  void finish(mono_time end);

  const tokens::board& board() const { return *board_; }
  // The summary's parts: one per source that counted tokens.
  std::vector<summary_part> summary() const;

 private:
  void follow(const std::stop_token& stop);
  tokens::source_hooks source_hooks();
  std::chrono::milliseconds sampler_interval() const;

  const sampler& readings_;
  const run_context* ctx_;
  hooks hooks_;
  std::unique_ptr<tokens::energy_history> history_;
  std::unique_ptr<tokens::board> board_;
  std::vector<std::unique_ptr<tokens::scrape_source>> scrapes_;
  std::unique_ptr<tokens::log_source> log_;
  std::chrono::milliseconds follow_every_{100};
  bool finished_ = false;
  std::jthread follower_;
};

}  // namespace joules::session
