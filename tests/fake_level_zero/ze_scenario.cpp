// Scenario JSON -> scenario, with the README's defaults; the energy counters.

#include "ze_scenario.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <utility>

#include "power_spec.hpp"

namespace fake_ze {
namespace {

using nlohmann::json;

constexpr std::pair<const char*, long long> kResults[] = {
    {"DEVICE_LOST", 0x70000001},      {"INSUFFICIENT_PERMISSIONS", 0x70010000},
    {"NOT_AVAILABLE", 0x70010001},    {"DEPENDENCY_UNAVAILABLE", 0x70020000},
    {"UNINITIALIZED", 0x78000001},    {"UNSUPPORTED_FEATURE", 0x78000003},
    {"INVALID_ARGUMENT", 0x78000004}, {"UNKNOWN", 0x7ffffffe},
};

unsigned to_uint(json_fields& f, const std::string& key, unsigned fallback) {
  const unsigned long long v = f.unsigned_integer(key, fallback);
  if (v > UINT_MAX) f.fail(key, "is too large");
  return static_cast<unsigned>(v);
}

int milliwatts(json_fields& f, const std::string& key, int fallback_mw) {
  if (!f.has(key)) return fallback_mw;
  const double w = f.number(key, 0.0);
  if (w < 0.0) return -1;  // unknown, as the driver writes it
  if (w > 2.0e6) f.fail(key, "is too large");
  return static_cast<int>(std::lround(w * 1000.0));
}

void parse_health(json_fields& f, health& h) {
  h.gpu_mhz = f.non_negative("gpu_mhz", h.gpu_mhz);
  h.gpu_max_mhz = f.non_negative("gpu_max_mhz", h.gpu_max_mhz);
  h.mem_mhz = f.non_negative("mem_mhz", h.mem_mhz);
  h.throttle_reasons = to_uint(f, "throttle_reasons", h.throttle_reasons);
  h.temperature_c = f.number("temperature_c", h.temperature_c);
  h.memory_temperature_c = f.number("memory_temperature_c", h.memory_temperature_c);
  h.memory_total_bytes = f.unsigned_integer("memory_total_bytes", h.memory_total_bytes);
  h.memory_used_bytes = f.unsigned_integer("memory_used_bytes", h.memory_used_bytes);
  h.utilization_percent = f.non_negative("utilization_percent", h.utilization_percent);
  h.ras_correctable = f.unsigned_integer("ras_correctable", h.ras_correctable);
  h.ras_uncorrectable = f.unsigned_integer("ras_uncorrectable", h.ras_uncorrectable);
  h.pcie_gen = static_cast<int>(f.number("pcie_gen", h.pcie_gen));
  h.pcie_width = static_cast<int>(f.number("pcie_width", h.pcie_width));
  f.finish();
}

device parse_device(const json& j, unsigned index, unsigned top_latency_us) {
  json_fields f(j, "devices[" + std::to_string(index) + "]");
  device d;
  d.index = index;
  d.name = f.string("name", "Intel(R) Data Center GPU Max 1550");
  for (unsigned k = 0; k < 16; ++k)
    d.uuid[k] = static_cast<std::uint8_t>(k == 0 ? 0x86 : k == 15 ? index : 0);
  d.bus = 0x3a + index * 0x10;
  const std::string pci = f.string("pci_bus_id", "");
  if (!pci.empty() &&
      std::sscanf(pci.c_str(), "%x:%x:%x.%x", &d.domain, &d.bus, &d.dev, &d.function) != 4) {
    f.fail("pci_bus_id", "must look like 0000:3a:00.0");
  }
  d.stacks = to_uint(f, "stacks", 1);
  if (d.stacks < 1 || d.stacks > 4) f.fail("stacks", "must be 1 to 4");
  d.latency_us = to_uint(f, "latency_us", top_latency_us);
  if (f.has("energy_counter")) {
    json_fields c(f.at("energy_counter"), f.sub("energy_counter"));
    d.counter_supported = c.boolean("supported", true);
    d.update_s = c.non_negative("update_ms", 0.0) / 1000.0;
    d.phase_s = c.number("phase_ms", 0.0) / 1000.0;
    d.initial_uj = c.unsigned_integer("initial_uj", 0);
    const std::string where = c.string("domains", "card");
    if (where == "card") {
      d.where = domains::card;
    } else if (where == "package") {
      d.where = domains::package;
    } else if (where == "stacks") {
      d.where = domains::stacks;
    } else if (where == "unknown") {
      d.where = domains::unknown;
    } else {
      c.fail("domains", "must be card, package, stacks or unknown");
    }
    c.finish();
  }
  if (f.has("limits")) {
    json_fields l(f.at("limits"), f.sub("limits"));
    d.default_limit_mw = milliwatts(l, "default_w", d.default_limit_mw);
    d.min_limit_mw = milliwatts(l, "min_w", d.min_limit_mw);
    d.max_limit_mw = milliwatts(l, "max_w", d.max_limit_mw);
    d.limit_settable = l.boolean("settable", true);
    d.limits_supported = l.boolean("supported", true);
    d.limits_ext = l.boolean("ext", true);
    if (d.min_limit_mw > d.max_limit_mw) l.fail("min_w", "exceeds max_w");
    l.finish();
  }
  d.step_time_factor = fake_gpu::parse_step_curve(f);
  char text[40];
  const std::uint8_t* u = d.uuid;
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                u[15]);
  d.uuid_text = text;
  d.power = fake_gpu::parse_power(f, static_cast<unsigned>(std::max(d.default_limit_mw, 0)));
  if (f.has("health")) {
    json_fields h(f.at("health"), f.sub("health"));
    parse_health(h, d.state);
  }
  fake_gpu::parse_faults(f, d.faults, 0x78000003, result_code);
  f.finish();
  return d;
}

}  // namespace

