#pragma once
// The GPUs whose power limits one joules changes: locked for as long as it runs, journalled
// before their first change, and let go of one by one as their limits come back
// (journal.hpp says where and how).  The changes themselves are made elsewhere, on the sampler's
// thread (src/session/limit_control.hpp).
//
// Not thread-safe: the main thread's.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/journal.hpp"
#include "control/limit_plan.hpp"

namespace joules::control {

// How long a probe, a set or the restore waits for the sampler's thread: a set takes
// milliseconds; a driver that takes longer is hung, and the journal then does the restore's
// work (docs/tuning.md).
inline constexpr std::chrono::milliseconds kControlWait{5000};

struct claimed_gpu {
  std::size_t device = 0;  // index into the backend's devices()
  unsigned index = 0;      // the GPU's own index, for people
  std::string uuid;
  std::string name;
  std::uint32_t original_mw = 0;  // the limit in force before joules, to restore
  limit_bounds bounds;
  std::string
      backend;  // the backend that sets its limit: "nvml", "amdsmi", "rocm_smi", "levelzero"
  std::string library;  // the vendor library it loaded; a restore opens the same
};

class gpu_claim {
 public:
  // Takes the lock of every GPU in `dir` (state_dir() when empty).  Throws fatal_error when
  // another joules holds one (naming its pid and command) or `dir` cannot be written.
  gpu_claim(std::vector<claimed_gpu> gpus, std::string command, std::string dir = {});

  // Writes every GPU's journal: before any limit changes.  Throws fatal_error.
  void write_journal();
  bool journal_written() const { return written_; }

  // GPU k's limit is back: its journal goes (its lock stays until the claim ends).  False when
  // the journal cannot be removed (it is then restored again by the next joules).
  bool restored(std::size_t k);
  // GPUs whose journal is still there.
  std::vector<std::size_t> outstanding() const;

  const std::vector<claimed_gpu>& gpus() const { return gpus_; }
  const std::string& dir() const { return dir_; }

 private:
  std::vector<claimed_gpu> gpus_;
  std::string command_;
  std::string dir_;
  std::vector<gpu_lock> locks_;
  std::vector<bool> journalled_;
  bool written_ = false;
};

}  // namespace joules::control
