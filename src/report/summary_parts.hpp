#pragma once
// The parts of summarize() (report/summary.hpp) kept in files of their own: devices and
// stragglers, predictions and health events (summary_devices.cpp).  Internal to report/.

#include "report/records.hpp"
#include "report/summary.hpp"

namespace joules::report {

// Where a node's clock starts (CLOCK_MONOTONIC seconds): its session_start, else its first
// window or sample.
double origin_of(const node& n);

// Per-device rows, with each GPU's energy per step and its deviation from the median GPU.
void summarize_devices(const run& r, run_summary& s);
// Predictions against what happened, stragglers and health events.
void summarize_events(const run& r, run_summary& s);

}  // namespace joules::report
