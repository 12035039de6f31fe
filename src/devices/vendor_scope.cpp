// Tokens and the variables of the AMD and Intel runtimes (device_scope.hpp says which).

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "devices/scope_parts.hpp"
#include "util/strings.hpp"

namespace joules::scope {

std::optional<unsigned> parse_index(std::string_view s) {
  unsigned v = 0;
  if (s.empty() || s.size() > 6) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::array<unsigned long, 4>> parse_pci(std::string_view s) {
  std::array<unsigned long, 4> parts{};
  const char* p = s.data();
  const char* end = s.data() + s.size();
  for (int i = 0; i < 4; ++i) {
    const auto [next, ec] = std::from_chars(p, end, parts[static_cast<std::size_t>(i)], 16);
    if (ec != std::errc()) return std::nullopt;
    p = next;
    const char want = i < 2 ? ':' : (i == 2 ? '.' : '\0');
    if (want == '\0') break;
    if (p == end || *p != want) return std::nullopt;
    ++p;
  }
  if (p != end) return std::nullopt;
  return parts;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

family family_of(const device_info& d) {
  if (d.vendor == "amd") return family::amd;
  if (d.vendor == "intel") return family::intel;
  return family::nvidia;
}

std::vector<std::size_t> members(const std::vector<device_info>& devices, family f) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (family_of(devices[i]) == f) out.push_back(i);
  }
  return out;
}

std::optional<std::size_t> resolver::by_uuid(std::string_view uuid,
                                             const std::vector<std::size_t>& among) const {
  const std::string want = lower(uuid);
  std::optional<std::size_t> found;
  bool ambiguous = false;
  auto consider = [&](std::size_t i) -> bool {
    const device_info& d = devices[i];
    std::vector<std::string> names{lower(d.uuid)};
    // ROCr writes AMD's UUIDs as GPU-<uuid>.
    if (family_of(d) == family::amd) names.push_back("gpu-" + lower(d.uuid));
    for (const auto& a : d.aliases)
      names.push_back(lower(a));
    for (const auto& have : names) {
      if (have.empty()) continue;
      if (have == want) return true;
      // CUDA accepts abbreviated UUIDs: a unique prefix names the device.
      if (want.size() >= 8 && have.starts_with(want)) {
        if (found && *found != i) ambiguous = true;
        found = i;
      }
    }
    return false;
  };
  if (among.empty()) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (consider(i)) return i;
    }
  } else {
    for (std::size_t i : among) {
      if (consider(i)) return i;
    }
  }
  if (ambiguous) return std::nullopt;
  return found;
}

