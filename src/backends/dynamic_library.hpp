#pragma once
// Loading a vendor library at run time (NVML, AMD SMI, ROCm SMI, the Level Zero loader): the
// file an option names, else the one an environment variable names, else the first of the usual
// names that the dynamic loader finds.  joules links none of them, so one binary runs on any mix
// of vendors, and a library that is absent turns a backend off instead of failing to start.
//
// Thread-safety: the functions are reentrant (dlerror is per thread); a loaded library is
// opened once, by its backend, on the sampler thread.

#include <dlfcn.h>

#include <string>
#include <string_view>
#include <vector>

namespace joules {

struct loaded_library {
  void* handle = nullptr;
  std::string path;  // the file actually loaded (the loader's resolved path when it knows it)
};

// Loads `option_path`, else $`env_var`, else each of `defaults` in turn (RTLD_NOW | RTLD_LOCAL,
// so that the library's symbols stay out of the process' global namespace).  Throws
// library_not_found naming every file tried and why it failed:
//   "<reason>; <hint>" as what(), "<reason>" as reason(), where reason is
//   "cannot load <description> <file> (<dlerror>)[, nor <file> (<dlerror>)]".
loaded_library load_library(const std::string& option_path, const char* env_var,
                            const std::vector<std::string>& defaults, std::string_view description,
                            std::string_view hint);

// The real path behind a dlopen handle, for `doctor` and session records.
std::string loaded_path(void* handle, const std::string& fallback);

// Resolves `name` into `slot` (null when the library lacks it) and counts the symbols found.
template <class Fn>
void resolve_symbol(void* handle, const char* name, Fn& slot, int& found) {
  // POSIX guarantees that a dlsym result converts to a function pointer.
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot != nullptr) ++found;
}

}  // namespace joules
