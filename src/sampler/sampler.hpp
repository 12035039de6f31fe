#pragma once
// The sampler: the only code that reads a backend during a run.  One thread, scheduled with
// `next += period` so it never drifts, reads every accounted device each tick, feeds accounting,
// and publishes immutable snapshots for whoever wants live numbers (the HTTP exporter, the
// monitor view).  All its time comes from a sampler_clock (steady_clock unless given another):
// its schedule, its waits and the instants its readings are stamped with.
//
// Around every boundary it reads more: right after start, every millisecond until it has seen
// each energy counter advance a few times (this tells a counter that advances continuously from
// one that advances every Q ms, and when); right after any other boundary (a step line in
// `wrap`, the end of the run), once at once, then every 3 ms, and every millisecond from just
// before the update its counter's model predicts, until each counter that advances in steps has
// advanced once more.  Those reads are what let accounting place a boundary inside a counter
// update period (energy/counter_track.hpp).  A boundary only sets a flag and wakes the thread:
// whoever places it never waits for a reading.
//
// Control tasks (post()) run on the same thread between readings: changing a GPU's power limit
// while sampling (src/control) is a call like any other, made by the one thread that calls the
// driver.  The schedule of readings is kept: a task delays the next reading by its own length at
// most, and ticks without a task cost one more test of a queue the thread checks under its lock
// anyway.
//
// Thread-safety: start(), boundary(), post(), finish() and snapshot() are called from other
// threads; the backend and the accounting belong to the sampler thread until finish() returns.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "backends/backend.hpp"
#include "energy/accounting.hpp"
#include "sampler/read_span.hpp"
#include "sampler/sampler_clock.hpp"
#include "util/clock.hpp"

namespace joules {

struct sampler_options {
  std::chrono::milliseconds interval{100};
  // Dense reads at the edges: their spacing, and how long the start may take at most.
  std::chrono::microseconds burst_spacing{1000};
  // After a boundary, until a few milliseconds before a stepped counter's predicted update, the
  // reads that shape the energy between the boundary and that update come this far apart.
  std::chrono::microseconds shape_spacing{3000};
  std::chrono::milliseconds start_burst_max{350};
  std::chrono::milliseconds end_burst_max{250};
  // How long finish() waits for a sampler stuck in a hung backend call before giving up on it.
  std::chrono::milliseconds finish_timeout{3000};
  // Health readings (monitor, serve) every this often, after a tick; none when unset.
  std::optional<std::chrono::milliseconds> health_interval;
};

// Live view of the devices, replaced after every tick.
struct sampler_snapshot {
  mono_time taken{};
  std::uint64_t ticks = 0;
  std::uint64_t health_rounds = 0;  // health readings of every device taken so far
  struct device {
    std::optional<double> power_w;
    std::optional<double> energy_j;           // since the sampler's first reading
    std::optional<std::uint64_t> counter_mj;  // the raw counter (mJ since the driver loaded)
    std::optional<std::uint64_t> counter_uj;  // the raw µJ counter of RAPL domains (it wraps)
    bool lost = false;
    // Neither its energy nor its power can be read any more (both answer NOT_SUPPORTED): its
    // energy stays what was known at its last useful reading.
    bool silent = false;
    std::optional<health_reading> health;  // the latest, when health readings are on
  };
  std::vector<device> devices;
};

class sampler {
 public:
  // Opens a backend; called once, on the sampler thread.
  using backend_factory = std::function<std::unique_ptr<backend>()>;

  // Starts the sampler thread, which opens the backend with `open`: from then on only that
  // thread calls it, from its probing at open to its shutdown at the end (nobody else calls the
  // driver).  Throws what `open` threw.  `clock` must outlive the sampler; instants given to
  // boundary() and finish() are on it.
  sampler(backend_factory open, sampler_options options,
          sampler_clock& clock = sampler_clock::steady());
  ~sampler();
  sampler(const sampler&) = delete;
  sampler& operator=(const sampler&) = delete;

