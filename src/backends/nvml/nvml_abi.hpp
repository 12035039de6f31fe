#pragma once
// The subset of the NVML C ABI that joules uses, declared by us so that no NVIDIA header is needed
// at build time.  Layouts, units and values are those of NVIDIA's nvml.h 13.3.29, with their
// sources in docs/nvml-notes.md §5; sizes are pinned with static_assert below.
//
// Names keep NVML's own spelling (nvmlReturn_t, nvmlPciInfo_t, ...) rather than our snake_case so
// that every declaration can be checked against the header it mirrors by eye.  C enums passed by
// value are declared as unsigned int: they are 4 bytes and passed the same way
// (docs/nvml-notes.md §5.1).

#include <cstddef>
#include <cstdint>

namespace joules::nvml {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpmSample_t = struct nvmlGpmSample_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;
using nvmlDeviceArchitecture_t = unsigned int;

// nvmlReturn_t values (docs/nvml-notes.md §5.2).
inline constexpr nvmlReturn_t kSuccess = 0;
inline constexpr nvmlReturn_t kErrorUninitialized = 1;
inline constexpr nvmlReturn_t kErrorInvalidArgument = 2;
inline constexpr nvmlReturn_t kErrorNotSupported = 3;
inline constexpr nvmlReturn_t kErrorNoPermission = 4;
inline constexpr nvmlReturn_t kErrorNotFound = 6;
inline constexpr nvmlReturn_t kErrorInsufficientSize = 7;
inline constexpr nvmlReturn_t kErrorDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kErrorTimeout = 10;
inline constexpr nvmlReturn_t kErrorLibraryNotFound = 12;
inline constexpr nvmlReturn_t kErrorFunctionNotFound = 13;
inline constexpr nvmlReturn_t kErrorGpuIsLost = 15;
inline constexpr nvmlReturn_t kErrorResetRequired = 16;
inline constexpr nvmlReturn_t kErrorOperatingSystem = 17;
inline constexpr nvmlReturn_t kErrorLibRmVersionMismatch = 18;
inline constexpr nvmlReturn_t kErrorMemory = 20;
inline constexpr nvmlReturn_t kErrorNoData = 21;
inline constexpr nvmlReturn_t kErrorArgumentVersionMismatch = 25;
inline constexpr nvmlReturn_t kErrorDeprecated = 26;
inline constexpr nvmlReturn_t kErrorGpuNotFound = 28;
inline constexpr nvmlReturn_t kErrorUnknown = 999;

// nvmlInitWithFlags flags.
inline constexpr unsigned int kInitFlagNoGpus = 1U << 0U;

// Buffer sizes (docs/nvml-notes.md §5.3); the V2 sizes are the ones the getters document.
inline constexpr unsigned int kSystemDriverVersionBufferSize = 80;
inline constexpr unsigned int kSystemNvmlVersionBufferSize = 80;
inline constexpr unsigned int kDeviceNameBufferSize = 96;
inline constexpr unsigned int kDeviceUuidBufferSize = 96;
inline constexpr unsigned int kDeviceSerialBufferSize = 30;
inline constexpr unsigned int kDevicePciBusIdBufferSize = 32;

// nvmlDeviceArchitecture_t values.
inline constexpr nvmlDeviceArchitecture_t kArchKepler = 2;
inline constexpr nvmlDeviceArchitecture_t kArchMaxwell = 3;
inline constexpr nvmlDeviceArchitecture_t kArchPascal = 4;
inline constexpr nvmlDeviceArchitecture_t kArchVolta = 5;
inline constexpr nvmlDeviceArchitecture_t kArchTuring = 6;
inline constexpr nvmlDeviceArchitecture_t kArchAmpere = 7;
inline constexpr nvmlDeviceArchitecture_t kArchAda = 8;
inline constexpr nvmlDeviceArchitecture_t kArchHopper = 9;
inline constexpr nvmlDeviceArchitecture_t kArchBlackwell = 10;
inline constexpr nvmlDeviceArchitecture_t kArchRubin = 13;
inline constexpr nvmlDeviceArchitecture_t kArchUnknown = 0xffffffffU;

// Field ids for nvmlDeviceGetFieldValues (docs/nvml-notes.md §5.6).
inline constexpr unsigned int kFiDevEccSbeVolTotal = 3;
inline constexpr unsigned int kFiDevEccDbeVolTotal = 4;
inline constexpr unsigned int kFiDevEccSbeAggTotal = 5;
inline constexpr unsigned int kFiDevEccDbeAggTotal = 6;
inline constexpr unsigned int kFiDevRetiredSbe = 29;  // pages retired for repeated single-bit
inline constexpr unsigned int kFiDevRetiredDbe = 30;  // pages retired for a double-bit error
inline constexpr unsigned int kFiDevRetiredPending = 31;
// NVLink error counts, totals over all links (docs/nvml-notes.md §5.14).
inline constexpr unsigned int kFiDevNvlinkCrcFlitErrorTotal = 38;
inline constexpr unsigned int kFiDevNvlinkCrcDataErrorTotal = 45;
inline constexpr unsigned int kFiDevNvlinkReplayErrorTotal = 52;
inline constexpr unsigned int kFiDevNvlinkRecoveryErrorTotal = 59;
inline constexpr unsigned int kFiDevMemoryTemp = 82;
inline constexpr unsigned int kFiDevTotalEnergyConsumption = 83;  // mJ since driver load
inline constexpr unsigned int kFiDevPcieReplayCounter = 94;
inline constexpr unsigned int kFiDevNvlinkThroughputDataTx = 138;
inline constexpr unsigned int kFiDevNvlinkThroughputDataRx = 139;
inline constexpr unsigned int kFiDevRemappedCor = 142;  // row remapper (Ampere+)
inline constexpr unsigned int kFiDevRemappedUnc = 143;
inline constexpr unsigned int kFiDevRemappedPending = 144;
inline constexpr unsigned int kFiDevRemappedFailure = 145;
inline constexpr unsigned int kFiDevPowerAverage = 185;  // mW, 1 s average, Ampere (not GA100)+
inline constexpr unsigned int kFiDevPowerInstant = 186;  // mW, all architectures
inline constexpr unsigned int kFiDevPowerMinLimit = 187;
inline constexpr unsigned int kFiDevPowerMaxLimit = 188;
inline constexpr unsigned int kFiDevPowerDefaultLimit = 189;
inline constexpr unsigned int kFiDevPowerCurrentLimit = 190;
inline constexpr unsigned int kFiDevEnergy = 191;  // mJ, same as 83
inline constexpr unsigned int kFiDevPowerRequestedLimit = 192;
inline constexpr unsigned int kFiDevPcieCountTxBytes = 197;  // bytes, may wrap (12.5 header)
inline constexpr unsigned int kFiDevPcieCountRxBytes = 198;

// Power scopes (scopeId of the power fields, and nvmlPowerValue_v2_t::powerScope).
inline constexpr unsigned int kPowerScopeGpu = 0;
inline constexpr unsigned int kPowerScopeModule = 1;
inline constexpr unsigned int kPowerScopeMemory = 2;

// Sensors, clocks, ECC and other enums passed by value (docs/nvml-notes.md §5.5).
inline constexpr unsigned int kTemperatureGpu = 0;
inline constexpr unsigned int kTemperatureThresholdShutdown = 0;
inline constexpr unsigned int kTemperatureThresholdSlowdown = 1;
inline constexpr unsigned int kTemperatureThresholdMemMax = 2;
inline constexpr unsigned int kTemperatureThresholdGpuMax = 3;
inline constexpr unsigned int kClockGraphics = 0;
inline constexpr unsigned int kClockSm = 1;
inline constexpr unsigned int kClockMem = 2;
inline constexpr unsigned int kClockVideo = 3;
inline constexpr unsigned int kMemoryErrorCorrected = 0;
inline constexpr unsigned int kMemoryErrorUncorrected = 1;
inline constexpr unsigned int kVolatileEcc = 0;
inline constexpr unsigned int kAggregateEcc = 1;
inline constexpr unsigned int kPageRetirementMultipleSingleBit = 0;
inline constexpr unsigned int kPageRetirementDoubleBit = 1;
inline constexpr unsigned int kPcieUtilTxBytes = 0;
inline constexpr unsigned int kPcieUtilRxBytes = 1;
inline constexpr unsigned int kFeatureDisabled = 0;
inline constexpr unsigned int kFeatureEnabled = 1;
inline constexpr unsigned int kDeviceMigEnable = 1;

// Clock event (throttle) reason bits (docs/nvml-notes.md §7).
inline constexpr unsigned long long kClocksEventGpuIdle = 0x1ULL;
inline constexpr unsigned long long kClocksEventApplicationsClocksSetting = 0x2ULL;
inline constexpr unsigned long long kClocksEventSwPowerCap = 0x4ULL;
inline constexpr unsigned long long kClocksEventHwSlowdown = 0x8ULL;
inline constexpr unsigned long long kClocksEventSyncBoost = 0x10ULL;
inline constexpr unsigned long long kClocksEventSwThermalSlowdown = 0x20ULL;
inline constexpr unsigned long long kClocksEventHwThermalSlowdown = 0x40ULL;
inline constexpr unsigned long long kClocksEventHwPowerBrakeSlowdown = 0x80ULL;
inline constexpr unsigned long long kClocksEventDisplayClockSetting = 0x100ULL;

// NVML_STRUCT_VERSION(data, ver) = sizeof(struct) | ver << 24; the version field must hold this
// value, not the bare number (docs/nvml-notes.md §5.7).
constexpr unsigned int struct_version(std::size_t size, unsigned int version) {
  return static_cast<unsigned int>(size) | (version << 24U);
}

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct nvmlUtilization_t {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent
};

struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {
  unsigned int version;  // kMemoryV2Version
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
};

struct nvmlProcessInfo_v2_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
  unsigned int gpuInstanceId;        // 0xFFFFFFFF if not MIG
  unsigned int computeInstanceId;    // 0xFFFFFFFF if not MIG
};

