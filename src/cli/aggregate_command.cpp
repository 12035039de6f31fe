// `joules aggregate FILES...`: the totals of many runs and nodes, grouped (docs/report.md).

#include "cli/commands.hpp"
#include "session/record_tasks.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kAggregateText{
    "aggregate", "totals of many runs: energy, CO2e, cost, GPU-hours", "[OPTIONS] FILE...",
    "Adds up the records of many runs: runs, nodes, energy, kWh, CO2e, cost, GPU-hours, steps "
    "and tokens, exact sums of the records' figures, with the methods they were measured by and "
    "the sources of their carbon intensities. The files of the nodes of one multi-node job (one "
    "run id) count as one run. A CO2e or a cost known for only some runs says for how many "
    "(3/5). Empty files (a run killed before its first record) are skipped with a warning; a "
    "file that is not joules' JSONL exits with status 2. Docs: docs/report.md.",
    "joules aggregate runs/*.jsonl\n"
    "joules aggregate --by user,day --format csv runs/*.jsonl > month.csv\n"
    "joules aggregate --by job --format json node-*.jsonl"};

class aggregate_command final : public options::command {
 public:
  const options::command_text& text() const override { return kAggregateText; }
  void declare(options::option_table& t) override {
    t.positional(options::positional_kind::files);
    t.text("by", 0, "KEYS",
           "Group by host, job (run id), day (UTC, of the start) and/or user, comma-separated, "
           "in that order of columns.",
           "no grouping: one total",
           [this](const std::string& v) { settings_.by = session::parse_group_keys(v); });
    t.choice("format", "FORMAT", "table for people, csv or json for programs.", "table",
             {"table", "csv", "json"}, format_);
    t.flag("quiet", 'q', "Print no warnings about lines that could not be read.", settings_.quiet);
  }
  int run(std::vector<std::string> positional) override {
    settings_.files = std::move(positional);
    settings_.format = format_ == "csv"    ? session::table_format::csv
                       : format_ == "json" ? session::table_format::json
                                           : session::table_format::table;
    return session::aggregate(settings_);
  }

 private:
  session::aggregate_settings settings_;
  std::string format_ = "table";
};

}  // namespace

std::unique_ptr<options::command> make_aggregate_command() {
  return std::make_unique<aggregate_command>();
}

}  // namespace joules::cli
