#include "devices/device_scope.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "devices/scope_parts.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules {
namespace {

using scope::family;
using scope::parse_index;

struct vendor_prefix {
  std::string_view prefix;
  family f;
};
constexpr vendor_prefix kPrefixes[] = {
    {"nvidia:", family::nvidia}, {"amd:", family::amd}, {"intel:", family::intel}};

std::vector<family> families_present(const std::vector<device_info>& devices) {
  std::vector<family> out;
  for (const auto& d : devices) {
    const family f = scope::family_of(d);
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  return out;
}

std::string index_list(const std::vector<device_info>& devices,
                       const std::vector<std::size_t>& among) {
  if (among.empty()) return "none";
  std::vector<unsigned> idx;
  for (std::size_t i : among)
    idx.push_back(devices[i].index);
  std::sort(idx.begin(), idx.end());
  const bool contiguous = idx.back() - idx.front() + 1 == idx.size();
  if (contiguous && idx.size() > 2) return fmt::format("{}-{}", idx.front(), idx.back());
  return fmt::format("{}", fmt::join(idx, ", "));
}

// On a node of several vendors: "nvidia:0-3, amd:0, amd:1".
std::string machine_indices(const std::vector<device_info>& devices) {
  std::vector<std::string> parts;
  for (const auto& p : kPrefixes) {
    const auto m = scope::members(devices, p.f);
    if (m.empty()) continue;
    const std::string list = index_list(devices, m);
    if (list.find('-') != std::string::npos || m.size() == 1) {
      parts.push_back(fmt::format("{}{}", p.prefix, list));
      continue;
    }
    for (std::size_t i : m)
      parts.push_back(fmt::format("{}{}", p.prefix, devices[i].index));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::size_t> all_of(const std::vector<device_info>& devices) {
  std::vector<std::size_t> out(devices.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = i;
  return out;
}

scope_result from_gpus_option(const std::vector<device_info>& devices, const std::string& value,
                              const scope::resolver& r) {
  scope_result out{{}, "--gpus", value, {}, {}};
  if (value == "all") {
    out.devices = all_of(devices);
    return out;
  }
  const auto present = families_present(devices);
  const bool several = present.size() > 1;
  const std::string indices =
      several ? machine_indices(devices) : index_list(devices, all_of(devices));
  const std::string accepted = fmt::format(
      "expected all, or a comma-separated list of GPU indices ({}), UUIDs (GPU-...) or PCI bus ids",
      indices);
  std::vector<std::size_t> named_as_itself;  // devices named other than by a MIG instance
  for (const auto& raw : split(value, ',')) {
    std::string_view token = trim(raw);
    if (token.empty())
      throw usage_error(fmt::format("--gpus '{}': empty entry; {}", value, accepted));
    std::vector<std::size_t> among = all_of(devices);
    bool prefixed = false;
    for (const auto& p : kPrefixes) {
      if (token.starts_with(p.prefix)) {
        token.remove_prefix(p.prefix.size());
        among = scope::members(devices, p.f);
        prefixed = true;
      }
    }
    if (!prefixed && several && parse_index(token)) {
      throw usage_error(fmt::format(
          "--gpus '{}': GPU indices are per vendor on this node; name it as VENDOR:INDEX ({})",
          value, indices));
    }
    const auto found = r.resolve(token, among);
    if (!found) {
      if (token.find('-') != std::string_view::npos &&
          parse_index(token.substr(0, token.find('-')))) {
        throw usage_error(fmt::format("--gpus '{}': ranges such as '{}' are not accepted; {}",
                                      value, token, accepted));
      }
      if (parse_index(token)) {
        throw usage_error(fmt::format("--gpus '{}': no GPU has index {}; this machine's GPUs: {}",
                                      value, token, indices));
      }
      throw usage_error(fmt::format("--gpus '{}': '{}' names no GPU of this machine; {}", value,
                                    token, accepted));
    }
    // Several MIG instances of one GPU name that GPU, measured once; the GPU itself named twice
    // is a mistake.
    const bool mig = token.starts_with("MIG-");
    const bool as_itself =
        std::find(named_as_itself.begin(), named_as_itself.end(), *found) != named_as_itself.end();
    if (!mig) named_as_itself.push_back(*found);
    if (std::find(out.devices.begin(), out.devices.end(), *found) != out.devices.end()) {
      if (mig || !as_itself) continue;
      throw usage_error(
          fmt::format("--gpus '{}': GPU {} is named twice", value, devices[*found].index));
    }
    out.devices.push_back(*found);
  }
  return out;
}

scope::part from_cuda_visible(const std::string& value, const scope::resolver& r,
                              const std::vector<std::size_t>& among) {
  scope::part out;
  out.source = "CUDA_VISIBLE_DEVICES";
  out.value = value;
  for (const auto& raw : split(value, ',')) {
    const std::string_view token = trim(raw);
    const auto found = token.empty() ? std::nullopt : r.resolve(token, among);
    if (!found) {
      if (!token.empty()) {
        out.notes.push_back(fmt::format(
            "CUDA_VISIBLE_DEVICES entry '{}' names no GPU here; as CUDA does, the list ends there",
            token));
      }
      break;
    }
    // Two MIG instances of one GPU name the same device: measure it once.
    if (std::find(out.devices.begin(), out.devices.end(), *found) == out.devices.end()) {
      out.devices.push_back(*found);
    }
  }
  out.none_left = fmt::format(
      "CUDA_VISIBLE_DEVICES='{}' lets this job use no GPU, so there is nothing to measure; "
      "name GPUs with --gpus (e.g. --gpus all)",
      value);
  return out;
}

scope::part from_nvidia_visible(const std::string& value, const scope::resolver& r,
                                const std::vector<std::size_t>& among) {
  scope::part out;
  out.source = "NVIDIA_VISIBLE_DEVICES";
  out.value = value;
  out.none_left = fmt::format(
      "NVIDIA_VISIBLE_DEVICES='{}' lets this job use no GPU, so there is nothing to measure; "
      "name GPUs with --gpus (e.g. --gpus all)",
      value);
  const std::string v = scope::lower(trim(value));
  if (v == "all") {
    out.devices = among;
    return out;
  }
  const auto tokens = split(value, ',');
  // Inside a container the runtime already narrowed NVML's view to these devices, and their host
  // indices no longer match NVML's: a list of as many indices as there are devices is all of them.
  const bool all_indices = std::all_of(tokens.begin(), tokens.end(), [](const std::string& t) {
    return parse_index(trim(t)).has_value();
  });
  if (all_indices && tokens.size() == among.size()) {
    out.devices = among;
    return out;
  }
  if (v != "none" && v != "void" && !v.empty()) {
    for (const auto& raw : tokens) {
      const auto found = r.resolve(trim(raw), among);
      if (!found) {
        out.notes.push_back(
            fmt::format("NVIDIA_VISIBLE_DEVICES entry '{}' names no GPU here; ignored", trim(raw)));
        continue;
      }
      if (std::find(out.devices.begin(), out.devices.end(), *found) == out.devices.end()) {
        out.devices.push_back(*found);
      }
    }
  }
  return out;
}

scope::part nvidia_part(const scope::resolver& r, const std::vector<std::size_t>& nvidia,
                        const scope_request& q) {
  if (q.cuda_visible_devices) return from_cuda_visible(*q.cuda_visible_devices, r, nvidia);
  if (q.nvidia_visible_devices) return from_nvidia_visible(*q.nvidia_visible_devices, r, nvidia);
  scope::part all;
  all.devices = nvidia;
  return all;
}

scope_result combine(std::vector<std::pair<std::string_view, scope::part>> parts) {
  scope_result out;
  std::vector<std::string> sources;
  std::vector<std::string> values;
  bool restricted = false;
  for (auto& [vendor, p] : parts) {
    out.devices.insert(out.devices.end(), p.devices.begin(), p.devices.end());
    out.notes.insert(out.notes.end(), p.notes.begin(), p.notes.end());
    restricted = restricted || p.source != "all devices";
  }
  if (out.devices.empty()) {
    for (const auto& [vendor, p] : parts) {
      if (!p.none_left.empty()) throw usage_error(p.none_left);
    }
    throw usage_error(
        "this job may use no GPU, so there is nothing to measure; name GPUs with --gpus");
  }
  if (parts.size() == 1 || !restricted) {
    const scope::part& only = parts.front().second;
    out.source = restricted ? only.source : "all devices";
    out.value = restricted ? only.value : "";
    return out;
  }
  for (const auto& [vendor, p] : parts) {
    if (p.source == "all devices") {
      sources.push_back(fmt::format("all {} GPUs", vendor));
    } else {
      sources.push_back(p.source);
      values.push_back(fmt::format("{}={}", p.source, p.value));
    }
  }
  out.source = fmt::format("{}", fmt::join(sources, ", "));
  out.value = fmt::format("{}", fmt::join(values, " "));
  return out;
}

// The MIG instances among the entries of `value` (--gpus, or CUDA_VISIBLE_DEVICES up to the
// first entry that names no chosen GPU, where CUDA stops reading) that named a chosen GPU, each
// with a note that its GPU's energy is measured whole.
void note_mig_choices(const scope::resolver& r, const std::string& value, bool cuda,
                      scope_result& out) {
  std::vector<std::size_t> among;
  for (std::size_t i : out.devices) {
    if (scope::family_of(r.devices[i]) == family::nvidia) among.push_back(i);
  }
  if (among.empty()) return;
  for (const auto& raw : split(value, ',')) {
    const std::string_view token = trim(raw);
    const bool mig = token.starts_with("MIG-");
    const auto found = token.empty() || (!cuda && !mig) ? std::nullopt : r.resolve(token, among);
    if (!found) {
      if (cuda) break;
      continue;
    }
    if (!mig) continue;
    const device_info& d = r.devices[*found];
    out.mig.push_back({*found, d.key(), std::string(token)});
    out.notes.push_back(fmt::format(
        "{} is a MIG instance of {} ({}): joules measures that whole GPU, whose power and energy "
        "every instance on it shares",
        token, gpu_name(d), d.key()));
  }
}

}  // namespace

scope_result select_devices(const std::vector<device_info>& devices, const scope_request& request,
                            const mig_parent_fn& mig_parent) {
  const scope::resolver r{devices, mig_parent};
  if (request.gpus) {
    scope_result out = from_gpus_option(devices, *request.gpus, r);
    note_mig_choices(r, *request.gpus, /*cuda=*/false, out);
    return out;
  }
  const auto nvidia = scope::members(devices, family::nvidia);
  const auto amd = scope::members(devices, family::amd);
  const auto intel = scope::members(devices, family::intel);
  std::vector<std::pair<std::string_view, scope::part>> parts;
  if (!nvidia.empty()) parts.emplace_back("NVIDIA", nvidia_part(r, nvidia, request));
  if (!amd.empty()) parts.emplace_back("AMD", scope::amd_part(r, amd, request, !nvidia.empty()));
  if (!intel.empty()) parts.emplace_back("Intel", scope::intel_part(r, intel, request));
  if (parts.empty()) return scope_result{{}, "all devices", "", {}, {}};
  scope_result out = combine(std::move(parts));
  if (request.cuda_visible_devices && !nvidia.empty()) {
    note_mig_choices(r, *request.cuda_visible_devices, /*cuda=*/true, out);
  }
  return out;
}

scope_request job_scope_request(std::optional<std::string> gpus) {
  const auto raw = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  };
  scope_request r;
  r.gpus = std::move(gpus);
  r.cuda_visible_devices = raw("CUDA_VISIBLE_DEVICES");
  r.nvidia_visible_devices = raw("NVIDIA_VISIBLE_DEVICES");
  r.rocr_visible_devices = raw("ROCR_VISIBLE_DEVICES");
  r.hip_visible_devices = raw("HIP_VISIBLE_DEVICES");
  r.ze_affinity_mask = raw("ZE_AFFINITY_MASK");
  r.ze_flat_device_hierarchy = raw("ZE_FLAT_DEVICE_HIERARCHY");
  return r;
}

}  // namespace joules
