// `joules report RUN.jsonl... [-o report.html] [--pdf report.pdf]`: one self-contained HTML page
// of a run's energy, from its records (docs/report.md).

#include "cli/commands.hpp"
#include "session/record_tasks.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kReportText{
    "report", "an HTML (and PDF) report of runs from their JSONL records", "[OPTIONS] RUN.jsonl...",
    "Reads the records joules run and joules wrap wrote (--output) and writes one self-contained "
    "HTML page: inline SVG, no network, readable without JavaScript and in print. For each run: "
    "the energy, CO2e, cost, duration, energy per step and per token with how each figure was "
    "obtained; power over time per GPU with the phases shaded; energy per step over time and as "
    "a histogram; stragglers; energy by phase; predictions against what happened; the devices; "
    "and health events. The files of the nodes of one multi-node job (one run id) make one run; "
    "files of several runs give a page with each. Docs: docs/report.md.\n"
    "Lines that cannot be read (a last line cut off by a crash, records of a newer joules) are "
    "skipped with a warning naming the file and line; a file that is not joules' JSONL, or is "
    "empty, stops joules with status 2 before anything is written. The page is written to a "
    "temporary file and renamed over the output, so a report that fails never replaces a good "
    "one.",
    "joules report run.jsonl\n"
    "joules report node-*.jsonl -o job-4711.html\n"
    "joules report run.jsonl --pdf run.pdf"};

class report_command final : public options::command {
 public:
  const options::command_text& text() const override { return kReportText; }
  void declare(options::option_table& t) override {
    t.positional(options::positional_kind::files);
    t.text("output", 'o', "FILE", "Write the HTML report to FILE (- for standard output).",
           "the first file's name with .html, e.g. run.html; none with --pdf alone",
           settings_.output);
    t.text("pdf", 0, "FILE",
           "Also print the report to FILE as a PDF, with headless Chromium (Debian: chromium; "
           "JOULES_CHROMIUM names another). Checked before anything is written.",
           "", settings_.pdf);
    t.flag("quiet", 'q', "Print no warnings and no note of what was written.", settings_.quiet);
  }
  int run(std::vector<std::string> positional) override {
    if (positional.empty()) {
      throw usage_error("joules report needs record files, e.g. joules report run.jsonl");
    }
    settings_.files = std::move(positional);
    return session::report(settings_);
  }

 private:
  session::report_settings settings_;
};

}  // namespace

std::unique_ptr<options::command> make_report_command() {
  return std::make_unique<report_command>();
}

}  // namespace joules::cli
