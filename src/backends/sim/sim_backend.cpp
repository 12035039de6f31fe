#include "backends/sim/sim_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "util/clock.hpp"
#include "util/error.hpp"

namespace joules {
namespace {

constexpr const char* kNoLimits =
    "simulated GPUs have no power limit to set (a model's power does not respond to one); "
    "tuning needs GPUs whose power limit NVML, AMD SMI, ROCm SMI or Level Zero can set";

// TDPs are the board power limits on each vendor's datasheet.
constexpr std::array kModels = {
    sim_model{"h100-sxm", "NVIDIA H100 80GB HBM3", "hopper", 700.0},
    sim_model{"h100-pcie", "NVIDIA H100 PCIe", "hopper", 350.0},
    sim_model{"h200", "NVIDIA H200", "hopper", 700.0},
    sim_model{"gh200", "NVIDIA GH200 480GB", "hopper", 900.0},
    sim_model{"b200", "NVIDIA B200", "blackwell", 1000.0},
    sim_model{"a100-sxm", "NVIDIA A100-SXM4-80GB", "ampere", 400.0},
    sim_model{"a100-pcie", "NVIDIA A100 80GB PCIe", "ampere", 300.0},
    sim_model{"a10", "NVIDIA A10", "ampere", 150.0},
    sim_model{"l40s", "NVIDIA L40S", "ada", 350.0},
    sim_model{"l4", "NVIDIA L4", "ada", 72.0},
    sim_model{"rtx4090", "NVIDIA GeForce RTX 4090", "ada", 450.0},
    sim_model{"v100", "Tesla V100-SXM2-32GB", "volta", 300.0},
    sim_model{"t4", "Tesla T4", "turing", 70.0},
};

// The "train" profile: a start-up phase (data loading, model set-up), then steps of compute at
// high utilisation followed by a communication/data phase at lower utilisation.
constexpr double kStartupS = 1.0;
constexpr double kStartupUtil = 0.12;
constexpr double kStepS = 0.6;
constexpr double kComputeS = 0.48;
constexpr double kComputeUtil = 0.97;
constexpr double kCommUtil = 0.45;

// GPUs of one node differ slightly (silicon, cooling); a 1 % spread in steps of 0.5 %.
double gpu_factor(unsigned gpu) {
  return 1.0 - 0.005 * static_cast<double>(gpu % 3);
}

// What the health readings of a simulated board show besides power: illustrative values of the
// kind each product reports (memory size, top clocks, PCIe generation), not datasheet claims.
struct sim_board {
  std::string_view key;
  double memory_gib;
  unsigned max_sm_mhz;
  unsigned memory_mhz;
  unsigned pcie_generation;
  bool fan;  // boards with their own fan; SXM and passive PCIe boards report none
};

constexpr std::array kBoards = {
    sim_board{"h100-sxm", 79.6, 1980, 2619, 5, false},
    sim_board{"h100-pcie", 79.6, 1755, 1593, 5, false},
    sim_board{"h200", 140.4, 1980, 3201, 5, false},
    sim_board{"gh200", 94.5, 1980, 2619, 5, false},
    sim_board{"b200", 179.1, 1965, 3996, 5, false},
    sim_board{"a100-sxm", 80.0, 1410, 1593, 4, false},
    sim_board{"a100-pcie", 80.0, 1410, 1512, 4, false},
    sim_board{"a10", 22.5, 1695, 6251, 4, false},
    sim_board{"l40s", 45.0, 2520, 9001, 4, false},
    sim_board{"l4", 22.5, 2040, 6251, 4, false},
    sim_board{"rtx4090", 24.0, 2520, 10501, 4, true},
    sim_board{"v100", 32.0, 1530, 877, 3, false},
    sim_board{"t4", 15.0, 1590, 5001, 3, false},
};
constexpr sim_board kOtherBoard{"", 80.0, 1980, 2619, 5, false};

const sim_board& board_of(std::string_view key) {
  for (const auto& b : kBoards) {
    if (b.key == key) return b;
  }
  return kOtherBoard;
}

// The temperature model follows utilisation averaged over this long (a heat sink warms slowly).
constexpr double kThermalS = 30.0;
constexpr double kIdleC = 32.0;
constexpr double kLoadRiseC = 43.0;
constexpr unsigned kIdleSmMhz = 345;

class sim_backend final : public backend {
 public:
  sim_backend(const sim_options& o, const sim_model& model, double tdp_w)
      : profile_(o.profile),
        tdp_w_(tdp_w),
        clock_(o.clock),
        origin_(now()),
        board_(board_of(model.key)),
        gpm_(model.architecture == "hopper" || model.architecture == "blackwell"),
        remaps_rows_(model.architecture != "volta" && model.architecture != "turing"),
        gpus_(o.gpus) {
    meta_.backend = "sim";
    meta_.library_version =
        fmt::format("sim model {}, {:g} W TDP, profile {}", model.key, tdp_w, o.profile);
    for (unsigned i = 0; i < o.gpus; ++i) {
      device_info d;
      d.index = i;
      d.uuid = fmt::format("SIM-{:08x}-0000-4000-8000-{:012x}", i, i);
      d.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + i);
      d.name = std::string(model.name);
      d.architecture = std::string(model.architecture);
      // The models are NVIDIA boards; a name of one's own (--sim-tdp) is labelled the same.
      d.vendor = "nvidia";
      d.has_energy_counter = true;
      d.power = power_source::model;
      d.power_limit = watts{tdp_w};
      d.default_power_limit = watts{tdp_w};
      d.simulated = true;
      infos_.push_back(std::move(d));
    }
  }

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return infos_; }

