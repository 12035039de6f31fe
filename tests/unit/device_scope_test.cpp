#include "devices/device_scope.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace joules {
namespace {

std::vector<device_info> four_gpus() {
  std::vector<device_info> d(4);
  const char* uuids[] = {
      "GPU-1a2b3c4d-0000-4000-8000-000000000000", "GPU-1a2b3c4d-0000-4000-8000-000000000001",
      "GPU-77777777-0000-4000-8000-000000000002", "GPU-88888888-0000-4000-8000-000000000003"};
  for (unsigned i = 0; i < 4; ++i) {
    d[i].index = i;
    d[i].uuid = uuids[i];
    d[i].pci_bus_id = "00000000:" + std::to_string(18 + i) + ":00.0";
  }
  return d;
}

mig_parent_fn mig_to_gpu2() {
  return [](std::string_view mig) -> std::optional<std::string> {
    if (mig == "MIG-11111111-2222-3333-4444-555555555555")
      return "GPU-77777777-0000-4000-8000-000000000002";
    return std::nullopt;
  };
}

std::vector<std::size_t> pick(const scope_request& r) {
  return select_devices(four_gpus(), r, mig_to_gpu2()).devices;
}

TEST(DeviceScope, DefaultsToEveryDeviceWhenNothingRestricts) {
  const auto s = select_devices(four_gpus(), {}, mig_to_gpu2());
  EXPECT_EQ(s.devices, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(s.source, "all devices");
}

TEST(DeviceScope, GpusOptionAcceptsIndicesUuidsPrefixesPciAndMig) {
  scope_request r;
  r.gpus = "2,0";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{2, 0}));
  r.gpus = "GPU-88888888-0000-4000-8000-000000000003";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{3}));
  r.gpus = "GPU-7777";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{2}));
  r.gpus = "0000:19:00.0";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{1}));
  r.gpus = "MIG-11111111-2222-3333-4444-555555555555";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{2}));
  r.gpus = "all";
  EXPECT_EQ(pick(r).size(), 4U);
}

TEST(DeviceScope, GpusOptionWinsOverTheEnvironment) {
  scope_request r;
  r.gpus = "3";
  r.cuda_visible_devices = "0";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{3}));
}

void expect_usage_error(const scope_request& r, const std::string& fragment) {
  try {
    (void)pick(r);
    ADD_FAILURE() << "no error for " << r.gpus.value_or("<env>");
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DeviceScope, GpusOptionRejectsBadValuesWithTheValueAndWhatIsAccepted) {
  scope_request r;
  r.gpus = "0-3";
  expect_usage_error(r, "ranges such as '0-3' are not accepted");
  r.gpus = "7";
  expect_usage_error(r, "no GPU has index 7; this machine's GPUs: 0-3");
  r.gpus = "0,0";
  expect_usage_error(r, "GPU 0 is named twice");
  r.gpus = "1,GPU-1a2b3c4d-0000-4000-8000-000000000001";
  expect_usage_error(r, "GPU 1 is named twice");
  r.gpus = "0,";
  expect_usage_error(r, "empty entry");
  r.gpus = "GPU-1a2b3c4d";  // a prefix of two UUIDs
  expect_usage_error(r, "names no GPU");
  r.gpus = "banana";
  expect_usage_error(r, "expected all, or a comma-separated list");
}

TEST(DeviceScope, CudaVisibleDevicesIndicesUuidsAndMig) {
  scope_request r;
  r.cuda_visible_devices = "1, 3";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{1, 3}));
  r.cuda_visible_devices = "GPU-88888888";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{3}));
  r.cuda_visible_devices = "MIG-GPU-77777777-0000-4000-8000-000000000002/1/0";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{2}));
  // Two MIG instances of one GPU: that GPU, once.
  r.cuda_visible_devices =
      "MIG-11111111-2222-3333-4444-555555555555,MIG-GPU-77777777-0000-4000-8000-000000000002/2/0";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{2}));
}

TEST(DeviceScope, CudaVisibleDevicesEndsAtTheFirstInvalidEntryLikeCuda) {
  scope_request r;
  r.cuda_visible_devices = "0,9,1";
  const auto s = select_devices(four_gpus(), r, mig_to_gpu2());
  EXPECT_EQ(s.devices, (std::vector<std::size_t>{0}));
  ASSERT_EQ(s.notes.size(), 1U);
  EXPECT_NE(s.notes[0].find("'9'"), std::string::npos);
}

