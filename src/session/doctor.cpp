#include "session/doctor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "control/permission.hpp"
#include "doctor/report.hpp"
#include "sampler/sampler.hpp"
#include "session/device_choice.hpp"
#include "session/identity.hpp"
#include "session/limit_recovery.hpp"
#include "term/terminal.hpp"
#include "util/error.hpp"

namespace joules::session {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

// Everything doctor asks the hardware, on the sampler thread.  Each GPU's first reading is
// timed: a slow driver (doctor::kSlowReadS) is reported, and its GPU is not asked the tens of
// health and capability questions that would make doctor take seconds per GPU; neither are the
// GPUs left once doctor::kExamineBudgetS has gone.
std::vector<doctor::gpu_report> examine(backend& b, const std::vector<std::size_t>& chosen) {
  using seconds_d = std::chrono::duration<double>;
  const mono_time began = steady::now();
  std::vector<doctor::gpu_report> out;
  for (std::size_t i : chosen) {
    doctor::gpu_report g;
    g.info = b.devices()[i];
    mono_time t0 = steady::now();
    g.reading = b.read(i, read_what::all);
    double took = seconds_d(steady::now() - t0).count();
    if (took > doctor::kSlowReadS && g.reading.status != read_status::lost) {
      // Once more: one slow read may be this machine's load, not the driver.
      t0 = steady::now();
      g.reading = b.read(i, read_what::all);
      took = std::min(took, seconds_d(steady::now() - t0).count());
    }
    g.read_s = took;
    if (g.reading.status != read_status::lost) {
      if (took > doctor::kSlowReadS) {
        g.not_checked = "the driver is too slow";
      } else if (seconds_d(steady::now() - began).count() > doctor::kExamineBudgetS) {
        g.not_checked = fmt::format("doctor had spent its {:.0f} s on the GPUs before it",
                                    doctor::kExamineBudgetS);
      } else {
        g.health = b.read_health(i);
        g.caps = b.probe_capabilities(i);
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

void fill(doctor::report& r, sampler& readings, const std::optional<std::string>& gpus_option) {
  const backend& hw = readings.hardware();
  r.meta = hw.meta();
  r.notices = hw.notices();
  r.components = hw.components();
  for (const device_info& d : hw.devices()) {
    if (d.kind != device_kind::gpu) r.host_devices.push_back(d);
  }
  const device_choice choice = choose_devices(readings, gpus_option);
  std::vector<std::size_t> chosen;
  if (!choice.gpus.empty()) {
    const scope_result& scope = choice.scope;
    r.scope = scope.value.empty() ? scope.source : fmt::format("{} {}", scope.source, scope.value);
    for (std::size_t k : scope.devices)
      chosen.push_back(choice.gpu_index[k]);
  }
  r.gpus = readings.on_thread([&](backend& b) { return examine(b, chosen); });
  // Whether this process may change a limit: a question about the process, answered without
  // setting anything (doctor changes nothing).
  const control::limit_permission permission = control::process_permission();
  r.power_limit_permission = permission.describe();
  for (auto& g : r.gpus) {
    if (g.caps.power_limit_control == true) g.caps.power_limit_permission = permission.allowed();
  }
  r.cuda = doctor::map_cuda(choice.gpus, env("CUDA_DEVICE_ORDER"), env("CUDA_VISIBLE_DEVICES"),
                            mig_parents_of(readings));
  for (auto& g : r.gpus) {
    for (const auto& e : r.cuda.devices) {
      if (e.uuid == g.info.uuid && !g.cuda_index) g.cuda_index = e.cuda_index;
    }
  }
}

}  // namespace

int check(const doctor_settings& s) {
  doctor::report r;
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
  const std::string out =
      s.json ? doctor::render_json(r) : doctor::render_text(r, term::of(STDOUT_FILENO).color);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return r.exit_status;
}

}  // namespace joules::session
