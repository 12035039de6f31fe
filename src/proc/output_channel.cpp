#include "proc/output_channel.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace joules {

bool output_channel::emit(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      // Our output is gone (a closed pipe): the command must not notice; drop the bytes.
      ++write_errors_;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void output_channel::write(std::string_view bytes) {
  if (bytes.empty()) return;
  if (!waiting_.empty()) {
    // Our lines go out right after the first newline: the earliest line end.
    const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
    if (nl != nullptr) {
      const std::size_t cut =
          static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) + 1;
      emit(bytes.substr(0, cut));
      at_line_start_ = true;
      release();
      bytes.remove_prefix(cut);
      if (bytes.empty()) return;
    }
  }
  emit(bytes);
  at_line_start_ = bytes.back() == '\n';
}

void output_channel::release() {
  if (waiting_.empty()) return;
  if (!emit(waiting_)) lost_lines_ += waiting_lines_;
  waiting_.clear();
  waiting_lines_ = 0;
}

void output_channel::own_line(std::string_view line, mono_time now) {
  if (at_line_start_) {
    release();
    if (!emit(line)) ++lost_lines_;
    return;
  }
  if (finished_) {
    if (!at_line_start_) emit("\n");
    at_line_start_ = true;
    release();
    if (!emit(line)) ++lost_lines_;
    return;
  }
  if (waiting_.empty()) waiting_since_ = now;
  waiting_.append(line);
  ++waiting_lines_;
  if (waiting_.size() > kMaxWaitingBytes) expire(waiting_since_ + kMaxWait);
}

void output_channel::expire(mono_time now) {
  if (waiting_.empty() || now - waiting_since_ < kMaxWait) return;
  if (!at_line_start_) emit("\n");
  at_line_start_ = true;
  release();
}

void output_channel::finish(bool end_line) {
  finished_ = true;
  if ((end_line || !waiting_.empty()) && !at_line_start_) {
    emit("\n");
    at_line_start_ = true;
  }
  release();
}

}  // namespace joules
