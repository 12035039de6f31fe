#include "report/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/summary_parts.hpp"

namespace joules::report {
namespace {

constexpr double kJoulesPerKwh = 3.6e6;

double windows_energy(const node& n) {
  double e = 0.0;
  for (const auto& w : n.windows)
    e += w.energy_j;
  return e;
}

std::optional<double> add(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return *a + *b;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

std::string co2_source_text(const carbon_figures& c) {
  if (!c.intensity_g_per_kwh) return {};
  std::string s = fmt::format("{:.0f} g/kWh", *c.intensity_g_per_kwh);
  std::vector<std::string> where;
  if (!c.co2_source.empty()) where.push_back(c.co2_source);
  if (c.co2_year) where.push_back(fmt::format("{}", *c.co2_year));
  if (!c.co2_region.empty()) where.push_back(c.co2_region);
  if (!where.empty()) s += " (" + join(where, " ") + ")";
  if (!c.co2_method.empty()) s += ", " + c.co2_method;
  if (c.pue) s += fmt::format(", PUE {:g}", *c.pue);
  return s;
}

void headline(const run& r, run_summary& s) {
  std::optional<double> energy;
  std::optional<double> duration;
  std::optional<double> co2;
  std::optional<double> cost;
  std::optional<double> peak;
  std::set<std::string> methods;
  std::vector<std::string> co2_sources;
  std::vector<std::string> prices;
  std::size_t ends = 0;
  std::size_t co2_nodes = 0;
  std::size_t cost_nodes = 0;
  std::string no_co2_note;
  for (const auto& n : r.nodes) {
    if (n.has_end && n.energy_j) {
      ++ends;
      energy = add(energy, n.energy_j);
      if (n.duration_s) duration = std::max(duration.value_or(0.0), *n.duration_s);
      if (n.carbon.co2e_g) {
        co2 = add(co2, n.carbon.co2e_g);
        ++co2_nodes;
        const std::string src = co2_source_text(n.carbon);
        if (std::find(co2_sources.begin(), co2_sources.end(), src) == co2_sources.end())
          co2_sources.push_back(src);
      } else if (no_co2_note.empty()) {
        no_co2_note = n.carbon.note;
      }
      if (n.carbon.cost) {
        cost = add(cost, n.carbon.cost);
        ++cost_nodes;
        s.currency = n.carbon.currency;
        const std::string p = fmt::format(
            "{:g} {}/kWh{}", n.carbon.price_per_kwh.value_or(0.0), n.carbon.currency,
            n.carbon.price_source.empty() ? std::string() : " (" + n.carbon.price_source + ")");
        if (std::find(prices.begin(), prices.end(), p) == prices.end()) prices.push_back(p);
      }
      peak = add(peak, n.peak_power_w);  // nodes peak apart: the sum bounds the job's peak
      if (!n.method.empty()) methods.insert(n.method);
    } else {
      // Cut off: the windows written before the end are what is known.
      energy = add(energy, windows_energy(n));
      if (!n.windows.empty()) {
        duration = std::max(duration.value_or(0.0), n.windows.back().end_s - origin_of(n));
      }
      for (const auto& w : n.windows) {
        if (!w.method.empty()) methods.insert(w.method);
      }
    }
  }
  const std::size_t nodes = r.nodes.size();
  s.method = methods.size() == 1 ? *methods.begin() : (methods.empty() ? "unknown" : "mixed");
  s.energy_j.value = energy;
  s.energy_j.source =
      ends == nodes
          ? fmt::format("session_end.energy_j{}; method {}",
                        nodes > 1 ? fmt::format(", summed over {} nodes", nodes) : "", s.method)
          : fmt::format(
                "{} of {} node(s) have no session_end (cut off): their step and phase "
                "records are summed; method {}",
                nodes - ends, nodes, s.method);
  s.duration_s.value = duration;
  s.duration_s.source = ends == nodes ? (nodes > 1 ? "session_end.duration_s, the longest node"
                                                   : "session_end.duration_s: from the command's "
                                                     "start to its end")
                                      : "to the end of the last window written";
  s.co2e_g.value = co2;
  s.co2e_g.source =
      co2 ? fmt::format("session_end.carbon.co2e_g{}: {}",
                        co2_nodes < nodes ? fmt::format(" of {} of {} nodes", co2_nodes, nodes)
                                          : std::string(),
                        join(co2_sources, "; "))
          : (no_co2_note.empty() ? "no CO2e in the records" : "no CO2e: " + no_co2_note);
  s.cost.value = cost;
  s.cost.source =
      cost ? fmt::format("session_end.carbon.cost{}: {}",
                         cost_nodes < nodes ? fmt::format(" of {} of {} nodes", cost_nodes, nodes)
                                            : std::string(),
                         join(prices, "; "))
           : "no price given (--price-per-kwh)";
  if (energy && duration && *duration > 0) {
    s.avg_power_w.value = *energy / *duration;
    s.avg_power_w.source = "energy / duration";
  }
  s.peak_power_w.value = peak;
  s.peak_power_w.source = nodes > 1 ? "session_end.peak_power_w, summed over nodes (an upper bound)"
                                    : "session_end.peak_power_w: the highest sum of the devices' "
                                      "readings at one instant";
}

void steps_and_rates(const run& r, run_summary& s) {
  // Steps joined by step number across nodes; the first node that logged a step sets its time.
  std::map<std::uint64_t, std::size_t> at;
  double steps_energy = 0.0;
  std::uint64_t steps = 0;
  std::optional<double> tokens;
  double token_energy = 0.0;
  bool from_wrap = true;
  for (const auto& n : r.nodes) {
    const double origin = origin_of(n);
    std::uint64_t node_steps = 0;
    for (const auto& w : n.windows) {
      if (!w.is_step) continue;
      node_steps += w.step_gap;
      const auto it = at.find(w.step);
      if (it == at.end()) {
        at.emplace(w.step, s.steps_series.size());
        s.steps_series.push_back(
            {w.step, w.step_gap, w.end_s - origin, w.duration_s, w.energy_j, w.tokens});
      } else {
        step_point& p = s.steps_series[it->second];
        p.energy_j += w.energy_j;
        p.duration_s = std::max(p.duration_s, w.duration_s);
      }
    }
    if (n.wrap && n.has_end) {
      steps = std::max(steps, n.wrap->steps);
      if (n.wrap->energy_per_step_j) {
        steps_energy += *n.wrap->energy_per_step_j * static_cast<double>(n.wrap->steps);
      }
      if (n.wrap->tokens && n.wrap->joules_per_token) {
        tokens = std::max(tokens.value_or(0.0), *n.wrap->tokens);
        token_energy += *n.wrap->joules_per_token * *n.wrap->tokens;
      }
    } else {
      from_wrap = false;
      steps = std::max(steps, node_steps);
      double nt = 0.0;
      for (const auto& w : n.windows) {
        if (!w.is_step) continue;
        steps_energy += w.energy_j;
        if (w.tokens && *w.tokens > 0) {
          nt += *w.tokens;
          token_energy += w.energy_j;
        }
      }
      if (nt > 0) tokens = std::max(tokens.value_or(0.0), nt);
    }
  }
  std::sort(s.steps_series.begin(), s.steps_series.end(),
            [](const step_point& a, const step_point& b) { return a.offset_s < b.offset_s; });
  s.steps = steps;
  s.tokens = tokens;
  const std::string where = from_wrap ? "session_end.wrap" : "the step records";
  if (steps > 0) {
    s.energy_per_step_j.value = steps_energy / static_cast<double>(steps);
    s.energy_per_step_j.source =
        fmt::format("energy of the step windows / {} steps ({})", steps, where);
  } else {
    s.energy_per_step_j.source = r.nodes.front().subcommand == "run"
                                     ? "no steps: joules run measures the whole command "
                                       "(joules wrap finds steps)"
                                     : "no step lines were recognised";
  }
  if (tokens && *tokens > 0) {
    s.energy_per_token_j.value = token_energy / *tokens;
    s.energy_per_token_j.source = fmt::format(
        "energy of the step windows with tokens / {:.4g} tokens ({}; tokens from "
        "--tokens-per-step or the throughput the step lines print)",
        *tokens, where);
  } else {
    s.energy_per_token_j.source = "no tokens: give --tokens-per-step, or log tokens/s";
  }

  std::vector<double> e, g, d, tk, te;
  for (const auto& p : s.steps_series) {
    e.push_back(p.energy_j);
    g.push_back(static_cast<double>(p.gap));
    d.push_back(p.duration_s);
    if (p.tokens && *p.tokens > 0) {
      tk.push_back(*p.tokens);
      te.push_back(p.energy_j);
    }
  }
  s.step_energy = batch_ratio(e, g);
  s.step_time = batch_ratio(d, g);
  s.step_power = batch_ratio(e, d);
  s.token_energy = batch_ratio(te, tk);
}

void phases(const run& r, run_summary& s) {
  std::map<std::string, std::size_t> row;
  auto add_row = [&](const std::string& name, double energy, std::uint64_t n) {
    auto it = row.find(name);
    if (it == row.end()) {
      it = row.emplace(name, s.phases.size()).first;
      s.phases.push_back({name, 0.0, 0.0, 0});
    }
    phase_row& p = s.phases[it->second];
    p.energy_j += energy;
    p.windows += n;
    return &p;
  };
  for (const auto& n : r.nodes) {
    std::map<std::string, double> durations;
    if (n.windows.empty()) {
      if (n.wrap) {
        for (const auto& [name, e] : n.wrap->energy_by_window_j)
          add_row(name, e, 0);
      } else if (n.energy_j) {
        durations["run"] = n.duration_s.value_or(0.0);
        add_row("run", *n.energy_j, 1);
      }
    }
    for (const auto& w : n.windows) {
      const std::string name = w.is_step ? "steps" : w.phase;
      add_row(name, w.energy_j, 1);
      durations[name] += w.duration_s;
    }
    for (const auto& [name, d] : durations) {
      phase_row& p = s.phases[row.at(name)];
      p.duration_s = std::max(p.duration_s, d);
    }
  }
  // Time order as a run goes: setup first, tail last.
  auto rank = [](const std::string& name) {
    if (name == "setup") return 0;
    if (name == "steps" || name == "run") return 1;
    if (name == "other") return 3;
    if (name == "tail") return 4;
    return 2;
  };
  std::stable_sort(s.phases.begin(), s.phases.end(), [&](const phase_row& a, const phase_row& b) {
    return rank(a.name) < rank(b.name);
  });
  if (r.nodes.empty()) return;
  const node& first = r.nodes.front();
  const double origin = origin_of(first);
  for (const auto& w : first.windows) {
    if (w.is_step) continue;
    if (!s.spans.empty() && s.spans.back().name == w.phase &&
        std::abs(s.spans.back().to_s - (w.start_s - origin)) < 1e-9) {
      s.spans.back().to_s = w.end_s - origin;
    } else {
      s.spans.push_back({w.phase, w.start_s - origin, w.end_s - origin});
    }
  }
}

}  // namespace

double origin_of(const node& n) {
  if (n.start_monotonic_s) return *n.start_monotonic_s;
  if (!n.windows.empty()) return n.windows.front().start_s;
  if (!n.samples.empty()) return n.samples.front().start_s;
  return 0.0;
}

run_summary summarize(const run& r) {
  run_summary s;
  s.run_id = r.run_id;
  for (const auto& n : r.nodes) {
    s.hosts.push_back(n.hostname);
    for (const auto& f : n.files) {
      if (std::find(s.files.begin(), s.files.end(), f) == s.files.end()) s.files.push_back(f);
    }
    if (!n.start_time.empty() && (s.start_time.empty() || n.start_time < s.start_time))
      s.start_time = n.start_time;
    if (s.user.empty()) s.user = n.user;
    if (s.subcommand.empty()) s.subcommand = n.subcommand;
    if (s.backend.empty()) s.backend = n.backend;
    if (s.command.empty()) s.command = join(n.command, " ");
    for (const auto& [k, v] : n.labels) {
      const std::pair<std::string, std::string> kv(k, v);
      if (std::find(s.labels.begin(), s.labels.end(), kv) == s.labels.end()) s.labels.push_back(kv);
    }
    if (!n.has_start || !n.has_end) s.complete = false;
    if (!n.has_start) s.notes.push_back(n.hostname + ": no session_start record");
    if (!n.has_end) {
      s.notes.push_back(n.hostname +
                        ": no session_end record (the run was cut off, or is still going): its "
                        "figures end at its last record");
    }
    if (n.has_end && s.status.empty()) s.status = n.status;
    if (n.has_end && n.status != "completed" && !n.status.empty()) s.status = n.status;
  }
  if (s.status.empty()) s.status = "unknown (no session_end)";
  if (r.nodes.empty()) return s;
  headline(r, s);
  steps_and_rates(r, s);
  phases(r, s);
  summarize_devices(r, s);
  summarize_events(r, s);
  return s;
}

std::string format_si(double v, std::string_view unit) {
  const double a = std::abs(v);
  const char* prefix = "";
  double scaled = v;
  if (a >= 1e12) {
    prefix = "T";
    scaled = v / 1e12;
  } else if (a >= 1e9) {
    prefix = "G";
    scaled = v / 1e9;
  } else if (a >= 1e6) {
    prefix = "M";
    scaled = v / 1e6;
  } else if (a >= 1e3) {
    prefix = "k";
    scaled = v / 1e3;
  } else if (a > 0 && a < 1e-3) {
    prefix = "µ";
    scaled = v * 1e6;
  } else if (a > 0 && a < 0.1) {
    prefix = "m";
    scaled = v * 1e3;
  }
  return fmt::format("{:.3g} {}{}", scaled, prefix, unit);
}

std::string format_energy(double j) {
  std::string out = format_si(j, "J");
  if (std::abs(j) >= kJoulesPerKwh / 10) out += fmt::format(" ({:.3g} kWh)", j / kJoulesPerKwh);
  return out;
}

std::string format_duration(double s) {
  if (s < 0.1) return format_si(s, "s");
  if (s < 60) return fmt::format("{:.3g} s", s);
  if (s < 3600) {
    const auto m = static_cast<long>(s / 60);
    return fmt::format("{} min {:02} s", m, static_cast<long>(s - static_cast<double>(m) * 60));
  }
  const auto h = static_cast<long>(s / 3600);
  return fmt::format("{} h {:02} min", h,
                     static_cast<long>((s - static_cast<double>(h) * 3600) / 60));
}

}  // namespace joules::report
