// joules._joules: the Python package's one native module, a thin layer over the C API of
// libjoules (include/joules/joules.h).  Python users and C users share one engine and one ABI:
// nothing here measures, places or sums energy.  This file converts types, raises the C
// library's errors as Python exceptions (python/joules/_errors.py) and releases the GIL wherever
// the C library may wait (opening, closing, waiting for a window's final numbers), so that the
// training loop's other threads run meanwhile.  Everything Python-shaped (Measurement, measure,
// Tracker, the callbacks) is in python/joules/.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "joules/joules.h"

namespace nb = nanobind;

namespace {

// Raises joules.JoulesError (or its subclass for `status`) carrying the C library's fixed text
// and the detail of the failing call.  Must be called with the GIL held, on the thread that
// made the failing call (joules_last_error is per thread).
[[noreturn]] void raise_status(joules_status status) {
  const std::string detail = joules_last_error();
  nb::module_ errors = nb::module_::import_("joules._errors");
  errors.attr("raise_status")(static_cast<int>(status), joules_strerror(status), detail);
  // raise_status always raises, so the call above has thrown nb::python_error.
  throw std::logic_error("joules._errors.raise_status returned");
}

void check(joules_status status) {
  if (status != JOULES_OK) raise_status(status);
}

// One device as Python sees it: (kind, index, uuid, name, method).
using device_tuple = std::tuple<int, std::uint32_t, std::string, std::string, int>;
// One device's energy in a result: (energy_j, error_j, method, lost).
using energy_tuple = std::tuple<double, double, int, bool>;
// A result: (final, duration_s, total_energy_j, gpu_energy_j, cpu_energy_j, dram_energy_j,
// error_j, method, devices, begin_monotonic_s, end_monotonic_s).  CPU and DRAM are NaN when not
// measured; python/joules/_monitor.py makes them None.
using result_tuple = std::tuple<bool, double, double, double, double, double, double, int,
                                std::vector<energy_tuple>, double, double>;

result_tuple to_tuple(const joules_result& r, const std::vector<joules_device_energy>& devices) {
  std::vector<energy_tuple> out;
  out.reserve(devices.size());
  for (const auto& d : devices) {
    out.emplace_back(d.energy_j, d.error_j, static_cast<int>(d.method), d.lost != 0);
  }
  return {r.final != 0,   r.duration_s,        r.total_energy_j, r.gpu_energy_j,
          r.cpu_energy_j, r.dram_energy_j,     r.error_j,        static_cast<int>(r.method),
          std::move(out), r.begin_monotonic_s, r.end_monotonic_s};
}

joules_result empty_result() {
  joules_result r{};
  r.struct_size = sizeof(joules_result);
  return r;
}

// A joules_monitor owned by one Python object.  Python threads may share it: every call takes
// the lock shared, close() takes it exclusively, so a monitor is never freed under a thread that
// waits for a window in it.  The lock is taken only with the GIL released (a thread waiting for
// it while holding the GIL would stop the thread that holds it from ever finishing).
class native_monitor {
 public:
  native_monitor(int backend, std::optional<std::string> gpus, bool cpu, std::uint32_t interval_ms,
                 std::optional<std::string> nvml_library, std::optional<std::string> sim_model,
                 std::uint32_t sim_gpus, std::optional<std::string> sim_profile) {
    joules_options options;
    joules_options_init(&options);
    options.backend = static_cast<joules_backend>(backend);
    options.gpus = gpus ? gpus->c_str() : nullptr;
    options.cpu = cpu ? 1 : 0;
    options.interval_ms = interval_ms;
    options.nvml_library = nvml_library ? nvml_library->c_str() : nullptr;
    options.sim_model = sim_model ? sim_model->c_str() : nullptr;
    options.sim_gpus = sim_gpus;
    options.sim_profile = sim_profile ? sim_profile->c_str() : nullptr;
    joules_status status;
    {
      // Opening waits for every device's first reading (and NVML's init): other threads run.
      nb::gil_scoped_release released;
      status = joules_monitor_open(&options, &monitor_);
    }
    check(status);
    owner_pid_ = getpid();
    device_count_ = joules_device_count(monitor_);
  }

  ~native_monitor() { close(); }
  native_monitor(const native_monitor&) = delete;
  native_monitor& operator=(const native_monitor&) = delete;

  // Stops the reading thread and frees the monitor.  In a child process after fork() the monitor
  // is left alone: its reading thread exists only in the parent, so stopping it here would wait
  // for a thread that is not there; the child's copy of the memory goes with the child.
  void close() {
    nb::gil_scoped_release released;
    std::unique_lock lock(mutex_);
    if (monitor_ == nullptr) return;
    if (getpid() == owner_pid_) joules_monitor_close(monitor_);
    monitor_ = nullptr;
  }

  bool closed() const { return monitor_ == nullptr; }

  std::vector<device_tuple> devices() const {
    std::vector<device_tuple> out;
    std::vector<std::pair<joules_status, joules_device_info>> infos;
    bool was_closed = false;
    {
      nb::gil_scoped_release released;
      std::shared_lock lock(mutex_);
      was_closed = monitor_ == nullptr;
      for (std::size_t i = 0; !was_closed && i < device_count_; ++i) {
        joules_device_info info{};
        info.struct_size = sizeof(info);
        infos.emplace_back(joules_device_get(monitor_, i, &info), info);
      }
    }
    if (was_closed) raise_closed();
    for (const auto& [status, info] : infos) {
      check(status);
      out.emplace_back(static_cast<int>(info.kind), info.index, std::string(info.uuid),
                       std::string(info.name), static_cast<int>(info.method));
    }
    return out;
  }

