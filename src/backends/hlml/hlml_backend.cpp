// The HLML backend: Intel Gaudi devices through Habana's management library.  Energy comes from
// hlml_device_get_total_energy_consumption, a 64-bit count of mJ since the driver was loaded,
// read as NVML's counter is (the sampler learns its update period); power from
// hlml_device_get_power_usage in mW, the polled fallback (docs/hlml-notes.md §3).  Two calls per
// device and reading; one while the sampler pins counter updates.

#include "backends/hlml/hlml_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "backends/hlml/hlml_library.hpp"

namespace joules::hlml {
namespace {

// The text of a fixed-size, maybe unterminated buffer the library filled.
template <std::size_t N>
std::string bounded_text(const std::array<char, N>& buf, std::size_t offset = 0,
                         std::size_t length = N) {
  const char* begin = buf.data() + offset;
  const std::size_t max = std::min(length, N - offset);
  return {begin, strnlen(begin, max)};
}

class hlml_backend final : public backend {
 public:
  explicit hlml_backend(std::unique_ptr<library> lib) : lib_(std::move(lib)) {
    meta_.backend = "hlml";
    meta_.library_path = lib_->path();
    meta_.symbols_found = lib_->symbol_count();
    meta_.symbols_known = library::known_symbol_count();
    enumerate();
  }

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return infos_; }

  device_reading read(std::size_t i, read_what what) override {
    device_state& d = states_[i];
    if (d.lost) return failed(read_status::lost, d.lost_code);
    const auto& fn = lib_->fn();
    device_reading r;
    if (d.counter && (what != read_what::power || !d.power)) {
      unsigned long long mj = 0;
      const hlml_return_t rc = fn.hlml_device_get_total_energy_consumption(d.handle, &mj);
      if (rc == kSuccess) {
        r.energy_mj = mj;
      } else if (rc == kNotSupported) {
        r.counter_unsupported = true;
      } else {
        return fail(d, rc);
      }
    }
    if (what != read_what::counter && d.power) {
      unsigned int mw = 0;
      const hlml_return_t rc = fn.hlml_device_get_power_usage(d.handle, &mw);
      if (rc == kSuccess) {
        r.power = watts{mw / 1000.0};
      } else if (rc == kNotSupported) {
        r.power_unsupported = true;
      } else {
        return fail(d, rc);
      }
    }
    return r;
  }

  health_reading read_health(std::size_t i) override {
    device_state& d = states_[i];
    health_reading h;
    if (d.lost) return h;
    const auto& fn = lib_->fn();
    unsigned int v = 0;
    if (fn.hlml_device_get_temperature != nullptr) {
      if (fn.hlml_device_get_temperature(d.handle, kTemperatureOnAip, &v) == kSuccess)
        h.temperature_c = static_cast<double>(v);
    }
    if (fn.hlml_device_get_utilization_rates != nullptr) {
      alignas(8) std::array<std::byte, 64> buf{};
      if (fn.hlml_device_get_utilization_rates(d.handle, buf.data()) == kSuccess) {
        utilization u{};
        std::memcpy(&u, buf.data(), sizeof u);
        if (u.aip <= 100) h.gpu_util_percent = u.aip;
      }
    }
    if (fn.hlml_device_get_memory_info != nullptr) {
      alignas(8) std::array<std::byte, 64> buf{};
      if (fn.hlml_device_get_memory_info(d.handle, buf.data()) == kSuccess) {
        memory_info m{};
        std::memcpy(&m, buf.data(), sizeof m);
        if (m.total > 0 && m.used <= m.total) {
          h.memory_total_bytes = m.total;
          h.memory_used_bytes = m.used;
        }
      }
    }
    if (fn.hlml_device_get_clock_info != nullptr &&
        fn.hlml_device_get_clock_info(d.handle, kClockSoc, &v) == kSuccess)
      h.sm_clock_mhz = v;
    if (fn.hlml_device_get_max_clock_info != nullptr &&
        fn.hlml_device_get_max_clock_info(d.handle, kClockSoc, &v) == kSuccess)
      h.max_sm_clock_mhz = v;
    return h;
  }

  device_capabilities probe_capabilities(std::size_t i) override {
    device_capabilities c;
    const health_reading h = read_health(i);
    if (h.gpu_util_percent) c.health_readings.emplace_back("utilization");
    if (h.memory_total_bytes) c.health_readings.emplace_back("memory");
    if (h.temperature_c) c.health_readings.emplace_back("temperature");
    if (h.sm_clock_mhz) c.health_readings.emplace_back("clocks");
    c.power_limit_control = false;  // HLML has no call that sets the limit
    return c;
  }

 private:
  struct device_state {
    hlml_device_t handle = nullptr;
    bool counter = false;
    bool power = false;
    bool lost = false;
    hlml_return_t lost_code = 0;
  };

  static device_reading failed(read_status s, hlml_return_t code) {
    device_reading r;
    r.status = s;
    r.error_code = code;
    return r;
  }

  static device_reading fail(device_state& d, hlml_return_t rc) {
    if (rc == kAipIsLost) {
      d.lost = true;
      d.lost_code = rc;
      return failed(read_status::lost, rc);
    }
    return failed(read_status::error, rc);
  }

