#include "backends/levelzero/ze_power_limit.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace joules::ze {
namespace {

// A status of the power-limit calls as tune and sweep see it.
control_result control_of_ze(const library& lib, ze_result_t rc) {
  control_result r;
  r.detail = lib.error_string(rc);
  switch (rc) {
    case kErrorInsufficientPermissions:
      r.status = control_status::no_permission;
      break;
    case kErrorUnsupportedFeature:
      r.status = control_status::not_supported;
      break;
    case kErrorInvalidArgument:
      r.status = control_status::invalid;
      break;
    case kErrorDeviceLost:
      r.status = control_status::lost;
      break;
    default:
      r.status = control_status::error;
      break;
  }
  return r;
}

std::optional<std::uint32_t> ze_positive_mw(std::int32_t mw) {
  if (mw <= 0) return std::nullopt;
  return static_cast<std::uint32_t>(mw);
}

// Every limit descriptor of the domain (zesPowerGetLimitsExt); the status of the call.
ze_result_t ze_ext_limits(const entry_points& fn, zes_pwr_handle_t h,
                          std::vector<zes_power_limit_ext_desc_t>& out) {
  std::uint32_t n = 0;
  ze_result_t rc = fn.zesPowerGetLimitsExt(h, &n, nullptr);
  if (rc != kSuccess) return rc;
  constexpr std::uint32_t kMaxDescriptors = 64;  // a domain has a handful: sustained, burst, peak
  if (n == 0 || n > kMaxDescriptors) return kErrorUnsupportedFeature;
  out.assign(n, zes_power_limit_ext_desc_t{});
  for (auto& d : out)
    d.stype = kStypePowerLimitExtDesc;
  rc = fn.zesPowerGetLimitsExt(h, &n, out.data());
  if (rc != kSuccess) return rc;
  out.resize(std::min<std::size_t>(n, out.size()));
  return kSuccess;
}

// The sustained limit in milliwatts among `descs`; null when there is none in power units.
zes_power_limit_ext_desc_t* ze_sustained_of(std::vector<zes_power_limit_ext_desc_t>& descs) {
  for (auto& d : descs) {
    if (d.level == kPowerLevelSustained && d.limitUnit == kLimitUnitPower) return &d;
  }
  return nullptr;
}

}  // namespace

power_limit_reading read_sustained_limit(const library& lib, const limit_domain& d) {
  const entry_points& fn = lib.fn();
  power_limit_reading r;
  if (d.handle == nullptr) {
    r.result = {control_status::not_supported,
                "no power domain of this GPU may be controlled (zes_power_properties_t "
                "canControl is false)"};
    return r;
  }
  r.min_mw = ze_positive_mw(d.min_mw);
  r.max_mw = ze_positive_mw(d.max_mw);
  r.default_mw = ze_positive_mw(d.default_mw);
  ze_result_t rc = kErrorUnsupportedFeature;
  if (fn.zesPowerGetLimitsExt != nullptr) {
    std::vector<zes_power_limit_ext_desc_t> descs;
    rc = ze_ext_limits(fn, d.handle, descs);
    if (rc == kSuccess) {
      const zes_power_limit_ext_desc_t* s = ze_sustained_of(descs);
      if (s == nullptr) {
        r.result = {control_status::not_supported, "the GPU has no sustained power limit in mW"};
        return r;
      }
      r.current_mw = ze_positive_mw(s->limit);
      if (s->limitValueLocked) {
        r.result = {control_status::not_supported, "the sustained power limit is locked"};
        return r;
      }
    }
  }
  // Drivers without the Ext calls, or that do not implement them: the older call.
  if (rc == kErrorUnsupportedFeature && fn.zesPowerGetLimits != nullptr) {
    zes_power_sustained_limit_t s{};
    rc = fn.zesPowerGetLimits(d.handle, &s, nullptr, nullptr);
    if (rc == kSuccess) r.current_mw = ze_positive_mw(s.power);
  }
  if (rc != kSuccess) {
    r.result = control_of_ze(lib, rc);
    return r;
  }
  if (!r.current_mw || !r.min_mw || !r.max_mw) {
    r.result = {control_status::not_supported,
                "the driver reports no sustained power limit and range (zes_power_properties_t "
                "minLimit, maxLimit)"};
  } else if (*r.min_mw >= *r.max_mw) {
    r.result = {control_status::not_supported, "the power limit's range is a single value"};
  }
  return r;
}

control_result set_sustained_limit(const library& lib, const limit_domain& d,
                                   std::uint32_t limit_mw) {
  const entry_points& fn = lib.fn();
  if (d.handle == nullptr) {
    return {control_status::not_supported, "no power domain of this GPU may be controlled"};
  }
  if (limit_mw > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())) {
    return {control_status::invalid, "the limit is out of Level Zero's range"};
  }
  const auto mw = static_cast<std::int32_t>(limit_mw);
  ze_result_t rc = kErrorUnsupportedFeature;
  if (fn.zesPowerGetLimitsExt != nullptr && fn.zesPowerSetLimitsExt != nullptr) {
    std::vector<zes_power_limit_ext_desc_t> descs;
    rc = ze_ext_limits(fn, d.handle, descs);
    if (rc == kSuccess) {
      zes_power_limit_ext_desc_t* s = ze_sustained_of(descs);
      if (s == nullptr) {
        return {control_status::not_supported, "the GPU has no sustained power limit in mW"};
      }
      // Only this descriptor: the others (burst, peak) stay as they are.
      zes_power_limit_ext_desc_t one = *s;
      one.pNext = nullptr;
      one.limit = mw;
      std::uint32_t count = 1;
      rc = fn.zesPowerSetLimitsExt(d.handle, &count, &one);
    }
  }
  if (rc == kErrorUnsupportedFeature && fn.zesPowerGetLimits != nullptr &&
      fn.zesPowerSetLimits != nullptr) {
    zes_power_sustained_limit_t s{};
    rc = fn.zesPowerGetLimits(d.handle, &s, nullptr, nullptr);
    if (rc == kSuccess) {
      s.enabled = 1;
      s.power = mw;
      rc = fn.zesPowerSetLimits(d.handle, &s, nullptr, nullptr);
    }
  }
  return rc == kSuccess ? control_result{} : control_of_ze(lib, rc);
}

}  // namespace joules::ze
