// The entry points of the fake libhlml.so (README.md), declared with C linkage from
// src/backends/hlml/hlml_symbols.def: a definition whose signature differs from the list does
// not compile.  Which of them the library exports is decided by its linker version script
// (CMakeLists.txt).

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/hlml/hlml_abi.hpp"
#include "hlml_scenario.hpp"

namespace joules::hlml {
extern "C" {
#define JOULES_HLML_FN(since, ret, name, params) \
  __attribute__((visibility("default"))) ret name params;
#include "backends/hlml/hlml_symbols.def"
#undef JOULES_HLML_FN
}
}  // namespace joules::hlml

// Taking every entry point's address makes a declared but undefined one a link error.
extern const void* const fake_hlml_entry_points[];
const void* const fake_hlml_entry_points[] = {
#define JOULES_HLML_FN(since, ret, name, params) reinterpret_cast<const void*>(&joules::hlml::name),
#include "backends/hlml/hlml_symbols.def"
#undef JOULES_HLML_FN
};

namespace joules::hlml {
namespace {

using fake_gpu::reading_kind;
using fake_hlml::call;

// The prologue's answer as a return code, or success to go on.
hlml_return_t hlml_status_of(const call& c) {
  switch (c.status()) {
    case call::state::uninitialised:
      return kUninitialized;
    case call::state::invalid:
      return kInvalidArgument;
    case call::state::lost:
      return kAipIsLost;
    case call::state::ok:
      break;
  }
  return kSuccess;
}

// Identity calls answer from the driver's cached data, even for a device that is lost.
hlml_return_t identity_status(const call& c) {
  return c.status() == call::state::lost ? kSuccess : hlml_status_of(c);
}

hlml_return_t put_hlml_text(char* out, unsigned int length, const std::string& s) {
  if (out == nullptr) return kInvalidArgument;
  if (length <= s.size()) return kInsufficientSize;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return kSuccess;
}

}  // namespace

extern "C" {

hlml_return_t hlml_init(void) {
  const int rc = fake_hlml::init();
  return rc < 0 ? kDriverNotLoaded : rc;
}

hlml_return_t hlml_shutdown(void) {
  if (fake_hlml::current() == nullptr) return kUninitialized;
  fake_hlml::shutdown();
  return kSuccess;
}

hlml_return_t hlml_device_get_count(unsigned int* count) {
  const fake_hlml::scenario* s = fake_hlml::current();
  if (s == nullptr) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = static_cast<unsigned int>(s->devices.size());
  return kSuccess;
}

hlml_return_t hlml_device_get_handle_by_index(unsigned int index, hlml_device_t* device) {
  const fake_hlml::scenario* s = fake_hlml::current();
  if (s == nullptr) return kUninitialized;
  if (device == nullptr || index >= s->devices.size()) return kInvalidArgument;
  *device = const_cast<fake_hlml::device*>(&s->devices[index]);
  return kSuccess;
}

hlml_return_t hlml_device_get_name(hlml_device_t device, char* name, unsigned int length) {
  const call c(device);
  if (const hlml_return_t rc = identity_status(c); rc != kSuccess) return rc;
  return put_hlml_text(name, length, c.dev().name);
}

hlml_return_t hlml_device_get_uuid(hlml_device_t device, char* uuid, unsigned int length) {
  const call c(device);
  if (const hlml_return_t rc = identity_status(c); rc != kSuccess) return rc;
  return put_hlml_text(uuid, length, c.dev().uuid);
}

hlml_return_t hlml_device_get_pci_info(hlml_device_t device, void* pci) {
  const call c(device);
  if (const hlml_return_t rc = identity_status(c); rc != kSuccess) return rc;
  if (pci == nullptr) return kInvalidArgument;
  // hlml_pci_info_t's bus, then bus_id[15] (hlml_abi.hpp); the rest is left as it was.
  auto* out = static_cast<char*>(pci);
  const unsigned int bus = 0;
  std::memcpy(out, &bus, sizeof bus);
  const std::string& id = c.dev().pci_bus_id;
  const std::size_t n = std::min(id.size(), kPciBusIdLength - 1);
  std::memcpy(out + kPciBusIdOffset, id.data(), n);
  out[kPciBusIdOffset + n] = '\0';
  return kSuccess;
}

hlml_return_t hlml_device_get_total_energy_consumption(hlml_device_t device,
                                                       unsigned long long* energy_mj) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (energy_mj == nullptr) return kInvalidArgument;
  if (!c.dev().counter.supported) return kNotSupported;
  if (const long long f = c.fault(reading_kind::energy); f != 0) return static_cast<int>(f);
  *energy_mj = c.dev().energy_mj(c.t());
  return kSuccess;
}

hlml_return_t hlml_device_get_power_usage(hlml_device_t device, unsigned int* power_mw) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (power_mw == nullptr) return kInvalidArgument;
  if (!c.dev().power_usage.supported) return kNotSupported;
  if (const long long f = c.fault(reading_kind::power); f != 0) return static_cast<int>(f);
  *power_mw = c.dev().power_mw(c.t());
  return kSuccess;
}

hlml_return_t hlml_device_get_power_management_default_limit(hlml_device_t device,
                                                             unsigned int* limit_mw) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (limit_mw == nullptr) return kInvalidArgument;
  *limit_mw = c.dev().default_limit_mw;
  return kSuccess;
}

hlml_return_t hlml_device_get_temperature(hlml_device_t device, hlml_sensor_t sensor,
                                          unsigned int* celsius) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (celsius == nullptr) return kInvalidArgument;
  if (sensor == kTemperatureOnAip) {
    *celsius = c.dev().state.aip_c;
  } else if (sensor == kTemperatureOnBoard) {
    *celsius = c.dev().state.board_c;
  } else {
    return kInvalidArgument;
  }
  return kSuccess;
}

hlml_return_t hlml_device_get_memory_info(hlml_device_t device, void* memory) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (memory == nullptr) return kInvalidArgument;
  const fake_hlml::health& h = c.dev().state;
  const memory_info m{h.memory_total - std::min(h.memory_used, h.memory_total), h.memory_total,
                      h.memory_used};
  std::memcpy(memory, &m, sizeof m);
  return kSuccess;
}

hlml_return_t hlml_device_get_utilization_rates(hlml_device_t device, void* rates) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (rates == nullptr) return kInvalidArgument;
  const utilization u{c.dev().state.aip_util};
  std::memcpy(rates, &u, sizeof u);
  return kSuccess;
}

hlml_return_t hlml_device_get_clock_info(hlml_device_t device, hlml_clock_type_t type,
                                         unsigned int* mhz) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (mhz == nullptr) return kInvalidArgument;
  if (type != kClockSoc) return kNotSupported;
  *mhz = c.dev().state.soc_mhz;
  return kSuccess;
}

hlml_return_t hlml_device_get_max_clock_info(hlml_device_t device, hlml_clock_type_t type,
                                             unsigned int* mhz) {
  const call c(device);
  if (const hlml_return_t rc = hlml_status_of(c); rc != kSuccess) return rc;
  if (mhz == nullptr) return kInvalidArgument;
  if (type != kClockSoc) return kNotSupported;
  *mhz = c.dev().state.soc_max_mhz;
  return kSuccess;
}

}  // extern "C"
}  // namespace joules::hlml
