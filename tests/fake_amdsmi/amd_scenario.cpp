// Scenario JSON -> scenario, with the README's defaults; the energy and power models.

#include "amd_scenario.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "power_spec.hpp"

namespace fake_amdsmi {
namespace {

using nlohmann::json;

// AMD SMI's status codes by name (amdsmi.h), for `init_error` and error faults.
constexpr std::pair<const char*, long long> kStatusNames[] = {
    {"INVAL", 1},
    {"NOT_SUPPORTED", 2},
    {"NOT_YET_IMPLEMENTED", 3},
    {"API_FAILED", 7},
    {"TIMEOUT", 8},
    {"RETRY", 9},
    {"NO_PERM", 10},
    {"IO", 12},
    {"INIT_ERROR", 18},
    {"BUSY", 30},
    {"NOT_FOUND", 31},
    {"DRIVER_NOT_LOADED", 34},
    {"NO_DATA", 40},
    {"UNKNOWN_ERROR", 0xFFFFFFFFLL},
};

long long status_code(json_fields& f, const std::string& key) {
  const json& v = f.at(key);
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_string()) {
    std::string name = v.get<std::string>();
    if (name.rfind("AMDSMI_STATUS_", 0) == 0) name = name.substr(14);
    for (const auto& [n, code] : kStatusNames) {
      if (name == n) return code;
    }
  }
  f.fail(key, "must be an AMD SMI status such as \"BUSY\" or its number");
}

version parse_version(json_fields& f, const std::string& key, version fallback) {
  const std::string text = f.string(key, "");
  if (text.empty()) return fallback;
  version v;
  if (std::sscanf(text.c_str(), "%u.%u.%u", &v.major, &v.minor, &v.release) < 2) {
    f.fail(key, "must look like 24.7.0");
  }
  return v;
}

unsigned to_uint(json_fields& f, const std::string& key, unsigned fallback) {
  const unsigned long long v = f.unsigned_integer(key, fallback);
  if (v > UINT_MAX) f.fail(key, "is too large");
  return static_cast<unsigned>(v);
}

unsigned watts_to_mw(json_fields& f, const std::string& key, double fallback_w) {
  const double w = f.non_negative(key, fallback_w);
  if (w > 4.0e6) f.fail(key, "is too large");
  return static_cast<unsigned>(std::llround(w * 1000.0));
}

void parse_health(json_fields& f, health& h) {
  h.gfx_activity = to_uint(f, "gfx_activity", h.gfx_activity);
  h.umc_activity = to_uint(f, "umc_activity", h.umc_activity);
  h.vram_total_mb = to_uint(f, "vram_total_mb", h.vram_total_mb);
  h.vram_used_mb = to_uint(f, "vram_used_mb", h.vram_used_mb);
  h.hotspot_c = static_cast<long long>(f.number("hotspot_c", static_cast<double>(h.hotspot_c)));
  h.vram_c = static_cast<long long>(f.number("vram_c", static_cast<double>(h.vram_c)));
  h.gfx_mhz = to_uint(f, "gfx_mhz", h.gfx_mhz);
  h.mem_mhz = to_uint(f, "mem_mhz", h.mem_mhz);
  h.ecc_correctable = f.unsigned_integer("ecc_correctable", h.ecc_correctable);
  h.ecc_uncorrectable = f.unsigned_integer("ecc_uncorrectable", h.ecc_uncorrectable);
  h.pcie_width = to_uint(f, "pcie_width", h.pcie_width);
  h.pcie_speed_mt = to_uint(f, "pcie_speed_mt", h.pcie_speed_mt);
  h.power_capped = f.boolean("power_capped", h.power_capped);
  f.finish();
}

gpu parse_gpu(const json& j, unsigned index, unsigned top_latency_us) {
  json_fields f(j, "devices[" + std::to_string(index) + "]");
  gpu g;
  g.index = index;
  g.name = f.string("name", "AMD Instinct MI300X");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02xff74a1-0000-1000-8000-0000000000%02x", index, index);
  g.uuid = f.string("uuid", buf);
  g.unique_id = f.unsigned_integer("unique_id", 0x4b8ab6c15fd9e300ULL + index);
  const std::string pci = f.string("pci_bus_id", "");
  g.bus = 0x0c + index * 0x10;
  if (!pci.empty()) {
    unsigned fn = 0;
    if (std::sscanf(pci.c_str(), "%x:%x:%x.%x", &g.domain, &g.bus, &g.device, &fn) != 4)
      f.fail("pci_bus_id", "must look like 0000:0c:00.0");
  }
  g.partitions = to_uint(f, "partitions", 1);
  if (g.partitions < 1 || g.partitions > 8) f.fail("partitions", "must be 1 to 8");
  g.latency_us = to_uint(f, "latency_us", top_latency_us);
  if (f.has("energy_counter")) {
    json_fields c(f.at("energy_counter"), f.sub("energy_counter"));
    g.counter.supported = c.boolean("supported", true);
    g.counter.update_s = c.non_negative("update_ms", g.counter.update_s * 1000.0) / 1000.0;
    g.counter.phase_s = c.number("phase_ms", 0.0) / 1000.0;
    g.counter.unit_uj = c.number("unit_uj", g.counter.unit_uj);
    if (!(g.counter.unit_uj > 0.0)) c.fail("unit_uj", "must be positive");
    g.counter.resolution_uj = static_cast<float>(c.number("resolution_uj", 15.3));
    g.counter.initial_counts = c.unsigned_integer("initial_counts", 0);
    c.finish();
  }
  if (f.has("socket_power")) {
    json_fields p(f.at("socket_power"), f.sub("socket_power"));
    g.socket_power.current = p.boolean("current", true);
    g.socket_power.average = p.boolean("average", !g.socket_power.current);
    g.socket_power.update_s = p.non_negative("update_ms", 0.0) / 1000.0;
    g.socket_power.window_s = p.non_negative("window_ms", 0.0) / 1000.0;
    p.finish();
  }
  unsigned current_mw = g.default_limit_mw;
  if (f.has("limits")) {
    json_fields l(f.at("limits"), f.sub("limits"));
    g.default_limit_mw = watts_to_mw(l, "default_w", 750.0);
    g.min_limit_mw = watts_to_mw(l, "min_w", 0.0);
    g.max_limit_mw = watts_to_mw(l, "max_w", 750.0);
    current_mw = watts_to_mw(l, "current_w", g.default_limit_mw / 1000.0);
    g.limit_settable = l.boolean("settable", true);
    g.limits_supported = l.boolean("supported", true);
    if (g.min_limit_mw > g.max_limit_mw) l.fail("min_w", "exceeds max_w");
    l.finish();
  }
  g.step_time_factor = fake_gpu::parse_step_curve(f);
  g.power = fake_gpu::parse_power(f, current_mw);
  if (f.has("health")) {
    json_fields h(f.at("health"), f.sub("health"));
    parse_health(h, g.state);
  }
  fake_gpu::parse_faults(f, g.faults, 2, status_code);
  f.finish();
  return g;
}

}  // namespace

