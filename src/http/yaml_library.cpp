#include "http/yaml_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <memory>

namespace joules::exporter {
namespace {

struct yaml_load_result {
  std::unique_ptr<yaml_library> lib;
  std::string why;
};

template <class Fn>
void resolve_yaml_symbol(void* handle, const char* name, Fn& slot, std::string& missing) {
  // POSIX guarantees that a dlsym result converts to a function pointer.
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot == nullptr) missing += missing.empty() ? name : fmt::format(", {}", name);
}

yaml_load_result open_yaml() {
  yaml_load_result out;
  // RTLD_LOCAL keeps libyaml's symbols out of the global namespace of the process.
  void* handle = dlopen("libyaml-0.so.2", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    out.why = fmt::format(
        "cannot load libyaml ({}); install libyaml-0-2 (Debian, Ubuntu) or "
        "libyaml (Fedora, RHEL)",
        err != nullptr ? err : "libyaml-0.so.2");
    return out;
  }
  auto lib = std::make_unique<yaml_library>();
  std::string missing;
  resolve_yaml_symbol(handle, "yaml_parser_initialize", lib->parser_initialize, missing);
  resolve_yaml_symbol(handle, "yaml_parser_set_input_string", lib->parser_set_input_string,
                      missing);
  resolve_yaml_symbol(handle, "yaml_parser_parse", lib->parser_parse, missing);
  resolve_yaml_symbol(handle, "yaml_parser_delete", lib->parser_delete, missing);
  resolve_yaml_symbol(handle, "yaml_event_delete", lib->event_delete, missing);
  if (!missing.empty()) {
    out.why = fmt::format("libyaml-0.so.2 lacks {}", missing);
    dlclose(handle);
    return out;
  }
  out.lib = std::move(lib);  // never closed: libyaml stays until exit
  return out;
}

}  // namespace

const yaml_library* load_yaml(std::string* why) {
  static const yaml_load_result loaded = open_yaml();
  if (loaded.lib == nullptr && why != nullptr) *why = loaded.why;
  return loaded.lib.get();
}

}  // namespace joules::exporter
