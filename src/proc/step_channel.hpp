#pragma once
// The step channel: how a command under `joules wrap` tells wrap the exact instant each training
// step ended (joules_step() of libjoules, include/joules/joules.h), with no log line to parse.
//
// wrap binds a datagram socket in the abstract namespace (Linux: no file, gone with the socket)
// under a random name, and passes the name in the command's environment as
// JOULES_WRAP_STEP_SOCKET=@joules-wrap-<pid>-<32 hex digits>.  A name, not an inherited file
// descriptor: launchers close the descriptors they do not know about (torchrun starts each rank
// with subprocess.Popen, close_fds=True), but pass the environment on.  The library sends one
// fixed-size datagram per step (step_message) with one sendto(MSG_DONTWAIT | MSG_NOSIGNAL):
// never blocking, never SIGPIPE; a step that finds wrap's queue full is dropped, and the next
// step's window covers both (its step_gap says so).  wrap takes datagrams from its own user only
// (SCM_CREDENTIALS), with the right magic, version and size.
//
// Which processes send: the library sends from the process whose LOCAL_RANK is 0, or, without
// LOCAL_RANK, whose RANK is 0, or that has neither (docs/c-api.md): one process per node reports
// the steps that node's wrap measures.
//
// Thread-safety: step_receiver belongs to wrap's main loop; send_step() may be called from any
// thread of any process.

#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules {

inline constexpr const char* kStepSocketEnv = "JOULES_WRAP_STEP_SOCKET";

// One step, as the command sends it: 40 bytes in the machine's byte order (both ends run on the
// same machine).  Written with one sendto of sizeof(step_message), far below PIPE_BUF.
struct step_message {
  static constexpr std::uint32_t kMagic = 0x504A5453;  // "STJP" read as bytes on little-endian
  static constexpr std::uint16_t kVersion = 1;

  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::uint16_t size = sizeof(step_message);
  std::uint32_t pid = 0;     // the sender
  std::uint32_t flags = 0;   // none defined yet; 0
  std::int64_t t_ns = 0;     // CLOCK_MONOTONIC, taken in joules_step()
  std::uint64_t step = 0;    // the step that ended (joules_step: 0 means one more than the last)
  std::uint64_t tokens = 0;  // tokens it processed; 0: unknown
};
static_assert(sizeof(step_message) == 40, "step_message is 40 bytes on every ABI joules supports");

// A socket address from the text of JOULES_WRAP_STEP_SOCKET: "@name" for the abstract
// namespace, else a path.  nullopt when it cannot be one.
struct step_address {
  sockaddr_un addr{};
  socklen_t length = 0;
};
std::optional<step_address> parse_step_address(std::string_view text);

// Sends one step to `address` on `fd` (a SOCK_DGRAM AF_UNIX socket).  Never blocks and never
// raises SIGPIPE; returns false when the step could not be sent (errno says why).
bool send_step(int fd, const step_address& address, const step_message& m);

// wrap's end: the bound socket, and the messages that arrived.
class step_receiver {
 public:
  // Binds a fresh abstract name.  Throws fatal_error.
  step_receiver();
  ~step_receiver();
  step_receiver(const step_receiver&) = delete;
  step_receiver& operator=(const step_receiver&) = delete;

  int fd() const { return fd_; }
  // "JOULES_WRAP_STEP_SOCKET=@..." for the command's environment.
  std::string environment_entry() const;
  // Every valid message waiting, in arrival order (non-blocking).
  std::vector<step_message> drain();
  // Datagrams refused so far: another user's, a wrong size, magic or version.
  std::uint64_t refused() const { return refused_; }

 private:
  int fd_ = -1;
  std::string name_;  // "@joules-wrap-..."
  std::uint64_t refused_ = 0;
};

}  // namespace joules
