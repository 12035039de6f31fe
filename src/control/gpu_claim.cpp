#include "control/gpu_claim.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "util/clock.hpp"
#include "util/error.hpp"

namespace joules::control {
namespace {

// Who holds a GPU, from its journal when it has written one.
std::string holder_of(const std::string& dir, const std::string& uuid) {
  for (const auto& e : read_journals(dir).entries) {
    if (e.uuid != uuid) continue;
    return fmt::format("joules {} (pid {}, since {})", e.command, e.pid, e.started);
  }
  return "another joules";
}

}  // namespace

gpu_claim::gpu_claim(std::vector<claimed_gpu> gpus, std::string command, std::string dir)
    : gpus_(std::move(gpus)),
      command_(std::move(command)),
      dir_(dir.empty() ? state_dir() : std::move(dir)),
      journalled_(gpus_.size(), false) {
  for (const auto& g : gpus_) {
    auto lock = gpu_lock::try_take(dir_, g.uuid);
    if (!lock) {
      throw fatal_error(fmt::format(
          "GPU {} ({}) is in the hands of {}, which changes its power limit; one joules tune or "
          "sweep per GPU at a time (lock in {})",
          g.index, g.uuid, holder_of(dir_, g.uuid), dir_));
    }
    locks_.push_back(std::move(*lock));
  }
}

void gpu_claim::write_journal() {
  const std::string started = iso8601_utc(std::chrono::system_clock::now());
  const std::string boot = boot_id();
  for (std::size_t k = 0; k < gpus_.size(); ++k) {
    const claimed_gpu& g = gpus_[k];
    journal_entry e;
    e.uuid = g.uuid;
    e.index = g.index;
    e.name = g.name;
    e.original_mw = g.original_mw;
    e.pid = static_cast<long>(getpid());
    e.command = command_;
    e.started = started;
    e.boot_id = boot;
    e.backend = g.backend;
    e.library = g.library;
    control::write_journal(dir_, e);
    journalled_[k] = true;
  }
  written_ = true;
}

bool gpu_claim::restored(std::size_t k) {
  if (!journalled_[k]) return true;
  if (!remove_journal(dir_, gpus_[k].uuid)) return false;
  journalled_[k] = false;
  return true;
}

std::vector<std::size_t> gpu_claim::outstanding() const {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < gpus_.size(); ++k) {
    if (journalled_[k]) out.push_back(k);
  }
  return out;
}

}  // namespace joules::control
