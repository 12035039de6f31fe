#include "scripted_backend.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace joules::testing {
namespace {

std::int64_t to_ns(double s) {
  return std::llround(s * 1e9);
}

bool within(const std::vector<std::pair<double, double>>& spans, double t) {
  for (const auto& [from, to] : spans)
    if (t >= from && t < to) return true;
  return false;
}

constexpr int kReadError = 999;  // NVML_ERROR_UNKNOWN

}  // namespace

device_info scripted_gpu(unsigned index) {
  device_info d;
  d.index = index;
  d.uuid = "GPU-scripted-" + std::to_string(index);
  d.name = "Scripted GPU";
  d.has_energy_counter = true;
  d.power = power_source::field_instant;
  return d;
}

namespace {
std::vector<double> times_of(const std::vector<std::pair<std::size_t, double>>& reads,
                             std::size_t i, double from) {
  std::vector<double> out;
  for (const auto& [device, start] : reads)
    if (device == i && start >= from) out.push_back(start);
  return out;
}
}  // namespace

std::vector<double> script::read_times(std::size_t i, double from) const {
  return times_of(reads_, i, from);
}

std::vector<double> script::counter_read_times(std::size_t i, double from) const {
  return times_of(counter_reads_, i, from);
}

double script::power_w(std::size_t i, double t) const {
  double p = 0.0;
  for (const auto& [from, w] : devices_[i].power) {
    if (from > t) break;
    p = w;
  }
  return p;
}

double script::energy_j(std::size_t i, double t) const {
  const auto& segments = devices_[i].power;
  double e = 0.0;
  for (std::size_t k = 0; k < segments.size() && segments[k].first < t; ++k) {
    const double end = k + 1 < segments.size() ? std::min(t, segments[k + 1].first) : t;
    e += segments[k].second * (end - segments[k].first);
  }
  return e;
}

double script::update_at_or_before(std::size_t i, double t) const {
  const auto& d = devices_[i];
  if (d.quantum_s <= 0.0) return t;
  // In integer nanoseconds: an update exactly at a read must be seen by it.
  const std::int64_t q = to_ns(d.quantum_s);
  const std::int64_t since = to_ns(t) - to_ns(d.phase_s);
  const std::int64_t k = since >= 0 ? since / q : -((-since + q - 1) / q);
  return static_cast<double>(to_ns(d.phase_s) + k * q) / 1e9;
}

device_reading script::answer(std::size_t i, double t) const {
  const auto& d = devices_[i];
  device_reading r;
  if (d.lost_at && t >= *d.lost_at) {
    r.status = read_status::lost;
    return r;
  }
  if (within(d.errors, t)) {
    r.status = read_status::error;
    r.error_code = kReadError;
    return r;
  }
  if (d.info.power != power_source::none) r.power = watts{power_w(i, t)};
  if (d.counter_unsupported_at && t >= *d.counter_unsupported_at) {
    r.counter_unsupported = true;
    return r;
  }
  if (!d.info.has_energy_counter) return r;
  const bool reset = d.reset_at && t >= *d.reset_at;
  const double u = update_at_or_before(i, t);
  double e = energy_j(i, u);
  if (reset) e = u >= *d.reset_at ? e - energy_j(i, *d.reset_at) : 0.0;
  // The device truncates, as NVML's mJ and RAPL's µJ do; the epsilon keeps 0.3 J * 1000 from
  // coming out as 299.
  const double scale = d.energy_uj ? 1e6 : 1e3;
  std::uint64_t raw = static_cast<std::uint64_t>(std::floor(e * scale + 1e-6));
  if (!reset) raw += d.counter_start;
  if (d.info.wrap) raw %= d.info.wrap->modulus;
  if (d.energy_uj) {
    r.energy_uj = raw;
  } else {
    r.energy_mj = raw;
  }
  return r;
}

scripted_backend::scripted_backend(fake_clock& clock, mono_time origin, script& s)
    : clock_(clock), origin_(origin), script_(s) {
  for (const auto& d : script_.devices())
    infos_.push_back(d.info);
  meta_.backend = "scripted";
}

device_reading scripted_backend::read(std::size_t i, read_what what) {
  const auto& d = script_.devices()[i];
  const double start = seconds_between(origin_, clock_.now());
  const bool power_only = what == read_what::power;
  const auto& cost = power_only && d.power_read_s ? d.power_read_s : d.read_s;
  const auto took = std::chrono::nanoseconds(cost ? to_ns(cost(start)) : 0);
  clock_.advance_by(took / 2);
  const double t = seconds_between(origin_, clock_.now());
  script_.record(i, start, power_only);
  device_reading r = script_.answer(i, t);
  if (power_only) {
    r.energy_mj.reset();
    r.energy_uj.reset();
    r.energy_counts.reset();
  }
  clock_.advance_by(took - took / 2);
  return r;
}

}  // namespace joules::testing