  void begin(const std::string& name) {
    check(with_monitor([&](joules_monitor* m) { return joules_window_begin(m, name.c_str()); }));
  }

  joules_window_id end(const std::string& name) {
    joules_window_id id = 0;
    check(with_monitor([&](joules_monitor* m) { return joules_window_end(m, name.c_str(), &id); }));
    return id;
  }

  // The window's numbers, waiting at most `timeout_ms` (-1: until final).  Not final yet is
  // no error here: the tuple's first member says so.
  result_tuple result(joules_window_id id, std::int64_t timeout_ms) {
    joules_result r = empty_result();
    std::vector<joules_device_energy> devices(device_count_);
    const joules_status status = with_monitor([&](joules_monitor* m) {
      return joules_window_result(m, id, timeout_ms, &r, devices.data(), devices.size());
    });
    if (status != JOULES_E_NOT_READY) check(status);
    devices.resize(std::min(devices.size(), r.device_count));
    return to_tuple(r, devices);
  }

  void release(joules_window_id id) {
    check(with_monitor([&](joules_monitor* m) { return joules_window_release(m, id); }));
  }

  result_tuple totals() {
    joules_result r = empty_result();
    std::vector<joules_device_energy> devices(device_count_);
    check(with_monitor(
        [&](joules_monitor* m) { return joules_totals(m, &r, devices.data(), devices.size()); }));
    devices.resize(std::min(devices.size(), r.device_count));
    return to_tuple(r, devices);
  }

  joules_window_id step(std::uint64_t step, std::uint64_t tokens) {
    joules_window_id id = 0;
    check(with_monitor([&](joules_monitor* m) { return joules_step(m, step, tokens, &id); }));
    return id;
  }

 private:
  // Runs `call` on the open monitor with the GIL released and the lock held shared; a closed
  // monitor answers JOULES_E_STATE, as the C library does for a closed one.
  template <typename Call>
  joules_status with_monitor(Call&& call) {
    nb::gil_scoped_release released;
    std::shared_lock lock(mutex_);
    if (monitor_ == nullptr) {
      return JOULES_E_STATE;
    }
    return call(monitor_);
  }

  [[noreturn]] static void raise_closed() {
    nb::module_ errors = nb::module_::import_("joules._errors");
    errors.attr("raise_status")(static_cast<int>(JOULES_E_STATE), joules_strerror(JOULES_E_STATE),
                                "the monitor is closed");
    throw std::logic_error("joules._errors.raise_status returned");
  }

  joules_monitor* monitor_ = nullptr;
  pid_t owner_pid_ = 0;
  std::size_t device_count_ = 0;
  mutable std::shared_mutex mutex_;
};

// joules_step without a monitor: only `joules wrap` hears of it.
void step_unmonitored(std::uint64_t step, std::uint64_t tokens) {
  joules_status status;
  {
    nb::gil_scoped_release released;
    status = joules_step(nullptr, step, tokens, nullptr);
  }
  check(status);
}

}  // namespace

NB_MODULE(_joules, m) {
  m.doc() = "The C API of libjoules (include/joules/joules.h), as joules' Python package uses it.";
  // A monitor or a measurement held by a global at interpreter exit is ordinary Python; nanobind
  // would report it as a leak on every such exit.  python/joules/_state.py closes the monitors.
  nb::set_leak_warnings(false);
  m.def(
      "version", [] { return std::string(joules_version()); },
      "The library's version (joules_version).");
  m.def(
      "header_version", [] { return std::string(JOULES_VERSION_STRING); },
      "The version of the header this module was built against.");
  m.def(
      "wrapped", [] { return joules_wrapped() != 0; },
      "Whether this process runs under `joules wrap` with its step channel.");
  m.def("step", &step_unmonitored, nb::arg("step"), nb::arg("tokens"),
        "joules_step without a monitor: tells `joules wrap` that a step ended now.");
  m.def(
      "strerror",
      [](int status) { return std::string(joules_strerror(static_cast<joules_status>(status))); },
      nb::arg("status"));

  nb::class_<native_monitor>(m, "NativeMonitor")
      .def(
          nb::init<int, std::optional<std::string>, bool, std::uint32_t, std::optional<std::string>,
                   std::optional<std::string>, std::uint32_t, std::optional<std::string>>(),
          nb::arg("backend"), nb::arg("gpus").none(), nb::arg("cpu"), nb::arg("interval_ms"),
          nb::arg("nvml_library").none(), nb::arg("sim_model").none(), nb::arg("sim_gpus"),
          nb::arg("sim_profile").none())
      .def("close", &native_monitor::close)
      .def_prop_ro("closed", &native_monitor::closed)
      .def("devices", &native_monitor::devices)
      .def("begin", &native_monitor::begin, nb::arg("name"))
      .def("end", &native_monitor::end, nb::arg("name"))
      .def("result", &native_monitor::result, nb::arg("id"), nb::arg("timeout_ms"))
      .def("release", &native_monitor::release, nb::arg("id"))
      .def("totals", &native_monitor::totals)
      .def("step", &native_monitor::step, nb::arg("step"), nb::arg("tokens"));
}
