// Scenario JSON -> scenario, with the README's defaults.  Runs once per loaded scenario, never on
// an NVML call, so it favours clear errors over speed.

#include <array>
#include <climits>
#include <cmath>
#include <cstdio>
#include <utility>

#include "json_fields.hpp"
#include "power_spec.hpp"
#include "scenario.hpp"

namespace fake_nvml {
namespace {

namespace nv = joules::nvml;
using nlohmann::json;

constexpr std::array<architecture, 10> kArchitectures = {{
    {"kepler", nv::kArchKepler, 0, 3, 5, false},
    {"maxwell", nv::kArchMaxwell, 1, 5, 2, false},
    {"pascal", nv::kArchPascal, 2, 6, 0, false},
    {"volta", nv::kArchVolta, 3, 7, 0, false},
    {"turing", nv::kArchTuring, 4, 7, 5, false},
    {"ampere", nv::kArchAmpere, 5, 8, 0, true},
    {"ada", nv::kArchAda, 6, 8, 9, false},
    {"hopper", nv::kArchHopper, 7, 9, 0, true},
    {"blackwell", nv::kArchBlackwell, 8, 10, 0, true},
    // [unverified] Rubin's compute capability; scenarios that care set compute_capability.
    {"rubin", nv::kArchRubin, 9, 11, 0, true},
}};

std::string default_gpu_uuid(unsigned int index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-00000000-0000-4000-8000-0000000000%02x", index);
  return buf;
}

std::string default_mig_uuid(unsigned int parent, unsigned int index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "MIG-%08x-0000-4000-9000-%012x", parent, index);
  return buf;
}

std::string default_serial(unsigned int index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "1654922%06u", index);
  return buf;
}

unsigned int to_uint(json_fields& f, const std::string& key, unsigned int fallback) {
  const unsigned long long v = f.unsigned_integer(key, fallback);
  if (v > UINT_MAX) f.fail(key, "is too large");
  return static_cast<unsigned int>(v);
}

unsigned int watts_to_mw(json_fields& f, const std::string& key, double fallback_w) {
  const double w = f.non_negative(key, fallback_w);
  if (w > 4.0e6) f.fail(key, "is too large");
  return static_cast<unsigned int>(std::llround(w * 1000.0));
}

nvmlReturn_t error_code(json_fields& f, const std::string& key) {
  const json& v = f.at(key);
  if (v.is_number_integer()) return v.get<nvmlReturn_t>();
  if (!v.is_string()) f.fail(key, "must be an NVML error name such as \"UNKNOWN\"");
  const nvmlReturn_t code = error_code_from_name(v.get<std::string>());
  if (code < 0) f.fail(key, "names no NVML error: " + v.get<std::string>());
  return code;
}

reading_config parse_reading(json_fields& dev, const std::string& key, reading_config r) {
  if (!dev.has(key)) return r;
  json_fields f(dev.at(key), dev.sub(key));
  r.supported = f.boolean("supported", r.supported);
  r.window_s = f.non_negative("window_ms", r.window_s * 1000.0) / 1000.0;
  r.update_s = f.non_negative("update_ms", r.update_s * 1000.0) / 1000.0;
  f.finish();
  return r;
}

std::vector<process> parse_processes(json_fields& f, const std::string& key) {
  std::vector<process> out;
  if (!f.has(key)) return out;
  const json& list = f.at(key);
  if (!list.is_array()) f.fail(key, "must be an array");
  for (std::size_t i = 0; i < list.size(); ++i) {
    json_fields p(list[i], f.sub(key) + "[" + std::to_string(i) + "]");
    if (!p.has("pid")) p.fail("pid", "is required");
    process proc;
    proc.pid = to_uint(p, "pid", 0);
    proc.used_memory_bytes = p.unsigned_integer("used_memory_bytes", 0);
    proc.sm_util_percent = to_uint(p, "sm_util_percent", 0);
    proc.memory_util_percent = to_uint(p, "memory_util_percent", 0);
    p.finish();
    out.push_back(proc);
  }
  return out;
}

