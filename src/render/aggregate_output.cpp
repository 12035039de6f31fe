// joules aggregate's table, CSV and JSON (render/tables.hpp).

#include <fmt/format.h>

#include <iterator>

#include "render/tables.hpp"
#include "text/escape.hpp"
#include "util/json_writer.hpp"

namespace joules::render {
namespace {

constexpr double kJoulesPerKwh = 3.6e6;

std::string joined(const std::set<std::string>& s, std::string_view sep) {
  std::string out;
  for (const auto& x : s) {
    if (!out.empty()) out += sep;
    out += x;
  }
  return out;
}

std::string co2_text(const report::aggregate_row& r) {
  if (!r.co2e_g) return "–";
  std::string v = *r.co2e_g >= 1000 ? fmt::format("{:.4g} kg", *r.co2e_g / 1000)
                                    : fmt::format("{:.4g} g", *r.co2e_g);
  if (r.co2e_nodes < r.nodes) v += fmt::format(" ({}/{})", r.co2e_nodes, r.nodes);
  return v;
}

std::string cost_text(const report::aggregate_row& r) {
  if (!r.cost) return "–";
  std::string v = fmt::format("{:.4g} {}", *r.cost, joined(r.currencies, "+"));
  if (r.cost_nodes < r.nodes) v += fmt::format(" ({}/{})", r.cost_nodes, r.nodes);
  return v;
}

// A CSV field as RFC 4180 quotes it.
std::string csv(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string num(const std::optional<double>& v) {
  if (!v) return "";
  std::string out;
  append_json_number(out, *v);
  return out;
}

void row_json(json_writer& j, const report::aggregate_row& r, const report::aggregate_result& a,
              bool total) {
  j.begin_object();
  if (!total) {
    for (std::size_t i = 0; i < a.by.size() && i < r.key.size(); ++i)
      j.field(report::to_string(a.by[i]), r.key[i]);
  }
  j.field("runs", r.runs).field("nodes", r.nodes).field("incomplete_nodes", r.incomplete);
  j.field("energy_j", r.energy_j).field("energy_kwh", r.energy_j / kJoulesPerKwh);
  j.field("co2e_g", r.co2e_g).field("co2e_nodes", r.co2e_nodes);
  j.field("cost", r.cost).field("cost_nodes", r.cost_nodes);
  j.key("currencies").begin_array();
  for (const auto& c : r.currencies)
    j.value(c);
  j.end_array();
  j.field("duration_s", r.duration_s).field("gpu_hours", r.gpu_hours);
  j.field("steps", r.steps).field("tokens", r.tokens);
  j.key("methods").begin_array();
  for (const auto& m : r.methods)
    j.value(m);
  j.end_array().key("co2e_sources").begin_array();
  for (const auto& s : r.co2_sources)
    j.value(s);
  j.end_array().end_object();
}

}  // namespace

std::string aggregate_text(const report::aggregate_result& a) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head;
  for (const auto k : a.by)
    head.emplace_back(report::to_string(k));
  for (const char* h : {"runs", "nodes", "energy", "kWh", "CO2e", "cost", "GPU-hours", "steps",
                        "method", "CO2e source"})
    head.emplace_back(h);
  const bool grouped = !a.by.empty();
  if (!grouped) head.insert(head.begin(), "");
  cells.push_back(head);
  auto add = [&](const report::aggregate_row& r, bool total) {
    std::vector<std::string> c;
    if (!grouped) c.emplace_back("total");
    for (std::size_t i = 0; i < a.by.size(); ++i)
      c.push_back(total ? (i == 0 ? "total" : "") : text::escape_for_terminal(r.key[i]));
    c.push_back(fmt::format("{}", r.runs));
    c.push_back(
        fmt::format("{}{}", r.nodes, r.incomplete ? fmt::format(" ({} cut)", r.incomplete) : ""));
    c.push_back(report::format_si(r.energy_j, "J"));
    c.push_back(fmt::format("{:.4g}", r.energy_j / kJoulesPerKwh));
    c.push_back(co2_text(r));
    c.push_back(text::escape_for_terminal(cost_text(r)));
    c.push_back(fmt::format("{:.4g}", r.gpu_hours));
    c.push_back(fmt::format("{}", r.steps));
    c.push_back(joined(r.methods, "+"));
    c.push_back(text::escape_for_terminal(joined(r.co2_sources, "; ")));
    cells.push_back(std::move(c));
  };
  if (grouped) {
    for (const auto& r : a.rows)
      add(r, false);
  }
  if (!grouped || a.rows.size() > 1) add(a.total, true);
  std::vector<std::size_t> width(cells.front().size(), 0);
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      line += i == 0 ? "" : "  ";
      line += fmt::format("{:<{}}", row[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string aggregate_csv(const report::aggregate_result& a) {
  std::string out;
  for (const auto k : a.by)
    out += std::string(report::to_string(k)) + ",";
  out +=
      "runs,nodes,incomplete_nodes,energy_j,energy_kwh,co2e_g,co2e_nodes,cost,cost_nodes,"
      "currencies,duration_s,gpu_hours,steps,tokens,methods,co2e_sources\n";
  auto add = [&](const report::aggregate_row& r, bool total) {
    for (std::size_t i = 0; i < a.by.size(); ++i)
      out += (total ? std::string(i == 0 ? "total" : "") : csv(r.key[i])) + ",";
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.runs, r.nodes,
                       r.incomplete, num(r.energy_j), num(r.energy_j / kJoulesPerKwh),
                       num(r.co2e_g), r.co2e_nodes, num(r.cost), r.cost_nodes,
                       csv(joined(r.currencies, ";")), num(r.duration_s), num(r.gpu_hours), r.steps,
                       num(r.tokens), csv(joined(r.methods, ";")), csv(joined(r.co2_sources, ";")));
  };
  for (const auto& r : a.rows)
    add(r, false);
  if (!a.by.empty()) add(a.total, true);
  return out;
}

std::string aggregate_json(const report::aggregate_result& a) {
  json_writer j;
  j.begin_object().field("type", "aggregate").key("by").begin_array();
  for (const auto k : a.by)
    j.value(report::to_string(k));
  j.end_array().key("groups").begin_array();
  for (const auto& r : a.rows)
    row_json(j, r, a, false);
  j.end_array().key("total");
  row_json(j, a.total, a, true);
  j.end_object();
  return j.take() + "\n";
}

}  // namespace joules::render
