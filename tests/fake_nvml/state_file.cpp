#include "state_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

namespace fake_nvml {
namespace {

const char* state_path() {
  const char* p = std::getenv("FAKE_NVML_STATE_FILE");
  return p != nullptr && p[0] != '\0' ? p : nullptr;
}

std::mutex g_write_mutex;

}  // namespace

void save_state(const scenario& s) {
  const char* path = state_path();
  if (path == nullptr) return;
  std::ostringstream text;
  text << "# fake_nvml state: uuid limit_mw step_time_factor\n";
  for (const device& d : s.devices) {
    const unsigned int mw = d.power->limit_mw();
    char factor[32];
    std::snprintf(factor, sizeof factor, "%.6f", d.step_time_factor_at(mw / 1000.0));
    text << d.uuid << ' ' << mw << ' ' << factor << '\n';
  }
  const std::string body = text.str();
  std::lock_guard lock(g_write_mutex);
  const std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const bool written = write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
  close(fd);
  if (!written || std::rename(tmp.c_str(), path) != 0) unlink(tmp.c_str());
}

void load_state(scenario& s, double t) {
  const char* path = state_path();
  if (path == nullptr) return;
  std::ifstream in(path);
  if (!in) {
    save_state(s);
    return;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string uuid;
    unsigned int mw = 0;
    if (!(fields >> uuid >> mw)) continue;
    for (device& d : s.devices) {
      if (d.uuid != uuid || mw < d.min_limit_mw || mw > d.max_limit_mw) continue;
      d.power->set_limit(t, mw);
    }
  }
}

}  // namespace fake_nvml
