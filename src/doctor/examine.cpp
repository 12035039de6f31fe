#include "doctor/examine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace joules::doctor {

std::vector<gpu_report> examine(backend& b, const std::vector<std::size_t>& chosen,
                                const clock_fn& now) {
  using seconds_d = std::chrono::duration<double>;
  const mono_time began = now();
  std::vector<gpu_report> out;
  for (std::size_t i : chosen) {
    gpu_report g;
    g.info = b.devices()[i];
    mono_time t0 = now();
    g.reading = b.read(i, read_what::all);
    double took = seconds_d(now() - t0).count();
    if (took > kSlowReadS && g.reading.status != read_status::lost) {
      // Once more: one slow read may be this machine's load, not the driver.
      t0 = now();
      g.reading = b.read(i, read_what::all);
      took = std::min(took, seconds_d(now() - t0).count());
    }
    g.read_s = took;
    if (g.reading.status != read_status::lost) {
      if (took > kSlowReadS) {
        g.not_checked = "the driver is too slow";
      } else if (seconds_d(now() - began).count() > kExamineBudgetS) {
        g.not_checked =
            fmt::format("doctor had spent its {:.0f} s on the GPUs before it", kExamineBudgetS);
      } else {
        g.health = b.read_health(i);
        g.caps = b.probe_capabilities(i);
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

void describe(report& r, const backend& hw) {
  r.meta = hw.meta();
  r.notices = hw.notices();
  r.components = hw.components();
  for (const device_info& d : hw.devices()) {
    if (d.kind != device_kind::gpu) r.host_devices.push_back(d);
  }
}

}  // namespace joules::doctor
