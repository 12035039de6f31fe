#pragma once
// What an exporter exports, apart from how it is sent: families registered once on two
// expositions, refilled from state other threads publish (the sampler's snapshots, a run's
// run_metrics).  The Prometheus endpoint and the OTLP exporter each build their own source on
// their own expositions, on their own thread; only the base labels differ (Prometheus puts
// hostname, run_id and the user's labels on every series; OTLP puts them on the resource).
//
//   node source (joules serve):   gpu_metrics + self_metrics (CPU/DRAM from RAPL included)
//   run source (run|wrap):        run_families + self_metrics
//   both, with --tokens-from:     + inference_metrics (the token sources' board)
//
// Most families change only when the state does (a new snapshot, a window, a step): the
// Prometheus endpoint renders them once per state and shares the text between scrapes.  A few
// change at every collection (joules_up, the scrape count, the age of the readings): they are on
// the second exposition, rendered per scrape.  OTLP passes the same exposition twice.
//
// Thread-safety: a factory may be called from any thread; a source is used by one thread.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "carbon/carbon.hpp"
#include "export/metrics/exposition.hpp"
#include "export/metrics/footprint_metrics.hpp"
#include "export/metrics/run_metrics.hpp"
#include "export/metrics/self_metrics.hpp"
#include "kubelet/pod_resources.hpp"
#include "sampler/sampler.hpp"
#include "tokens/board.hpp"

namespace joules::exporter {

class metric_source {
 public:
  virtual ~metric_source() = default;
  // Takes the latest published state; true when it differs from the one taken before (or on the
  // first call): fill() would write something new.
  virtual bool update() = 0;
  // Refills the per-state families (their exposition has been cleared) from the state taken.
  virtual void fill() = 0;
  // Refills the per-collection families (their exposition has been cleared), at `now`.
  virtual void fill_live(mono_time now, const serving_stats& stats) = 0;
};

// Registers a source's families on `per_state` and `per_collection` (which may be the same
// exposition), with `base` on every series.
using source_factory = std::function<std::unique_ptr<metric_source>(
    exposition& per_state, exposition& per_collection, const label_set& base)>;

// `joules serve`: every sampled GPU, CPU package and DRAM.  The sampler must outlive the sources.
struct node_source_config {
  const sampler* readings = nullptr;
  std::vector<device_info> devices;  // the sampled ones, in snapshot order
  backend_meta meta;
  bool dcgm_compat = false;
  double stale_after_s = 5.0;
  carbon::factors carbon;                    // --pue, --region, ... (resolved)
  const tokens::board* inference = nullptr;  // --tokens-from; must outlive the sources
  std::vector<component_state> components;   // component_states()
  // --kubernetes: the containers holding each device now (kubelet/pod_watcher.hpp); empty: none.
  std::function<std::shared_ptr<const kubelet::device_pods>()> pods;
};
source_factory node_source(node_source_config config);

// `joules run|wrap`: the run's GPUs and its live state.  Both must outlive the sources.
struct run_source_config {
  const sampler* readings = nullptr;
  const run_metrics* live = nullptr;
  std::vector<device_info> devices;
  backend_meta meta;
  std::string subcommand;
  double stale_after_s = 5.0;
  carbon::factors carbon;
  const tokens::board* inference = nullptr;
  std::vector<component_state> components;
};
source_factory run_source(run_source_config config);

// Label names joules sets on some series, which a user label may therefore not take (on top of
// label_policy.hpp's kBuiltinLabelNames): apply_label_policy(user, kExporterLabelNames).
extern const std::vector<std::string_view> kExporterLabelNames;

}  // namespace joules::exporter
