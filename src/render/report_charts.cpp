// The charts of the HTML report (render/report_html.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "render/report_html.hpp"
#include "render/svg.hpp"
#include "report/stats.hpp"
#include "report/timeseries.hpp"
#include "text/escape.hpp"

namespace joules::render {
namespace {

using report::run_summary;

// Points per line: a plot about 850 px wide gains nothing from more, and the page stays small.
constexpr std::size_t kMaxPoints = 900;
constexpr std::size_t kHistogramBins = 40;
// Phases are shaded with light tints of the palette, named in the legend and on the span.
constexpr std::string_view kPhaseTints[] = {"#d9d9d9", "#cfe3f2", "#f9e3bf",
                                            "#cdebe0", "#f4d3c2", "#eed9e7"};

std::string_view tint_of(const std::string& phase, std::map<std::string, std::size_t>& seen) {
  const auto it = seen.emplace(phase, seen.size()).first;
  return kPhaseTints[it->second % std::size(kPhaseTints)];
}

std::string none(std::string_view why) {
  return fmt::format("<p class=\"none\">{}</p>\n", text::escape_for_html(why));
}

double top_of(double v) {
  // A little headroom above the highest value, so the line does not run along the frame.
  return v > 0 ? v * 1.08 : 1.0;
}

}  // namespace

std::string power_chart(const report::run& r, const run_summary& s, std::string_view id) {
  const report::power_view view = report::power_over_time(r, kMaxPoints);
  if (view.devices.empty()) {
    return none(
        "No power over time: the records have neither sample records nor per-GPU window "
        "energies (joules run without --samples-interval).");
  }
  double ymax = 0.0;
  for (const auto& d : view.devices) {
    for (const auto& b : d.power_w)
      ymax = std::max(ymax, b.max);
  }
  const std::string caption =
      view.from_samples
          ? fmt::format(
                "Power of each device over time: the line is the mean of each interval, "
                "the band its lowest and highest reading{}; phases shaded.",
                view.devices.size() > 2 ? " (bands shown for up to two devices)" : "")
          : "Power of each GPU over time, from its energy in each step and phase window (the "
            "records have no sample records); phases shaded.";
  chart c(fmt::format("power-{}", id), caption,
          {0.0, std::max(view.duration_s, 1e-3), "time since the start", true},
          {0.0, top_of(ymax), "power (W)"});
  std::map<std::string, std::size_t> tints;
  for (const auto& sp : s.spans)
    c.span(sp.from_s, sp.to_s, sp.name, tint_of(sp.name, tints));
  std::size_t i = 0;
  for (const auto& d : view.devices) {
    std::vector<xy> mean, lo, hi;
    for (const auto& b : d.power_w) {
      const double x = (b.x0 + b.x1) / 2.0;
      mean.push_back({x, b.mean});
      lo.push_back({x, b.min});
      hi.push_back({x, b.max});
    }
    if (view.from_samples && view.devices.size() <= 2) c.band(lo, hi, i);
    c.line(mean, i, d.label);
    ++i;
  }
  return c.finish();
}

std::string step_charts(const run_summary& s, std::string_view id) {
  if (s.steps_series.empty()) return none(s.energy_per_step_j.source);
  std::string out;
  double xmax = 0.0;
  std::vector<report::series_point> pts;
  std::vector<double> values;
  for (const auto& p : s.steps_series) {
    xmax = std::max(xmax, p.offset_s);
    pts.push_back({p.offset_s, p.per_step_j(), static_cast<double>(p.gap), {}, {}});
    values.push_back(p.per_step_j());
  }
  const auto buckets = report::decimate(pts, 0.0, std::max(xmax, 1e-3), kMaxPoints);
  // The y range leaves out the 0.5 % most extreme steps, so one odd step does not squash the rest.
  const double lo_q = report::quantile(values, 0.005).value_or(0.0);
  const double hi_q = report::quantile(values, 0.995).value_or(1.0);
  double ymax = hi_q;
  for (const auto& b : buckets)
    ymax = std::max(ymax, b.mean);
  const double ymin = std::max(0.0, lo_q - (ymax - lo_q) * 0.3);
  chart c(fmt::format("steps-{}", id),
          fmt::format("Energy per step over time ({} step windows){}.", s.steps_series.size(),
                      buckets.size() < pts.size()
                          ? ": each point is the mean of the steps in its interval, the band their "
                            "lowest and highest"
                          : ""),
          {0.0, std::max(xmax, 1e-3), "time since the start", true},
          {ymin, top_of(std::min(ymax, hi_q * 1.5)), "energy per step (J)"});
  std::map<std::string, std::size_t> tints;
  for (const auto& sp : s.spans)
    c.span(sp.from_s, sp.to_s, sp.name, tint_of(sp.name, tints));
  std::vector<xy> mean, lo, hi;
  for (const auto& b : buckets) {
    const double x = (b.x0 + b.x1) / 2.0;
    mean.push_back({x, b.mean});
    lo.push_back({x, std::max(b.min, ymin)});
    hi.push_back({x, b.max});
  }
  if (buckets.size() < pts.size()) c.band(lo, hi, 0);
  c.line(mean, 0, "J/step");
  if (s.energy_per_step_j.value) {
    c.hline(*s.energy_per_step_j.value,
            fmt::format("run mean {:.4g} J/step", *s.energy_per_step_j.value));
  }
  out += c.finish();

  const report::histogram h = report::make_histogram(values, kHistogramBins);
  std::uint64_t top = 0;
  for (const auto n : h.counts)
    top = std::max(top, n);
  chart hc(
      fmt::format("hist-{}", id),
      fmt::format("Distribution of the energy per step: {} step windows{}.", values.size(),
                  h.below + h.above > 0
                      ? fmt::format(", {} below and {} above the range shown", h.below, h.above)
                      : ""),
      {h.lo, h.hi, "energy per step (J)"}, {0.0, top_of(static_cast<double>(top)), "step windows"},
      920, 240);
  const double width = (h.hi - h.lo) / static_cast<double>(h.counts.size());
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    const double x0 = h.lo + width * static_cast<double>(i);
    hc.bar(x0, x0 + width, static_cast<double>(h.counts[i]), 0,
           fmt::format("{:.4g} to {:.4g} J: {} steps", x0, x0 + width, h.counts[i]));
  }
  hc.key("step windows in each bin", 0);
  if (const auto med = report::quantile(values, 0.5)) {
    hc.dot(*med, 0.0, 3, fmt::format("median {:.4g} J/step", *med));
    hc.key(fmt::format("median, {:.4g} J/step", *med), 3);
  }
  out += hc.finish();
  return out;
}

