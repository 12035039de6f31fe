#include "power_spec.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace fake_gpu {
namespace {

using nlohmann::json;

// [[t, w], ...] with t ascending and w >= 0.
void read_points(json_fields& f, std::vector<double>& ts, std::vector<double>& ws) {
  const json& points = f.at("points");
  if (!points.is_array() || points.empty()) f.fail("points", "must be a non-empty array");
  for (const json& p : points) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
      f.fail("points", "must hold [t_s, watts] pairs");
    }
    const double t = p[0].get<double>(), w = p[1].get<double>();
    if (!std::isfinite(t) || !std::isfinite(w) || w < 0.0) f.fail("points", "has a bad value");
    if (!ts.empty() && t < ts.back()) f.fail("points", "must be in ascending time order");
    ts.push_back(t);
    ws.push_back(w);
  }
}

power_function parse_power_function(json_fields& f) {
  const std::string type = f.string("type", "constant");
  if (type == "constant") return power_function::constant(f.non_negative("watts", 100.0));
  if (type == "steps" || type == "linear") {
    std::vector<double> ts, ws;
    read_points(f, ts, ws);
    std::vector<double> a, b;
    for (std::size_t i = 0; i + 1 < ts.size(); ++i) {
      a.push_back(ws[i]);
      b.push_back(type == "steps" ? ws[i] : ws[i + 1]);
    }
    const double before = ws.front(), after = ws.back();
    return power_function::piecewise(std::move(ts), std::move(a), std::move(b), before, after);
  }
  if (type == "segments") {
    const double start = f.number("start_s", 0.0);
    const double dt = f.number("dt_s", 0.0);
    if (dt <= 0.0) f.fail("dt_s", "must be positive");
    const json& watts = f.at("watts");
    if (!watts.is_array() || watts.empty()) f.fail("watts", "must be a non-empty array");
    std::vector<double> ws;
    for (const json& w : watts) {
      if (!w.is_number() || !(w.get<double>() >= 0.0)) f.fail("watts", "must hold watts >= 0");
      ws.push_back(w.get<double>());
    }
    return power_function::uniform(start, dt, std::move(ws));
  }
  if (type == "square") {
    const double period = f.number("period_s", 1.0);
    const double duty = f.number("duty", 0.5);
    if (period <= 0.0) f.fail("period_s", "must be positive");
    if (duty < 0.0 || duty > 1.0) f.fail("duty", "must lie in [0, 1]");
    return power_function::square(f.non_negative("low_w", 0.0), f.non_negative("high_w", 0.0),
                                  period, duty, f.number("phase_s", 0.0));
  }
  f.fail("type", "must be constant, steps, segments, linear or square, not " + type);
}

}  // namespace

std::unique_ptr<power_model> parse_power(json_fields& dev, unsigned int limit_mw) {
  bool clamp = false;
  power_function base = power_function::constant(100.0);
  if (dev.has("power")) {
    json_fields p(dev.at("power"), dev.sub("power"));
    base = parse_power_function(p);
    clamp = p.boolean("clamp_to_limit", false);
    p.finish();
  }
  return std::make_unique<power_model>(std::move(base), clamp, limit_mw);
}

double counter_instant(double t, double update_s, double phase_s) {
  double q = t;
  if (update_s > 0.0) q = phase_s + std::floor((t - phase_s) / update_s) * update_s;
  return std::max(q, 0.0);
}

}  // namespace fake_gpu
