#include "report/aggregate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/summary_parts.hpp"

namespace joules::report {
namespace {

constexpr double kSecondsPerHour = 3600.0;

// One node's figures, from its session_end or, cut off, from its windows.
struct node_figures {
  double energy_j = 0.0;
  std::optional<double> co2e_g;
  std::optional<double> cost;
  double duration_s = 0.0;
  std::uint64_t gpus = 0;
  std::uint64_t steps = 0;
  std::optional<double> tokens;
  std::string method;
  bool complete = false;
};

node_figures figures_of(const node& n) {
  node_figures f;
  const auto& devices = n.has_end && !n.end_devices.empty() ? n.end_devices : n.devices;
  f.gpus = static_cast<std::uint64_t>(std::count_if(
      devices.begin(), devices.end(), [](const device_desc& d) { return d.kind == "gpu"; }));
  if (n.has_end && n.energy_j) {
    f.complete = true;
    f.energy_j = *n.energy_j;
    f.co2e_g = n.carbon.co2e_g;
    f.cost = n.carbon.cost;
    f.duration_s = n.duration_s.value_or(0.0);
    f.method = n.method;
    if (n.wrap) {
      f.steps = n.wrap->steps;
      f.tokens = n.wrap->tokens;
    }
    return f;
  }
  double tokens = 0.0;
  for (const auto& w : n.windows) {
    f.energy_j += w.energy_j;
    if (f.method.empty()) f.method = w.method;
    if (w.method != f.method) f.method = "mixed";
    if (w.is_step) f.steps += w.step_gap;
    if (w.tokens) tokens += *w.tokens;
  }
  if (tokens > 0) f.tokens = tokens;
  if (!n.windows.empty()) f.duration_s = n.windows.back().end_s - origin_of(n);
  if (f.method.empty()) f.method = "unknown";
  return f;
}

std::string key_value(const node& n, group_key k) {
  switch (k) {
    case group_key::host:
      return n.hostname;
    case group_key::job:
      return n.run_id;
    case group_key::day:
      return n.start_time.size() >= 10 ? n.start_time.substr(0, 10) : "unknown";
    case group_key::user: {
      if (!n.user.empty()) return n.user;
      const auto it = n.labels.find("user");
      return it != n.labels.end() ? it->second : "unknown";
    }
  }
  return {};
}

std::string co2_source(const carbon_figures& c) {
  std::string s = c.co2_source.empty() ? "unknown source" : c.co2_source;
  if (c.co2_year) s += fmt::format(" {}", *c.co2_year);
  if (!c.co2_region.empty()) s += " " + c.co2_region;
  return s;
}

void add_node(aggregate_row& row, const node& n, const node_figures& f) {
  ++row.nodes;
  if (!f.complete) ++row.incomplete;
  row.energy_j += f.energy_j;
  if (f.co2e_g) {
    row.co2e_g = row.co2e_g.value_or(0.0) + *f.co2e_g;
    ++row.co2e_nodes;
    row.co2_sources.insert(co2_source(n.carbon));
  }
  if (f.cost) {
    row.cost = row.cost.value_or(0.0) + *f.cost;
    ++row.cost_nodes;
    row.currencies.insert(n.carbon.currency);
  }
  row.duration_s += f.duration_s;
  row.gpu_hours += f.duration_s * static_cast<double>(f.gpus) / kSecondsPerHour;
  row.steps += f.steps;
  if (f.tokens) row.tokens = row.tokens.value_or(0.0) + *f.tokens;
  row.methods.insert(f.method);
}

}  // namespace

std::string_view to_string(group_key k) {
  switch (k) {
    case group_key::host:
      return "host";
    case group_key::job:
      return "job";
    case group_key::day:
      return "day";
    case group_key::user:
      return "user";
  }
  return "";
}

aggregate_result aggregate(const record_set& records, const std::vector<group_key>& by) {
  aggregate_result out;
  out.by = by;
  std::map<std::vector<std::string>, aggregate_row> groups;
  std::map<std::vector<std::string>, std::set<std::string>> group_runs;
  std::set<std::string> all_runs;
  for (const auto& r : records.runs) {
    for (const auto& n : r.nodes) {
      std::vector<std::string> key;
      for (const auto k : by)
        key.push_back(key_value(n, k));
      const node_figures f = figures_of(n);
      aggregate_row& row = groups[key];
      row.key = key;
      add_node(row, n, f);
      add_node(out.total, n, f);
      group_runs[key].insert(r.run_id);
      all_runs.insert(r.run_id);
    }
  }
  for (auto& [key, row] : groups) {
    row.runs = group_runs[key].size();
    out.rows.push_back(std::move(row));
  }
  out.total.runs = all_runs.size();
  return out;
}

}  // namespace joules::report
