#include "backends/rapl/cpu_estimate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "data/csv.hpp"
#include "data/embedded_data.hpp"
#include "util/strings.hpp"

namespace joules::rapl {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

struct tdp_entry {
  std::string name;
  std::string key;  // normalised
  double tdp_w;
};

const std::vector<tdp_entry>& tdp_table() {
  static const std::vector<tdp_entry> table = [] {
    std::vector<tdp_entry> out;
    const auto text = data::table("cpu_tdp.csv");
    if (!text) return out;
    for (const auto& row : carbon::parse_csv(*text, /*skip_header=*/true)) {
      if (row.size() < 2) continue;
      const auto w = parse_double(row[1]);
      if (!w || *w <= 0) continue;
      out.push_back({row[0], normalise_cpu_name(row[0]), *w});
    }
    return out;
  }();
  return table;
}

}  // namespace

std::string default_proc_root() {
  const char* env = std::getenv("JOULES_PROC_ROOT");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("/proc");
}

cpu_identity read_cpu_identity(const std::string& proc_root) {
  cpu_identity id;
  std::set<std::string> packages;
  std::istringstream in(slurp(proc_root + "/cpuinfo"));
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key(trim(std::string_view(line).substr(0, colon)));
    const std::string value(trim(std::string_view(line).substr(colon + 1)));
    if (key == "model name" && id.model.empty()) id.model = value;
    if (key == "physical id") packages.insert(value);
    if (key == "flags" && !id.hypervisor) {
      for (const auto& f : words(value))
        id.hypervisor = id.hypervisor || f == "hypervisor";
    }
  }
  id.sockets = std::max<unsigned>(1, static_cast<unsigned>(packages.size()));
  return id;
}

std::string normalise_cpu_name(std::string_view name) {
  // Lower case, and the trademark marks ((R), (TM), ®, ™) as spaces.
  std::string lowered;
  for (char c : name)
    lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string s;
  for (std::size_t i = 0; i < lowered.size();) {
    bool mark = false;
    for (std::string_view m : {"(r)", "(tm)", "\xc2\xae", "\xe2\x84\xa2"}) {
      if (lowered.compare(i, m.size(), m) == 0) {
        s += ' ';
        i += m.size();
        mark = true;
        break;
      }
    }
    if (!mark) s += lowered[i++];
  }
  if (const auto at = s.find('@'); at != std::string::npos) s.erase(at);  // "@ 2.50GHz"
  std::string out;
  for (const auto& w : words(s)) {
    if (w == "cpu" || w == "processor" || ends_with(w, "-core") || ends_with(w, "ghz")) continue;
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::optional<tdp_match> lookup_tdp(std::string_view model) {
  const std::string key = normalise_cpu_name(model);
  if (key.empty()) return std::nullopt;
  const tdp_entry* best = nullptr;
  for (const auto& e : tdp_table()) {
    if (e.key.empty()) continue;
    if (e.key == key) return tdp_match{e.name, e.tdp_w};
    const bool prefix = key.size() > e.key.size() && key.compare(0, e.key.size(), e.key) == 0 &&
                        key[e.key.size()] == ' ';
    if (prefix && (best == nullptr || e.key.size() > best->key.size())) best = &e;
  }
  if (best == nullptr) return std::nullopt;
  return tdp_match{best->name, best->tdp_w};
}

std::optional<cpu_times> parse_cpu_times(std::string_view proc_stat) {
  const auto nl = proc_stat.find('\n');
  const auto line = proc_stat.substr(0, nl);
  const auto w = words(line);
  if (w.size() < 5 || w[0] != "cpu") return std::nullopt;
  std::vector<std::uint64_t> v;
  for (std::size_t i = 1; i < w.size(); ++i) {
    std::uint64_t x = 0;
    const auto [p, ec] = std::from_chars(w[i].data(), w[i].data() + w[i].size(), x);
    if (ec != std::errc() || p != w[i].data() + w[i].size()) return std::nullopt;
    v.push_back(x);
  }
  v.resize(std::max<std::size_t>(v.size(), 8), 0);
  // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
  cpu_times t;
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6];
  t.total = t.busy + v[3] + v[4] + v[7];
  return t;
}

std::optional<cpu_times> read_cpu_times(const std::string& proc_root) {
  return parse_cpu_times(slurp(proc_root + "/stat"));
}

double utilisation::update(const cpu_times& now) {
  auto ratio = [](std::uint64_t busy, std::uint64_t total) {
    return total > 0 ? std::clamp(static_cast<double>(busy) / static_cast<double>(total), 0.0, 1.0)
                     : 0.0;
  };
  if (!last_) {
    last_ = now;
    value_ = ratio(now.busy, now.total);  // since boot: all there is until a span is long enough
    return *value_;
  }
  if (now.total < last_->total || now.busy < last_->busy) {
    last_ = now;  // the counters went backwards (another /proc): start again
    return value_.value_or(0.0);
  }
  const std::uint64_t dt = now.total - last_->total;
  if (dt < kMinTicks) return value_.value_or(0.0);
  value_ = ratio(now.busy - last_->busy, dt);
  last_ = now;
  return *value_;
}

}  // namespace joules::rapl
