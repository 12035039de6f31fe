#include "backends/amdsmi/amd_decode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <tuple>

namespace joules::amd {
namespace {

template <class T>
T at(std::span<const std::byte> buf, std::size_t offset) {
  T v{};
  if (offset + sizeof(T) <= buf.size()) std::memcpy(&v, buf.data() + offset, sizeof(T));
  return v;
}

// "Not supported" as AMD SMI writes it: UINT32_MAX in its own fields (26.x says so), and
// 0xFFFF where a field copies a 16-bit metric that the firmware does not fill.
std::optional<std::uint32_t> supported(std::uint32_t v) {
  if (v == 0xFFFFFFFFU || v == 0xFFFFU) return std::nullopt;
  return v;
}

// The offsets of the fields read from amdsmi_violation_status_t: its active_* flags follow 8
// accumulated counters and 5 percentages in 24.7, and one more of each in 26.1.
struct violation_layout {
  std::size_t active_prochot;  // then ppt, socket, vr, hbm: one byte each
};

std::optional<violation_layout> violation_layout_of(lib_version v) {
  if (v.major == 24 && v.minor >= 7) return violation_layout{104};
  if (v.number() >= 2601) return violation_layout{120};
  return std::nullopt;
}

// Where amdsmi_asic_info_t::asic_serial lies: after a market name of 64 bytes (up to 24.5) or
// 256 (from 24.6), and, from 23.4, a vendor name of 64 bytes (256 in 26.x).
std::optional<std::pair<std::size_t, std::size_t>> serial_place(lib_version v) {
  const unsigned n = v.number();
  if (n < 2304) return std::make_pair(std::size_t{84}, std::size_t{32});
  if (n < 2406) return std::make_pair(std::size_t{148}, std::size_t{32});
  if (n < 2500) return std::make_pair(std::size_t{340}, std::size_t{32});
  if (n >= 2601) return std::make_pair(std::size_t{532}, std::size_t{256});
  return std::nullopt;
}

}  // namespace

lib_version decode_version(std::span<const std::byte> buf) {
  const auto w0 = at<std::uint32_t>(buf, 0);
  const auto w1 = at<std::uint32_t>(buf, 4);
  const auto w2 = at<std::uint32_t>(buf, 8);
  // Both layouts start with three 32-bit numbers: year, major, minor (the version string of
  // 24.x reads year.major.minor.release) or major, minor, release.
  return lib_version{w0, w1, w2};
}

power_fields decode_power_info(std::span<const std::byte> buf, lib_version v) {
  power_fields p;
  const unsigned n = v.number();
  if (n < 2304) {  // ROCm 5.7: average_socket_power first
    p.average_w = supported(at<std::uint32_t>(buf, 0));
  } else if (n < 2500) {  // ROCm 6.0 to 6.3: current, then average
    p.current_w = supported(at<std::uint32_t>(buf, 0));
    p.average_w = supported(at<std::uint32_t>(buf, 4));
  } else {  // ROCm 6.4 on: a 64-bit socket_power before them
    p.current_w = supported(at<std::uint32_t>(buf, 8));
    p.average_w = supported(at<std::uint32_t>(buf, 12));
    // In 25.x socket_power is filled on hosts of virtual machines only.
    const auto s = at<std::uint64_t>(buf, 0);
    if (n >= 2600 && s != 0xFFFFFFFFU && s != ~std::uint64_t{0}) p.socket_w = s;
  }
  return p;
}

clock_fields decode_clock_info(std::span<const std::byte> buf) {
  return clock_fields{at<std::uint32_t>(buf, 0), at<std::uint32_t>(buf, 4),
                      at<std::uint32_t>(buf, 8)};
}

unsigned pcie_generation_of(std::uint32_t mt_per_s) {
  switch (mt_per_s) {
    case 2500:
      return 1;
    case 5000:
      return 2;
    case 8000:
      return 3;
    case 16000:
      return 4;
    case 32000:
      return 5;
    case 64000:
      return 6;
    default:
      return 0;
  }
}

std::optional<pcie_fields> decode_pcie_info(std::span<const std::byte> buf, lib_version v) {
  if (v.number() < 2405) return std::nullopt;
  // pcie_static (96 bytes): max width (u16) at 0, max speed in MT/s at 4; pcie_metric from 96:
  // width (u16) at 96, speed at 100, replay count (u64) at 112.
  pcie_fields p;
  p.max_width = at<std::uint16_t>(buf, 0);
  p.max_generation = pcie_generation_of(at<std::uint32_t>(buf, 4));
  p.width = at<std::uint16_t>(buf, 96);
  p.generation = pcie_generation_of(at<std::uint32_t>(buf, 100));
  p.replays = at<std::uint64_t>(buf, 112);
  if (p.width == 0xFFFF || p.max_width == 0xFFFF) return std::nullopt;
  return p;
}

std::optional<clock_events> decode_violation_status(std::span<const std::byte> buf, lib_version v) {
  const auto layout = violation_layout_of(v);
  if (!layout) return std::nullopt;
  // 1 active, 0 not, 0xFF unsupported.
  auto active = [&](std::size_t k) {
    return at<std::uint8_t>(buf, layout->active_prochot + k) == 1;
  };
  clock_events e;
  e.hw_thermal = active(0) || active(4);  // PROCHOT, HBM thermal
  e.sw_power_cap = active(1);             // package power tracking (PVIOL)
  e.sw_thermal = active(2);               // socket thermal (TVIOL)
  e.hw_slowdown = active(3);              // voltage regulator thermal
  // The bits of NVML's mask (docs/nvml-notes.md §7) that these stand for.
  e.raw = (e.sw_power_cap ? 0x4U : 0U) | (e.hw_slowdown ? 0x8U : 0U) | (e.sw_thermal ? 0x20U : 0U) |
          (e.hw_thermal ? 0x40U : 0U);
  return e;
}

std::optional<std::string> decode_asic_unique_id(std::span<const std::byte> buf, lib_version v) {
  const auto place = serial_place(v);
  if (!place) return std::nullopt;
  std::string s = leading_string(buf.subspan(std::min(place->first, buf.size())), place->second);
  if (s.starts_with("0x") || s.starts_with("0X")) s = s.substr(2);
  if (s.size() < 8 || s.size() > 16) return std::nullopt;
  for (char& c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string leading_string(std::span<const std::byte> buf, std::size_t max_len) {
  const std::size_t n = std::min(buf.size(), max_len);
  const auto* p = reinterpret_cast<const char*>(buf.data());
  return std::string(p, strnlen(p, n));
}

double counter_unit_uj(float reported) {
  if (reported == 15.3F) return kEnergyUnitUj;
  return static_cast<double>(reported);
}

pci_address from_amdsmi_bdf(std::uint64_t bdf) {
  pci_address a;
  a.function = static_cast<unsigned>(bdf & 0x7U);
  a.device = static_cast<unsigned>((bdf >> 3) & 0x1FU);
  a.bus = static_cast<unsigned>((bdf >> 8) & 0xFFU);
  a.domain = bdf >> 16;
  return a;
}

pci_address from_rsmi_bdfid(std::uint64_t bdfid) {
  pci_address a;
  a.function = static_cast<unsigned>(bdfid & 0x7U);
  a.device = static_cast<unsigned>((bdfid >> 3) & 0x1FU);
  a.bus = static_cast<unsigned>((bdfid >> 8) & 0xFFU);
  a.domain = bdfid >> 32;
  if (const auto p = static_cast<unsigned>((bdfid >> 28) & 0xFU); p != 0) a.partition = p;
  return a;
}

std::string format_pci(const pci_address& a) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.device, a.function);
}

std::vector<gpu_group> group_partitions(const std::vector<processor_place>& processors) {
  // Partitions are not PCI functions of their own (lspci does not list them); the libraries
  // give them their GPU's bus and device and the partition in the function (or, in ROCm SMI's
  // BDFID, bits 28-31).
  std::map<std::tuple<std::uint64_t, unsigned, unsigned>, std::size_t> by_place;
  std::vector<gpu_group> groups;
  for (std::size_t i = 0; i < processors.size(); ++i) {
    const pci_address& a = processors[i].pci;
    const auto key = std::make_tuple(a.domain, a.bus, a.device);
    auto [it, added] = by_place.try_emplace(key, groups.size());
    if (added) groups.push_back(gpu_group{i, {}});
    groups[it->second].members.push_back(i);
  }
  auto partition_of = [&](std::size_t i) {
    const processor_place& p = processors[i];
    return p.partition_id.value_or(p.pci.partition.value_or(p.pci.function));
  };
  for (auto& g : groups) {
    // Partition 0 is the primary: it reports the GPU's socket power and energy.
    g.primary = *std::min_element(
        g.members.begin(), g.members.end(),
        [&](std::size_t a, std::size_t b) { return partition_of(a) < partition_of(b); });
  }
  return groups;
}

}  // namespace joules::amd
