#include "export/otlp/otlp_json.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include "util/json_writer.hpp"

namespace joules::exporter {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Families whose values count things, written asInt when every value is whole.
bool counts_things(std::string_view name) {
  for (std::string_view unit :
       {"_joules_total", "_seconds_total", "_kwh_total", "_grams_total", "_cost_total"}) {
    if (ends_with(name, unit)) return false;
  }
  for (std::string_view suffix : {"_total", "_info", "_bytes", "_steps", "_step"}) {
    if (ends_with(name, suffix)) return true;
  }
  return false;
}

bool all_whole(const metric_family& f) {
  constexpr double kTwoPow53 = 9007199254740992.0;
  for (const auto& s : f.samples()) {
    if (!std::isfinite(s.value) || std::trunc(s.value) != s.value || std::fabs(s.value) > kTwoPow53)
      return false;
  }
  return true;
}

std::string int_text(std::int64_t v) {
  std::array<char, 24> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return {buf.data(), r.ptr};
}

void attributes(json_writer& w, const std::vector<std::pair<std::string, std::string>>& kv) {
  w.key("attributes").begin_array();
  for (const auto& [k, v] : kv) {
    w.begin_object().field("key", k).key("value").begin_object().field("stringValue", v);
    w.end_object().end_object();
  }
  w.end_array();
}

void data_points(json_writer& w, const metric_family& f, const otlp_batch_info& info,
                 bool cumulative) {
  const bool as_int = counts_things(f.name()) && all_whole(f);
  const std::string time = int_text(info.time_unix_nano);
  const std::string start = int_text(info.start_unix_nano);
  w.key("dataPoints").begin_array();
  for (const auto& s : f.samples()) {
    if (!std::isfinite(s.value)) continue;
    w.begin_object();
    attributes(w, parse_label_text(s.labels));
    if (cumulative) w.field("startTimeUnixNano", start);
    w.field("timeUnixNano", time);
    if (as_int) {
      w.field("asInt", int_text(static_cast<std::int64_t>(s.value)));
    } else {
      w.field("asDouble", s.value);
    }
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string_view otlp_unit(std::string_view name) {
  if (ends_with(name, "_total")) name.remove_suffix(6);
  struct suffix_unit {
    std::string_view suffix;
    std::string_view unit;
  };
  constexpr std::array<suffix_unit, 11> kUnits = {{{"_watts", "W"},
                                                   {"_joules", "J"},
                                                   {"_seconds", "s"},
                                                   {"_bytes_per_second", "By/s"},
                                                   {"_bytes", "By"},
                                                   {"_celsius", "Cel"},
                                                   {"_hertz", "Hz"},
                                                   {"_ratio", "1"},
                                                   {"_grams", "g"},
                                                   {"_grams_per_kwh", "g/kW.h"},
                                                   {"_kwh", "kW.h"}}};
  for (const auto& u : kUnits) {
    if (ends_with(name, u.suffix)) return u.unit;
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> parse_label_text(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t eq = text.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') break;
    std::pair<std::string, std::string> kv{std::string(text.substr(i, eq - i)), {}};
    std::size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        kv.second += text[j] == 'n' ? '\n' : text[j];
      } else {
        kv.second += text[j];
      }
    }
    out.push_back(std::move(kv));
    i = j + 1;                                   // past the closing quote
    if (i < text.size() && text[i] == ',') ++i;  // and the comma
  }
  return out;
}

void write_otlp_json(const exposition& e, const otlp_batch_info& info, std::string& out) {
  json_writer w;
  w.begin_object().key("resourceMetrics").begin_array().begin_object();
  w.key("resource").begin_object();
  attributes(w, info.resource);
  w.end_object();
  w.key("scopeMetrics").begin_array().begin_object();
  w.key("scope").begin_object().field("name", "joules").field("version", JOULES_VERSION);
  w.end_object();
  w.key("metrics").begin_array();
  for (const auto& f : e.families()) {
    if (f->empty()) continue;
    w.begin_object().field("name", f->name()).field("description", f->help());
    w.field("unit", otlp_unit(f->name()));
    if (f->type() == metric_type::counter) {
      w.key("sum").begin_object();
      data_points(w, *f, info, true);
      w.field("aggregationTemporality", 2).field("isMonotonic", true);
    } else {
      w.key("gauge").begin_object();
      data_points(w, *f, info, false);
    }
    w.end_object().end_object();
  }
  w.end_array().end_object().end_array();   // metrics, scopeMetrics entry, scopeMetrics
  w.end_object().end_array().end_object();  // resourceMetrics entry, resourceMetrics, request
  out += w.str();
}

}  // namespace joules::exporter