// R535 drivers briefly used this 32-byte layout behind the _v3 names (docs/nvml-notes.md §5.8).
struct nvmlProcessDetail_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};

struct nvmlProcessDetailList_v1_t {
  unsigned int version;
  unsigned int mode;
  unsigned int numProcArrayEntries;
  nvmlProcessDetail_v1_t* procArray;
};

// One process's recent utilisation (nvmlDeviceGetProcessUtilization, docs/nvml-notes.md §5.12):
// 32 bytes, the pid padded to 8 before the timestamp.
struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp in microseconds
  unsigned int smUtil;           // SM (3D/compute) utilisation, percent
  unsigned int memUtil;          // frame buffer utilisation, percent
  unsigned int encUtil;
  unsigned int decUtil;
};

struct nvmlConfComputeMemSizeInfo_t {
  unsigned long long protectedMemSizeKib;
  unsigned long long unprotectedMemSizeKib;
};

struct nvmlTemperature_v1_t {
  unsigned int version;  // kTemperatureV1Version
  unsigned int sensorType;
  int temperature;  // degrees Celsius
};

struct nvmlPowerValue_v2_t {
  unsigned int version;  // kPowerValueV2Version
  unsigned char powerScope;
  unsigned int powerValueMw;
};

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};

inline constexpr unsigned int kValueTypeDouble = 0;
inline constexpr unsigned int kValueTypeUnsignedInt = 1;
inline constexpr unsigned int kValueTypeUnsignedLong = 2;
inline constexpr unsigned int kValueTypeUnsignedLongLong = 3;
inline constexpr unsigned int kValueTypeSignedLongLong = 4;
inline constexpr unsigned int kValueTypeSignedInt = 5;
inline constexpr unsigned int kValueTypeUnsignedShort = 6;

