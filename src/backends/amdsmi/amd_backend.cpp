// The AMD backend: the GPUs of AMD SMI or ROCm SMI, each read through the processor of its
// primary partition.  Energy comes from the accumulated energy counter (counts of the counter's
// resolution, a 64-bit count: docs/amd-notes.md §3); power from current_socket_power, or
// average_socket_power on GPUs that have only that.  Two calls per GPU and reading; one while the
// sampler pins counter updates.

#include <fmt/format.h>

#include "backends/amdsmi/amd_backend.hpp"
#include "backends/amdsmi/amd_source.hpp"

namespace joules::amd {
namespace {

// The highest power a wrap of the counter may imply (a decrease that needs more is a reset,
// counter_track.hpp): well above any AMD board's limit, far below what a reset implies.
constexpr double kMaxPlausibleWatts = 5000.0;

class amd_backend final : public backend {
 public:
  explicit amd_backend(std::unique_ptr<library> lib) : lib_(std::move(lib)) {
    source_ = lib_->is_amdsmi() ? make_amdsmi_source(*lib_) : make_rocm_smi_source(*lib_);
    meta_.backend = lib_->is_amdsmi() ? "amdsmi" : "rocm_smi";
    meta_.library_path = lib_->path();
    meta_.library_version = lib_->version();
    meta_.symbols_found = lib_->symbol_count();
    meta_.symbols_known = lib_->known_symbol_count();
    enumerate();
  }

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return infos_; }

  device_reading read(std::size_t i, read_what what) override {
    gpu_state& g = states_[i];
    device_reading r;
    if (g.lost) return failed(read_status::lost, g.lost_code);
    std::uint32_t code = 0;
    if (g.counter && (what != read_what::power || g.power == power_source::none)) {
      energy_count e;
      const outcome o = source_->energy(g.primary, e, code);
      if (o == outcome::ok) {
        r.energy_counts = e.counts;
      } else if (o == outcome::not_supported) {
        r.counter_unsupported = true;
      } else {
        return fail(g, o, code);
      }
    }
    if (what != read_what::counter && g.power != power_source::none) {
      double w = 0.0;
      const outcome o = source_->power(g.primary, g.power, w, code);
      if (o == outcome::ok) {
        r.power = watts{w};
      } else if (o == outcome::not_supported) {
        r.power_unsupported = true;
      } else {
        return fail(g, o, code);
      }
    }
    return r;
  }

  health_reading read_health(std::size_t i) override {
    if (states_[i].lost) return {};
    return source_->health(states_[i].primary);
  }

  // The power cap of the GPU's primary processor, which the driver applies to the whole board
  // (docs/amd-notes.md §9); µW in both libraries, mW here.
  power_limit_reading read_power_limit(std::size_t i) override {
    power_limit_reading r;
    gpu_state& g = states_[i];
    if (g.lost) {
      r.result = {control_status::lost, lib_->error_string(g.lost_code)};
      return r;
    }
    const cap_reading c = source_->read_cap(g.primary);
    r.result = c.result;
    r.current_mw = milliwatts(c.current_uw);
    r.default_mw = milliwatts(c.default_uw);
    r.min_mw = milliwatts(c.min_uw);
    r.max_mw = milliwatts(c.max_uw);
    if (r.result.ok() && (!r.current_mw || !r.min_mw || !r.max_mw)) {
      // A range without a lower end (0) would let tune try 0 W: no control rather than that.
      r.result = {control_status::not_supported, "the driver reports no power cap range"};
    }
    if (r.result.ok() && *r.min_mw >= *r.max_mw) {
      // A range of one value: no control.
      r.result = {control_status::not_supported, "the driver's power cap range is a single value"};
    }
    if (r.result.status == control_status::lost) g.lost = true;
    return r;
  }

  control_result set_power_limit(std::size_t i, std::uint32_t limit_mw) override {
    gpu_state& g = states_[i];
    if (g.lost) return {control_status::lost, lib_->error_string(g.lost_code)};
    control_result r = source_->set_cap(g.primary, std::uint64_t{limit_mw} * 1000U);
    if (r.status == control_status::lost) g.lost = true;
    return r;
  }

  device_capabilities probe_capabilities(std::size_t i) override {
    device_capabilities c;
    const std::size_t p = states_[i].primary;
    (void)source_->health(p);
    c.health_readings = source_->health_supported(p);
    // The cap and its range can be read: tune may set it (doctor sets nothing).
    c.power_limit_control = read_power_limit(i).result.ok();
    return c;
  }

 private:
  struct gpu_state {
    std::size_t primary = 0;  // the processor read for the whole GPU
    bool counter = false;
    power_source power = power_source::none;
    bool lost = false;
    std::uint32_t lost_code = 0;
  };

