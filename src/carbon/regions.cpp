#include "carbon/regions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <numeric>
#include <tuple>
#include <utility>

#include "data/embedded_data.hpp"
#include "util/strings.hpp"

namespace joules::carbon {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool all_alpha(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0;
  });
}

std::string column(const csv_row& r, std::size_t i) {
  return i < r.size() ? r[i] : std::string();
}

// A row of grid_intensity.csv whose alpha-2 (or US-XX) or alpha-3 code is `key`.
const csv_row* grid_row(const region_tables& t, const std::string& key) {
  for (const auto& r : t.grid) {
    if (r.size() >= 7 && (r[0] == key || (!r[1].empty() && r[1] == key))) return &r;
  }
  return nullptr;
}

std::optional<region_match> grid_match(const region_tables& t, const std::string& key) {
  const csv_row* r = grid_row(t, key);
  if (r == nullptr) return std::nullopt;
  region_match m;
  m.region = (*r)[0];
  const auto g = parse_double((*r)[3]);
  if (!g) {
    m.missing =
        fmt::format("joules' tables list {} ({}) without a carbon intensity", (*r)[2], (*r)[0]);
    return m;
  }
  intensity i;
  i.g_per_kwh = *g;
  i.region = (*r)[0];
  i.name = (*r)[2];
  i.year = parse_year((*r)[4]);
  i.source = (*r)[5];
  i.licence = (*r)[6];
  i.attribution = column(*r, 7);
  i.method = (*r)[0].size() > 2 ? "us_state_average" : "country_average";
  m.grid = std::move(i);
  return m;
}

std::string cloud_label(const csv_row& r) {
  const std::string where = r[2].empty() ? r[3] : fmt::format("{}, {}", r[3], r[2]);
  return fmt::format("{}:{} ({})", r[0], r[1], where);
}

std::optional<region_match> cloud_match(const region_tables& t, const std::string& provider,
                                        const std::string& region) {
  for (const auto& r : t.cloud) {
    if (r.size() < 8 || r[0] != provider || r[1] != region) continue;
    region_match m;
    m.region = provider + ":" + region;
    const std::string where = r[2].empty() ? r[3] : fmt::format("{}, {}", r[3], r[2]);
    if (const auto g = parse_double(r[4])) {
      intensity i;
      i.g_per_kwh = *g;
      i.region = m.region;
      i.name = fmt::format("{} {} ({})", provider, region, where);
      i.year = parse_year(r[5]);
      i.source = r[6];
      i.licence = r[7];
      i.method = "cloud_provider";
      m.grid = std::move(i);
      return m;
    }
    // No figure from the provider: the grid average of the place the region is in.
    const auto loc = grid_match(t, r[2]);
    if (!loc) {
      m.missing = fmt::format("{} is in {}, which joules' tables do not list", m.region,
                              r[2].empty() ? "no known place" : r[2]);
    } else if (!loc->grid) {
      m.missing = fmt::format("{} is in {}: {}", m.region, r[2], loc->missing);
    } else {
      intensity i = *loc->grid;
      i.region = m.region;
      i.name = fmt::format("{} {} ({}: {})", provider, region, where, i.name);
      i.source = fmt::format("{} for the region's location ({}: {})", i.source, r[2], r[6]);
      i.method = "cloud_region_location";
      m.grid = std::move(i);
    }
    return m;
  }
  return std::nullopt;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::size_t common_prefix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

struct scored {
  std::size_t distance = 0;
  std::size_t prefix = 0;
  std::string key;
  std::string label;
};

// The closest of `all`: within `max_distance`, else (when `prefix_fallback`) those sharing the
// longest prefix of at least `min_prefix` characters.
std::vector<std::string> best(std::vector<scored> all, std::size_t max_distance, std::size_t n,
                              std::size_t min_prefix) {
  std::sort(all.begin(), all.end(), [](const scored& a, const scored& b) {
    return std::make_tuple(a.distance, b.prefix, a.key) <
           std::make_tuple(b.distance, a.prefix, b.key);
  });
  std::vector<std::string> out;
  for (const auto& s : all) {
    if (s.distance > max_distance || out.size() == n) break;
    if (std::find(out.begin(), out.end(), s.label) == out.end()) out.push_back(s.label);
  }
  if (!out.empty() || min_prefix == 0) return out;
  std::size_t longest = 0;
  for (const auto& s : all)
    longest = std::max(longest, s.prefix);
  if (longest < min_prefix) return out;
  std::sort(all.begin(), all.end(), [](const scored& a, const scored& b) { return a.key < b.key; });
  for (const auto& s : all) {
    if (s.prefix == longest && out.size() < n) out.push_back(s.label);
  }
  return out;
}

}  // namespace

