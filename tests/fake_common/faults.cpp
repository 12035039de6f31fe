#include "faults.hpp"

#include <algorithm>
#include <climits>

namespace fake_gpu {

long long fault_set::reading_status(reading_kind kind, double t, long long ok) const {
  for (const status_window& w : statuses) {
    const bool named = kind == reading_kind::energy ? w.energy : w.power;
    if (named && t >= w.from_s && t < w.until_s) return w.code;
  }
  return ok;
}

unsigned int fault_set::latency_us(double t, unsigned int usual_us) const {
  for (const latency_window& w : latencies) {
    if (t >= w.from_s && t < w.until_s) return w.latency_us;
  }
  return usual_us;
}

double fault_set::last_reset_before(double q) const {
  const auto it = std::upper_bound(counter_resets_s.begin(), counter_resets_s.end(), q);
  return it == counter_resets_s.begin() ? -1.0 : *(it - 1);
}

void parse_faults(json_fields& dev, fault_set& faults, long long not_supported,
                  const error_code_fn& code_of) {
  if (!dev.has("faults")) return;
  const nlohmann::json& list = dev.at("faults");
  if (!list.is_array()) dev.fail("faults", "must be an array");
  for (std::size_t i = 0; i < list.size(); ++i) {
    json_fields f(list[i], dev.sub("faults") + "[" + std::to_string(i) + "]");
    if (!f.has("at_s")) f.fail("at_s", "is required");
    const double at = f.non_negative("at_s", 0.0);
    const double until = f.number("until_s", kForever);
    if (until <= at) f.fail("until_s", "must be after at_s");
    const std::string kind = f.string("kind", "");
    if (kind == "lost") {
      faults.lost_at_s = std::min(faults.lost_at_s, at);
    } else if (kind == "counter_reset") {
      faults.counter_resets_s.push_back(at);
    } else if (kind == "not_supported" || kind == "error") {
      fault_set::status_window w{at, until, false, false, not_supported};
      const std::string what = f.string("what", "all");
      if (what != "energy" && what != "power" && what != "all") {
        f.fail("what", "must be energy, power or all");
      }
      w.energy = what != "power";
      w.power = what != "energy";
      if (kind == "error") {
        if (!f.has("code")) f.fail("code", "is required for an error fault");
        w.code = code_of(f, "code");
      }
      faults.statuses.push_back(w);
    } else if (kind == "latency") {
      if (!f.has("latency_us")) f.fail("latency_us", "is required for a latency fault");
      const unsigned long long us = f.unsigned_integer("latency_us", 0);
      if (us > UINT_MAX) f.fail("latency_us", "is too large");
      faults.latencies.push_back({at, until, static_cast<unsigned int>(us)});
    } else {
      f.fail("kind", "must be lost, counter_reset, not_supported, error or latency");
    }
    f.finish();
  }
  std::sort(faults.counter_resets_s.begin(), faults.counter_resets_s.end());
}

}  // namespace fake_gpu
