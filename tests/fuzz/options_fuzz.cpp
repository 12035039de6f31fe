// libFuzzer target for the command line (src/cli/options.*, the readers of cli/measure.hpp and
// cli/energy_options.hpp, carbon::resolve): the input is an argument list (cut at NUL) given to
// every subcommand's table; what parses is then read as run and wrap read it, and the component
// and carbon options as serve reads them.  Bad input must be a usage_error (exit 2; app.cpp
// prints it on one line, escaping what it quotes), never another exception or a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "carbon/carbon.hpp"
#include "cli/commands.hpp"
#include "cli/energy_options.hpp"
#include "cli/measure.hpp"
#include "cli/options.hpp"
#include "fuzz/fuzz_input.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules;
  const std::vector<std::string> args = fuzz::fields(fuzz::as_text(data, size), '\0');
  for (const cli::command_spec* spec : cli::all_commands()) {
    cli::parsed_args parsed;
    try {
      parsed = cli::parse(*spec, args);
    } catch (const usage_error& e) {
      JOULES_FUZZ_CHECK(*e.what() != '\0');
      continue;
    }
    try {
      if (spec->name == "run" || spec->name == "wrap") {
        const cli::measure_settings s = cli::read_measure_settings(parsed, spec->name);
        JOULES_FUZZ_CHECK(!s.command.empty() && !s.run_id.empty());
        JOULES_FUZZ_CHECK(s.carbon.pue >= 1.0 && s.carbon.pue <= 5.0);
      } else if (spec->name == "serve") {
        component_options c;
        cli::read_component_options(parsed, c);
        const carbon::factors f = carbon::resolve(cli::read_carbon_settings(parsed));
        JOULES_FUZZ_CHECK(f.pue >= 1.0 && f.pue <= 5.0);
        if (f.grid) JOULES_FUZZ_CHECK(f.grid->g_per_kwh >= 0.0 && f.grid->g_per_kwh <= 2000.0);
      }
    } catch (const usage_error& e) {
      JOULES_FUZZ_CHECK(*e.what() != '\0');
    }
  }
  return 0;
}
