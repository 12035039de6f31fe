// Scenario JSON -> scenario, with the README's defaults; the energy and power models; the
// process-wide state of the fake HLML.

#include "hlml_scenario.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <utility>

#include "fake_runtime.hpp"
#include "json_fields.hpp"
#include "power_spec.hpp"

namespace fake_hlml {
namespace {

using fake_gpu::json_fields;
using nlohmann::json;

// HLML's return codes by name (hlml.h), for `init_error` and error faults.
constexpr std::pair<const char*, long long> kHlmlReturnNames[] = {
    {"UNINITIALIZED", 1},     {"INVALID_ARGUMENT", 2}, {"NOT_SUPPORTED", 3}, {"NOT_FOUND", 6},
    {"DRIVER_NOT_LOADED", 9}, {"TIMEOUT", 10},         {"AIP_IS_LOST", 15},  {"MEMORY", 20},
    {"NO_DATA", 21},          {"UNKNOWN", 49},
};

long long hlml_return_code(json_fields& f, const std::string& key) {
  const json& v = f.at(key);
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_string()) {
    std::string name = v.get<std::string>();
    if (name.rfind("HLML_ERROR_", 0) == 0) name = name.substr(11);
    for (const auto& [n, code] : kHlmlReturnNames) {
      if (name == n) return code;
    }
  }
  f.fail(key, "must be an HLML return code such as \"TIMEOUT\" or its number");
}

unsigned hlml_uint(json_fields& f, const std::string& key, unsigned fallback) {
  const unsigned long long v = f.unsigned_integer(key, fallback);
  if (v > UINT_MAX) f.fail(key, "is too large");
  return static_cast<unsigned>(v);
}

void parse_hlml_health(json_fields& f, health& h) {
  h.aip_util = hlml_uint(f, "utilization", h.aip_util);
  h.memory_total = f.unsigned_integer("memory_total_bytes", h.memory_total);
  h.memory_used = f.unsigned_integer("memory_used_bytes", h.memory_used);
  h.aip_c = hlml_uint(f, "aip_c", h.aip_c);
  h.board_c = hlml_uint(f, "board_c", h.board_c);
  h.soc_mhz = hlml_uint(f, "soc_mhz", h.soc_mhz);
  h.soc_max_mhz = hlml_uint(f, "soc_max_mhz", h.soc_max_mhz);
  f.finish();
}

device parse_device(const json& j, unsigned index, unsigned top_latency_us) {
  json_fields f(j, "devices[" + std::to_string(index) + "]");
  device d;
  d.index = index;
  d.name = f.string("name", "HL-225");
  char buf[64];
  std::snprintf(buf, sizeof buf, "01-%02x-gaudi-0000-0000-00000000", index);
  d.uuid = f.string("uuid", buf);
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", 0x19 + index * 0x10);
  d.pci_bus_id = f.string("pci_bus_id", buf);
  d.latency_us = hlml_uint(f, "latency_us", top_latency_us);
  if (f.has("energy_counter")) {
    json_fields c(f.at("energy_counter"), f.sub("energy_counter"));
    d.counter.supported = c.boolean("supported", true);
    d.counter.update_s = c.non_negative("update_ms", d.counter.update_s * 1000.0) / 1000.0;
    d.counter.phase_s = c.number("phase_ms", 0.0) / 1000.0;
    d.counter.initial_mj = c.unsigned_integer("initial_mj", 0);
    c.finish();
  }
  if (f.has("power_usage")) {
    json_fields p(f.at("power_usage"), f.sub("power_usage"));
    d.power_usage.supported = p.boolean("supported", true);
    d.power_usage.update_s = p.non_negative("update_ms", 0.0) / 1000.0;
    p.finish();
  }
  const double limit_w = f.non_negative("default_limit_w", 600.0);
  if (limit_w > 4.0e6) f.fail("default_limit_w", "is too large");
  d.default_limit_mw = static_cast<unsigned>(std::llround(limit_w * 1000.0));
  d.power = fake_gpu::parse_power(f, d.default_limit_mw);
  if (f.has("health")) {
    json_fields h(f.at("health"), f.sub("health"));
    parse_hlml_health(h, d.state);
  }
  fake_gpu::parse_faults(f, d.faults, 3, hlml_return_code);
  f.finish();
  return d;
}

std::mutex g_hlml_mutex;
int g_hlml_refcount = 0;
std::atomic<const scenario*> g_hlml_current{nullptr};
// Never freed, so that handles stay valid and a thread still calling at exit finds them.
auto* g_hlml_loaded = new std::vector<std::unique_ptr<scenario>>();
auto* g_hlml_last_text = new std::string();
auto* g_hlml_clock = new fake_gpu::scenario_clock("FAKE_HLML");

void explain_hlml(const std::string& why) {
  std::fprintf(stderr, "fake_hlml: %s; init fails\n", why.c_str());
}

}  // namespace

