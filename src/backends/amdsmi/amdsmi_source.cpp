// AMD SMI as the AMD backend's source.  Structs whose layout changed between AMD SMI versions are
// read from an oversized zeroed buffer at the offsets of the version found (amd_decode.hpp), so a
// library newer or older than the header joules was written from never writes past joules'
// memory.

#include <array>
#include <cstddef>
#include <cstring>

#include "backends/amdsmi/amd_source.hpp"

namespace joules::amd {
namespace {

// An aligned, zeroed buffer for a struct of a version-dependent size.
template <std::size_t N>
struct buffer {
  alignas(16) std::array<std::byte, N> bytes{};
  void* data() { return bytes.data(); }
  std::span<const std::byte> view() const { return bytes; }
};

outcome classify_amdsmi(amdsmi_status_t rc) {
  if (rc == kAmdsmiSuccess) return outcome::ok;
  if (rc == kAmdsmiNotSupported || rc == kAmdsmiNotYetImplemented) return outcome::not_supported;
  if (rc == kAmdsmiNotFound || rc == kAmdsmiDriverNotLoaded) return outcome::lost;
  return outcome::failed;
}

// A status of amdsmi_get_power_cap_info or amdsmi_set_power_cap as tune and sweep see it.
control_result control_of_amdsmi(const library& lib, amdsmi_status_t rc) {
  control_result r;
  r.detail = lib.error_string(rc);
  if (rc == kAmdsmiNoPerm) {
    r.status = control_status::no_permission;
  } else if (rc == kAmdsmiNotSupported || rc == kAmdsmiNotYetImplemented) {
    r.status = control_status::not_supported;
  } else if (rc == kAmdsmiInval) {
    r.status = control_status::invalid;
  } else if (rc == kAmdsmiNotFound || rc == kAmdsmiDriverNotLoaded) {
    r.status = control_status::lost;
  } else {
    r.status = control_status::error;
  }
  return r;
}

class amdsmi_source final : public source {
 public:
  explicit amdsmi_source(const library& lib)
      : lib_(lib), fn_(lib.smi()), v_(lib.amdsmi_version()) {}

  std::string driver_version() override {
    if (handles_.empty() || fn_.amdsmi_get_gpu_driver_info == nullptr) return {};
    buffer<2048> b;
    if (fn_.amdsmi_get_gpu_driver_info(handles_.front(), b.data()) != kAmdsmiSuccess) return {};
    return leading_string(b.view(), 256);  // driver_version is its first field in every version
  }

  std::vector<processor_info> processors() override {
    std::vector<processor_info> out;
    std::uint32_t sockets = 0;
    if (fn_.amdsmi_get_socket_handles(&sockets, nullptr) != kAmdsmiSuccess || sockets == 0)
      return out;
    std::vector<amdsmi_socket_handle> socket_handles(sockets);
    if (fn_.amdsmi_get_socket_handles(&sockets, socket_handles.data()) != kAmdsmiSuccess)
      return out;
    socket_handles.resize(sockets);
    for (amdsmi_socket_handle s : socket_handles) {
      std::uint32_t n = 0;
      if (fn_.amdsmi_get_processor_handles(s, &n, nullptr) != kAmdsmiSuccess || n == 0) continue;
      std::vector<amdsmi_processor_handle> hs(n);
      if (fn_.amdsmi_get_processor_handles(s, &n, hs.data()) != kAmdsmiSuccess) continue;
      hs.resize(n);
      for (amdsmi_processor_handle h : hs) {
        processor_type_t type = kProcessorAmdGpu;
        if (fn_.amdsmi_get_processor_type != nullptr &&
            fn_.amdsmi_get_processor_type(h, &type) == kAmdsmiSuccess && type != kProcessorAmdGpu)
          continue;
        out.push_back(describe(h));
        handles_.push_back(h);
      }
    }
    switches_.resize(handles_.size());
    return out;
  }

  outcome energy(std::size_t p, energy_count& out, std::uint32_t& code) override {
    if (fn_.amdsmi_get_energy_count == nullptr) return outcome::not_supported;
    code = fn_.amdsmi_get_energy_count(handles_[p], &out.counts, &out.resolution_uj,
                                       &out.timestamp_ns);
    return classify_amdsmi(code);
  }

