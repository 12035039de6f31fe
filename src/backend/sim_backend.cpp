#include "backend/sim_backend.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

#include "util/clock.hpp"
#include "util/error.hpp"

namespace joules {
namespace {

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
constexpr double kStartupS = 3.0;
constexpr double kStartupUtil = 0.12;
constexpr double kStepS = 0.6;
constexpr double kComputeS = 0.48;
constexpr double kComputeUtil = 0.97;
constexpr double kCommUtil = 0.45;

// GPUs of one node differ slightly (silicon, cooling); a 1 % spread in steps of 0.5 %.
double gpu_factor(unsigned gpu) {
  return 1.0 - 0.005 * static_cast<double>(gpu % 3);
}

class sim_backend final : public backend {
 public:
  sim_backend(const sim_options& o, const sim_model& model, double tdp_w)
      : profile_(o.profile), tdp_w_(tdp_w), origin_(steady::now()) {
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
    const double t = seconds_between(origin_, steady::now());
    const auto gpu = static_cast<unsigned>(i);
    const double idle = kSimIdleFraction * tdp_w_;
    device_reading r;
    const double energy_j = idle * t + (tdp_w_ - idle) * profile_.integral(gpu, t);
    r.energy_mj = static_cast<std::uint64_t>(std::floor(energy_j * 1000.0));
    if (what == read_what::all)
      r.power = watts{idle + (tdp_w_ - idle) * profile_.utilisation(gpu, t)};
    return r;
  }

 private:
  sim_profile profile_;
  double tdp_w_;
  mono_time origin_;
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
