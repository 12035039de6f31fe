#include "export/metrics/metric_source.hpp"

#include <algorithm>

#include "export/metrics/gpu_metrics.hpp"
#include "export/metrics/inference_metrics.hpp"
#include "export/metrics/label_policy.hpp"
#include "export/metrics/run_families.hpp"

namespace joules::exporter {
namespace {

// The token sources' part of a source: their families, refilled when the board changes.
class inference_part {
 public:
  inference_part(exposition& e, const label_set& base, const tokens::board* b) : board_(b) {
    if (board_ != nullptr) metrics_.emplace(e, base);
  }
  // True when the board changed since the previous call.
  bool update() {
    if (board_ == nullptr) return false;
    const std::uint64_t v = board_->version();
    const bool changed = v != version_;
    if (changed) views_ = board_->read();
    version_ = v;
    return changed;
  }
  void fill() {
    if (metrics_) metrics_->fill(views_);
  }

 private:
  const tokens::board* board_;
  std::optional<inference_metrics> metrics_;
  std::uint64_t version_ = 0;
  std::vector<tokens::source_view> views_;
};

class node : public metric_source {
 public:
  node(exposition& per_state, exposition& per_collection, const label_set& base,
       const node_source_config& c)
      : readings_(c.readings),
        gpus_(per_state, c.devices, base, c.meta, c.dcgm_compat),
        self_(per_state, per_collection, base, c.meta, c.stale_after_s),
        footprint_(per_state, base, "joules_node", c.carbon, c.components),
        inference_(per_state, base, c.inference),
        pods_of_(c.pods),
        last_energy_(c.devices.size(), 0.0) {}

  bool update() override {
    auto snap = readings_->snapshot();
    const bool tokens = inference_.update();
    auto pods = pods_of_ ? pods_of_() : nullptr;
    // The snapshot held here keeps its address from being reused: equal pointers, same readings.
    const bool changed = first_ || snap != snap_ || tokens || pods != pods_;
    snap_ = std::move(snap);
    pods_ = std::move(pods);
    first_ = false;
    return changed;
  }

  void fill() override {
    self_.fill(snap_.get());
    std::optional<double> energy;
    if (snap_) {
      gpus_.fill(*snap_, pods_.get());
      // Every served device's energy since the sampler's first reading; a device that stops
      // answering keeps the energy it had, so the sum never goes down.
      for (std::size_t k = 0; k < snap_->devices.size() && k < last_energy_.size(); ++k) {
        if (const auto e = snap_->devices[k].energy_j) {
          last_energy_[k] = std::max(last_energy_[k], *e);
        }
        energy = energy.value_or(0.0) + last_energy_[k];
      }
    }
    footprint_.fill(energy);
    inference_.fill();
  }

  void fill_live(mono_time now, const serving_stats& stats) override {
    self_.fill_live(snap_.get(), now, stats);
  }

 private:
  const sampler* readings_;
  gpu_metrics gpus_;
  self_metrics self_;
  footprint_metrics footprint_;
  inference_part inference_;
  std::function<std::shared_ptr<const kubelet::device_pods>()> pods_of_;
  std::shared_ptr<const kubelet::device_pods> pods_;
  std::vector<double> last_energy_;
  std::shared_ptr<const sampler_snapshot> snap_;
  bool first_ = true;
};

class run : public metric_source {
 public:
  run(exposition& per_state, exposition& per_collection, const label_set& base,
      const run_source_config& c)
      : readings_(c.readings),
        live_(c.live),
        run_(per_state, c.devices, base, c.subcommand),
        self_(per_state, per_collection, base, c.meta, c.stale_after_s),
        footprint_(per_state, base, "joules_run", c.carbon, c.components),
        inference_(per_state, base, c.inference) {}

  bool update() override {
    auto snap = readings_->snapshot();
    const std::uint64_t version = live_->version();
    const bool tokens = inference_.update();
    const bool changed = first_ || snap != snap_ || version != version_ || tokens;
    if (first_ || version != version_) state_ = live_->read();
    snap_ = std::move(snap);
    version_ = version;
    first_ = false;
    return changed;
  }

  void fill() override {
    self_.fill(snap_.get());
    run_.fill(snap_.get(), state_);
    footprint_.fill(run_.energy_j());
    inference_.fill();
  }

  void fill_live(mono_time now, const serving_stats& stats) override {
    self_.fill_live(snap_.get(), now, stats);
  }

 private:
  const sampler* readings_;
  const run_metrics* live_;
  run_families run_;
  self_metrics self_;
  footprint_metrics footprint_;
  inference_part inference_;
  std::shared_ptr<const sampler_snapshot> snap_;
  std::uint64_t version_ = 0;
  run_state state_;
  bool first_ = true;
};

std::vector<std::string_view> exporter_label_names() {
  std::vector<std::string_view> out(kBuiltinLabelNames.begin(), kBuiltinLabelNames.end());
  for (std::string_view n : {"reason",       "domain",
                             "component",    "type",
                             "scope",        "cause",
                             "metric",       "subcommand",
                             "architecture", "driver_version",
                             "nvml_version", "version",
                             "backend",      "DCGM_FI_DRIVER_VERSION",
                             "status",       "source",
                             "region",       "year",
                             "method",       "currency",
                             "server",       "model_name",
                             "endpoint",     "gpus",
                             "state",        "window",
                             "kind",         "pod",
                             "namespace",    "container",
                             "device_id"})
    out.push_back(n);
  return out;
}

}  // namespace

const std::vector<std::string_view> kExporterLabelNames = exporter_label_names();

source_factory node_source(node_source_config config) {
  return [config = std::move(config)](exposition& per_state, exposition& per_collection,
                                      const label_set& base) {
    return std::unique_ptr<metric_source>(
        std::make_unique<node>(per_state, per_collection, base, config));
  };
}

source_factory run_source(run_source_config config) {
  return [config = std::move(config)](exposition& per_state, exposition& per_collection,
                                      const label_set& base) {
    return std::unique_ptr<metric_source>(
        std::make_unique<run>(per_state, per_collection, base, config));
  };
}

}  // namespace joules::exporter