  outcome power(std::size_t p, power_source kind, double& watts, std::uint32_t& code) override {
    if (fn_.amdsmi_get_power_info == nullptr) return outcome::not_supported;
    buffer<512> b;
    code = fn_.amdsmi_get_power_info(handles_[p], b.data());
    const outcome o = classify_amdsmi(code);
    if (o != outcome::ok) return o;
    const power_fields f = decode_power_info(b.view(), v_);
    const auto& w = kind == power_source::socket_current ? f.current_w : f.average_w;
    // A field the library says is unsupported, mid-run, is the reading gone.
    if (!w) return outcome::not_supported;
    watts = static_cast<double>(*w);
    return outcome::ok;
  }

  power_source probe_power(std::size_t p) override {
    if (fn_.amdsmi_get_power_info == nullptr) return power_source::none;
    buffer<512> b;
    if (fn_.amdsmi_get_power_info(handles_[p], b.data()) != kAmdsmiSuccess)
      return power_source::none;
    const power_fields f = decode_power_info(b.view(), v_);
    // A GPU that has current power reports average power as unsupported, or as 0 in the
    // versions that wrote 0 for it; an MI200 the other way round.
    if (f.current_w && (*f.current_w != 0 || !f.average_w || *f.average_w == 0))
      return power_source::socket_current;
    if (f.average_w) return power_source::socket_average;
    return power_source::none;
  }

  power_caps caps(std::size_t p) override {
    power_caps c;
    amdsmi_power_cap_info_t info{};
    if (fn_.amdsmi_get_power_cap_info == nullptr) return c;
    buffer<256> b;
    if (fn_.amdsmi_get_power_cap_info(
            handles_[p], 0, static_cast<amdsmi_power_cap_info_t*>(b.data())) != kAmdsmiSuccess)
      return c;
    std::memcpy(&info, b.bytes.data(), sizeof info);
    auto watts = [](std::uint64_t uw) -> std::optional<double> {
      if (uw == 0 || uw == ~std::uint64_t{0} || uw > 1'000'000'000'000ULL) return std::nullopt;
      return static_cast<double>(uw) / 1e6;
    };
    c.limit_w = watts(info.power_cap);
    c.default_w = watts(info.default_power_cap);
    c.min_w = watts(info.min_power_cap);
    c.max_w = watts(info.max_power_cap);
    return c;
  }

  cap_reading read_cap(std::size_t p) override {
    cap_reading r;
    if (fn_.amdsmi_get_power_cap_info == nullptr) {
      r.result = {control_status::not_supported, "this AMD SMI has no amdsmi_get_power_cap_info"};
      return r;
    }
    buffer<256> b;  // the struct is 64 bytes in every version (amd_abi.hpp); room to spare
    const amdsmi_status_t rc = fn_.amdsmi_get_power_cap_info(
        handles_[p], 0, static_cast<amdsmi_power_cap_info_t*>(b.data()));
    if (rc != kAmdsmiSuccess) {
      r.result = control_of_amdsmi(lib_, rc);
      return r;
    }
    amdsmi_power_cap_info_t info{};
    std::memcpy(&info, b.bytes.data(), sizeof info);
    r.current_uw = info.power_cap;
    r.default_uw = info.default_power_cap;
    r.min_uw = info.min_power_cap;
    r.max_uw = info.max_power_cap;
    return r;
  }

  control_result set_cap(std::size_t p, std::uint64_t uw) override {
    if (fn_.amdsmi_set_power_cap == nullptr) {
      return {control_status::not_supported, "this AMD SMI has no amdsmi_set_power_cap"};
    }
    const amdsmi_status_t rc = fn_.amdsmi_set_power_cap(handles_[p], 0, uw);
    return rc == kAmdsmiSuccess ? control_result{} : control_of_amdsmi(lib_, rc);
  }

  health_reading health(std::size_t p) override;
  std::vector<std::string> health_supported(std::size_t p) const override {
    return switches_[p].supported();
  }

