#include "render/report_html.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "render/page_assets.hpp"
#include "text/escape.hpp"
#include "util/json_writer.hpp"

namespace joules::render {
namespace {

using report::figure;
using report::format_duration;
using report::format_energy;
using report::format_si;
using report::run_summary;

std::string esc(std::string_view s) {
  return text::escape_for_html(s);
}

// The exact value of a figure, for programs and tests that read the page (data-value).
std::string exact(const std::optional<double>& v) {
  std::string out;
  if (v) append_json_number(out, *v);
  return out;
}

// One headline card: the figure, and how it was obtained.
std::string card(std::string_view key, std::string_view title, std::string_view value,
                 const figure& f) {
  return fmt::format(
      "<div class=\"card\" data-figure=\"{}\" data-value=\"{}\"><div class=\"card-title\">{}</div>"
      "<div class=\"card-value\">{}</div><div class=\"how\">{}</div></div>\n",
      key, exact(f.value), esc(title), esc(value), esc(f.source));
}

std::string headline(const run_summary& s) {
  std::string out = "<div class=\"cards\">\n";
  const auto& e = s.energy_j.value;
  out += card("energy_j", "Energy", e ? format_energy(*e) : "unknown", s.energy_j);
  out += card("co2e_g", "CO2e",
              s.co2e_g.value
                  ? (*s.co2e_g.value >= 1000 ? fmt::format("{:.3g} kg", *s.co2e_g.value / 1000)
                                             : fmt::format("{:.3g} g", *s.co2e_g.value))
                  : "not known",
              s.co2e_g);
  out += card("cost", "Cost",
              s.cost.value ? fmt::format("{:.4g} {}", *s.cost.value, s.currency) : "not known",
              s.cost);
  out += card("duration_s", "Duration",
              s.duration_s.value ? format_duration(*s.duration_s.value) : "unknown", s.duration_s);
  out += card("energy_per_step_j", "Energy per step",
              s.energy_per_step_j.value ? format_si(*s.energy_per_step_j.value, "J") : "–",
              s.energy_per_step_j);
  out += card("energy_per_token_j", "Energy per token",
              s.energy_per_token_j.value ? format_si(*s.energy_per_token_j.value, "J") : "–",
              s.energy_per_token_j);
  out += card("avg_power_w", "Mean power",
              s.avg_power_w.value ? format_si(*s.avg_power_w.value, "W") : "–", s.avg_power_w);
  out += card("peak_power_w", "Peak power",
              s.peak_power_w.value ? format_si(*s.peak_power_w.value, "W") : "–", s.peak_power_w);
  out += "</div>\n";
  return out;
}

std::string run_facts(const run_summary& s) {
  std::string out = "<table class=\"facts\">\n";
  auto row = [&](std::string_view k, const std::string& v) {
    if (!v.empty())
      fmt::format_to(std::back_inserter(out), "<tr><th>{}</th><td>{}</td></tr>\n", k, esc(v));
  };
  row("run id", s.run_id);
  std::string hosts;
  for (const auto& h : s.hosts)
    hosts += (hosts.empty() ? "" : ", ") + h;
  row(s.hosts.size() > 1 ? "hosts" : "host", hosts);
  row("started (UTC)", s.start_time);
  row("status", s.status);
  row("user", s.user);
  row("command", s.command);
  row("measured by",
      fmt::format("joules {}, backend {}, method {}", s.subcommand, s.backend, s.method));
  row("devices", s.gpu_names.empty() ? std::string() : s.gpu_names);
  if (s.steps > 0) {
    row("steps",
        fmt::format("{}{}", s.steps, s.tokens ? fmt::format(", {:.4g} tokens", *s.tokens) : ""));
  }
  std::string labels;
  for (const auto& [k, v] : s.labels)
    labels += (labels.empty() ? "" : ", ") + k + "=" + v;
  row("labels", labels);
  std::string files;
  for (const auto& f : s.files)
    files += (files.empty() ? "" : ", ") + f;
  row("records from", files);
  out += "</table>\n";
  return out;
}

std::string phase_table(const run_summary& s) {
  double total = 0.0;
  for (const auto& p : s.phases)
    total += p.energy_j;
  std::string out =
      "<table class=\"data\"><thead><tr><th>phase</th><th>energy</th><th>share</th>"
      "<th>duration</th><th>mean power</th><th>windows</th></tr></thead><tbody>\n";
  for (const auto& p : s.phases) {
    fmt::format_to(std::back_inserter(out),
                   "<tr data-phase=\"{}\" data-energy-j=\"{}\"><td>{}</td><td>{}</td><td>{:.1f} "
                   "%</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                   esc(p.name), exact(p.energy_j), esc(p.name), esc(format_energy(p.energy_j)),
                   total > 0 ? p.energy_j / total * 100.0 : 0.0,
                   p.duration_s > 0 ? format_duration(p.duration_s) : "–",
                   p.duration_s > 0 ? format_si(p.energy_j / p.duration_s, "W") : "–", p.windows);
  }
  out += "</tbody></table>\n";
  return out;
}

std::string device_table(const run_summary& s) {
  std::string out =
      "<table class=\"data\"><thead><tr><th>device</th><th>name</th><th>method</th>"
      "<th>energy</th><th>mean power</th><th>peak power</th><th>energy per step</th>"
      "<th>vs median GPU</th></tr></thead><tbody>\n";
  for (const auto& g : s.gpus) {
    const std::string dev = fmt::format("{}{} {}", s.hosts.size() > 1 ? g.host + " " : "",
                                        g.kind == "gpu"   ? "GPU"
                                        : g.kind == "cpu" ? "CPU"
                                                          : "DRAM",
                                        g.index);
    fmt::format_to(std::back_inserter(out),
                   "<tr data-device=\"{}\" data-energy-j=\"{}\"><td>{}</td><td>{}</td><td>{}</td>"
                   "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                   esc(dev), exact(g.energy_j), esc(dev), esc(g.name), esc(g.method),
                   g.energy_j ? esc(format_energy(*g.energy_j)) : "–",
                   g.avg_power_w ? format_si(*g.avg_power_w, "W") : "–",
                   g.peak_power_w ? format_si(*g.peak_power_w, "W") : "–",
                   g.energy_per_step_j ? format_si(*g.energy_per_step_j, "J") : "–",
                   g.deviation ? fmt::format("{:+.2f} %", *g.deviation * 100.0) : "–");
  }
  out += "</tbody></table>\n";
  return out;
}

std::string straggler_table(const run_summary& s) {
  if (s.stragglers.empty()) {
    return "<p>No straggler: no GPU's energy per step stayed apart from the others' beyond "
           "<code>--straggler-threshold</code> (a <code>straggler</code> record would say "
           "so).</p>\n";
  }
  std::string out =
      "<table class=\"data\"><thead><tr><th>GPU</th><th>deviation</th><th>at step</th>"
      "<th>over steps</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < s.stragglers.size(); ++i) {
    const auto& st = s.stragglers[i];
    fmt::format_to(std::back_inserter(out),
                   "<tr><td>{}GPU {} <span class=\"uuid\">{}</span></td><td>{:+.1f} %</td>"
                   "<td>{}</td><td>{}</td></tr>\n",
                   s.hosts.size() > 1 ? esc(s.straggler_hosts[i]) + " " : "", st.gpu, esc(st.uuid),
                   st.deviation * 100.0, st.at_step, st.window_steps);
  }
  out += "</tbody></table>\n";
  return out;
}

std::string prediction_table(const run_summary& s) {
  if (s.predictions.empty()) return {};
  std::string out =
      "<table class=\"data\"><thead><tr><th>at step</th><th>milestone</th><th>to step</th>"
      "<th>predicted energy</th><th>predicted duration</th><th>actual energy</th>"
      "<th>error</th></tr></thead><tbody>\n";
  for (const auto& p : s.predictions) {
    fmt::format_to(
        std::back_inserter(out),
        "<tr><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        p.p.at_step,
        p.p.milestone_percent > 0 ? fmt::format("{} %", p.p.milestone_percent) : "first",
        p.p.total_steps, p.p.scope == "epoch" ? " (epoch)" : "", esc(format_energy(p.p.energy_j)),
        esc(format_duration(p.p.duration_s)),
        p.actual_energy_j ? esc(format_energy(*p.actual_energy_j)) : "not reached in the records",
        p.error ? fmt::format("{:+.1f} %", *p.error * 100.0) : "–");
  }
  out += "</tbody></table>\n";
  return out;
}

std::string health_list(const run_summary& s) {
  if (s.health.empty()) {
    return "<p>No health event in the records: no device lost, no counter reset, no failed "
           "reading, no hardware or thermal slowdown in the samples.</p>\n";
  }
  std::string out = "<ul class=\"events\">\n";
  for (const auto& e : s.health) {
    fmt::format_to(std::back_inserter(out), "<li>{}{}{}</li>\n",
                   e.at_s ? "<span class=\"at\">" + esc(format_duration(*e.at_s)) + "</span> " : "",
                   s.hosts.size() > 1 ? esc(e.host) + ": " : "", esc(e.what));
  }
  out += "</ul>\n";
  return out;
}

std::string run_section(const report::run& r, std::size_t index) {
  const run_summary s = report::summarize(r);
  const std::string id = fmt::format("r{}", index);
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "<section class=\"run\" id=\"{}\">\n<h2>Run {}</h2>\n", id, esc(s.run_id));
  out += run_facts(s);
  for (const auto& n : s.notes)
    fmt::format_to(o, "<p class=\"warn\">{}</p>\n", esc(n));
  out += "<h3>Headline</h3>\n" + headline(s);
  out += "<h3>Power over time</h3>\n" + power_chart(r, s, id);
  out += "<h3>Energy per step</h3>\n" + step_charts(s, id);
  out += "<h3>Stragglers</h3>\n" + straggler_chart(s, id) + straggler_table(s);
  out += "<h3>Energy by phase</h3>\n" + phase_chart(s, id) + phase_table(s);
  out += "<h3>Prediction against the actual</h3>\n" + prediction_chart(s, id) + prediction_table(s);
  out += "<h3>Devices</h3>\n" + device_table(s);
  out += "<h3>Health events</h3>\n" + health_list(s);
  out += "</section>\n";
  return out;
}

}  // namespace

