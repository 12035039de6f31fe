#include "session/chromium.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "util/error.hpp"
#include "util/strings.hpp"

extern char** environ;

namespace joules::session {
namespace {

namespace fs = std::filesystem;

bool executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0 && !fs::is_directory(path);
}

// The last non-empty line Chromium wrote, for the error message.
std::string last_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line;
  std::string last;
  while (std::getline(in, line)) {
    if (!trim(line).empty()) last = std::string(trim(line));
  }
  return last.size() > 300 ? last.substr(0, 300) + "..." : last;
}

// Waits for `pid` at most `timeout`; kills it past that.  Returns its wait status, or nullopt
// when it ran out of time.
std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int ready = 0;
    do {
      ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    ::close(pidfd);
    if (ready == 0) {
      ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
      return std::nullopt;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A file:// URL of an absolute path: bytes other than letters, digits, -._~ and / as %XX, so
// that a space, a # or a % in a folder name reaches Chromium as part of the path.
std::string file_url(const fs::path& path) {
  std::string url = "file://";
  for (const char c : path.string()) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || c == '/') {
      url += c;
    } else {
      url += fmt::format("%{:02X}", u);
    }
  }
  return url;
}

}  // namespace

std::optional<std::string> find_chromium() {
  if (const char* env = std::getenv("JOULES_CHROMIUM"); env != nullptr && *env != '\0') {
    const std::string named(env);
    if (named.find('/') != std::string::npos) {
      if (executable(named)) return named;
      return std::nullopt;
    }
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::vector<std::string> names;
  if (const char* env = std::getenv("JOULES_CHROMIUM"); env != nullptr && *env != '\0') {
    names.emplace_back(env);
  } else {
    names = {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"};
  }
  for (const auto& name : names) {
    for (const auto& dir : split(dirs, ':')) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
      if (executable(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

void print_pdf(const std::string& chromium, const std::string& html_path,
               const std::string& pdf_path) {
  std::string tmpl = (fs::temp_directory_path() / "joules-chromium-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw fatal_error(
        fmt::format("--pdf: cannot make a temporary folder: {}", std::strerror(errno)));
  }
  const fs::path work(tmpl);
  const fs::path out = work / "report.pdf";
  const fs::path log = work / "chromium.log";
  std::vector<std::string> args = {chromium, "--headless", "--disable-gpu",
                                   // Containers give /dev/shm 64 MB: too little for a page.
                                   "--disable-dev-shm-usage", "--no-first-run",
                                   "--no-default-browser-check", "--disable-extensions",
                                   "--user-data-dir=" + (work / "profile").string(),
                                   "--no-pdf-header-footer", "--print-to-pdf=" + out.string()};
  if (::geteuid() == 0) args.insert(args.begin() + 1, "--no-sandbox");
  args.push_back(file_url(fs::absolute(html_path)));
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // joules blocks the signals it forwards and ignores SIGPIPE (app.cpp): Chromium gets the
  // defaults back.
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, chromium.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(work, ec);
  };
  if (rc != 0) {
    cleanup();
    throw fatal_error(fmt::format("--pdf: cannot run {}: {}", chromium, std::strerror(rc)));
  }
  const auto status = wait_for(pid, kChromiumTimeout);
  std::error_code ec;
  const bool made = fs::exists(out, ec) && fs::file_size(out, ec) > 0;
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0 || !made) {
    const std::string why =
        !status ? fmt::format("it ran past {} s", kChromiumTimeout.count()) : last_line(log);
    cleanup();
    throw fatal_error(fmt::format("--pdf: {} could not print the report{}{}", chromium,
                                  why.empty() ? "" : ": ", why));
  }
  // Into place in one rename, from a file in the target's folder (a rename across file systems
  // would fail).
  const fs::path target(pdf_path);
  fs::path staged = target;
  staged += ".tmp-pdf";
  fs::copy_file(out, staged, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(staged, target, ec);
  if (ec) {
    fs::remove(staged, ec);
    cleanup();
    throw fatal_error(fmt::format("--pdf: cannot write {}: {}", pdf_path, ec.message()));
  }
  cleanup();
}

}  // namespace joules::session