 private:
  processor_info describe(amdsmi_processor_handle h) {
    processor_info info;
    amdsmi_bdf_t bdf = 0;
    if (fn_.amdsmi_get_gpu_device_bdf != nullptr &&
        fn_.amdsmi_get_gpu_device_bdf(h, &bdf) == kAmdsmiSuccess) {
      info.pci = from_amdsmi_bdf(bdf);
    }
    std::array<char, 64> uuid{};
    unsigned len = static_cast<unsigned>(uuid.size());
    if (fn_.amdsmi_get_gpu_device_uuid != nullptr &&
        fn_.amdsmi_get_gpu_device_uuid(h, &len, uuid.data()) == kAmdsmiSuccess) {
      uuid.back() = '\0';
      info.uuid = uuid.data();
    }
    if (fn_.amdsmi_get_gpu_asic_info != nullptr) {
      buffer<4096> b;
      if (fn_.amdsmi_get_gpu_asic_info(h, b.data()) == kAmdsmiSuccess) {
        info.name = leading_string(b.view(), 256);
        info.unique_id = decode_asic_unique_id(b.view(), v_);
      }
    }
    if (fn_.amdsmi_get_gpu_kfd_info != nullptr) {
      buffer<256> b;
      amdsmi_kfd_info_t kfd{};
      if (fn_.amdsmi_get_gpu_kfd_info(h, static_cast<amdsmi_kfd_info_t*>(b.data())) ==
          kAmdsmiSuccess) {
        std::memcpy(&kfd, b.bytes.data(), sizeof kfd);
        if (kfd.current_partition_id != 0xFFFFFFFFU) info.partition_id = kfd.current_partition_id;
      }
    }
    return info;
  }

  std::optional<double> temperature(amdsmi_processor_handle h, amdsmi_temperature_type_t type,
                                    amdsmi_temperature_metric_t metric) {
    std::int64_t c = 0;
    // °C: AMD SMI divides ROCm SMI's millidegrees by 1000 (amd_smi.cc).
    if (fn_.amdsmi_get_temp_metric(h, type, metric, &c) != kAmdsmiSuccess) return std::nullopt;
    return static_cast<double>(c);
  }

