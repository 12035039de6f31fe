#include "backends/rapl/powercap.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <sys/stat.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <tuple>

#include "util/strings.hpp"

namespace joules::rapl {
namespace {

constexpr std::string_view kPrefix = "intel-rapl:";

// The contents of a small sysfs file, or the errno of the failure.
struct small_file {
  std::string text;
  int error = 0;
};

small_file read_small(const std::string& path) {
  small_file out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  std::array<char, 128> buf{};
  ssize_t n = 0;
  do {
    n = ::read(fd, buf.data(), buf.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    out.error = errno;
  } else {
    out.text.assign(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  s = trim(s);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "intel-rapl:3:1" -> {3, 1}; "intel-rapl:3" -> {3, none}; anything else -> nullopt.
std::optional<std::pair<unsigned, std::optional<unsigned>>> parse_id(std::string_view id) {
  if (id.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  id.remove_prefix(kPrefix.size());
  unsigned n = 0;
  auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc() || p == id.data()) return std::nullopt;
  if (p == id.data() + id.size()) return std::make_pair(n, std::optional<unsigned>());
  if (*p != ':') return std::nullopt;
  ++p;
  unsigned m = 0;
  auto [q, ec2] = std::from_chars(p, id.data() + id.size(), m);
  if (ec2 != std::errc() || q == p || q != id.data() + id.size()) return std::nullopt;
  return std::make_pair(n, std::optional<unsigned>(m));
}

domain classify(std::string_view name) {
  if (name.substr(0, 7) == "package") return domain::package;
  if (name == "dram") return domain::dram;
  if (name == "core") return domain::core;
  if (name == "uncore") return domain::uncore;
  if (name == "psys") return domain::psys;
  return domain::other;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Zones under `dir`, and recursively their subzones when the tree is nested.
void collect(const std::string& dir, std::vector<zone>& out, std::set<std::string>& seen,
             std::vector<std::string>& left_out) {
  for (const auto& entry : list_dir(dir)) {
    const std::string path = dir + "/" + entry;
    if (entry.rfind("intel-rapl-mmio:", 0) == 0) {
      if (seen.insert(entry).second) {
        left_out.push_back(fmt::format(
            "{}: the MMIO interface to a package already read through intel-rapl", entry));
      }
      continue;
    }
    const auto id = parse_id(entry);
    if (!id || !is_dir(path)) continue;
    if (seen.insert(entry).second) {
      zone z;
      z.id = entry;
      z.path = path;
      z.top = id->first;
      z.subzone = id->second.has_value();
      const auto name = read_small(path + "/name");
      z.name = std::string(trim(name.text));
      z.kind = classify(z.name);
      z.max_energy_range_uj = parse_u64(read_small(path + "/max_energy_range_uj").text);
      const auto e = read_energy_uj(path);
      if (e.uj) {
        z.energy = access::readable;
      } else if (e.error == EACCES || e.error == EPERM) {
        z.energy = access::unreadable;
        z.error = e.error;
      } else {
        z.energy = access::missing;
        z.error = e.error;
      }
      out.push_back(std::move(z));
    }
    // Nested trees (/sys/devices/virtual/powercap/intel-rapl) hold subzones inside zones.
    if (!id->second) collect(path, out, seen, left_out);
  }
}

// The commands that make the counters readable.  chmod: one glob per directory holding an
// unreadable zone (/sys/class/powercap lists every zone flat; the nested layout has subzones
// inside zones).  udev: the rule runs on "add" events, and `udevadm trigger` sends "change"
// unless told otherwise, so the trigger asks for "add" to apply the rule without a reboot.
std::string fix_text(const std::vector<std::string>& zone_dirs) {
  std::set<std::string> parents;
  for (const auto& dir : zone_dirs)
    parents.insert(dir.substr(0, dir.rfind('/')));
  std::string globs;
  for (const auto& parent : parents)
    globs += fmt::format(" {}/intel-rapl:*/energy_uj", parent);
  return fmt::format(
      "run joules as root, or make the counters readable: sudo chmod a+r{} (until the next "
      "reboot); to keep it, a udev rule: echo 'ACTION==\"add\", SUBSYSTEM==\"powercap\", "
      "KERNEL==\"intel-rapl:*\", RUN+=\"/bin/chmod a+r %S%p/energy_uj\"' | sudo tee "
      "/etc/udev/rules.d/99-joules-rapl.rules && sudo udevadm control --reload && sudo udevadm "
      "trigger --action=add --subsystem-match=powercap (docs/carbon.md: a group instead of a+r)",
      globs);
}

// "/x/intel-rapl:0/energy_uj is readable by root only (...)", naming the first of `paths`.
std::string root_only(const std::vector<std::string>& paths) {
  return fmt::format(
      "{}/energy_uj {} readable by root only (Linux 5.10 and later, CVE-2020-8694)", paths.front(),
      paths.size() > 1 ? fmt::format("and {} more are", paths.size() - 1) : std::string("is"));
}

}  // namespace

std::string_view to_string(domain d) {
  switch (d) {
    case domain::package:
      return "package";
    case domain::dram:
      return "dram";
    case domain::core:
      return "core";
    case domain::uncore:
      return "uncore";
    case domain::psys:
      return "psys";
    case domain::other:
      return "other";
  }
  return "other";
}

std::string_view to_string(status s) {
  switch (s) {
    case status::absent:
      return "absent";
    case status::unreadable:
      return "unreadable";
    case status::readable:
      return "readable";
  }
  return "absent";
}

std::string default_root() {
  const char* env = std::getenv("JOULES_POWERCAP_ROOT");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("/sys/class/powercap");
}

counter_read read_energy_uj(const std::string& zone_path) {
  counter_read out;
  const auto f = read_small(zone_path + "/energy_uj");
  if (f.error != 0) {
    out.error = f.error;
    return out;
  }
  out.uj = parse_u64(f.text);
  if (!out.uj) out.error = EINVAL;
  return out;
}

std::uint64_t wrap_modulus_uj(std::uint64_t range) {
  constexpr double kCounterMax = 4294967295.0;  // 2^32 - 1
  const double unit_nj = std::round(static_cast<double>(range) * 1000.0 / kCounterMax);
  const auto turn =
      static_cast<std::uint64_t>(std::llround((kCounterMax + 1.0) * unit_nj / 1000.0));
  return std::max(turn, range + 1);
}

double max_read_interval_s(std::uint64_t modulus_uj) {
  return static_cast<double>(modulus_uj) * 1e-6 / kMaxPlausiblePowerW / 2.0;
}

discovery discover(const std::string& root) {
  discovery d;
  d.root = root;
  std::set<std::string> seen;
  collect(root, d.zones, seen, d.left_out);
  // Nested layouts: /sys/class/powercap/intel-rapl is the control type, holding the zones.
  if (d.zones.empty() && is_dir(root + "/intel-rapl"))
    collect(root + "/intel-rapl", d.zones, seen, d.left_out);
  std::sort(d.zones.begin(), d.zones.end(), [](const zone& a, const zone& b) {
    return std::make_tuple(a.top, a.subzone, a.id) < std::make_tuple(b.top, b.subzone, b.id);
  });
  if (d.zones.empty()) {
    d.state = status::absent;
    d.reason = is_dir(root)
                   ? fmt::format(
                         "no RAPL zones under {} (a kernel without RAPL support for this CPU, "
                         "or intel_rapl_msr not loaded)",
                         root)
                   : fmt::format("no {} (a VM, or a container that masks powercap)", root);
    d.cpu_reason = d.dram_reason = d.reason;
    return d;
  }

  const bool any_package = std::any_of(d.zones.begin(), d.zones.end(), [](const zone& z) {
    return z.kind == domain::package && z.energy != access::missing;
  });
  std::vector<std::string> cpu_unreadable;  // zone directories
  std::vector<std::string> dram_unreadable;
  std::vector<std::string> cpu_left_out;  // why a package or psys zone is not summed
  std::vector<std::string> dram_left_out;
  bool any_dram = false;
  for (std::size_t i = 0; i < d.zones.size(); ++i) {
    const zone& z = d.zones[i];
    const std::string label = fmt::format("{} ({})", z.id, z.name.empty() ? "no name" : z.name);
    bool summed_kind = false;
    switch (z.kind) {
      case domain::package:
        summed_kind = true;
        break;
      case domain::dram:
        summed_kind = true;
        any_dram = true;
        break;
      case domain::psys:
        if (any_package) {
          d.left_out.push_back(fmt::format(
              "{}: the whole platform, which contains the packages: not added to them", label));
        }
        summed_kind = !any_package;
        break;
      case domain::core:
      case domain::uncore:
        d.left_out.push_back(fmt::format("{}: part of package intel-rapl:{}", label, z.top));
        break;
      case domain::other:
        d.left_out.push_back(fmt::format("{}: not a domain joules knows", label));
        break;
    }
    if (!summed_kind) continue;
    const bool is_dram = z.kind == domain::dram;
    std::string why;
    if (z.energy == access::missing) {
      why = fmt::format("{}: no readable energy_uj ({})", label,
                        z.error != 0 ? std::strerror(z.error) : "missing");
    } else if (!z.max_energy_range_uj || *z.max_energy_range_uj == 0) {
      why = fmt::format(
          "{}: no max_energy_range_uj, so a wrap of its counter could not be told apart", label);
    }
    if (!why.empty()) {
      (is_dram ? dram_left_out : cpu_left_out).push_back(why);
      d.left_out.push_back(std::move(why));
      continue;
    }
    if (z.energy == access::unreadable) {
      (is_dram ? dram_unreadable : cpu_unreadable).push_back(z.path);
      continue;
    }
    (is_dram ? d.dram : d.cpu).push_back(i);
  }
  // A component with one unreadable zone is not measured at all: half the packages is not the CPU.
  d.cpu_unreadable = !cpu_unreadable.empty();
  d.dram_unreadable = !dram_unreadable.empty();
  if (d.cpu_unreadable) d.cpu.clear();
  if (d.dram_unreadable) d.dram.clear();
  // psys covers the whole SoC, memory included: its DRAM zones are inside it, not beside it.
  d.dram_inside_psys = !d.cpu.empty() && d.zones[d.cpu.front()].kind == domain::psys;
  if (d.dram_inside_psys) {
    for (std::size_t i : d.dram) {
      d.left_out.push_back(fmt::format(
          "{} ({}): inside psys {}, which covers the whole platform: measured only without the CPU",
          d.zones[i].id, d.zones[i].name, d.zones[d.cpu.front()].id));
    }
  }

  auto component_reason = [&](const std::vector<std::string>& unreadable,
                              const std::vector<std::string>& left_out, std::string none) {
    if (!unreadable.empty()) return root_only(unreadable);
    if (!left_out.empty()) return fmt::format("{}", fmt::join(left_out, "; "));
    return none;
  };
  if (d.cpu.empty()) {
    d.cpu_reason = component_reason(cpu_unreadable, cpu_left_out,
                                    fmt::format("no package or psys zone under {}", root));
  }
  if (d.dram.empty()) {
    d.dram_reason = component_reason(
        dram_unreadable, dram_left_out,
        any_dram ? fmt::format("no dram zone with a readable counter under {}", root)
                 : std::string("this CPU's RAPL has no dram domain (AMD Zen and many desktop "
                               "CPUs have none)"));
  }

  std::vector<std::string> unreadable = cpu_unreadable;
  unreadable.insert(unreadable.end(), dram_unreadable.begin(), dram_unreadable.end());
  std::sort(unreadable.begin(), unreadable.end());
  if (!unreadable.empty()) {
    d.state = status::unreadable;
    d.reason = root_only(unreadable);
    d.fix = fix_text(unreadable);
  } else if (d.cpu.empty() && d.dram.empty()) {
    d.state = status::absent;
    d.reason = fmt::format("no package, psys or dram zone with a readable counter under {}", root);
  } else {
    d.state = status::readable;
  }
  return d;
}

}  // namespace joules::rapl
