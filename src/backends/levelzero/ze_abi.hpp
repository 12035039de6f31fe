#pragma once
// The parts of Level Zero's ze_api.h and zes_api.h (Sysman) that joules uses, written from the
// public headers of oneapi-src/level-zero (docs/level-zero-notes.md §2).  Level Zero keeps its
// structs stable across spec versions and extends them through pNext chains, so they are declared
// as they are, with static_asserts on their sizes for x86-64.  joules links no Level Zero
// library: the loader is opened with dlopen (ze_library.hpp).

#include <cstdint>

namespace joules::ze {

using ze_result_t = std::uint32_t;  // enum
using ze_bool_t = std::uint8_t;
using zes_structure_type_t = std::uint32_t;  // enum
using ze_structure_type_t = std::uint32_t;   // enum

using ze_driver_handle_t = void*;
using ze_device_handle_t = void*;
using zes_driver_handle_t = void*;
using zes_device_handle_t = void*;
using zes_pwr_handle_t = void*;
using zes_freq_handle_t = void*;
using zes_temp_handle_t = void*;
using zes_mem_handle_t = void*;
using zes_engine_handle_t = void*;
using zes_ras_handle_t = void*;

inline constexpr ze_result_t kSuccess = 0;
inline constexpr ze_result_t kErrorDeviceLost = 0x70000001;
inline constexpr ze_result_t kErrorInsufficientPermissions = 0x70010000;
inline constexpr ze_result_t kErrorNotAvailable = 0x70010001;
inline constexpr ze_result_t kErrorDependencyUnavailable = 0x70020000;
inline constexpr ze_result_t kErrorUninitialized = 0x78000001;
inline constexpr ze_result_t kErrorUnsupportedVersion = 0x78000002;
inline constexpr ze_result_t kErrorUnsupportedFeature = 0x78000003;
inline constexpr ze_result_t kErrorInvalidArgument = 0x78000004;
inline constexpr ze_result_t kErrorUnknown = 0x7ffffffe;

inline constexpr zes_structure_type_t kStypeDeviceProperties = 0x1;
inline constexpr zes_structure_type_t kStypePciProperties = 0x2;
inline constexpr zes_structure_type_t kStypeEngineProperties = 0x5;
inline constexpr zes_structure_type_t kStypeFreqProperties = 0x9;
inline constexpr zes_structure_type_t kStypePowerProperties = 0xd;
inline constexpr zes_structure_type_t kStypeRasProperties = 0xf;
inline constexpr zes_structure_type_t kStypeTempProperties = 0x14;
inline constexpr zes_structure_type_t kStypePciState = 0x17;
inline constexpr zes_structure_type_t kStypeFreqState = 0x1b;
inline constexpr zes_structure_type_t kStypeMemState = 0x1e;
inline constexpr zes_structure_type_t kStypeRasState = 0x22;
inline constexpr zes_structure_type_t kStypePowerExtProperties = 0x28;
inline constexpr ze_structure_type_t kStypeCoreDeviceProperties =
    0x3;  // ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES

inline constexpr std::uint32_t kPowerDomainCard = 1;     // ZES_POWER_DOMAIN_CARD
inline constexpr std::uint32_t kPowerDomainPackage = 2;  // ZES_POWER_DOMAIN_PACKAGE
inline constexpr std::uint32_t kFreqDomainGpu = 0;
inline constexpr std::uint32_t kFreqDomainMemory = 1;
inline constexpr std::uint32_t kTempSensorsGlobal = 0;
inline constexpr std::uint32_t kTempSensorsGpu = 1;
inline constexpr std::uint32_t kTempSensorsMemory = 2;
inline constexpr std::uint32_t kEngineGroupAll = 0;
inline constexpr std::uint32_t kEngineGroupComputeAll = 1;
inline constexpr std::uint32_t kRasCorrectable = 0;
inline constexpr std::uint32_t kRasUncorrectable = 1;

// zes_freq_throttle_reason_flag_t
inline constexpr std::uint32_t kThrottleAvePowerCap = 1U << 0;
inline constexpr std::uint32_t kThrottleBurstPowerCap = 1U << 1;
inline constexpr std::uint32_t kThrottleCurrentLimit = 1U << 2;
inline constexpr std::uint32_t kThrottleThermalLimit = 1U << 3;
inline constexpr std::uint32_t kThrottlePsuAlert = 1U << 4;
inline constexpr std::uint32_t kThrottleSwRange = 1U << 5;
inline constexpr std::uint32_t kThrottleHwRange = 1U << 6;

struct ze_device_properties_t {
  ze_structure_type_t stype;
  void* pNext;
  std::uint32_t type;
  std::uint32_t vendorId;
  std::uint32_t deviceId;
  std::uint32_t flags;
  std::uint32_t subdeviceId;
  std::uint32_t coreClockRate;
  std::uint64_t maxMemAllocSize;
  std::uint32_t maxHardwareContexts;
  std::uint32_t maxCommandQueuePriority;
  std::uint32_t numThreadsPerEU;
  std::uint32_t physicalEUSimdWidth;
  std::uint32_t numEUsPerSubslice;
  std::uint32_t numSubslicesPerSlice;
  std::uint32_t numSlices;
  std::uint64_t timerResolution;
  std::uint32_t timestampValidBits;
  std::uint32_t kernelTimestampValidBits;
  std::uint8_t uuid[16];  // ze_device_uuid_t
  char name[256];         // ZE_MAX_DEVICE_NAME
};
static_assert(sizeof(ze_device_properties_t) == 368);

struct zes_device_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  ze_device_properties_t core;
  std::uint32_t numSubdevices;  // 0: no sub-devices (one stack)
  char serialNumber[64];        // ZES_STRING_PROPERTY_SIZE
  char boardNumber[64];
  char brandName[64];
  char modelName[64];
  char vendorName[64];
  char driverVersion[64];
};
static_assert(sizeof(zes_device_properties_t) == 776);