region_kind classify_region(std::string_view region) {
  const auto colon = region.find(':');
  if (colon != std::string_view::npos) {
    const std::string provider = lower(region.substr(0, colon));
    const auto name = region.substr(colon + 1);
    const bool ok_name = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-';
    });
    if ((provider == "gcp" || provider == "aws" || provider == "azure") && ok_name)
      return region_kind::cloud;
    return region_kind::malformed;
  }
  if ((region.size() == 2 || region.size() == 3) && all_alpha(region)) return region_kind::country;
  if (region.size() == 5 && upper(region.substr(0, 3)) == "US-" && all_alpha(region.substr(3)))
    return region_kind::us_state;
  return region_kind::malformed;
}

std::string normalised_region(std::string_view region) {
  const auto colon = region.find(':');
  if (colon != std::string_view::npos) {
    return lower(region.substr(0, colon)) + ":" + lower(region.substr(colon + 1));
  }
  return upper(region);
}

const region_tables& shipped_region_tables() {
  static const std::vector<csv_row> grid =
      parse_csv(data::table("grid_intensity.csv").value_or(""), /*skip_header=*/true);
  static const std::vector<csv_row> cloud =
      parse_csv(data::table("cloud_regions.csv").value_or(""), /*skip_header=*/true);
  static const region_tables tables{grid, cloud};
  return tables;
}

std::optional<region_match> find_region(std::string_view text, const region_tables& tables) {
  const std::string key = normalised_region(text);
  if (classify_region(key) == region_kind::cloud) {
    const auto colon = key.find(':');
    return cloud_match(tables, key.substr(0, colon), key.substr(colon + 1));
  }
  return grid_match(tables, key);
}

std::vector<std::string> close_regions(std::string_view text, const region_tables& tables,
                                       std::size_t n) {
  const std::string typed(trim(text));
  const std::string key = normalised_region(typed);
  auto grid_label = [](const csv_row& r) { return fmt::format("{} ({})", r[0], r[2]); };

  // Codes people use that ISO 3166-1 does not assign: the United Kingdom is GB, and the EU
  // writes Greece EL.
  constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kAliases = {
      {{"UK", "GB"}, {"EL", "GR"}}};
  for (const auto& [alias, code] : kAliases) {
    if (key != alias) continue;
    if (const csv_row* r = grid_row(tables, std::string(code))) return {grid_label(*r)};
  }
  // A country or state named in full: "Germany", "california".
  const std::string name = lower(typed);
  for (const auto& r : tables.grid) {
    if (r.size() >= 7 && lower(r[2]) == name) return {grid_label(r)};
  }

  std::vector<scored> all;
  const auto colon = key.find(':');
  if (colon != std::string::npos) {
    const std::string provider = key.substr(0, colon);
    const std::string region = key.substr(colon + 1);
    const bool known_provider = provider == "gcp" || provider == "aws" || provider == "azure";
    for (const auto& r : tables.cloud) {
      if (r.size() < 8) continue;
      // The same name under another provider comes first (aws:westeurope -> azure:westeurope).
      if (r[0] != provider && r[1] == region) {
        all.push_back({0, region.size(), r[0] + ":" + r[1], cloud_label(r)});
      } else if (r[0] == provider || !known_provider) {
        all.push_back({edit_distance(region, r[1]), common_prefix(region, r[1]), r[0] + ":" + r[1],
                       cloud_label(r)});
      }
    }
    return best(std::move(all), std::max<std::size_t>(2, region.size() / 4), n, 3);
  }
  // A subdivision of a country that has no row of its own: DE-BY -> DE.
  const auto dash = key.find('-');
  if (dash != std::string::npos && key.substr(0, dash) != "US") {
    if (const csv_row* r = grid_row(tables, key.substr(0, dash))) return {grid_label(*r)};
  }
  for (const auto& r : tables.grid) {
    if (r.size() < 7) continue;
    std::size_t d = edit_distance(key, r[0]);
    if (!r[1].empty()) d = std::min(d, edit_distance(key, r[1]));
    all.push_back({d, common_prefix(key, r[0]), r[0], grid_label(r)});
  }
  return best(std::move(all), 1, n, 0);
}

}  // namespace joules::carbon
