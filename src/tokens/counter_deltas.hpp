#pragma once
// Token counts between two scrapes of one server, from its cumulative counters, the way
// Prometheus' rate() reads counters
// (https://prometheus.io/docs/prometheus/latest/querying/functions/#rate): each series on its own;
// a series whose value went down was reset (the server restarted), so its increase is its new
// value, counted from zero; a series that appeared since the previous scrape counts from zero too.
// After a gap (a failed scrape) forget() makes the next page a new baseline: what happened while
// the server did not answer is not attributed at all.
//
// Pure; not thread-safe (one per source).

#include <array>
#include <optional>
#include <string>
#include <unordered_map>

#include "tokens/server_page.hpp"

namespace joules::tokens {

struct count_deltas {
  std::array<double, kCountKinds> count{};  // by count_kind
  std::array<bool, kCountKinds> known{};
  int resets = 0;  // series that went down (restarts seen)
};

class counter_deltas {
 public:
  // The increase since the previous reading; nullopt for the first reading after construction
  // or forget() (a baseline).
  std::optional<count_deltas> update(const page_reading& r);
  void forget() { have_ = false; }

 private:
  std::array<std::unordered_map<std::string, double>, kCountKinds> last_;
  bool have_ = false;
};

}  // namespace joules::tokens
