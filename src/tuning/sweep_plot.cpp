#include "tuning/sweep_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace joules::tuning {
namespace {

constexpr double kWidth = 720;
constexpr double kHeight = 480;
constexpr double kLeft = 80;
constexpr double kRight = 30;
constexpr double kTop = 50;
constexpr double kBottom = 60;

std::string xml_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // Control characters have no place in an SVG text node.
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
  }
  return out;
}

// A "nice" tick spacing for a span: 1, 2 or 5 times a power of ten, about five ticks.
double tick_step(double span) {
  if (!(span > 0.0)) return 1.0;
  const double raw = span / 5.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10.0 * mag;
}

struct axis {
  double lo = 0.0;
  double hi = 1.0;
  double step = 1.0;
};

axis axis_for(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = std::max(std::abs(lo) * 0.05, 1e-6);
    lo -= pad;
    hi += pad;
  }
  const double pad = (hi - lo) * 0.08;
  axis a;
  a.step = tick_step(hi - lo + 2 * pad);
  a.lo = std::floor((lo - pad) / a.step) * a.step;
  a.hi = std::ceil((hi + pad) / a.step) * a.step;
  return a;
}

}  // namespace

std::string sweep_svg(const std::vector<point>& points, const std::vector<std::size_t>& front,
                      std::optional<std::size_t> knee, const std::string& title) {
  double t_lo = 1e300;
  double t_hi = -1e300;
  double e_lo = 1e300;
  double e_hi = -1e300;
  for (const point& p : points) {
    t_lo = std::min(t_lo, p.seconds_per_step);
    t_hi = std::max(t_hi, p.seconds_per_step);
    e_lo = std::min(e_lo, p.energy_per_step_j);
    e_hi = std::max(e_hi, p.energy_per_step_j);
  }
  if (points.empty()) t_lo = t_hi = e_lo = e_hi = 0.0;
  const axis xa = axis_for(t_lo, t_hi);
  const axis ya = axis_for(e_lo, e_hi);
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  const auto x = [&](double t) { return kLeft + (t - xa.lo) / (xa.hi - xa.lo) * plot_w; };
  const auto y = [&](double e) { return kTop + (ya.hi - e) / (ya.hi - ya.lo) * plot_h; };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" font-size=\"15\">{3}</text>\n",
      kWidth, kHeight, kLeft, xml_escape(title));
  // Grid and ticks.
  for (double v = xa.lo; v <= xa.hi + xa.step / 2; v += xa.step) {
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e0e0e0\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        x(v), kTop, kTop + plot_h, kTop + plot_h + 18, std::round(v * 1e6) / 1e6);
  }
  for (double v = ya.lo; v <= ya.hi + ya.step / 2; v += ya.step) {
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e0e0e0\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, y(v), kLeft + plot_w, kLeft - 8, y(v) + 4, std::round(v * 1e6) / 1e6);
  }
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time per step (s)</text>\n"
      "<text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\">energy per step "
      "(J)</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 14, kTop + plot_h / 2);
  // The front.
  if (front.size() >= 2) {
    std::string path;
    for (const std::size_t i : front) {
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", x(points[i].seconds_per_step),
                          y(points[i].energy_per_step_j));
    }
    s += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", path);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const point& p = points[i];
    const bool on_front = std::find(front.begin(), front.end(), i) != front.end();
    const double cx = x(p.seconds_per_step);
    const double cy = y(p.energy_per_step_j);
    s += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{:g} W</text>\n",
        cx, cy, on_front ? "#1f77b4" : "#999999", cx + 7, cy - 6, p.limit_mw / 1000.0);
    if (knee && *knee == i) {
      s += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"9\" fill=\"none\" stroke=\"#d62728\" "
          "stroke-width=\"2\"/><text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#d62728\">knee</text>\n",
          cx, cy, cx + 7, cy + 18);
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace joules::tuning