std::uint64_t device::energy_mj(double t) const {
  const double q = fake_gpu::counter_instant(t, counter.update_s, counter.phase_s);
  const double r = faults.last_reset_before(q);
  const double joules = r < 0.0 ? power->energy_j(q) : power->energy_j(q) - power->energy_j(r);
  const double n = std::max(std::floor(joules * 1000.0), 0.0);
  // A reset (a driver reload) starts the counter again from 0.
  return (r < 0.0 ? counter.initial_mj : 0) + static_cast<std::uint64_t>(n);
}

unsigned device::power_mw(double t) const {
  const double tau =
      power_usage.update_s > 0.0 ? power_usage.update_s * std::floor(t / power_usage.update_s) : t;
  const double mw = std::round(power->watts_at(tau) * 1000.0);
  return static_cast<unsigned>(std::clamp(mw, 0.0, 4.0e9));
}

const device* scenario::of(const void* handle) const {
  // Handles are addresses of devices; anything else is refused rather than dereferenced.
  const auto p = reinterpret_cast<std::uintptr_t>(handle);
  const auto base = reinterpret_cast<std::uintptr_t>(devices.data());
  if (p < base || p >= base + devices.size() * sizeof(device)) return nullptr;
  if ((p - base) % sizeof(device) != 0) return nullptr;
  return &devices[(p - base) / sizeof(device)];
}

std::unique_ptr<scenario> parse_scenario(const std::string& text) {
  const json j = json::parse(text);
  auto s = std::make_unique<scenario>();
  json_fields f(j, "scenario");
  if (f.has("init_error")) s->init_error = static_cast<int>(hlml_return_code(f, "init_error"));
  const unsigned latency_us = hlml_uint(f, "latency_us", 0);
  if (!f.has("devices") || !f.at("devices").is_array()) f.fail("devices", "must be an array");
  const json& devices = f.at("devices");
  for (std::size_t i = 0; i < devices.size(); ++i)
    s->devices.push_back(parse_device(devices[i], static_cast<unsigned>(i), latency_us));
  f.finish();
  return s;
}

int init() {
  std::lock_guard lock(g_hlml_mutex);
  if (g_hlml_refcount > 0) {
    ++g_hlml_refcount;
    return 0;
  }
  std::string text;
  std::string why;
  if (!fake_gpu::scenario_text("FAKE_HLML", text, why)) {
    explain_hlml(why);
    return -1;
  }
  // The same text keeps its state; a new one starts afresh.
  if (g_hlml_loaded->empty() || text != *g_hlml_last_text) {
    try {
      g_hlml_loaded->push_back(parse_scenario(text));
    } catch (const std::exception& e) {
      explain_hlml(std::string("bad scenario: ") + e.what());
      return -1;
    }
    *g_hlml_last_text = std::move(text);
  }
  const scenario* s = g_hlml_loaded->back().get();
  if (s->init_error != 0) return s->init_error;
  if (!g_hlml_clock->configure(why)) {
    explain_hlml(why);
    return -1;
  }
  g_hlml_current.store(s, std::memory_order_release);
  ++g_hlml_refcount;
  return 0;
}

void shutdown() {
  std::lock_guard lock(g_hlml_mutex);
  if (g_hlml_refcount > 0 && --g_hlml_refcount == 0)
    g_hlml_current.store(nullptr, std::memory_order_release);
}

const scenario* current() {
  return g_hlml_current.load(std::memory_order_acquire);
}

call::call(const void* handle) {
  const scenario* s = current();
  if (s == nullptr) {
    state_ = state::uninitialised;
    return;
  }
  dev_ = s->of(handle);
  if (dev_ == nullptr) {
    state_ = state::invalid;
    return;
  }
  t_ = g_hlml_clock->now_s();
  const unsigned latency = dev_->faults.latency_us(t_, dev_->latency_us);
  if (latency > 0) {
    fake_gpu::sleep_us(latency);
    t_ = g_hlml_clock->now_s();
  }
  if (dev_->faults.lost(t_)) state_ = state::lost;
}

long long call::fault(fake_gpu::reading_kind kind) const {
  return dev_->faults.reading_status(kind, t_, 0);
}

}  // namespace fake_hlml
