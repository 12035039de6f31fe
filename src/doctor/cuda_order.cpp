#include "doctor/cuda_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <numeric>

#include "util/strings.hpp"

namespace joules::doctor {
namespace {

// "00000000:18:00.0" as (domain, bus, device, function), for ordering.
std::array<unsigned long, 4> pci_key(const std::string& id) {
  std::array<unsigned long, 4> k{};
  const char* p = id.data();
  const char* end = id.data() + id.size();
  for (std::size_t i = 0; i < k.size() && p < end; ++i) {
    const auto [next, ec] = std::from_chars(p, end, k[i], 16);
    if (ec != std::errc()) break;
    p = next;
    if (p < end) ++p;  // ':' or '.'
  }
  return k;
}

std::optional<unsigned> index_of(std::string_view s) {
  unsigned v = 0;
  if (s.empty() || s.size() > 6) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The device a UUID (or a unique prefix of at least 8 characters, as CUDA accepts) names.
std::optional<std::size_t> by_uuid(const std::vector<device_info>& gpus, std::string_view uuid) {
  const std::string want = lower(uuid);
  std::optional<std::size_t> found;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::string have = lower(gpus[i].uuid);
    if (have == want) return i;
    if (want.size() >= 8 && have.starts_with(want)) {
      if (found) return std::nullopt;
      found = i;
    }
  }
  return found;
}

}  // namespace

cuda_mapping map_cuda(const std::vector<device_info>& gpus,
                      const std::optional<std::string>& device_order,
                      const std::optional<std::string>& visible_devices,
                      const mig_parent_fn& mig_parent) {
  cuda_mapping m;
  m.order_from_env = device_order.has_value() && !trim(*device_order).empty();
  m.order =
      m.order_from_env && trim(*device_order) == "PCI_BUS_ID" ? "PCI_BUS_ID" : "FASTEST_FIRST";
  m.visible = visible_devices;

  // CUDA's order of every GPU (before CUDA_VISIBLE_DEVICES).
  std::vector<std::size_t> order(gpus.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return pci_key(gpus[a].pci_bus_id) < pci_key(gpus[b].pci_bus_id);
  });
  if (m.order == "FASTEST_FIRST") {
    m.certain = std::all_of(gpus.begin(), gpus.end(),
                            [&](const device_info& d) { return d.name == gpus.front().name; });
  }
  // NVML's order: by its index.
  std::vector<std::size_t> nvml(gpus.size());
  std::iota(nvml.begin(), nvml.end(), 0);
  std::stable_sort(nvml.begin(), nvml.end(),
                   [&](std::size_t a, std::size_t b) { return gpus[a].index < gpus[b].index; });
  const bool same_order = order == nvml && m.certain;

  if (!visible_devices) {
    for (std::size_t k = 0; k < order.size(); ++k)
      m.devices.push_back(
          {static_cast<unsigned>(k), order[k], gpus[order[k]].index, gpus[order[k]].uuid});
    return m;
  }
  bool indices = false;
  for (const auto& raw : split(*visible_devices, ',')) {
    const std::string_view token = trim(raw);
    std::optional<std::size_t> found;
    if (auto n = index_of(token)) {
      indices = true;
      if (*n < order.size()) found = order[*n];
    } else if (token.starts_with("MIG-GPU-")) {
      const auto slash = token.find('/');
      found =
          by_uuid(gpus, token.substr(4, slash == std::string_view::npos ? token.npos : slash - 4));
    } else if (token.starts_with("MIG-")) {
      if (mig_parent) {
        if (const auto parent = mig_parent(token)) found = by_uuid(gpus, *parent);
      }
    } else if (token.starts_with("GPU-")) {
      found = by_uuid(gpus, token);
    }
    if (!found) {
      if (!token.empty()) {
        m.notes.push_back(fmt::format(
            "CUDA_VISIBLE_DEVICES entry '{}' names no GPU here; CUDA ignores it and the rest",
            token));
      }
      break;
    }
    // Two MIG instances of one GPU: CUDA numbers each, but both live on the same GPU.
    m.devices.push_back(
        {static_cast<unsigned>(m.devices.size()), *found, gpus[*found].index, gpus[*found].uuid});
  }
  m.visible_indices_ambiguous = indices && !same_order;
  return m;
}

}  // namespace joules::doctor
