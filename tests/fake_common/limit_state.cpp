#include "limit_state.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

namespace fake_gpu {
namespace {

const char* limit_state_path(const std::string& prefix) {
  const char* p = std::getenv((prefix + "_STATE_FILE").c_str());
  return p != nullptr && p[0] != '\0' ? p : nullptr;
}

std::mutex g_limit_write_mutex;

}  // namespace

double step_curve::at(double limit_w) const {
  const auto& c = points;
  if (c.empty()) return 1.0;
  if (limit_w <= c.front().first) return c.front().second;
  if (limit_w >= c.back().first) return c.back().second;
  const auto hi = std::upper_bound(c.begin(), c.end(), limit_w,
                                   [](double w, const auto& p) { return w < p.first; });
  const auto lo = hi - 1;
  const double f = (limit_w - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

step_curve parse_step_curve(json_fields& f) {
  step_curve out;
  const std::string key = "step_time_factor";
  if (!f.has(key)) return out;
  const nlohmann::json& list = f.at(key);
  const char* why = "must be a list of [limit_w, factor] pairs, limits ascending, factors > 0";
  if (!list.is_array() || list.empty()) f.fail(key, why);
  for (const nlohmann::json& p : list) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) f.fail(key, why);
    const double w = p[0].get<double>();
    const double factor = p[1].get<double>();
    if (!std::isfinite(w) || !std::isfinite(factor) || factor <= 0.0) f.fail(key, why);
    if (!out.points.empty() && w <= out.points.back().first) f.fail(key, why);
    out.points.emplace_back(w, factor);
  }
  return out;
}

void save_limits(const std::string& prefix, const std::vector<limited_device>& devices) {
  const char* path = limit_state_path(prefix);
  if (path == nullptr) return;
  std::ostringstream text;
  text << "# fake state: uuid limit_mw step_time_factor\n";
  for (const limited_device& d : devices) {
    const unsigned int mw = d.power->limit_mw();
    char factor[32];
    std::snprintf(factor, sizeof factor, "%.6f",
                  d.curve != nullptr ? d.curve->at(mw / 1000.0) : 1.0);
    text << d.uuid << ' ' << mw << ' ' << factor << '\n';
  }
  const std::string body = text.str();
  std::lock_guard lock(g_limit_write_mutex);
  const std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const bool written = write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
  close(fd);
  if (!written || std::rename(tmp.c_str(), path) != 0) unlink(tmp.c_str());
}

void load_limits(const std::string& prefix, const std::vector<limited_device>& devices, double t) {
  const char* path = limit_state_path(prefix);
  if (path == nullptr) return;
  std::ifstream in(path);
  if (!in) {
    save_limits(prefix, devices);
    return;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string uuid;
    unsigned int mw = 0;
    if (!(fields >> uuid >> mw)) continue;
    for (const limited_device& d : devices) {
      if (d.uuid != uuid || mw < d.min_mw || mw > d.max_mw) continue;
      d.power->set_limit(t, mw);
    }
  }
}

}  // namespace fake_gpu
