#pragma once
// Lines made on other threads (the token sources' notices and `inference` records) handed to
// wrap's main loop, which owns the output channels they must go out through between the
// command's lines: a queue and an eventfd the loop polls.
//
// Thread-safety: push() from any thread; fd() and drain() from the main loop.

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "util/error.hpp"

namespace joules::session {

class line_queue {
 public:
  struct line {
    bool record = false;  // a JSONL record; else a note for people
    std::string text;
  };

  line_queue() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw fatal_error(fmt::format("eventfd: {}", std::strerror(errno)));
  }
  ~line_queue() { close(fd_); }
  line_queue(const line_queue&) = delete;
  line_queue& operator=(const line_queue&) = delete;

  int fd() const { return fd_; }
  void push(line l) {
    {
      std::lock_guard lock(mu_);
      items_.push_back(std::move(l));
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = write(fd_, &one, sizeof one);
  }
  std::deque<line> drain() {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = read(fd_, &count, sizeof count);
    std::lock_guard lock(mu_);
    std::deque<line> out;
    out.swap(items_);
    return out;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::deque<line> items_;
};

}  // namespace joules::session
