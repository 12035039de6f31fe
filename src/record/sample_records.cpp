#include "record/sample_records.hpp"

#include <algorithm>
#include <cmath>

#include "util/json_writer.hpp"

namespace joules {
namespace {

constexpr double kHzPerMhz = 1e6;

void write_stat(json_writer& j, std::string_view key, std::uint64_t n, double min, double mean,
                double max) {
  j.key(key);
  if (n == 0) {
    j.null();
    return;
  }
  j.begin_object().field("min", min).field("mean", mean).field("max", max).end_object();
}

}  // namespace

void sample_buckets::stat::add(double v) {
  if (n == 0) {
    min = max = v;
  }
  min = std::min(min, v);
  max = std::max(max, v);
  sum += v;
  ++n;
}

sample_buckets::sample_buckets(const run_context& ctx, std::chrono::milliseconds base)
    : ctx_(ctx),
      base_s_(std::chrono::duration<double>(base).count()),
      devices_(ctx.devices.size()),
      energy_seen_(ctx.devices.size(), false) {
  start_s_ = monotonic_seconds(ctx.start_mono);
  end_s_ = base_s_;
}

double sample_buckets::width_at(double offset_s, double base_s) {
  double w = base_s;
  // Doubles at kBucketsPerWidth widths, 2x that, 4x that, ...: at most 64 doublings.
  for (int k = 0; k < 64 && offset_s >= static_cast<double>(kBucketsPerWidth) * w; ++k)
    w *= 2.0;
  return w;
}

void sample_buckets::reset_bucket() {
  readings_ = 0;
  for (auto& d : devices_) {
    const bool moved = d.energy_end.has_value();
    const auto energy = moved ? d.energy_end : d.energy_start;
    const auto t = moved ? d.t_end : d.t_start;
    d = device_acc{};
    d.energy_start = energy;
    d.t_start = t;
  }
}

std::vector<std::string> sample_buckets::add(double t_s, const std::vector<sample_reading>& r,
                                             std::optional<double> end_s) {
  std::vector<std::string> out;
  if (t_s < start_s_) {
    // Before the run: only the energy the first bucket counts from.
    for (std::size_t k = 0; k < devices_.size() && k < r.size(); ++k) {
      if (!r[k].energy_j) continue;
      devices_[k].energy_start = r[k].energy_j;
      devices_[k].t_start = t_s;
      energy_seen_[k] = true;
    }
    return out;
  }
  const double at = end_s ? std::min(t_s, *end_s) : t_s;
  while (at - start_s_ >= end_s_) {
    // A bucket without readings (a tick that slipped past it, a stalled driver) is joined to the
    // next one: buckets follow each other without gaps.
    if (readings_ > 0) {
      out.push_back(close_bucket(end_s_));
      reset_bucket();
      bucket_s_ = end_s_;
    }
    // Edges are multiples of the width: rounded to one, so that adding widths does not drift.
    const double width = width_at(end_s_, base_s_);
    end_s_ = std::round((end_s_ + width) / width) * width;
  }
  ++readings_;
  for (std::size_t k = 0; k < devices_.size() && k < r.size(); ++k) {
    device_acc& d = devices_[k];
    const sample_reading& x = r[k];
    if (x.power_w) d.power_w.add(*x.power_w);
    if (x.energy_j) {
      // The first energy known, with none before the start: it counts from the sampler's
      // first reading, just before the start.
      if (!energy_seen_[k] && !d.energy_start) {
        d.energy_start = 0.0;
        d.t_start = start_s_;
      }
      energy_seen_[k] = true;
      d.energy_end = x.energy_j;
      d.t_end = t_s;
    }
    d.lost = d.lost || x.lost;
    if (x.health == nullptr) continue;
    const health_reading& h = *x.health;
    if (h.gpu_util_percent) d.gpu_util.add(static_cast<double>(*h.gpu_util_percent));
    if (h.memory_util_percent) d.memory_util.add(static_cast<double>(*h.memory_util_percent));
    if (h.temperature_c) d.temperature_c.add(*h.temperature_c);
    if (h.sm_clock_mhz) d.sm_clock_hz.add(static_cast<double>(*h.sm_clock_mhz) * kHzPerMhz);
    if (h.memory_clock_mhz) {
      d.memory_clock_hz.add(static_cast<double>(*h.memory_clock_mhz) * kHzPerMhz);
    }
    if (h.throttle) {
      for (auto& e : h.throttle->active()) {
        if (std::find(d.clock_events.begin(), d.clock_events.end(), e) == d.clock_events.end())
          d.clock_events.push_back(std::move(e));
      }
    }
  }
  return out;
}

std::vector<std::string> sample_buckets::finish(double end_s) {
  std::vector<std::string> out;
  const double end = std::max(end_s - start_s_, bucket_s_);
  if (readings_ > 0 && end > bucket_s_) out.push_back(close_bucket(std::min(end, end_s_)));
  reset_bucket();
  return out;
}

std::string sample_buckets::close_bucket(double end_offset_s) {
  json_writer j;
  j.begin_object();
  common_record_fields(j, "sample", ctx_);
  j.field("bucket", index_++);
  j.field("start_monotonic_s", start_s_ + bucket_s_)
      .field("end_monotonic_s", start_s_ + end_offset_s)
      .field("duration_s", end_offset_s - bucket_s_)
      .field("offset_s", bucket_s_);
  j.field("readings", readings_);
  // Each device's energy and the time it covers (a device that gave no reading has none).
  auto energy_of = [](const device_acc& d) -> std::optional<double> {
    if (!d.energy_start || !d.energy_end) return std::nullopt;
    return std::max(0.0, *d.energy_end - *d.energy_start);
  };
  auto span_of = [](const device_acc& d) {
    return d.t_start && d.t_end ? *d.t_end - *d.t_start : 0.0;
  };
  std::optional<double> total;
  std::optional<double> power;
  for (const auto& d : devices_) {
    const auto e = energy_of(d);
    if (!e) continue;
    total = total.value_or(0.0) + *e;
    if (span_of(d) > 0) power = power.value_or(0.0) + *e / span_of(d);
  }
  j.field("energy_j", total);
  j.field("avg_power_w", power);
  j.key("devices").begin_array();
  for (std::size_t k = 0; k < devices_.size() && k < ctx_.devices.size(); ++k) {
    const device_acc& d = devices_[k];
    const device_info& info = ctx_.devices[k];
    const std::optional<double> energy = energy_of(d);
    const double span = span_of(d);
    j.begin_object();
    j.field("kind", to_string(info.kind)).field("index", info.index).field("uuid", info.uuid);
    j.field("energy_j", energy);
    // The mean is the energy over the time it covers (exact for counters), else the readings'.
    std::optional<double> mean;
    if (energy && span > 0) {
      mean = *energy / span;
    } else if (d.power_w.n > 0) {
      mean = d.power_w.sum / static_cast<double>(d.power_w.n);
    }
    j.key("power_w");
    if (!mean && d.power_w.n == 0) {
      j.null();
    } else {
      j.begin_object();
      j.field("min", d.power_w.n ? std::optional(d.power_w.min) : std::nullopt);
      j.field("mean", mean);
      j.field("max", d.power_w.n ? std::optional(d.power_w.max) : std::nullopt);
      j.end_object();
    }
    auto stat_field = [&](std::string_view key, const stat& s) {
      write_stat(j, key, s.n, s.min, s.n ? s.sum / static_cast<double>(s.n) : 0.0, s.max);
    };
    stat_field("gpu_util_percent", d.gpu_util);
    stat_field("memory_util_percent", d.memory_util);
    stat_field("temperature_c", d.temperature_c);
    stat_field("sm_clock_hz", d.sm_clock_hz);
    stat_field("memory_clock_hz", d.memory_clock_hz);
    j.key("clock_events").begin_array();
    for (const auto& e : d.clock_events)
      j.value(e);
    j.end_array();
    j.field("lost", d.lost);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  ++written_;
  return j.take();
}

}  // namespace joules
