#pragma once
// The figures of one run, computed from its records (report/records.hpp), each with where it
// came from: the headline (energy, CO2e, cost, duration, J/step, J/token, power), the energy by
// phase, per GPU, the steps over time, predictions against what happened, stragglers and
// health events.  `report` draws them, `diff` compares two runs' and `aggregate` adds many up.
//
// A run of several nodes (one multi-node job) adds its nodes' energies; its duration is its
// longest node's; its steps are joined by step number (every node logs the same steps).
// Units in the names, SI.  Pure, not thread-safe to mutate.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/records.hpp"
#include "report/stats.hpp"

namespace joules::report {

// A number and how it was obtained, in words (the record and field it rests on, the method).
struct figure {
  std::optional<double> value;
  std::string source;
};

struct phase_row {
  std::string name;  // setup, steps, eval, checkpoint, other, tail; "run" for `joules run`
  double energy_j = 0.0;
  double duration_s = 0.0;  // the longest node's
  std::uint64_t windows = 0;
};

struct gpu_row {
  std::string host;
  std::string kind;  // gpu, cpu, dram
  std::int64_t index = 0;
  std::string name;
  std::string uuid;
  std::string method;
  std::optional<double> energy_j;
  std::optional<double> avg_power_w;
  std::optional<double> peak_power_w;
  std::optional<double> energy_per_step_j;  // over the step windows
  std::optional<double> deviation;          // of its J/step from the median GPU's
};

// One step window of the run (the nodes' windows of the same step added up).
struct step_point {
  std::uint64_t step = 0;
  std::uint64_t gap = 1;
  double offset_s = 0.0;  // its end, seconds after the run's start
  double duration_s = 0.0;
  double energy_j = 0.0;
  std::optional<double> tokens;
  double per_step_j() const { return energy_j / static_cast<double>(gap); }
};

// A phase interval to shade on a time axis.
struct phase_span {
  std::string name;
  double from_s = 0.0;
  double to_s = 0.0;
};

struct prediction_row {
  std::string host;
  prediction_record p;
  std::optional<double> actual_energy_j;  // energy from the start to total_steps, when reached
  std::optional<double> error;            // (predicted - actual) / actual
};

// Something that went wrong with the hardware or the measurement, in words.
struct health_event {
  std::string host;
  std::string what;
  std::optional<double> at_s;  // seconds after the start, when known
};

struct run_summary {
  std::string run_id;
  std::vector<std::string> hosts;
  std::vector<std::string> files;
  std::string start_time;  // ISO-8601 UTC, the earliest node's
  std::string user;
  std::string subcommand;
  std::string backend;
  std::string command;  // joined with spaces
  std::vector<std::pair<std::string, std::string>> labels;
  std::string status;    // completed, ...; "unknown (no session_end)" when cut off
  bool complete = true;  // every node has session_start and session_end

  figure energy_j;
  figure duration_s;
  figure co2e_g;
  figure cost;
  std::string currency;
  figure energy_per_step_j;
  figure energy_per_token_j;
  figure avg_power_w;
  figure peak_power_w;
  std::string method;  // counter, polled, simulated, estimated, mixed

  std::uint64_t steps = 0;
  std::optional<double> tokens;
  std::size_t gpu_count = 0;
  std::string gpu_names;  // "8x NVIDIA H100 80GB HBM3"

  std::vector<phase_row> phases;
  std::vector<gpu_row> gpus;
  std::vector<step_point> steps_series;
  std::vector<phase_span> spans;  // the first node's non-step windows
  std::vector<prediction_row> predictions;
  std::vector<straggler_record> stragglers;
  std::vector<std::string> straggler_hosts;  // host of each straggler
  std::vector<health_event> health;
  std::vector<std::string> notes;  // what the records lack, for the reader of the report

  // Per-step rates with their batch-means standard errors (stats.hpp), for diff.
  ratio_estimate step_energy;   // J per step
  ratio_estimate step_time;     // s per step
  ratio_estimate step_power;    // W during steps
  ratio_estimate token_energy;  // J per token
};

run_summary summarize(const run& r);

// "12.3 kJ", "4.56 MJ", "3.2 J": energy with an SI prefix, 3 significant digits.
std::string format_energy(double j);
// "2 h 03 min", "4 min 10 s", "12.3 s".
std::string format_duration(double s);
// A number with 3 significant digits and an SI prefix for `unit` ("612 W", "1.23 kW").
std::string format_si(double v, std::string_view unit);

}  // namespace joules::report