struct zes_pci_address_t {
  std::uint32_t domain;
  std::uint32_t bus;
  std::uint32_t device;
  std::uint32_t function;
};

struct zes_pci_speed_t {
  std::int32_t gen;    // -1: unknown
  std::int32_t width;  // -1: unknown
  std::int64_t maxBandwidth;
};

struct zes_pci_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  zes_pci_address_t address;
  zes_pci_speed_t maxSpeed;
  ze_bool_t haveBandwidthCounters;
  ze_bool_t havePacketCounters;
  ze_bool_t haveReplayCounters;
};
static_assert(sizeof(zes_pci_properties_t) == 56);

struct zes_pci_state_t {
  zes_structure_type_t stype;
  const void* pNext;
  std::uint32_t status;  // zes_pci_link_status_t
  std::uint32_t qualityIssues;
  std::uint32_t stabilityIssues;
  zes_pci_speed_t speed;
};
static_assert(sizeof(zes_pci_state_t) == 48);

struct zes_power_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  ze_bool_t onSubdevice;
  std::uint32_t subdeviceId;
  ze_bool_t canControl;
  ze_bool_t isEnergyThresholdSupported;
  std::int32_t defaultLimit;  // mW; -1: unknown
  std::int32_t minLimit;
  std::int32_t maxLimit;
};
static_assert(sizeof(zes_power_properties_t) == 40);

// Chained to zes_power_properties_t (spec 1.4 and later): which level of the part the domain is.
struct zes_power_ext_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  std::uint32_t domain;  // zes_power_domain_t
  void* defaultLimit;    // zes_power_limit_ext_desc_t*, filled when not null
};
static_assert(sizeof(zes_power_ext_properties_t) == 32);

struct zes_power_energy_counter_t {
  std::uint64_t energy;     // µJ, monotonic
  std::uint64_t timestamp;  // µs, to take differences of only
};

