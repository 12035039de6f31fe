#include "backends/nvml/nvml_decode.hpp"
#include "backends/nvml/nvml_mig.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace joules::nvml {
namespace {

// A buffer of 32-byte slots holding `pids` as the driver would write them with `stride`.
std::vector<std::byte> written(const std::vector<unsigned>& pids, std::size_t stride,
                               unsigned long long memory = 1ULL << 30U) {
  std::vector<std::byte> buf(pids.size() * kProcessStrideDetail + 64);
  for (std::size_t i = 0; i < pids.size(); ++i) {
    std::memcpy(buf.data() + i * stride, &pids[i], sizeof(unsigned));
    const unsigned long long m = memory * (i + 1);
    std::memcpy(buf.data() + i * stride + 8, &m, sizeof m);
    if (stride == kProcessStrideDetail) {
      const unsigned long long zero = 0;  // usedGpuCcProtectedMemory
      std::memcpy(buf.data() + i * stride + 24, &zero, sizeof zero);
    }
  }
  return buf;
}

TEST(NvmlDecode, ProcessStrideIsDetectedFromTheEntries) {
  const std::vector<unsigned> pids = {4242, 4243, 4244};
  EXPECT_EQ(process_stride(written(pids, 24), 3), kProcessStrideV2);
  // The R535 layout read with the 24-byte stride puts a pid of 0 in the second entry.
  EXPECT_EQ(process_stride(written(pids, 32), 3), kProcessStrideDetail);
  // One entry reads the same under both strides.
  EXPECT_EQ(process_stride(written({7}, 32), 1), kProcessStrideV2);
}

TEST(NvmlDecode, ProcessesKeepPidMemoryAndKind) {
  const auto buf = written({4242, 4243}, 32);
  const auto list = decode_processes(buf, 2, kProcessStrideDetail, /*graphics=*/true);
  ASSERT_EQ(list.size(), 2U);
  EXPECT_EQ(list[0].pid, 4242U);
  EXPECT_EQ(list[1].pid, 4243U);
  EXPECT_EQ(list[1].used_memory_bytes, 2ULL << 30U);
  EXPECT_TRUE(list[0].graphics);
  // Decoding the 32-byte layout with the wrong stride would have produced garbage.
  const auto wrong = decode_processes(buf, 2, kProcessStrideV2, false);
  EXPECT_TRUE(wrong.size() != 2 || wrong[1].pid != 4243U);
}

TEST(NvmlDecode, UnavailableMemoryIsUnknownAndPidZeroIsSkipped) {
  auto buf = written({0, 99}, 24, ~0ULL);
  const unsigned long long na = ~0ULL;
  std::memcpy(buf.data() + 24 + 8, &na, sizeof na);
  const auto list = decode_processes(buf, 2, kProcessStrideV2, false);
  ASSERT_EQ(list.size(), 1U);
  EXPECT_EQ(list[0].pid, 99U);
  EXPECT_FALSE(list[0].used_memory_bytes.has_value());
}

TEST(NvmlDecode, DecodingNeverReadsPastTheBuffer) {
  const std::vector<std::byte> small(20);
  EXPECT_TRUE(decode_processes(small, 5, 24, false).empty());
  EXPECT_EQ(process_stride(small, 5), kProcessStrideV2);
}

TEST(NvmlDecode, GpmMetricsOnlyWhenTheySucceededWithRatesInBytes) {
  std::vector<nvmlGpmMetric_t> m(4);
  m[0].metricId = kGpmMetricSmUtil;
  m[0].value = 88.5;
  m[1].metricId = kGpmMetricAnyTensorUtil;
  m[1].nvmlReturn = kErrorNotSupported;
  m[1].value = 12.0;
  m[2].metricId = kGpmMetricPcieTxPerSec;
  m[2].value = 2.0;  // MiB/s
  m[3].metricId = kGpmMetricNvlinkTotalRxPerSec;
  m[3].value = 1.5;
  health_reading h;
  apply_gpm(m, h);
  EXPECT_EQ(h.sm_activity_percent, 88.5);
  EXPECT_FALSE(h.tensor_activity_percent.has_value());
  EXPECT_EQ(h.gpm_pcie_tx_bytes_per_s, 2.0 * 1024 * 1024);
  EXPECT_EQ(h.nvlink_rx_bytes_per_s, 1.5 * 1024 * 1024);
  EXPECT_FALSE(h.dram_bandwidth_percent.has_value());
}

TEST(NvmlDecode, CounterRatesAcrossWraps) {
  EXPECT_EQ(counter_rate(1000, 3000, 2.0), 1000.0);
  EXPECT_EQ(counter_rate(0xFFFFFF00ULL, 0x100ULL, 1.0), 0x200);  // a 32-bit counter wrapped
  EXPECT_EQ(counter_rate(~0ULL - 9, 10, 1.0), 20.0);             // a 64-bit one
  EXPECT_FALSE(counter_rate(1, 2, 0.0).has_value());
}

TEST(NvmlDecode, FieldValuesOfEveryType) {
  nvmlFieldValue_t v{};
  v.valueType = kValueTypeUnsignedLongLong;
  v.value.ullVal = 1ULL << 40U;
  EXPECT_EQ(field_as_u64(v), 1ULL << 40U);
  v.valueType = kValueTypeSignedLongLong;
  v.value.sllVal = -5;
  EXPECT_EQ(field_as_u64(v), 0U);
  v.valueType = kValueTypeDouble;
  v.value.dVal = 42.75;
  EXPECT_EQ(field_as_double(v), 42.75);
  EXPECT_EQ(field_as_u64(v), 42U);
  v.valueType = kValueTypeUnsignedInt;
  v.value.uiVal = 71;
  EXPECT_EQ(field_as_double(v), 71.0);
}

}  // namespace
}  // namespace joules::nvml

namespace joules::nvml {
namespace {

TEST(NvmlMig, ProfileIsTheWordAfterMigInTheDevicesName) {
  EXPECT_EQ(mig_profile_of("NVIDIA A100-SXM4-40GB MIG 1g.5gb"), "1g.5gb");
  EXPECT_EQ(mig_profile_of("NVIDIA H100 80GB HBM3 MIG 1g.10gb+me"), "1g.10gb+me");
  EXPECT_EQ(mig_profile_of("NVIDIA H100 80GB HBM3 MIG 3g.40gb extra"), "3g.40gb");
  EXPECT_EQ(mig_profile_of("NVIDIA H100 80GB HBM3"), "");
  EXPECT_EQ(mig_profile_of(""), "");
  EXPECT_EQ(mig_profile_of("x MIG "), "");
}

}  // namespace
}  // namespace joules::nvml
