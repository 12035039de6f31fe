#pragma once
// Power-limit changes for the GPUs of a control::gpu_claim, made on the sampler's thread (the one
// thread that calls the driver) through sampler::post: a change never waits (wrap's loop must
// not), its outcome comes back through take(); restore() puts every GPU back, waiting a bounded
// time, and lets go of each journal as its GPU's limit is back.  docs/tuning.md.
//
// Not thread-safe: the main thread's.

#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <vector>

#include "backends/backend.hpp"
#include "control/gpu_claim.hpp"
#include "sampler/sampler.hpp"

namespace joules::session {

class limit_control {
 public:
  struct outcome {
    std::size_t gpu = 0;  // index into claim.gpus()
    std::uint32_t limit_mw = 0;
    control_result result;
  };

  // `s` and `claim` outlive this object.
  limit_control(sampler& s, control::gpu_claim& claim);

  // Before the command starts: writes the journal, then asks the driver whether each GPU's
  // limit may be set by setting the one in force again (a change to the same value).  The first
  // failure, if any; after one, nothing was changed and the journal is gone.  Waits at most
  // `wait` (a hung driver: error).
  control_result probe(std::chrono::milliseconds wait);

  // Sets GPU k (every GPU when k is nullopt) to `mw`, without waiting.
  void set(std::uint32_t mw, std::optional<std::size_t> k = std::nullopt);
  // The outcomes that have come back since the last call, in the order asked.
  std::vector<outcome> take();
  // Sets and waits at most `wait` for the outcomes (before the command starts).
  std::vector<outcome> set_and_wait(std::uint32_t mw, std::chrono::milliseconds wait);

  // Every GPU back to its original limit, waiting at most `wait` for these and the changes
  // still under way; each GPU whose restore succeeded loses its journal.  One outcome per GPU
  // whose journal was there (a GPU lost or a hung driver: not ok, the journal stays for the
  // next joules).
  std::vector<outcome> restore(std::chrono::milliseconds wait);

  // The limit last set on GPU k with success (its original before any).
  std::uint32_t in_force(std::size_t k) const { return in_force_[k]; }
  const control::gpu_claim& claim() const { return claim_; }

 private:
  struct pending {
    std::size_t gpu;
    std::uint32_t limit_mw;
    std::future<control_result> result;
  };
  void post(std::size_t k, std::uint32_t mw);
  // The outcome of `p`, waiting until `deadline` at most.
  outcome settle(pending& p, mono_time deadline);

  sampler& sampler_;
  control::gpu_claim& claim_;
  std::vector<pending> pending_;
  std::vector<std::uint32_t> in_force_;
};

}  // namespace joules::session