struct zes_freq_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  std::uint32_t type;  // zes_freq_domain_t
  ze_bool_t onSubdevice;
  std::uint32_t subdeviceId;
  ze_bool_t canControl;
  ze_bool_t isThrottleEventSupported;
  double min;  // MHz
  double max;
};
static_assert(sizeof(zes_freq_properties_t) == 48);

struct zes_freq_state_t {
  zes_structure_type_t stype;
  const void* pNext;
  double currentVoltage;
  double request;
  double tdp;
  double efficient;
  double actual;  // MHz; negative: unknown
  std::uint32_t throttleReasons;
};
static_assert(sizeof(zes_freq_state_t) == 64);

struct zes_temp_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  std::uint32_t type;  // zes_temp_sensors_t
  ze_bool_t onSubdevice;
  std::uint32_t subdeviceId;
  double maxTemperature;
  ze_bool_t isCriticalTempSupported;
  ze_bool_t isThreshold1Supported;
  ze_bool_t isThreshold2Supported;
};
static_assert(sizeof(zes_temp_properties_t) == 48);

struct zes_mem_state_t {
  zes_structure_type_t stype;
  const void* pNext;
  std::uint32_t health;
  std::uint64_t free;  // bytes
  std::uint64_t size;
};
static_assert(sizeof(zes_mem_state_t) == 40);

struct zes_engine_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  std::uint32_t type;  // zes_engine_group_t
  ze_bool_t onSubdevice;
  std::uint32_t subdeviceId;
};
static_assert(sizeof(zes_engine_properties_t) == 32);

struct zes_engine_stats_t {
  std::uint64_t activeTime;  // µs
  std::uint64_t timestamp;   // µs
};

struct zes_ras_properties_t {
  zes_structure_type_t stype;
  void* pNext;
  std::uint32_t type;  // zes_ras_error_type_t
  ze_bool_t onSubdevice;
  std::uint32_t subdeviceId;
};
static_assert(sizeof(zes_ras_properties_t) == 32);

struct zes_ras_state_t {
  zes_structure_type_t stype;
  const void* pNext;
  std::uint64_t category[7];  // ZES_MAX_RAS_ERROR_CATEGORY_COUNT
};
static_assert(sizeof(zes_ras_state_t) == 72);

// Power limits (docs/level-zero-notes.md §7).  zes_power_level_t, zes_limit_unit_t values:
inline constexpr std::uint32_t kPowerLevelSustained = 1;  // ZES_POWER_LEVEL_SUSTAINED
inline constexpr std::uint32_t kLimitUnitPower = 2;       // ZES_LIMIT_UNIT_POWER: milliwatts
inline constexpr zes_structure_type_t kStypePowerLimitExtDesc = 0x27;

// zesPowerGetLimitsExt / zesPowerSetLimitsExt (spec 1.4 and later): one descriptor per limit.
struct zes_power_limit_ext_desc_t {
  zes_structure_type_t stype;
  const void* pNext;
  std::uint32_t level;      // zes_power_level_t
  std::uint32_t source;     // zes_power_source_t
  std::uint32_t limitUnit;  // zes_limit_unit_t
  ze_bool_t enabledStateLocked;
  ze_bool_t enabled;
  ze_bool_t intervalValueLocked;
  std::int32_t interval;  // ms
  ze_bool_t limitValueLocked;
  std::int32_t limit;  // in limitUnit
};
static_assert(sizeof(zes_power_limit_ext_desc_t) == 48);

// zesPowerGetLimits / zesPowerSetLimits (deprecated by the Ext calls): the sustained limit (PL1).
// Their burst and peak limits are passed as null pointers, written `void*` here.
struct zes_power_sustained_limit_t {
  ze_bool_t enabled;
  std::int32_t power;     // mW
  std::int32_t interval;  // ms
};
static_assert(sizeof(zes_power_sustained_limit_t) == 12);

}  // namespace joules::ze
