#include "control/journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::control {
namespace {

constexpr const char* kMagic = "joules-power-limit-journal 1";
constexpr const char* kSystemDir = "/var/lib/joules";
constexpr std::string_view kJournalSuffix = ".journal";
constexpr std::string_view kTempMarker = ".journal.tmp.";

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// UUIDs are letters, digits and dashes; anything else would not be a file name of ours.
std::string file_stem(const std::string& uuid) {
  std::string out = uuid;
  for (char& c : out) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
    if (!plain) c = '_';
  }
  return out;
}

std::string errno_text() {
  return std::strerror(errno);
}

// mkdir -p, one level at a time.  The system directory is world-readable (doctor run by any
// user reports a limit left changed); a user's own stays the user's.
void make_dirs(const std::string& dir) {
  const mode_t mode = dir == kSystemDir ? 0755 : 0700;
  std::string path;
  for (const auto& part : split(dir, '/')) {
    if (part.empty()) {
      if (path.empty()) path = "/";
      continue;
    }
    if (!path.empty() && path.back() != '/') path += '/';
    path += part;
    if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
      throw fatal_error(
          fmt::format("cannot create the state directory {}: {}", path, errno_text()));
    }
  }
}

void fsync_dir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

std::string state_dir() {
  if (std::string dir = env_or_empty("JOULES_STATE_DIR"); !dir.empty()) return dir;
  if (geteuid() == 0) return kSystemDir;
  if (std::string xdg = env_or_empty("XDG_STATE_HOME"); !xdg.empty() && xdg.front() == '/') {
    return xdg + "/joules";
  }
  if (std::string home = env_or_empty("HOME"); !home.empty()) return home + "/.local/state/joules";
  return "/tmp/joules-" + std::to_string(geteuid());
}

std::vector<std::string> journal_dirs() {
  std::vector<std::string> dirs{state_dir()};
  if (env_or_empty("JOULES_STATE_DIR").empty() && dirs.front() != kSystemDir) {
    dirs.emplace_back(kSystemDir);
  }
  return dirs;
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return std::string(trim(id));
}

std::optional<gpu_lock> gpu_lock::try_take(const std::string& dir, const std::string& uuid) {
  make_dirs(dir);
  const std::string path = dir + "/" + file_stem(uuid) + ".lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw fatal_error(fmt::format("cannot open the lock file {}: {}", path, errno_text()));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool busy = errno == EWOULDBLOCK;
    const std::string why = errno_text();
    close(fd);
    if (busy) return std::nullopt;
    throw fatal_error(fmt::format("cannot lock {}: {}", path, why));
  }
  return gpu_lock(fd);
}

bool lock_held(const std::string& dir, const std::string& uuid) {
  const std::string path = dir + "/" + file_stem(uuid) + ".lock";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // A shared lock is refused while another process holds the exclusive one; released at close.
  const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

gpu_lock::gpu_lock(gpu_lock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

gpu_lock& gpu_lock::operator=(gpu_lock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

gpu_lock::~gpu_lock() {
  if (fd_ >= 0) close(fd_);  // releases the flock
}

std::string format_journal(const journal_entry& e) {
  std::string out = std::string(kMagic) + "\n";
  out += fmt::format("uuid {}\nindex {}\nname {}\noriginal_mw {}\npid {}\ncommand {}\n",
                     one_line(e.uuid), e.index, one_line(e.name), e.original_mw, e.pid,
                     one_line(e.command));
  out += fmt::format("started {}\nboot_id {}\nbackend {}\nlibrary {}\n", one_line(e.started),
                     one_line(e.boot_id), one_line(e.backend), one_line(e.library));
  // What a joules that knows only NVML reads (it restores NVIDIA GPUs only).
  if (e.backend == "nvml") out += fmt::format("nvml_library {}\n", one_line(e.library));
  out += "end\n";
  return out;
}

std::optional<journal_entry> parse_journal(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return std::nullopt;
  journal_entry e;
  bool ended = false;
  bool has_limit = false;
  while (std::getline(in, line)) {
    if (line == "end") {
      ended = true;
      break;
    }
    const auto space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "uuid") {
      e.uuid = value;
    } else if (key == "index") {
      e.index = static_cast<unsigned>(parse_uint(value, 0, 1U << 20).value_or(0));
    } else if (key == "name") {
      e.name = value;
    } else if (key == "original_mw") {
      const auto mw = parse_uint(value, 1, 100'000'000);
      if (!mw) return std::nullopt;
      e.original_mw = static_cast<std::uint32_t>(*mw);
      has_limit = true;
    } else if (key == "pid") {
      e.pid = static_cast<long>(parse_uint(value, 0, 1U << 30).value_or(0));
    } else if (key == "command") {
      e.command = value;
    } else if (key == "started") {
      e.started = value;
    } else if (key == "boot_id") {
      e.boot_id = value;
    } else if (key == "backend") {
      e.backend = value;
    } else if (key == "library" || (key == "nvml_library" && e.library.empty())) {
      e.library = value;
    }
  }
  if (!ended || !has_limit || e.uuid.empty()) return std::nullopt;
  return e;
}

void write_journal(const std::string& dir, const journal_entry& e) {
  make_dirs(dir);
  const std::string stem = dir + "/" + file_stem(e.uuid);
  const std::string final_path = stem + ".journal";
  const std::string temp = stem + std::string(kTempMarker) + std::to_string(getpid());
  const std::string text = format_journal(e);
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw fatal_error(fmt::format("cannot write the journal {}: {}", temp, errno_text()));
  }
  std::size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  // Durable before it is in place: after a power loss the journal is whole or absent.
  ok = ok && fsync(fd) == 0;
  const std::string why = ok ? "" : errno_text();
  close(fd);
  if (!ok || std::rename(temp.c_str(), final_path.c_str()) != 0) {
    const std::string reason = ok ? errno_text() : why;
    unlink(temp.c_str());
    throw fatal_error(fmt::format("cannot write the journal {}: {}", final_path, reason));
  }
  fsync_dir(dir);
}

bool remove_journal(const std::string& dir, const std::string& uuid) {
  const std::string path = dir + "/" + file_stem(uuid) + ".journal";
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return false;
  fsync_dir(dir);
  return true;
}

journal_scan read_journals(const std::string& dir, bool tidy) {
  journal_scan out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  std::vector<std::string> names;
  while (const dirent* ent = readdir(d)) {
    names.emplace_back(ent->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  const bool writable = tidy && access(dir.c_str(), W_OK) == 0;
  for (const auto& name : names) {
    const std::string path = dir + "/" + name;
    if (const auto at = name.find(kTempMarker); at != std::string::npos) {
      // A write cut short: its rename never happened, so no limit change followed it.  One
      // whose writer is alive is a write under way.
      const auto pid = parse_uint(name.substr(at + kTempMarker.size()), 1, 1U << 30);
      const bool alive = pid && (kill(static_cast<pid_t>(*pid), 0) == 0 || errno == EPERM);
      if (writable && !alive) unlink(path.c_str());
      continue;
    }
    if (!name.ends_with(kJournalSuffix)) continue;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto e = parse_journal(text.str());
    if (!e) {
      out.unreadable.push_back(path);
      continue;
    }
    e->path = path;
    out.entries.push_back(std::move(*e));
  }
  return out;
}

}  // namespace joules::control
