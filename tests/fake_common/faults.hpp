#pragma once
// Scripted faults of one device (the fakes' READMEs, "Faults"), looked up on every call.
// Scenarios carry a handful of faults, so the windows are scanned linearly; counter resets, which
// the counter reads on every call, are sorted and binary-searched.  Error codes are the faking
// library's own (NVML's nvmlReturn_t, AMD SMI's status, Level Zero's ze_result_t), as ints.

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "json_fields.hpp"

namespace fake_gpu {

inline constexpr double kForever = std::numeric_limits<double>::infinity();

enum class reading_kind { energy, power };

struct fault_set {
  struct status_window {  // `not_supported` and `error`
    double from_s = 0.0;
    double until_s = kForever;
    bool energy = false;
    bool power = false;
    long long code = 0;
  };
  struct latency_window {
    double from_s = 0.0;
    double until_s = kForever;
    unsigned int latency_us = 0;
  };

  double lost_at_s = kForever;
  std::vector<double> counter_resets_s;  // ascending
  std::vector<status_window> statuses;
  std::vector<latency_window> latencies;

  bool lost(double t) const { return t >= lost_at_s; }
  // The error a reading of this kind returns at t, or `ok`.
  long long reading_status(reading_kind kind, double t, long long ok) const;
  unsigned int latency_us(double t, unsigned int usual_us) const;
  // The latest counter reset at or before q, or a negative value when there is none.
  double last_reset_before(double q) const;
};

// The library's code for an error `name` given in a scenario (json_fields::fail when unknown).
using error_code_fn = std::function<long long(json_fields& f, const std::string& key)>;

// Reads a device's `faults` (lost, counter_reset, not_supported, error, latency).
// `not_supported` is the library's NOT_SUPPORTED code.
void parse_faults(json_fields& dev, fault_set& faults, long long not_supported,
                  const error_code_fn& code_of);

}  // namespace fake_gpu
