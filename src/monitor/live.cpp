#include "monitor/live.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <iterator>
#include <thread>
#include <tuple>

#include "text/escape.hpp"

namespace joules::monitor {

std::string local_clock(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  std::array<char, 16> buf{};
  std::strftime(buf.data(), buf.size(), "%H:%M:%S", &tm);
  return buf.data();
}

std::vector<std::optional<double>> energy_shares(const std::vector<gpu_process>& procs,
                                                 bool utilization_known) {
  std::vector<std::optional<double>> out(procs.size());
  if (!utilization_known || procs.empty()) return out;
  // Each pid once: a process with a compute and a graphics context is listed twice.
  auto first = [&](std::size_t i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (procs[j].pid == procs[i].pid) return false;
    }
    return true;
  };
  double total = 0.0;
  std::size_t unique = 0;
  for (std::size_t i = 0; i < procs.size(); ++i) {
    if (!first(i)) continue;
    total += std::max(0.0, procs[i].sm_util_percent.value_or(0.0));
    ++unique;
  }
  for (std::size_t i = 0; i < procs.size(); ++i) {
    const double sm = std::max(0.0, procs[i].sm_util_percent.value_or(0.0));
    out[i] = total > 0.0 ? sm / total : 1.0 / static_cast<double>(unique);
  }
  return out;
}

frozen_model::frozen_model(const screen_model& m) : model_(m) {
  for (auto& d : model_.gpus) {
    if (d.power_history != nullptr) d.power_history = &copies_.emplace_back(*d.power_history);
    if (d.util_history != nullptr) d.util_history = &copies_.emplace_back(*d.util_history);
  }
}

live_model::live_model(const sampler& readings, std::vector<std::size_t> devices,
                       std::chrono::milliseconds interval, bool keys, std::string host)
    : readings_(readings),
      devices_(std::move(devices)),
      power_(devices_.size(),
             history(kHistorySpanS, std::chrono::duration<double>(interval + kStaleSlack).count())),
      util_(power_),
      last_energy_j_(devices_.size()),
      counter_energy_(devices_.size()),
      stale_after_(interval + kStaleSlack) {
  const backend_meta& meta = readings.hardware().meta();
  model_.host = std::move(host);
  if (meta.backend == "sim") {
    model_.source = "sim (simulated)";
  } else {
    // Each vendor's library and driver: "nvml, driver 570.86.15; amdsmi, driver 6.8.5".
    std::vector<std::string> drivers;
    for (const auto& m : meta.parts.empty() ? std::vector<backend_meta>{meta} : meta.parts) {
      // The driver's version is an outside string.
      drivers.push_back(m.driver_version.empty()
                            ? m.backend
                            : fmt::format("{}, driver {}", m.backend,
                                          text::escape_for_terminal(m.driver_version)));
    }
    model_.source = fmt::format("{}", fmt::join(drivers, "; "));
  }
  model_.interval_s = std::chrono::duration<double>(interval).count();
  model_.keys = keys;
  start_ = steady::now();
}

