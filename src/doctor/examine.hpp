#pragma once
// What `joules doctor` asks a backend: one timed reading of energy and power per GPU, then its
// health and capabilities unless the driver is slow or doctor's time is spent, and what the
// backend says about itself.  Called on the sampler thread by session/doctor.cpp, and by the
// golden tests on a simulated backend at a fixed instant, without a sampler.

#include <functional>
#include <vector>

#include "backends/backend.hpp"
#include "doctor/report.hpp"
#include "util/clock.hpp"

namespace joules::doctor {

// The clock reads are timed with: steady_clock, or a fixed one in tests (every read then takes
// 0 s, and the report is the same on every machine).
using clock_fn = std::function<mono_time()>;

// Each of the `chosen` devices (indices into b.devices()) examined, in order.  A slow driver
// (kSlowReadS) is reported and its GPU is not asked the tens of health and capability questions
// that would make doctor take seconds per GPU; neither are the GPUs left once kExamineBudgetS
// has gone.
std::vector<gpu_report> examine(backend& b, const std::vector<std::size_t>& chosen,
                                const clock_fn& now);

// The backend's own part of the report: its meta data, notices, what became of CPU and DRAM,
// and the CPU and DRAM devices it measures.
void describe(report& r, const backend& hw);

}  // namespace joules::doctor
