#pragma once
// Loads Habana's management library (libhlml.so) with dlopen, resolves every entry point of
// hlml_symbols.def and initialises it (docs/hlml-notes.md §1).  A missing optional symbol is a
// null pointer: the reading it serves is off.
//
// Thread-safety: the entry points are set once in open() and only read afterwards; by design
// only the sampler thread calls the library during a run.

#include <memory>
#include <string>

#include "backends/hlml/hlml_abi.hpp"

namespace joules::hlml {

struct entry_points {
#define JOULES_HLML_FN(since, ret, name, params) ret(*name) params = nullptr;
#include "backends/hlml/hlml_symbols.def"
#undef JOULES_HLML_FN
};

class library {
 public:
  static constexpr const char* kDefaultName = "libhlml.so";
  // Where Habana's driver packages install it when the loader's search path lacks it.
  static constexpr const char* kHabanaPath = "/usr/lib/habanalabs/libhlml.so";

  // Loads `path`, else JOULES_HLML_LIBRARY, else the usual names, and calls hlml_init.  Throws
  // library_not_found when there is no library, fatal_error when it cannot be initialised.
  static std::unique_ptr<library> open(const std::string& path);

  library(const library&) = delete;
  library& operator=(const library&) = delete;
  ~library();

  const entry_points& fn() const { return fn_; }
  // "HLML_ERROR_AIP_IS_LOST (HLML error 15)", or "HLML error N".
  static std::string error_string(hlml_return_t code);
  const std::string& path() const { return path_; }
  int symbol_count() const { return symbols_; }
  static int known_symbol_count();

 private:
  library() = default;

  entry_points fn_;
  std::string path_;
  int symbols_ = 0;
  bool initialised_ = false;
};

}  // namespace joules::hlml
