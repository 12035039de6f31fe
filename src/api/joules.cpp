// libjoules: include/joules/joules.h over the API session (session/api_monitor.hpp).
//
// Every function catches everything: no exception crosses the C boundary.  A failure becomes a
// joules_status and a per-thread detail (joules_last_error).  A monitor remembers the process
// that opened it; in a forked child every call on it answers JOULES_E_FORKED without touching
// its locks or its (absent) reading thread.  Nothing here prints, handles signals or starts a
// thread before joules_monitor_open.

// The library exports the functions of joules.h and nothing else: everything is built with
// hidden visibility, and joules.h is declared visible here (the version script libjoules.map
// names the same set).
#pragma GCC visibility push(default)
#include "joules/joules.h"
#pragma GCC visibility pop

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/step_sender.hpp"
#include "session/api_monitor.hpp"
#include "text/utf8.hpp"
#include "util/error.hpp"

struct joules_monitor {
  pid_t pid = 0;  // the process that opened it
  std::unique_ptr<joules::session::api_monitor> impl;
  std::vector<joules_device_info> infos;
};

namespace {

using joules::session::api_errc;
using joules::session::api_error;

thread_local std::string t_last_error;

// The sizes of the structs as the first header had them: a caller built against it passes
// these (struct_size), and gets exactly those fields.
constexpr std::size_t kResultV1Size = offsetof(joules_result, device_count) + sizeof(std::size_t);
constexpr std::size_t kOptionsV1Size = sizeof(joules_options);
constexpr std::size_t kDeviceInfoV1Size = sizeof(joules_device_info);
constexpr std::size_t kMaxNameBytes = 4096;

joules_status fail(joules_status s, std::string detail) {
  try {
    t_last_error = std::move(detail);
  } catch (...) {
    t_last_error.clear();  // no memory for the detail: the status says enough
  }
  return s;
}

joules_status status_of(api_errc c) {
  switch (c) {
    case api_errc::invalid_argument:
      return JOULES_E_INVALID_ARGUMENT;
    case api_errc::no_device:
      return JOULES_E_NO_DEVICE;
    case api_errc::backend:
      return JOULES_E_BACKEND;
    case api_errc::not_found:
      return JOULES_E_NOT_FOUND;
    case api_errc::not_ready:
      return JOULES_E_NOT_READY;
    case api_errc::state:
      return JOULES_E_STATE;
    case api_errc::internal:
      return JOULES_E_INTERNAL;
  }
  return JOULES_E_INTERNAL;
}

// Runs `fn` (returning joules_status) and turns whatever it throws into a status.
template <class F>
joules_status guarded(const char* function, F&& fn) noexcept {
  try {
    return fn();
  } catch (const api_error& e) {
    return fail(status_of(e.code()), e.what());
  } catch (const joules::usage_error& e) {
    return fail(JOULES_E_INVALID_ARGUMENT, e.what());
  } catch (const joules::no_device_error& e) {
    return fail(JOULES_E_NO_DEVICE, e.what());
  } catch (const joules::fatal_error& e) {
    return fail(JOULES_E_BACKEND, e.what());
  } catch (const std::bad_alloc&) {
    return fail(JOULES_E_NO_MEMORY, fmt::format("{}: out of memory", function));
  } catch (const std::exception& e) {
    return fail(JOULES_E_INTERNAL, fmt::format("{}: {}", function, e.what()));
  } catch (...) {
    return fail(JOULES_E_INTERNAL, fmt::format("{}: unknown failure", function));
  }
}

// The monitor, usable in this process; else the status to return.
joules_status check_monitor(const joules_monitor* m, const char* function) {
  if (m == nullptr)
    return fail(JOULES_E_INVALID_ARGUMENT, fmt::format("{}: monitor is NULL", function));
  if (m->pid != getpid()) {
    return fail(
        JOULES_E_FORKED,
        fmt::format("{}: the monitor was opened in process {}, this is process {} (a fork); "
                    "open a new monitor here",
                    function, m->pid, getpid()));
  }
  return JOULES_OK;
}

void check_name(const char* name, const char* function) {
  if (name == nullptr) {
    throw api_error(api_errc::invalid_argument, fmt::format("{}: name is NULL", function));
  }
  const std::string_view n(name, strnlen(name, kMaxNameBytes + 1));
  if (n.empty() || n.size() > kMaxNameBytes || !joules::text::is_valid_utf8(n)) {
    throw api_error(
        api_errc::invalid_argument,
        fmt::format("{}: a window name is 1 to {} bytes of UTF-8", function, kMaxNameBytes));
  }
}

joules_method method_of(joules::energy_method m) {
  switch (m) {
    case joules::energy_method::counter:
      return JOULES_METHOD_COUNTER;
    case joules::energy_method::polled:
      return JOULES_METHOD_POLLED;
    case joules::energy_method::simulated:
      return JOULES_METHOD_SIMULATED;
    case joules::energy_method::estimated:
      return JOULES_METHOD_ESTIMATED;
    case joules::energy_method::none:
      return JOULES_METHOD_NONE;
  }
  return JOULES_METHOD_NONE;
}

joules_device_kind kind_of(joules::device_kind k) {
  switch (k) {
    case joules::device_kind::gpu:
      return JOULES_DEVICE_GPU;
    case joules::device_kind::cpu:
      return JOULES_DEVICE_CPU;
    case joules::device_kind::dram:
      return JOULES_DEVICE_DRAM;
  }
  return JOULES_DEVICE_GPU;
}

void copy_text(char* out, std::size_t size, const std::string& s) {
  const std::size_t n = std::min(size - 1, s.size());
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

// Fills the caller's result and device array from a window's numbers.
void fill(const joules_monitor& m, const joules::session::api_numbers& n, joules_result* result,
          joules_device_energy* devices, std::size_t capacity) {
  joules_result r{};
  r.struct_size = result->struct_size;
  r.duration_s = n.end_s - n.begin_s;
  r.begin_monotonic_s = n.begin_s;
  r.end_monotonic_s = n.end_s;
  r.final = n.final ? 1 : 0;
  r.device_count = m.infos.size();
  bool has_cpu = false;
  bool has_dram = false;
  std::vector<joules_method> gpu_methods;
  for (std::size_t d = 0; d < n.devices.size() && d < m.infos.size(); ++d) {
    const auto& e = n.devices[d];
    const joules_device_kind kind = m.infos[d].kind;
    has_cpu = has_cpu || kind == JOULES_DEVICE_CPU;
    has_dram = has_dram || kind == JOULES_DEVICE_DRAM;
    joules_device_energy out{};
    out.energy_j = e.energy_j.value_or(0.0);
    out.error_j = e.error_j;
    out.method = e.energy_j ? method_of(e.method) : JOULES_METHOD_NONE;
    out.lost = e.lost ? 1 : 0;
    r.total_energy_j += out.energy_j;
    r.error_j += out.error_j;
    if (kind == JOULES_DEVICE_GPU) {
      r.gpu_energy_j += out.energy_j;
      if (out.method != JOULES_METHOD_NONE) gpu_methods.push_back(out.method);
    } else if (kind == JOULES_DEVICE_CPU) {
      r.cpu_energy_j += out.energy_j;
    } else {
      r.dram_energy_j += out.energy_j;
    }
    if (devices != nullptr && d < capacity) devices[d] = out;
  }
  if (!has_cpu) r.cpu_energy_j = std::numeric_limits<double>::quiet_NaN();
  if (!has_dram) r.dram_energy_j = std::numeric_limits<double>::quiet_NaN();
  // The GPUs': one method when they all share it; measured two ways, polled (as records say).
  r.method = JOULES_METHOD_NONE;
  if (!gpu_methods.empty()) {
    const bool same = std::all_of(gpu_methods.begin(), gpu_methods.end(),
                                  [&](joules_method x) { return x == gpu_methods.front(); });
    r.method = same ? gpu_methods.front() : JOULES_METHOD_POLLED;
  }
  // Exactly the fields the caller knows.
  std::memcpy(result, &r, std::min<std::size_t>(result->struct_size, sizeof(r)));
}

joules_status check_result(const joules_result* result, const char* function) {
  if (result == nullptr)
    return fail(JOULES_E_INVALID_ARGUMENT, fmt::format("{}: result is NULL", function));
  if (result->struct_size < kResultV1Size) {
    return fail(JOULES_E_INVALID_ARGUMENT,
                fmt::format("{}: result->struct_size is {}; set it to sizeof(joules_result)",
                            function, result->struct_size));
  }
  return JOULES_OK;
}

std::string text_or(const char* s, const char* fallback) {
  return s != nullptr ? std::string(s) : std::string(fallback);
}

}  // namespace

extern "C" {

const char* joules_version(void) {
  return JOULES_VERSION;
}

const char* joules_strerror(joules_status status) {
  switch (status) {
    case JOULES_OK:
      return "success";
    case JOULES_E_INVALID_ARGUMENT:
      return "invalid argument";
    case JOULES_E_NO_DEVICE:
      return "no device to measure";
    case JOULES_E_BACKEND:
      return "the driver failed";
    case JOULES_E_NOT_FOUND:
      return "no such window";
    case JOULES_E_NOT_READY:
      return "the numbers are not final yet";
    case JOULES_E_STATE:
      return "not possible in this state";
    case JOULES_E_NO_MEMORY:
      return "out of memory";
    case JOULES_E_FORKED:
      return "the monitor belongs to the parent process";
    case JOULES_E_NOT_WRAPPED:
      return "not running under joules wrap";
    case JOULES_E_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* joules_last_error(void) {
  return t_last_error.c_str();
}

void joules_options_init(joules_options* options) {
  if (options == nullptr) return;
  *options = joules_options{};
  options->struct_size = sizeof(joules_options);
  options->backend = JOULES_BACKEND_AUTO;
  options->cpu = 1;
}

joules_status joules_monitor_open(const joules_options* options, joules_monitor** monitor) {
  return guarded("joules_monitor_open", [&]() -> joules_status {
    if (monitor == nullptr)
      return fail(JOULES_E_INVALID_ARGUMENT, "joules_monitor_open: monitor is NULL");
    *monitor = nullptr;
    joules_options o;
    joules_options_init(&o);
    if (options != nullptr) {
      if (options->struct_size < offsetof(joules_options, backend) + sizeof(joules_backend)) {
        return fail(JOULES_E_INVALID_ARGUMENT,
                    fmt::format("joules_monitor_open: options->struct_size is {}; call "
                                "joules_options_init first",
                                options->struct_size));
      }
      std::memcpy(&o, options, std::min<std::size_t>(options->struct_size, kOptionsV1Size));
    }
    joules::session::api_settings s;
    // A C caller can store any int in the enum; C++ may not load one outside its enumerators.
    std::underlying_type_t<joules_backend> backend = 0;
    std::memcpy(&backend, &o.backend, sizeof backend);
    switch (backend) {
      case JOULES_BACKEND_AUTO:
        s.backend.name = "auto";
        break;
      case JOULES_BACKEND_NVML:
        s.backend.name = "nvml";
        break;
      case JOULES_BACKEND_SIM:
        s.backend.name = "sim";
        break;
      default:
        return fail(JOULES_E_INVALID_ARGUMENT,
                    fmt::format("joules_monitor_open: backend {}: expected JOULES_BACKEND_AUTO, "
                                "_NVML or _SIM",
                                backend));
    }
    if (o.gpus != nullptr) s.gpus = std::string(o.gpus);
    s.backend.components.cpu = o.cpu != 0;
    s.backend.components.dram = o.cpu != 0;
    if (o.interval_ms != 0) {
      if (o.interval_ms > 60000) {
        return fail(JOULES_E_INVALID_ARGUMENT,
                    fmt::format("joules_monitor_open: interval_ms {}: expected 1 to 60000 (0: "
                                "the default)",
                                o.interval_ms));
      }
      s.interval = std::chrono::milliseconds(o.interval_ms);
    }
    if (o.nvml_library != nullptr) s.backend.nvml_library = o.nvml_library;
    s.backend.sim.model = text_or(o.sim_model, "h100-sxm");
    s.backend.sim.gpus = o.sim_gpus != 0 ? o.sim_gpus : 8U;
    if (s.backend.sim.gpus > 1024) {
      return fail(
          JOULES_E_INVALID_ARGUMENT,
          fmt::format("joules_monitor_open: sim_gpus {}: expected 1 to 1024 (0: 8)", o.sim_gpus));
    }
    s.backend.sim.profile = text_or(o.sim_profile, "train");

    auto m = std::make_unique<joules_monitor>();
    m->pid = getpid();
    m->impl = std::make_unique<joules::session::api_monitor>(s);
    for (const auto& d : m->impl->devices()) {
      joules_device_info info{};
      info.struct_size = sizeof(joules_device_info);
      info.kind = kind_of(d.kind);
      info.index = d.index;
      copy_text(info.uuid, sizeof(info.uuid), d.key());
      copy_text(info.name, sizeof(info.name), d.name);
      info.method = method_of(d.method());
      m->infos.push_back(info);
    }
    *monitor = m.release();
    return JOULES_OK;
  });
}

void joules_monitor_close(joules_monitor* monitor) {
  if (monitor == nullptr) return;
  // In a forked child the reading thread does not exist and the locks may be held by threads
  // that do not exist either: the child's copy is left alone.
  if (monitor->pid != getpid()) return;
  bool stopped = false;
  try {
    stopped = monitor->impl->close();
  } catch (...) {
    stopped = false;
  }
  // A reading thread stuck in a hung driver call still uses the monitor: it is left to it.
  if (stopped) delete monitor;
}

size_t joules_device_count(const joules_monitor* monitor) {
  if (check_monitor(monitor, "joules_device_count") != JOULES_OK) return 0;
  return monitor->infos.size();
}

joules_status joules_device_get(const joules_monitor* monitor, size_t i, joules_device_info* out) {
  if (const joules_status s = check_monitor(monitor, "joules_device_get"); s != JOULES_OK) return s;
  if (out == nullptr) return fail(JOULES_E_INVALID_ARGUMENT, "joules_device_get: out is NULL");
  if (out->struct_size < offsetof(joules_device_info, kind) + sizeof(joules_device_kind)) {
    return fail(JOULES_E_INVALID_ARGUMENT,
                fmt::format("joules_device_get: out->struct_size is {}; set it to "
                            "sizeof(joules_device_info)",
                            out->struct_size));
  }
  if (i >= monitor->infos.size()) {
    return fail(JOULES_E_INVALID_ARGUMENT,
                fmt::format("joules_device_get: device {} of {}", i, monitor->infos.size()));
  }
  joules_device_info info = monitor->infos[i];
  info.struct_size = out->struct_size;
  std::memcpy(out, &info, std::min<std::size_t>(out->struct_size, kDeviceInfoV1Size));
  return JOULES_OK;
}

joules_status joules_window_begin(joules_monitor* monitor, const char* name) {
  if (const joules_status s = check_monitor(monitor, "joules_window_begin"); s != JOULES_OK)
    return s;
  return guarded("joules_window_begin", [&] {
    check_name(name, "joules_window_begin");
    monitor->impl->begin(name);
    return JOULES_OK;
  });
}

joules_status joules_window_end(joules_monitor* monitor, const char* name, joules_window_id* id) {
  if (const joules_status s = check_monitor(monitor, "joules_window_end"); s != JOULES_OK) return s;
  return guarded("joules_window_end", [&] {
    check_name(name, "joules_window_end");
    const auto w = monitor->impl->end(name);
    if (id != nullptr) *id = w;
    return JOULES_OK;
  });
}

joules_status joules_window_result(joules_monitor* monitor, joules_window_id id, int64_t timeout_ms,
                                   joules_result* result, joules_device_energy* devices,
                                   size_t capacity) {
  if (const joules_status s = check_monitor(monitor, "joules_window_result"); s != JOULES_OK)
    return s;
  if (const joules_status s = check_result(result, "joules_window_result"); s != JOULES_OK)
    return s;
  if (timeout_ms < -1) {
    return fail(JOULES_E_INVALID_ARGUMENT,
                fmt::format("joules_window_result: timeout_ms {}: expected -1 (until final), 0 "
                            "(no wait) or a number of milliseconds",
                            timeout_ms));
  }
  return guarded("joules_window_result", [&] {
    std::optional<std::chrono::milliseconds> timeout;
    if (timeout_ms >= 0) timeout = std::chrono::milliseconds(timeout_ms);
    const auto n = monitor->impl->result(id, timeout);
    fill(*monitor, n, result, devices, capacity);
    if (!n.final) {
      return fail(JOULES_E_NOT_READY,
                  fmt::format("window {}: not final after {} ms (the devices have not been read "
                              "after its end yet)",
                              id, timeout_ms));
    }
    return JOULES_OK;
  });
}

joules_status joules_window_release(joules_monitor* monitor, joules_window_id id) {
  if (const joules_status s = check_monitor(monitor, "joules_window_release"); s != JOULES_OK)
    return s;
  return guarded("joules_window_release", [&] {
    monitor->impl->release(id);
    return JOULES_OK;
  });
}

joules_status joules_totals(joules_monitor* monitor, joules_result* result,
                            joules_device_energy* devices, size_t capacity) {
  if (const joules_status s = check_monitor(monitor, "joules_totals"); s != JOULES_OK) return s;
  if (const joules_status s = check_result(result, "joules_totals"); s != JOULES_OK) return s;
  return guarded("joules_totals", [&] {
    fill(*monitor, monitor->impl->totals(), result, devices, capacity);
    return JOULES_OK;
  });
}

joules_status joules_step(joules_monitor* monitor, uint64_t step, uint64_t tokens,
                          joules_window_id* id) {
  const auto now = joules::steady::now();
  if (monitor != nullptr) {
    if (const joules_status s = check_monitor(monitor, "joules_step"); s != JOULES_OK) return s;
  }
  return guarded("joules_step", [&] {
    const std::uint64_t number = joules::api::next_step_number(step);
    const bool wrapped = joules::api::step_channel_present();
    if (monitor == nullptr && !wrapped) {
      return fail(JOULES_E_NOT_WRAPPED,
                  "joules_step: no monitor, and this process does not run under `joules wrap` "
                  "(JOULES_WRAP_STEP_SOCKET is not set)");
    }
    if (wrapped) joules::api::send_step_to_wrap(now, number, tokens);
    if (monitor != nullptr) {
      const auto w = monitor->impl->step(now);
      if (id != nullptr) *id = w;
    }
    return JOULES_OK;
  });
}

int joules_wrapped(void) {
  try {
    return joules::api::step_channel_present() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