  // The opened backend's devices, meta data and notices (set at open, immutable afterwards:
  // safe to read from any thread).
  const backend& hardware() const { return *backend_; }

  // Runs `fn(backend&)` on the sampler thread before sampling has started, and returns its
  // result (device selection asks the driver about MIG instances this way).
  template <class F>
  auto on_thread(F fn) -> decltype(fn(std::declval<backend&>()));

  // Runs `fn(backend&)` on the sampler thread and returns at once: before start() as on_thread
  // does, while sampling between two readings.  The future holds fn's result or exception.  A
  // task that cannot run any more (the sampler has stopped, or was abandoned in a hung driver
  // call) is dropped: its future then throws std::future_error (broken_promise), so a caller
  // waits with a bound (future::wait_for), never forever.
  template <class F>
  auto post(F fn) -> std::future<decltype(fn(std::declval<backend&>()))>;

  // Starts sampling `devices` (indices into hardware().devices(); accounting sees them in this
  // order) and returns after the first reading of every one, so that a boundary placed right
  // after start() is bracketed by readings.
  void start(std::vector<std::size_t> devices);

  // Changes the interval between readings; only before start().
  void set_interval(std::chrono::milliseconds interval) { options_.interval = interval; }

  // A window boundary at t (any thread; non-blocking).
  void boundary(mono_time t);

  // Dense reads now, as after a boundary, but no boundary: for instants that accounting does
  // not turn into consecutive windows (the library's windows, which nest and overlap:
  // session/api_monitor.hpp).  Any thread; non-blocking.
  void request_edge();

  // Called on the sampler thread after each round of readings, outside the sampler's lock (it
  // may call with_accounts).  Set before start().
  void on_readings(std::function<void()> fn) { on_readings_ = std::move(fn); }

  // Runs fn(accounting&) under the sampler's lock, after start(): a consistent view of the
  // timelines from any thread (energy at an instant, readings to keep).  Keep it short: the
  // sampler waits for it before it hands over its next readings.
  template <class F>
  auto with_accounts(F fn) -> decltype(fn(std::declval<accounting&>())) {
    std::lock_guard lock(mu_);
    return fn(*accounting_);
  }

  // Called on the sampler thread with each finished window, as soon as it is known.
  void on_window(std::function<void(const window_result&)> fn) { on_window_ = std::move(fn); }

  // Places a last boundary at `end`, reads once more (and densely until stepped counters
  // advance), resolves everything and stops the thread.  Returns every window not yet handed to
  // on_window.  If the thread is stuck in the backend past finish_timeout, it is abandoned and
  // the windows are computed from what was read until then (abandoned() then says so).
  std::vector<window_result> finish(mono_time end);
  bool abandoned() const { return abandoned_; }

  // Stops the thread without final readings or windows (a live view that is done), waiting at
  // most `grace` for it.  A thread stuck in a hung backend call past `grace` is abandoned:
  // returns false, and abandoned() says so.  The caller must then end the process with
  // std::_Exit, since the thread still uses this object when the call returns.  Any thread.
  bool stop(std::chrono::milliseconds grace);

  std::shared_ptr<const sampler_snapshot> snapshot() const;

  // Each sampled device's cumulative energy at `t` (J, snapshot order), placed by accounting
  // from the readings around t as a window boundary at t would be (counter updates placed in
  // time, the power readings between them), without the dense reads a boundary asks for; a lost
  // device keeps its last energy.  nullopt until every device has a reading after t, and for t
  // older than kEnergyHistory (accounting drops older readings).  For token sources, which need
  // the energy at the instants they counted (docs/inference.md).  Any thread: it holds the
  // sampler's lock for the arithmetic, never across a backend call.
  static constexpr std::chrono::seconds kEnergyHistory{5};
  std::optional<std::vector<double>> energy_at(mono_time t) const;

  // After finish(): per-device diagnostics for records.
  const accounting& accounts() const { return *accounting_; }
  std::uint64_t ticks() const { return ticks_.load(); }
  // The interval in force: the one asked for, shortened by start() to the devices'
  // max_read_interval (RAPL counters must not wrap twice between reads).
  double interval_s() const { return std::chrono::duration<double>(options_.interval).count(); }

