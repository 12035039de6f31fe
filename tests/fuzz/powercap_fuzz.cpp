// libFuzzer target for the powercap reader (src/rapl/powercap.*): the input describes a powercap
// tree, one zone per line, "ID<TAB>name<TAB>energy_uj<TAB>max_energy_range_uj" (IDs made safe as
// file names), written under a scratch directory; discover() must choose only readable zones,
// each once, and read_energy_uj() must read or refuse every file, whatever it holds.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "backends/rapl/powercap.hpp"
#include "fuzz/fuzz_input.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string templ = (fs::temp_directory_path() / "joules-powercap-fuzz-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    return fs::path(templ);
  }();
  return dir;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules;
  const fs::path root = scratch() / "tree";
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root);
  int zones = 0;
  for (const std::string& line : fuzz::fields(fuzz::as_text(data, size), '\n')) {
    const auto f = fuzz::fields(line, '\t');
    std::string id;
    for (const char c : f[0]) {
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '-') id += c;
    }
    if (id.empty() || id.size() > 40 || ++zones > 16) continue;
    const fs::path dir = root / id;
    fs::create_directories(dir, ec);
    if (ec) continue;
    if (f.size() > 1) write(dir / "name", f[1]);
    if (f.size() > 2) write(dir / "energy_uj", f[2]);
    if (f.size() > 3) write(dir / "max_energy_range_uj", f[3]);
  }
  const rapl::discovery d = rapl::discover(root.string());
  std::set<std::size_t> used;
  for (const auto* chosen : {&d.cpu, &d.dram}) {
    for (const std::size_t i : *chosen) {
      JOULES_FUZZ_CHECK(i < d.zones.size());
      JOULES_FUZZ_CHECK(d.zones[i].energy == rapl::access::readable);
      JOULES_FUZZ_CHECK(used.insert(i).second);
    }
  }
  if (!used.empty()) JOULES_FUZZ_CHECK(d.state == rapl::status::readable);
  for (const auto& z : d.zones) {
    const rapl::counter_read r = rapl::read_energy_uj(z.path);
    JOULES_FUZZ_CHECK(r.uj.has_value() != (r.error != 0));
  }
  return 0;
}
