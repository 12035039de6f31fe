#pragma once
// Loads libnvidia-ml.so.1 with dlopen and resolves every entry point of nvml_symbols.def.
// A missing optional symbol is a null pointer (the capability it serves is turned off); only
// init, shutdown, count and handle-by-index are required, each with its _v2 preferred.
//
// Thread-safety: the entry points are set once in open() and only read afterwards.  NVML itself is
// thread-safe (docs/nvml-notes.md §5.1), but by design only the sampler thread calls it during a
// run.

#include <memory>
#include <string>

#include "backends/nvml/nvml_abi.hpp"

namespace joules::nvml {

struct entry_points {
#define JOULES_NVML_FN(level, ret, name, params) ret(*name) params = nullptr;
#include "backends/nvml/nvml_symbols.def"
#undef JOULES_NVML_FN
};

class library {
 public:
  // Where to look when neither an argument nor JOULES_NVML_LIBRARY names a file: the name every
  // NVML client uses (pynvml, go-nvml, PyTorch), found through the dynamic loader's search path.
  static constexpr const char* kDefaultName = "libnvidia-ml.so.1";

  // Loads `path`, or JOULES_NVML_LIBRARY, or kDefaultName, and calls nvmlInit.  Throws
  // fatal_error with the loader's or NVML's message when that fails.
  static std::unique_ptr<library> open(const std::string& path = {});

  library(const library&) = delete;
  library& operator=(const library&) = delete;
  ~library();

  const entry_points& fn() const { return fn_; }

  // The resolved entry points for the four required calls (_v2 when the driver has it).
  nvmlReturn_t device_count(unsigned int* count) const { return count_(count); }
  nvmlReturn_t device_handle(unsigned int index, nvmlDevice_t* device) const {
    return handle_by_index_(index, device);
  }

  // "NVML_ERROR_GPU_IS_LOST"-style text from nvmlErrorString, or the number when unavailable.
  std::string error_string(nvmlReturn_t code) const;

  const std::string& path() const { return path_; }   // the file actually loaded
  std::string driver_version() const;                 // "" when unknown
  std::string nvml_version() const;                   // "" when unknown
  int symbol_count() const { return symbol_count_; }  // entry points found, of kKnownSymbols
  static int known_symbol_count();

 private:
  library() = default;

  entry_points fn_;
  nvmlReturn_t (*count_)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle_by_index_)(unsigned int, nvmlDevice_t*) = nullptr;
  std::string path_;
  void* handle_ = nullptr;
  int symbol_count_ = 0;
  bool initialised_ = false;
};

}  // namespace joules::nvml
