// The Level Zero backend: Intel GPUs through Sysman.  Energy comes from a power domain's energy
// counter (µJ, 64-bit), the card's where the GPU has one, else the package's, else the sum of its
// stacks' (docs/level-zero-notes.md §4).  Level Zero has no power reading: power is the counter's
// rate, as for RAPL's domains.  One call per GPU and reading (one per stack where only stacks
// have counters).  Health readings are ze_health.cpp's.

#include "backends/levelzero/ze_backend.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "backends/levelzero/ze_health.hpp"
#include "backends/levelzero/ze_library.hpp"
#include "backends/levelzero/ze_power_limit.hpp"

namespace joules::ze {
namespace {

// The highest power a wrap of the counter may imply (a decrease that needs more is a reset).
constexpr double kMaxPlausibleWatts = 5000.0;

enum class outcome { ok, not_supported, lost, failed };

outcome classify(ze_result_t rc) {
  if (rc == kSuccess) return outcome::ok;
  // NOT_AVAILABLE is "resource already in use" (another client holds it): a failed call, not
  // a reading the GPU lacks.
  if (rc == kErrorUnsupportedFeature) return outcome::not_supported;
  if (rc == kErrorDeviceLost) return outcome::lost;
  return outcome::failed;
}

std::string uuid_text(const std::uint8_t (&b)[16]) {
  return fmt::format(
      "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
      "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
      b[15]);
}

class ze_backend final : public backend {
 public:
  explicit ze_backend(std::unique_ptr<library> lib) : lib_(std::move(lib)) {
    meta_.backend = "levelzero";
    meta_.library_path = lib_->path();
    meta_.library_version = lib_->init_path();
    meta_.symbols_found = lib_->symbol_count();
    meta_.symbols_known = library::known_symbol_count();
    unsigned flat = 0;
    for (std::size_t i = 0; i < lib_->devices().size(); ++i)
      probe(static_cast<unsigned>(i), lib_->devices()[i], flat);
    // zesDeviceGet lists every device whatever ZE_AFFINITY_MASK says; zeDeviceGet, the older
    // way in, lists the masked ones only (docs/level-zero-notes.md §6).
    const char* mask = std::getenv("ZE_AFFINITY_MASK");
    if (!lib_->sysman_uniform() && mask != nullptr && mask[0] != '\0') {
      for (auto& d : infos_)
        d.visibility_applied = true;
    }
  }

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return infos_; }

  device_reading read(std::size_t i, read_what what) override {
    (void)what;  // the counter is all there is to read
    device_state& d = states_[i];
    device_reading r;
    if (d.lost) {
      r.status = read_status::lost;
      r.error_code = static_cast<int>(kErrorDeviceLost);
      return r;
    }
    if (d.domains.empty()) return r;
    std::uint64_t sum = 0;
    for (zes_pwr_handle_t h : d.domains) {
      zes_power_energy_counter_t e{};
      const ze_result_t rc = lib_->fn().zesPowerGetEnergyCounter(h, &e);
      switch (classify(rc)) {
        case outcome::ok:
          sum += e.energy;  // modulo 2^64, as each counter is
          break;
        case outcome::not_supported:
          r.counter_unsupported = true;
          return r;
        case outcome::lost:
          d.lost = true;
          r.status = read_status::lost;
          r.error_code = static_cast<int>(rc);
          return r;
        case outcome::failed:
          r.status = read_status::error;
          r.error_code = static_cast<int>(rc);
          return r;
      }
    }
    r.energy_uj = sum;
    return r;
  }

  health_reading read_health(std::size_t i) override {
    if (states_[i].lost) return {};
    return health_[i]->read();
  }

  power_limit_reading read_power_limit(std::size_t i) override {
    if (states_[i].lost) {
      power_limit_reading r;
      r.result = {control_status::lost, lib_->error_string(kErrorDeviceLost)};
      return r;
    }
    power_limit_reading r = read_sustained_limit(*lib_, states_[i].limit);
    if (r.result.status == control_status::lost) states_[i].lost = true;
    return r;
  }

  control_result set_power_limit(std::size_t i, std::uint32_t limit_mw) override {
    if (states_[i].lost) return {control_status::lost, lib_->error_string(kErrorDeviceLost)};
    control_result r = set_sustained_limit(*lib_, states_[i].limit, limit_mw);
    if (r.status == control_status::lost) states_[i].lost = true;
    return r;
  }

  device_capabilities probe_capabilities(std::size_t i) override {
    device_capabilities c;
    (void)health_[i]->read();
    c.health_readings = health_[i]->supported();
    // The sustained limit and its range can be read: tune may set it (doctor sets nothing).
    c.power_limit_control = read_power_limit(i).result.ok();
    return c;
  }

 private:
  struct device_state {
    std::vector<zes_pwr_handle_t> domains;  // summed: one, or one per stack
    limit_domain limit;                     // whose sustained limit tune and sweep set
    bool lost = false;
  };

  bool counter_works(zes_pwr_handle_t h) {
    zes_power_energy_counter_t e{};
    return lib_->fn().zesPowerGetEnergyCounter(h, &e) == kSuccess;
  }

