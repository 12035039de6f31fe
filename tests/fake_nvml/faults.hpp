#pragma once
// Scripted faults of one device (README "Faults"), looked up on every call.  Scenarios carry a
// handful of faults, so the windows are scanned linearly; counter resets, which the counter reads
// on every call, are sorted and binary-searched.

#include <limits>
#include <string>
#include <vector>

#include "backends/nvml/nvml_abi.hpp"

namespace fake_nvml {

using joules::nvml::nvmlReturn_t;

inline constexpr double kForever = std::numeric_limits<double>::infinity();

enum class reading_kind { energy, power };

struct fault_set {
  struct status_window {  // `not_supported` (code NOT_SUPPORTED) and `error`
    double from_s = 0.0;
    double until_s = kForever;
    bool energy = false;
    bool power = false;
    nvmlReturn_t code = joules::nvml::kErrorUnknown;
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
  // The error a reading of this kind returns at t, or kSuccess.
  nvmlReturn_t reading_status(reading_kind kind, double t) const;
  unsigned int latency_us(double t, unsigned int usual_us) const;
  // The latest counter reset at or before q, or a negative value when there is none.
  double last_reset_before(double q) const;
};

// nvmlReturn_t from a name such as "UNKNOWN" or "NVML_ERROR_TIMEOUT"; -1 when unknown.
nvmlReturn_t error_code_from_name(const std::string& name);

}  // namespace fake_nvml