  void enumerate() {
    const auto& fn = lib_->fn();
    unsigned int count = 0;
    const hlml_return_t rc = fn.hlml_device_get_count(&count);
    if (rc != kSuccess) {
      throw fatal_error(
          fmt::format("hlml_device_get_count failed: {}; try joules with "
                      "--backend sim",
                      library::error_string(rc)));
    }
    constexpr unsigned int kMaxDevices = 1024;  // no node has more; a bad count is not trusted
    count = std::min(count, kMaxDevices);
    for (unsigned int i = 0; i < count; ++i) {
      hlml_device_t handle = nullptr;
      const hlml_return_t h = fn.hlml_device_get_handle_by_index(i, &handle);
      if (h != kSuccess) {
        notices_.push_back(fmt::format("HLML lists Intel Gaudi {} but gives no handle for it: {}",
                                       i, library::error_string(h)));
        continue;
      }
      probe(i, handle);
    }
  }

  void describe(device_info& info, hlml_device_t handle) {
    const auto& fn = lib_->fn();
    std::array<char, 256> text{};
    if (fn.hlml_device_get_name != nullptr &&
        fn.hlml_device_get_name(handle, text.data(), text.size() - 1) == kSuccess)
      info.name = bounded_text(text);
    if (info.name.empty()) info.name = "Intel Gaudi";
    text.fill('\0');
    if (fn.hlml_device_get_uuid != nullptr &&
        fn.hlml_device_get_uuid(handle, text.data(), text.size() - 1) == kSuccess)
      info.uuid = bounded_text(text);
    std::array<char, 512> pci{};
    if (fn.hlml_device_get_pci_info != nullptr &&
        fn.hlml_device_get_pci_info(handle, pci.data()) == kSuccess) {
      info.pci_bus_id = bounded_text(pci, kPciBusIdOffset, kPciBusIdLength);
      std::transform(info.pci_bus_id.begin(), info.pci_bus_id.end(), info.pci_bus_id.begin(),
                     [](char c) { return c >= 'A' && c <= 'F' ? static_cast<char>(c + 32) : c; });
    }
    if (info.uuid.empty() && info.pci_bus_id.empty())
      info.uuid = fmt::format("hlml-{}", info.index);
  }

  void probe(unsigned int index, hlml_device_t handle) {
    const auto& fn = lib_->fn();
    device_info info;
    info.vendor = "intel";
    info.architecture = "gaudi";  // every device HLML lists is a Gaudi (docs/hlml-notes.md §5)
    info.index = index;
    // The Habana container runtime exposes only the devices of HABANA_VISIBLE_DEVICES to the
    // container, so HLML lists only those (docs/hlml-notes.md §5): no variable is applied again.
    info.visibility_applied = true;
    describe(info, handle);
    device_state st;
    st.handle = handle;
    hlml_return_t energy_rc = kNotSupported;
    if (fn.hlml_device_get_total_energy_consumption != nullptr) {
      unsigned long long mj = 0;
      energy_rc = fn.hlml_device_get_total_energy_consumption(handle, &mj);
      st.counter = energy_rc == kSuccess;
    }
    hlml_return_t power_rc = kNotSupported;
    if (fn.hlml_device_get_power_usage != nullptr) {
      unsigned int mw = 0;
      power_rc = fn.hlml_device_get_power_usage(handle, &mw);
      st.power = power_rc == kSuccess;
    }
    info.has_energy_counter = st.counter;
    info.power = st.power ? power_source::power_usage : power_source::none;
    unsigned int limit_mw = 0;
    if (fn.hlml_device_get_power_management_default_limit != nullptr &&
        fn.hlml_device_get_power_management_default_limit(handle, &limit_mw) == kSuccess &&
        limit_mw > 0)
      info.default_power_limit = watts{limit_mw / 1000.0};
    const auto failed_call = [](hlml_return_t rc) { return rc != kSuccess && rc != kNotSupported; };
    if (!st.counter && !st.power && failed_call(energy_rc) && failed_call(power_rc)) {
      // Neither energy nor power could be read, and not because the device lacks them (it fell
      // off the bus before joules started): listed as lost from the first moment.
      info.unreadable = fmt::format("every reading of its energy and power failed: {}",
                                    library::error_string(energy_rc));
      st.lost = true;
      st.lost_code = energy_rc;
    } else if (!st.counter && !st.power) {
      notices_.push_back(fmt::format(
          "Intel Gaudi {} ({}) gives neither an energy counter nor power readings; it is not "
          "measured",
          info.index, info.pci_bus_id));
    }
    infos_.push_back(std::move(info));
    states_.push_back(st);
  }

  std::unique_ptr<library> lib_;
  backend_meta meta_;
  std::vector<device_info> infos_;
  std::vector<device_state> states_;
};

}  // namespace
}  // namespace joules::hlml

namespace joules {

std::unique_ptr<backend> open_hlml_backend(const std::string& library) {
  return std::make_unique<hlml::hlml_backend>(hlml::library::open(library));
}

}  // namespace joules
