// The health readings that come from field values, in one nvmlDeviceGetFieldValues call per read,
// and the getters of the slow tier (nvml_health.hpp).  A field that does not answer at the probe
// is off for good, and its getter, where it has one, is probed in its place.

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "backends/nvml/nvml_decode.hpp"
#include "backends/nvml/nvml_health.hpp"

namespace joules::nvml {

// The fields of one reading; all of them must answer for the reading to count.
struct health_reader::field_group {
  reading r;
  bool slow;  // read with the slow tier; else every read
  std::size_t count;
  std::array<unsigned int, 4> ids;
};

const health_reader::field_group health_reader::kFieldGroups[] = {
    {field_memory_temperature, false, 1, {kFiDevMemoryTemp}},
    // Throughput from the byte counters (12.5+): nvmlDeviceGetPcieThroughput would block the
    // sampler thread for 20 ms per call ("a byte counter over a 20ms interval").
    {field_pcie_bytes, false, 2, {kFiDevPcieCountTxBytes, kFiDevPcieCountRxBytes}},
    {field_ecc_corrected_volatile, true, 1, {kFiDevEccSbeVolTotal}},
    {field_ecc_uncorrected_volatile, true, 1, {kFiDevEccDbeVolTotal}},
    {field_ecc_corrected_aggregate, true, 1, {kFiDevEccSbeAggTotal}},
    {field_ecc_uncorrected_aggregate, true, 1, {kFiDevEccDbeAggTotal}},
    {field_retired_single, true, 1, {kFiDevRetiredSbe}},
    {field_retired_double, true, 1, {kFiDevRetiredDbe}},
    {field_retirement_pending, true, 1, {kFiDevRetiredPending}},
    {field_remapped_rows,
     true,
     4,
     {kFiDevRemappedCor, kFiDevRemappedUnc, kFiDevRemappedPending, kFiDevRemappedFailure}},
    {field_pcie_replay, true, 1, {kFiDevPcieReplayCounter}},
    // The power limit in force (the backend reads the same field for device_info::power_limit).
    {field_power_limit, true, 1, {kFiDevPowerCurrentLimit}},
    {field_nvlink_errors,
     true,
     4,
     {kFiDevNvlinkCrcFlitErrorTotal, kFiDevNvlinkCrcDataErrorTotal, kFiDevNvlinkReplayErrorTotal,
      kFiDevNvlinkRecoveryErrorTotal}},
};

void health_reader::read_fields(health_reading& h, bool slow, mono_time now) {
  std::array<nvmlFieldValue_t, std::size(kFieldGroups) * 4> values{};  // 4: the most per group
  std::array<const field_group*, std::size(kFieldGroups)> asked{};
  std::size_t groups = 0;
  std::size_t n = 0;
  for (const field_group& g : kFieldGroups) {
    if (state_[g.r] == state::off || (g.slow && !slow)) continue;
    // ECC counts exist only while ECC is on (the mode changes at a reboot).
    const bool ecc = g.r >= field_ecc_corrected_volatile && g.r <= field_ecc_uncorrected_aggregate;
    if (fn_.nvmlDeviceGetFieldValues == nullptr || (ecc && !ecc_enabled_.value_or(false))) {
      state_[g.r] = state::off;
      continue;
    }
    for (std::size_t k = 0; k < g.count; ++k)
      values[n + k].fieldId = g.ids[k];
    n += g.count;
    asked[groups++] = &g;
  }
  if (n == 0 || lost_) return;
  const nvmlReturn_t rc = fn_.nvmlDeviceGetFieldValues(device_, static_cast<int>(n), values.data());
  std::size_t at = 0;
  for (std::size_t i = 0; i < groups; ++i) {
    const field_group& g = *asked[i];
    nvmlReturn_t status = rc;
    for (std::size_t k = 0; k < g.count && status == kSuccess; ++k)
      status = values[at + k].nvmlReturn;
    if (settle(g.r, status)) apply_field(g.r, &values[at], g.slow ? slow_ : h, now);
    at += g.count;
  }
}

void health_reader::apply_field(reading r, const nvmlFieldValue_t* v, health_reading& h,
                                mono_time now) {
  const auto u32 = [](const nvmlFieldValue_t& f) {
    return static_cast<unsigned>(std::min<std::uint64_t>(field_as_u64(f), 0xFFFFFFFFU));
  };
  switch (r) {
    case field_memory_temperature:
      h.memory_temperature_c = field_as_double(v[0]);
      break;
    case field_pcie_bytes: {
      const std::array<std::uint64_t, 2> bytes{field_as_u64(v[0]), field_as_u64(v[1])};
      if (pcie_bytes_) {
        const double dt = seconds_between(pcie_bytes_t_, now);
        h.pcie_tx_bytes_per_s = counter_rate((*pcie_bytes_)[0], bytes[0], dt);
        h.pcie_rx_bytes_per_s = counter_rate((*pcie_bytes_)[1], bytes[1], dt);
      }
      pcie_bytes_ = bytes;
      pcie_bytes_t_ = now;
      break;
    }
    case field_ecc_corrected_volatile:
      h.ecc_corrected_volatile = field_as_u64(v[0]);
      break;
    case field_ecc_uncorrected_volatile:
      h.ecc_uncorrected_volatile = field_as_u64(v[0]);
      break;
    case field_ecc_corrected_aggregate:
      h.ecc_corrected_aggregate = field_as_u64(v[0]);
      break;
    case field_ecc_uncorrected_aggregate:
      h.ecc_uncorrected_aggregate = field_as_u64(v[0]);
      break;
    case field_retired_single:
      h.retired_pages_single_bit = u32(v[0]);
      break;
    case field_retired_double:
      h.retired_pages_double_bit = u32(v[0]);
      break;
    case field_retirement_pending:
      h.retirement_pending = field_as_u64(v[0]) != 0;
      break;
    case field_remapped_rows:
      h.remapped_rows_corrected = u32(v[0]);
      h.remapped_rows_uncorrected = u32(v[1]);
      h.remap_pending = field_as_u64(v[2]) != 0;
      h.remap_failure = field_as_u64(v[3]) != 0;
      break;
    case field_pcie_replay:
      h.pcie_replays = field_as_u64(v[0]);
      break;
    case field_power_limit:
      h.power_limit_w = field_as_double(v[0]) / 1000.0;
      break;
    case field_nvlink_errors: {
      const std::array<std::uint64_t, 4> counts{field_as_u64(v[0]), field_as_u64(v[1]),
                                                field_as_u64(v[2]), field_as_u64(v[3])};
      h.nvlink_crc_flit_errors = counts[0];
      h.nvlink_crc_data_errors = counts[1];
      h.nvlink_replay_errors = counts[2];
      h.nvlink_recovery_errors = counts[3];
      // Against the first reading: errors that grew while joules watched.  A driver reload
      // resets the counts; they are then compared with the new ones.
      bool rising = false;
      if (nvlink_errors_) {
        for (std::size_t k = 0; k < counts.size(); ++k)
          rising = rising || counts[k] > (*nvlink_errors_)[k];
        for (std::size_t k = 0; k < counts.size(); ++k) {
          if (counts[k] < (*nvlink_errors_)[k]) nvlink_errors_ = counts;
        }
      } else {
        nvlink_errors_ = counts;
      }
      h.nvlink_errors_rising = rising;
      break;
    }
    default:
      break;
  }
}

void health_reader::read_slow_getters() {
  health_reading& h = slow_;
  // A getter stands in for its field only once the field is off.
  const auto instead_of = [&](reading field) { return state_[field] == state::off; };
  const bool counts = ecc_enabled_.value_or(false) && fn_.nvmlDeviceGetTotalEccErrors != nullptr;
  auto count = [&](reading field, reading r, unsigned type, unsigned counter,
                   std::optional<std::uint64_t>& out) {
    unsigned long long n = 0;
    if (instead_of(field) && attempt(r, counts, [&] {
          return fn_.nvmlDeviceGetTotalEccErrors(device_, type, counter, &n);
        })) {
      out = n;
    }
  };
  count(field_ecc_corrected_volatile, ecc_corrected_volatile, kMemoryErrorCorrected, kVolatileEcc,
        h.ecc_corrected_volatile);
  count(field_ecc_uncorrected_volatile, ecc_uncorrected_volatile, kMemoryErrorUncorrected,
        kVolatileEcc, h.ecc_uncorrected_volatile);
  count(field_ecc_corrected_aggregate, ecc_corrected_aggregate, kMemoryErrorCorrected,
        kAggregateEcc, h.ecc_corrected_aggregate);
  count(field_ecc_uncorrected_aggregate, ecc_uncorrected_aggregate, kMemoryErrorUncorrected,
        kAggregateEcc, h.ecc_uncorrected_aggregate);

  // Retired pages (Kepler to Volta; Ampere and newer remap rows instead): a count of 0 sizes
  // the list, INSUFFICIENT_SIZE then carries the count.
  auto pages = [&](reading field, reading r, unsigned cause, std::optional<unsigned>& out) {
    unsigned int n = 0;
    if (instead_of(field) && attempt(r, fn_.nvmlDeviceGetRetiredPages != nullptr, [&] {
          const nvmlReturn_t rc = fn_.nvmlDeviceGetRetiredPages(device_, cause, &n, nullptr);
          return rc == kErrorInsufficientSize ? kSuccess : rc;
        })) {
      out = n;
    }
  };
  pages(field_retired_single, retired_single, kPageRetirementMultipleSingleBit,
        h.retired_pages_single_bit);
  pages(field_retired_double, retired_double, kPageRetirementDoubleBit, h.retired_pages_double_bit);
  unsigned int pending = 0;
  if (instead_of(field_retirement_pending) &&
      attempt(retirement_pending, fn_.nvmlDeviceGetRetiredPagesPendingStatus != nullptr,
              [&] { return fn_.nvmlDeviceGetRetiredPagesPendingStatus(device_, &pending); })) {
    h.retirement_pending = pending == kFeatureEnabled;
  }
  unsigned int corr = 0;
  unsigned int unc = 0;
  unsigned int failure = 0;
  if (instead_of(field_remapped_rows) &&
      attempt(remapped_rows, fn_.nvmlDeviceGetRemappedRows != nullptr, [&] {
        return fn_.nvmlDeviceGetRemappedRows(device_, &corr, &unc, &pending, &failure);
      })) {
    h.remapped_rows_corrected = corr;
    h.remapped_rows_uncorrected = unc;
    h.remap_pending = pending != 0;
    h.remap_failure = failure != 0;
  }
  unsigned int v = 0;
  if (instead_of(field_pcie_replay) &&
      attempt(pcie_replay, fn_.nvmlDeviceGetPcieReplayCounter != nullptr,
              [&] { return fn_.nvmlDeviceGetPcieReplayCounter(device_, &v); })) {
    h.pcie_replays = v;
  }
  if (instead_of(field_power_limit) &&
      attempt(power_limit, fn_.nvmlDeviceGetEnforcedPowerLimit != nullptr,
              [&] { return fn_.nvmlDeviceGetEnforcedPowerLimit(device_, &v); })) {
    h.power_limit_w = v / 1000.0;
  }
  // Neither has a field.  The width changes only when the link trains again (a fault).
  if (attempt(pcie_width, fn_.nvmlDeviceGetCurrPcieLinkWidth != nullptr,
              [&] { return fn_.nvmlDeviceGetCurrPcieLinkWidth(device_, &v); })) {
    h.pcie_width = v;
  }
  if (attempt(persistence, fn_.nvmlDeviceGetPersistenceMode != nullptr,
              [&] { return fn_.nvmlDeviceGetPersistenceMode(device_, &v); })) {
    h.persistence_mode = v == kFeatureEnabled;
  }
  read_nvlinks(h);
}

void health_reader::read_nvlinks(health_reading& h) {
  h.nvlink_links.clear();
  if (state_[nvlink_state] == state::off || lost_) return;
  if (fn_.nvmlDeviceGetNvLinkState == nullptr) {
    state_[nvlink_state] = state::off;
    return;
  }
  // The first time, every index NVML has: the links of this GPU answer, whether up or down.  A
  // GPU without NVLink answers NOT_SUPPORTED at the first.
  const bool probe = !nvlinks_probed_;
  if (probe) {
    nvlinks_probed_ = true;
    for (unsigned link = 0; link < kNvlinkMaxLinks; ++link)
      nvlinks_.push_back(link);
  }
  std::vector<unsigned> answered;
  for (unsigned link : nvlinks_) {
    unsigned int active = 0;
    const nvmlReturn_t rc = fn_.nvmlDeviceGetNvLinkState(device_, link, &active);
    if (rc == kErrorGpuIsLost) {
      lost_ = true;
      return;
    }
    if (rc == kSuccess) {
      answered.push_back(link);
      h.nvlink_links.push_back({link, active == kFeatureEnabled});
    } else if (probe && (rc == kErrorNotSupported || rc == kErrorFunctionNotFound)) {
      break;
    } else if (!probe) {
      h.nvlink_links.clear();  // unknown this time
      return;
    }
  }
  if (probe) {
    nvlinks_ = answered;
    state_[nvlink_state] = nvlinks_.empty() ? state::off : state::on;
  }
  read_nvlink_link_errors(h);
}

void health_reader::read_nvlink_link_errors(health_reading& h) {
  // Four calls per link: only to find which links the errors the totals count are on.
  const std::array<std::optional<std::uint64_t>, 4> totals{
      h.nvlink_crc_flit_errors, h.nvlink_crc_data_errors, h.nvlink_replay_errors,
      h.nvlink_recovery_errors};
  const bool errors =
      std::any_of(totals.begin(), totals.end(), [](const auto& n) { return n.value_or(0) > 0; });
  if (!errors || fn_.nvmlDeviceGetNvLinkErrorCounter == nullptr) {
    link_errors_.clear();
    link_errors_at_ = totals;
    return;
  }
  if (totals != link_errors_at_ && !h.nvlink_links.empty()) {
    link_errors_at_ = totals;
    link_errors_.clear();
    for (const joules::nvlink_state& l : h.nvlink_links) {
      joules::nvlink_state counts{l.link, l.active, {}, {}, {}, {}};
      const std::array<std::pair<unsigned, std::optional<std::uint64_t>*>, 4> asked{
          {{kNvlinkErrorDlCrcFlit, &counts.crc_flit_errors},
           {kNvlinkErrorDlCrcData, &counts.crc_data_errors},
           {kNvlinkErrorDlReplay, &counts.replay_errors},
           {kNvlinkErrorDlRecovery, &counts.recovery_errors}}};
      for (const auto& [counter, out] : asked) {
        unsigned long long n = 0;
        const nvmlReturn_t rc = fn_.nvmlDeviceGetNvLinkErrorCounter(device_, l.link, counter, &n);
        if (rc == kErrorGpuIsLost) {
          lost_ = true;
          return;
        }
        if (rc == kSuccess) *out = n;
      }
      link_errors_.push_back(counts);
    }
  }
  for (joules::nvlink_state& l : h.nvlink_links) {
    const auto known =
        std::find_if(link_errors_.begin(), link_errors_.end(),
                     [&](const joules::nvlink_state& c) { return c.link == l.link; });
    if (known == link_errors_.end()) continue;
    l.crc_flit_errors = known->crc_flit_errors;
    l.crc_data_errors = known->crc_data_errors;
    l.replay_errors = known->replay_errors;
    l.recovery_errors = known->recovery_errors;
  }
}

}  // namespace joules::nvml
