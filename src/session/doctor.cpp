#include "session/doctor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "control/permission.hpp"
#include "doctor/examine.hpp"
#include "doctor/report.hpp"
#include "sampler/sampler.hpp"
#include "session/device_choice.hpp"
#include "session/identity.hpp"
#include "session/limit_recovery.hpp"
#include "term/terminal.hpp"
#include "util/error.hpp"

namespace joules::session {
namespace {

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

void fill(doctor::report& r, sampler& readings, const std::optional<std::string>& gpus_option) {
  doctor::describe(r, readings.hardware());
  const device_choice choice = choose_devices(readings, gpus_option);
  std::vector<std::size_t> chosen;
  if (!choice.gpus.empty()) {
    const scope_result& scope = choice.scope;
    r.scope = scope.value.empty() ? scope.source : fmt::format("{} {}", scope.source, scope.value);
    for (std::size_t k : scope.devices)
      chosen.push_back(choice.gpu_index[k]);
  }
  // Every question on the sampler thread, the only one that calls the driver.
  r.gpus = readings.on_thread(
      [&](backend& b) { return doctor::examine(b, chosen, [] { return steady::now(); }); });
  // Whether this process may change a limit: a question about the process, answered without
  // setting anything (doctor changes nothing).
  const control::limit_permission permission = control::process_permission();
  r.power_limit_permission = permission.describe();
  for (auto& g : r.gpus) {
    if (g.caps.power_limit_control == true) g.caps.power_limit_permission = permission.allowed();
  }
  // A GPU that could not be read at start has no name or UUID to be ordered by, and CUDA does
  // not count it: it is left out of the mapping.
  std::vector<device_info> readable;
  for (const auto& d : choice.gpus) {
    if (d.unreadable.empty()) readable.push_back(d);
  }
  r.cuda = doctor::map_cuda(readable, env_value("CUDA_DEVICE_ORDER"),
                            env_value("CUDA_VISIBLE_DEVICES"), mig_parents_of(readings));
  for (auto& g : r.gpus) {
    for (const auto& e : r.cuda.devices) {
      if (e.uuid == g.info.uuid && !g.cuda_index) g.cuda_index = e.cuda_index;
    }
  }
}

}  // namespace

std::vector<std::string> doctor_checks() {
  const auto& known = doctor::known_checks();
  return {known.begin(), known.end()};
}

int check(const doctor_settings& s) {
  doctor::report r;
  r.policy.fail_on = s.fail_on;
  r.policy.ignore = s.ignore;
  r.hostname = host_name();
  r.time = iso8601_utc(std::chrono::system_clock::now());
  std::unique_ptr<sampler> readings;
  try {
    // The sampler's thread opens the backend and, below, asks it everything.
    readings =
        std::make_unique<sampler>([&s] { return open_backend(s.backend); }, sampler_options{});
    r.backend_ok = true;
  } catch (const fatal_error& e) {
    r.backend_error = e.what();
  }
  if (readings) fill(r, *readings, s.gpus);
  // Limits a joules changed and has not set back: reported, never restored here.
  for (const auto& left : left_limits()) {
    const auto& e = left.entry;
    r.changed_limits.push_back({e.index, e.uuid, e.original_mw / 1000.0, e.command, e.pid,
                                e.started, left.owner_running, e.path});
  }
  doctor::conclude(r);
  // At the terminal's width, else 80 (a pipe, a log), as --help.
  const term::capabilities cap = term::of(STDOUT_FILENO);
  const std::size_t width = cap.tty ? std::clamp<std::size_t>(cap.columns, 60, 160) : 80;
  const std::string out =
      s.json ? doctor::render_json(r) : doctor::render_text(r, cap.color, width);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return r.exit_status;
}

}  // namespace joules::session
