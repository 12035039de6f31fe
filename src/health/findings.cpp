#include "health/findings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "health/xid.hpp"

namespace joules::health {
namespace {

// A limit this much below the default is a cap someone set, not rounding.
constexpr double kLimitToleranceW = 1.0;

struct builder {
  const device_info& d;
  std::vector<finding>& out;

  void add(severity level, std::string code, std::string message, std::string fix,
           std::string flag) {
    finding f;
    f.level = level;
    f.code = std::move(code);
    f.gpu = d.index;
    f.vendor = d.vendor;
    f.message = fmt::format("{}: {}", gpu_name(d), message);
    f.fix = std::move(fix);
    f.flag = std::move(flag);
    out.push_back(std::move(f));
  }
};

std::string reset_fix(unsigned index) {
  return fmt::format(
      "drain the node and reset the GPU when it is idle (nvidia-smi -i {} -r), or reboot", index);
}

void memory_errors(builder& b, const health_reading& h) {
  const unsigned i = b.d.index;
  const auto unc_vol = h.ecc_uncorrected_volatile.value_or(0);
  const auto unc_agg = h.ecc_uncorrected_aggregate.value_or(0);
  if (unc_vol > 0) {
    b.add(severity::critical, "ecc_uncorrectable",
          fmt::format("{} uncorrectable ECC error{} since the driver loaded", unc_vol,
                      unc_vol == 1 ? "" : "s"),
          reset_fix(i) + "; if they come back, have the GPU replaced",
          fmt::format("ECC uncorrectable {}", unc_vol));
  } else if (unc_agg > 0) {
    b.add(severity::warning, "ecc_uncorrectable_lifetime",
          fmt::format("{} uncorrectable ECC error{} over the GPU's life (none since the driver "
                      "loaded)",
                      unc_agg, unc_agg == 1 ? "" : "s"),
          "watch for new ones (joules doctor, DCGM); a GPU that keeps producing them should be "
          "replaced",
          fmt::format("ECC uncorrectable {} (lifetime)", unc_agg));
  }
  if (const auto c = h.ecc_corrected_volatile.value_or(0); c > 0) {
    b.add(severity::info, "ecc_corrected",
          fmt::format("{} corrected ECC error{} since the driver loaded", c, c == 1 ? "" : "s"), "",
          "");
  }
  if (h.ecc_enabled == false) {
    b.add(severity::info, "ecc_disabled", "ECC is disabled: memory errors go undetected",
          fmt::format("nvidia-smi -i {} -e 1 (root), then reboot", i), "ECC off");
  }
  if (h.retirement_pending.value_or(false)) {
    b.add(severity::critical, "retirement_pending",
          "memory pages are waiting to be retired, which happens at the next GPU reset; until "
          "then the bad pages may still be used",
          reset_fix(i), "page retirement pending");
  }
  const unsigned retired =
      h.retired_pages_double_bit.value_or(0) + h.retired_pages_single_bit.value_or(0);
  if (retired > 0) {
    b.add(severity::info, "retired_pages",
          fmt::format("{} memory page{} retired ({} for double-bit errors)", retired,
                      retired == 1 ? "" : "s", h.retired_pages_double_bit.value_or(0)),
          "", "");
  }
  if (h.remap_failure.value_or(false)) {
    b.add(severity::critical, "remap_failure",
          "a memory row could not be remapped: the GPU has run out of spare rows",
          "drain the node and have the GPU replaced", "row remap failed");
  }
  if (h.remap_pending.value_or(false)) {
    b.add(severity::critical, "remap_pending",
          "memory rows are waiting to be remapped, which happens at the next GPU reset",
          reset_fix(i), "row remap pending");
  }
  if (const auto r = h.remapped_rows_uncorrected.value_or(0); r > 0) {
    b.add(severity::info, "remapped_rows",
          fmt::format("{} memory row{} remapped after uncorrectable errors ({} after corrected "
                      "ones)",
                      r, r == 1 ? "" : "s", h.remapped_rows_corrected.value_or(0)),
          "", "");
  }
}

void slowdowns(builder& b, const health_reading& h) {
  if (h.throttle) {
    const clock_events& e = *h.throttle;
    const std::string cooling = "check the cooling (airflow, fans, inlet temperature) and power";
    if (e.hw_thermal) {
      b.add(severity::critical, "hw_thermal_slowdown",
            "hardware thermal slowdown is active: clocks are cut by half or more because the GPU "
            "is too hot",
            cooling, "HW thermal slowdown");
    }
    if (e.hw_power_brake) {
      b.add(severity::critical, "hw_power_brake",
            "hardware power brake is active: an external signal (the power supply or the "
            "chassis) cuts clocks by half or more",
            "check the power supplies and the chassis' power management", "HW power brake");
    }
    if (e.hw_slowdown && !e.hw_thermal && !e.hw_power_brake) {
      b.add(severity::critical, "hw_slowdown",
            "hardware slowdown is active: clocks are cut by half or more (temperature, power "
            "brake or a power supply fault)",
            cooling, "HW slowdown");
    }
    if (e.sw_thermal) {
      b.add(severity::warning, "sw_thermal_slowdown",
            "thermal slowdown is active: the driver lowers clocks to stay under the temperature "
            "limit",
            cooling, "thermal slowdown");
    }
  }
  if (h.temperature_c && h.slowdown_temperature_c &&
      *h.temperature_c >= *h.slowdown_temperature_c) {
    b.add(severity::warning, "temperature_high",
          fmt::format("temperature {:.0f} °C is at or above the slowdown threshold {:.0f} °C",
                      *h.temperature_c, *h.slowdown_temperature_c),
          "check the cooling (airflow, fans, inlet temperature)",
          fmt::format("hot {:.0f}°C", *h.temperature_c));
  }
}

void pcie(builder& b, const health_reading& h) {
  const unsigned i = b.d.index;
  if (h.pcie_width && h.pcie_max_width && *h.pcie_width < *h.pcie_max_width) {
    b.add(severity::warning, "pcie_width_degraded",
          fmt::format("PCIe link is x{}, narrower than its maximum x{}", *h.pcie_width,
                      *h.pcie_max_width),
          "reseat the GPU or check its riser and slot; a link that trains narrower than it can "
          "usually has a bad contact",
          fmt::format("PCIe x{}<x{}", *h.pcie_width, *h.pcie_max_width));
  }
  if (h.pcie_generation && h.pcie_max_generation && *h.pcie_generation < *h.pcie_max_generation) {
    // Links drop to a slower generation when the GPU idles, to save power: expected then.
    const bool idle = (h.throttle && h.throttle->gpu_idle) || h.gpu_util_percent == 0U;
    if (idle) {
      b.add(severity::info, "pcie_generation_idle",
            fmt::format("PCIe link runs at gen{} (maximum gen{}) while the GPU is idle, as it "
                        "does to save power",
                        *h.pcie_generation, *h.pcie_max_generation),
            "", "");
    } else {
      b.add(severity::warning, "pcie_generation_degraded",
            fmt::format("PCIe link runs at gen{}, below its maximum gen{}, while the GPU is busy",
                        *h.pcie_generation, *h.pcie_max_generation),
            fmt::format("check the slot's and riser's PCIe generation in the BIOS; nvidia-smi -i "
                        "{} -q -d PCIE shows the link",
                        i),
            fmt::format("PCIe gen{}<gen{}", *h.pcie_generation, *h.pcie_max_generation));
    }
  }
  if (const auto r = h.pcie_replays.value_or(0); r > 0) {
    b.add(severity::info, "pcie_replays",
          fmt::format("{} PCIe replay{} (link-level retransmissions)", r, r == 1 ? "" : "s"), "",
          "");
  }
}

void power_management(builder& b, const device_info& d, const health_reading& h) {
  const unsigned i = d.index;
  // NaN stands for "not known": every comparison with it is false.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double limit = h.power_limit_w.value_or(d.power_limit ? d.power_limit->value : nan);
  const double def =
      h.default_power_limit_w.value_or(d.default_power_limit ? d.default_power_limit->value : nan);
  if (limit < def - kLimitToleranceW) {
    b.add(severity::warning, "power_limit_below_default",
          fmt::format("power limit {:.0f} W is below the default {:.0f} W: the GPU is capped",
                      limit, def),
          fmt::format("if that is not intended: nvidia-smi -i {} -pl {:.0f} (root)", i, def),
          fmt::format("limit {:.0f}<{:.0f} W", limit, def));
  }
  if (h.persistence_mode == false) {
    b.add(severity::warning, "persistence_off",
          "persistence mode is off: the driver unloads between jobs, which resets the energy "
          "counter and the volatile ECC counts and makes the first NVML call of every job slow",
          fmt::format("nvidia-smi -i {} -pm 1 (root), or run nvidia-persistenced", i),
          "persistence off");
  }
}

void nvlink_findings(builder& b, const health_reading& h) {
  const unsigned i = b.d.index;
  std::string down;
  std::size_t count = 0;
  for (const nvlink_state& l : h.nvlink_links) {
    if (l.active) continue;
    down += fmt::format("{}{}", count++ == 0 ? "" : ", ", l.link);
  }
  if (count > 0) {
    b.add(
        severity::warning, "nvlink_down",
        fmt::format("NVLink{} {} {} down", count == 1 ? "" : "s", down, count == 1 ? "is" : "are"),
        fmt::format("traffic between GPUs falls back to slower paths; nvidia-smi nvlink -s -i {} "
                    "shows the links; a reset of the GPU (or the node) retrains them",
                    i),
        fmt::format("NVLink down {}", count));
  }
  const std::uint64_t errors =
      h.nvlink_crc_flit_errors.value_or(0) + h.nvlink_crc_data_errors.value_or(0) +
      h.nvlink_replay_errors.value_or(0) + h.nvlink_recovery_errors.value_or(0);
  if (errors == 0) return;
  const std::string counts =
      fmt::format("CRC flit {}, CRC data {}, replay {}, recovery {}",
                  h.nvlink_crc_flit_errors.value_or(0), h.nvlink_crc_data_errors.value_or(0),
                  h.nvlink_replay_errors.value_or(0), h.nvlink_recovery_errors.value_or(0));
  // The links the errors are on, where each link's counts were read.
  std::string links;
  for (const nvlink_state& l : h.nvlink_links) {
    const std::uint64_t n = l.errors();
    if (n > 0) links += fmt::format("{}{} ({})", links.empty() ? "" : ", ", l.link, n);
  }
  const std::string on = links.empty() ? std::string() : "; on link " + links;
  if (h.nvlink_errors_rising == true) {
    b.add(severity::warning, "nvlink_errors_rising",
          "NVLink errors grew while joules watched (" + counts + " since the driver loaded" + on +
              ")",
          fmt::format("a link that keeps producing errors slows collectives; check nvidia-smi "
                      "nvlink -e -i {} and the kernel log for XID 74",
                      i),
          "NVLink errors");
  } else {
    b.add(severity::info, "nvlink_errors",
          "NVLink errors since the driver loaded (" + counts + on + ")", "", "");
  }
}

void xid_findings(builder& b, const health_reading& h) {
  for (const xid_count& c : h.xid_counts) {
    if (c.count == 0) continue;
    const xid_meaning* m = xid_lookup(c.xid);
    const severity level = xid_severity(c.xid);
    const std::string what = m != nullptr ? fmt::format("XID {} ({})", c.xid, m->description)
                                          : fmt::format("XID {}", c.xid);
    b.add(level, level == severity::critical ? "xid_critical" : "xid",
          fmt::format("{} reported {} time{} since joules started watching{}", what, c.count,
                      c.count == 1 ? "" : "s", h.last_xid == c.xid ? " (the latest XID)" : ""),
          level == severity::critical
              ? reset_fix(b.d.index) + "; the kernel log (dmesg) has the details (docs/xid.md)"
              : "the kernel log (dmesg) names the process and engine; docs/xid.md says what the "
                "number means",
          fmt::format("XID {}", c.xid));
  }
}

}  // namespace

std::string_view to_string(severity s) {
  switch (s) {
    case severity::info:
      return "info";
    case severity::warning:
      return "warning";
    case severity::critical:
      return "critical";
  }
  return "info";
}

std::vector<finding> health_findings(const device_info& d, const health_reading& h, bool lost) {
  std::vector<finding> out;
  builder b{d, out};
  if (lost) {
    b.add(
        severity::critical, "gpu_lost",
        d.unreadable.empty()
            ? std::string("the GPU stopped answering (NVML_ERROR_GPU_IS_LOST): it fell off the bus")
            : "the driver lists the GPU, but it could not be read at start: " + d.unreadable,
        "drain the node; check the kernel log (dmesg) for Xid errors and reboot", "LOST");
    return out;
  }
  memory_errors(b, h);
  slowdowns(b, h);
  pcie(b, h);
  power_management(b, d, h);
  nvlink_findings(b, h);
  xid_findings(b, h);
  return out;
}

int exit_status(const std::vector<finding>& findings) {
  int status = kHealthy;
  for (const auto& f : findings) {
    if (f.level == severity::critical) return kUnhealthy;
    if (f.level == severity::warning) status = kWarnings;
  }
  return status;
}

std::string_view status_name(int exit_status) {
  if (exit_status == kUnhealthy) return "unhealthy";
  if (exit_status == kWarnings) return "warnings";
  return "healthy";
}

}  // namespace joules::health
