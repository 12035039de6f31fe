#include "session/record_tasks.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "render/report_html.hpp"
#include "render/tables.hpp"
#include "report/diff.hpp"
#include "report/summary.hpp"
#include "session/chromium.hpp"
#include "session/record_files.hpp"
#include "term/messages.hpp"
#include "text/escape.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::session {
namespace {

// joules blocks the signals it forwards to a measured command (app.cpp); these commands measure
// none, and Ctrl-C must stop them like any other program.
void default_signals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
}

std::string html_name_for(const std::string& input) {
  if (input == "-") return "report.html";
  std::filesystem::path p(input);
  p.replace_extension(".html");
  return p.string();
}

std::string generator() {
  return fmt::format("joules {}", JOULES_VERSION);
}

std::vector<report::run_summary> summaries(const report::record_set& set) {
  std::vector<report::run_summary> out;
  for (const auto& r : set.runs)
    out.push_back(report::summarize(r));
  return out;
}

}  // namespace

int report(const report_settings& s) {
  default_signals();
  std::optional<std::string> chromium;
  if (s.pdf) {
    chromium = find_chromium();
    if (!chromium) {
      throw usage_error(fmt::format(
          "--pdf '{}': Chromium is not installed, and joules prints PDFs with it; install it "
          "(Debian: apt-get install chromium) or name it with JOULES_CHROMIUM, or leave --pdf "
          "out for the HTML report alone",
          *s.pdf));
    }
    check_writable(*s.pdf, "--pdf");
    if (*s.pdf == "-") throw usage_error("--pdf '-': expected a file path");
  }
  // With --pdf alone the HTML is a temporary file; else it is the output.
  const bool keep_html = s.output.has_value() || !s.pdf;
  std::string html_path = s.output.value_or(html_name_for(s.files.front()));
  if (keep_html) check_writable(html_path, "--output");
  const report::record_set set = read_records(s.files, {false, s.quiet});
  if (set.runs.empty()) {
    throw usage_error("no run in the records given (only record types this joules does not know?)");
  }
  const std::string page = render::report_page(set, generator());
  std::string tmp_html;
  if (!keep_html || html_path == "-") {
    tmp_html = (std::filesystem::temp_directory_path() / "joules-report-XXXXXX.html").string();
    const int fd = ::mkstemps(tmp_html.data(), 5);
    if (fd < 0) throw fatal_error("cannot make a temporary file for the report");
    ::close(fd);
  }
  if (keep_html) write_whole(html_path, page);
  if (chromium) {
    if (!tmp_html.empty()) write_whole(tmp_html, page);
    const std::string source = tmp_html.empty() ? html_path : tmp_html;
    try {
      print_pdf(*chromium, source, *s.pdf);
    } catch (...) {
      if (!tmp_html.empty()) ::unlink(tmp_html.c_str());
      throw;
    }
  }
  if (!tmp_html.empty()) ::unlink(tmp_html.c_str());
  if (!s.quiet) {
    std::string what;
    if (keep_html && html_path != "-")
      what = fmt::format("{} ({:.1f} kB)", html_path, static_cast<double>(page.size()) / 1e3);
    if (s.pdf) what += (what.empty() ? "" : " and ") + *s.pdf;
    if (!what.empty()) {
      term::print_note(
          fmt::format("wrote {}: {} run(s), {} records", what, set.runs.size(), set.records));
    }
  }
  return 0;
}

int diff(const diff_settings& s) {
  default_signals();
  if (s.files.size() != 2) {
    throw usage_error(fmt::format(
        "joules diff compares two record files, A and B, not {}; see joules diff --help",
        s.files.size()));
  }
  render::diff_side a{s.files[0], summaries(read_records({s.files[0]}, {false, s.quiet}))};
  render::diff_side b{s.files[1], summaries(read_records({s.files[1]}, {false, s.quiet}))};
  for (const auto* side : {&a, &b}) {
    if (side->runs.empty()) {
      throw usage_error(
          fmt::format("{}: no run in its records (only record types this joules does "
                      "not know?)",
                      side->file));
    }
  }
  const report::diff_result d = report::compare(a.runs, b.runs);
  std::optional<render::diff_gate> gate;
  if (s.fail_if_worse_percent) {
    const auto& g = d.rows.at(d.gate);
    if (!g.change) {
      throw usage_error(
          fmt::format("--fail-if-worse {:g}: the records give no {} for both A and B to compare",
                      *s.fail_if_worse_percent, g.name));
    }
    gate =
        render::diff_gate{*s.fail_if_worse_percent, *g.change * 100.0 > *s.fail_if_worse_percent};
  }
  const std::string out =
      s.json ? render::diff_json(a, b, d, gate) : render::diff_text(a, b, d, gate);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return gate && gate->failed ? 1 : 0;
}

int aggregate(const aggregate_settings& s) {
  default_signals();
  if (s.files.empty()) {
    throw usage_error("joules aggregate needs record files, e.g. joules aggregate runs/*.jsonl");
  }
  const report::record_set set = read_records(s.files, {true, s.quiet, report::read_scope::totals});
  const report::aggregate_result r = report::aggregate(set, s.by);
  const std::string out = s.format == table_format::csv    ? render::aggregate_csv(r)
                          : s.format == table_format::json ? render::aggregate_json(r)
                                                           : render::aggregate_text(r);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

std::vector<report::group_key> parse_group_keys(const std::string& value) {
  std::vector<report::group_key> out;
  for (const auto& part : split(value, ',')) {
    const std::string_view k = trim(part);
    report::group_key key{};
    if (k == "host") {
      key = report::group_key::host;
    } else if (k == "job") {
      key = report::group_key::job;
    } else if (k == "day") {
      key = report::group_key::day;
    } else if (k == "user") {
      key = report::group_key::user;
    } else {
      throw usage_error(fmt::format(
          "--by '{}': expected host, job, day or user, or several of them separated by commas",
          text::escape_for_terminal(value)));
    }
    if (std::find(out.begin(), out.end(), key) != out.end()) {
      throw usage_error(fmt::format("--by '{}': {} is given twice", value, k));
    }
    out.push_back(key);
  }
  return out;
}

}  // namespace joules::session
