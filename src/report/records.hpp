#pragma once
// joules' JSONL records as `report`, `diff` and `aggregate` read them back (docs/jsonl-schema.md):
// what each record type carries that the reports use, grouped into runs and, within a run, nodes
// (one host's records).  Records of several files join on `run_id` and `hostname`, so the files
// of every node of a multi-node job make one run.
//
// Units are those of the records (SI, the unit in the name); times `*_s` are seconds on the
// writing host's CLOCK_MONOTONIC unless said otherwise.  A value the records do not give is
// std::nullopt, never 0.  Plain data: no I/O, not thread-safe to mutate.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace joules::report {

// A problem with one line of one input file (line 0: the file as a whole).
struct diagnostic {
  std::string file;
  std::uint64_t line = 0;
  std::string message;
};

// min, mean and max of readings over an interval (a sample bucket, a merged plot bucket).
struct stat3 {
  std::optional<double> min;
  std::optional<double> mean;
  std::optional<double> max;
};

// A measured device as session_start and session_end describe it.
struct device_desc {
  std::string kind;  // gpu, cpu, dram
  std::int64_t index = 0;
  std::string uuid;
  std::string name;
  std::string method;
  std::optional<double> energy_j;  // session_end only
  std::optional<double> avg_power_w;
  std::optional<double> peak_power_w;
  std::int64_t counter_resets = 0;
  std::int64_t read_errors = 0;
  std::optional<double> lost_at_s;  // seconds after the start
  std::optional<double> counter_lost_at_s;
};

// CO2e and cost of an energy, with where their factors came from (docs/carbon.md).
struct carbon_figures {
  std::optional<double> energy_kwh;
  std::optional<double> pue;
  std::optional<double> facility_energy_kwh;
  std::optional<double> co2e_g;
  std::optional<double> intensity_g_per_kwh;
  std::string co2_source;  // "Ember", "user", ...
  std::optional<std::int64_t> co2_year;
  std::string co2_region;
  std::string co2_method;  // country_average, user, ...
  std::optional<double> cost;
  std::string currency;
  std::optional<double> price_per_kwh;
  std::string price_source;
  std::string note;  // why there is no CO2e
};

// A `step` or `phase` record: one window of `wrap`.
struct window_record {
  bool is_step = false;
  std::uint64_t window = 0;
  std::uint64_t step = 0;      // steps only
  std::uint64_t step_gap = 1;  // steps only
  std::string phase;           // phases only: setup, tail, other, eval, ...
  double start_s = 0.0;
  double end_s = 0.0;
  double duration_s = 0.0;
  double energy_j = 0.0;
  std::optional<double> peak_power_w;
  std::string method;
  std::optional<double> tokens;
  std::optional<double> samples;
  std::optional<double> co2e_g;
  std::vector<std::pair<std::int64_t, double>> gpu_energy_j;  // GPU index, energy
};

struct prediction_record {
  std::uint64_t at_step = 0;
  std::uint64_t total_steps = 0;
  std::string scope;  // run, epoch
  std::int64_t milestone_percent = 0;
  double energy_j = 0.0;
  double duration_s = 0.0;
  std::optional<double> energy_per_step_j;
  std::uint64_t basis_steps = 0;
};

struct straggler_record {
  std::int64_t gpu = 0;
  std::string uuid;
  double deviation = 0.0;
  std::uint64_t at_step = 0;
  std::uint64_t window_steps = 0;
};

// One device in one `sample` bucket.
struct sample_device {
  std::string kind;
  std::int64_t index = 0;
  std::optional<double> energy_j;
  stat3 power_w;
  stat3 gpu_util_percent;
  stat3 temperature_c;
  stat3 sm_clock_hz;
  std::vector<std::string> clock_events;
  bool lost = false;
};

struct sample_record {
  double start_s = 0.0;
  double end_s = 0.0;
  std::vector<sample_device> devices;
};

// What `wrap` adds to session_end.
struct wrap_summary {
  std::uint64_t steps = 0;
  std::uint64_t step_windows = 0;
  std::optional<std::uint64_t> last_step;
  std::optional<std::uint64_t> total_steps;
  std::optional<double> energy_per_step_j;
  std::optional<double> tokens;
  std::optional<double> joules_per_token;
  std::optional<double> samples;
  std::optional<double> joules_per_sample;
  std::optional<bool> conserved;
  // energy by kind of window: setup, steps, other, tail, and each phase by name.
  std::vector<std::pair<std::string, double>> energy_by_window_j;
};

// One host's records of one run.
struct node {
  std::string run_id;
  std::string hostname;
  std::vector<std::string> files;  // the input files that held its records
  std::map<std::string, std::string> labels;

  // session_start
  bool has_start = false;
  std::string subcommand;
  std::string joules_version;
  std::string backend;
  std::string user;
  std::vector<std::string> command;
  std::string start_time;  // ISO-8601 UTC
  std::optional<double> start_monotonic_s;
  std::optional<double> interval_ms;
  std::vector<device_desc> devices;
  std::string carbon_region;

  // session_end
  bool has_end = false;
  std::string status;
  bool degraded = false;
  std::vector<std::string> degradations;
  std::optional<std::int64_t> exit_status;
  std::string end_time;
  std::optional<double> end_monotonic_s;
  std::optional<double> duration_s;
  std::optional<double> energy_j;
  std::optional<double> avg_power_w;
  std::optional<double> peak_power_w;
  std::string method;
  std::vector<device_desc> end_devices;
  std::optional<double> estimated_energy_j;
  carbon_figures carbon;
  std::optional<wrap_summary> wrap;

  std::vector<window_record> windows;  // in window order
  std::vector<prediction_record> predictions;
  std::vector<straggler_record> stragglers;
  std::vector<sample_record> samples;
};

// All nodes of one run_id.
struct run {
  std::string run_id;
  std::vector<node> nodes;  // in the order their first record was read
};

// The runs of every file read, and what was wrong with them.
struct record_set {
  std::vector<run> runs;  // in the order their first record was read
  std::vector<diagnostic> warnings;
  std::uint64_t records = 0;
};

}  // namespace joules::report
