#include "session/api_monitor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "session/device_choice.hpp"
#include "util/error.hpp"

namespace joules::session {
namespace {

// A device that stays silent must not keep an instant waiting for ever: past this, its energy is
// extrapolated from its last readings (as accounting does with boundaries).
constexpr double kPlaceDeadlineS = 5.0;
constexpr std::chrono::milliseconds kDefaultInterval{100};
// Instants placed per hold of the sampler's lock.
constexpr std::size_t kPlaceChunk = 32;
// How long close() waits for a reading thread stuck in a driver call.
constexpr std::chrono::milliseconds kCloseGrace{3000};

microjoules to_microjoules(double j) {
  return static_cast<microjoules>(std::llround(j * 1e6));
}

}  // namespace

api_monitor::api_monitor(const api_settings& settings) {
  sampler_options options;
  options.interval = settings.interval.value_or(kDefaultInterval);
  try {
    // The sampler's thread opens the backend: only that thread ever calls the driver.
    sampler_ = std::make_unique<joules::sampler>([b = settings.backend] { return open_backend(b); },
                                                 options);
  } catch (const no_device_error& e) {
    throw api_error(api_errc::no_device, e.what());
  } catch (const usage_error& e) {
    throw api_error(api_errc::invalid_argument, e.what());
  } catch (const fatal_error& e) {
    throw api_error(api_errc::backend, e.what());
  }
  const backend& hw = sampler_->hardware();

  device_choice choice;
  try {
    choice = choose_devices(*sampler_, settings.gpus);
  } catch (const usage_error& e) {
    // A list that names no GPU is the caller's mistake; an environment that lets this job use
    // none (CUDA_VISIBLE_DEVICES="") leaves nothing to measure.
    throw api_error(settings.gpus ? api_errc::invalid_argument : api_errc::no_device, e.what());
  }
  std::vector<std::size_t> measured;
  bool any_gpu = false;
  for (std::size_t i : choice.devices) {
    const device_info& d = hw.devices()[i];
    if (d.method() == energy_method::none) continue;  // neither a counter nor power
    measured.push_back(i);
    devices_.push_back(d);
    any_gpu = any_gpu || d.kind == device_kind::gpu;
  }
  if (!any_gpu) {
    throw api_error(api_errc::no_device,
                    "none of the chosen GPUs can be measured (no energy counter, no power "
                    "reading); the simulated backend (JOULES_BACKEND_SIM) estimates them");
  }
  if (!settings.interval) {
    const bool polled = std::any_of(devices_.begin(), devices_.end(), [](const device_info& d) {
      return d.kind == device_kind::gpu && d.method() == energy_method::polled && !d.power_window;
    });
    if (polled) sampler_->set_interval(kPolledInterval);
  }
  sampler_->on_readings([this] { place_waiting(); });
  sampler_->start(std::move(measured));
  std::lock_guard lock(mu_);
  opened_ = stamp();
  last_step_ = opened_;
}

api_monitor::~api_monitor() = default;

bool api_monitor::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  placed_cv_.notify_all();
  return sampler_->stop(kCloseGrace);
}

std::shared_ptr<api_monitor::instant> api_monitor::stamp(mono_time t) {
  auto in = std::make_shared<instant>();
  in->t = monotonic_seconds(t);
  waiting_.push_back(in);
  return in;
}

void api_monitor::begin(std::string_view name) {
  {
    std::lock_guard lock(mu_);
    if (closed_) throw api_error(api_errc::state, "the monitor is closed");
    if (open_.find(name) != open_.end()) {
      throw api_error(api_errc::state, fmt::format("a window named '{}' is open already", name));
    }
    open_.emplace(std::string(name), stamp());
  }
  sampler_->request_edge();
}

api_window_id api_monitor::end(std::string_view name) {
  api_window_id id = 0;
  {
    std::lock_guard lock(mu_);
    if (closed_) throw api_error(api_errc::state, "the monitor is closed");
    const auto it = open_.find(name);
    if (it == open_.end()) {
      throw api_error(api_errc::not_found, fmt::format("no open window is named '{}'", name));
    }
    id = next_id_++;
    windows_.emplace(id, window{std::move(it->second), stamp()});
    open_.erase(it);
  }
  sampler_->request_edge();
  return id;
}

api_window_id api_monitor::step(mono_time at) {
  api_window_id id = 0;
  {
    std::lock_guard lock(mu_);
    if (closed_) throw api_error(api_errc::state, "the monitor is closed");
    auto now = stamp(at);
    now->t = std::max(now->t, last_step_->t);  // steps from several threads: never backwards
    id = next_id_++;
    windows_.emplace(id, window{last_step_, now});
    last_step_ = std::move(now);
  }
  sampler_->request_edge();
  return id;
}

void api_monitor::release(api_window_id id) {
  std::lock_guard lock(mu_);
  if (windows_.erase(id) == 0) {
    throw api_error(api_errc::not_found, fmt::format("no window has id {}", id));
  }
}

api_numbers api_monitor::result(api_window_id id,
                                std::optional<std::chrono::milliseconds> timeout) {
  std::unique_lock lock(mu_);
  const auto it = windows_.find(id);
  if (it == windows_.end())
    throw api_error(api_errc::not_found, fmt::format("no window has id {}", id));
  // The window stays alive while we wait, even if another thread releases it meanwhile.
  const window w = it->second;
  const auto ready = [&] { return (w.begin->placed && w.end->placed) || closed_; };
  if (timeout) {
    placed_cv_.wait_for(lock, *timeout, ready);
  } else {
    placed_cv_.wait(lock, ready);
  }
  return numbers(*w.begin, *w.end);
}