const screen_model& live_model::update() {
  const auto snap = readings_.snapshot();
  const mono_time now = steady::now();
  model_.now_s = monotonic_seconds(now);
  model_.elapsed_s = seconds_between(start_, now);
  model_.clock = local_clock(std::time(nullptr));
  model_.gpus.clear();
  model_.host_devices.clear();
  model_.processes.clear();
  model_.processes_known = false;
  model_.readings_age_s.reset();
  model_.stale = false;
  model_.readings_clock.clear();
  if (!snap) return model_;
  // The age of what is shown: a sampler stuck in a driver call publishes nothing, and every
  // value below is as old as its last snapshot.
  const auto age = now - snap->taken;
  model_.readings_age_s = std::chrono::duration<double>(age).count();
  if (age > stale_after_) {
    model_.stale = true;
    model_.readings_clock = local_clock(std::chrono::system_clock::to_time_t(
        std::chrono::system_clock::now() -
        std::chrono::duration_cast<std::chrono::system_clock::duration>(age)));
  }
  const bool fresh = snap->ticks != last_ticks_;
  last_ticks_ = snap->ticks;
  const auto& infos = readings_.hardware().devices();
  for (std::size_t k = 0; k < devices_.size() && k < snap->devices.size(); ++k) {
    const device_info& info = infos[devices_[k]];
    device_view v{info, snap->devices[k], &power_[k], &util_[k]};
    sampler_snapshot::device& now_k = v.now;
    // Devices with a counter and no power reading (RAPL's CPU and DRAM): power from the
    // counter.  A lost device's energy stops; its power is unknown, not zero.
    const bool counter_only = info.power == power_source::none && info.has_energy_counter;
    if (fresh && counter_only && now_k.energy_j && !now_k.lost) {
      counter_energy_[k].emplace_back(monotonic_seconds(snap->taken), *now_k.energy_j);
    }
    if (counter_only && !now_k.lost && !now_k.power_w) now_k.power_w = counter_power(k);
    std::optional<double> used_j;  // since the previous new snapshot
    if (fresh) {
      const double t = monotonic_seconds(snap->taken);
      power_[k].add(t, now_k.power_w);
      std::optional<double> util;
      if (now_k.health && now_k.health->gpu_util_percent) util = *now_k.health->gpu_util_percent;
      util_[k].add(t, now_k.lost ? std::nullopt : util);
      if (now_k.energy_j && last_energy_j_[k]) used_j = *now_k.energy_j - *last_energy_j_[k];
      last_energy_j_[k] = now_k.energy_j;
    }
    if (info.kind != device_kind::gpu) {
      v.power_history = nullptr;
      v.util_history = nullptr;
      model_.host_devices.push_back(std::move(v));
      continue;
    }
    if (now_k.health && now_k.health->processes_known) {
      model_.processes_known = true;
      add_processes(info, *now_k.health, v, used_j);
    }
    model_.gpus.push_back(std::move(v));
  }
  // Processes gone: their energy is forgotten (a pid may be reused by another process).
  for (auto it = process_energy_j_.begin(); it != process_energy_j_.end();) {
    const bool listed = std::any_of(
        model_.processes.begin(), model_.processes.end(),
        [&](const auto& p) { return p.gpu == it->first.first && p.pid == it->first.second; });
    it = listed ? std::next(it) : process_energy_j_.erase(it);
  }
  std::sort(model_.processes.begin(), model_.processes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.gpu, a.pid) < std::tie(b.gpu, b.pid);
  });
  names_.forget_unused();
  return model_;
}

void live_model::add_processes(const device_info& info, const health_reading& h,
                               const device_view& v, std::optional<double> used_j) {
  const auto shares = energy_shares(h.processes, h.process_utilization_known);
  for (std::size_t i = 0; i < h.processes.size(); ++i) {
    const gpu_process& p = h.processes[i];
    const auto& who = names_.lookup(p.pid);
    process_row row{info.index, p.pid, who.user, who.command, p.used_memory_bytes, p.graphics};
    row.sm_util_percent = p.sm_util_percent;
    row.share = shares[i];
    if (shares[i]) {
      if (v.now.power_w) row.power_w = *v.now.power_w * *shares[i];
      // A pid listed twice is given its share once.
      const auto key = std::make_pair(info.index, p.pid);
      const auto before = h.processes.begin() + static_cast<std::ptrdiff_t>(i);
      const bool first =
          std::none_of(h.processes.begin(), before, [&](const auto& q) { return q.pid == p.pid; });
      double& energy = process_energy_j_[key];
      if (first && used_j && *used_j > 0.0) energy += *used_j * *shares[i];
      row.energy_j = energy;
    }
    model_.processes.push_back(std::move(row));
  }
}

void live_model::wait_for_health() const {
  const mono_time until = steady::now() + std::chrono::seconds(2);
  while (steady::now() < until) {
    const auto snap = readings_.snapshot();
    if (snap && std::all_of(snap->devices.begin(), snap->devices.end(),
                            [](const auto& d) { return d.health.has_value() || d.lost; })) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool live_model::has_health_rounds(std::uint64_t rounds) const {
  const auto snap = readings_.snapshot();
  return snap && snap->health_rounds >= rounds;
}

// Power of a device that reports only energy (RAPL's CPU and DRAM counters): the energy between
// the newest reading and the last one at least kCounterPowerSpanS before it (else the oldest),
// over the time between them.
std::optional<double> live_model::counter_power(std::size_t k) {
  auto& e = counter_energy_[k];
  if (e.size() < 2) return std::nullopt;
  const double newest = e.back().first;
  while (e.size() > 2 && newest - e[1].first >= kCounterPowerSpanS)
    e.pop_front();
  const double dt = newest - e.front().first;
  if (!(dt > 0.0)) return std::nullopt;
  return std::max(0.0, (e.back().second - e.front().second) / dt);
}

}  // namespace joules::monitor
