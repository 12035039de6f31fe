#pragma once
// The HTML report of `joules report`: one self-contained page (inline CSS and SVG, no network,
// readable without JavaScript; a small inline script adds values under the pointer), with, for
// each run in the records: the headline with how every figure was obtained, power over time per
// GPU with the phases shaded, energy per step over time and as a histogram, stragglers, energy
// by phase, predictions against what happened, the devices, and health events; and what could
// not be read, file and line.  Every outside string (hostnames, labels, GPU names, commands) is
// HTML-escaped.  Pure: returns the page.

#include <string>
#include <string_view>
#include <vector>

#include "report/records.hpp"
#include "report/summary.hpp"

namespace joules::render {

// The charts of one run (report_charts.cpp), each a <figure> or a paragraph saying why there is
// none.  `id` makes the charts' element ids unique in the page ("r0").
std::string power_chart(const report::run& r, const report::run_summary& s, std::string_view id);
std::string step_charts(const report::run_summary& s, std::string_view id);
std::string straggler_chart(const report::run_summary& s, std::string_view id);
std::string phase_chart(const report::run_summary& s, std::string_view id);
std::string prediction_chart(const report::run_summary& s, std::string_view id);

// The page.  `generator` names the program in its footer ("joules 0.1.0").
std::string report_page(const report::record_set& records, std::string_view generator);

}  // namespace joules::render
