#pragma once
// The parts of Habana's HLML (hlml.h) that joules uses, declared here so that joules builds
// without Habana's headers and loads libhlml.so at run time (docs/hlml-notes.md §1, §2).
// Structs whose layout may grow between releases are passed as oversized buffers and read by
// offset (hlml_backend.cpp).

#include <cstddef>
#include <cstdint>

namespace joules::hlml {

using hlml_return_t = int;      // enum hlml_return
using hlml_device_t = void*;    // an opaque handle
using hlml_sensor_t = int;      // enum hlml_temperature_sensors
using hlml_clock_type_t = int;  // enum hlml_clock_type

// Return codes (docs/hlml-notes.md §2).
inline constexpr hlml_return_t kSuccess = 0;
inline constexpr hlml_return_t kUninitialized = 1;
inline constexpr hlml_return_t kInvalidArgument = 2;
inline constexpr hlml_return_t kNotSupported = 3;
inline constexpr hlml_return_t kAlreadyInitialized = 5;
inline constexpr hlml_return_t kNotFound = 6;
inline constexpr hlml_return_t kInsufficientSize = 7;
inline constexpr hlml_return_t kDriverNotLoaded = 9;
inline constexpr hlml_return_t kTimeout = 10;
inline constexpr hlml_return_t kAipIsLost = 15;  // the device is gone
inline constexpr hlml_return_t kMemory = 20;
inline constexpr hlml_return_t kNoData = 21;
inline constexpr hlml_return_t kUnknown = 49;

// The name of a return code ("HLML_ERROR_AIP_IS_LOST"), or nullptr for a code hlml.h lacks.
const char* return_name(hlml_return_t code);

inline constexpr hlml_sensor_t kTemperatureOnAip = 0;
inline constexpr hlml_sensor_t kTemperatureOnBoard = 1;
inline constexpr hlml_clock_type_t kClockSoc = 0;

// hlml_pci_info_t: unsigned bus, then char bus_id[PCI_ADDR_LEN = 15] ("0000:19:00.0").
inline constexpr std::size_t kPciBusIdOffset = 4;
inline constexpr std::size_t kPciBusIdLength = 15;
// hlml_memory_t: unsigned long long free, total, used (bytes).
struct memory_info {
  unsigned long long free;
  unsigned long long total;
  unsigned long long used;
};
// hlml_utilization_t: unsigned int aip (percent).
struct utilization {
  unsigned int aip;
};

}  // namespace joules::hlml
