#pragma once
// Inline SVG charts for the HTML report: a plot area with axes, ticks at round values, axis
// titles with their units, a legend, and series drawn as lines (with a min-max band), bars and
// shaded spans.  Colours are the Okabe-Ito palette (readable by people with any of the common
// colour-vision deficiencies) and every series also has its own dash pattern, so lines stay
// apart in a grey print.
//
// Each chart carries its axis mapping in data-* attributes and each line its label, so the
// report's script can show the values under the pointer; without the script every element's
// <title> still shows on hover, and the chart reads the same.  Text is HTML-escaped here.
// Not thread-safe: one chart per thread.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules::render {

// The i-th series' colour and dash pattern ("" for solid).
std::string_view series_colour(std::size_t i);
std::string_view series_dash(std::size_t i);

struct axis {
  double lo = 0.0;
  double hi = 1.0;
  std::string title;  // with its unit: "power (W)"
  // Time in seconds: ticks at round seconds, minutes or hours, and the title says which.
  bool time = false;
  bool ticks = true;  // false: no ticks or grid (a single stacked bar)
};

struct xy {
  double x = 0.0;
  double y = 0.0;
};

class chart {
 public:
  // `id` names the chart in the page (letters, digits, -); `caption` is its accessible name.
  chart(std::string id, std::string caption, axis x, axis y, int width_px = 920,
        int height_px = 300);

  // A line (mean values) through `points`, in series colour `series`, listed in the legend.
  void line(const std::vector<xy>& points, std::size_t series, std::string_view label);
  // A band between lo and hi along x (min and max), lightly filled in series colour `series`.
  void band(const std::vector<xy>& lo, const std::vector<xy>& hi, std::size_t series);
  // A shaded span of x (a phase), with a text label when it is wide enough; `tint` is a CSS
  // colour.  Spans of the same label share one legend entry.
  void span(double x0, double x1, std::string_view label, std::string_view tint);
  // A bar from y = 0 to y over [x0, x1]; `tip` is shown on hover.
  void bar(double x0, double x1, double y, std::size_t series, std::string_view tip);
  // A horizontal reference line at y, dashed, with its label at the right.
  void hline(double y, std::string_view label);
  // A marker at (x, y) with its tip.
  void dot(double x, double y, std::size_t series, std::string_view tip);
  // A legend entry for bars or dots of series colour `series` (lines and spans list themselves).
  void key(std::string_view label, std::size_t series) {
    legend_.push_back({std::string(label), std::string(series_colour(series)), "", true});
  }
  // Names for x = 0, 1, 2, ... drawn instead of numeric ticks (GPUs).
  void categories(std::vector<std::string> names) { categories_ = std::move(names); }

  // The whole <figure> element: the SVG with axes, grid, ticks, legend and a caption.
  std::string finish() const;

  double px(double x) const;
  double py(double y) const;

 private:
  std::string id_;
  std::string caption_;
  axis x_;
  axis y_;
  int width_;
  int height_;
  double left_ = 70.0;
  double right_ = 20.0;
  double top_ = 14.0;
  double bottom_ = 46.0;
  std::string back_;   // spans, drawn under everything
  std::string body_;   // bars, bands, lines
  std::string front_;  // reference lines, dots
  struct legend_entry {
    std::string label;
    std::string colour;
    std::string dash;
    bool swatch = false;  // a filled square (spans, bars) rather than a line
  };
  std::vector<legend_entry> legend_;
  std::vector<std::string> categories_;
};

// Round tick values over [lo, hi], about `n` of them (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int n);
// For a time axis over [0, span_s]: the unit to show (s, min, h) and seconds per unit.
std::pair<std::string_view, double> time_unit(double span_s);
// A tick label: "%g"-like, locale-proof, at most 4 significant digits.
std::string tick_label(double v);

}  // namespace joules::render