const architecture& parse_architecture(json_fields& f) {
  const std::string name = f.string("architecture", "hopper");
  for (const architecture& a : kArchitectures) {
    if (name == a.name) return a;
  }
  f.fail("architecture",
         "must be one of kepler, maxwell, pascal, volta, turing, ampere, ada, "
         "hopper, blackwell, rubin, not " +
             name);
}

void parse_pci(json_fields& f, device& d) {
  const std::string given = f.string("pci_bus_id", "");
  unsigned int domain = 0, bus = 0x18U + d.index, dev = 0, function = 0;
  if (!given.empty() &&
      std::sscanf(given.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &function) != 4) {
    f.fail("pci_bus_id", "must look like 00000000:18:00.0");
  }
  d.pci_domain = domain;
  d.pci_bus = bus;
  d.pci_device = dev;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.%X", domain, bus, dev, function);
  d.pci_bus_id = buf;
}

void parse_mig(json_fields& dev, device& d, scenario& s) {
  d.mig_first = s.migs.size();
  if (!dev.has("mig")) return;
  json_fields f(dev.at("mig"), dev.sub("mig"));
  d.mig_enabled = f.boolean("enabled", false);
  d.mig_max_count = d.mig_enabled ? to_uint(f, "max_devices", 7) : 0;
  if (d.mig_enabled && !d.arch->mig_capable) f.fail("enabled", "needs a MIG-capable architecture");
  if (f.has("devices")) {
    const json& list = f.at("devices");
    if (!list.is_array()) f.fail("devices", "must be an array");
    if (!list.empty() && !d.mig_enabled) f.fail("devices", "needs \"enabled\": true");
    if (list.size() > d.mig_max_count) f.fail("devices", "has more than max_devices entries");
    for (std::size_t i = 0; i < list.size(); ++i) {
      json_fields m(list[i], f.sub("devices") + "[" + std::to_string(i) + "]");
      mig_device mig;
      mig.parent = d.index;
      mig.index = static_cast<unsigned int>(i);
      mig.name = m.string("name", d.name + " MIG 1g.10gb");
      mig.uuid = m.string("uuid", default_mig_uuid(d.index, mig.index));
      mig.gpu_instance_id = to_uint(m, "gpu_instance_id", mig.index + 1);
      mig.compute_instance_id = to_uint(m, "compute_instance_id", 0);
      mig.memory_total_bytes = m.unsigned_integer("memory_total_bytes", 10737418240ULL);
      mig.memory_used_bytes = m.unsigned_integer("memory_used_bytes", 0);
      if (mig.memory_used_bytes > mig.memory_total_bytes)
        m.fail("memory_used_bytes", "is more than memory_total_bytes");
      for (auto [key, value] : {std::pair{"sm_util_percent", &mig.sm_util_percent},
                                {"sm_occupancy_percent", &mig.sm_occupancy_percent},
                                {"tensor_util_percent", &mig.tensor_util_percent},
                                {"dram_bw_util_percent", &mig.dram_bw_util_percent}}) {
        if (m.has(key)) *value = m.non_negative(key, 0.0);
      }
      mig.processes = parse_processes(m, "processes");
      for (process& p : mig.processes) {
        p.gpu_instance_id = mig.gpu_instance_id;
        p.compute_instance_id = mig.compute_instance_id;
        d.compute_processes.push_back(p);
      }
      m.finish();
      s.migs.push_back(std::move(mig));
    }
  }
  d.mig_count = s.migs.size() - d.mig_first;
  f.finish();
}

// `changes`: each entry replaces health keys and process lists from `at_s` on (README "Changes").
void parse_changes(json_fields& dev, device& d) {
  if (!dev.has("changes")) return;
  const json& list = dev.at("changes");
  if (!list.is_array()) dev.fail("changes", "must be an array");
  // The processes of MIG devices stay: a change names the GPU's own processes.
  std::vector<process> mig_processes;
  for (const process& p : d.compute_processes) {
    if (p.gpu_instance_id != 0xFFFFFFFFU) mig_processes.push_back(p);
  }
  state_change state{0.0, d.health, d.compute_processes, d.graphics_processes};
  double last = -kForever;
  for (std::size_t i = 0; i < list.size(); ++i) {
    json_fields c(list[i], dev.sub("changes") + "[" + std::to_string(i) + "]");
    if (!c.has("at_s")) c.fail("at_s", "is required");
    state.at_s = c.number("at_s", 0.0);
    if (state.at_s < last) c.fail("at_s", "must not be earlier than the change before");
    last = state.at_s;
    if (c.has("health")) state.health = parse_health(c.at("health"), c.sub("health"), state.health);
    if (c.has("processes")) {
      state.compute_processes = parse_processes(c, "processes");
      state.compute_processes.insert(state.compute_processes.end(), mig_processes.begin(),
                                     mig_processes.end());
    }
    if (c.has("graphics_processes")) {
      state.graphics_processes = parse_processes(c, "graphics_processes");
    }
    c.finish();
    d.changes.push_back(state);
  }
}