std::optional<std::size_t> resolver::by_index(unsigned n,
                                              const std::vector<std::size_t>& among) const {
  for (std::size_t i : among) {
    if (devices[i].index == n) return i;
  }
  // An AMD compute partition is measured as its GPU (as a MIG instance is).
  for (std::size_t i : among) {
    const auto& p = devices[i].partition_indices;
    if (family_of(devices[i]) == family::amd && std::find(p.begin(), p.end(), n) != p.end())
      return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> resolver::resolve(std::string_view token,
                                             const std::vector<std::size_t>& among) const {
  if (auto n = parse_index(token)) return by_index(*n, among);
  auto within = [&](std::optional<std::size_t> i) -> std::optional<std::size_t> {
    if (!i || std::find(among.begin(), among.end(), *i) == among.end()) return std::nullopt;
    return i;
  };
  if (token.starts_with("MIG-GPU-")) {
    // Old form MIG-GPU-<uuid>/<gi>/<ci>: the parent UUID is spelled out.
    const auto slash = token.find('/');
    return within(
        by_uuid(token.substr(4, slash == std::string_view::npos ? token.npos : slash - 4), among));
  }
  if (token.starts_with("MIG-")) {
    if (!mig_parent) return std::nullopt;
    const auto parent = mig_parent(token);
    return parent ? within(by_uuid(*parent, among)) : std::nullopt;
  }
  if (auto pci = parse_pci(token)) {
    for (std::size_t i : among) {
      if (parse_pci(devices[i].pci_bus_id) == pci) return i;
    }
    return std::nullopt;
  }
  if (token.size() >= 8) return within(by_uuid(token, among));
  return std::nullopt;
}

namespace {

// An AMD device as a runtime enumerates it: a compute partition, or the GPU itself.
struct logical {
  unsigned index;
  std::size_t device;
};

std::vector<logical> logical_devices(const std::vector<device_info>& devices,
                                     const std::vector<std::size_t>& amd) {
  std::vector<logical> out;
  for (std::size_t i : amd) {
    const device_info& d = devices[i];
    if (d.partition_indices.empty()) out.push_back({d.index, i});
    for (unsigned p : d.partition_indices)
      out.push_back({p, i});
  }
  std::sort(out.begin(), out.end(),
            [](const logical& a, const logical& b) { return a.index < b.index; });
  return out;
}

void push_unique(std::vector<logical>& out, const logical& l) {
  for (const auto& o : out) {
    if (o.index == l.index && o.device == l.device) return;
  }
  out.push_back(l);
}

std::string no_gpu_left(std::string_view name, std::string_view value) {
  return fmt::format(
      "{}='{}' lets this job use no GPU, so there is nothing to measure; name GPUs with --gpus "
      "(e.g. --gpus all)",
      name, value);
}

}  // namespace

part amd_part(const resolver& r, const std::vector<std::size_t>& amd, const scope_request& q,
              bool node_has_nvidia) {
  part out;
  std::vector<logical> visible = logical_devices(r.devices, amd);
  std::vector<std::string> names;
  std::vector<std::string> values;
  if (q.rocr_visible_devices) {
    // ROCr: the devices it exposes, by index or UUID; others are left out.
    const std::vector<logical> all = visible;
    visible.clear();
    for (const auto& raw : split(*q.rocr_visible_devices, ',')) {
      const std::string_view token = trim(raw);
      if (token.empty()) continue;
      bool matched = false;
      const auto n = parse_index(token);
      const auto d = n ? std::nullopt : r.by_uuid(token, amd);
      for (const auto& l : all) {
        if ((n && l.index == *n) || (d && l.device == *d)) {
          push_unique(visible, l);
          matched = true;
        }
      }
      if (!matched) {
        out.notes.push_back(
            fmt::format("ROCR_VISIBLE_DEVICES entry '{}' names no AMD GPU here; ignored", token));
      }
    }
    names.emplace_back("ROCR_VISIBLE_DEVICES");
    values.push_back(*q.rocr_visible_devices);
  }
  // HIP numbers what ROCr left, and reads CUDA_VISIBLE_DEVICES as well, which on a node with
  // NVIDIA GPUs is taken to be meant for them.
  std::optional<std::pair<std::string, std::string>> hip;
  if (q.hip_visible_devices) {
    hip.emplace("HIP_VISIBLE_DEVICES", *q.hip_visible_devices);
  } else if (q.cuda_visible_devices && !node_has_nvidia) {
    hip.emplace("CUDA_VISIBLE_DEVICES", *q.cuda_visible_devices);
  }
  if (hip) {
    std::vector<logical> chosen;
    for (const auto& raw : split(hip->second, ',')) {
      const std::string_view token = trim(raw);
      const auto n = parse_index(token);
      const auto d = (n || token.empty()) ? std::nullopt : r.by_uuid(token, amd);
      bool matched = false;
      if (n && *n < visible.size()) {
        push_unique(chosen, visible[*n]);
        matched = true;
      }
      for (const auto& l : visible) {
        if (d && l.device == *d) {
          push_unique(chosen, l);
          matched = true;
        }
      }
      if (!matched) {
        if (!token.empty()) {
          out.notes.push_back(
              fmt::format("{} entry '{}' names no AMD GPU here; as HIP does, the list ends there",
                          hip->first, token));
        }
        break;
      }
    }
    visible = std::move(chosen);
    names.push_back(hip->first);
    values.push_back(hip->second);
  }
  for (const auto& l : visible) {
    if (std::find(out.devices.begin(), out.devices.end(), l.device) == out.devices.end())
      out.devices.push_back(l.device);
  }
  if (!names.empty()) {
    out.source = fmt::format("{}", fmt::join(names, " and "));
    out.value =
        values.size() == 1 ? values.front() : fmt::format("{}; {}", values.front(), values.back());
    out.none_left = no_gpu_left(names.back(), values.back());
  }
  return out;
}

part intel_part(const resolver& r, const std::vector<std::size_t>& intel, const scope_request& q) {
  part out;
  if (!q.ze_affinity_mask || trim(*q.ze_affinity_mask).empty()) {
    out.devices = intel;  // no mask (or an empty one): every device
    return out;
  }
  if (std::all_of(intel.begin(), intel.end(),
                  [&](std::size_t i) { return r.devices[i].visibility_applied; })) {
    out.devices = intel;  // the loader listed the masked devices only
    out.source = "ZE_AFFINITY_MASK";
    out.value = *q.ze_affinity_mask;
    return out;
  }
  const std::string hierarchy = lower(trim(q.ze_flat_device_hierarchy.value_or("FLAT")));
  const bool flat = hierarchy != "composite" && hierarchy != "combined";
  for (const auto& raw : split(*q.ze_affinity_mask, ',')) {
    const std::string_view token = trim(raw);
    const auto dot = token.find('.');
    const auto n = parse_index(token.substr(0, dot));
    const bool stack = dot != std::string_view::npos;
    const bool stack_ok = !stack || parse_index(token.substr(dot + 1)).has_value();
    std::optional<std::size_t> found;
    if (n && stack_ok && !(flat && stack)) {
      for (std::size_t i : intel) {
        const device_info& d = r.devices[i];
        const auto& p = d.partition_indices;
        // FLAT: N counts stacks; COMPOSITE and COMBINED: N is the card, N.M its stack M.
        const bool hit =
            flat ? (p.empty() ? d.index == *n : std::find(p.begin(), p.end(), *n) != p.end())
                 : d.index == *n;
        if (hit) found = i;
      }
    }
    if (!found) {
      out.notes.push_back(fmt::format(
          "ZE_AFFINITY_MASK entry '{}' names no Intel GPU here ({} device hierarchy); ignored",
          token, flat ? "FLAT" : "COMPOSITE"));
      continue;
    }
    if (std::find(out.devices.begin(), out.devices.end(), *found) == out.devices.end())
      out.devices.push_back(*found);
  }
  out.source = "ZE_AFFINITY_MASK";
  out.value = *q.ze_affinity_mask;
  out.none_left = no_gpu_left(out.source, out.value);
  return out;
}

}  // namespace joules::scope
