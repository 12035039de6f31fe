#pragma once
// Setting GPUs back to the limits their journal holds.  Runs on the sampler thread
// (sampler::on_thread or sampler::post): only that thread calls the driver.
//
// Not thread-safe: the sampler thread's, with the backend it owns.

#include <optional>
#include <vector>

#include "backends/backend.hpp"
#include "control/journal.hpp"

namespace joules::control {

struct restore_outcome {
  journal_entry entry;
  bool found = false;                      // a GPU with the entry's UUID is there
  std::optional<std::uint32_t> before_mw;  // its limit before the restore, when readable
  control_result result;                   // of the set (not ok when not found)
};

// For each entry, the GPU with its UUID in `b`: its limit set back to the original (a limit
// already there is set again: the call is the proof that it may be).
std::vector<restore_outcome> restore_limits(backend& b, const std::vector<journal_entry>& entries);

// The index in b.devices() of the GPU with `uuid`.
std::optional<std::size_t> device_with_uuid(const backend& b, const std::string& uuid);

}  // namespace joules::control
