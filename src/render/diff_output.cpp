// joules diff's text and JSON (render/tables.hpp).

#include <fmt/format.h>

#include <iterator>

#include "render/tables.hpp"
#include "text/escape.hpp"
#include "util/json_writer.hpp"

namespace joules::render {
namespace {

std::string value_text(const std::optional<double>& v, const std::string& unit) {
  if (!v) return "–";
  if (unit == "J") return report::format_energy(*v);
  if (unit == "s") return report::format_duration(*v);
  if (unit == "W") return report::format_si(*v, "W");
  if (unit == "J/step" || unit == "J/token") return report::format_si(*v, "J");
  if (unit == "s/step") return report::format_si(*v, "s");
  if (unit == "g")
    return *v >= 1000 ? fmt::format("{:.3g} kg", *v / 1000) : fmt::format("{:.3g} g", *v);
  return fmt::format("{:.4g} {}", *v, unit);
}

std::string side_line(char which, const diff_side& s) {
  std::string runs;
  for (const auto& r : s.runs) {
    if (!runs.empty()) runs += "; ";
    std::string hosts;
    for (const auto& h : r.hosts)
      hosts += (hosts.empty() ? "" : ",") + h;
    runs += fmt::format("run {} on {} ({})", r.run_id, hosts,
                        r.gpu_names.empty() ? "no GPU" : r.gpu_names);
  }
  return text::escape_for_terminal(fmt::format("{} = {}: {}", which, s.file, runs));
}

std::string verdict(const report::diff_row& r) {
  if (!r.exceeds_noise) return "";
  return *r.exceeds_noise ? "beyond noise" : "within noise";
}

}  // namespace

std::string diff_text(const diff_side& a, const diff_side& b, const report::diff_result& d,
                      const std::optional<diff_gate>& gate) {
  std::string out = side_line('A', a) + "\n" + side_line('B', b) + "\n\n";
  auto o = std::back_inserter(out);
  fmt::format_to(o, "{:<6} {:<20} {:>18} {:>18} {:>9} {:>9}\n", "", "", "A", "B", "change",
                 "noise");
  std::string section;
  for (const auto& r : d.rows) {
    if (!r.a && !r.b) continue;
    const std::string sec = r.section == section ? "" : r.section;
    section = r.section;
    std::string line = fmt::format(
        "{:<6} {:<20} {:>18} {:>18} {:>9} {:>9}  {}", sec, text::escape_for_terminal(r.name),
        value_text(r.a, r.unit), value_text(r.b, r.unit),
        r.change ? fmt::format("{:+.1f} %", *r.change * 100.0) : "–",
        r.noise ? fmt::format("±{:.1f} %", *r.noise * 100.0) : "–", verdict(r));
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  for (const auto& n : d.notes)
    out += "note: " + text::escape_for_terminal(n) + "\n";
  if (gate && d.gate < d.rows.size()) {
    const auto& g = d.rows[d.gate];
    fmt::format_to(o, "gate: {} changed {} (--fail-if-worse {:g}): {}\n", g.name,
                   g.change ? fmt::format("{:+.1f} %", *g.change * 100.0) : "by an unknown amount",
                   gate->limit_percent, gate->failed ? "FAILED, worse than the limit" : "passed");
  }
  return out;
}

std::string diff_json(const diff_side& a, const diff_side& b, const report::diff_result& d,
                      const std::optional<diff_gate>& gate) {
  json_writer j;
  j.begin_object().field("type", "diff");
  for (const auto* s : {&a, &b}) {
    j.key(s == &a ? "a" : "b").begin_object().field("file", s->file).key("runs").begin_array();
    for (const auto& r : s->runs) {
      j.begin_object().field("run_id", r.run_id).key("hosts").begin_array();
      for (const auto& h : r.hosts)
        j.value(h);
      j.end_array().field("gpus", r.gpu_names).field("method", r.method).end_object();
    }
    j.end_array().end_object();
  }
  j.key("rows").begin_array();
  for (const auto& r : d.rows) {
    j.begin_object().field("section", r.section).field("name", r.name).field("unit", r.unit);
    j.field("a", r.a).field("b", r.b).field("change", r.change).field("noise", r.noise);
    j.field("exceeds_noise", r.exceeds_noise).end_object();
  }
  j.end_array();
  j.key("gate");
  if (d.gate < d.rows.size()) {
    const auto& g = d.rows[d.gate];
    j.begin_object().field("name", g.name).field("change", g.change);
    j.field("limit", gate ? std::optional(gate->limit_percent / 100.0) : std::nullopt);
    j.field("failed", gate ? std::optional(gate->failed) : std::nullopt).end_object();
  } else {
    j.null();
  }
  j.key("notes").begin_array();
  for (const auto& n : d.notes)
    j.value(n);
  j.end_array().end_object();
  return j.take() + "\n";
}

}  // namespace joules::render