 private:
  enum class wake { timeout, edge, finish };

  // An energy counter whose reads usually take longer than this is costly: NVML's on an H100
  // takes 3.9 ms of CPU a read, where instantaneous power takes 2.5 µs (docs/nvml-notes.md
  // §2.4); read every 100 ms on 8 GPUs, that would be a third of a core.  The ticks then read
  // its power, and its counter at most every kCostlyCounterTickEvery and never close to an
  // update; a boundary reads it once the update after it is past (edge_burst), and repin() pins
  // one of its updates now and then, at most every kCostlyCounterEvery.  The energy between two
  // counter readings is shaped by the power read between them (energy/device_timeline.cpp), so
  // totals and windows stay the counter's; the ticks' reads only bound how long a stretch the
  // power shapes (live totals, a GPU lost between two reads).
  static constexpr double kCostlyReadS = 0.001;
  static constexpr std::chrono::seconds kCostlyCounterEvery{1};
  static constexpr std::chrono::seconds kCostlyCounterTickEvery{5};
  static constexpr double kSparsePeriodReads = 10.0;

  void thread_main(std::stop_token stop, const backend_factory& open);
  void run_task(const std::function<void()>& task);
  // Queues a posted task (dropped at once when the thread no longer runs tasks).
  void enqueue(std::function<void()> task);
  // Runs the queued tasks, with `lock` held on mu_ on entry and on return.
  void run_posted(std::unique_lock<std::mutex>& lock);
  void run(std::stop_token stop);
  // What a round reads of a device whose counter is costly to read (costly_counter()): `all`
  // reads the counter everywhere; `tick`, the regular grid's, reads it at most every
  // kCostlyCounterTickEvery and power alone between; `shape` reads power alone.  The devices in
  // `focus` (when given) read their counter whatever the kind.
  enum class round_kind { all, tick, shape };
  // Reads every device once (but those in `skip`, when given), feeds accounting, hands out
  // finished windows.  Returns per device {lost, counter energy so far}, for the bursts to watch
  // counters advance.
  std::vector<std::pair<std::uint64_t, double>> read_round(round_kind kind = round_kind::all,
                                                           const std::vector<bool>& focus = {},
                                                           const std::vector<bool>& skip = {});
  // Whether device k's counter takes long to read and power can be read without it.
  bool costly_counter(std::size_t k) const;
  // A costly counter whose update period the model knows, at least kSparsePeriodReads reads
  // long: the one the ticks read every kCostlyCounterTickEvery and a boundary once past its
  // update.  On the sampler thread, without the lock.
  bool sparse_counter(std::size_t k) const;
  // How far from a predicted update of device k's counter a read of it at t could still have
  // seen it or not; whether t is that close to one.  On the sampler thread (which alone changes
  // accounting_), without the lock.
  double update_margin_s(std::size_t k, double t) const;
  bool near_predicted_update(std::size_t k, double t) const;
  // Dense reads of the devices in `which` until each counter has shown how it advances.
  void start_burst(std::stop_token& stop, const std::vector<bool>& which);
  // One such burst; with `focus`, only those devices' counters are read (round_kind::shape).
  // Reads nothing when `reading` is false (the sampler is finishing) but still ends the
  // bursts of `which`; returns false when it is finishing.
  bool burst(std::stop_token& stop, const std::vector<bool>& which, const std::vector<bool>& focus,
             bool reading);
  void learn_when_moving(std::stop_token& stop,
                         const std::vector<std::pair<std::uint64_t, double>>& counters);
  void read_health();
  // Reads until every stepped counter (or only device `only`'s) has advanced once: the update
  // after a boundary, pinned.
  void edge_burst(std::stop_token& stop, bool finishing,
                  std::optional<std::size_t> only = std::nullopt);
  // Pins an update of the costly counter whose predicted updates have drifted the most, when
  // they may be off by more than a bracket (edge_burst for it alone).
  void repin(std::stop_token& stop);
  bool is_finishing();
  void publish(mono_time taken);
  wake wait_until(std::stop_token& stop, mono_time when, bool edges);
  // The clock's now(); the steady clock's without a virtual call, as every read is stamped.
  mono_time now() const { return steady_ ? steady::now() : clock_.now(); }
  // Waits on cv_ through the clock, with `lock` held on mu_ (sampler_clock::wait_until).
  bool wait_locked(std::unique_lock<std::mutex>& lock, mono_time deadline, wake_condition woken) {
    return clock_.wait_until(lock, cv_, deadline, woken);
  }

