#pragma once
// The library's end of wrap's step channel (proc/step_channel.hpp): whether this process runs
// under `joules wrap`, whether it is the process that reports steps (LOCAL_RANK, else RANK, 0 or
// unset), and sending a step.  The environment is read once per process, at the first call.
//
// Thread-safety: any thread; a child forked after the first call keeps the parent's answers
// (its environment is the parent's) and shares its socket (one datagram per send either way).

#include <cstdint>

#include "util/clock.hpp"

namespace joules::api {

// JOULES_WRAP_STEP_SOCKET names a channel.
bool step_channel_present();

// This process's steps are the ones wrap measures: LOCAL_RANK is 0, or without LOCAL_RANK,
// RANK is 0, or neither is set (docs/c-api.md).
bool reports_steps();

// The number of the step that ended: `step`, or one more than the last when it is 0.
std::uint64_t next_step_number(std::uint64_t step);

// Sends the step to wrap when this process reports steps; a step that cannot be sent (wrap's
// queue is full, wrap is gone) is dropped.  Never blocks, never raises a signal.
void send_step_to_wrap(mono_time at, std::uint64_t step, std::uint64_t tokens);

}  // namespace joules::api
