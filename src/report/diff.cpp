#include "report/diff.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <set>

namespace joules::report {
namespace {

// How many standard errors a change must pass to count as more than noise.
constexpr double kNoiseSigmas = 2.0;

// One side's value of a metric: the mean over its runs, and its standard error.
struct side_value {
  std::optional<double> value;
  std::optional<double> se;
};

using getter = std::function<std::optional<double>(const run_summary&)>;
using error_getter = std::function<std::optional<double>(const run_summary&)>;

side_value side(const std::vector<run_summary>& runs, const getter& get, const error_getter& err) {
  std::vector<double> v;
  for (const auto& r : runs) {
    if (const auto x = get(r)) v.push_back(*x);
  }
  side_value out;
  if (v.empty()) return out;
  double m = 0.0;
  for (double x : v)
    m += x;
  m /= static_cast<double>(v.size());
  out.value = m;
  if (v.size() >= 2) {
    double ss = 0.0;
    for (double x : v)
      ss += (x - m) * (x - m);
    const double n = static_cast<double>(v.size());
    out.se = std::sqrt(ss / (n - 1.0) / n);
  } else if (err) {
    out.se = err(runs.front());
  }
  return out;
}

diff_row row_of(std::string section, std::string name, std::string unit, const side_value& a,
                const side_value& b) {
  diff_row r{std::move(section), std::move(name), std::move(unit), a.value, b.value, {}, {}, {}};
  if (a.value && b.value && *a.value != 0.0) {
    r.change = (*b.value - *a.value) / std::abs(*a.value);
    if (a.se && b.se) {
      const double threshold = kNoiseSigmas * std::sqrt(*a.se * *a.se + *b.se * *b.se);
      r.noise = threshold / std::abs(*a.value);
      r.exceeds_noise = std::abs(*b.value - *a.value) > threshold;
    }
  }
  return r;
}

// The relative error of a rate, carried to a total that the rate makes up.
error_getter scaled(std::function<const ratio_estimate&(const run_summary&)> rate,
                    const getter& total) {
  return [rate, total](const run_summary& r) -> std::optional<double> {
    const ratio_estimate& e = rate(r);
    const auto t = total(r);
    if (!e.value || !e.standard_error || !t || *e.value == 0.0) return std::nullopt;
    return *t * *e.standard_error / *e.value;
  };
}

std::string gpu_key(const gpu_row& g, bool with_host) {
  const std::string dev = g.kind == "gpu"   ? fmt::format("GPU {}", g.index)
                          : g.kind == "cpu" ? fmt::format("CPU {}", g.index)
                                            : fmt::format("DRAM {}", g.index);
  return with_host ? g.host + " " + dev : dev;
}

std::set<std::string> hosts_of(const std::vector<run_summary>& runs) {
  std::set<std::string> out;
  for (const auto& r : runs)
    out.insert(r.hosts.begin(), r.hosts.end());
  return out;
}

}  // namespace

diff_result compare(const std::vector<run_summary>& a, const std::vector<run_summary>& b) {
  diff_result out;
  if (a.empty() || b.empty()) return out;
  auto add = [&](std::string section, std::string name, std::string unit, const getter& get,
                 const error_getter& err) {
    out.rows.push_back(row_of(std::move(section), std::move(name), std::move(unit),
                              side(a, get, err), side(b, get, err)));
  };
  const getter energy = [](const run_summary& r) { return r.energy_j.value; };
  const getter duration = [](const run_summary& r) { return r.duration_s.value; };
  const auto step_energy = [](const run_summary& r) -> const ratio_estimate& {
    return r.step_energy;
  };
  const auto step_time = [](const run_summary& r) -> const ratio_estimate& { return r.step_time; };
  add("run", "energy", "J", energy, scaled(step_energy, energy));
  add("run", "duration", "s", duration, scaled(step_time, duration));
  add(
      "run", "energy per step", "J/step",
      [](const run_summary& r) { return r.energy_per_step_j.value; },
      [](const run_summary& r) { return r.step_energy.standard_error; });
  add(
      "run", "energy per token", "J/token",
      [](const run_summary& r) { return r.energy_per_token_j.value; },
      [](const run_summary& r) { return r.token_energy.standard_error; });
  add(
      "run", "time per step", "s/step", [](const run_summary& r) { return r.step_time.value; },
      [](const run_summary& r) { return r.step_time.standard_error; });
  add(
      "run", "mean power", "W", [](const run_summary& r) { return r.avg_power_w.value; },
      [](const run_summary& r) { return r.step_power.standard_error; });
  add("run", "peak power", "W", [](const run_summary& r) { return r.peak_power_w.value; }, {});
  add(
      "run", "CO2e", "g", [](const run_summary& r) { return r.co2e_g.value; },
      [&](const run_summary& r) -> std::optional<double> {
        const auto e = scaled(step_energy, energy)(r);
        if (!e || !r.energy_j.value || !r.co2e_g.value || *r.energy_j.value == 0) return {};
        return *e * *r.co2e_g.value / *r.energy_j.value;
      });

  // The gate: the most specific rate both sides have.
  auto both = [&](std::size_t i) { return out.rows[i].a && out.rows[i].b; };
  out.gate = both(3) ? 3 : (both(2) ? 2 : 0);

  std::vector<std::string> phases;
  for (const auto* side_runs : {&a, &b}) {
    for (const auto& r : *side_runs) {
      for (const auto& p : r.phases) {
        if (std::find(phases.begin(), phases.end(), p.name) == phases.end())
          phases.push_back(p.name);
      }
    }
  }
  for (const auto& name : phases) {
    add("phase", name, "J",
        [name](const run_summary& r) -> std::optional<double> {
          for (const auto& p : r.phases) {
            if (p.name == name) return p.energy_j;
          }
          return std::nullopt;
        },
        {});
  }

  // GPUs by host and index when both sides ran on the same hosts, else by index.
  const auto ha = hosts_of(a);
  const auto hb = hosts_of(b);
  const bool same_hosts = ha == hb;
  if (!same_hosts) {
    std::string la, lb;
    for (const auto& h : ha)
      la += (la.empty() ? "" : ", ") + h;
    for (const auto& h : hb)
      lb += (lb.empty() ? "" : ", ") + h;
    out.notes.push_back(fmt::format(
        "A ran on {} and B on {}: the hardware differs, GPUs are compared by index", la, lb));
  }
  const bool with_host = same_hosts && ha.size() > 1;
  std::vector<std::string> keys;
  for (const auto* side_runs : {&a, &b}) {
    for (const auto& r : *side_runs) {
      for (const auto& g : r.gpus) {
        const std::string k = gpu_key(g, with_host);
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
    }
  }
  for (const auto& k : keys) {
    add("gpu", k, "J",
        [k, with_host](const run_summary& r) -> std::optional<double> {
          for (const auto& g : r.gpus) {
            if (gpu_key(g, with_host) == k) return g.energy_j;
          }
          return std::nullopt;
        },
        {});
  }

  if (a.size() > 1 || b.size() > 1) {
    out.notes.push_back(fmt::format(
        "A holds {} run(s), B {}: each side is the mean of its runs, and the noise is their spread",
        a.size(), b.size()));
  }
  if (a.front().method != b.front().method) {
    out.notes.push_back(
        fmt::format("A was measured as {}, B as {}", a.front().method, b.front().method));
  }
  if (a.front().gpu_names != b.front().gpu_names) {
    out.notes.push_back(
        fmt::format("A ran on {}, B on {}", a.front().gpu_names, b.front().gpu_names));
  }
  return out;
}

}  // namespace joules::report
