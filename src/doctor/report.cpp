#include "doctor/report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace joules::doctor {
namespace {

using health::finding;
using health::severity;

// What to do about a driver that answers slowly, in the vendor's tools.
std::string slow_fix(const device_info& d) {
  if (d.vendor == "amd") {
    return fmt::format(
        "check the kernel log (dmesg) for amdgpu errors and amd-smi metric -g {} "
        "for the GPU's state; if it stays slow, drain the node and reboot",
        d.index);
  }
  if (d.vendor == "intel" && d.architecture == "gaudi") {
    return "check the kernel log (dmesg) for habanalabs errors and hl-smi for the device's "
           "state; if it stays slow, drain the node and reboot";
  }
  if (d.vendor == "intel") {
    return fmt::format(
        "check the kernel log (dmesg) for i915 or xe errors and xpu-smi stats -d "
        "{} for the GPU's state; if it stays slow, drain the node and reboot",
        d.index);
  }
  return fmt::format(
      "check the kernel log (dmesg) for Xid errors and nvidia-smi -q -i {} for the "
      "GPU's state; turn persistence mode on (nvidia-smi -pm 1); if it stays slow, "
      "drain the node and reboot",
      d.index);
}

finding about(const device_info& d, severity level, std::string code, std::string message,
              std::string fix = {}) {
  finding f;
  f.level = level;
  f.code = std::move(code);
  f.gpu = d.index;
  f.vendor = d.vendor;
  f.message = fmt::format("{}: {}", gpu_name(d), message);
  f.fix = std::move(fix);
  return f;
}

finding general(severity level, std::string code, std::string message, std::string fix = {}) {
  finding f;
  f.level = level;
  f.code = std::move(code);
  f.message = std::move(message);
  f.fix = std::move(fix);
  return f;
}

bool gpm_expected(const std::string& architecture) {
  return architecture == "hopper" || architecture == "blackwell" || architecture == "rubin";
}

// The codes of docs/monitor-doctor.md's table of findings, in its order.
const std::vector<std::string_view> kChecks = {"backend_unavailable",
                                               "gpu_lost",
                                               "ecc_uncorrectable",
                                               "retirement_pending",
                                               "remap_pending",
                                               "remap_failure",
                                               "hw_slowdown",
                                               "hw_thermal_slowdown",
                                               "hw_power_brake",
                                               "xid_critical",
                                               "xid",
                                               "nvlink_down",
                                               "nvlink_errors_rising",
                                               "ecc_uncorrectable_lifetime",
                                               "sw_thermal_slowdown",
                                               "temperature_high",
                                               "pcie_width_degraded",
                                               "pcie_generation_degraded",
                                               "power_limit_below_default",
                                               "power_limit_left_changed",
                                               "persistence_off",
                                               "read_failed",
                                               "slow_driver",
                                               "not_checked",
                                               "gpu_skipped",
                                               "cuda_order_uncertain",
                                               "cuda_visible_indices",
                                               "cuda_visible_entry",
                                               "no_energy_counter",
                                               "not_measurable",
                                               "cpu_not_measured",
                                               "dram_not_measured",
                                               "gpm_unavailable",
                                               "power_limit_no_permission",
                                               "ecc_corrected",
                                               "retired_pages",
                                               "remapped_rows",
                                               "pcie_replays",
                                               "pcie_generation_idle",
                                               "nvlink_errors",
                                               "ecc_disabled",
                                               "power_limit_tuning",
                                               "simulated"};

const std::vector<std::string_view> kCapabilityGaps = {
    "no_energy_counter", "not_measurable",  "cpu_not_measured",
    "dram_not_measured", "gpm_unavailable", "power_limit_no_permission"};

bool named(const std::vector<std::string>& codes, std::string_view code) {
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

}  // namespace

const std::vector<std::string_view>& known_checks() {
  return kChecks;
}

bool is_capability_gap(std::string_view code) {
  return std::find(kCapabilityGaps.begin(), kCapabilityGaps.end(), code) != kCapabilityGaps.end();
}

std::optional<std::string> unknown_check(const std::vector<std::string>& codes) {
  for (const auto& c : codes) {
    if (std::find(kChecks.begin(), kChecks.end(), c) == kChecks.end()) return c;
  }
  return std::nullopt;
}

std::vector<finding> measurement_findings(const gpu_report& g) {
  std::vector<finding> out;
  const device_info& d = g.info;
  if (g.reading.status == read_status::lost) return out;  // health_findings says it
  if (d.method() == energy_method::none) {
    out.push_back(about(d, severity::warning, "not_measurable",
                        "neither an energy counter nor a power reading: joules cannot measure it",
                        "estimate it instead: --backend sim --sim-model MODEL (or --sim-tdp W)"));
  } else if (!d.has_energy_counter && !d.simulated) {
    out.push_back(about(
        d, severity::warning, "no_energy_counter",
        fmt::format("no energy counter: energy is integrated from {} power readings, which miss "
                    "what happens between them",
                    d.power_window ? "1 s averaged" : "instantaneous"),
        "the counter needs a Volta or newer GPU and an R450 or newer driver "
        "(nvmlDeviceGetTotalEnergyConsumption)"));
  }
  if (g.reading.status == read_status::error) {
    out.push_back(
        about(d, severity::warning, "read_failed",
              fmt::format("reading energy and power failed (error {})", g.reading.error_code)));
  }
  if (g.caps.gpm == false && gpm_expected(d.architecture)) {
    out.push_back(about(d, severity::info, "gpm_unavailable",
                        "GPM metrics (SM and tensor activity) are not available",
                        "GPM needs a Hopper or newer GPU and an R520 or newer driver"));
  }
  if (g.caps.power_limit_control == true && g.caps.power_limit_permission == false) {
    out.push_back(about(d, severity::info, "power_limit_no_permission",
                        "this process may not change the power limit",
                        "changing it (joules tune, nvidia-smi -pl) needs root or CAP_SYS_ADMIN; "
                        "in a container, --cap-add SYS_ADMIN"));
  }
  const bool slow = g.read_s && *g.read_s > kSlowReadS;
  if (slow) {
    out.push_back(about(
        d, severity::warning, "slow_driver",
        fmt::format(
            "the driver took {:.0f} ms to answer one reading of energy and power (a "
            "healthy one takes well under 1 ms; above {:.0f} ms joules cannot keep to its "
            "sampling schedule){}",
            *g.read_s * 1e3, kSlowReadS * 1e3,
            g.not_checked.empty() ? "" : "; its health was not checked, to keep doctor quick"),
        slow_fix(d)));
  } else if (!g.not_checked.empty()) {
    out.push_back(about(d, severity::warning, "not_checked",
                        fmt::format("health and capabilities not checked: {}", g.not_checked),
                        "run joules doctor --gpus with fewer GPUs at a time"));
  }
  return out;
}

void conclude(report& r) {
  std::vector<finding> all;
  if (!r.backend_ok) {
    all.push_back(general(severity::critical, "backend_unavailable", r.backend_error));
  }
  if (r.backend_ok && r.meta.backend == "sim") {
    all.push_back(general(severity::info, "simulated",
                          "the GPUs are simulated (--backend sim): nothing was measured"));
  }
  for (const auto& n : r.notices) {
    // A GPU that fell off the bus before NVML could open it is named only in the notice
    // (nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost (NVML error 15)").
    if (n.find("(NVML error 15)") != std::string::npos) {
      all.push_back(general(severity::critical, "gpu_lost", n,
                            "drain the node; check the kernel log (dmesg) for Xid errors and "
                            "reboot"));
    } else {
      all.push_back(general(severity::warning, "gpu_skipped", n));
    }
  }
  for (const auto& g : r.gpus) {
    for (auto& f : measurement_findings(g))
      all.push_back(std::move(f));
    const bool lost = g.reading.status == read_status::lost;
    if (g.health || lost) {
      for (auto& f : health::health_findings(g.info, g.health.value_or(health_reading{}), lost))
        all.push_back(std::move(f));
    }
  }
  for (const auto& c : r.changed_limits) {
    if (c.owner_running) {
      all.push_back(general(
          severity::info, "power_limit_tuning",
          fmt::format("GPU {}: its power limit is being changed by joules {} (pid {}), which sets "
                      "it back to {:g} W when it ends",
                      c.gpu, c.command, c.pid, c.original_w)));
      continue;
    }
    all.push_back(general(
        severity::warning, "power_limit_left_changed",
        fmt::format("GPU {}: its power limit was left changed by joules {} (pid {}, started {}), "
                    "which ended without setting it back to {:g} W (journal {})",
                    c.gpu, c.command, c.pid, c.started, c.original_w, c.journal),
        "joules tune --restore sets it back (as root, or with CAP_SYS_ADMIN); so does any "
        "joules command but doctor"));
  }
  if (!r.cuda.certain && r.gpus.size() > 1) {
    all.push_back(general(severity::warning, "cuda_order_uncertain",
                          "GPUs of different models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: "
                          "CUDA numbers the fastest GPU first, so CUDA's device numbers may not "
                          "be nvidia-smi's (or joules')",
                          "export CUDA_DEVICE_ORDER=PCI_BUS_ID"));
  }
  if (r.cuda.visible_indices_ambiguous) {
    all.push_back(general(severity::warning, "cuda_visible_indices",
                          "CUDA_VISIBLE_DEVICES names GPUs by number, and CUDA numbers this "
                          "machine's GPUs differently from NVML: joules and nvidia-smi may take a "
                          "number for another GPU than CUDA does",
                          "name the GPUs by UUID in CUDA_VISIBLE_DEVICES (nvidia-smi -L lists "
                          "them), or export CUDA_DEVICE_ORDER=PCI_BUS_ID"));
  }
  for (const auto& n : r.cuda.notes)
    all.push_back(general(severity::warning, "cuda_visible_entry", n));
  for (const auto& c : r.components) {
    if (c.method != energy_method::none) continue;
    const std::string what = c.kind == device_kind::dram ? "DRAM" : "CPU";
    // Counters that exist but cannot be read have a fix; absent ones (a VM) are no news.
    all.push_back(general(c.fix.empty() ? severity::info : severity::warning,
                          c.kind == device_kind::dram ? "dram_not_measured" : "cpu_not_measured",
                          fmt::format("{} energy is not measured: {}", what, c.detail), c.fix));
  }
  // Capability gaps are information unless --fail-on names them; what it names is critical;
  // what --ignore names is set aside.
  std::vector<finding> kept;
  r.ignored.clear();
  for (auto& f : all) {
    if (is_capability_gap(f.code)) f.level = severity::info;
    if (named(r.policy.fail_on, f.code)) f.level = severity::critical;
    (named(r.policy.ignore, f.code) ? r.ignored : kept).push_back(std::move(f));
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const finding& a, const finding& b) { return a.level > b.level; });
  r.exit_status = health::exit_status(kept);
  r.findings = std::move(kept);
}

}  // namespace joules::doctor
