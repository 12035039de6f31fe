// The decoding of what AMD SMI, ROCm SMI and Level Zero hand back (amd_decode.hpp, ze_health.hpp),
// with buffers laid out as the headers of each version lay them (docs/amd-notes.md §3).

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstring>

#include "backends/amdsmi/amd_decode.hpp"
#include "backends/levelzero/ze_abi.hpp"
#include "backends/levelzero/ze_health.hpp"

namespace joules {
namespace {

using buffer = std::array<std::byte, 1024>;

template <class T>
void put(buffer& b, std::size_t offset, T v) {
  std::memcpy(b.data() + offset, &v, sizeof v);
}

TEST(AmdDecode, TheVersionStructLostItsYearIn25) {
  buffer old{};
  put<std::uint32_t>(old, 0, 24);  // year
  put<std::uint32_t>(old, 4, 7);   // major
  put<std::uint32_t>(old, 8, 0);   // minor
  const auto v24 = amd::decode_version(old);
  EXPECT_EQ(v24.number(), 2407U);
  buffer fresh{};
  put<std::uint32_t>(fresh, 0, 26);
  put<std::uint32_t>(fresh, 4, 1);
  EXPECT_EQ(amd::decode_version(fresh).number(), 2601U);
}

TEST(AmdDecode, PowerInfoIsReadAtTheOffsetsOfEachVersion) {
  buffer b{};
  put<std::uint32_t>(b, 0, 450);  // 23.2: average_socket_power
  auto p = amd::decode_power_info(b, {23, 2, 0});
  EXPECT_EQ(p.average_w, 450U);
  EXPECT_FALSE(p.current_w);
  b = {};
  put<std::uint32_t>(b, 0, 700);  // 24.x: current, average
  put<std::uint32_t>(b, 4, 0xFFFF);
  p = amd::decode_power_info(b, {24, 7, 0});
  EXPECT_EQ(p.current_w, 700U);
  EXPECT_FALSE(p.average_w);  // a 16-bit metric the firmware does not fill
  b = {};
  put<std::uint64_t>(b, 0, 701);  // 26.x: socket_power, then current, average
  put<std::uint32_t>(b, 8, 700);
  put<std::uint32_t>(b, 12, 0xFFFFFFFF);
  p = amd::decode_power_info(b, {26, 1, 0});
  EXPECT_EQ(p.current_w, 700U);
  EXPECT_FALSE(p.average_w);
  EXPECT_EQ(p.socket_w, 701U);
}

TEST(AmdDecode, ReportedResolutionOf15Point3IsTheExactUnit) {
  EXPECT_EQ(amd::counter_unit_uj(15.3F), 1e6 / 65536.0);
  EXPECT_EQ(amd::counter_unit_uj(15.625F), 15.625);
}

TEST(AmdDecode, PciAddressesOfBothLibraries) {
  // amdsmi_bdf_t: function 0-2, device 3-7, bus 8-15, domain 16-63.
  const auto a = amd::from_amdsmi_bdf((std::uint64_t{1} << 16) | (0xc1 << 8) | (2 << 3) | 3);
  EXPECT_EQ(amd::format_pci(a), "0001:c1:02.3");
  // ROCm SMI's BDFID: domain 32-63, partition 28-31.
  const auto r = amd::from_rsmi_bdfid((std::uint64_t{2} << 32) | (5U << 28) | (0x0c << 8));
  EXPECT_EQ(amd::format_pci(r), "0002:0c:00.0");
  EXPECT_EQ(r.partition, 5U);
}

TEST(AmdDecode, PartitionsOfOneGpuAreGroupedAroundPartitionZero) {
  std::vector<amd::processor_place> p(5);
  for (unsigned i = 0; i < 4; ++i) {
    p[i].pci.bus = 0x0c;
    p[i].pci.function = 3 - i;  // enumerated in reverse
  }
  p[4].pci.bus = 0x1c;
  const auto groups = amd::group_partitions(p);
  ASSERT_EQ(groups.size(), 2U);
  EXPECT_EQ(groups[0].members, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(groups[0].primary, 3U);
  EXPECT_EQ(groups[1].members, (std::vector<std::size_t>{4}));
  p[0].partition_id = 0;  // the library's word wins over the function
  p[3].partition_id = 3;
  EXPECT_EQ(amd::group_partitions(p)[0].primary, 0U);
}

TEST(AmdDecode, ViolationStatusOnlyInTheLayoutsJoulesKnows) {
  buffer b{};
  put<std::uint8_t>(b, 105, 1);  // 24.7: active_ppt_pwr
  const auto e = amd::decode_violation_status(b, {24, 7, 0});
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->sw_power_cap);
  EXPECT_EQ(e->raw, 0x4U);
  EXPECT_FALSE(amd::decode_violation_status(b, {25, 0, 0}));
  EXPECT_FALSE(amd::decode_violation_status(b, {24, 6, 0}));
  buffer c{};
  put<std::uint8_t>(c, 120, 1);  // 26.1: active_prochot_thrm, after one more counter each
  EXPECT_TRUE(amd::decode_violation_status(c, {26, 1, 0})->hw_thermal);
}

TEST(AmdDecode, TheUniqueIdMovesWithTheStringsBeforeIt) {
  buffer b{};
  std::memcpy(b.data() + 340, "4B8AB6C15FD9E3A5", 17);  // 24.6 and later 24.x
  EXPECT_EQ(amd::decode_asic_unique_id(b, {24, 7, 0}), "4b8ab6c15fd9e3a5");
  EXPECT_FALSE(amd::decode_asic_unique_id(b, {24, 5, 0}));  // 148 there
  EXPECT_FALSE(amd::decode_asic_unique_id(b, {25, 0, 0}));  // a layout joules does not know
}

TEST(AmdDecode, PcieGenerationFromTheSpeed) {
  buffer b{};
  put<std::uint16_t>(b, 0, 16);
  put<std::uint32_t>(b, 4, 32000);
  put<std::uint16_t>(b, 96, 8);
  put<std::uint32_t>(b, 100, 16000);
  put<std::uint64_t>(b, 112, 3);
  const auto p = amd::decode_pcie_info(b, {24, 7, 0});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->max_generation, 5U);
  EXPECT_EQ(p->generation, 4U);
  EXPECT_EQ(p->width, 8U);
  EXPECT_EQ(p->replays, 3U);
  EXPECT_FALSE(amd::decode_pcie_info(b, {24, 4, 0}));
}

TEST(LevelZeroDecode, ThrottleReasonsInNvmlsBits) {
  const auto e = ze::decode_throttle_reasons(ze::kThrottleAvePowerCap | ze::kThrottleThermalLimit);
  EXPECT_TRUE(e.sw_power_cap);
  EXPECT_TRUE(e.hw_thermal);
  EXPECT_FALSE(e.hw_slowdown);
  EXPECT_EQ(e.raw, 0x44U);
  EXPECT_TRUE(ze::decode_throttle_reasons(ze::kThrottlePsuAlert).hw_power_brake);
}

}  // namespace
}  // namespace joules
