#include "backends/dynamic_library.hpp"

#include <fmt/format.h>
#include <link.h>

#include <cstdlib>

#include "backends/backend.hpp"

namespace joules {

std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

loaded_library load_library(const std::string& option_path, const char* env_var,
                            const std::vector<std::string>& defaults, std::string_view description,
                            std::string_view hint) {
  std::vector<std::string> files;
  const char* env = env_var != nullptr ? std::getenv(env_var) : nullptr;
  if (!option_path.empty()) {
    files.push_back(option_path);
  } else if (env != nullptr && env[0] != '\0') {
    files.emplace_back(env);
  } else {
    files = defaults;
  }
  std::string tried;
  for (const auto& file : files) {
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return loaded_library{handle, loaded_path(handle, file)};
    const char* why = dlerror();
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : ", nor ", file,
                         why != nullptr ? why : "unknown reason");
  }
  const std::string reason = fmt::format("cannot load {} {}", description, tried);
  throw library_not_found(fmt::format("{}; {}", reason, hint), reason);
}

}  // namespace joules
