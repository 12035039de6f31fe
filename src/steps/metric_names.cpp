// Metric names and units: one spelling per quantity across trainers, SI base units.

#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "steps/metrics.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

// Printed keys that count steps or give times of day: the step parser reads those itself.
constexpr std::array<std::string_view, 22> kNotMetrics = {"step",
                                                          "global_step",
                                                          "iter",
                                                          "iteration",
                                                          "iterations",
                                                          "it",
                                                          "num_updates",
                                                          "update",
                                                          "total",
                                                          "v_num",
                                                          "eta",
                                                          "micro_step",
                                                          "epoch_step",
                                                          "warmup_step",
                                                          "batch",
                                                          "batch_idx",
                                                          "rank",
                                                          "trainer_global_step",
                                                          "trainer_batch_idx",
                                                          "remaining_time",
                                                          "time_remaining",
                                                          "mom"};

struct alias {
  std::string_view canonical;
  std::array<std::string_view, 13> names;
};

constexpr std::array<alias, 9> kAliases = {{
    {"loss",
     {"loss", "train_loss", "lm_loss", "total_loss", "loss_train", "loss_train_total",
      "reduced_train_loss", "train_ce_loss", "train_cross_entropy_loss", "train_lm_loss",
      "loss_train_curr", "train_crossentropy_loss"}},
    {"val_loss",
     {"val_loss", "val", "eval_loss", "valid_loss", "validation_loss", "lm_loss_value",
      "val_lm_loss", "validation_lm_loss", "eval_ce_loss", "val_ce_loss", "valid", "test_loss"}},
    {"lr", {"lr", "learning_rate", "model_lr", "optim_lr", "lr_0", "base_lr_0"}},
    {"grad_norm",
     {"grad_norm", "gnorm", "norm", "grad_norm_total", "optim_total_grad_norm", "total_grad_norm",
      "gradient_norm", "grad_norm_0"}},
    {"tokens_per_s", {"tokens_per_s", "tps", "wps", "tok_per_s", "tokens_s", "token_per_s"}},
    {"samples_per_s", {"samples_per_s", "sample_per_s", "samples_s"}},
    {"steps_per_s", {"steps_per_s", "ups", "it_per_s"}},
    {"epoch", {"epoch", "epochs"}},
    // Seconds per step, printed under many names (unitless ones are in seconds).
    {"step_time",
     {"time", "dt", "iter_time", "step_time", "time_per_step", "time_per_iteration",
      "elapsed_time_per_iteration", "train_step_timing", "seconds", "iteration_time", "batch_time",
      "step_duration", "took"}},
}};

std::string_view canonical_name(std::string_view name) {
  for (const auto& a : kAliases) {
    for (const auto n : a.names) {
      if (!n.empty() && n == name) return a.canonical;
    }
  }
  return name;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
}

// snake_case of a printed key: camelCase split, "/s" and "/sec" read as "per second".
std::string sanitise(std::string_view key) {
  std::string out;
  out.reserve(key.size() + 8);
  auto underscore = [&out] {
    if (!out.empty() && out.back() != '_') out.push_back('_');
  };
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    if (is_alnum(c)) {
      const bool upper = c >= 'A' && c <= 'Z';
      // CrossEntropyLoss -> cross_entropy_loss, but mAP -> map and mIoU -> miou.
      const bool lower_run = i >= 2 && key[i - 1] >= 'a' && key[i - 1] <= 'z' &&
                             key[i - 2] >= 'a' && key[i - 2] <= 'z';
      if (upper && lower_run) underscore();
      out.push_back(to_lower(c));
    } else if (c == '/') {
      const std::string_view r = key.substr(i + 1);
      const bool per =
          starts_with_ci(r, "s") || starts_with_ci(r, "device") || starts_with_ci(r, "gpu");
      const bool word_end = r.size() == 1 || (r.size() > 1 && !is_alpha(r[1])) ||
                            starts_with_ci(r, "sec") || starts_with_ci(r, "device") ||
                            starts_with_ci(r, "gpu");
      underscore();
      if (per && word_end) out += "per_";
    } else {
      underscore();
    }
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  replace_all(out, "_per_second", "_per_s");
  replace_all(out, "_per_sec", "_per_s");
  if (out.rfind("tok_per", 0) == 0) out.replace(0, 3, "tokens");
  replace_all(out, "_tok_per", "_tokens_per");
  return out;
}

