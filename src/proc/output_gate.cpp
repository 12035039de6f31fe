#include "proc/output_gate.hpp"

namespace joules {

void output_gate::emit(std::string_view bytes) {
  out_.write(bytes);
}

void output_gate::write(std::string_view bytes) {
  if (markers_.empty()) {
    emit(bytes);
    return;
  }
  held_.append(bytes);
}

void output_gate::hold_for(std::uint64_t window, mono_time now) {
  if (!markers_.empty() && markers_.back().window == window) {
    markers_.back().offset = held_.size();
    return;
  }
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
  // Marker by marker while annotations are known: the held bytes up to the marker, then its
  // annotation.  Bytes before the next marker still waiting go out too.
  std::size_t done = 0;
  while (!markers_.empty()) {
    const marker m = markers_.front();
    while (!ready_.empty() && ready_.front().first < m.window)
      ready_.pop_front();
    if (ready_.empty() || ready_.front().first != m.window) break;
    emit(std::string_view(held_).substr(done, m.offset - done));
    emit(ready_.front().second);
    ready_.pop_front();
    markers_.pop_front();
    done = m.offset;
  }
  const std::size_t next = markers_.empty() ? held_.size() : markers_.front().offset;
  emit(std::string_view(held_).substr(done, next - done));
  if (markers_.empty()) {
    held_.clear();
    ready_.clear();
    return;
  }
  held_.erase(0, next);
  for (auto& mk : markers_)
    mk.offset -= next;
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
