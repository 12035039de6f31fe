#include "tokens/counter_deltas.hpp"

namespace joules::tokens {

std::optional<count_deltas> counter_deltas::update(const page_reading& r) {
  count_deltas d;
  for (std::size_t k = 0; k < kCountKinds; ++k) {
    std::unordered_map<std::string, double> now;
    now.reserve(r.counts[k].size());
    for (const auto& s : r.counts[k]) {
      // A page listing a series twice: its last value, as Prometheus keeps.
      now[s.key] = s.value;
    }
    d.known[k] = r.known[k];
    if (have_) {
      for (const auto& [key, value] : now) {
        const auto before = last_[k].find(key);
        if (before == last_[k].end()) {
          d.count[k] += value;  // new since the previous scrape: counted from zero
        } else if (value < before->second) {
          d.count[k] += value;  // reset: the server restarted and counts from zero again
          ++d.resets;
        } else {
          d.count[k] += value - before->second;
        }
      }
    }
    last_[k] = std::move(now);
  }
  const bool baseline = !have_;
  have_ = true;
  if (baseline) return std::nullopt;
  return d;
}

}  // namespace joules::tokens