  const library& lib_;
  const amdsmi_entry_points& fn_;
  lib_version v_;
  std::vector<amdsmi_processor_handle> handles_;
  std::vector<health_switches> switches_;
};

health_reading amdsmi_source::health(std::size_t p) {
  using hs = health_switches;
  health_reading h;
  health_switches& sw = switches_[p];
  const amdsmi_processor_handle dev = handles_[p];
  if (sw.ask(hs::activity) && fn_.amdsmi_get_gpu_activity != nullptr) {
    buffer<256> b;
    const bool ok = fn_.amdsmi_get_gpu_activity(
                        dev, static_cast<amdsmi_engine_usage_t*>(b.data())) == kAmdsmiSuccess;
    sw.settle(hs::activity, ok);
    amdsmi_engine_usage_t u{};
    std::memcpy(&u, b.bytes.data(), sizeof u);
    if (ok && u.gfx_activity <= 100) h.gpu_util_percent = u.gfx_activity;
    if (ok && u.umc_activity <= 100) h.memory_util_percent = u.umc_activity;
  } else {
    sw.off(hs::activity);
  }
  if (sw.ask(hs::memory) && fn_.amdsmi_get_gpu_vram_usage != nullptr) {
    buffer<256> b;
    const bool ok = fn_.amdsmi_get_gpu_vram_usage(
                        dev, static_cast<amdsmi_vram_usage_t*>(b.data())) == kAmdsmiSuccess;
    sw.settle(hs::memory, ok);
    amdsmi_vram_usage_t m{};
    std::memcpy(&m, b.bytes.data(), sizeof m);
    if (ok) {
      h.memory_total_bytes = std::uint64_t{m.vram_total} * 1048576U;  // MB
      h.memory_used_bytes = std::uint64_t{m.vram_used} * 1048576U;
    }
  } else {
    sw.off(hs::memory);
  }
  if (fn_.amdsmi_get_temp_metric != nullptr) {
    if (sw.ask(hs::temperature)) {
      // Junction first: MI300 has no edge sensor.
      auto t = temperature(dev, kTempHotspot, kTempCurrent);
      if (!t) t = temperature(dev, kTempEdge, kTempCurrent);
      sw.settle(hs::temperature, t.has_value());
      h.temperature_c = t;
    }
    if (sw.ask(hs::memory_temperature)) {
      h.memory_temperature_c = temperature(dev, kTempVram, kTempCurrent);
      sw.settle(hs::memory_temperature, h.memory_temperature_c.has_value());
    }
    if (sw.ask(hs::thresholds)) {
      h.slowdown_temperature_c = temperature(dev, kTempHotspot, kTempCritical);
      h.shutdown_temperature_c = temperature(dev, kTempHotspot, kTempEmergency);
      sw.settle(hs::thresholds, h.slowdown_temperature_c || h.shutdown_temperature_c);
    }
  } else {
    sw.off(hs::temperature);
    sw.off(hs::memory_temperature);
    sw.off(hs::thresholds);
  }
  if (sw.ask(hs::clocks) && fn_.amdsmi_get_clock_info != nullptr) {
    buffer<256> gfx;
    buffer<256> mem;
    const bool ok = fn_.amdsmi_get_clock_info(dev, kClkGfx, gfx.data()) == kAmdsmiSuccess &&
                    fn_.amdsmi_get_clock_info(dev, kClkMem, mem.data()) == kAmdsmiSuccess;
    sw.settle(hs::clocks, ok);
    if (ok) {
      const clock_fields g = decode_clock_info(gfx.view());
      const clock_fields m = decode_clock_info(mem.view());
      h.sm_clock_mhz = g.current_mhz;
      h.max_sm_clock_mhz = g.max_mhz;
      h.memory_clock_mhz = m.current_mhz;
      h.max_memory_clock_mhz = m.max_mhz;
    }
  } else {
    sw.off(hs::clocks);
  }
  if (sw.ask(hs::ecc) && fn_.amdsmi_get_gpu_total_ecc_count != nullptr) {
    buffer<256> b;
    const bool ok = fn_.amdsmi_get_gpu_total_ecc_count(dev, b.data()) == kAmdsmiSuccess;
    sw.settle(hs::ecc, ok);
    if (ok) {
      // Counted since the driver loaded (its RAS counters): NVML's "volatile".
      amdsmi_error_count_t e{};
      std::memcpy(&e, b.bytes.data(), 16);  // the two fields every version has
      h.ecc_corrected_volatile = e.correctable_count;
      h.ecc_uncorrected_volatile = e.uncorrectable_count;
      std::uint64_t blocks = 0;
      if (fn_.amdsmi_get_gpu_ecc_enabled != nullptr &&
          fn_.amdsmi_get_gpu_ecc_enabled(dev, &blocks) == kAmdsmiSuccess) {
        h.ecc_enabled = blocks != 0;
      }
    }
  } else {
    sw.off(hs::ecc);
  }
  if (sw.ask(hs::pcie) && fn_.amdsmi_get_pcie_info != nullptr) {
    buffer<1024> b;
    const bool called = fn_.amdsmi_get_pcie_info(dev, b.data()) == kAmdsmiSuccess;
    const auto f = called ? decode_pcie_info(b.view(), v_) : std::nullopt;
    sw.settle(hs::pcie, f.has_value());
    if (f) {
      h.pcie_width = f->width;
      h.pcie_max_width = f->max_width;
      if (f->generation != 0) h.pcie_generation = f->generation;
      if (f->max_generation != 0) h.pcie_max_generation = f->max_generation;
      h.pcie_replays = f->replays;
    }
  } else {
    sw.off(hs::pcie);
  }
  if (sw.ask(hs::violations) && fn_.amdsmi_get_violation_status != nullptr) {
    buffer<kStructBuffer> b;
    const bool called = fn_.amdsmi_get_violation_status(dev, b.data()) == kAmdsmiSuccess;
    h.throttle = called ? decode_violation_status(b.view(), v_) : std::nullopt;
    sw.settle(hs::violations, h.throttle.has_value());
  } else {
    sw.off(hs::violations);
  }
  return h;
}

}  // namespace

std::unique_ptr<source> make_amdsmi_source(const library& lib) {
  return std::make_unique<amdsmi_source>(lib);
}

const char* health_switches::name(reading r) {
  static constexpr const char* kNames[kCount] = {
      "utilization", "memory",     "temperature", "memory_temperature", "temperature_thresholds",
      "clocks",      "ecc_errors", "pcie_link",   "clock_events"};
  return kNames[r];
}

std::vector<std::string> health_switches::supported() const {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < kCount; ++r) {
    if (state_[r] == state::on) out.emplace_back(name(static_cast<reading>(r)));
  }
  return out;
}

}  // namespace joules::amd
