#include "devices/device_scope.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules {
namespace {

std::optional<unsigned> parse_index(std::string_view s) {
  unsigned v = 0;
  if (s.empty() || s.size() > 6) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "0000:18:00.0" and "00000000:18:00.0" name the same device: compare numerically.
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

std::string index_list(const std::vector<device_info>& devices) {
  if (devices.empty()) return "none";
  std::vector<unsigned> idx;
  for (const auto& d : devices)
    idx.push_back(d.index);
  std::sort(idx.begin(), idx.end());
  const bool contiguous = idx.back() - idx.front() + 1 == idx.size();
  if (contiguous && idx.size() > 2) return fmt::format("{}-{}", idx.front(), idx.back());
  return fmt::format("{}", fmt::join(idx, ", "));
}

struct resolver {
  const std::vector<device_info>& devices;
  const mig_parent_fn& mig_parent;

  std::optional<std::size_t> by_uuid(std::string_view uuid) const {
    const std::string want = lower(uuid);
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const std::string have = lower(devices[i].uuid);
      if (have == want) return i;
      // CUDA accepts abbreviated UUIDs: a unique prefix names the device.
      if (want.size() >= 8 && have.starts_with(want)) {
        if (found) return std::nullopt;  // ambiguous
        found = i;
      }
    }
    return found;
  }

  // The device a token names, or nullopt.
  std::optional<std::size_t> resolve(std::string_view token) const {
    if (auto n = parse_index(token)) {
      for (std::size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].index == *n) return i;
      }
      return std::nullopt;
    }
    if (token.starts_with("MIG-GPU-")) {
      // Old form MIG-GPU-<uuid>/<gi>/<ci>: the parent UUID is spelled out.
      const auto slash = token.find('/');
      return by_uuid(token.substr(4, slash == std::string_view::npos ? token.npos : slash - 4));
    }
    if (token.starts_with("MIG-")) {
      if (!mig_parent) return std::nullopt;
      const auto parent = mig_parent(token);
      return parent ? by_uuid(*parent) : std::nullopt;
    }
    if (token.starts_with("GPU-") || token.starts_with("SIM-")) return by_uuid(token);
    if (auto pci = parse_pci(token)) {
      for (std::size_t i = 0; i < devices.size(); ++i) {
        if (parse_pci(devices[i].pci_bus_id) == pci) return i;
      }
    }
    return std::nullopt;
  }
};

std::vector<std::size_t> all_devices(const std::vector<device_info>& devices) {
  std::vector<std::size_t> out(devices.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = i;
  return out;
}

scope_result from_gpus_option(const std::vector<device_info>& devices, const std::string& value,
                              const resolver& r) {
  scope_result out{{}, "--gpus", value, {}};
  if (value == "all") {
    out.devices = all_devices(devices);
    return out;
  }
  const std::string accepted = fmt::format(
      "expected all, or a comma-separated list of GPU indices ({}), UUIDs (GPU-...) or PCI bus ids",
      index_list(devices));
  for (const auto& raw : split(value, ',')) {
    const std::string_view token = trim(raw);
    if (token.empty())
      throw usage_error(fmt::format("--gpus '{}': empty entry; {}", value, accepted));
    const auto found = r.resolve(token);
    if (!found) {
      if (token.find('-') != std::string_view::npos &&
          parse_index(token.substr(0, token.find('-')))) {
        throw usage_error(fmt::format("--gpus '{}': ranges such as '{}' are not accepted; {}",
                                      value, token, accepted));
      }
      if (parse_index(token)) {
        throw usage_error(fmt::format("--gpus '{}': no GPU has index {}; this machine's GPUs: {}",
                                      value, token, index_list(devices)));
      }
      throw usage_error(fmt::format("--gpus '{}': '{}' names no GPU of this machine; {}", value,
                                    token, accepted));
    }
    if (std::find(out.devices.begin(), out.devices.end(), *found) != out.devices.end()) {
      throw usage_error(
          fmt::format("--gpus '{}': GPU {} is named twice", value, devices[*found].index));
    }
    out.devices.push_back(*found);
  }
  return out;
}

scope_result from_cuda_visible(const std::string& value, const resolver& r) {
  scope_result out{{}, "CUDA_VISIBLE_DEVICES", value, {}};
  for (const auto& raw : split(value, ',')) {
    const std::string_view token = trim(raw);
    const auto found = token.empty() ? std::nullopt : r.resolve(token);
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
  if (out.devices.empty()) {
    throw usage_error(fmt::format(
        "CUDA_VISIBLE_DEVICES='{}' lets this job use no GPU, so there is nothing to measure; "
        "name GPUs with --gpus (e.g. --gpus all)",
        value));
  }
  return out;
}

scope_result from_nvidia_visible(const std::vector<device_info>& devices, const std::string& value,
                                 const resolver& r) {
  scope_result out{{}, "NVIDIA_VISIBLE_DEVICES", value, {}};
  const std::string v = lower(trim(value));
  if (v == "all") {
    out.devices = all_devices(devices);
    return out;
  }
  const auto tokens = split(value, ',');
  // Inside a container the runtime already narrowed NVML's view to these devices, and their host
  // indices no longer match NVML's: a list of as many indices as there are devices is all of them.
  const bool all_indices = std::all_of(tokens.begin(), tokens.end(), [](const std::string& t) {
    return parse_index(trim(t)).has_value();
  });
  if (all_indices && tokens.size() == devices.size()) {
    out.devices = all_devices(devices);
    return out;
  }
  if (v != "none" && v != "void" && !v.empty()) {
    for (const auto& raw : tokens) {
      const auto found = r.resolve(trim(raw));
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
  if (out.devices.empty()) {
    throw usage_error(fmt::format(
        "NVIDIA_VISIBLE_DEVICES='{}' lets this job use no GPU, so there is nothing to measure; "
        "name GPUs with --gpus (e.g. --gpus all)",
        value));
  }
  return out;
}

}  // namespace

scope_result select_devices(const std::vector<device_info>& devices, const scope_request& request,
                            const mig_parent_fn& mig_parent) {
  const resolver r{devices, mig_parent};
  if (request.gpus) return from_gpus_option(devices, *request.gpus, r);
  if (request.cuda_visible_devices) return from_cuda_visible(*request.cuda_visible_devices, r);
  if (request.nvidia_visible_devices) {
    return from_nvidia_visible(devices, *request.nvidia_visible_devices, r);
  }
  return scope_result{all_devices(devices), "all devices", "", {}};
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
  return r;
}

}  // namespace joules
