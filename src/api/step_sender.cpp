#include "api/step_sender.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "proc/step_channel.hpp"

namespace joules::api {
namespace {

struct channel {
  std::optional<step_address> address;
  bool reports = true;
};

bool is_rank_zero(const char* name, bool& set) {
  const char* v = std::getenv(name);
  set = v != nullptr && v[0] != '\0';
  return set && std::strcmp(v, "0") == 0;
}

const channel& the_channel() {
  // A function-local static: built at the first call (thread-safe), not when the library loads.
  static const channel c = [] {
    channel out;
    if (const char* v = std::getenv(kStepSocketEnv); v != nullptr) {
      out.address = parse_step_address(v);
    }
    bool set = false;
    const bool local_zero = is_rank_zero("LOCAL_RANK", set);
    if (set) {
      out.reports = local_zero;
    } else {
      const bool zero = is_rank_zero("RANK", set);
      out.reports = !set || zero;
    }
    return out;
  }();
  return c;
}

std::atomic<std::uint64_t> g_last_step{0};

// The sending socket, made at the first step, and its identity: a program that closes every
// descriptor (a daemon) may reuse the number for a socket of its own, and a step must never be
// written into that.  No lock (a child forked while another thread held one could not step):
// threads that find no socket of ours at once may each make one, and all but one stay unused.
std::atomic<int> g_socket{-1};
std::atomic<dev_t> g_socket_dev{0};
std::atomic<ino_t> g_socket_ino{0};

bool still_ours(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && st.st_dev == g_socket_dev.load() &&
         st.st_ino == g_socket_ino.load();
}

// This process's socket, made (again) when there is none or the number is no longer ours.
int our_socket() {
  const int fd = g_socket.load();
  if (fd >= 0 && still_ours(fd)) return fd;
  const int fresh = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fresh < 0) return -1;
  struct stat st {};
  if (fstat(fresh, &st) != 0) {
    close(fresh);
    return -1;
  }
  // The old number, if it ever was ours, was closed by the program: nothing to close here.
  g_socket.store(-1);
  g_socket_dev.store(st.st_dev);
  g_socket_ino.store(st.st_ino);
  g_socket.store(fresh);
  return fresh;
}

}  // namespace

bool step_channel_present() {
  return the_channel().address.has_value();
}

bool reports_steps() {
  return the_channel().reports;
}

std::uint64_t next_step_number(std::uint64_t step) {
  if (step == 0) return g_last_step.fetch_add(1, std::memory_order_relaxed) + 1;
  g_last_step.store(step, std::memory_order_relaxed);
  return step;
}

void send_step_to_wrap(mono_time at, std::uint64_t step, std::uint64_t tokens) {
  const channel& c = the_channel();
  if (!c.address || !c.reports) return;
  step_message m;
  m.pid = static_cast<std::uint32_t>(getpid());
  m.t_ns = monotonic_ns(at);
  m.step = step;
  m.tokens = tokens;
  const int fd = our_socket();
  if (fd >= 0) send_step(fd, *c.address, m);
}

}  // namespace joules::api