long long result_code(json_fields& f, const std::string& key) {
  const json& v = f.at(key);
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_string()) {
    std::string name = v.get<std::string>();
    if (name.rfind("ZE_RESULT_ERROR_", 0) == 0) name = name.substr(16);
    for (const auto& [n, code] : kResults) {
      if (name == n) return code;
    }
  }
  f.fail(key, "must be a ze_result_t such as \"DEVICE_LOST\" or its number");
}

std::uint64_t device::energy_uj(double t, unsigned share_of) const {
  const double q = fake_gpu::counter_instant(t, update_s, phase_s);
  const double r = faults.last_reset_before(q);
  const double joules = r < 0.0 ? power->energy_j(q) : power->energy_j(q) - power->energy_j(r);
  const double uj = std::max(std::floor(joules * 1e6 / share_of), 0.0);
  return (r < 0.0 ? initial_uj / share_of : 0) + static_cast<std::uint64_t>(uj);
}

const component* scenario::of(const void* handle, component::kind k) const {
  const auto p = reinterpret_cast<std::uintptr_t>(handle);
  const auto base = reinterpret_cast<std::uintptr_t>(components.data());
  if (p < base || p >= base + components.size() * sizeof(component)) return nullptr;
  if ((p - base) % sizeof(component) != 0) return nullptr;
  const component& c = components[(p - base) / sizeof(component)];
  return c.what == k ? &c : nullptr;
}

std::unique_ptr<scenario> parse_scenario(const std::string& text) {
  const json j = json::parse(text);
  auto s = std::make_unique<scenario>();
  json_fields f(j, "scenario");
  s->has_zes_init = f.boolean("zes_init", true);
  s->driver_version = f.string("driver_version", "1.3.29735");
  if (f.has("init_error")) s->init_error = result_code(f, "init_error");
  const unsigned latency_us = to_uint(f, "latency_us", 0);
  if (!f.has("devices") || !f.at("devices").is_array()) f.fail("devices", "must be an array");
  const json& list = f.at("devices");
  for (std::size_t i = 0; i < list.size(); ++i)
    s->devices.push_back(parse_device(list[i], static_cast<unsigned>(i), latency_us));
  f.finish();
  using k = component::kind;
  for (device& d : s->devices)
    s->components.push_back({k::device, &d, 0, false});
  for (device& d : s->devices) {
    if (d.where == domains::stacks) {
      for (unsigned st = 0; st < d.stacks; ++st)
        s->components.push_back({k::power, &d, st, true});
    } else {
      s->components.push_back({k::power, &d, 0, false});
    }
    s->components.push_back({k::frequency, &d, 0, false});    // ZES_FREQ_DOMAIN_GPU
    s->components.push_back({k::frequency, &d, 1, false});    // ZES_FREQ_DOMAIN_MEMORY
    s->components.push_back({k::temperature, &d, 1, false});  // ZES_TEMP_SENSORS_GPU
    s->components.push_back({k::temperature, &d, 2, false});  // ZES_TEMP_SENSORS_MEMORY
    s->components.push_back({k::memory, &d, 0, false});
    s->components.push_back({k::engine, &d, 0, false});  // ZES_ENGINE_GROUP_ALL
    s->components.push_back({k::ras, &d, 0, false});     // correctable
    s->components.push_back({k::ras, &d, 1, false});     // uncorrectable
  }
  return s;
}

}  // namespace fake_ze
