// ROCm SMI as the AMD backend's source, for ROCm stacks without AMD SMI.  Its calls take a device
// index and return scalars, so no struct layout is involved; power is in µW, temperatures in
// millidegrees Celsius (rocm_smi.h).

#include <fmt/format.h>

#include <array>

#include "backends/amdsmi/amd_source.hpp"

namespace joules::amd {
namespace {

outcome classify_rsmi(rsmi_status_t rc) {
  if (rc == kRsmiSuccess) return outcome::ok;
  if (rc == kRsmiNotSupported || rc == kRsmiNotYetImplemented) return outcome::not_supported;
  if (rc == kRsmiNotFound) return outcome::lost;
  return outcome::failed;
}

std::optional<double> micro(std::uint64_t uw) {
  if (uw == 0 || uw > 1'000'000'000'000ULL) return std::nullopt;
  return static_cast<double>(uw) / 1e6;
}

// A status of the rsmi_dev_power_cap_* calls as tune and sweep see it.
control_result control_of_rsmi(const library& lib, rsmi_status_t rc) {
  control_result r;
  r.detail = lib.error_string(rc);
  if (rc == kRsmiPermission) {
    r.status = control_status::no_permission;
  } else if (rc == kRsmiNotSupported || rc == kRsmiNotYetImplemented) {
    r.status = control_status::not_supported;
  } else if (rc == kRsmiInvalidArgs || rc == kRsmiInputOutOfBounds) {
    r.status = control_status::invalid;
  } else if (rc == kRsmiNotFound) {
    r.status = control_status::lost;
  } else {
    r.status = control_status::error;
  }
  return r;
}

class rocm_smi_source final : public source {
 public:
  explicit rocm_smi_source(const library& lib) : lib_(lib), fn_(lib.rsmi()) {}

  std::vector<processor_info> processors() override {
    std::vector<processor_info> out;
    std::uint32_t n = 0;
    if (fn_.rsmi_num_monitor_devices(&n) != kRsmiSuccess) return out;
    for (std::uint32_t i = 0; i < n; ++i) {
      processor_info info;
      std::uint64_t v = 0;
      if (fn_.rsmi_dev_pci_id_get != nullptr && fn_.rsmi_dev_pci_id_get(i, &v) == kRsmiSuccess)
        info.pci = from_rsmi_bdfid(v);
      if (fn_.rsmi_dev_unique_id_get != nullptr &&
          fn_.rsmi_dev_unique_id_get(i, &v) == kRsmiSuccess && v != 0) {
        info.unique_id = fmt::format("{:016x}", v);
        // ROCm SMI has no UUID of its own: ROCr's, built from the unique id, is the key.
        info.uuid = "GPU-" + *info.unique_id;
      }
      std::array<char, 256> name{};
      if (fn_.rsmi_dev_name_get != nullptr &&
          fn_.rsmi_dev_name_get(i, name.data(), name.size()) == kRsmiSuccess) {
        name.back() = '\0';
        info.name = name.data();
      }
      std::uint32_t partition = 0;
      if (fn_.rsmi_dev_partition_id_get != nullptr &&
          fn_.rsmi_dev_partition_id_get(i, &partition) == kRsmiSuccess) {
        info.partition_id = partition;
      }
      out.push_back(std::move(info));
    }
    switches_.resize(out.size());
    return out;
  }

  std::string driver_version() override { return {}; }  // not among the calls joules makes

  outcome energy(std::size_t p, energy_count& out, std::uint32_t& code) override {
    if (fn_.rsmi_dev_energy_count_get == nullptr) return outcome::not_supported;
    code =
        fn_.rsmi_dev_energy_count_get(index(p), &out.counts, &out.resolution_uj, &out.timestamp_ns);
    return classify_rsmi(code);
  }

  outcome power(std::size_t p, power_source kind, double& watts, std::uint32_t& code) override {
    std::uint64_t uw = 0;
    if (fn_.rsmi_dev_power_get != nullptr) {
      rsmi_power_type_t type = kRsmiAveragePower;
      code = fn_.rsmi_dev_power_get(index(p), &uw, &type);
      const rsmi_power_type_t want =
          kind == power_source::socket_current ? kRsmiCurrentPower : kRsmiAveragePower;
      if (code == kRsmiSuccess && type != want) return outcome::not_supported;
    } else if (fn_.rsmi_dev_power_ave_get != nullptr && kind == power_source::socket_average) {
      code = fn_.rsmi_dev_power_ave_get(index(p), 0, &uw);
    } else {
      return outcome::not_supported;
    }
    const outcome o = classify_rsmi(code);
    if (o == outcome::ok) watts = static_cast<double>(uw) / 1e6;
    return o;
  }

  power_source probe_power(std::size_t p) override {
    std::uint64_t uw = 0;
    if (fn_.rsmi_dev_power_get != nullptr) {
      rsmi_power_type_t type = kRsmiAveragePower;
      if (fn_.rsmi_dev_power_get(index(p), &uw, &type) != kRsmiSuccess) return power_source::none;
      return type == kRsmiCurrentPower ? power_source::socket_current
                                       : power_source::socket_average;
    }
    if (fn_.rsmi_dev_power_ave_get != nullptr &&
        fn_.rsmi_dev_power_ave_get(index(p), 0, &uw) == kRsmiSuccess) {
      return power_source::socket_average;
    }
    return power_source::none;
  }

