#include "health/xid.hpp"

#include <algorithm>
#include <array>

namespace joules::health {
namespace {

// NVIDIA's XID catalog (docs/xid.md), the numbers seen most on data-centre GPUs, ascending.
constexpr std::array kXidTable = {
    xid_meaning{13, "Graphics Engine Exception", severity::warning},
    xid_meaning{31, "GPU memory page fault", severity::warning},
    xid_meaning{43, "GPU stopped processing", severity::warning},
    xid_meaning{45, "Preemptive cleanup, due to previous errors", severity::warning},
    xid_meaning{48, "Double Bit ECC Error", severity::critical},
    xid_meaning{61, "Internal micro-controller breakpoint/warning", severity::warning},
    xid_meaning{62, "Internal micro-controller halt", severity::critical},
    xid_meaning{63, "ECC page retirement or row remapping recording event", severity::warning},
    xid_meaning{64, "ECC page retirement or row remapper recording failure", severity::critical},
    xid_meaning{74, "NVLink Error", severity::critical},
    xid_meaning{79, "GPU has fallen off the bus", severity::critical},
    xid_meaning{92, "High single-bit ECC error rate", severity::warning},
    xid_meaning{94, "Contained ECC error", severity::critical},
    xid_meaning{95, "Uncontained ECC error", severity::critical},
    xid_meaning{119, "GSP RPC Timeout", severity::critical},
    xid_meaning{120, "GSP Error", severity::critical},
};

}  // namespace

const xid_meaning* xid_lookup(unsigned xid) {
  const auto it = std::lower_bound(kXidTable.begin(), kXidTable.end(), xid,
                                   [](const xid_meaning& m, unsigned x) { return m.xid < x; });
  return it != kXidTable.end() && it->xid == xid ? &*it : nullptr;
}

severity xid_severity(unsigned xid) {
  const xid_meaning* m = xid_lookup(xid);
  return m != nullptr ? m->level : severity::warning;
}

}  // namespace joules::health