struct nvmlFieldValue_t {
  unsigned int fieldId;   // in
  unsigned int scopeId;   // in
  long long timestamp;    // out: CPU time of the reading, microseconds since 1970
  long long latencyUsec;  // out
  unsigned int valueType;
  nvmlReturn_t nvmlReturn;  // per-field status; value is undefined unless kSuccess
  nvmlValue_t value;
};

// GPM (docs/nvml-notes.md §5.9).  The metrics array is declared at the largest size any
// header has used, which is harmless for older drivers; numMetrics stays small.
inline constexpr unsigned int kGpmMetricMax = 333;
inline constexpr unsigned int kGpmMetricsGetVersion = 1;
inline constexpr unsigned int kGpmSupportVersion = 1;
inline constexpr unsigned int kGpmMetricSmUtil = 2;
inline constexpr unsigned int kGpmMetricSmOccupancy = 3;
inline constexpr unsigned int kGpmMetricAnyTensorUtil = 5;
inline constexpr unsigned int kGpmMetricDramBwUtil = 10;
inline constexpr unsigned int kGpmMetricPcieTxPerSec = 20;
inline constexpr unsigned int kGpmMetricPcieRxPerSec = 21;
inline constexpr unsigned int kGpmMetricNvlinkTotalRxPerSec = 60;
inline constexpr unsigned int kGpmMetricNvlinkTotalTxPerSec = 61;