  // µW -> mW; none for 0 (not reported), and for values no board has (above 1 MW).
  static std::optional<std::uint32_t> milliwatts(const std::optional<std::uint64_t>& uw) {
    if (!uw || *uw == 0 || *uw > 1'000'000'000'000ULL) return std::nullopt;
    return static_cast<std::uint32_t>(*uw / 1000U);
  }

  static device_reading failed(read_status s, std::uint32_t code) {
    device_reading r;
    r.status = s;
    r.error_code = static_cast<int>(code);
    return r;
  }

  static device_reading fail(gpu_state& g, outcome o, std::uint32_t code) {
    if (o == outcome::lost) {
      g.lost = true;
      g.lost_code = code;
      return failed(read_status::lost, code);
    }
    return failed(read_status::error, code);
  }

  void enumerate() {
    const std::vector<processor_info> procs = source_->processors();
    meta_.driver_version = source_->driver_version();
    std::vector<processor_place> places;
    places.reserve(procs.size());
    for (const auto& p : procs)
      places.push_back(processor_place{p.pci, p.partition_id});
    for (const gpu_group& g : group_partitions(places)) {
      const processor_info& primary = procs[g.primary];
      device_info info;
      info.vendor = "amd";
      info.index = static_cast<unsigned>(g.primary);
      if (g.members.size() > 1) {
        for (std::size_t m : g.members)
          info.partition_indices.push_back(static_cast<unsigned>(m));
      }
      info.name = primary.name.empty() ? "AMD GPU" : primary.name;
      pci_address a = primary.pci;
      a.function = 0;  // the GPU's own function; partitions are numbered in it
      a.partition.reset();
      info.pci_bus_id = format_pci(a);
      info.uuid = primary.uuid;
      if (primary.unique_id && !primary.uuid.starts_with("GPU-")) {
        info.aliases.push_back("GPU-" + *primary.unique_id);  // as ROCR_VISIBLE_DEVICES takes it
      }
      probe(info, g.primary);
    }
  }

  void probe(device_info& info, std::size_t primary) {
    gpu_state st;
    st.primary = primary;
    energy_count e;
    std::uint32_t code = 0;
    const outcome energy = source_->energy(primary, e, code);
    if (energy == outcome::ok && e.resolution_uj > 0.0F) {
      st.counter = true;
      info.has_energy_counter = true;
      info.counter_unit_uj = counter_unit_uj(e.resolution_uj);
      info.wrap = counter_wrap{0, watts{kMaxPlausibleWatts}};  // 64-bit: wraps at 2^64 counts
    }
    st.power = source_->probe_power(primary);
    info.power = st.power;
    const power_caps caps = source_->caps(primary);
    auto w = [](const std::optional<double>& v) {
      return v ? std::optional<watts>(watts{*v}) : std::nullopt;
    };
    info.power_limit = w(caps.limit_w);
    info.default_power_limit = w(caps.default_w);
    info.min_power_limit = w(caps.min_w);
    info.max_power_limit = w(caps.max_w);
    const auto failed = [](outcome o) { return o == outcome::lost || o == outcome::failed; };
    double watts_read = 0.0;
    std::uint32_t power_code = 0;
    if (!st.counter && st.power == power_source::none && failed(energy) &&
        failed(source_->power(primary, power_source::socket_current, watts_read, power_code))) {
      // Neither energy nor power could be read, and not because the GPU lacks them (it fell off
      // the bus before joules started): listed as lost from the first moment, as NVIDIA's are.
      info.unreadable =
          fmt::format("every reading of its energy and power failed: {}", lib_->error_string(code));
      st.lost = true;
      st.lost_code = code;
    } else if (!st.counter && st.power == power_source::none) {
      notices_.push_back(fmt::format(
          "AMD GPU {} ({}) gives neither an energy counter nor power readings (a virtual "
          "machine's guest has neither); it is not measured",
          info.index, info.pci_bus_id));
    }
    infos_.push_back(std::move(info));
    states_.push_back(st);
  }

  std::unique_ptr<library> lib_;
  std::unique_ptr<source> source_;  // after lib_: destroyed first
  backend_meta meta_;
  std::vector<device_info> infos_;
  std::vector<gpu_state> states_;
};

}  // namespace
}  // namespace joules::amd

namespace joules {

std::unique_ptr<backend> open_amd_backend(const std::string& amdsmi_library,
                                          const std::string& rocm_smi_library) {
  return std::make_unique<amd::amd_backend>(amd::library::open(amdsmi_library, rocm_smi_library));
}

}  // namespace joules