  sampler_clock& clock_;
  const bool steady_;                 // clock_ is sampler_clock::steady()
  std::unique_ptr<backend> backend_;  // written by the thread before opened_, then immutable
  std::exception_ptr open_error_;
  std::vector<std::size_t> devices_;
  sampler_options options_;

  mutable std::mutex mu_;  // guards accounting_, the task slot and the flags below
  std::optional<accounting> accounting_;
  std::function<void()> task_;                // a job for the thread before sampling starts
  std::deque<std::function<void()>> posted_;  // post()ed tasks, oldest first
  bool tasks_closed_ = false;                 // the thread runs no more tasks
  bool opened_ = false;
  bool task_done_ = false;
  bool start_requested_ = false;
  std::vector<window_result> unclaimed_;
  bool finishing_ = false;
  bool abandoned_ = false;
  bool started_ = false;
  bool done_ = false;
  bool exited_ = false;  // thread_main has returned (or is about to)
  std::condition_variable cv_;
  // learn_when_moving(): each counter's energy at the last tick, when it may learn again, and
  // how long it waits after a burst that saw its counter move and still learnt nothing.
  std::vector<std::optional<double>> learn_previous_;
  std::vector<mono_time> learn_next_;
  std::vector<std::chrono::seconds> learn_wait_;
  // read_round(): how long each device's reads usually take, with the counter and with power
  // alone, and when its counter was last read.
  std::vector<read_span> read_spans_;
  std::vector<read_span> power_spans_;
  std::vector<mono_time> counter_read_at_;
  std::vector<bool> counter_read_;      // whether the last round read each device's counter
  std::vector<mono_time> repinned_at_;  // repin(): when each device's last began

  std::atomic<std::uint64_t> ticks_{0};
  std::atomic<bool> edge_requested_{false};
  std::function<void(const window_result&)> on_window_;
  std::function<void()> on_readings_;

  mutable std::mutex snapshot_mu_;
  std::shared_ptr<const sampler_snapshot> snapshot_;
  std::vector<std::optional<double>> last_power_w_;            // guarded by mu_
  std::vector<std::optional<std::uint64_t>> last_counter_mj_;  // guarded by mu_
  std::vector<std::optional<std::uint64_t>> last_counter_uj_;  // guarded by mu_
  std::vector<std::optional<health_reading>> last_health_;     // guarded by mu_
  std::uint64_t health_rounds_ = 0;                            // guarded by mu_
  mono_time next_health_{};

  std::jthread thread_;
};

template <class F>
auto sampler::post(F fn) -> std::future<decltype(fn(std::declval<backend&>()))> {
  using result = decltype(fn(std::declval<backend&>()));
  // packaged_task is move-only and std::function copyable: shared, and run once.
  auto task = std::make_shared<std::packaged_task<result(backend&)>>(std::move(fn));
  std::future<result> out = task->get_future();
  enqueue([this, task] { (*task)(*backend_); });
  return out;
}

template <class F>
auto sampler::on_thread(F fn) -> decltype(fn(std::declval<backend&>())) {
  using result = decltype(fn(std::declval<backend&>()));
  std::optional<result> out;
  std::exception_ptr error;
  run_task([&] {
    try {
      out.emplace(fn(*backend_));
    } catch (...) {
      error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

}  // namespace joules
