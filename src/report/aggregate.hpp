#pragma once
// Totals of many runs: energy, CO2e, cost, time, GPU-hours, steps and tokens, grouped by host,
// job (run id), day (UTC, of the start) and user, with provenance kept: the methods the energies
// were measured by, the sources of the carbon intensities, and how many runs lack a CO2e, a price
// or their end.  The nodes of a multi-node job are one run (they share its run id): the job
// counts once, each node's energy is added to its host's group.
//
// Sums are exact sums of the records' figures; a group's CO2e is the sum over the runs that have
// one, and says how many do.  Pure.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "report/records.hpp"

namespace joules::report {

enum class group_key { host, job, day, user };

struct aggregate_row {
  std::vector<std::string> key;  // one value per group_key, in the order asked
  std::uint64_t runs = 0;        // distinct run ids
  std::uint64_t nodes = 0;       // host records of runs
  std::uint64_t incomplete = 0;  // nodes without session_end (their windows are summed)
  double energy_j = 0.0;
  std::optional<double> co2e_g;
  std::uint64_t co2e_nodes = 0;  // nodes whose CO2e is known
  std::optional<double> cost;
  std::uint64_t cost_nodes = 0;
  std::set<std::string> currencies;
  double duration_s = 0.0;  // summed over nodes
  double gpu_hours = 0.0;   // each node's duration times its GPUs
  std::uint64_t steps = 0;
  std::optional<double> tokens;
  std::set<std::string> methods;
  std::set<std::string> co2_sources;  // "Ember 2023 DE", "user"
};

struct aggregate_result {
  std::vector<group_key> by;
  std::vector<aggregate_row> rows;  // sorted by key
  aggregate_row total;
};

aggregate_result aggregate(const record_set& records, const std::vector<group_key>& by);

std::string_view to_string(group_key k);

}  // namespace joules::report
