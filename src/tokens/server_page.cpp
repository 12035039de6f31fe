#include "tokens/server_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "util/error.hpp"

namespace joules::tokens {
namespace {

struct known_server {
  server_kind kind;
  std::array<std::string_view, kCountKinds> counts;  // input, output, requests ("" none)
  std::string_view running;
};

// docs/inference.md cites the source file of each name.
constexpr std::array<known_server, 4> kServers = {{
    {server_kind::vllm,
     {"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total"},
     "vllm:num_requests_running"},
    {server_kind::sglang,
     {"sglang:prompt_tokens_total", "sglang:generation_tokens_total", "sglang:num_requests_total"},
     "sglang:num_running_reqs"},
    {server_kind::tgi,
     {"tgi_request_input_length_sum", "tgi_request_generated_tokens_sum",
      "tgi_request_generated_tokens_count"},
     "tgi_batch_current_size"},
    {server_kind::llamacpp,
     {"llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total", ""},
     "llamacpp:requests_processing"},
}};

constexpr std::size_t kRunningRole = kCountKinds;

struct role {
  std::size_t server;
  std::size_t what;  // a count_kind, or kRunningRole
};

const std::unordered_map<std::string_view, role>& known_names() {
  static const auto names = [] {
    std::unordered_map<std::string_view, role> m;
    for (std::size_t s = 0; s < kServers.size(); ++s) {
      for (std::size_t k = 0; k < kCountKinds; ++k) {
        if (!kServers[s].counts[k].empty()) m.emplace(kServers[s].counts[k], role{s, k});
      }
      m.emplace(kServers[s].running, role{s, kRunningRole});
    }
    return m;
  }();
  return names;
}

// name{a="x",b="y"} with the labels sorted: the same series whatever order a page writes them in.
std::string series_key(std::string_view name, label_pairs& labels) {
  std::sort(labels.begin(), labels.end());
  std::string key(name);
  key += '{';
  for (const auto& [k, v] : labels) {
    key += k;
    key += "=\"";
    for (char c : v) {
      if (c == '"' || c == '\\') key += '\\';
      key += c == '\n' ? 'n' : c;
    }
    key += "\",";
  }
  key += '}';
  return key;
}

bool has_labels(const label_pairs& have, const label_pairs& want) {
  return std::all_of(want.begin(), want.end(), [&](const auto& w) {
    return std::find(have.begin(), have.end(), w) != have.end();
  });
}

std::string selector_text(const metric_selector& s) {
  std::string out = s.name;
  if (!s.labels.empty()) {
    out += '{';
    for (std::size_t i = 0; i < s.labels.size(); ++i)
      out += fmt::format("{}{}=\"{}\"", i > 0 ? "," : "", s.labels[i].first, s.labels[i].second);
    out += '}';
  }
  return out;
}

void add_model(std::vector<std::string>& models, const label_pairs& labels) {
  for (const auto& [k, v] : labels) {
    if (k == "model_name" && std::find(models.begin(), models.end(), v) == models.end())
      models.push_back(v);
  }
}

}  // namespace

std::string_view to_string(server_kind k) {
  switch (k) {
    case server_kind::vllm:
      return "vllm";
    case server_kind::sglang:
      return "sglang";
    case server_kind::tgi:
      return "tgi";
    case server_kind::llamacpp:
      return "llamacpp";
    case server_kind::custom:
      break;
  }
  return "custom";
}

std::string_view to_string(count_kind k) {
  switch (k) {
    case count_kind::input:
      return "input";
    case count_kind::output:
      return "output";
    case count_kind::requests:
      break;
  }
  return "requests";
}

metric_selector parse_metric_selector(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return usage_error(fmt::format(
        "--tokens-metric '{}': {}; expected [KIND=]NAME[{{LABEL=\"VALUE\",...}}], KIND output "
        "(the default), input or requests, e.g. output=my_generated_tokens_total{{model=\"m\"}}",
        text, why));
  };
  metric_selector s;
  std::string_view rest = text;
  const std::size_t eq = rest.find('=');
  const std::size_t brace = rest.find('{');
  if (eq != std::string_view::npos && (brace == std::string_view::npos || eq < brace)) {
    const std::string_view kind = rest.substr(0, eq);
    if (kind == "input") {
      s.kind = count_kind::input;
    } else if (kind == "output") {
      s.kind = count_kind::output;
    } else if (kind == "requests") {
      s.kind = count_kind::requests;
    } else {
      throw bad(fmt::format("unknown KIND '{}'", kind));
    }
    rest.remove_prefix(eq + 1);
  }
  const std::size_t open = rest.find('{');
  s.name = std::string(rest.substr(0, open));
  if (!is_metric_name(s.name)) throw bad("NAME is not a metric name");
  if (open != std::string_view::npos) {
    auto labels = parse_label_matchers(rest.substr(open));
    if (!labels) throw bad("the labels are not LABEL=\"VALUE\" pairs in braces");
    s.labels = std::move(*labels);
  }
  return s;
}

