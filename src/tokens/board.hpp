#pragma once
// The latest view of every token source, published by the sources' threads and read by
// /metrics, OTLP, monitor and the summary.  A reader gets a copy; a version number tells it
// whether anything changed since its previous read.
//
// Thread-safety: every member function may be called from any thread (one mutex, held for a
// copy).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tokens/source_model.hpp"

namespace joules::tokens {

class board {
 public:
  explicit board(std::vector<source_view> initial) : views_(std::move(initial)) {}

  void publish(std::size_t index, const source_view& v) {
    std::lock_guard lock(mu_);
    if (index < views_.size()) views_[index] = v;
    version_.fetch_add(1, std::memory_order_release);
  }

  std::vector<source_view> read() const {
    std::lock_guard lock(mu_);
    return views_;
  }

  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  std::vector<source_view> views_;
  std::atomic<std::uint64_t> version_{1};
};

}  // namespace joules::tokens