api_numbers api_monitor::totals() {
  std::lock_guard lock(mu_);
  if (closed_) throw api_error(api_errc::state, "the monitor is closed");
  instant now;
  now.t = monotonic_seconds(steady::now());
  api_numbers n = numbers(*opened_, now);
  n.final = false;
  return n;
}

std::size_t api_monitor::windows_held() const {
  std::lock_guard lock(mu_);
  return windows_.size() + open_.size();
}

std::size_t api_monitor::instants_waiting() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

void api_monitor::place_waiting() {
  // The instants are taken out, placed under the sampler's lock only, and their numbers handed
  // back under mu_: begin() and end() never wait for the placing, however many instants wait.
  std::vector<std::shared_ptr<instant>> todo;
  {
    std::lock_guard lock(mu_);
    if (waiting_.empty()) return;
    todo.swap(waiting_);
  }
  std::sort(todo.begin(), todo.end(), [](const auto& a, const auto& b) { return a->t < b->t; });
  std::vector<std::vector<device_point>> values(todo.size());
  std::size_t placed = 0;
  const double now = monotonic_seconds(steady::now());
  // In time order: an instant the readings do not determine yet is followed by others that they
  // do not determine either.  A few at a time under the sampler's lock, which begin() and end()
  // take too (to wake the sampler): only this thread changes the timelines, so they stay the
  // same between the chunks.
  bool blocked = false;
  while (!blocked) {
    sampler_->with_accounts([&](accounting& acc) {
      const std::size_t chunk_end = std::min(todo.size(), placed + kPlaceChunk);
      while (placed < chunk_end && !blocked) {
        const bool force = now - todo[placed]->t > kPlaceDeadlineS;
        if (place(acc, todo[placed]->t, force, values[placed])) {
          ++placed;
        } else {
          blocked = true;
        }
      }
      if (placed == todo.size()) blocked = true;
      if (blocked) {
        acc.keep_readings_from(placed < todo.size() ? std::optional<double>(todo[placed]->t)
                                                    : std::nullopt);
      }
    });
  }
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < placed; ++i) {
      todo[i]->devices = std::move(values[i]);
      todo[i]->placed = true;
    }
    waiting_.insert(waiting_.end(), todo.begin() + static_cast<std::ptrdiff_t>(placed), todo.end());
  }
  if (placed > 0) placed_cv_.notify_all();
}

bool api_monitor::place(const accounting& acc, double t, bool force,
                        std::vector<device_point>& values) const {
  values.assign(acc.device_count(), device_point{});
  for (std::size_t d = 0; d < acc.device_count(); ++d) {
    const device_timeline& tl = acc.timeline(d);
    if (!tl.has_readings()) {
      if (!force && !tl.lost()) return false;
      continue;  // never read: unknown, not zero
    }
    const auto e = tl.estimate_at(t, force);
    if (!e) return false;
    device_point& p = values[d];
    p.energy_uj = to_microjoules(e->energy_j);
    p.edge_error_j = e->edge_error_j;
    p.cumulative_error_j = e->cumulative_error_j;
    p.method = tl.method_between(t, t);
    p.lost_at = tl.lost_at();
  }
  return true;
}

std::vector<api_monitor::device_point> api_monitor::provisional(const accounting& acc,
                                                                double t) const {
  std::vector<device_point> values(acc.device_count());
  for (std::size_t d = 0; d < acc.device_count(); ++d) {
    const device_timeline& tl = acc.timeline(d);
    if (!tl.has_readings()) continue;
    const auto e = tl.estimate_at(t, /*final=*/true);
    if (!e) continue;
    device_point& p = values[d];
    p.energy_uj = to_microjoules(e->energy_j);
    p.edge_error_j = e->edge_error_j;
    p.cumulative_error_j = e->cumulative_error_j;
    p.method = tl.method_between(t, t);
    p.lost_at = tl.lost_at();
  }
  return values;
}

api_numbers api_monitor::numbers(const instant& b, const instant& e) {
  api_numbers n;
  n.begin_s = b.t;
  n.end_s = e.t;
  n.final = b.placed && e.placed;
  std::vector<device_point> pb;
  std::vector<device_point> pe;
  if (!n.final) {
    sampler_->with_accounts([&](accounting& acc) {
      pb = b.placed ? b.devices : provisional(acc, b.t);
      pe = e.placed ? e.devices : provisional(acc, e.t);
    });
  }
  const std::vector<device_point>& vb = b.placed ? b.devices : pb;
  const std::vector<device_point>& ve = e.placed ? e.devices : pe;
  n.devices.resize(devices_.size());
  for (std::size_t d = 0; d < n.devices.size() && d < vb.size() && d < ve.size(); ++d) {
    api_device_energy& out = n.devices[d];
    const device_point& x = vb[d];
    const device_point& y = ve[d];
    out.lost = y.lost_at && *y.lost_at < e.t;
    if (!x.energy_uj || !y.energy_uj) continue;
    out.energy_j = static_cast<double>(*y.energy_uj - *x.energy_uj) / 1e6;
    out.method = y.method;
    // The simulated backend's model is the truth it reports: nothing to bound.
    if (devices_[d].simulated) continue;
    out.error_j = std::max(0.0, y.cumulative_error_j - x.cumulative_error_j) + x.edge_error_j +
                  y.edge_error_j;
  }
  return n;
}

}  // namespace joules::session
