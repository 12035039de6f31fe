#include "session/identity.hpp"

#include <fmt/format.h>
#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "util/clock.hpp"

namespace joules::session {
namespace {

std::optional<std::string> identity_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::optional<std::string>(v) : std::nullopt;
}

std::string random_run_id() {
  std::array<unsigned char, 6> bytes{};
  if (getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    // No entropy source: the pid and the clock still make a practically unique id.
    const auto t = static_cast<unsigned long long>(steady::now().time_since_epoch().count());
    return fmt::format("{:06x}{:06x}", static_cast<unsigned>(getpid()) & 0xffffffU,
                       t & 0xffffffULL);
  }
  std::string id;
  for (unsigned char b : bytes)
    id += fmt::format("{:02x}", b);
  return id;
}

bool is_ascii_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

std::string user_name() {
  // getpwuid_r: the name of the uid, which $USER may not match under sudo or in a container.
  std::array<char, 4096> buf{};
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr) {
    return found->pw_name;
  }
  return identity_env("USER").value_or("");
}

std::string host_name() {
  if (auto h = identity_env("JOULES_HOSTNAME")) return *h;
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return buf.data();
}

std::string resolve_run_id(const std::optional<std::string>& option) {
  if (option) return *option;
  if (auto id = identity_env("JOULES_RUN_ID")) return *id;
  if (auto job = identity_env("SLURM_JOB_ID")) {
    if (auto step = identity_env("SLURM_STEP_ID")) return *job + "." + *step;
    return *job;
  }
  return random_run_id();
}

bool valid_run_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return c > ' ' && c < 127; });
}

bool valid_label_key(std::string_view k) {
  if (k.empty() || k.size() > 64 || (k[0] >= '0' && k[0] <= '9')) return false;
  return std::all_of(k.begin(), k.end(), [](char c) { return is_ascii_alnum(c) || c == '_'; });
}

}  // namespace joules::session