page_result read_page(std::string_view page, const std::vector<metric_selector>& custom) {
  page_result out;
  page_reading r;
  // Per known server: its counters' series, whether each was on the page, its running gauge.
  std::array<std::array<std::vector<series_value>, kCountKinds>, kServers.size()> found;
  std::array<std::array<bool, kCountKinds>, kServers.size()> seen{};
  std::array<std::optional<double>, kServers.size()> running;
  std::array<std::vector<std::string>, kServers.size()> models;
  std::vector<bool> matched(custom.size(), false);
  const auto& names = known_names();

  const auto error = parse_text_format(page, [&](const sample_view& v) {
    if (!custom.empty()) {
      bool wanted = false;
      for (const auto& c : custom)
        wanted = wanted || c.name == v.name;
      if (!wanted) return;
      label_pairs labels = decode_labels(v.labels);
      for (std::size_t i = 0; i < custom.size(); ++i) {
        if (custom[i].name != v.name || !has_labels(labels, custom[i].labels)) continue;
        matched[i] = true;
        if (!std::isfinite(v.value) || v.value < 0) continue;  // a count is finite
        add_model(r.models, labels);
        r.counts[static_cast<std::size_t>(custom[i].kind)].push_back(
            {series_key(v.name, labels), v.value});
      }
      return;
    }
    const auto it = names.find(v.name);
    if (it == names.end()) return;
    const role w = it->second;
    if (w.what == kRunningRole) {
      if (std::isfinite(v.value) && v.value >= 0)
        running[w.server] = running[w.server].value_or(0.0) + v.value;
      return;
    }
    seen[w.server][w.what] = true;
    if (!std::isfinite(v.value) || v.value < 0) return;  // a count is finite
    label_pairs labels = decode_labels(v.labels);
    if (w.what != static_cast<std::size_t>(count_kind::requests))
      add_model(models[w.server], labels);
    found[w.server][w.what].push_back({series_key(v.name, labels), v.value});
  });
  if (error) {
    out.error = fmt::format("not Prometheus text: line {}: {}", error->line, error->what);
    return out;
  }

  if (!custom.empty()) {
    for (std::size_t i = 0; i < custom.size(); ++i) {
      if (!matched[i]) {
        out.error = fmt::format("no series {} on the page", selector_text(custom[i]));
        return out;
      }
      r.known[static_cast<std::size_t>(custom[i].kind)] = true;
    }
    r.kind = server_kind::custom;
    std::sort(r.models.begin(), r.models.end());
    out.reading = std::move(r);
    return out;
  }
  for (std::size_t s = 0; s < kServers.size(); ++s) {
    if (!seen[s][static_cast<std::size_t>(count_kind::output)]) continue;
    r.kind = kServers[s].kind;
    r.counts = std::move(found[s]);
    r.known = seen[s];
    r.running = running[s];
    r.models = std::move(models[s]);
    std::sort(r.models.begin(), r.models.end());
    out.reading = std::move(r);
    return out;
  }
  out.error =
      "no token counter joules knows (vllm:generation_tokens_total, "
      "sglang:generation_tokens_total, tgi_request_generated_tokens_sum, "
      "llamacpp:tokens_predicted_total); name one with --tokens-metric NAME";
  return out;
}

}  // namespace joules::tokens
