#include "render/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "text/escape.hpp"

namespace joules::render {
namespace {

// Okabe & Ito, "Color Universal Design" (https://jfly.uni-koeln.de/color/): distinguishable with
// protanopia, deuteranopia and tritanopia.  Their yellow is left out: it vanishes on white paper.
constexpr std::string_view kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                         "#CC79A7", "#56B4E9", "#000000", "#7F7F7F"};
constexpr std::string_view kDashes[] = {"", "6 3", "2 2", "8 3 2 3"};
constexpr std::size_t kColourCount = std::size(kColours);
constexpr double kLegendRowPx = 18.0;
constexpr double kLegendEntryPx = 180.0;

std::string svg_esc(std::string_view s) {
  return text::escape_for_html(s);
}

}  // namespace

std::string_view series_colour(std::size_t i) {
  return kColours[i % kColourCount];
}

std::string_view series_dash(std::size_t i) {
  // Colours first; each new round of colours gets the next dash pattern.
  return kDashes[(i / kColourCount) % std::size(kDashes)];
}

std::vector<double> nice_ticks(double lo, double hi, int n) {
  std::vector<double> out;
  if (!(hi > lo) || n < 1) return {lo};
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double v = first; v <= hi + step * 1e-9; v += step) {
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
    if (out.size() > 50) break;
  }
  return out;
}

std::pair<std::string_view, double> time_unit(double span_s) {
  if (span_s >= 3 * 3600.0) return {"h", 3600.0};
  if (span_s >= 3 * 60.0) return {"min", 60.0};
  return {"s", 1.0};
}

std::string tick_label(double v) {
  if (v == 0.0) return "0";
  const double a = std::abs(v);
  // Round ticks of large values with an SI prefix (15k, 2.5M): shorter than 1.5e+04.
  if (a >= 1e12) return fmt::format("{:.4g}T", v / 1e12);
  if (a >= 1e9) return fmt::format("{:.4g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.4g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.4g}k", v / 1e3);
  if (a < 1e-3) return fmt::format("{:.3g}", v);
  return fmt::format("{:.4g}", v);
}

chart::chart(std::string id, std::string caption, axis x, axis y, int width_px, int height_px)
    : id_(std::move(id)),
      caption_(std::move(caption)),
      x_(std::move(x)),
      y_(std::move(y)),
      width_(width_px),
      height_(height_px) {
  if (!(x_.hi > x_.lo)) x_.hi = x_.lo + 1.0;
  if (!(y_.hi > y_.lo)) y_.hi = y_.lo + 1.0;
}

double chart::px(double x) const {
  const double w = width_ - left_ - right_;
  return left_ + (x - x_.lo) / (x_.hi - x_.lo) * w;
}

double chart::py(double y) const {
  const double h = height_ - top_ - bottom_;
  return top_ + h - (y - y_.lo) / (y_.hi - y_.lo) * h;
}

