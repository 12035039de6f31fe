#pragma once
// What becomes of the labels a user gives (`--label team=infra`) on their way to Prometheus:
// names are sanitised into valid label names, and a user label can never override a label
// joules sets itself (run_id, hostname, gpu, ...), nor one Prometheus attaches on scrape.
// A clash is renamed, never dropped, and every rename is reported so the caller can warn once.
// Pure; no state.

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace joules::exporter {

// Label names a user label may not take.  joules' own (MIG's included); dcgm-exporter's (for
// --dcgm-compat); `job` and `instance`, which Prometheus attaches to every scraped series and would
// otherwise rename to `exported_job`/`exported_instance`; `le` and `quantile`, which histograms and
// summaries reserve.
inline constexpr std::array<std::string_view, 21> kBuiltinLabelNames = {"run_id",
                                                                        "hostname",
                                                                        "gpu",
                                                                        "uuid",
                                                                        "model",
                                                                        "vendor",
                                                                        "device",
                                                                        "UUID",
                                                                        "Hostname",
                                                                        "modelName",
                                                                        "pci_bus_id",
                                                                        "job",
                                                                        "instance",
                                                                        "le",
                                                                        "quantile",
                                                                        "gpu_instance",
                                                                        "compute_instance",
                                                                        "mig_profile",
                                                                        "mig_uuid",
                                                                        "GPU_I_ID",
                                                                        "GPU_I_PROFILE"};

// The prefix a user label that clashes with a built-in gets: `gpu` becomes `label_gpu`.
inline constexpr std::string_view kUserLabelPrefix = "label_";

struct user_labels {
  // Valid, distinct label names that are not built-ins, in the order given, values untouched.
  std::vector<std::pair<std::string, std::string>> labels;
  // One line per renamed label, e.g. "label 'gpu' is exposed as 'label_gpu': joules sets 'gpu'".
  std::vector<std::string> renamed;
};

// Applies the policy to `user`, in order.  A name is first sanitised (sanitize_label_name());
// one that is then a built-in gets kUserLabelPrefix; one that is then still taken (by a
// built-in or by an earlier user label) gets `_2`, `_3`, ... until it is free.
user_labels apply_label_policy(std::span<const std::pair<std::string, std::string>> user,
                               std::span<const std::string_view> builtin = kBuiltinLabelNames);

}  // namespace joules::exporter
