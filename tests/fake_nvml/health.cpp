#include "health.hpp"

#include <algorithm>
#include <limits>

#include "json_fields.hpp"

using fake_gpu::json_fields;
using fake_gpu::scenario_error;

namespace fake_nvml {
namespace {

unsigned int small(json_fields& f, const std::string& key, unsigned int fallback) {
  const unsigned long long v = f.unsigned_integer(key, fallback);
  if (v > std::numeric_limits<unsigned int>::max()) f.fail(key, "is too large");
  return static_cast<unsigned int>(v);
}

void read_clocks(json_fields& f, const std::string& key, unsigned int (&mhz)[4]) {
  if (!f.has(key)) return;
  json_fields clocks(f.at(key), f.sub(key));
  mhz[0] = small(clocks, "graphics", mhz[0]);
  mhz[1] = small(clocks, "sm", mhz[1]);
  mhz[2] = small(clocks, "memory", mhz[2]);
  mhz[3] = small(clocks, "video", mhz[3]);
  clocks.finish();
}

}  // namespace

device_health parse_health(const nlohmann::json& health, const std::string& path,
                           const device_health& base) {
  device_health h = base;
  json_fields f(health, path);
  h.gpu_util_percent = small(f, "gpu_util_percent", h.gpu_util_percent);
  h.memory_util_percent = small(f, "memory_util_percent", h.memory_util_percent);
  h.encoder_util_percent = small(f, "encoder_util_percent", h.encoder_util_percent);
  h.decoder_util_percent = small(f, "decoder_util_percent", h.decoder_util_percent);
  h.sm_util_percent = f.non_negative("sm_util_percent", h.sm_util_percent);
  h.sm_occupancy_percent = f.non_negative("sm_occupancy_percent", h.sm_occupancy_percent);
  h.tensor_util_percent = f.non_negative("tensor_util_percent", h.tensor_util_percent);
  h.dram_bw_util_percent = f.non_negative("dram_bw_util_percent", h.dram_bw_util_percent);
  h.memory_total_bytes = f.unsigned_integer("memory_total_bytes", h.memory_total_bytes);
  h.memory_reserved_bytes = f.unsigned_integer("memory_reserved_bytes", h.memory_reserved_bytes);
  h.memory_used_bytes = f.unsigned_integer("memory_used_bytes", h.memory_used_bytes);
  if (h.memory_reserved_bytes + h.memory_used_bytes > h.memory_total_bytes) {
    f.fail("memory_used_bytes", "plus memory_reserved_bytes exceeds memory_total_bytes");
  }
  h.temperature_c = small(f, "temperature_c", h.temperature_c);
  h.memory_temperature_c = small(f, "memory_temperature_c", h.memory_temperature_c);
  h.shutdown_temperature_c = small(f, "shutdown_temperature_c", h.shutdown_temperature_c);
  h.slowdown_temperature_c = small(f, "slowdown_temperature_c", h.slowdown_temperature_c);
  h.memory_max_temperature_c = small(f, "memory_max_temperature_c", h.memory_max_temperature_c);
  h.gpu_max_temperature_c = small(f, "gpu_max_temperature_c", h.gpu_max_temperature_c);
  read_clocks(f, "clocks_mhz", h.clock_mhz);
  read_clocks(f, "max_clocks_mhz", h.max_clock_mhz);
  h.clocks_event_reasons = f.unsigned_integer("clocks_event_reasons", h.clocks_event_reasons);
  h.performance_state = small(f, "performance_state", h.performance_state);
  h.fan_count = small(f, "fan_count", h.fan_count);
  h.fan_speed_percent = small(f, "fan_speed_percent", h.fan_speed_percent);
  h.ecc_enabled = f.boolean("ecc_enabled", h.ecc_enabled);
  h.ecc_corrected = f.unsigned_integer("ecc_corrected", h.ecc_corrected);
  h.ecc_uncorrected = f.unsigned_integer("ecc_uncorrected", h.ecc_uncorrected);
  h.ecc_corrected_aggregate = std::max(
      h.ecc_corrected, f.unsigned_integer("ecc_corrected_aggregate", h.ecc_corrected_aggregate));
  h.ecc_uncorrected_aggregate =
      std::max(h.ecc_uncorrected,
               f.unsigned_integer("ecc_uncorrected_aggregate", h.ecc_uncorrected_aggregate));
  h.retired_pages = small(f, "retired_pages", h.retired_pages);
  h.retired_pages_single_bit = small(f, "retired_pages_single_bit", h.retired_pages_single_bit);
  h.retirement_pending = f.boolean("retirement_pending", h.retirement_pending);
  h.remapped_rows_corrected = small(f, "remapped_rows_corrected", h.remapped_rows_corrected);
  h.remapped_rows_uncorrected = small(f, "remapped_rows_uncorrected", h.remapped_rows_uncorrected);
  h.remap_pending = f.boolean("remap_pending", h.remap_pending);
  h.remap_failure = f.boolean("remap_failure", h.remap_failure);
  h.pcie_generation = small(f, "pcie_generation", h.pcie_generation);
  h.pcie_width = small(f, "pcie_width", h.pcie_width);
  h.pcie_max_generation = small(f, "pcie_max_generation", h.pcie_max_generation);
  h.pcie_max_width = small(f, "pcie_max_width", h.pcie_max_width);
  h.pcie_replay_counter = small(f, "pcie_replay_counter", h.pcie_replay_counter);
  h.pcie_tx_kib_s = small(f, "pcie_tx_kib_s", h.pcie_tx_kib_s);
  h.pcie_rx_kib_s = small(f, "pcie_rx_kib_s", h.pcie_rx_kib_s);
  h.nvlink_tx_kib_s = small(f, "nvlink_tx_kib_s", h.nvlink_tx_kib_s);
  h.nvlink_rx_kib_s = small(f, "nvlink_rx_kib_s", h.nvlink_rx_kib_s);
  h.nvlink_links = small(f, "nvlink_links", h.nvlink_links);
  if (h.nvlink_links > 18) f.fail("nvlink_links", "must be at most 18 (NVML_NVLINK_MAX_LINKS)");
  if (f.has("nvlink_links_down")) {
    const nlohmann::json& down = f.at("nvlink_links_down");
    if (!down.is_array()) f.fail("nvlink_links_down", "must be an array of link indices");
    h.nvlink_down_mask = 0;
    for (const nlohmann::json& link : down) {
      if (!link.is_number_unsigned() || link.get<unsigned long long>() >= h.nvlink_links) {
        f.fail("nvlink_links_down", "must hold link indices below nvlink_links");
      }
      h.nvlink_down_mask |= 1ULL << link.get<unsigned>();
    }
  }
  h.nvlink_crc_flit_errors = f.unsigned_integer("nvlink_crc_flit_errors", h.nvlink_crc_flit_errors);
  h.nvlink_crc_data_errors = f.unsigned_integer("nvlink_crc_data_errors", h.nvlink_crc_data_errors);
  h.nvlink_replay_errors = f.unsigned_integer("nvlink_replay_errors", h.nvlink_replay_errors);
  h.nvlink_recovery_errors = f.unsigned_integer("nvlink_recovery_errors", h.nvlink_recovery_errors);
  h.nvlink_errors_link = small(f, "nvlink_errors_link", h.nvlink_errors_link);
  if (h.nvlink_links > 0 && h.nvlink_errors_link >= h.nvlink_links)
    f.fail("nvlink_errors_link", "must be a link index below nvlink_links");
  h.persistence_mode = f.boolean("persistence_mode", h.persistence_mode);
  f.finish();
  return h;
}

}  // namespace fake_nvml
