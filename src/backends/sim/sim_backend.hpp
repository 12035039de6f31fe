#pragma once
// The simulated backend: a documented model of named GPUs (TDP, idle power) driven by a
// utilisation profile, for trying joules without a GPU and for estimating on machines whose GPUs
// expose no power reading.  Every number it produces is marked `simulated` (docs/sim-backend.md).

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "backends/backend.hpp"
#include "util/clock.hpp"

namespace joules {

// Options of the sim backend (docs/sim-backend.md).
struct sim_options {
  std::string model = "h100-sxm";  // a name from sim_models(), or a free name with --sim-tdp
  std::optional<double> tdp_w;     // overrides the model's TDP
  unsigned gpus = 8;
  std::string profile = "train";  // train | idle | a constant utilisation 0..1
  // Where the model's time comes from: steady_clock when empty.  Tests give a virtual clock, so
  // that a reading at a given instant is exact and the same on every machine (the golden files of
  // tests/golden are made from such readings).
  std::function<mono_time()> clock;
};

struct sim_model {
  std::string_view key;   // what --sim-model takes
  std::string_view name;  // the name NVML reports for this GPU
  std::string_view architecture;
  double tdp_w;  // board power limit from the vendor's datasheet
};

std::span<const sim_model> sim_models();

// Utilisation u(t) in [0, 1] of GPU `gpu` at `t` seconds after the backend opened, and its exact
// integral from 0 to t.  Exposed for tests and docs.
class sim_profile {
 public:
  // "train", "idle", or a number in [0, 1].  Throws usage_error otherwise.
  explicit sim_profile(std::string_view spec);
  double utilisation(unsigned gpu, double t) const;
  double integral(unsigned gpu, double t) const;

 private:
  enum class kind { train, constant } kind_ = kind::train;
  double constant_ = 0.0;
};

// Idle power as a fraction of TDP: a modelling assumption (docs/sim-backend.md), not a measurement.
inline constexpr double kSimIdleFraction = 0.1;

std::unique_ptr<backend> open_sim_backend(const sim_options& options);

}  // namespace joules
