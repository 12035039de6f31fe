#include "proc/step_channel.hpp"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "util/error.hpp"

namespace joules {
namespace {

// Room for a burst of steps while wrap's loop is busy: a datagram costs its size plus the
// kernel's bookkeeping (about 1 KiB) of the receive buffer.
constexpr int kReceiveBuffer = 4 << 20;

std::string random_hex(std::size_t bytes) {
  std::array<unsigned char, 32> buf{};
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw fatal_error(fmt::format("getrandom: {}", std::strerror(errno)));
    }
    got += static_cast<std::size_t>(n);
  }
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i)
    out += fmt::format("{:02x}", buf[i]);
  return out;
}

}  // namespace

std::optional<step_address> parse_step_address(std::string_view text) {
  step_address a;
  a.addr.sun_family = AF_UNIX;
  if (text.size() < 2 || text.size() >= sizeof(a.addr.sun_path)) return std::nullopt;
  std::memcpy(a.addr.sun_path, text.data(), text.size());
  if (text.front() == '@') a.addr.sun_path[0] = '\0';  // the abstract namespace
  a.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + text.size() +
                                    (text.front() == '@' ? 0 : 1));
  return a;
}

bool send_step(int fd, const step_address& address, const step_message& m) {
  while (true) {
    const ssize_t n = sendto(fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&address.addr), address.length);
    if (n == static_cast<ssize_t>(sizeof(m))) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

step_receiver::step_receiver() {
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw fatal_error(fmt::format("step channel: socket: {}", std::strerror(errno)));
  const int on = 1;
  setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
  const int size = kReceiveBuffer;
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  name_ = fmt::format("@joules-wrap-{}-{}", getpid(), random_hex(16));
  const auto a = parse_step_address(name_);
  if (!a || bind(fd_, reinterpret_cast<const sockaddr*>(&a->addr), a->length) != 0) {
    const int e = errno;
    close(fd_);
    fd_ = -1;
    throw fatal_error(fmt::format("step channel: bind: {}", std::strerror(e)));
  }
}

step_receiver::~step_receiver() {
  if (fd_ >= 0) close(fd_);
}

std::string step_receiver::environment_entry() const {
  return fmt::format("{}={}", kStepSocketEnv, name_);
}

std::vector<step_message> step_receiver::drain() {
  std::vector<step_message> out;
  while (true) {
    step_message m;
    // One byte more than a message, so that a longer datagram shows as MSG_TRUNC.
    std::array<char, sizeof(step_message) + 1> buf{};
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(ucred))> control{};
    msghdr h{};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control.data();
    h.msg_controllen = control.size();
    const ssize_t n = recvmsg(fd_, &h, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: nothing more
    }
    std::optional<ucred> cred;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred u{};
        std::memcpy(&u, CMSG_DATA(c), sizeof(u));
        cred = u;
      }
    }
    const bool ours = cred && cred->uid == getuid();
    if (!ours || n != static_cast<ssize_t>(sizeof(m)) || (h.msg_flags & MSG_TRUNC) != 0) {
      ++refused_;
      continue;
    }
    std::memcpy(&m, buf.data(), sizeof(m));
    if (m.magic != step_message::kMagic || m.version != step_message::kVersion ||
        m.size != sizeof(m)) {
      ++refused_;
      continue;
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace joules
