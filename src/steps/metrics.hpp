#pragma once
// Training metrics printed on log lines, with normalised names and SI units.
//
// Names: lower-case snake_case from the printed key, with the common ones unified across
// trainers (loss, val_loss, lr, grad_norm, mfu, tokens_per_s, samples_per_s, step_time_s, epoch).
// Units: converted to SI base units and named in the key: "time 123.45ms" -> step_time_s 0.12345,
// "memory: 66.91GiB" -> memory_bytes, "train_time:409ms" -> train_time_s 0.409.  A percentage
// stays as printed and its name ends in _percent ("mfu 45.67%" -> mfu_percent 45.67); an "mfu"
// printed without % is kept as printed under "mfu" (Composer prints a fraction there).  Pure.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace joules::steps {

struct metric {
  std::string name;
  double value = 0.0;

  bool operator==(const metric&) const = default;
};

enum class metric_style {
  kv,      // only "key: value", "key=value", "key:value" pairs (and values named by their unit)
  spaced,  // also "key value" fields: nanoGPT, llm.c, fairseq, the PyTorch ImageNet example
};

// The normalised name of a printed key and unit, and the scale to SI: value * factor / divisor
// (dividing keeps 409 ms exactly 0.409 s).
struct metric_naming {
  std::string name;
  double factor = 1.0;
  double divisor = 1.0;
  double apply(double v) const { return v * factor / divisor; }
};
std::optional<metric_naming> name_metric(std::string_view key, std::string_view unit);

// A cache of name_metric: a trainer prints the same keys on every step line, and naming a key
// costs more than reading its value.  Bounded in size.  Not thread-safe.
class metric_namer {
 public:
  // nullptr when the key is not a metric.
  const metric_naming* find(std::string_view key, std::string_view unit);

 private:
  static constexpr std::size_t kMaxEntries = 1024;
  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::optional<metric_naming>, hash, std::equal_to<>> cache_;
  std::optional<metric_naming> overflow_;
};

// Appends the metrics printed in `text`; the first occurrence of a name wins.  With a namer,
// names are looked up in its cache.
void scan_metrics(std::string_view text, metric_style style, std::vector<metric>& out,
                  metric_namer* namer = nullptr);

// One printed (key, value, unit) as a metric, or nullopt for keys that are not metrics (step
// counters, ETAs, version numbers).  `key` as printed ("elapsed time per iteration (ms)",
// "'learning_rate'", "Tokens/s/device"); `unit` as printed after the value ("ms", "GiB", "%",
// "tok/s") or empty.
std::optional<metric> normalise_metric(std::string_view key, double value, std::string_view unit);

}  // namespace joules::steps
