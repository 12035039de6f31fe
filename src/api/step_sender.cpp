#include "api/step_sender.hpp"

#include <sys/socket.h>
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
std::atomic<int> g_socket{-1};

int the_socket() {
  int fd = g_socket.load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  const int fresh = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fresh < 0) return -1;
  if (g_socket.compare_exchange_strong(fd, fresh, std::memory_order_acq_rel)) return fresh;
  close(fresh);  // another thread made one first
  return fd;
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
  const int fd = the_socket();
  if (fd < 0) return;
  step_message m;
  m.pid = static_cast<std::uint32_t>(getpid());
  m.t_ns = monotonic_ns(at);
  m.step = step;
  m.tokens = tokens;
  send_step(fd, *c.address, m);
}

}  // namespace joules::api
