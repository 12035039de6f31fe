// `joules doctor`: can joules measure this machine, and are its GPUs healthy?  Opens the backend
// through a sampler, asks every question on the sampler's thread (the only one that calls the
// driver, DESIGN.md), and ends with 0 (healthy), 1 (warnings) or 2 (unhealthy).

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/commands.hpp"
#include "cli/energy_options.hpp"
#include "cli/measure.hpp"
#include "devices/device_scope.hpp"
#include "doctor/report.hpp"
#include "sampler/sampler.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

const std::vector<option_spec>& doctor_options() {
  static const std::vector<option_spec> options = [] {
    std::vector<option_spec> o = {
        {"json", 0, "", "Print the report as one JSON object (docs/monitor-doctor.md).", "", false,
         "Output"},
    };
    for (const auto& m : measure_options()) {
      if (m.name == "gpus") o.push_back(m);
    }
    for (const auto& b : backend_option_specs())
      o.push_back(b);
    for (auto c : component_option_specs()) {
      if (c.name == "components") {
        c.default_text =
            "gpu, plus cpu and dram where RAPL can be read (the report says what "
            "cannot, and why)";
      }
      o.push_back(c);
    }
    o.push_back({"help", 'h', "", "Print this help and exit.", "", false, "Other"});
    return o;
  }();
  return options;
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

std::string host_name() {
  if (auto h = env("JOULES_HOSTNAME"); h && !h->empty()) return *h;
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return buf.data();
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
  std::vector<device_info> gpus;
  std::vector<std::size_t> gpu_at;
  for (std::size_t i = 0; i < hw.devices().size(); ++i) {
    const device_info& d = hw.devices()[i];
    if (d.kind == device_kind::gpu) {
      gpus.push_back(d);
      gpu_at.push_back(i);
    } else {
      r.host_devices.push_back(d);
    }
  }
  const mig_parent_fn mig_parent = [&](std::string_view mig) {
    return readings.on_thread([&](backend& b) { return b.parent_of_mig(mig); });
  };
  std::vector<std::size_t> chosen;
  if (!gpus.empty()) {
    scope_request request;
    request.gpus = gpus_option;
    request.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
    request.nvidia_visible_devices = env("NVIDIA_VISIBLE_DEVICES");
    const scope_result scope = select_devices(gpus, request, mig_parent);
    r.scope = scope.value.empty() ? scope.source : fmt::format("{} {}", scope.source, scope.value);
    for (std::size_t k : scope.devices)
      chosen.push_back(gpu_at[k]);
  }
  r.gpus = readings.on_thread([&](backend& b) { return examine(b, chosen); });
  r.cuda =
      doctor::map_cuda(gpus, env("CUDA_DEVICE_ORDER"), env("CUDA_VISIBLE_DEVICES"), mig_parent);
  for (auto& g : r.gpus) {
    for (const auto& e : r.cuda.devices) {
      if (e.uuid == g.info.uuid && !g.cuda_index) g.cuda_index = e.cuda_index;
    }
  }
}

}  // namespace

const command_spec& doctor_spec() {
  static const command_spec spec{
      "doctor",
      "can joules measure this machine, and are its GPUs healthy?",
      "[OPTIONS]",
      "Reports the NVML library found (path, version, driver); for each GPU what can be measured "
      "(energy counter, instantaneous or averaged power, GPM metrics, power-limit control and "
      "whether this user may change it); which CUDA device is which GPU (CUDA_DEVICE_ORDER, "
      "CUDA_VISIBLE_DEVICES); whether CPU and DRAM energy can be read (RAPL), with the exact fix "
      "when not; and health findings, each with a severity and a fix: uncorrectable ECC errors, "
      "pages or rows waiting to be retired or remapped, failed row remapping, hardware or thermal "
      "slowdown, a PCIe link below its maximum, a power limit below the default, persistence mode "
      "off, a driver slower than 10 ms to answer a reading (its GPU's health is then not asked "
      "for, to keep doctor quick).\n"
      "To learn whether this user may change a GPU's power limit, doctor sets it to the value it "
      "already has (a no-op).\n"
      "Exit status: 0 healthy, 1 warnings, 2 unhealthy (a critical finding, or no GPU can be "
      "read), so that a Slurm prologue or a Kubernetes init container can drain the node; 2 also "
      "for bad options.",
      doctor_options(),
      positional_kind::none,
      "joules doctor\n"
      "joules doctor --json | jq .findings\n"
      "joules doctor --gpus 0,1 || scontrol update nodename=$(hostname) state=drain reason=gpu"};
  return spec;
}

int doctor_main(const parsed_args& args) {
  backend_options backend = read_backend_options(args);
  read_component_options(args, backend.components);
  const auto gpus_option = args.get("gpus");
  if (gpus_option && trim(*gpus_option).empty()) {
    throw usage_error("--gpus '': expected all, or a comma-separated list of GPU indices or UUIDs");
  }
  doctor::report r;
  r.hostname = host_name();
  r.time = iso8601_utc(std::chrono::system_clock::now());
  std::unique_ptr<sampler> readings;
  try {
    // The sampler's thread opens the backend and, below, asks it everything.
    readings =
        std::make_unique<sampler>([&backend] { return open_backend(backend); }, sampler_options{});
    r.backend_ok = true;
  } catch (const fatal_error& e) {
    r.backend_error = e.what();
  }
  if (readings) fill(r, *readings, gpus_option);
  doctor::conclude(r);
  const bool tty = isatty(STDOUT_FILENO) != 0;
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = tty && (no_color == nullptr || no_color[0] == '\0');
  const std::string out = args.has("json") ? doctor::render_json(r) : doctor::render_text(r, color);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return r.exit_status;
}

}  // namespace joules::cli