std::vector<unsigned int> parse_field_ids(json_fields& f, const std::string& key) {
  std::vector<unsigned int> out;
  if (!f.has(key)) return out;
  const json& list = f.at(key);
  if (!list.is_array()) f.fail(key, "must be an array of field ids");
  for (const json& id : list) {
    if (!id.is_number_unsigned() || id.get<unsigned long long>() > UINT_MAX) {
      f.fail(key, "must be an array of field ids");
    }
    out.push_back(id.get<unsigned int>());
  }
  return out;
}

// [{"at_s": 2.5, "xid": 79, "count": 3}, ...]: `count` (default 1) XIDs at at_s each, the
// entries in time order.
std::vector<xid_event> parse_xids(json_fields& f) {
  std::vector<xid_event> out;
  const std::string key = "xids";
  if (!f.has(key)) return out;
  const json& list = f.at(key);
  if (!list.is_array()) f.fail(key, "must be an array of {at_s, xid, count}");
  double last = -kForever;
  for (std::size_t i = 0; i < list.size(); ++i) {
    json_fields x(list[i], f.sub(key) + "[" + std::to_string(i) + "]");
    if (!x.has("at_s")) x.fail("at_s", "is required");
    if (!x.has("xid")) x.fail("xid", "is required");
    const double at = x.number("at_s", 0.0);
    if (at < last) x.fail("at_s", "must not be earlier than the entry before");
    last = at;
    const unsigned long long xid = x.unsigned_integer("xid", 0);
    if (xid > UINT_MAX) x.fail("xid", "is too large");
    const unsigned long long count = x.unsigned_integer("count", 1);
    if (count > 100000) x.fail("count", "is too large (at most 100000)");
    x.finish();
    for (unsigned long long k = 0; k < count; ++k)
      out.push_back({at, static_cast<unsigned int>(xid)});
  }
  return out;
}

