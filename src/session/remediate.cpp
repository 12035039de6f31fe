#include "session/remediate.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include <fmt/format.h>

#include "session/identity.hpp"
#include "term/messages.hpp"
#include "text/escape.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

extern char** environ;

namespace joules::session {
namespace {

constexpr std::size_t kOutputKept = 2000;  // bytes of the action's output kept and shown

// A file descriptor closed on scope exit.
class fd_guard {
 public:
  explicit fd_guard(int fd) : fd_(fd) {}
  ~fd_guard() {
    if (fd_ >= 0) ::close(fd_);
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string short_hostname() {
  std::string h = host_name();
  return h.substr(0, h.find('.'));
}

// The word as a POSIX shell would need it, for the dry run's line.
std::string shell_quoted(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-.,/=:@+%") == std::string::npos)
    return w;
  std::string out = "'";
  for (char c : w) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quoted(w);
  }
  return out;
}

std::string utc_now(std::time_t t) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The state file: one line per node, "NODE UNIX_SECONDS", the time of its last action.
std::map<std::string, std::int64_t> read_state(int fd) {
  std::string text;
  char buf[4096];
  ::lseek(fd, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  std::map<std::string, std::int64_t> out;
  std::istringstream in(text);
  std::string node;
  std::int64_t t = 0;
  while (in >> node >> t)
    out[node] = t;
  return out;
}

void write_state(int fd, const std::map<std::string, std::int64_t>& state,
                 const std::string& path) {
  std::string text;
  for (const auto& [node, t] : state)
    text += fmt::format("{} {}\n", node, t);
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    throw fatal_error(
        fmt::format("cannot write the state file {}: {}", path, std::strerror(errno)));
  ::fsync(fd);
}

struct outcome {
  std::string name;  // done, failed, rate_limited
  std::optional<int> exit_status;
  std::string output;
};

// Runs argv (PATH searched) with its output captured; `env` adds variables.
outcome run_action(const std::vector<std::string>& argv,
                   const std::vector<std::string>& extra_env) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    throw fatal_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  fd_guard read_end(pipefd[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_text(extra_env);
  for (char** e = environ; *e; ++e)
    env_text.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_text)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0)
    return {"failed", std::nullopt, fmt::format("cannot run {}: {}", argv[0], std::strerror(rc))};
  outcome o{"done", std::nullopt, ""};
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (o.output.size() < kOutputKept)
      o.output.append(buf, std::min(static_cast<std::size_t>(n), kOutputKept - o.output.size()));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  o.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (*o.exit_status != 0) o.name = "failed";
  return o;
}

void append_journal(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0)
    throw fatal_error(fmt::format("cannot open the journal {}: {}", path, std::strerror(errno)));
  fd_guard g(fd);
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw fatal_error(fmt::format("cannot write the journal {}: {}", path, std::strerror(errno)));
}

std::string journal_line(const remediate_settings& s, std::time_t now, const std::string& node,
                         const std::string& reason, const std::vector<std::string>& argv,
                         const outcome& o) {
  json_writer w;
  w.begin_object()
      .field("type", "remediate")
      .field("time", utc_now(now))
      .field("unix_s", static_cast<std::int64_t>(now))
      .field("node", node)
      .field("action", to_string(s.action))
      .field("reason", reason);
  w.key("argv").begin_array();
  for (const auto& a : argv)
    w.value(a);
  w.end_array().field("outcome", o.name).field("exit_status", o.exit_status);
  w.field("output", o.output).field("user", std::to_string(::getuid()));
  w.end_object();
  return w.take() + "\n";
}

std::string read_report(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error(fmt::format("--report {}: cannot read it", path));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string_view to_string(remediate_action a) {
  switch (a) {
    case remediate_action::drain:
      return "drain";
    case remediate_action::cordon:
      return "cordon";
    case remediate_action::command:
      return "command";
  }
  return "?";
}

std::optional<remediate_action> parse_remediate_action(std::string_view s) {
  for (auto a : {remediate_action::drain, remediate_action::cordon, remediate_action::command})
    if (s == to_string(a)) return a;
  return std::nullopt;
}

std::vector<std::string> remediate_argv(const remediate_settings& s, const std::string& node,
                                        const std::string& reason) {
  switch (s.action) {
    case remediate_action::drain:
      return {"scontrol", "update", "nodename=" + node, "state=drain", "reason=" + reason};
    case remediate_action::cordon:
      return {"kubectl", "cordon", node};
    case remediate_action::command:
      return s.command;
  }
  return {};
}

std::optional<std::string> critical_reason(const std::string& report_json) {
  const auto doc = nlohmann::json::parse(report_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("findings") ||
      !doc["findings"].is_array())
    throw usage_error("--report: expected the JSON report of `joules doctor --json`");
  std::string found;
  for (const auto& f : doc["findings"]) {
    if (!f.is_object() || f.value("severity", "") != "critical") continue;
    std::string item;
    if (f.contains("gpu") && f["gpu"].is_number_integer() && f["gpu"].get<long long>() >= 0)
      item = fmt::format("GPU {} ", f["gpu"].get<long long>());
    item += f.value("code", "unknown");
    found += (found.empty() ? "" : ", ") + item;
  }
  if (found.empty()) return std::nullopt;
  return "joules doctor: " + found;
}

int remediate(const remediate_settings& s) {
  std::string reason = s.reason.value_or("");
  if (s.report) {
    const auto why = critical_reason(read_report(*s.report));
    if (!why) {
      term::print_note(
          fmt::format("remediate: no critical finding in {}: nothing to do", *s.report));
      return 0;
    }
    reason = s.reason ? *s.reason + " (" + *why + ")" : *why;
  }
  const std::string node = s.node.empty() ? short_hostname() : s.node;
  const auto argv = remediate_argv(s, node, reason);
  const std::vector<std::string> env{"JOULES_REMEDIATE_NODE=" + node,
                                     "JOULES_REMEDIATE_REASON=" + reason};
  if (!s.execute) {
    std::cout << text::escape_for_terminal("dry run (--execute to act): would run: " +
                                           command_line(argv))
              << '\n';
    return 0;
  }

  // The rate limit: the state file, locked for the whole decision and action.
  const int fd = ::open(s.state_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0)
    throw fatal_error(
        fmt::format("cannot open the state file {}: {}", s.state_file, std::strerror(errno)));
  fd_guard state_fd(fd);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR)
      throw fatal_error(fmt::format("cannot lock {}: {}", s.state_file, std::strerror(errno)));
  }
  auto state = read_state(fd);
  const std::time_t now = std::time(nullptr);
  if (auto it = state.find(node);
      it != state.end() && now - it->second < s.min_interval.count() && now >= it->second) {
    const outcome held{"rate_limited", std::nullopt, ""};
    append_journal(s.journal, journal_line(s, now, node, reason, argv, held));
    term::print_warning(fmt::format(
        "remediate: {} was acted on at {}, less than {} s ago: nothing run (--min-interval)", node,
        utc_now(static_cast<std::time_t>(it->second)), s.min_interval.count()));
    return kRemediateRateLimited;
  }
  const outcome o = run_action(argv, env);
  if (o.name == "done") {
    state[node] = static_cast<std::int64_t>(now);
    write_state(fd, state, s.state_file);
  }
  append_journal(s.journal, journal_line(s, now, node, reason, argv, o));
  if (!o.output.empty()) std::cout << text::escape_for_terminal(o.output) << '\n';
  if (o.name != "done") {
    term::print_error(fmt::format(
        "remediate: {} failed ({}): {}", command_line(argv),
        o.exit_status ? fmt::format("exit status {}", *o.exit_status) : std::string("not run"),
        o.output.substr(0, 200)));
    return kRemediateFailed;
  }
  std::cout << text::escape_for_terminal("ran: " + command_line(argv)) << '\n';
  return 0;
}

}  // namespace joules::session