struct nvmlGpmMetric_t {
  unsigned int metricId;    // in
  nvmlReturn_t nvmlReturn;  // out
  double value;             // out, valid when nvmlReturn == kSuccess
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricMax];
};

struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

// nvmlComputeMode_t (nvmlDeviceGetComputeMode).
inline constexpr unsigned int kComputeModeDefault = 0;
inline constexpr unsigned int kComputeModeExclusiveProcess = 3;

// nvmlDeviceGetC2cModeInfoV: despite the V, an unversioned one-field struct (pynvml's
// c_nvmlC2cModeInfo_v1_t); zeus calls it to detect Grace Hopper boards.
struct nvmlC2cModeInfo_v1_t {
  unsigned int isC2cEnabled;
};

inline constexpr unsigned int kMemoryV2Version = struct_version(sizeof(nvmlMemory_v2_t), 2);
inline constexpr unsigned int kTemperatureV1Version =
    struct_version(sizeof(nvmlTemperature_v1_t), 1);
inline constexpr unsigned int kPowerValueV2Version = struct_version(sizeof(nvmlPowerValue_v2_t), 2);
inline constexpr unsigned int kProcessDetailListV1Version =
    struct_version(sizeof(nvmlProcessDetailList_v1_t), 1);

// NVML_NVLINK_MAX_LINKS: link indices 0..17 (docs/nvml-notes.md §5.14).
inline constexpr unsigned int kNvlinkMaxLinks = 18;
// nvmlNvLinkErrorCounter_t (docs/nvml-notes.md §5.14).
inline constexpr unsigned int kNvlinkErrorDlReplay = 0;
inline constexpr unsigned int kNvlinkErrorDlRecovery = 1;
inline constexpr unsigned int kNvlinkErrorDlCrcFlit = 2;
inline constexpr unsigned int kNvlinkErrorDlCrcData = 3;

// Events (docs/nvml-notes.md §5.13): nvmlEventSetWait_v2 fills one of these per event.
inline constexpr unsigned long long kEventTypeXidCriticalError = 0x0000000000000008ULL;
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID number, for kEventTypeXidCriticalError
  unsigned int gpuInstanceId;    // MIG: the instance the XID is attributed to
  unsigned int computeInstanceId;
};

// Sizes and offsets compiled from the real header (docs/nvml-notes.md §5.4).
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(sizeof(nvmlMemory_v2_t) == 40);
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24);
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16);
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(offsetof(nvmlFieldValue_t, value) == 32);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(offsetof(nvmlEventData_t, eventData) == 16);
static_assert(kMemoryV2Version == 0x02000028U);
static_assert(kTemperatureV1Version == 0x0100000CU);
static_assert(kPowerValueV2Version == 0x0200000CU);

}  // namespace joules::nvml
