#pragma once
// NVIDIA's XID numbers: what the common ones mean and how `doctor` and `monitor` rank them.  The
// table, its source and the reasons for each severity are in docs/xid.md.

#include <string_view>

#include "health/findings.hpp"

namespace joules::health {

struct xid_meaning {
  unsigned xid = 0;
  std::string_view description;  // NVIDIA's words (docs/xid.md)
  severity level = severity::warning;
};

// The entry for `xid`, or nullptr for a number the table does not list (shown as "XID n",
// ranked a warning).
const xid_meaning* xid_lookup(unsigned xid);

// critical for the XIDs of docs/xid.md that mean the GPU needs a reset or service, else warning.
severity xid_severity(unsigned xid);

}  // namespace joules::health