  device_reading read(std::size_t i, read_what what) override {
    const double t = seconds_between(origin_, now());
    const auto gpu = static_cast<unsigned>(i);
    const double idle = kSimIdleFraction * tdp_w_;
    device_reading r;
    const double energy_j = idle * t + (tdp_w_ - idle) * profile_.integral(gpu, t);
    if (what != read_what::power)
      r.energy_mj = static_cast<std::uint64_t>(std::floor(energy_j * 1000.0));
    if (what != read_what::counter)
      r.power = watts{idle + (tdp_w_ - idle) * profile_.utilisation(gpu, t)};
    return r;
  }

  health_reading read_health(std::size_t i) override {
    const double t = seconds_between(origin_, now());
    const auto gpu = static_cast<unsigned>(i);
    const double u = profile_.utilisation(gpu, t);
    const double t0 = std::max(0.0, t - kThermalS);
    const double warm = (profile_.integral(gpu, t) - profile_.integral(gpu, t0)) / kThermalS;
    const bool idle = u < 0.05;
    const bool capped = u > 0.95;  // at the top of the profile the board sits at its power limit
    health_reading h;
    h.gpu_util_percent = static_cast<unsigned>(std::lround(100.0 * u));
    h.memory_util_percent = static_cast<unsigned>(std::lround(60.0 * u));
    const double total = board_.memory_gib * 1024.0 * 1024.0 * 1024.0;
    h.memory_total_bytes = static_cast<std::uint64_t>(total);
    h.memory_reserved_bytes = 512ULL << 20U;
    h.memory_used_bytes = static_cast<std::uint64_t>(total * std::min(0.72, 0.05 + 0.7 * u));
    h.temperature_c = std::round(kIdleC + kLoadRiseC * warm);
    h.memory_temperature_c = *h.temperature_c + 6.0;
    h.slowdown_temperature_c = 89.0;
    h.shutdown_temperature_c = 92.0;
    h.max_sm_clock_mhz = board_.max_sm_mhz;
    h.max_memory_clock_mhz = board_.memory_mhz;
    h.sm_clock_mhz = idle ? kIdleSmMhz : (capped ? board_.max_sm_mhz * 23 / 25 : board_.max_sm_mhz);
    h.memory_clock_mhz = board_.memory_mhz;
    // NVML's layout (backends/health.hpp): bit 0 idle, bit 2 software power cap.
    clock_events events;
    events.gpu_idle = idle;
    events.sw_power_cap = capped;
    events.raw = (idle ? 0x1ULL : 0ULL) | (capped ? 0x4ULL : 0ULL);
    h.throttle = events;
    if (board_.fan) h.fan_percent = static_cast<unsigned>(std::lround(30.0 + 50.0 * warm));
    h.performance_state = 0;
    h.ecc_enabled = true;
    h.ecc_corrected_volatile = h.ecc_uncorrected_volatile = 0;
    h.ecc_corrected_aggregate = h.ecc_uncorrected_aggregate = 0;
    if (remaps_rows_) {
      h.remapped_rows_corrected = h.remapped_rows_uncorrected = 0;
      h.remap_pending = h.remap_failure = false;
    } else {
      h.retired_pages_single_bit = h.retired_pages_double_bit = 0;
      h.retirement_pending = false;
    }
    h.pcie_generation = h.pcie_max_generation = board_.pcie_generation;
    h.pcie_width = h.pcie_max_width = 16U;
    h.pcie_replays = 0;
    h.pcie_tx_bytes_per_s = 2.0e9 * u;
    h.pcie_rx_bytes_per_s = 3.0e9 * u;
    h.persistence_mode = true;
    h.power_limit_w = tdp_w_;
    h.default_power_limit_w = tdp_w_;
    if (gpm_) {
      h.sm_activity_percent = 93.0 * u;
      h.sm_occupancy_percent = 45.0 * u;
      h.tensor_activity_percent = u > 0.9 ? 62.0 * u : 8.0 * u;  // tensor cores in compute only
      h.dram_bandwidth_percent = 55.0 * u;
      if (gpus_ > 1) {
        // Gradients cross NVLink in the communication phase of a step.
        const double nvlink = idle ? 0.0 : (u > 0.9 ? 25.0e9 : 180.0e9);
        h.nvlink_tx_bytes_per_s = h.nvlink_rx_bytes_per_s = nvlink;
      }
    }
    return h;
  }

