#include "cli/commands.hpp"

namespace joules::cli {

std::vector<std::unique_ptr<options::command>> make_commands() {
  std::vector<std::unique_ptr<options::command>> out;
  out.push_back(make_run_command());
  out.push_back(make_wrap_command());
  out.push_back(make_tune_command());
  out.push_back(make_sweep_command());
  out.push_back(make_steps_command());
  out.push_back(make_monitor_command());
  out.push_back(make_doctor_command());
  out.push_back(make_serve_command());
  out.push_back(make_remediate_command());
  out.push_back(make_report_command());
  out.push_back(make_diff_command());
  out.push_back(make_aggregate_command());
  return out;
}

}  // namespace joules::cli
