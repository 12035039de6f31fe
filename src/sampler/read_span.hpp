#pragma once
// How long a device's reads usually take, and whether one read was stretched by preemption.
//
// A read that took far longer than the device's reads usually take, though not long enough to
// be the driver stalling, was most likely preempted (a busy node: a trainer's data loaders on
// every core): its values are placed only within its span, so a counter read that took 4 ms at
// 300 W places 0.6 J up to 2 ms off.  The sampler takes such a read again, at most kRereads more
// times, and keeps the tightest.  A read of under a millisecond is good enough (0.35 J at
// 700 W), and a stall (50 ms or more) is never repeated: it would only stall the sampler again.
//
// Not thread-safe: owned by the sampler thread.

#include <algorithm>

namespace joules {

class read_span {
 public:
  static constexpr int kRereads = 2;

  // Whether a read that took `span_s` seconds is worth taking again.
  bool stretched(double span_s) const {
    return usual_s_ > 0.0 && span_s > std::max(4.0 * usual_s_ + 200e-6, kGoodEnoughS) &&
           span_s < kStallS;
  }

  // How long the device's reads usually take (seconds; 0 before the first).
  double usual() const { return usual_s_; }

  // The span of the read kept for a round.  Still stretched after every reread: the device itself
  // became slower, and its usual span is that from now on.  Otherwise the usual span follows the
  // reads, at most doubling per read.
  void kept(double span_s) {
    if (usual_s_ == 0.0 || stretched(span_s))
      usual_s_ = span_s;
    else
      usual_s_ = 0.9 * usual_s_ + 0.1 * std::min(span_s, 2.0 * usual_s_);
  }

 private:
  static constexpr double kGoodEnoughS = 0.001;
  static constexpr double kStallS = 0.05;
  double usual_s_ = 0.0;  // 0 before the first read
};

}  // namespace joules
