#pragma once
// Two sides compared, A (before) and B (after): energy, time, J/step, J/token and mean power of
// the run, per phase and per GPU, each with its change and whether that change exceeds the noise
// the records show.  A side is one run, or several runs of the same job (repeats): its value is
// their mean.
//
// Noise, as a standard error of each side's value: across the runs of a side when it has two or
// more; else, for the per-step rates (J/step, J/token, step time, power during steps), the
// batch means of the run's own steps (report/stats.hpp), and for the run's energy and duration
// the relative error of its J/step and step time (the steps make the run).  A change exceeds the
// noise when it is more than twice the two sides' errors combined (about 95 %, for errors that are
// normal).  Pure.

#include <optional>
#include <string>
#include <vector>

#include "report/summary.hpp"

namespace joules::report {

struct diff_row {
  std::string section;  // run, phase, gpu
  std::string name;     // "energy", "J/step", "eval", "GPU 3"
  std::string unit;     // J, s, J/step, J/token, W, g, currency
  std::optional<double> a;
  std::optional<double> b;
  std::optional<double> change;  // (b - a) / a
  std::optional<double> noise;   // twice the combined standard error, relative to a
  std::optional<bool> exceeds_noise;
};

struct diff_result {
  std::vector<diff_row> rows;
  std::vector<std::string> notes;  // different hosts, GPUs, methods; runs per side
  // The metric a --fail-if-worse gate holds: J/token where both sides have tokens, else J/step
  // where both have steps, else energy.  An index into rows.
  std::size_t gate = 0;
};

diff_result compare(const std::vector<run_summary>& a, const std::vector<run_summary>& b);

}  // namespace joules::report
