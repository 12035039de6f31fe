#pragma once
// Loads AMD SMI (libamd_smi.so) with dlopen and resolves every entry point of
// amdsmi_symbols.def, or, where AMD SMI is not installed, ROCm SMI (librocm_smi64.so,
// rocm_smi_symbols.def), its predecessor on older ROCm stacks (docs/amd-notes.md §1).  A missing
// optional symbol is a null pointer: the reading it serves is off.
//
// Thread-safety: the entry points are set once in open() and only read afterwards; by design
// only the sampler thread calls the library during a run.

#include <memory>
#include <string>

#include "backends/amdsmi/amd_abi.hpp"
#include "backends/amdsmi/amd_decode.hpp"

namespace joules::amd {

struct amdsmi_entry_points {
#define JOULES_AMDSMI_FN(since, ret, name, params) ret(*name) params = nullptr;
#include "backends/amdsmi/amdsmi_symbols.def"
#undef JOULES_AMDSMI_FN
};

struct rsmi_entry_points {
#define JOULES_RSMI_FN(since, ret, name, params) ret(*name) params = nullptr;
#include "backends/amdsmi/rocm_smi_symbols.def"
#undef JOULES_RSMI_FN
};

class library {
 public:
  // Where to look when neither the argument nor the environment names a file: the loader's
  // search path, then ROCm's default prefix, which ROCm does not always add to it.
  static constexpr const char* kAmdsmiName = "libamd_smi.so";
  static constexpr const char* kAmdsmiRocmPath = "/opt/rocm/lib/libamd_smi.so";
  static constexpr const char* kRocmSmiName = "librocm_smi64.so";
  static constexpr const char* kRocmSmiRocmPath = "/opt/rocm/lib/librocm_smi64.so";

  // Loads `amdsmi_path`, else JOULES_AMDSMI_LIBRARY, else the usual AMD SMI names; when none
  // loads, ROCm SMI from JOULES_ROCM_SMI_LIBRARY or its usual names.  A `rocm_smi_path` loads
  // that ROCm SMI and nothing else (a restore through the library that set a limit).
  // Initialises the one found for AMD GPUs.  Throws library_not_found when neither is there,
  // fatal_error when initialisation fails.
  static std::unique_ptr<library> open(const std::string& amdsmi_path,
                                       const std::string& rocm_smi_path = {});

  library(const library&) = delete;
  library& operator=(const library&) = delete;
  ~library();

  bool is_amdsmi() const { return amdsmi_; }
  const amdsmi_entry_points& smi() const { return smi_; }
  const rsmi_entry_points& rsmi() const { return rsmi_; }

  // "AMDSMI_STATUS_NOT_SUPPORTED (AMD SMI error 2)"-style text, or the number.
  std::string error_string(std::uint32_t code) const;

  const std::string& path() const { return path_; }
  const std::string& version() const { return version_; }  // "24.7.0", "6.2.0"; "" unknown
  lib_version amdsmi_version() const { return smi_version_; }
  int symbol_count() const { return symbols_; }
  int known_symbol_count() const;

 private:
  library() = default;
  void init_amdsmi();
  void init_rsmi();

  bool amdsmi_ = false;
  amdsmi_entry_points smi_;
  rsmi_entry_points rsmi_;
  std::string path_;
  std::string version_;
  lib_version smi_version_;
  int symbols_ = 0;
  bool initialised_ = false;
};

}  // namespace joules::amd
