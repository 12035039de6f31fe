// Devices, predictions, stragglers and health events of a run summary (report/summary.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/stats.hpp"
#include "report/summary_parts.hpp"

namespace joules::report {
namespace {

// Clock events that mean the hardware slowed the work down: worth a line in the report.  The
// power cap and idle are how a busy or an idle GPU normally runs (docs/nvml-notes.md §7).
constexpr std::string_view kSlowdowns[] = {"hw_slowdown", "hw_thermal", "sw_thermal",
                                           "power_brake"};
// More health events than this are counted, not listed.
constexpr std::size_t kMaxEvents = 200;

std::string device_name(const std::string& kind, std::int64_t index) {
  if (kind == "cpu") return fmt::format("CPU {}", index);
  if (kind == "dram") return fmt::format("DRAM {}", index);
  return fmt::format("GPU {}", index);
}

}  // namespace

void summarize_devices(const run& r, run_summary& s) {
  std::vector<std::pair<std::string, int>> names;
  for (const auto& n : r.nodes) {
    const auto& devs = n.has_end && !n.end_devices.empty() ? n.end_devices : n.devices;
    // Each GPU's energy over the step windows, and the steps.
    std::map<std::int64_t, double> step_energy;
    std::uint64_t steps = 0;
    for (const auto& w : n.windows) {
      if (!w.is_step) continue;
      steps += w.step_gap;
      for (const auto& [idx, e] : w.gpu_energy_j)
        step_energy[idx] += e;
    }
    const std::size_t first = s.gpus.size();
    for (const auto& d : devs) {
      gpu_row g;
      g.host = n.hostname;
      g.kind = d.kind.empty() ? "gpu" : d.kind;
      g.index = d.index;
      g.uuid = d.uuid;
      g.method = d.method;
      g.energy_j = d.energy_j;
      g.avg_power_w = d.avg_power_w;
      g.peak_power_w = d.peak_power_w;
      // session_end's devices have no model name; session_start's do.
      g.name = d.name;
      for (const auto& sd : n.devices) {
        if (sd.uuid == d.uuid && !sd.name.empty()) g.name = sd.name;
      }
      if (g.kind == "gpu") {
        ++s.gpu_count;
        auto it = std::find_if(names.begin(), names.end(),
                               [&](const auto& p) { return p.first == g.name; });
        if (it == names.end()) {
          names.emplace_back(g.name, 1);
        } else {
          ++it->second;
        }
        if (steps > 0 && step_energy.count(d.index) != 0) {
          g.energy_per_step_j = step_energy[d.index] / static_cast<double>(steps);
        }
      }
      s.gpus.push_back(std::move(g));
    }
    std::vector<double> per_step;
    for (std::size_t i = first; i < s.gpus.size(); ++i) {
      if (s.gpus[i].energy_per_step_j) per_step.push_back(*s.gpus[i].energy_per_step_j);
    }
    const auto median = quantile(per_step, 0.5);
    for (std::size_t i = first; i < s.gpus.size(); ++i) {
      auto& g = s.gpus[i];
      if (g.energy_per_step_j && median && *median > 0)
        g.deviation = *g.energy_per_step_j / *median - 1.0;
    }
  }
  for (const auto& [name, count] : names) {
    if (!s.gpu_names.empty()) s.gpu_names += " + ";
    s.gpu_names += count > 1 ? fmt::format("{}x {}", count, name) : name;
  }
}

void summarize_events(const run& r, run_summary& s) {
  for (const auto& n : r.nodes) {
    // Predictions against the energy from the start to the step they aimed at.
    for (const auto& p : n.predictions) {
      prediction_row row;
      row.host = n.hostname;
      row.p = p;
      double cumulative = 0.0;
      for (const auto& w : n.windows) {
        cumulative += w.energy_j;
        if (w.is_step && w.step >= p.total_steps) {
          row.actual_energy_j = cumulative;
          break;
        }
      }
      if (row.actual_energy_j && *row.actual_energy_j > 0)
        row.error = (p.energy_j - *row.actual_energy_j) / *row.actual_energy_j;
      s.predictions.push_back(row);
    }
    for (const auto& st : n.stragglers) {
      s.stragglers.push_back(st);
      s.straggler_hosts.push_back(n.hostname);
    }

    auto event = [&](std::string what, std::optional<double> at) {
      if (s.health.size() < kMaxEvents) s.health.push_back({n.hostname, std::move(what), at});
    };
    if (n.has_end && n.status != "completed" && !n.status.empty()) {
      event(fmt::format("the run ended {}{}", n.status,
                        n.exit_status ? fmt::format(" (exit status {})", *n.exit_status) : ""),
            n.duration_s);
    }
    for (const auto& why : n.degradations)
      event(why, std::nullopt);
    // Slowdowns the samples saw, as intervals per device and reason.
    const double origin = origin_of(n);
    struct open_event {
      double from = 0.0;
      double to = 0.0;
    };
    std::map<std::pair<std::string, std::string>, open_event> open;
    auto close = [&](const std::pair<std::string, std::string>& key, const open_event& e) {
      event(fmt::format("{}: clock event {} from {} to {}", key.first, key.second,
                        format_duration(e.from), format_duration(e.to)),
            e.from);
    };
    for (const auto& smp : n.samples) {
      for (const auto& d : smp.devices) {
        const std::string dev = device_name(d.kind, d.index);
        for (const auto& ev : d.clock_events) {
          if (std::find(std::begin(kSlowdowns), std::end(kSlowdowns), ev) == std::end(kSlowdowns))
            continue;
          const auto key = std::make_pair(dev, ev);
          auto it = open.find(key);
          const double from = smp.start_s - origin;
          const double to = smp.end_s - origin;
          if (it != open.end() && from - it->second.to < 1e-6) {
            it->second.to = to;
          } else {
            if (it != open.end()) close(key, it->second);
            open[key] = {from, to};
          }
        }
      }
    }
    for (const auto& [key, e] : open)
      close(key, e);
    for (const auto& d : (n.has_end ? n.end_devices : n.devices)) {
      if (d.lost_at_s) {
        event(fmt::format("{} stopped answering", device_name(d.kind, d.index)), d.lost_at_s);
      }
    }
  }
  std::stable_sort(s.health.begin(), s.health.end(), [](const auto& a, const auto& b) {
    return a.at_s.value_or(-1.0) < b.at_s.value_or(-1.0);
  });
}

}  // namespace joules::report
