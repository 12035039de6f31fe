#include "backends/rapl/cpu_backend.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace joules::rapl {
namespace {

std::string join_ids(const discovery& d, const std::vector<std::size_t>& zones) {
  std::string out;
  for (std::size_t i : zones) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", d.zones[i].id, d.zones[i].name);
  }
  return out;
}

component_status component(device_kind kind, energy_method method, std::string detail,
                           std::string fix) {
  component_status c;
  c.kind = kind;
  c.method = method;
  c.detail = std::move(detail);
  c.fix = std::move(fix);
  return c;
}

}  // namespace

cpu_backend::cpu_backend(const component_options& options)
    : proc_root_(options.proc_root.empty() ? default_proc_root() : options.proc_root) {
  meta_.backend = "rapl";
  discovery_ = discover(options.powercap_root.empty() ? default_root() : options.powercap_root);
  meta_.library_path = discovery_.root;
  cpu_ = read_cpu_identity(proc_root_);

  auto not_measured = [&](device_kind kind, const std::string& reason, bool unreadable) {
    component_status c;
    c.kind = kind;
    c.method = energy_method::none;
    c.detail = reason.empty() ? std::string("no RAPL domain for it") : reason;
    if (unreadable) c.fix = discovery_.fix;
    return c;
  };

  if (options.cpu) {
    if (!discovery_.cpu.empty()) {
      add_zones(discovery_.cpu, device_kind::cpu);
      components_.push_back(component(device_kind::cpu, energy_method::counter,
                                      fmt::format("RAPL {}", join_ids(discovery_, discovery_.cpu)),
                                      ""));
    } else if (options.estimate_cpu) {
      add_estimate(options);
    } else {
      const auto c =
          not_measured(device_kind::cpu, discovery_.cpu_reason, discovery_.cpu_unreadable);
      if (options.named) {
        throw fatal_error(fmt::format(
            "--components cpu: CPU energy cannot be measured: {}{}; or add --estimate-cpu for a "
            "labelled estimate",
            c.detail, c.fix.empty() ? "" : "; " + c.fix));
      }
      components_.push_back(c);
    }
  }
  if (options.dram) {
    // With psys as the CPU, the DRAM is already in it: adding its zones would count it twice.
    const bool in_psys = discovery_.dram_inside_psys && options.cpu && !discovery_.cpu.empty();
    if (!discovery_.dram.empty() && !in_psys) {
      add_zones(discovery_.dram, device_kind::dram);
      components_.push_back(component(device_kind::dram, energy_method::counter,
                                      fmt::format("RAPL {}", join_ids(discovery_, discovery_.dram)),
                                      ""));
    } else {
      auto c = not_measured(device_kind::dram, discovery_.dram_reason, discovery_.dram_unreadable);
      if (in_psys) {
        c.detail =
            fmt::format("counted in the CPU's {} (psys covers the whole platform, memory included)",
                        join_ids(discovery_, discovery_.cpu));
        c.fix.clear();
        if (!discovery_.dram.empty()) {
          c.detail += fmt::format(", not added twice; --components without cpu measures {} alone",
                                  join_ids(discovery_, discovery_.dram));
        }
      }
      if (options.named) {
        throw fatal_error(fmt::format("--components dram: DRAM energy cannot be measured: {}{}",
                                      c.detail, c.fix.empty() ? "" : "; " + c.fix));
      }
      components_.push_back(c);
    }
  }
  // The zones found but not summed belong to no one component: they go with the first (doctor
  // shows them under RAPL).
  if (!components_.empty()) components_.front().left_out = discovery_.left_out;
}

void cpu_backend::add_zones(const std::vector<std::size_t>& zones, device_kind kind) {
  for (std::size_t zi : zones) {
    const zone& z = discovery_.zones[zi];
    device_info d;
    d.kind = kind;
    d.index = z.top;
    d.uuid = z.id;
    if (kind == device_kind::dram) {
      d.name = "DRAM";
    } else if (z.kind == domain::psys) {
      d.name = "platform (psys)";
    } else {
      d.name = cpu_.model.empty() ? std::string("CPU package") : cpu_.model;
    }
    d.architecture = z.name;  // the RAPL domain: "package-0", "dram", "psys"
    d.has_energy_counter = true;
    d.counter_continuous = true;
    const std::uint64_t modulus = wrap_modulus_uj(*z.max_energy_range_uj);
    d.wrap = counter_wrap{modulus, watts{kMaxPlausiblePowerW}};
    d.max_read_interval = seconds(max_read_interval_s(modulus));
    devices_.push_back(std::move(d));
    paths_.push_back(z.path);
  }
}

void cpu_backend::add_estimate(const component_options& options) {
  std::string model;
  double tdp = 0.0;
  if (options.cpu_tdp_w) {
    tdp = *options.cpu_tdp_w;
    model = fmt::format("--cpu-tdp {} W", tdp);
  } else if (auto m = lookup_tdp(cpu_.model)) {
    tdp = m->tdp_w;
    model = fmt::format("{}, TDP {} W from data/cpu_tdp.csv", m->name, tdp);
  } else {
    throw fatal_error(fmt::format(
        "--estimate-cpu: CPU '{}' is not in joules' TDP table (data/cpu_tdp.csv); give its TDP "
        "with --cpu-tdp W",
        cpu_.model.empty() ? "unknown" : cpu_.model));
  }
  if (!cpu_.hypervisor || options.cpu_tdp_w) {
    estimate_tdp_w_ = tdp * cpu_.sockets;
  } else {
    // A VM's vCPUs are a share of the host's sockets: the table's TDP is the whole socket.
    estimate_tdp_w_ = tdp;
  }
  if (!read_cpu_times(proc_root_)) {
    throw fatal_error(
        fmt::format("--estimate-cpu: cannot read {}/stat for the CPU utilisation", proc_root_));
  }
  device_info d;
  d.kind = device_kind::cpu;
  d.index = 0;
  d.uuid = "cpu-estimate";
  d.name =
      fmt::format("CPU estimate: {} W x (0.1 + 0.9 x utilisation) ({}{})", estimate_tdp_w_, model,
                  cpu_.sockets > 1 && !cpu_.hypervisor ? fmt::format(", {} sockets", cpu_.sockets)
                                                       : std::string());
  d.architecture = "estimate";
  d.estimated = true;
  d.power = power_source::model;
  devices_.push_back(d);
  paths_.emplace_back();
  std::string detail = d.name;
  if (cpu_.hypervisor) {
    detail += "; a VM: the TDP is the whole socket's, so this likely over-estimates a share of it";
  }
  if (!discovery_.cpu_reason.empty()) detail += "; RAPL: " + discovery_.cpu_reason;
  components_.push_back(component(device_kind::cpu, energy_method::estimated, detail,
                                  discovery_.cpu_unreadable ? discovery_.fix : std::string()));
}

device_reading cpu_backend::read(std::size_t i, read_what what) {
  (void)what;
  device_reading r;
  if (i >= devices_.size()) {
    r.status = read_status::error;
    r.error_code = EINVAL;
    return r;
  }
  if (devices_[i].estimated) {
    const auto t = read_cpu_times(proc_root_);
    if (!t) {
      r.status = read_status::error;
      r.error_code = EIO;
      return r;
    }
    r.power = watts{estimated_power_w(estimate_tdp_w_, util_.update(*t))};
    return r;
  }
  const auto c = read_energy_uj(paths_[i]);
  if (!c.uj) {
    r.status = read_status::error;
    r.error_code = c.error;
    return r;
  }
  r.energy_uj = c.uj;
  return r;
}

}  // namespace joules::rapl