void chart::line(const std::vector<xy>& points, std::size_t series, std::string_view label) {
  if (points.empty()) return;
  const std::string colour(series_colour(series));
  const std::string dash(series_dash(series));
  auto out = std::back_inserter(body_);
  fmt::format_to(out,
                 "<polyline class=\"series\" data-label=\"{}\" fill=\"none\" stroke=\"{}\" "
                 "stroke-width=\"1.6\"{} points=\"",
                 svg_esc(label), colour,
                 dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", dash));
  for (const auto& p : points)
    fmt::format_to(out, "{:.1f},{:.1f} ", px(p.x), py(p.y));
  fmt::format_to(out, "\"><title>{}</title></polyline>\n", svg_esc(label));
  legend_.push_back({std::string(label), colour, dash, false});
}

void chart::band(const std::vector<xy>& lo, const std::vector<xy>& hi, std::size_t series) {
  if (lo.empty() || hi.empty()) return;
  auto out = std::back_inserter(body_);
  fmt::format_to(out, "<polygon fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\" points=\"",
                 series_colour(series));
  for (const auto& p : hi)
    fmt::format_to(out, "{:.1f},{:.1f} ", px(p.x), py(p.y));
  for (auto it = lo.rbegin(); it != lo.rend(); ++it)
    fmt::format_to(out, "{:.1f},{:.1f} ", px(it->x), py(it->y));
  body_ += "\"/>\n";
}

void chart::span(double x0, double x1, std::string_view label, std::string_view tint) {
  const double a = std::max(px(x0), left_);
  const double b = std::min(px(x1), width_ - right_);
  if (b <= a) return;
  const double w = std::max(b - a, 0.8);
  auto out = std::back_inserter(back_);
  fmt::format_to(
      out,
      "<rect class=\"span\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "fill=\"{}\"><title>{}</title></rect>\n",
      a, top_, w, height_ - top_ - bottom_, tint, svg_esc(label));
  if (w >= 8.0 * static_cast<double>(label.size()) + 6.0) {
    fmt::format_to(out, "<text class=\"span-label\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", a + 3,
                   top_ + 11, svg_esc(label));
  }
  const bool listed = std::any_of(legend_.begin(), legend_.end(),
                                  [&](const legend_entry& e) { return e.label == label; });
  if (!listed) legend_.push_back({std::string(label), std::string(tint), "", true});
}

void chart::bar(double x0, double x1, double y, std::size_t series, std::string_view tip) {
  const double a = px(x0);
  const double b = px(x1);
  const double top = py(std::max(y, y_.lo));
  const double base = py(std::clamp(0.0, y_.lo, y_.hi));
  fmt::format_to(std::back_inserter(body_),
                 "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
                 "stroke=\"#ffffff\" stroke-width=\"0.5\"><title>{}</title></rect>\n",
                 std::min(a, b), std::min(top, base), std::max(std::abs(b - a), 0.8),
                 std::abs(base - top), series_colour(series), svg_esc(tip));
}

void chart::hline(double y, std::string_view label) {
  const double v = py(y);
  fmt::format_to(std::back_inserter(front_),
                 "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000\" "
                 "stroke-dasharray=\"4 3\"/><text class=\"ref\" x=\"{:.1f}\" y=\"{:.1f}\" "
                 "text-anchor=\"end\">{}</text>\n",
                 left_, width_ - right_, v, v, width_ - right_ - 2, v - 4, svg_esc(label));
}

void chart::dot(double x, double y, std::size_t series, std::string_view tip) {
  fmt::format_to(std::back_inserter(front_),
                 "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" stroke=\"#000\" "
                 "stroke-width=\"0.6\"><title>{}</title></circle>\n",
                 px(x), py(y), series_colour(series), svg_esc(tip));
}

std::string chart::finish() const {
  const double plot_w = width_ - left_ - right_;
  const auto per_row = std::max<std::size_t>(1, static_cast<std::size_t>(plot_w / kLegendEntryPx));
  const std::size_t rows = (legend_.size() + per_row - 1) / per_row;
  const double total_h = height_ + static_cast<double>(rows) * kLegendRowPx + 4.0;
  std::string s;
  auto out = std::back_inserter(s);
  // Time axes show their unit; the mapping in data-* is in the axis' own unit (seconds).
  std::string x_title = x_.title;
  double x_scale = 1.0;
  if (x_.time) {
    const auto [unit, per] = time_unit(x_.hi - x_.lo);
    x_scale = per;
    x_title = fmt::format("{} ({})", x_.title, unit);
  }
  fmt::format_to(out,
                 "<figure class=\"chart\"><svg id=\"{}\" role=\"img\" aria-label=\"{}\" "
                 "viewBox=\"0 0 {} {:.0f}\" width=\"{}\" height=\"{:.0f}\" data-x0=\"{}\" "
                 "data-x1=\"{}\" data-px0=\"{:.1f}\" data-px1=\"{:.1f}\" data-y0=\"{}\" "
                 "data-y1=\"{}\" data-py0=\"{:.1f}\" data-py1=\"{:.1f}\" data-xunit=\"{}\" "
                 "data-xscale=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
                 id_, svg_esc(caption_), width_, total_h, width_, total_h, x_.lo, x_.hi, px(x_.lo),
                 px(x_.hi), y_.lo, y_.hi, py(y_.lo), py(y_.hi),
                 x_.time ? time_unit(x_.hi - x_.lo).first : "", x_scale);
  fmt::format_to(out, "<title>{}</title>\n", svg_esc(caption_));
  // Lines and bands stay inside the plot area whatever their values (a y range that leaves out
  // the most extreme steps cuts them at the frame).
  fmt::format_to(out,
                 "<clipPath id=\"{}-plot\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                 "height=\"{:.1f}\"/></clipPath>\n",
                 id_, left_, top_ - 1.0, plot_w, height_ - top_ - bottom_ + 2.0);
  s += back_;
  // Grid and ticks.
  const std::vector<double> y_ticks =
      y_.ticks ? nice_ticks(y_.lo, y_.hi, 5) : std::vector<double>{};
  for (const double t : y_ticks) {
    const double v = py(t);
    fmt::format_to(out,
                   "<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
                   "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                   left_, width_ - right_, v, v, left_ - 5, v + 4, tick_label(t));
  }
  std::vector<std::pair<double, std::string>> x_ticks;
  if (!categories_.empty()) {
    for (std::size_t i = 0; i < categories_.size(); ++i)
      x_ticks.emplace_back(static_cast<double>(i), categories_[i]);
  } else if (x_.ticks) {
    for (const double t : nice_ticks(x_.lo / x_scale, x_.hi / x_scale, 8))
      x_ticks.emplace_back(t * x_scale, tick_label(t));
  }
  for (const auto& [t, label] : x_ticks) {
    const double v = px(t);
    fmt::format_to(out,
                   "<line class=\"tickmark\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" "
                   "y2=\"{:.1f}\"/><text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" "
                   "text-anchor=\"middle\">{}</text>\n",
                   v, v, height_ - bottom_, height_ - bottom_ + 5, v, height_ - bottom_ + 18,
                   svg_esc(label));
  }
  fmt::format_to(out, "<g clip-path=\"url(#{}-plot)\">\n", id_);
  s += body_;
  s += "</g>\n";
  s += front_;
  // Axes and their titles.
  fmt::format_to(out,
                 "<g class=\"axes\"><line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" "
                 "y2=\"{2:.1f}\"/><line x1=\"{0:.1f}\" x2=\"{3:.1f}\" y1=\"{2:.1f}\" "
                 "y2=\"{2:.1f}\"/></g>\n",
                 left_, top_, height_ - bottom_, width_ - right_);
  fmt::format_to(out,
                 "<text class=\"axis-title\" x=\"{:.1f}\" y=\"{:.1f}\" "
                 "text-anchor=\"middle\">{}</text>\n",
                 left_ + plot_w / 2, height_ - 10.0, svg_esc(x_title));
  fmt::format_to(out,
                 "<text class=\"axis-title\" transform=\"translate(16 {:.1f}) rotate(-90)\" "
                 "text-anchor=\"middle\">{}</text>\n",
                 top_ + (height_ - top_ - bottom_) / 2, svg_esc(y_.title));
  // Legend, under the plot.
  if (!legend_.empty()) s += "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < legend_.size(); ++i) {
    const auto& e = legend_[i];
    const double x = left_ + static_cast<double>(i % per_row) * kLegendEntryPx;
    const double y = height_ + static_cast<double>(i / per_row) * kLegendRowPx + 2.0;
    if (e.swatch) {
      fmt::format_to(out,
                     "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"10\" fill=\"{}\" "
                     "stroke=\"#555\" stroke-width=\"0.5\"/>",
                     x, y - 9, e.colour);
    } else {
      fmt::format_to(
          out,
          "<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
          "stroke-width=\"2\"{}/>",
          x, x + 22, y - 4, y - 4, e.colour,
          e.dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", e.dash));
    }
    fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x + 28, y, svg_esc(e.label));
  }
  if (!legend_.empty()) s += "</g>\n";
  fmt::format_to(out, "</svg><figcaption>{}</figcaption></figure>\n", svg_esc(caption_));
  return s;
}

}  // namespace joules::render