struct unit_info {
  double factor = 1.0;  // value * factor / divisor: dividing keeps 409 ms at exactly 0.409 s
  double divisor = 1.0;
  std::string_view suffix;     // appended to the name: "_s", "_bytes", "_percent"
  std::string_view bare_name;  // the name of a value printed with this unit and no key
};

std::optional<unit_info> lookup_unit(std::string_view u, bool memory) {
  struct entry {
    std::string_view unit;
    unit_info info;
  };
  static constexpr std::array<entry, 42> kUnits = {{
      {"ms", {1.0, 1e3, "_s", "step_time_s"}},
      {"s", {1.0, 1.0, "_s", {}}},
      {"sec", {1.0, 1.0, "_s", {}}},
      {"secs", {1.0, 1.0, "_s", {}}},
      {"seconds", {1.0, 1.0, "_s", {}}},
      {"us", {1.0, 1e6, "_s", {}}},
      {"\xc2\xb5s", {1.0, 1e6, "_s", {}}},
      {"ns", {1.0, 1e9, "_s", {}}},
      {"m", {60.0, 1.0, "_s", {}}},
      {"min", {60.0, 1.0, "_s", {}}},
      {"mins", {60.0, 1.0, "_s", {}}},
      {"minutes", {60.0, 1.0, "_s", {}}},
      {"h", {3600.0, 1.0, "_s", {}}},
      {"hours", {3600.0, 1.0, "_s", {}}},
      {"%", {1.0, 1.0, "_percent", {}}},
      {"B", {1.0, 1.0, "_bytes", {}}},
      {"KB", {1e3, 1.0, "_bytes", {}}},
      {"kB", {1e3, 1.0, "_bytes", {}}},
      {"MB", {1e6, 1.0, "_bytes", {}}},
      {"GB", {1e9, 1.0, "_bytes", {}}},
      {"TB", {1e12, 1.0, "_bytes", {}}},
      {"KiB", {1024.0, 1.0, "_bytes", {}}},
      {"MiB", {1048576.0, 1.0, "_bytes", {}}},
      {"GiB", {1073741824.0, 1.0, "_bytes", {}}},
      {"TiB", {1099511627776.0, 1.0, "_bytes", {}}},
      {"tok/s", {1.0, 1.0, {}, "tokens_per_s"}},
      {"tokens/s", {1.0, 1.0, {}, "tokens_per_s"}},
      {"tok/sec", {1.0, 1.0, {}, "tokens_per_s"}},
      {"tokens/sec", {1.0, 1.0, {}, "tokens_per_s"}},
      {"samples/s", {1.0, 1.0, {}, "samples_per_s"}},
      {"samples/sec", {1.0, 1.0, {}, "samples_per_s"}},
      {"/s", {1.0, 1.0, {}, "samples_per_s"}},
      {"it/s", {1.0, 1.0, {}, "steps_per_s"}},
      {"s/it", {1.0, 1.0, {}, "step_time_s"}},
      {"ms/step", {1.0, 1e3, {}, "step_time_s"}},
      {"s/step", {1.0, 1.0, {}, "step_time_s"}},
      {"us/step", {1.0, 1e6, {}, "step_time_s"}},
      {"TFLOPS", {1e12, 1.0, "_flops_per_s", {}}},
      {"TFLOP/s", {1e12, 1.0, "_flops_per_s", {}}},
      {"TFLOPs", {1e12, 1.0, "_flops_per_s", {}}},
      {"GFLOPS", {1e9, 1.0, "_flops_per_s", {}}},
      {"PFLOPS", {1e15, 1.0, "_flops_per_s", {}}},
  }};
  // K/M/G/T alone: thousands, millions, ... of a count (nanotron's "85.8G" tokens), or of
  // bytes in binary units for memory (Detectron2's "max_mem: 2435M" is MiB).
  if (u.size() == 1 && (u[0] == 'K' || u[0] == 'k' || u[0] == 'M' || u[0] == 'G' || u[0] == 'T')) {
    const int power = u[0] == 'M' ? 2 : u[0] == 'G' ? 3 : u[0] == 'T' ? 4 : 1;
    const double base = memory ? 1024.0 : 1000.0;
    return unit_info{std::pow(base, power), 1.0, memory ? "_bytes" : "", {}};
  }
  for (const auto& e : kUnits) {
    if (e.unit == u) return e.info;
  }
  return std::nullopt;
}

}  // namespace

