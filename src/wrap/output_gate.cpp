#include "wrap/output_gate.hpp"

#include <unistd.h>

#include <cerrno>

namespace joules {

void output_gate::emit(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      // Our stdout is gone (a closed pipe): the child must not notice; drop the bytes.
      ++write_errors_;
      return;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void output_gate::write(std::string_view bytes) {
  if (markers_.empty()) {
    emit(bytes);
    return;
  }
  held_.append(bytes);
}

void output_gate::hold_for(std::uint64_t window, mono_time now) {
  markers_.push_back({window, held_.size(), now});
}

void output_gate::annotate(std::uint64_t window, std::string_view text) {
  if (markers_.empty()) return;
  // Windows arrive in order; annotations of windows without a marker are not needed.
  if (window < markers_.front().window) return;
  ready_.emplace_back(window, std::string(text));
  release();
}

void output_gate::release() {
  // Everything before the first marker is already out; go marker by marker while annotations are
  // known, letting out the bytes up to the next marker each time.
  std::size_t done = 0;
  while (!markers_.empty()) {
    const marker m = markers_.front();
    while (!ready_.empty() && ready_.front().first < m.window)
      ready_.pop_front();
    if (ready_.empty() || ready_.front().first != m.window) break;
    emit(ready_.front().second);
    ready_.pop_front();
    markers_.pop_front();
    const std::size_t next = markers_.empty() ? held_.size() : markers_.front().offset;
    emit(std::string_view(held_).substr(done, next - done));
    done = next;
  }
  if (markers_.empty()) {
    held_.clear();
    ready_.clear();
    return;
  }
  if (done > 0) {
    held_.erase(0, done);
    for (auto& mk : markers_)
      mk.offset -= done;
  }
}

void output_gate::expire(mono_time now) {
  if (!markers_.empty() &&
      (now - markers_.front().since > kMaxHold || held_.size() > kMaxHeldBytes)) {
    flush_all();
  }
}

void output_gate::flush_all() {
  emit(held_);
  held_.clear();
  markers_.clear();
  ready_.clear();
}

}  // namespace joules