device parse_device(const json& j, unsigned int index, unsigned int top_latency_us, scenario& s) {
  json_fields f(j, "devices[" + std::to_string(index) + "]");
  device d;
  d.index = index;
  d.name = f.string("name", "NVIDIA H100 80GB HBM3");
  d.uuid = f.string("uuid", default_gpu_uuid(index));
  d.serial = f.string("serial", default_serial(index));
  parse_pci(f, d);
  d.arch = &parse_architecture(f);
  d.cc_major = d.arch->cc_major;
  d.cc_minor = d.arch->cc_minor;
  if (f.has("compute_capability")) {
    const json& cc = f.at("compute_capability");
    if (!cc.is_array() || cc.size() != 2 || !cc[0].is_number_integer() ||
        !cc[1].is_number_integer()) {
      f.fail("compute_capability", "must be [major, minor]");
    }
    d.cc_major = cc[0].get<int>();
    d.cc_minor = cc[1].get<int>();
  }
  d.latency_us = to_uint(f, "latency_us", top_latency_us);
  const std::string permission = f.string("permission", "ok");
  if (permission != "ok" && permission != "no_permission") {
    f.fail("permission", "must be ok or no_permission");
  }
  d.no_permission = permission == "no_permission";

  const bool volta_plus = d.arch->rank >= kRankVolta;
  const bool ampere_plus = d.arch->rank >= kRankAmpere;
  d.energy_counter.supported = volta_plus;
  if (f.has("energy_counter")) {
    json_fields c(f.at("energy_counter"), f.sub("energy_counter"));
    d.energy_counter.supported = c.boolean("supported", volta_plus);
    d.energy_counter.update_s = c.non_negative("update_ms", 0.0) / 1000.0;
    d.energy_counter.phase_s = c.number("phase_ms", 0.0) / 1000.0;
    d.energy_counter.initial_mj = c.unsigned_integer("initial_mj", 0);
    d.energy_counter.read_cpu_us = to_uint(c, "read_cpu_us", 0);
    d.energy_counter.read_wait_us = to_uint(c, "read_wait_us", 0);
    c.finish();
  }
  const reading_config averaged{true, 1.0, 0.1};
  const reading_config instant{true, 0.0, 0.0};
  d.power_usage = parse_reading(f, "power_usage", ampere_plus ? averaged : instant);
  d.power_instant = parse_reading(f, "power_instant", instant);
  d.power_average = parse_reading(f, "power_average", reading_config{ampere_plus, 1.0, 0.1});

  unsigned int current_mw = d.default_limit_mw;
  if (f.has("limits")) {
    json_fields l(f.at("limits"), f.sub("limits"));
    d.default_limit_mw = watts_to_mw(l, "default_w", 700.0);
    d.min_limit_mw = watts_to_mw(l, "min_w", 200.0);
    d.max_limit_mw = watts_to_mw(l, "max_w", 700.0);
    current_mw = watts_to_mw(l, "current_w", d.default_limit_mw / 1000.0);
    d.limit_settable = l.boolean("settable", true);
    d.limits_supported = l.boolean("supported", true);
    if (d.min_limit_mw > d.max_limit_mw) l.fail("min_w", "exceeds max_w");
    l.finish();
  }

  d.power = fake_gpu::parse_power(f, current_mw);
  d.step_time_factor = fake_gpu::parse_step_curve(f);
  fake_gpu::parse_faults(
      f, d.faults, nv::kErrorNotSupported,
      [](json_fields& fl, const std::string& key) -> long long { return error_code(fl, key); });
  d.compute_processes = parse_processes(f, "processes");
  d.graphics_processes = parse_processes(f, "graphics_processes");
  d.process_utilization = f.boolean("process_utilization", true);
  if (f.has("health")) d.health = parse_health(f.at("health"), f.sub("health"));
  parse_mig(f, d, s);
  parse_changes(f, d);
  d.fields_not_supported = parse_field_ids(f, "fields_not_supported");
  d.xids = parse_xids(f);
  d.xid_events = f.boolean("xid_events", true);
  f.finish();
  return d;
}

}  // namespace

std::unique_ptr<scenario> parse_scenario(const std::string& text, const driver_defaults& defaults) {
  const json j = json::parse(text);
  auto s = std::make_unique<scenario>();
  json_fields f(j, "scenario");
  s->driver_version = f.string("driver_version", defaults.driver_version);
  s->nvml_version = f.string("nvml_version", defaults.nvml_version);
  if (f.has("cuda_driver_version")) {
    if (!f.at("cuda_driver_version").is_number_integer()) {
      f.fail("cuda_driver_version", "must be an integer such as 12080");
    }
    s->cuda_driver_version = f.at("cuda_driver_version").get<int>();
  } else {
    s->cuda_driver_version = defaults.cuda_driver_version;
  }
  if (f.has("init_error")) s->init_error = error_code(f, "init_error");
  const unsigned int latency_us = to_uint(f, "latency_us", 0);
  s->process_struct_bytes = to_uint(f, "process_struct_bytes", 24);
  if (s->process_struct_bytes != 24 && s->process_struct_bytes != 32) {
    f.fail("process_struct_bytes", "must be 24 or 32");
  }
  if (!f.has("devices") || !f.at("devices").is_array()) f.fail("devices", "must be an array");
  const json& devices = f.at("devices");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    s->devices.push_back(parse_device(devices[i], static_cast<unsigned int>(i), latency_us, *s));
  }
  f.finish();
  for (device& d : s->devices)
    s->slots.push_back({&d, nullptr});
  for (const mig_device& m : s->migs)
    s->slots.push_back({&s->devices[m.parent], &m});
  return s;
}

}  // namespace fake_nvml