std::optional<metric_naming> name_metric(std::string_view key, std::string_view unit) {
  metric_naming out;
  // "elapsed time per iteration (ms)", "train_step_timing in s": the unit is in the key.
  std::string_view key_unit;
  if (const std::size_t open = key.rfind('('); open != std::string_view::npos) {
    const std::size_t close = key.find(')', open);
    if (close != std::string_view::npos && close > open + 1 &&
        lookup_unit(key.substr(open + 1, close - open - 1), false)) {
      key_unit = key.substr(open + 1, close - open - 1);
      key = key.substr(0, open);
    }
  }
  if (key.size() > 5 && key.substr(key.size() - 5) == " in s") {
    key_unit = "s";
    key.remove_suffix(5);
  }
  std::string name = sanitise(key);
  if (unit.empty()) unit = key_unit;
  // "11.5K" of a count: scale it, then read the name as if no unit had been printed.
  if (unit.size() == 1 &&
      (unit[0] == 'K' || unit[0] == 'k' || unit[0] == 'M' || unit[0] == 'G' || unit[0] == 'T') &&
      name.find("mem") == std::string::npos) {
    out.factor *= lookup_unit(unit, false)->factor;
    unit = {};
  }
  if (unit.empty() && ends_with(name, "_ms")) {
    unit = "ms";
    name.resize(name.size() - 3);
  }
  for (const auto n : kNotMetrics) {
    if (name == n) return std::nullopt;
  }
  if (!name.empty() && is_digit(name[0])) return std::nullopt;
  if (ends_with(name, "_step")) return std::nullopt;  // "completed_step", "after_step": counters
  // TFLOP/s printed in the key: "tflops", "TFLOP/s/device", "model_tflops_per_gpu".
  if (const std::size_t t = name.find("tflop"); t != std::string::npos) {
    const std::size_t len = name.compare(t, 6, "tflops") == 0 ? 6 : 5;
    std::size_t end = t + len;
    if (name.compare(end, 6, "_per_s") == 0) end += 6;
    name.replace(t, end - t, "flops_per_s");
    out.factor *= 1e12;
  }
  const std::string base{canonical_name(name)};
  std::optional<unit_info> u;
  if (!unit.empty()) {
    u = lookup_unit(unit, name.find("mem") != std::string::npos);
    if (!u) {
      if (name.empty()) return std::nullopt;
      const std::string extra = sanitise(unit);
      out.name = extra.empty() ? base : base + "_" + extra;
      return out;
    }
    out.factor *= u->factor;
    out.divisor = u->divisor;
  }
  if (name.empty()) {
    if (!u || u->bare_name.empty()) return std::nullopt;
    out.name = u->bare_name;
  } else if (base == "step_time") {
    out.name = "step_time_s";
  } else if (!u) {
    // Unitless times are seconds by convention (MMEngine, Detectron2: "data_time: 0.0123").
    out.name = ends_with(base, "_time") ? base + "_s" : base;
  } else if (u->suffix.empty() || ends_with(base, u->suffix) ||
             (u->suffix == "_flops_per_s" && base.find("flops") != std::string::npos)) {
    out.name = base;
  } else {
    out.name = base + std::string(u->suffix);
  }
  return out;
}

std::optional<metric> normalise_metric(std::string_view key, double value, std::string_view unit) {
  if (!std::isfinite(value)) return std::nullopt;
  auto n = name_metric(key, unit);
  if (!n) return std::nullopt;
  return metric{std::move(n->name), n->apply(value)};
}

const metric_naming* metric_namer::find(std::string_view key, std::string_view unit) {
  // One lookup key for the pair; keys longer than the buffer are named without the cache.
  std::array<char, 160> buf;
  if (key.size() + unit.size() + 1 > buf.size()) {
    overflow_ = name_metric(key, unit);
    return overflow_ ? &*overflow_ : nullptr;
  }
  std::size_t n = 0;
  for (const char c : key)
    buf[n++] = c;
  buf[n++] = '\x1f';
  for (const char c : unit)
    buf[n++] = c;
  const std::string_view k(buf.data(), n);
  if (const auto it = cache_.find(k); it != cache_.end()) {
    return it->second ? &*it->second : nullptr;
  }
  // Bounded: a log that prints ever new keys must not grow memory without end.
  if (cache_.size() >= kMaxEntries) cache_.clear();
  const auto [it, inserted] = cache_.emplace(std::string(k), name_metric(key, unit));
  return it->second ? &*it->second : nullptr;
}

}  // namespace joules::steps
