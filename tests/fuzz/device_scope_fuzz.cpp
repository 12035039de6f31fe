// libFuzzer target for device selection (src/devices): --gpus, CUDA_VISIBLE_DEVICES and
// NVIDIA_VISIBLE_DEVICES as the input gives them (three fields cut at NUL; a field starting with
// '-' is left unset), over four GPUs with UUIDs, PCI bus ids and one MIG instance.  A bad value
// must be a usage_error; a chosen set names real devices, each once.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "devices/device_scope.hpp"
#include "fuzz/fuzz_input.hpp"
#include "util/error.hpp"

namespace {

std::vector<joules::device_info> gpus() {
  std::vector<joules::device_info> out;
  for (unsigned i = 0; i < 4; ++i) {
    joules::device_info d;
    d.index = i;
    d.uuid = "GPU-" + std::string(8, static_cast<char>('a' + i)) + "-1111-2222-3333-444455556666";
    d.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    d.name = "NVIDIA H100 80GB HBM3";
    d.has_energy_counter = true;
    out.push_back(d);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<joules::device_info> devices = gpus();
  const auto f = joules::fuzz::fields(joules::fuzz::as_text(data, size), '\0');
  const auto field = [&](std::size_t i) -> std::optional<std::string> {
    if (i >= f.size() || f[i].starts_with('-')) return std::nullopt;
    return f[i];
  };
  joules::scope_request request;
  request.gpus = field(0);
  request.cuda_visible_devices = field(1);
  request.nvidia_visible_devices = field(2);
  const auto mig = [](std::string_view uuid) -> std::optional<std::string> {
    if (uuid.find("MIG-a") != std::string_view::npos) return devices[0].uuid;
    return std::nullopt;
  };
  try {
    const joules::scope_result r = joules::select_devices(devices, request, mig);
    std::set<std::size_t> seen;
    for (const std::size_t i : r.devices) {
      JOULES_FUZZ_CHECK(i < devices.size());
      JOULES_FUZZ_CHECK(seen.insert(i).second);
    }
    JOULES_FUZZ_CHECK(!r.source.empty());
  } catch (const joules::usage_error&) {
  }
  return 0;
}
