// libFuzzer target for the text joules reads from tables and from /proc: data/'s CSV
// (carbon::parse_csv), /proc/stat's cpu line (rapl::parse_cpu_times), CPU model names
// (rapl::normalise_cpu_name, rapl::lookup_tdp) and --region / JOULES_REGION (classify_region,
// lookup_region).  None may throw or crash on any input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/rapl/cpu_estimate.hpp"
#include "carbon/carbon.hpp"
#include "data/csv.hpp"
#include "fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules;
  const std::string_view text = fuzz::as_text(data, size);
  for (const bool header : {false, true}) {
    for (const auto& row : carbon::parse_csv(text, header))
      JOULES_FUZZ_CHECK(!row.empty());
  }
  if (const auto t = rapl::parse_cpu_times(text)) JOULES_FUZZ_CHECK(t->busy <= t->total);
  const std::string name = rapl::normalise_cpu_name(text);
  if (const auto m = rapl::lookup_tdp(name)) JOULES_FUZZ_CHECK(m->tdp_w > 0.0);
  if (carbon::classify_region(text) != carbon::region_kind::malformed) {
    if (const auto i = carbon::lookup_region(text)) JOULES_FUZZ_CHECK(i->g_per_kwh >= 0.0);
  }
  return 0;
}
