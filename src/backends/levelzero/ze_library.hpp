#pragma once
// Loads the Level Zero loader (libze_loader.so.1) with dlopen, resolves every entry point of
// ze_symbols.def and initialises Sysman: zesInit where the loader has it (spec 1.5 and later),
// else the older way, zeInit in a process started with ZES_ENABLE_SYSMAN=1
// (docs/level-zero-notes.md §3).  joules never sets that variable itself: setenv is not safe
// while other threads may read the environment.
//
// Thread-safety: the entry points are set once in open() and only read afterwards; by design
// only the sampler thread calls the library during a run.

#include <memory>
#include <string>
#include <vector>

#include "backends/levelzero/ze_abi.hpp"

namespace joules::ze {

struct entry_points {
#define JOULES_ZE_FN(since, ret, name, params) ret(*name) params = nullptr;
#include "backends/levelzero/ze_symbols.def"
#undef JOULES_ZE_FN
};

class library {
 public:
  static constexpr const char* kDefaultName = "libze_loader.so.1";

  // Loads `path`, else JOULES_LEVEL_ZERO_LIBRARY, else kDefaultName, and initialises Sysman.
  // Throws library_not_found when there is no loader, fatal_error when Sysman cannot start.
  static std::unique_ptr<library> open(const std::string& path);

  library(const library&) = delete;
  library& operator=(const library&) = delete;
  ~library() = default;  // Level Zero has no shut-down call; the loader stays mapped

  const entry_points& fn() const { return fn_; }
  // Every Sysman device handle of every driver, in the drivers' order.
  const std::vector<zes_device_handle_t>& devices() const { return devices_; }
  // "zesInit", or "zeInit with ZES_ENABLE_SYSMAN=1".
  const std::string& init_path() const { return init_path_; }
  // Whether the devices are zesDeviceGet's: every device, whatever ZE_AFFINITY_MASK,
  // ZE_ENABLE_PCI_ID_DEVICE_ORDER and ZE_FLAT_DEVICE_HIERARCHY say (zeDeviceGet's are not).
  bool sysman_uniform() const { return init_path_ == "zesInit"; }

  std::string error_string(ze_result_t code) const;
  const std::string& path() const { return path_; }
  int symbol_count() const { return symbols_; }
  static int known_symbol_count();

 private:
  library() = default;
  void init();

  entry_points fn_;
  std::vector<zes_device_handle_t> devices_;
  std::string init_path_;
  std::string path_;
  int symbols_ = 0;
};

}  // namespace joules::ze
