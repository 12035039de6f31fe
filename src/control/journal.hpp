#pragma once
// The power-limit journal: the limit each GPU had before joules changed it, written before the
// change, so that a limit is restored on every exit path — including after a SIGKILL or a power
// loss, when the next joules to start restores it (docs/tuning.md, "The restore guarantee").
// One pair of files per GPU in the state directory:
//
//   <uuid>.journal  the GPU's limit before joules changed it: written whole (a temporary file,
//                   fsync, rename, fsync of the directory), so that it is there in full or not at
//                   all; removed once the limit is back.
//   <uuid>.lock     locked (flock) by the joules that changes the GPU's limit, for as long as it
//                   runs.  A second joules is refused the GPU; a journal whose lock nobody holds
//                   was left by a joules that ended without restoring.  Never removed (removing a
//                   lock file races with whoever opens it next).
//
// The directory: JOULES_STATE_DIR, else /var/lib/joules for root, else $XDG_STATE_HOME/joules
// ($HOME/.local/state/joules).  No hardware here: src/control/restore.hpp sets limits.
//
// Not thread-safe: the main thread's.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace joules::control {

struct journal_entry {
  std::string uuid;
  unsigned index = 0;  // the GPU's index when the entry was written, for messages
  std::string name;
  std::uint32_t original_mw = 0;  // the limit to restore, milliwatts
  long pid = 0;                   // the joules that wrote it
  std::string command;            // "tune", "sweep"
  std::string started;            // ISO-8601 UTC
  std::string boot_id;            // the kernel's boot id then: a restart since is said so
  // The backend that set the limit ("nvml", "amdsmi", "rocm_smi", "levelzero"; "nvml" in a
  // journal without one) and the vendor library it loaded: a restore opens the same.
  std::string backend = "nvml";
  std::string library;
  std::string path;  // where it was read from (read_journals)
};

// Where journals are written (the directory may not exist yet).
std::string state_dir();
// Where to look for journals left behind: state_dir(), and /var/lib/joules for a user who is not
// root (a root tune's journal, reported with the fix) unless JOULES_STATE_DIR is set.
std::vector<std::string> journal_dirs();
// The kernel's boot id (/proc/sys/kernel/random/boot_id); "" when unreadable.
std::string boot_id();

// A GPU's lock, held by this process until destroyed (then released, never removed).  The
// descriptor is close-on-exec: the measured command never holds it, so a joules killed while
// its command runs on leaves the lock free.
class gpu_lock {
 public:
  // Takes the lock of GPU `uuid` in `dir` without waiting, creating `dir` as needed; nullopt
  // when another process holds it.  Throws fatal_error when `dir` cannot be written.
  static std::optional<gpu_lock> try_take(const std::string& dir, const std::string& uuid);

  gpu_lock(gpu_lock&& other) noexcept;
  gpu_lock& operator=(gpu_lock&& other) noexcept;
  gpu_lock(const gpu_lock&) = delete;
  gpu_lock& operator=(const gpu_lock&) = delete;
  ~gpu_lock();

 private:
  explicit gpu_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Whether a process holds GPU `uuid`'s lock in `dir`, learnt without creating anything (for
// doctor); false when there is no lock file.
bool lock_held(const std::string& dir, const std::string& uuid);

// Writes `e` as dir/<uuid>.journal, whole and durably, replacing one there.  Throws fatal_error.
void write_journal(const std::string& dir, const journal_entry& e);
// Removes dir/<uuid>.journal durably (a missing one is fine).  False when it cannot be removed.
bool remove_journal(const std::string& dir, const std::string& uuid);

struct journal_scan {
  std::vector<journal_entry> entries;
  std::vector<std::string> unreadable;  // *.journal files that are not joules journals
};
// Every journal in `dir` (none when `dir` does not exist).  With `tidy`, temporary files left by
// a write that was cut short (the journal was never in place, so no limit followed it) are
// removed when the directory is writable; doctor reads without tidying.
journal_scan read_journals(const std::string& dir, bool tidy = true);

// Parses a journal's text; nullopt when it is not a whole one.  For tests and read_journals.
std::optional<journal_entry> parse_journal(const std::string& text);
std::string format_journal(const journal_entry& e);

}  // namespace joules::control
