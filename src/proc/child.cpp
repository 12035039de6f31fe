#include "proc/child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "util/error.hpp"
#include "util/strings.hpp"

extern char** environ;

namespace joules {
namespace {

// Signals joules passes on to the child's process group.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

sigset_t watched_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded)
    sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGWINCH);
  return set;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// The child's environment: ours, with `extra` entries replacing or adding keys.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::map<std::string, std::size_t> position;
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    position[entry.substr(0, entry.find('='))] = env.size();
    env.push_back(std::move(entry));
  }
  for (const auto& entry : extra) {
    const std::string key = entry.substr(0, entry.find('='));
    auto it = position.find(key);
    if (it != position.end()) {
      env[it->second] = entry;
    } else {
      position[key] = env.size();
      env.push_back(entry);
    }
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool g_reset_sigpipe = true;

bool owns_terminal() {
  return isatty(STDIN_FILENO) != 0 && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

}  // namespace

std::string child_process::resolve_command(const std::string& argv0) {
  if (argv0.empty()) throw usage_error("the command to run is empty");
  if (argv0.find('/') != std::string::npos) {
    if (is_executable_file(argv0)) return argv0;
    if (!exists(argv0)) {
      throw fatal_error(fmt::format("cannot run '{}': no such file", argv0), kExitNotFound);
    }
    throw fatal_error(
        fmt::format("cannot run '{}': not an executable file (permission denied)", argv0),
        kExitCannotExecute);
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::optional<std::string> not_executable;
  for (const auto& dir : split(path, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + argv0;
    if (is_executable_file(candidate)) return candidate;
    if (!not_executable && exists(candidate)) not_executable = candidate;
  }
  if (not_executable) {
    throw fatal_error(fmt::format("cannot run '{}': {} is not executable (permission denied)",
                                  argv0, *not_executable),
                      kExitCannotExecute);
  }
  throw fatal_error(fmt::format("cannot run '{}': command not found in PATH", argv0),
                    kExitNotFound);
}

void child_process::reset_sigpipe_in_child(bool reset) {
  g_reset_sigpipe = reset;
}

void child_process::block_signals() {
  sigset_t set = watched_set();
  // SIGTTOU is blocked too, so that joules can write to and hand back a terminal while the
  // child's group holds it.
  sigaddset(&set, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

child_process::child_process() {
  const sigset_t set = watched_set();
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) throw fatal_error(fmt::format("signalfd: {}", std::strerror(errno)));
}

child_process::~child_process() {
  if (gave_terminal_) tcsetpgrp(STDIN_FILENO, getpgrp());
  if (signal_fd_ >= 0) close(signal_fd_);
}

// glibc 2.35 added posix_spawn_file_actions_addtcsetpgrp_np.  The manylinux wheel is linked
// against glibc 2.28 (docs/python.md), where it does not exist: declared weak, it is found at run
// time on a newer glibc and is null on an older one, where the terminal is handed over after
// the spawn instead (spawn below).
#pragma weak posix_spawn_file_actions_addtcsetpgrp_np

void child_process::spawn(const spawn_options& options) {
  const std::string path = resolve_command(options.argv.at(0));
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_init(&actions);
  // Its own process group, so that signals reach everything it starts (torchrun's workers);
  // a clean signal mask, because ours blocks what the signalfd reads.  Ignored signals stay
  // ignored, as after any exec (nohup keeps working).
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  if (g_reset_sigpipe) sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  for (const auto& [ours, theirs] : options.dup2)
    posix_spawn_file_actions_adddup2(&actions, ours, theirs);
  // An interactive child must own the terminal, or reading it would stop it (SIGTTIN).  The
  // child takes it itself before exec, so it can never read the terminal too early.
  const bool terminal = !options.controlling_tty_fd && owns_terminal();
  const bool child_takes_terminal = terminal && posix_spawn_file_actions_addtcsetpgrp_np != nullptr;
  if (child_takes_terminal) posix_spawn_file_actions_addtcsetpgrp_np(&actions, STDIN_FILENO);

  std::vector<std::string> argv = options.argv;
  std::vector<std::string> env = child_environment(options.extra_env);
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(env);
  start_ = steady::now();
  const int rc = posix_spawn(&pid_, path.c_str(), &actions, &attr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    const int status = rc == ENOENT                      ? kExitNotFound
                       : (rc == EACCES || rc == ENOEXEC) ? kExitCannotExecute
                                                         : kExitCannotMeasure;
    throw fatal_error(fmt::format("cannot run '{}': {}", options.argv[0], std::strerror(rc)),
                      status);
  }
  if (terminal && !child_takes_terminal) {
    // Before glibc 2.35: the terminal goes to the child's group from here.  A child that read
    // it first was stopped (SIGTTIN); SIGCONT lets it read again, now in the foreground.
    tcsetpgrp(STDIN_FILENO, pid_);
    killpg(pid_, SIGCONT);
  }
  gave_terminal_ = terminal;
}

bool child_process::handle_signals() {
  signalfd_siginfo si{};
  while (read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    const int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
    } else if (sig == SIGWINCH) {
      winch_ = true;
    } else if (!exited_) {
      killpg(pid_, sig);
      if (!forwarded_) forwarded_ = sig;
    }
  }
  // SIGCHLD may have been consumed before the child was reaped (several merged into one).
  if (!exited_) reap();
  return exited_;
}

void child_process::wait() {
  while (!handle_signals()) {
    pollfd p{signal_fd_, POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR) break;
  }
}

void child_process::reap() {
  while (!exited_) {
    int st = 0;
    const pid_t r = waitpid(pid_, &st, WNOHANG | WUNTRACED | WCONTINUED);
    if (r <= 0) return;
    if (WIFEXITED(st)) {
      exited_ = true;
      end_ = steady::now();
      code_ = WEXITSTATUS(st);
      status_ = *code_;
    } else if (WIFSIGNALED(st)) {
      exited_ = true;
      end_ = steady::now();
      term_signal_ = WTERMSIG(st);
      status_ = 128 + *term_signal_;
    } else if (WIFSTOPPED(st)) {
      on_stopped();
    }
  }
}

void child_process::on_stopped() {
  // Job control: the child was stopped from the terminal (Ctrl-Z).  Take the terminal back and
  // stop joules as well, so the shell sees the job stopped; when `fg` continues joules, hand the
  // terminal back and continue the child.
  if (!gave_terminal_) return;
  tcsetpgrp(STDIN_FILENO, getpgrp());
  raise(SIGSTOP);
  tcsetpgrp(STDIN_FILENO, pid_);
  killpg(pid_, SIGCONT);
}

}  // namespace joules
