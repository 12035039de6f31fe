#include "http/curl_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <memory>

namespace joules::exporter {
namespace {

template <class Fn>
bool resolve(void* handle, const char* name, Fn& slot, std::string& missing) {
  // POSIX guarantees that a dlsym result converts to a function pointer.
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot == nullptr) missing += missing.empty() ? name : fmt::format(", {}", name);
  return slot != nullptr;
}

struct load_result {
  std::unique_ptr<curl_library> lib;
  std::string why;
};

load_result open_curl() {
  load_result out;
  // libcurl.so.4 whatever its TLS library (OpenSSL on most systems); Debian's GnuTLS build
  // has another name for the same interface.
  constexpr std::array<const char*, 2> kNames = {"libcurl.so.4", "libcurl-gnutls.so.4"};
  std::string tried;
  for (const char* name : kNames) {
    // RTLD_LOCAL keeps libcurl's symbols out of the global namespace of the process.
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      tried += fmt::format("{}{}", tried.empty() ? "" : "; ", err != nullptr ? err : name);
      continue;
    }
    auto lib = std::make_unique<curl_library>();
    std::string missing;
    resolve(handle, "curl_global_init", lib->global_init, missing);
    resolve(handle, "curl_easy_init", lib->easy_init, missing);
    resolve(handle, "curl_easy_setopt", lib->easy_setopt, missing);
    resolve(handle, "curl_easy_getinfo", lib->easy_getinfo, missing);
    resolve(handle, "curl_easy_strerror", lib->easy_strerror, missing);
    resolve(handle, "curl_easy_cleanup", lib->easy_cleanup, missing);
    resolve(handle, "curl_multi_init", lib->multi_init, missing);
    resolve(handle, "curl_multi_add_handle", lib->multi_add_handle, missing);
    resolve(handle, "curl_multi_remove_handle", lib->multi_remove_handle, missing);
    resolve(handle, "curl_multi_perform", lib->multi_perform, missing);
    resolve(handle, "curl_multi_poll", lib->multi_poll, missing);
    resolve(handle, "curl_multi_wakeup", lib->multi_wakeup, missing);
    resolve(handle, "curl_multi_info_read", lib->multi_info_read, missing);
    resolve(handle, "curl_multi_strerror", lib->multi_strerror, missing);
    resolve(handle, "curl_multi_cleanup", lib->multi_cleanup, missing);
    resolve(handle, "curl_slist_append", lib->slist_append, missing);
    resolve(handle, "curl_slist_free_all", lib->slist_free_all, missing);
    resolve(handle, "curl_getdate", lib->getdate, missing);
    if (!missing.empty()) {
      tried += fmt::format("{}{} lacks {} (libcurl 7.68 or newer is needed)",
                           tried.empty() ? "" : "; ", name, missing);
      dlclose(handle);
      continue;
    }
    lib->path = name;
    out.lib = std::move(lib);  // never closed: libcurl stays until exit
    return out;
  }
  out.why = fmt::format(
      "cannot load libcurl ({}); install libcurl4 (Debian, Ubuntu) or "
      "libcurl (Fedora, RHEL)",
      tried);
  return out;
}

}  // namespace

const curl_library* load_curl(std::string* why) {
  // A function-local static: opened at the first call (thread-safe), once per process.
  static const load_result loaded = open_curl();
  if (loaded.lib == nullptr && why != nullptr) *why = loaded.why;
  return loaded.lib.get();
}

}  // namespace joules::exporter
