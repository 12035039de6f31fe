#pragma once
// A token source that scrapes an inference server's /metrics page at an interval, on a thread
// of its own: the sampler is never held up by a slow server, and the server is never asked
// more often than the interval (a scrape that overran skips the slots it missed).  Each scrape
// is placed at the midpoint between sending the request and receiving the whole page (the
// server read its counters somewhere in between).  The GPUs' energy at that instant is known
// exactly only once the sampler has read past it (energy_history.hpp): the scrape waits in a
// queue until then (at most `energy_wait`, then the snapshots' interpolation), while the next
// scrapes go on at their pace.  A scrape that gets no page within its timeout (down, slow) or a
// page without counts is a gap (attribution.hpp).
//
// Thread-safety: start() and finish() from one thread (the session's); the hooks are called on
// the source's thread.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/http_client.hpp"
#include "tokens/board.hpp"
#include "tokens/energy_history.hpp"
#include "tokens/source_model.hpp"

namespace joules::tokens {

// What a source hands to the session, on its own thread.
struct source_hooks {
  // One line for people (already without the "joules: " prefix).
  std::function<void(const std::string&)> notice;
  // A period's totals (the intervals since the previous call) and the view at its end.
  std::function<void(const source_view&, const window_totals&)> period;
};

struct scrape_options {
  exporter::http_url url;
  std::vector<metric_selector> metrics;  // --tokens-metric; empty: recognise the server
  std::chrono::milliseconds interval{1000};
  // How long a scrape waits for the exact energy at its instant (a sampler interval or two and
  // a counter update) before the snapshots' interpolation is taken.
  std::chrono::milliseconds energy_wait{2000};
  std::chrono::milliseconds period{10000};  // between period hooks
};

class scrape_source {
 public:
  // `devices`: the source's GPUs as indices into the history's points.  The history, the board
  // and the hooks' targets must outlive the source.
  scrape_source(scrape_options options, source_identity id, std::vector<std::size_t> devices,
                const energy_history& energy, board& out, std::size_t slot, source_hooks hooks);
  ~scrape_source();
  scrape_source(const scrape_source&) = delete;
  scrape_source& operator=(const scrape_source&) = delete;

  // The first scrape at once, then every interval.
  void start();
  // One last scrape at once, its period handed over, then the thread ends; the server has until
  // `deadline` to answer (the request is cut off then).  join() waits for the thread: several
  // sources finish together.
  void request_finish(mono_time deadline);
  void join();

  // A scrape's timeout for an interval: shorter than the interval (a slow server is a gap, not
  // a pile of requests), at least 0.5 s and at most 5 s.
  static std::chrono::milliseconds timeout_for(std::chrono::milliseconds interval);

 private:
  // A scrape whose energy is not known yet.
  struct pending {
    double t_s;
    std::optional<page_reading> page;
    scrape_failure failure;
    std::string error;
  };

  void run(const std::stop_token& stop);
  void scrape_once();
  // Takes the scrapes whose energy is known by now, in order; with `until`, waits for the exact
  // energy of each up to then.
  void settle(std::optional<mono_time> until, const std::stop_token& stop);
  void observe(const pending& p, std::optional<double> energy_j);
  void hand_period(double t_s);

  scrape_options options_;
  std::vector<std::size_t> devices_;
  const energy_history& energy_;
  board& board_;
  std::size_t slot_;
  source_hooks hooks_;
  exporter::http_client client_;
  scrape_model model_;
  std::deque<pending> pending_;  // the source's thread only
  double last_period_s_ = 0.0;
  bool period_started_ = false;

  std::mutex mu_;
  std::condition_variable_any cv_;
  bool finishing_ = false;
  mono_time deadline_{};  // guarded by mu_: when finishing, the last moment to wait for
  std::jthread thread_;
};

}  // namespace joules::tokens