  device_capabilities probe_capabilities(std::size_t i) override {
    (void)i;
    device_capabilities c;
    c.health_readings = {"utilization", "memory",           "temperature", "memory_temperature",
                         "clocks",      "clock_events",     "ecc_mode",    "ecc_errors",
                         "pcie_link",   "persistence_mode", "power_limit"};
    c.gpm = gpm_;
    if (gpm_) c.health_readings.emplace_back("gpm");
    c.power_limit_control = false;  // a model has no limit to change
    return c;
  }

  // The model's limit is its TDP, shown but never enforced: there is nothing to set.
  power_limit_reading read_power_limit(std::size_t i) override {
    (void)i;
    const auto mw = static_cast<std::uint32_t>(tdp_w_ * 1000.0);
    return {{control_status::not_supported, kNoLimits}, mw, std::nullopt, std::nullopt, mw};
  }
  control_result set_power_limit(std::size_t i, std::uint32_t limit_mw) override {
    (void)i;
    (void)limit_mw;
    return {control_status::not_supported, kNoLimits};
  }

 private:
  mono_time now() const { return clock_ ? clock_() : steady::now(); }

  sim_profile profile_;
  double tdp_w_;
  std::function<mono_time()> clock_;
  mono_time origin_;
  const sim_board& board_;
  bool gpm_;
  bool remaps_rows_;
  unsigned gpus_;
  backend_meta meta_;
  std::vector<device_info> infos_;
};

}  // namespace

std::span<const sim_model> sim_models() {
  return kModels;
}

sim_profile::sim_profile(std::string_view spec) {
  if (spec == "train") {
    kind_ = kind::train;
    return;
  }
  kind_ = kind::constant;
  if (spec == "idle") {
    constant_ = 0.0;
    return;
  }
  double u = -1.0;
  const auto [end, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), u);
  if (ec != std::errc() || end != spec.data() + spec.size() || !(u >= 0.0 && u <= 1.0)) {
    throw usage_error(fmt::format(
        "--sim-profile '{}': expected train, idle, or a utilisation between 0 and 1", spec));
  }
  constant_ = u;
}

double sim_profile::utilisation(unsigned gpu, double t) const {
  if (kind_ == kind::constant) return constant_;
  if (t < kStartupS) return kStartupUtil;
  const double in_step = std::fmod(t - kStartupS, kStepS);
  return (in_step < kComputeS ? kComputeUtil : kCommUtil) * gpu_factor(gpu);
}

double sim_profile::integral(unsigned gpu, double t) const {
  if (t <= 0.0) return 0.0;
  if (kind_ == kind::constant) return constant_ * t;
  if (t < kStartupS) return kStartupUtil * t;
  const double after = t - kStartupS;
  const double steps = std::floor(after / kStepS);
  const double in_step = after - steps * kStepS;
  const double per_step = kComputeS * kComputeUtil + (kStepS - kComputeS) * kCommUtil;
  const double partial = in_step < kComputeS
                             ? in_step * kComputeUtil
                             : kComputeS * kComputeUtil + (in_step - kComputeS) * kCommUtil;
  return kStartupUtil * kStartupS + (steps * per_step + partial) * gpu_factor(gpu);
}

std::unique_ptr<backend> open_sim_backend(const sim_options& o) {
  const sim_model* model = nullptr;
  for (const auto& m : kModels) {
    if (m.key == o.model) model = &m;
  }
  sim_model custom;
  if (model == nullptr) {
    if (!o.tdp_w) {
      std::string known;
      for (const auto& m : kModels)
        known += fmt::format("{}{}", known.empty() ? "" : ", ", m.key);
      throw usage_error(fmt::format(
          "--sim-model '{}': not a known GPU model; known: {} (or give --sim-tdp W for any other)",
          o.model, known));
    }
    custom = sim_model{o.model, o.model, "", *o.tdp_w};
    model = &custom;
  }
  if (o.gpus == 0 || o.gpus > 1024) {
    throw usage_error(
        fmt::format("--sim-gpus {}: expected a number of GPUs from 1 to 1024", o.gpus));
  }
  return std::make_unique<sim_backend>(o, *model, o.tdp_w.value_or(model->tdp_w));
}

}  // namespace joules
