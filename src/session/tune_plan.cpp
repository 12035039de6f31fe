#include "session/tune_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "text/escape.hpp"
#include "util/error.hpp"

namespace joules::session {

std::vector<control::claimed_gpu> limit_plan::claimed() const {
  std::vector<control::claimed_gpu> out;
  for (const auto& g : gpus) {
    control::claimed_gpu c;
    c.device = g.device;
    c.index = g.info.index;
    c.uuid = g.info.uuid;
    c.name = g.info.name;
    c.original_mw = g.limits.current_mw.value_or(baseline_mw);
    c.bounds = {g.limits.min_mw.value_or(0), g.limits.max_mw.value_or(0)};
    c.backend = g.backend;
    c.library = g.library;
    out.push_back(std::move(c));
  }
  return out;
}

std::string limit_plan::gpu_list() const {
  std::vector<unsigned> idx;
  for (const auto& g : gpus)
    idx.push_back(g.info.index);
  const bool run = !idx.empty() && idx.back() - idx.front() + 1 == idx.size() && idx.size() > 2 &&
                   std::is_sorted(idx.begin(), idx.end());
  if (run) return fmt::format("GPU {}-{}", idx.front(), idx.back());
  std::string out = idx.size() == 1 ? "GPU " : "GPUs ";
  for (std::size_t k = 0; k < idx.size(); ++k)
    out += fmt::format("{}{}", k == 0 ? "" : ", ", idx[k]);
  return out;
}

limit_plan plan_limits(sampler& s, const std::vector<std::size_t>& measured,
                       const std::vector<std::uint32_t>& limits, std::string_view option,
                       std::string_view text, std::uint32_t step_mw) {
  limit_plan plan;
  const auto& all = s.hardware().devices();
  for (std::size_t pos = 0; pos < measured.size(); ++pos) {
    const device_info& d = all[measured[pos]];
    if (d.kind != device_kind::gpu) continue;
    plan.gpus.push_back({measured[pos], pos, d, {}, {}, {}});
  }
  if (plan.gpus.empty()) {
    plan.unavailable = "no GPU is measured";
    return plan;
  }
  s.on_thread([&](backend& b) {
    for (auto& g : plan.gpus) {
      g.limits = b.read_power_limit(g.device);
      const backend_meta& owner = b.device_meta(g.device);
      g.backend = owner.backend;
      g.library = owner.library_path;
    }
    return 0;
  });
  plan.bounds = {0, UINT32_MAX};
  for (const auto& g : plan.gpus) {
    const auto& l = g.limits;
    if (!l.result.ok() && plan.unavailable.empty()) {
      plan.unavailable = fmt::format("GPU {} ({})'s power limit cannot be changed: {}",
                                     g.info.index, text::escape_for_terminal(g.info.name),
                                     text::escape_for_terminal(l.result.detail));
    }
    if (!l.current_mw || !l.min_mw || !l.max_mw) continue;
    plan.bounds.min_mw = std::max(plan.bounds.min_mw, *l.min_mw);
    plan.bounds.max_mw = std::min(plan.bounds.max_mw, *l.max_mw);
    plan.baseline_mw = std::max(plan.baseline_mw, *l.current_mw);
  }
  if (!plan.unavailable.empty()) return plan;
  if (plan.bounds.min_mw >= plan.bounds.max_mw) {
    plan.unavailable = "the GPUs accept no common range of power limits";
    return plan;
  }
  if (!limits.empty()) {
    for (const auto& g : plan.gpus) {
      const control::limit_bounds b{*g.limits.min_mw, *g.limits.max_mw};
      if (auto why = control::outside_bounds(option, text, limits, b, g.info.index)) {
        throw usage_error(*why);
      }
    }
    plan.limits = limits;
  } else {
    plan.limits = control::limit_grid(plan.bounds, step_mw, plan.baseline_mw);
  }
  return plan;
}

}  // namespace joules::session
