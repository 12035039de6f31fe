#pragma once
// The session behind libjoules (include/joules/joules.h, src/api/): a monitor that reads the
// chosen devices on the sampler's thread, like every other session, and answers windows: pairs
// of instants on the steady clock (CLOCK_MONOTONIC) that may nest and overlap.
//
// An instant's energy on each device is placed from the readings around it as accounting places
// a boundary (device_timeline::estimate_at: inside counter update periods, shaped by power), once
// the readings determine it, and then kept: a window holds the numbers of its two instants, not
// readings.  Instants are placed on the sampler thread after every round of readings
// (sampler::on_readings), under the sampler's lock; until an instant is placed, accounting keeps
// the readings from it on (accounting::keep_readings_from).  So windows never push accounting
// boundaries, and any number of them may overlap.  Beginning or ending a window stamps the
// instant, asks the sampler for dense reads around it (sampler::request_edge) and returns;
// result() waits on a condition variable that placing notifies.
//
// Thread-safety: every member may be called from any thread at once, except close() and the
// destructor, which come last.  Lock order: this monitor's mutex, then the sampler's.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/composite/open_backend.hpp"
#include "energy/accounting.hpp"
#include "sampler/sampler.hpp"
#include "util/clock.hpp"

namespace joules::session {

// How a call of the monitor failed (the library maps these to joules_status).
enum class api_errc {
  invalid_argument,
  no_device,
  backend,
  not_found,
  not_ready,
  state,
  internal,
};

class api_error : public std::runtime_error {
 public:
  api_error(api_errc code, const std::string& what) : std::runtime_error(what), code_(code) {}
  api_errc code() const noexcept { return code_; }

 private:
  api_errc code_;
};

struct api_settings {
  backend_options backend;
  std::optional<std::string> gpus;  // as --gpus; nullopt: the job's GPUs
  // Between regular readings; nullopt: 100 ms, or 20 ms when a GPU has no energy counter (as
  // run and wrap do: session/measurement.cpp).
  std::optional<std::chrono::milliseconds> interval;
};

// One device's share of a window.
struct api_device_energy {
  std::optional<double> energy_j;  // nullopt: the device gave no reading at all
  double error_j = 0.0;            // bound on the error of energy_j (docs/c-api.md)
  energy_method method = energy_method::none;
  bool lost = false;  // lost before the window ended: energy_j is up to its last reading
};

struct api_numbers {
  double begin_s = 0.0;  // CLOCK_MONOTONIC seconds
  double end_s = 0.0;
  bool final = false;  // no later reading can change them
  std::vector<api_device_energy> devices;
};

using api_window_id = std::uint64_t;

class api_monitor {
 public:
  // Opens the backend, chooses the devices, starts reading them and returns after every
  // device's first reading.  Prints nothing.  Throws api_error.
  explicit api_monitor(const api_settings& settings);
  ~api_monitor();
  api_monitor(const api_monitor&) = delete;
  api_monitor& operator=(const api_monitor&) = delete;

  // The devices read, GPUs first (immutable).
  const std::vector<device_info>& devices() const { return devices_; }

  // Windows.  Names of open windows are unique (api_errc::state); end() of a name that is not
  // open is api_errc::not_found.  Ids are never reused.
  void begin(std::string_view name);
  api_window_id end(std::string_view name);
  // The window's numbers, waiting at most `timeout` (nullopt: until they are final) for them to
  // be final; api_numbers::final says whether they are.  api_errc::not_found for an unknown id.
  api_numbers result(api_window_id id, std::optional<std::chrono::milliseconds> timeout);
  void release(api_window_id id);
  // The numbers from the monitor's opening to now (never final).
  api_numbers totals();
  // A step ended at `at` (now, taken by the caller): closes the step window that began at the
  // previous step (or the opening) and returns its id.
  api_window_id step(mono_time at);

  // Stops the reading thread.  False when it is stuck in a driver call: it was abandoned, still
  // uses this object, and the caller must leak the monitor rather than destroy it.
  bool close();

  // Windows and instants held (for tests of bounded memory).
  std::size_t windows_held() const;
  std::size_t instants_waiting() const;

 private:
  struct device_point {
    std::optional<microjoules> energy_uj;  // nullopt: no reading
    double edge_error_j = 0.0;
    double cumulative_error_j = 0.0;
    energy_method method = energy_method::none;
    std::optional<double> lost_at;
  };
  struct instant {
    double t = 0.0;                     // immutable once the instant is stamped
    bool placed = false;                // guarded by mu_
    std::vector<device_point> devices;  // once placed; guarded by mu_
  };
  struct window {
    std::shared_ptr<instant> begin;
    std::shared_ptr<instant> end;
  };
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // A new instant at `t` (now), waiting to be placed.  With mu_ held.
  std::shared_ptr<instant> stamp(mono_time t = steady::now());
  // On the sampler thread after each round: places every waiting instant the readings now
  // determine, and notifies result().
  void place_waiting();
  // The numbers of an instant at t from the timelines into `values`, or false when the readings
  // do not determine them yet.  `force`: extrapolate where readings end early (a device silent
  // for longer than the deadline).  With the sampler's lock held.
  bool place(const accounting& acc, double t, bool force, std::vector<device_point>& values) const;
  // The best numbers so far of an instant not yet placed.  With the sampler's lock held.
  std::vector<device_point> provisional(const accounting& acc, double t) const;
  // A window's numbers from its instants (placed or provisional).  With mu_ held.
  api_numbers numbers(const instant& b, const instant& e);

  std::unique_ptr<joules::sampler> sampler_;
  std::vector<device_info> devices_;

  mutable std::mutex mu_;
  std::condition_variable placed_cv_;
  std::unordered_map<std::string, std::shared_ptr<instant>, name_hash, std::equal_to<>> open_;
  std::unordered_map<api_window_id, window> windows_;
  std::vector<std::shared_ptr<instant>> waiting_;
  std::shared_ptr<instant> opened_;     // the monitor's opening
  std::shared_ptr<instant> last_step_;  // the previous step, or the opening
  api_window_id next_id_ = 1;
  bool closed_ = false;
};

}  // namespace joules::session