  power_caps caps(std::size_t p) override {
    power_caps c;
    std::uint64_t v = 0;
    std::uint64_t lo = 0;
    if (fn_.rsmi_dev_power_cap_get != nullptr &&
        fn_.rsmi_dev_power_cap_get(index(p), 0, &v) == kRsmiSuccess)
      c.limit_w = micro(v);
    if (fn_.rsmi_dev_power_cap_default_get != nullptr &&
        fn_.rsmi_dev_power_cap_default_get(index(p), &v) == kRsmiSuccess)
      c.default_w = micro(v);
    if (fn_.rsmi_dev_power_cap_range_get != nullptr &&
        fn_.rsmi_dev_power_cap_range_get(index(p), 0, &v, &lo) == kRsmiSuccess) {
      c.max_w = micro(v);
      c.min_w = micro(lo);
    }
    return c;
  }

  cap_reading read_cap(std::size_t p) override {
    cap_reading r;
    if (fn_.rsmi_dev_power_cap_get == nullptr || fn_.rsmi_dev_power_cap_range_get == nullptr) {
      r.result = {control_status::not_supported, "this ROCm SMI has no rsmi_dev_power_cap_get"};
      return r;
    }
    std::uint64_t v = 0;
    std::uint64_t lo = 0;
    rsmi_status_t rc = fn_.rsmi_dev_power_cap_get(index(p), 0, &v);
    if (rc == kRsmiSuccess) r.current_uw = v;
    if (fn_.rsmi_dev_power_cap_default_get != nullptr &&
        fn_.rsmi_dev_power_cap_default_get(index(p), &v) == kRsmiSuccess) {
      r.default_uw = v;
    }
    const rsmi_status_t range = fn_.rsmi_dev_power_cap_range_get(index(p), 0, &v, &lo);
    if (range == kRsmiSuccess) {
      r.max_uw = v;
      r.min_uw = lo;
    }
    if (rc == kRsmiSuccess) rc = range;
    if (rc != kRsmiSuccess) r.result = control_of_rsmi(lib_, rc);
    return r;
  }

  control_result set_cap(std::size_t p, std::uint64_t uw) override {
    if (fn_.rsmi_dev_power_cap_set == nullptr) {
      return {control_status::not_supported, "this ROCm SMI has no rsmi_dev_power_cap_set"};
    }
    const rsmi_status_t rc = fn_.rsmi_dev_power_cap_set(index(p), 0, uw);
    return rc == kRsmiSuccess ? control_result{} : control_of_rsmi(lib_, rc);
  }

  health_reading health(std::size_t p) override {
    using hs = health_switches;
    health_reading h;
    health_switches& sw = switches_[p];
    const std::uint32_t i = index(p);
    std::uint32_t pct = 0;
    if (sw.ask(hs::activity) && fn_.rsmi_dev_busy_percent_get != nullptr) {
      const bool ok = fn_.rsmi_dev_busy_percent_get(i, &pct) == kRsmiSuccess;
      sw.settle(hs::activity, ok);
      if (ok && pct <= 100) h.gpu_util_percent = pct;
    } else {
      sw.off(hs::activity);
    }
    std::uint64_t total = 0;
    std::uint64_t used = 0;
    if (sw.ask(hs::memory) && fn_.rsmi_dev_memory_total_get != nullptr &&
        fn_.rsmi_dev_memory_usage_get != nullptr) {
      const bool ok = fn_.rsmi_dev_memory_total_get(i, kRsmiMemTypeVram, &total) == kRsmiSuccess &&
                      fn_.rsmi_dev_memory_usage_get(i, kRsmiMemTypeVram, &used) == kRsmiSuccess;
      sw.settle(hs::memory, ok);
      if (ok) {
        h.memory_total_bytes = total;  // bytes, unlike AMD SMI's MB
        h.memory_used_bytes = used;
      }
    } else {
      sw.off(hs::memory);
    }
    if (fn_.rsmi_dev_temp_metric_get != nullptr) {
      auto temp = [&](std::uint32_t sensor) -> std::optional<double> {
        std::int64_t mc = 0;
        if (fn_.rsmi_dev_temp_metric_get(i, sensor, kRsmiTempCurrent, &mc) != kRsmiSuccess)
          return std::nullopt;
        return static_cast<double>(mc) / 1000.0;
      };
      if (sw.ask(hs::temperature)) {
        auto t = temp(kRsmiTempJunction);
        if (!t) t = temp(kRsmiTempEdge);
        sw.settle(hs::temperature, t.has_value());
        h.temperature_c = t;
      }
      if (sw.ask(hs::memory_temperature)) {
        h.memory_temperature_c = temp(kRsmiTempMemory);
        sw.settle(hs::memory_temperature, h.memory_temperature_c.has_value());
      }
    }
    for (auto r : {hs::thresholds, hs::clocks, hs::ecc, hs::pcie, hs::violations})
      sw.off(r);  // not read through ROCm SMI (docs/amd-notes.md §4)
    return h;
  }

  std::vector<std::string> health_supported(std::size_t p) const override {
    return switches_[p].supported();
  }

 private:
  static std::uint32_t index(std::size_t p) { return static_cast<std::uint32_t>(p); }

  const library& lib_;
  const rsmi_entry_points& fn_;
  std::vector<health_switches> switches_;
};

}  // namespace

std::unique_ptr<source> make_rocm_smi_source(const library& lib) {
  return std::make_unique<rocm_smi_source>(lib);
}

}  // namespace joules::amd
