#pragma once
// The records of a measured run, schema v1 (docs/jsonl-schema.md): `session_start` when the
// child starts and `session_end` when it has ended, plus the one-line human summary.

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "carbon/carbon.hpp"
#include "devices/device_scope.hpp"
#include "energy/accounting.hpp"
#include "record/summary.hpp"
#include "util/clock.hpp"
#include "util/json_writer.hpp"

namespace joules {

inline constexpr int kSchemaVersion = 1;

struct run_context {
  std::string subcommand;  // "run", "wrap"
  std::string run_id;
  std::string hostname;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> command;
  backend_meta backend;
  std::vector<device_info> devices;  // the measured ones, in record order
  scope_result scope;
  std::vector<std::string> notices;
  double interval_ms = 100;
  // The first width of the `sample` records' buckets (record/sample_records.hpp); none: no
  // sample records.
  std::optional<double> samples_interval_ms;
  std::string user;  // the login name joules ran as; empty when unknown
  // CPU and DRAM: measured, estimated or not, and why (backend::components()).
  std::vector<component_status> components;
  carbon::factors carbon;  // PUE, grid intensity, price: their values and provenance
  std::chrono::system_clock::time_point start_wall;
  mono_time start_mono{};
};

// Per-device diagnostics gathered when the run ends.
struct device_outcome {
  int counter_resets = 0;
  int counter_wraps = 0;  // RAPL counter wraps, counted exactly
  double reset_estimated_j = 0.0;
  int read_errors = 0;
  int last_error_code = 0;
  std::optional<double> lost_at_s;          // seconds after the start
  std::optional<double> counter_lost_at_s;  // the counter stopped; power took over
  std::optional<double> silent_at_s;        // neither counter nor power answered from then on
};

struct run_outcome {
  window_result window;  // the whole run
  std::chrono::system_clock::time_point end_wall;
  mono_time end_mono{};
  int exit_status = 0;
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  std::optional<int> forwarded_signal;
  std::vector<device_outcome> devices;
  bool sampler_abandoned = false;
  int records_lost = 0;
  std::string extra_json;      // a JSON object written as "wrap" in session_end, when not empty
  std::string exporters_json;  // likewise "exporters": Prometheus and OTLP delivery counts
  // Further objects of session_end, by key, after "wrap": "tune" (docs/jsonl-schema.md).
  std::vector<std::pair<std::string, std::string>> sections;
};

enum class run_status { completed, interrupted, child_failed, measurement_degraded };
std::string_view to_string(run_status s);

// The reasons a measurement is incomplete, in words; empty when it is whole.
std::vector<std::string> degradations(const run_context& ctx, const run_outcome& out);
run_status status_of(const run_context& ctx, const run_outcome& out);

// The method of the run as a whole: the devices' common method, or "mixed".
std::string run_method(const window_result& w);

// "GPU 0", "CPU package-0", "DRAM intel-rapl:0:0", "CPU estimate": a device in words.
std::string device_label(const device_info& d);

// A window's energy per kind of device (GPU, CPU, DRAM), in that order, for the kinds measured.
struct component_total {
  device_kind kind = device_kind::gpu;
  std::optional<microjoules> energy_uj;  // nullopt: no device of this kind gave a reading
  std::string method;                    // the devices' common method, or "mixed"
  std::size_t devices = 0;
};
std::vector<component_total> component_totals(const run_context& ctx, const window_result& w);
// Energy of the devices whose method is `estimated` (never silently mixed with measurements).
microjoules estimated_energy_uj(const run_context& ctx, const window_result& w);
// The per-kind totals as a JSON object {"gpu": {...}, "cpu": {...}, "dram": {...}}.
void write_components_json(json_writer& w, const run_context& ctx, const window_result& win,
                           double duration_s);

// The fields every record starts with: type, schema_version, time, run_id, hostname, labels.
void common_record_fields(json_writer& w, std::string_view type, const run_context& ctx);

std::string session_start_record(const run_context& ctx);
std::string session_end_record(const run_context& ctx, const run_outcome& out);

// "joules: 778168 J (216.16 Wh) in 203.1 s, avg 3832 W, peak 4120 W; 8x NVIDIA H100 ...; ..."
// The summary of a run (record/summary.hpp): the headline, devices and method, how the command
// ended, what degraded the measurement and what was not measured.  Callers add their parts
// (steps, carbon) before printing.
run_summary summarise(const run_context& ctx, const run_outcome& out);
// The whole summary people read when a run ends: summarise(), then `extra` (wrap's steps), then
// the run's kWh, CO2e and cost from ctx.carbon (or why there is no CO2e).
run_summary summarise(const run_context& ctx, const run_outcome& out,
                      const std::vector<summary_part>& extra);
// summarise(...).line().
std::string summary_line(const run_context& ctx, const run_outcome& out);

}  // namespace joules
