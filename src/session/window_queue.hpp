#pragma once
// Windows finished on the sampler thread, handed to wrap's main loop (which owns the labels,
// the records and the output) through a queue and an eventfd the loop polls.
//
// Thread-safety: push() from the sampler thread, fd() and drain() from the main loop.

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>

#include "energy/accounting.hpp"
#include "util/error.hpp"

namespace joules::session {

class window_queue {
 public:
  window_queue() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw fatal_error(fmt::format("eventfd: {}", std::strerror(errno)));
  }
  ~window_queue() { close(fd_); }
  window_queue(const window_queue&) = delete;
  window_queue& operator=(const window_queue&) = delete;

  int fd() const { return fd_; }
  void push(const window_result& w) {
    bool was_empty = false;
    {
      std::lock_guard lock(mu_);
      was_empty = items_.empty();
      items_.push_back(w);
    }
    // One wake-up per batch: drain() takes everything queued by then.
    if (!was_empty) return;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = write(fd_, &one, sizeof one);
  }
  std::deque<window_result> drain() {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = read(fd_, &count, sizeof count);
    std::lock_guard lock(mu_);
    std::deque<window_result> out;
    out.swap(items_);
    return out;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::deque<window_result> items_;
};

}  // namespace joules::session