std::uint64_t gpu::counts(double t) const {
  const double q = fake_gpu::counter_instant(t, counter.update_s, counter.phase_s);
  const double r = faults.last_reset_before(q);
  const double joules = r < 0.0 ? power->energy_j(q) : power->energy_j(q) - power->energy_j(r);
  const double n = std::max(std::floor(joules * 1e6 / counter.unit_uj), 0.0);
  // A reset (a driver reload) starts the accumulator again from 0; the wrap at 2^64 comes from
  // unsigned arithmetic.
  return (r < 0.0 ? counter.initial_counts : 0) + static_cast<std::uint64_t>(n);
}

unsigned gpu::watts(double t) const {
  const power_config& p = socket_power;
  const double tau = p.update_s > 0.0 ? p.update_s * std::floor(t / p.update_s) : t;
  const double w = p.window_s > 0.0
                       ? (power->energy_j(tau) - power->energy_j(tau - p.window_s)) / p.window_s
                       : power->watts_at(tau);
  return static_cast<unsigned>(std::clamp<long long>(std::llround(w), 0, 65534));
}

const processor* scenario::of(const void* handle) const {
  // Handles are addresses of processors; anything else is refused rather than dereferenced.
  const auto p = reinterpret_cast<std::uintptr_t>(handle);
  const auto base = reinterpret_cast<std::uintptr_t>(processors.data());
  if (p < base || p >= base + processors.size() * sizeof(processor)) return nullptr;
  if ((p - base) % sizeof(processor) != 0) return nullptr;
  return &processors[(p - base) / sizeof(processor)];
}

void* scenario::handle(const processor& p) const {
  return const_cast<processor*>(&p);
}

std::unique_ptr<scenario> parse_scenario(const std::string& text) {
  const json j = json::parse(text);
  auto s = std::make_unique<scenario>();
  json_fields f(j, "scenario");
  s->library = parse_version(f, "library_version", s->library);
  s->rocm_smi = parse_version(f, "rocm_smi_version", s->rocm_smi);
  s->driver_version = f.string("driver_version", "6.8.5");
  if (f.has("init_error")) s->init_error = status_code(f, "init_error");
  const unsigned latency_us = to_uint(f, "latency_us", 0);
  if (!f.has("devices") || !f.at("devices").is_array()) f.fail("devices", "must be an array");
  const json& devices = f.at("devices");
  for (std::size_t i = 0; i < devices.size(); ++i)
    s->gpus.push_back(parse_gpu(devices[i], static_cast<unsigned>(i), latency_us));
  f.finish();
  for (gpu& g : s->gpus) {
    for (unsigned p = 0; p < g.partitions; ++p)
      s->processors.push_back(processor{&g, p});
  }
  return s;
}

}  // namespace fake_amdsmi
