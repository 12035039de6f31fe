#include "kubelet/pod_resources.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace joules::kubelet {
namespace {

// Protobuf encoding by hand, as the kubelet's reply is written (field numbers of
// pkg/apis/podresources/v1/api.proto, docs/kubernetes.md).
std::string pr_varint(std::uint64_t n) {
  std::string out;
  do {
    const auto b = static_cast<unsigned char>(n & 0x7fu);
    n >>= 7;
    out.push_back(static_cast<char>(n != 0 ? (b | 0x80u) : b));
  } while (n != 0);
  return out;
}

std::string pr_field(std::uint32_t number, const std::string& payload) {
  return pr_varint(number << 3 | 2u) + pr_varint(payload.size()) + payload;
}

std::string pr_devices(const std::string& resource, const std::vector<std::string>& ids) {
  std::string d = pr_field(1, resource);
  for (const auto& id : ids)
    d += pr_field(2, id);
  return d;
}

std::string pr_pod(const std::string& name, const std::string& ns, const std::string& containers) {
  return pr_field(1, pr_field(1, name) + pr_field(2, ns) + containers);
}

const std::string kGpu1 = "GPU-00000000-0000-4000-8000-000000000001";
const std::string kMig = "MIG-0c0c0c0c-0000-4000-9000-000000000003";

TEST(PodResources, DecodesPodsContainersAndDevicesInAnyOrder) {
  // The container's name after its devices, a topology and cpu_ids joules skips.
  const std::string topology = pr_field(3, pr_field(1, std::string("\x08\x01", 2)));
  const std::string container = pr_field(2, pr_devices("nvidia.com/gpu", {kGpu1}) + topology) +
                                std::string("\x18\x07", 2) + pr_field(1, "trainer");
  const std::string reply =
      pr_pod("train-0", "ml", pr_field(3, container)) +
      pr_pod("infer", "serving",
             pr_field(3, pr_field(1, "server") +
                             pr_field(2, pr_devices("nvidia.com/mig-1g.10gb", {kMig}))));
  const list_reply r = decode_list_response(reply);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].pod, "train-0");
  EXPECT_EQ(r.devices[0].pod_namespace, "ml");
  EXPECT_EQ(r.devices[0].container, "trainer");
  EXPECT_EQ(r.devices[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(r.devices[0].device_id, kGpu1);
  EXPECT_EQ(r.devices[1].container, "server");
  EXPECT_EQ(r.devices[1].device_id, kMig);
}

TEST(PodResources, AnEmptyReplyIsNoPods) {
  const list_reply r = decode_list_response("");
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.devices.empty());
}

TEST(PodResources, RefusesWhatIsNotTheMessage) {
  const std::string good = pr_pod(
      "p", "n", pr_field(3, pr_field(1, "c") + pr_field(2, pr_devices("nvidia.com/gpu", {kGpu1}))));
  // A length past the end, a varint of 11 bytes, a group, a string over 4096 bytes, a field
  // number 0, a message cut anywhere inside.
  const std::vector<std::string> bad = {
      std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x3f"
                  "ab",
                  12),
      std::string(11, '\xff'),
      std::string("\x0b", 1),
      pr_pod(std::string(5000, 'x'), "n", ""),
      std::string("\x02\x00", 2),
  };
  for (const auto& b : bad) {
    const list_reply r = decode_list_response(b);
    EXPECT_NE(r.error, "") << b.size();
    EXPECT_TRUE(r.devices.empty());
  }
  for (std::size_t cut = 1; cut < good.size(); ++cut) {
    const list_reply r = decode_list_response(good.substr(0, cut));
    EXPECT_NE(r.error, "") << cut;
    EXPECT_TRUE(r.devices.empty()) << cut;
  }
  // A string where a message should be is read as a message and refused when it is not one.
  EXPECT_NE(decode_list_response(pr_field(1,
                                          "\x0a\x05"
                                          "ab"))
                .error,
            "");
}

TEST(PodResources, UnwrapsOneUncompressedGrpcMessage) {
  EXPECT_EQ(grpc_message(std::string("\0\0\0\0\x02"
                                     "ab",
                                     7)),
            "ab");
  EXPECT_EQ(grpc_message(std::string("\0\0\0\0\0", 5)), "");
  EXPECT_FALSE(
      grpc_message(std::string("\x01\0\0\0\x02"
                               "ab",
                               7)));  // compressed
  EXPECT_FALSE(
      grpc_message(std::string("\0\0\0\0\x03"
                               "ab",
                               7)));  // short
  EXPECT_FALSE(
      grpc_message(std::string("\0\0\0\0\x01"
                               "ab",
                               7)));  // two messages
  EXPECT_FALSE(grpc_message(std::string("\0\0\0", 3)));
  EXPECT_FALSE(grpc_message(std::string("\0\xff\xff\xff\xff", 5)));
}

TEST(PodResources, MapsGpuAndMigDevicesToTheirContainers) {
  std::vector<device_assignment> d = {
      {"b", "ml", "c", "nvidia.com/gpu", kGpu1},
      {"a", "ml", "c", "nvidia.com/gpu", kGpu1 + "::1"},  // time-sliced: the same GPU
      {"a", "ml", "c", "nvidia.com/gpu", kGpu1 + "::2"},  // once per container
      {"m", "ml", "c", "nvidia.com/mig-1g.10gb", kMig},
      {"x", "ml", "c", "example.com/fpga", "GPU-2"},  // not a GPU resource
      {"y", "ml", "c", "nvidia.com/gpu", "::3"},      // no UUID
  };
  const device_pods p = pods_by_device(d);
  ASSERT_EQ(p.by_uuid.size(), 2u);
  const auto& gpu = p.owners(kGpu1);
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_EQ(gpu[0].pod, "a");
  EXPECT_EQ(gpu[1].pod, "b");
  ASSERT_EQ(p.owners(kMig).size(), 1u);
  EXPECT_EQ(p.owners(kMig)[0].pod, "m");
  EXPECT_TRUE(p.owners("GPU-2").empty());
  EXPECT_TRUE(is_gpu_resource("nvidia.com/mig-3g.40gb"));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/gpu.shared"));
  EXPECT_EQ(device_uuid("GPU-1::4"), "GPU-1");
}

}  // namespace
}  // namespace joules::kubelet