std::string report_page(const report::record_set& records, std::string_view generator) {
  std::string out;
  auto o = std::back_inserter(out);
  std::string title = "joules report";
  if (records.runs.size() == 1) title += ": run " + records.runs.front().run_id;
  fmt::format_to(
      o,
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<header><h1>{}</h1>"
      "<p class=\"sub\">Energy of GPU work, from joules' records (docs/jsonl-schema.md). "
      "Every figure says how it was obtained.</p></header>\n",
      esc(title), page_css(), esc(title));
  if (records.runs.size() > 1) {
    out += "<nav><p>Runs in these records:</p><ul>\n";
    for (std::size_t i = 0; i < records.runs.size(); ++i) {
      fmt::format_to(o, "<li><a href=\"#r{}\">{}</a></li>\n", i, esc(records.runs[i].run_id));
    }
    out += "</ul></nav>\n";
  }
  for (std::size_t i = 0; i < records.runs.size(); ++i)
    out += run_section(records.runs[i], i);
  if (!records.warnings.empty()) {
    out += "<section><h2>What could not be read</h2><ul class=\"events\">\n";
    for (const auto& w : records.warnings) {
      fmt::format_to(o, "<li>{}{}: {}</li>\n", esc(w.file),
                     w.line > 0 ? fmt::format(":{}", w.line) : "", esc(w.message));
    }
    out += "</ul></section>\n";
  }
  fmt::format_to(o,
                 "<footer>Made by {} from {} records. Colours: Okabe–Ito, with dash patterns "
                 "for print.</footer>\n<script>{}</script>\n</body>\n</html>\n",
                 esc(generator), records.records, page_script());
  return out;
}

}  // namespace joules::render