std::string straggler_chart(const run_summary& s, std::string_view id) {
  std::vector<const report::gpu_row*> gpus;
  double extent = 0.0;
  for (const auto& g : s.gpus) {
    if (g.kind != "gpu" || !g.deviation) continue;
    gpus.push_back(&g);
    extent = std::max(extent, std::abs(*g.deviation) * 100.0);
  }
  if (gpus.size() < 2) {
    return none(
        "No per-GPU comparison: it needs the energy of two or more GPUs in each step "
        "(joules wrap).");
  }
  extent = std::max(extent * 1.2, 1.0);
  const double n = static_cast<double>(gpus.size());
  chart c(fmt::format("dev-{}", id),
          "Each GPU's energy per step against the median GPU's, over the run's step windows "
          "(10 % or more apart in the second colour).",
          {-0.5, n - 0.5, "GPU"}, {-extent, extent, "vs the median GPU (%)"}, 920, 240);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto& g = *gpus[i];
    const double d = *g.deviation * 100.0;
    const std::string who = s.hosts.size() > 1 ? fmt::format("{} GPU {}", g.host, g.index)
                                               : fmt::format("GPU {}", g.index);
    names.push_back(s.hosts.size() > 1 ? fmt::format("{}/{}", g.host, g.index)
                                       : fmt::format("{}", g.index));
    const double x = static_cast<double>(i);
    c.bar(x - 0.35, x + 0.35, d, std::abs(d) >= 10 ? 3 : 0,
          fmt::format("{}: {:.4g} J/step, {:+.2f} %", who, g.energy_per_step_j.value_or(0.0), d));
  }
  c.categories(std::move(names));
  c.key("within 10 % of the median", 0);
  c.key("10 % or more apart", 3);
  c.hline(0.0, "median");
  return c.finish();
}

std::string phase_chart(const run_summary& s, std::string_view id) {
  double total = 0.0;
  for (const auto& p : s.phases)
    total += p.energy_j;
  if (s.phases.empty() || total <= 0) return none("No energy by phase in the records.");
  chart c(fmt::format("phases-{}", id),
          "Share of the run's energy by phase (windows of the same kind added up).",
          {0.0, 100.0, "share of the energy (%)"}, {0.0, 1.0, "", false, false}, 920, 120);
  double at = 0.0;
  std::size_t i = 0;
  for (const auto& p : s.phases) {
    const double share = p.energy_j / total * 100.0;
    c.span(at, at + share, p.name, series_colour(i));
    at += share;
    ++i;
  }
  return c.finish();
}

std::string prediction_chart(const run_summary& s, std::string_view id) {
  if (s.predictions.empty()) {
    return none(
        "No prediction: joules wrap predicts once the total number of steps is known "
        "(--total-steps, or N/M in the step lines).");
  }
  double xmax = 0.0;
  double ymax = 0.0;
  std::optional<double> actual;
  for (const auto& p : s.predictions) {
    xmax = std::max(xmax, static_cast<double>(p.p.total_steps));
    ymax = std::max(ymax, p.p.energy_j);
    if (p.actual_energy_j) {
      actual = p.actual_energy_j;
      ymax = std::max(ymax, *p.actual_energy_j);
    }
  }
  chart c(fmt::format("pred-{}", id),
          "Each prediction of the run's energy, at the step it was made, against the energy "
          "the run took to reach the predicted step.",
          {0.0, std::max(xmax, 1.0), "step at which the prediction was made"},
          {0.0, top_of(ymax), "energy to the last step (J)"}, 920, 260);
  std::vector<xy> line;
  for (const auto& p : s.predictions) {
    line.push_back({static_cast<double>(p.p.at_step), p.p.energy_j});
    c.dot(static_cast<double>(p.p.at_step), p.p.energy_j, 0,
          fmt::format("at step {}: {:.4g} J predicted{}", p.p.at_step, p.p.energy_j,
                      p.error ? fmt::format(", {:+.1f} % off", *p.error * 100.0) : ""));
  }
  c.line(line, 0, "predicted");
  if (actual) c.hline(*actual, "actual " + report::format_energy(*actual));
  return c.finish();
}

}  // namespace joules::render
