#include "export/metrics/label_policy.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "export/metrics/exposition.hpp"

namespace joules::exporter {

user_labels apply_label_policy(std::span<const std::pair<std::string, std::string>> user,
                               std::span<const std::string_view> builtin) {
  user_labels out;
  out.labels.reserve(user.size());
  const auto is_builtin = [&](std::string_view n) {
    return std::find(builtin.begin(), builtin.end(), n) != builtin.end();
  };
  const auto is_taken = [&](std::string_view n) {
    return is_builtin(n) || std::any_of(out.labels.begin(), out.labels.end(),
                                        [&](const auto& l) { return l.first == n; });
  };
  for (const auto& [raw, value] : user) {
    std::string name = sanitize_label_name(raw);
    std::string why;
    if (name != raw) why = "Prometheus label names are [a-zA-Z_][a-zA-Z0-9_]*";
    if (is_builtin(name)) {
      why = fmt::format("joules sets '{}' itself", name);
      name = std::string(kUserLabelPrefix) + name;
    }
    if (is_taken(name)) {
      why = fmt::format("'{}' is already taken", name);
      const std::string base = name;
      for (unsigned n = 2; is_taken(name); ++n)
        name = fmt::format("{}_{}", base, n);
    }
    if (name != raw) {
      out.renamed.push_back(fmt::format("label '{}' is exposed as '{}': {}", raw, name, why));
    }
    out.labels.emplace_back(std::move(name), value);
  }
  return out;
}

}  // namespace joules::exporter