TEST(DeviceScope, EmptyOrInvalidCudaVisibleDevicesMeansNoGpuAndIsAnError) {
  scope_request r;
  r.cuda_visible_devices = "";
  expect_usage_error(r, "lets this job use no GPU");
  r.cuda_visible_devices = "-1";
  expect_usage_error(r, "lets this job use no GPU");
}

TEST(DeviceScope, NvidiaVisibleDevices) {
  scope_request r;
  r.nvidia_visible_devices = "all";
  EXPECT_EQ(pick(r).size(), 4U);
  // A container that exposes 4 host GPUs 4-7: NVML sees exactly those, renumbered 0-3.
  r.nvidia_visible_devices = "4,5,6,7";
  EXPECT_EQ(pick(r).size(), 4U);
  r.nvidia_visible_devices = "GPU-77777777-0000-4000-8000-000000000002";
  EXPECT_EQ(pick(r), (std::vector<std::size_t>{2}));
  r.nvidia_visible_devices = "void";
  expect_usage_error(r, "lets this job use no GPU");
}

}  // namespace
}  // namespace joules

namespace joules {
namespace {

// A node of two NVIDIA GPUs, two AMD ones (amd-smi numbers the first 0 and the four partitions of
// the second 1-4) and two Intel cards of two stacks each.
std::vector<device_info> mixed() {
  std::vector<device_info> d(6);
  for (unsigned i = 0; i < 2; ++i) {
    d[i].vendor = "nvidia";
    d[i].index = i;
    d[i].uuid = "GPU-aaaaaaaa-0000-4000-8000-00000000000" + std::to_string(i);
  }
  d[2].vendor = "amd";
  d[2].index = 0;
  d[2].uuid = "00ff74a1-0000-1000-8000-000000000000";
  d[2].aliases = {"GPU-4b8ab6c15fd9e300"};
  d[3].vendor = "amd";
  d[3].index = 1;
  d[3].uuid = "01ff74a1-0000-1000-8000-000000000001";
  d[3].partition_indices = {1, 2, 3, 4};
  for (unsigned i = 0; i < 2; ++i) {
    d[4 + i].vendor = "intel";
    d[4 + i].index = i;
    d[4 + i].uuid = "86000000-0000-0000-0000-00000000000" + std::to_string(i);
    d[4 + i].partition_indices = {2 * i, 2 * i + 1};
  }
  return d;
}

std::vector<std::size_t> pick_mixed(const scope_request& r) {
  return select_devices(mixed(), r, mig_parent_fn{}).devices;
}

TEST(VendorScope, EachVendorsVariablesChooseItsGpusOnly) {
  scope_request r;
  EXPECT_EQ(pick_mixed(r), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  r.cuda_visible_devices = "1";
  r.rocr_visible_devices = "3";  // a partition of the second AMD GPU
  r.ze_affinity_mask = "3";      // FLAT: the second card's second stack
  const auto s = select_devices(mixed(), r, mig_parent_fn{});
  EXPECT_EQ(s.devices, (std::vector<std::size_t>{1, 3, 5}));
  EXPECT_EQ(s.source, "CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK");
  EXPECT_EQ(s.value, "CUDA_VISIBLE_DEVICES=1 ROCR_VISIBLE_DEVICES=3 ZE_AFFINITY_MASK=3");
}

TEST(VendorScope, HipNumbersWhatRocrLeftAndReadsCudaVisibleDevicesOnlyWithoutNvidia) {
  scope_request r;
  r.rocr_visible_devices = "GPU-4b8ab6c15fd9e300,2";  // ROCr's UUID of GPU 0, partition 2
  r.hip_visible_devices = "1";
  EXPECT_EQ(pick_mixed(r), (std::vector<std::size_t>{0, 1, 3, 4, 5}));
  // AMD alone: HIP takes CUDA_VISIBLE_DEVICES as its own.
  auto amd_only = mixed();
  amd_only.erase(amd_only.begin(), amd_only.begin() + 2);
  amd_only.resize(2);
  scope_request q;
  q.cuda_visible_devices = "1";
  EXPECT_EQ(select_devices(amd_only, q, mig_parent_fn{}).devices, (std::vector<std::size_t>{1}));
  q.cuda_visible_devices = "GPU-00ff74a1-0000-1000-8000-000000000000";  // ROCr's spelling
  EXPECT_EQ(select_devices(amd_only, q, mig_parent_fn{}).devices, (std::vector<std::size_t>{0}));
}

TEST(VendorScope, ZeAffinityMaskUnderEachHierarchy) {
  scope_request r;
  r.ze_affinity_mask = "1";
  r.ze_flat_device_hierarchy = "COMPOSITE";
  EXPECT_EQ(pick_mixed(r), (std::vector<std::size_t>{0, 1, 2, 3, 5}));
  r.ze_affinity_mask = "0.1";
  EXPECT_EQ(pick_mixed(r), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  r.ze_flat_device_hierarchy.reset();  // FLAT: N.M means nothing there
  const auto s = select_devices(mixed(), r, mig_parent_fn{});
  EXPECT_EQ(s.devices, (std::vector<std::size_t>{0, 1, 2, 3}));
  ASSERT_EQ(s.notes.size(), 1U);
}

TEST(VendorScope, GpusTakesVendorIndexOnANodeOfSeveralVendors) {
  scope_request r;
  r.gpus = "amd:4,intel:1,nvidia:0";
  EXPECT_EQ(pick_mixed(r), (std::vector<std::size_t>{3, 5, 0}));
  r.gpus = "01ff74a1-0000";  // a UUID prefix of at least 8 characters
  EXPECT_EQ(pick_mixed(r), (std::vector<std::size_t>{3}));
  r.gpus = "0";
  try {
    (void)pick_mixed(r);
    ADD_FAILURE() << "a bare index on a node of several vendors";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("nvidia:0, nvidia:1, amd:0, amd:1, intel:0, intel:1"),
              std::string::npos)
        << e.what();
  }
}

TEST(VendorScope, NoVendorLeavingAGpuIsAnErrorAboutTheVariable) {
  scope_request r;
  auto amd_only = mixed();
  amd_only.erase(amd_only.begin(), amd_only.begin() + 2);
  amd_only.resize(2);
  r.rocr_visible_devices = "7";
  try {
    (void)select_devices(amd_only, r, mig_parent_fn{});
    ADD_FAILURE() << "no error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("ROCR_VISIBLE_DEVICES='7' lets this job use no GPU"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace joules

namespace joules {
namespace {

TEST(DeviceScope, MigEntriesNameTheirGpuAndSayItsEnergyIsShared) {
  scope_request r;
  r.cuda_visible_devices =
      "MIG-11111111-2222-3333-4444-555555555555,MIG-GPU-77777777-0000-4000-8000-000000000002/2/0,"
      "3";
  const auto s = select_devices(four_gpus(), r, mig_to_gpu2());
  EXPECT_EQ(s.devices, (std::vector<std::size_t>{2, 3}));
  ASSERT_EQ(s.mig.size(), 2u);
  EXPECT_EQ(s.mig[0].device, 2u);
  EXPECT_EQ(s.mig[0].gpu, "GPU-77777777-0000-4000-8000-000000000002");
  EXPECT_EQ(s.mig[0].mig, "MIG-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(s.mig[1].mig, "MIG-GPU-77777777-0000-4000-8000-000000000002/2/0");
  ASSERT_EQ(s.notes.size(), 2u);
  EXPECT_NE(s.notes[0].find("MIG instance of GPU 2"), std::string::npos) << s.notes[0];
  EXPECT_NE(s.notes[0].find("whole GPU"), std::string::npos) << s.notes[0];

  // Where CUDA stops reading, so does the MIG list.
  r.cuda_visible_devices = "3,GPU-nothing-here,MIG-11111111-2222-3333-4444-555555555555";
  const auto stopped = select_devices(four_gpus(), r, mig_to_gpu2());
  EXPECT_EQ(stopped.devices, (std::vector<std::size_t>{3}));
  EXPECT_TRUE(stopped.mig.empty());

  // --gpus: every MIG entry, whatever its place; a GPU named as itself is not a MIG choice.
  scope_request g;
  g.gpus = "0,MIG-11111111-2222-3333-4444-555555555555";
  const auto by_option = select_devices(four_gpus(), g, mig_to_gpu2());
  EXPECT_EQ(by_option.devices, (std::vector<std::size_t>{0, 2}));
  ASSERT_EQ(by_option.mig.size(), 1u);
  EXPECT_EQ(by_option.mig[0].device, 2u);
  // Two instances of one GPU, or the GPU and one of its instances: that GPU, once.
  g.gpus =
      "MIG-11111111-2222-3333-4444-555555555555,MIG-GPU-77777777-0000-4000-8000-000000000002/2/0";
  const auto two = select_devices(four_gpus(), g, mig_to_gpu2());
  EXPECT_EQ(two.devices, (std::vector<std::size_t>{2}));
  EXPECT_EQ(two.mig.size(), 2u);
  g.gpus = "2,MIG-11111111-2222-3333-4444-555555555555";
  EXPECT_EQ(select_devices(four_gpus(), g, mig_to_gpu2()).devices, (std::vector<std::size_t>{2}));
}

}  // namespace
}  // namespace joules
