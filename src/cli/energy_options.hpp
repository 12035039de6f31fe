#pragma once
// The options that choose what is measured besides the GPUs (--components, --estimate-cpu,
// --cpu-tdp) and turn energy into CO2e and money (--pue, --carbon-intensity, --region,
// --price-per-kwh, --currency).  run and wrap have them through measure_options(); monitor,
// serve and doctor can add the same specs and readers.  docs/carbon.md.

#include <vector>

#include "backends/backend.hpp"
#include "carbon/carbon.hpp"
#include "cli/options.hpp"

namespace joules::cli {

const std::vector<option_spec>& component_option_specs();
const std::vector<option_spec>& carbon_option_specs();

// --components, --estimate-cpu, --cpu-tdp into `out`.  Throws usage_error.
void read_component_options(const parsed_args& args, component_options& out);

// --pue, --carbon-intensity, --region (else JOULES_REGION), --price-per-kwh, --currency.
// Throws usage_error for malformed numbers; carbon::resolve() checks ranges and regions.
carbon::settings read_carbon_settings(const parsed_args& args);

}  // namespace joules::cli
