// What each record type gives the reader (report/reader_impl.hpp): the fields of session_start,
// session_end, step, phase, sample, prediction and straggler records.

#include <fmt/format.h>

#include <algorithm>

#include "report/reader_impl.hpp"

namespace joules::report {
namespace {

std::optional<element> field(const object& o, std::string_view key) {
  element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return std::nullopt;
  return e;
}

std::optional<double> num(const object& o, std::string_view key) {
  const auto e = field(o, key);
  double d = 0.0;
  if (!e || e->get_double().get(d) != simdjson::SUCCESS) return std::nullopt;
  return d;
}

std::optional<std::int64_t> integer(const object& o, std::string_view key) {
  const auto e = field(o, key);
  std::int64_t i = 0;
  if (!e || e->get_int64().get(i) != simdjson::SUCCESS) return std::nullopt;
  return i;
}

std::optional<std::uint64_t> count(const object& o, std::string_view key) {
  const auto e = field(o, key);
  std::uint64_t u = 0;
  if (!e || e->get_uint64().get(u) != simdjson::SUCCESS) return std::nullopt;
  return u;
}

std::string str(const object& o, std::string_view key) {
  const auto e = field(o, key);
  std::string_view s;
  if (!e || e->get_string().get(s) != simdjson::SUCCESS) return {};
  return std::string(s);
}

bool boolean(const object& o, std::string_view key) {
  const auto e = field(o, key);
  bool b = false;
  return e && e->get_bool().get(b) == simdjson::SUCCESS && b;
}

std::optional<object> sub(const object& o, std::string_view key) {
  const auto e = field(o, key);
  object out;
  if (!e || e->get_object().get(out) != simdjson::SUCCESS) return std::nullopt;
  return out;
}

std::optional<array> list(const object& o, std::string_view key) {
  const auto e = field(o, key);
  array out;
  if (!e || e->get_array().get(out) != simdjson::SUCCESS) return std::nullopt;
  return out;
}

template <class F>
void each_object(const std::optional<array>& a, F fn) {
  if (!a) return;
  for (element e : *a) {
    object o;
    if (e.get_object().get(o) == simdjson::SUCCESS) fn(o);
  }
}

stat3 stat_of(const object& o, std::string_view key) {
  stat3 s;
  if (const auto x = sub(o, key)) {
    s.min = num(*x, "min");
    s.mean = num(*x, "mean");
    s.max = num(*x, "max");
  }
  return s;
}

device_desc device_of(const object& o) {
  device_desc d;
  d.kind = str(o, "kind");
  d.index = integer(o, "index").value_or(0);
  d.uuid = str(o, "uuid");
  d.name = str(o, "name");
  d.method = str(o, "method");
  d.energy_j = num(o, "energy_j");
  d.avg_power_w = num(o, "avg_power_w");
  d.peak_power_w = num(o, "peak_power_w");
  d.counter_resets = integer(o, "counter_resets").value_or(0);
  d.read_errors = integer(o, "read_errors").value_or(0);
  d.lost_at_s = num(o, "lost_at_s");
  d.counter_lost_at_s = num(o, "counter_lost_at_s");
  return d;
}

void read_carbon(const object& c, carbon_figures& out) {
  out.energy_kwh = num(c, "energy_kwh");
  out.pue = num(c, "pue");
  out.facility_energy_kwh = num(c, "facility_energy_kwh");
  out.co2e_g = num(c, "co2e_g");
  out.cost = num(c, "cost");
  out.note = str(c, "note");
  if (const auto e = sub(c, "co2e")) {
    out.intensity_g_per_kwh = num(*e, "intensity_g_per_kwh");
    out.co2_source = str(*e, "source");
    out.co2_year = integer(*e, "year");
    out.co2_region = str(*e, "region");
    out.co2_method = str(*e, "method");
  }
  if (const auto b = sub(c, "cost_basis")) {
    out.currency = str(*b, "currency");
    out.price_per_kwh = num(*b, "price_per_kwh");
    out.price_source = str(*b, "source");
  }
}

}  // namespace

node& reader::impl::node_of(const object& o) {
  std::string run_id = str(o, "run_id");
  std::string host = str(o, "hostname");
  auto key = std::make_pair(run_id, host);
  auto it = nodes.find(key);
  if (it == nodes.end()) {
    auto r = runs.find(run_id);
    if (r == runs.end()) {
      r = runs.emplace(run_id, out.runs.size()).first;
      out.runs.push_back(run{run_id, {}});
    }
    run& into = out.runs[r->second];
    node n;
    n.run_id = std::move(run_id);
    n.hostname = std::move(host);
    into.nodes.push_back(std::move(n));
    it = nodes.emplace(key, std::make_pair(r->second, into.nodes.size() - 1)).first;
  }
  node& n = out.runs[it->second.first].nodes[it->second.second];
  if (std::find(n.files.begin(), n.files.end(), file) == n.files.end()) n.files.push_back(file);
  if (n.labels.empty()) {
    if (const auto labels = sub(o, "labels")) {
      for (auto [k, v] : *labels) {
        std::string_view s;
        if (v.get_string().get(s) == simdjson::SUCCESS) n.labels.emplace(k, s);
      }
    }
  }
  return n;
}

void reader::impl::read_start(const object& o, node& n) {
  n.has_start = true;
  n.subcommand = str(o, "subcommand");
  n.joules_version = str(o, "joules_version");
  n.backend = str(o, "backend");
  n.user = str(o, "user");
  n.start_time = str(o, "start_time");
  n.start_monotonic_s = num(o, "start_monotonic_s");
  n.interval_ms = num(o, "interval_ms");
  n.command.clear();
  if (const auto cmd = list(o, "command")) {
    for (element e : *cmd) {
      std::string_view s;
      if (e.get_string().get(s) == simdjson::SUCCESS) n.command.emplace_back(s);
    }
  }
  n.devices.clear();
  each_object(list(o, "devices"), [&](const object& d) { n.devices.push_back(device_of(d)); });
  if (const auto c = sub(o, "carbon")) n.carbon_region = str(*c, "region");
}

void reader::impl::read_end(const object& o, node& n) {
  n.has_end = true;
  n.status = str(o, "status");
  n.degraded = boolean(o, "degraded");
  n.degradations.clear();
  if (const auto why = list(o, "degradations")) {
    for (element e : *why) {
      std::string_view s;
      if (e.get_string().get(s) == simdjson::SUCCESS) n.degradations.emplace_back(s);
    }
  }
  n.exit_status = integer(o, "exit_status");
  n.end_time = str(o, "end_time");
  if (n.start_time.empty()) n.start_time = str(o, "start_time");
  if (!n.start_monotonic_s) n.start_monotonic_s = num(o, "start_monotonic_s");
  n.end_monotonic_s = num(o, "end_monotonic_s");
  n.duration_s = num(o, "duration_s");
  n.energy_j = num(o, "energy_j");
  n.avg_power_w = num(o, "avg_power_w");
  n.peak_power_w = num(o, "peak_power_w");
  n.method = str(o, "method");
  n.estimated_energy_j = num(o, "estimated_energy_j");
  n.end_devices.clear();
  each_object(list(o, "devices"), [&](const object& d) { n.end_devices.push_back(device_of(d)); });
  if (const auto c = sub(o, "carbon")) read_carbon(*c, n.carbon);
  if (const auto w = sub(o, "wrap")) {
    wrap_summary s;
    s.steps = count(*w, "steps").value_or(0);
    s.step_windows = count(*w, "step_windows").value_or(0);
    s.last_step = count(*w, "last_step");
    s.total_steps = count(*w, "total_steps");
    s.energy_per_step_j = num(*w, "energy_per_step_j");
    s.tokens = num(*w, "tokens");
    s.joules_per_token = num(*w, "joules_per_token");
    s.samples = num(*w, "samples");
    s.joules_per_sample = num(*w, "joules_per_sample");
    if (const auto c = field(*w, "conserved")) {
      bool b = false;
      if (c->get_bool().get(b) == simdjson::SUCCESS) s.conserved = b;
    }
    if (const auto by = sub(*w, "energy_by_window_j")) {
      for (const char* k : {"setup", "steps"}) {
        if (const auto v = num(*by, k)) s.energy_by_window_j.emplace_back(k, *v);
      }
      if (const auto phases = sub(*by, "phases")) {
        for (auto [k, v] : *phases) {
          double d = 0.0;
          if (v.get_double().get(d) == simdjson::SUCCESS) s.energy_by_window_j.emplace_back(k, d);
        }
      }
      for (const char* k : {"other", "tail"}) {
        if (const auto v = num(*by, k)) s.energy_by_window_j.emplace_back(k, *v);
      }
    }
    n.wrap = std::move(s);
  }
}

bool reader::impl::read_window(const object& o, node& n, bool step) {
  window_record w;
  w.is_step = step;
  const auto window = count(o, "window");
  const auto start = num(o, "start_monotonic_s");
  const auto end = num(o, "end_monotonic_s");
  const auto energy = num(o, "energy_j");
  if (!window || !start || !end || !energy) return false;
  w.window = *window;
  w.start_s = *start;
  w.end_s = *end;
  w.duration_s = num(o, "duration_s").value_or(*end - *start);
  w.energy_j = *energy;
  if (step) {
    const auto s = count(o, "step");
    if (!s) return false;
    w.step = *s;
    w.step_gap = std::max<std::uint64_t>(1, count(o, "step_gap").value_or(1));
  } else {
    w.phase = str(o, "phase");
    if (w.phase.empty()) return false;
  }
  w.peak_power_w = num(o, "peak_power_w");
  w.method = str(o, "method");
  w.tokens = num(o, "tokens");
  w.samples = num(o, "samples");
  w.co2e_g = num(o, "co2e_g");
  each_object(list(o, "gpus"), [&](const object& g) {
    const auto idx = integer(g, "index");
    const auto e = num(g, "energy_j");
    if (idx && e) w.gpu_energy_j.emplace_back(*idx, *e);
  });
  n.windows.push_back(std::move(w));
  return true;
}

bool reader::impl::read_sample(const object& o, node& n) {
  sample_record s;
  const auto start = num(o, "start_monotonic_s");
  const auto end = num(o, "end_monotonic_s");
  if (!start || !end || *end < *start) return false;
  s.start_s = *start;
  s.end_s = *end;
  each_object(list(o, "devices"), [&](const object& d) {
    sample_device x;
    x.kind = str(d, "kind");
    x.index = integer(d, "index").value_or(0);
    x.energy_j = num(d, "energy_j");
    x.power_w = stat_of(d, "power_w");
    x.gpu_util_percent = stat_of(d, "gpu_util_percent");
    x.temperature_c = stat_of(d, "temperature_c");
    x.sm_clock_hz = stat_of(d, "sm_clock_hz");
    x.lost = boolean(d, "lost");
    if (const auto ev = list(d, "clock_events")) {
      for (element e : *ev) {
        std::string_view name;
        if (e.get_string().get(name) == simdjson::SUCCESS) x.clock_events.emplace_back(name);
      }
    }
    s.devices.push_back(std::move(x));
  });
  n.samples.push_back(std::move(s));
  return true;
}

bool reader::impl::add_record(std::string_view type, const object& o, std::uint64_t line) {
  if (type == "session_start") {
    read_start(o, node_of(o));
  } else if (type == "session_end") {
    read_end(o, node_of(o));
  } else if (type == "step" || type == "phase") {
    if (!read_window(o, node_of(o), type == "step")) return false;
  } else if (type == "sample") {
    if (!read_sample(o, node_of(o))) return false;
  } else if (type == "prediction") {
    prediction_record p;
    const auto at = count(o, "at_step");
    const auto total = count(o, "total_steps");
    const auto energy = num(o, "energy_j");
    if (!at || !total || !energy) return false;
    p.at_step = *at;
    p.total_steps = *total;
    p.energy_j = *energy;
    p.scope = str(o, "scope");
    p.milestone_percent = integer(o, "milestone_percent").value_or(0);
    p.duration_s = num(o, "duration_s").value_or(0.0);
    p.energy_per_step_j = num(o, "energy_per_step_j");
    p.basis_steps = count(o, "basis_steps").value_or(0);
    node_of(o).predictions.push_back(p);
  } else if (type == "straggler") {
    straggler_record s;
    const auto gpu = integer(o, "gpu");
    const auto dev = num(o, "deviation");
    if (!gpu || !dev) return false;
    s.gpu = *gpu;
    s.deviation = *dev;
    s.uuid = str(o, "uuid");
    s.at_step = count(o, "at_step").value_or(0);
    s.window_steps = count(o, "window_steps").value_or(0);
    node_of(o).stragglers.push_back(std::move(s));
  } else {
    auto& u = unknown[std::string(type)];
    if (u.second++ == 0) u.first = line;
  }
  return true;
}

}  // namespace joules::report
