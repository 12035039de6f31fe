#include "export/metric_source.hpp"

#include "export/gpu_metrics.hpp"
#include "export/label_policy.hpp"
#include "export/run_families.hpp"

namespace joules::exporter {
namespace {

class node : public metric_source {
 public:
  node(exposition& e, const label_set& base, const node_source_config& c)
      : readings_(c.readings),
        gpus_(e, c.devices, base, c.meta, c.dcgm_compat),
        self_(e, base, c.meta, c.stale_after_s) {}

  void fill(mono_time now, const serving_stats& stats) override {
    const auto snap = readings_->snapshot();
    self_.fill(snap.get(), now, stats);
    if (snap) gpus_.fill(*snap);
  }

 private:
  const sampler* readings_;
  gpu_metrics gpus_;
  self_metrics self_;
};

class run : public metric_source {
 public:
  run(exposition& e, const label_set& base, const run_source_config& c)
      : readings_(c.readings),
        live_(c.live),
        run_(e, c.devices, base, c.subcommand),
        self_(e, base, c.meta, c.stale_after_s) {}

  void fill(mono_time now, const serving_stats& stats) override {
    const auto snap = readings_->snapshot();
    const run_state state = live_->read();
    self_.fill(snap.get(), now, stats);
    run_.fill(snap.get(), state);
  }

 private:
  const sampler* readings_;
  const run_metrics* live_;
  run_families run_;
  self_metrics self_;
};

std::vector<std::string_view> exporter_label_names() {
  std::vector<std::string_view> out(kBuiltinLabelNames.begin(), kBuiltinLabelNames.end());
  for (std::string_view n : {"reason", "domain", "component", "type", "scope", "cause", "metric",
                             "subcommand", "architecture", "driver_version", "nvml_version",
                             "version", "backend", "DCGM_FI_DRIVER_VERSION"})
    out.push_back(n);
  return out;
}

}  // namespace

const std::vector<std::string_view> kExporterLabelNames = exporter_label_names();

source_factory node_source(node_source_config config) {
  return [config = std::move(config)](exposition& e, const label_set& base) {
    return std::unique_ptr<metric_source>(std::make_unique<node>(e, base, config));
  };
}

source_factory run_source(run_source_config config) {
  return [config = std::move(config)](exposition& e, const label_set& base) {
    return std::unique_ptr<metric_source>(std::make_unique<run>(e, base, config));
  };
}

}  // namespace joules::exporter