  // The domains whose counters make the GPU's energy (docs/level-zero-notes.md §4).
  std::vector<zes_pwr_handle_t> energy_domains(zes_device_handle_t dev, device_info& info,
                                               limit_domain& limit) {
    const entry_points& fn = lib_->fn();
    std::vector<zes_pwr_handle_t> all;
    std::uint32_t n = 0;
    if (fn.zesDeviceEnumPowerDomains == nullptr || fn.zesPowerGetEnergyCounter == nullptr ||
        fn.zesDeviceEnumPowerDomains(dev, &n, nullptr) != kSuccess || n == 0)
      return {};
    all.resize(n);
    if (fn.zesDeviceEnumPowerDomains(dev, &n, all.data()) != kSuccess) return {};
    all.resize(n);
    std::optional<zes_pwr_handle_t> card, package, device_level;
    int limit_rank = 0;  // of `limit`: 3 card, 2 package, 1 another device-level domain
    std::vector<zes_pwr_handle_t> stacks;
    for (zes_pwr_handle_t h : all) {
      zes_power_properties_t p{};
      p.stype = kStypePowerProperties;
      zes_power_ext_properties_t ext{};
      ext.stype = kStypePowerExtProperties;
      alignas(8) std::array<std::byte, 256>
          default_desc{};  // zes_power_limit_ext_desc_t, if filled
      ext.defaultLimit = default_desc.data();
      p.pNext = &ext;
      if (fn.zesPowerGetProperties == nullptr || fn.zesPowerGetProperties(h, &p) != kSuccess) {
        continue;
      }
      if (p.onSubdevice) {
        stacks.push_back(h);
        continue;
      }
      if (ext.domain == kPowerDomainCard) card = h;
      if (ext.domain == kPowerDomainPackage) package = h;
      if (!device_level) device_level = h;
      if (p.defaultLimit > 0) info.default_power_limit = watts{p.defaultLimit / 1000.0};
      if (p.minLimit > 0) info.min_power_limit = watts{p.minLimit / 1000.0};
      if (p.maxLimit > 0) info.max_power_limit = watts{p.maxLimit / 1000.0};
      const int rank =
          ext.domain == kPowerDomainCard ? 3 : (ext.domain == kPowerDomainPackage ? 2 : 1);
      if (p.canControl && rank > limit_rank) {
        limit_rank = rank;
        limit = {h, p.minLimit, p.maxLimit, p.defaultLimit};
      }
    }
    // Drivers without the extension (domain unknown): the deprecated card-level call.
    zes_pwr_handle_t h = nullptr;
    if (!card && fn.zesDeviceGetCardPowerDomain != nullptr &&
        fn.zesDeviceGetCardPowerDomain(dev, &h) == kSuccess && h != nullptr) {
      card = h;
    }
    for (const auto& c : {card, package, device_level}) {
      if (c && counter_works(*c)) return {*c};
    }
    for (zes_pwr_handle_t s : stacks) {
      if (!counter_works(s)) return {};
    }
    return stacks;
  }

  void probe(unsigned index, zes_device_handle_t dev, unsigned& flat) {
    const entry_points& fn = lib_->fn();
    device_info info;
    info.vendor = "intel";
    info.index = index;
    zes_device_properties_t props{};
    props.stype = kStypeDeviceProperties;
    props.core.stype = kStypeCoreDeviceProperties;
    unsigned stacks = 1;
    const ze_result_t props_rc = fn.zesDeviceGetProperties != nullptr
                                     ? fn.zesDeviceGetProperties(dev, &props)
                                     : kErrorUnsupportedFeature;
    if (props_rc == kSuccess) {
      props.core.name[sizeof props.core.name - 1] = '\0';
      props.driverVersion[sizeof props.driverVersion - 1] = '\0';
      info.name = props.core.name;
      info.uuid = uuid_text(props.core.uuid);
      if (meta_.driver_version.empty()) meta_.driver_version = props.driverVersion;
      if (props.numSubdevices > 1) stacks = props.numSubdevices;
    }
    // Under the FLAT hierarchy (ZE_AFFINITY_MASK's default) each stack is a device of its own.
    for (unsigned s = 0; s < stacks; ++s)
      info.partition_indices.push_back(flat++);
    zes_pci_properties_t pci{};
    pci.stype = kStypePciProperties;
    if (fn.zesDevicePciGetProperties != nullptr &&
        fn.zesDevicePciGetProperties(dev, &pci) == kSuccess) {
      info.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.address.domain,
                                    pci.address.bus, pci.address.device, pci.address.function);
    }
    if (info.name.empty()) info.name = "Intel GPU";
    device_state st;
    st.domains = energy_domains(dev, info, st.limit);
    std::uint32_t domains = 0;
    const ze_result_t enum_rc = fn.zesDeviceEnumPowerDomains != nullptr
                                    ? fn.zesDeviceEnumPowerDomains(dev, &domains, nullptr)
                                    : kSuccess;
    if (!st.domains.empty()) {
      info.has_energy_counter = true;
      info.wrap = counter_wrap{0, watts{kMaxPlausibleWatts}};  // 64-bit µJ
    } else if (props_rc == kErrorDeviceLost || enum_rc == kErrorDeviceLost) {
      // The loader lists it, but it answers nothing (lost before joules started): listed as
      // lost from the first moment, as one that is lost later.
      info.unreadable =
          fmt::format("it answers every call with {}", lib_->error_string(kErrorDeviceLost));
      st.lost = true;
    } else {
      notices_.push_back(
          fmt::format("Intel GPU {} ({}) has no energy counter that answers; it is not measured",
                      index, info.pci_bus_id));
    }
    infos_.push_back(std::move(info));
    states_.push_back(std::move(st));
    health_.push_back(std::make_unique<health_reader>(fn, dev));
  }

  std::unique_ptr<library> lib_;
  backend_meta meta_;
  std::vector<device_info> infos_;
  std::vector<device_state> states_;
  std::vector<std::unique_ptr<health_reader>> health_;
};

}  // namespace
}  // namespace joules::ze

namespace joules {

std::unique_ptr<backend> open_level_zero_backend(const std::string& library_path) {
  return std::make_unique<ze::ze_backend>(ze::library::open(library_path));
}

}  // namespace joules
