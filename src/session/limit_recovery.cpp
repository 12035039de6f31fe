#include "session/limit_recovery.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "backends/composite/open_backend.hpp"
#include "control/limit_plan.hpp"
#include "control/permission.hpp"
#include "control/restore.hpp"
#include "sampler/sampler.hpp"
#include "term/messages.hpp"
#include "util/error.hpp"

namespace joules::session {
namespace {

std::string who(const control::journal_entry& e) {
  return fmt::format("a joules {} (pid {}, started {})", e.command.empty() ? "tune" : e.command,
                     e.pid, e.started);
}

std::string gpu_of(const control::journal_entry& e) {
  return fmt::format("GPU {} ({})", e.index, e.uuid);
}

struct stale {
  control::journal_entry entry;
  control::gpu_lock lock;
};

// The vendor library of a journal's backend, as people know it.
const char* journal_library_name(const std::string& backend) {
  if (backend == "amdsmi") return "AMD SMI";
  if (backend == "rocm_smi") return "ROCm SMI";
  if (backend == "levelzero") return "Level Zero";
  return "NVML";
}

// The options that open the backend, and library, that set a journal's limit.
backend_options journal_restore_options(const std::string& backend, const std::string& library) {
  backend_options o;
  if (backend == "amdsmi" || backend == "rocm_smi") {
    o.name = "amdsmi";
    (backend == "amdsmi" ? o.amdsmi_library : o.rocm_smi_library) = library;
    if (backend == "rocm_smi" && library.empty()) o.rocm_smi_library = "librocm_smi64.so";
  } else if (backend == "levelzero") {
    o.name = "levelzero";
    o.level_zero_library = library;
  } else {
    o.name = "nvml";
    o.nvml_library = library;
  }
  return o;
}

// Restores the stale journals of one directory; counts what could not be restored.
void restore_dir(const std::string& dir, bool on_request, int& failures) {
  const control::journal_scan scan = control::read_journals(dir);
  for (const auto& path : scan.unreadable) {
    term::print_warning(fmt::format(
        "{} is not a power-limit journal this joules can read; remove it once no GPU's limit is "
        "left changed",
        path));
  }
  std::map<std::pair<std::string, std::string>, std::vector<stale>> by_library;
  for (const auto& e : scan.entries) {
    std::optional<control::gpu_lock> lock;
    try {
      lock = control::gpu_lock::try_take(dir, e.uuid);
    } catch (const fatal_error& err) {
      ++failures;
      term::print_warning(fmt::format(
          "{}'s power limit was left changed by {}; it cannot be set back to {} from here ({}): "
          "run joules tune --restore as root",
          gpu_of(e), who(e), control::watts_text(e.original_mw), err.what()));
      continue;
    }
    if (!lock) {
      if (on_request) {
        term::print_note(
            fmt::format("{} is in the hands of {}, which sets its limit back when it "
                        "ends",
                        gpu_of(e), who(e)));
      }
      continue;
    }
    by_library[{e.backend, e.library}].push_back({e, std::move(*lock)});
  }
  for (auto& [source, batch] : by_library) {
    std::vector<control::journal_entry> entries;
    for (const auto& s : batch)
      entries.push_back(s.entry);
    std::vector<control::restore_outcome> outcomes;
    try {
      const backend_options options = journal_restore_options(source.first, source.second);
      // Only the sampler's thread calls the driver, here as everywhere.
      sampler readings([&] { return std::move(open_gpu_backends(options).front()); },
                       sampler_options{});
      outcomes =
          readings.on_thread([&](backend& b) { return control::restore_limits(b, entries); });
    } catch (const std::exception& err) {
      for (const auto& e : entries) {
        ++failures;
        term::print_warning(fmt::format(
            "{}'s power limit was left changed by {}, and {} cannot be opened to set it back "
            "to {}: {}; joules tune --restore tries again",
            gpu_of(e), who(e), journal_library_name(source.first),
            control::watts_text(e.original_mw), err.what()));
      }
      continue;
    }
    const std::string boot = control::boot_id();
    for (const auto& o : outcomes) {
      const auto& e = o.entry;
      if (!o.result.ok()) {
        ++failures;
        const std::string hint = o.result.status == control_status::no_permission
                                     ? "; setting it needs root or CAP_SYS_ADMIN"
                                     : "";
        term::print_warning(fmt::format(
            "{}'s power limit was left changed by {} and could not be set back to {}: {}{}; "
            "joules tune --restore tries again",
            gpu_of(e), who(e), control::watts_text(e.original_mw), o.result.detail, hint));
        continue;
      }
      if (!control::remove_journal(dir, e.uuid)) ++failures;
      const std::string was =
          o.before_mw ? fmt::format(" (it was {})", control::watts_text(*o.before_mw)) : "";
      const std::string restarted = !e.boot_id.empty() && !boot.empty() && e.boot_id != boot
                                        ? "; the machine has restarted since"
                                        : "";
      term::print_note(
          fmt::format("{}'s power limit set back to {}{}: {} ended without setting "
                      "it back{}",
                      gpu_of(e), control::watts_text(e.original_mw), was, who(e), restarted));
    }
  }
}

}  // namespace

void restore_left_limits() {
  int failures = 0;
  try {
    for (const auto& dir : control::journal_dirs())
      restore_dir(dir, /*on_request=*/false, failures);
  } catch (const std::exception& e) {
    term::print_warning(fmt::format("power-limit journals could not be read: {}", e.what()));
  }
}

int restore_limits_on_request() {
  int failures = 0;
  for (const auto& dir : control::journal_dirs())
    restore_dir(dir, /*on_request=*/true, failures);
  if (failures == 0) {
    term::print_note("no power limit is left changed by joules");
  }
  return failures == 0 ? 0 : 1;
}

std::vector<left_limit> left_limits() {
  std::vector<left_limit> out;
  try {
    for (const auto& dir : control::journal_dirs()) {
      for (auto& e : control::read_journals(dir, /*tidy=*/false).entries) {
        const bool running = control::lock_held(dir, e.uuid);
        out.push_back({std::move(e), running});
      }
    }
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): doctor reports what it read
  }
  return out;
}

}  // namespace joules::session
