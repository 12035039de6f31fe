// libFuzzer target for the command line (src/cli/parse.cpp, src/cli/option_table.cpp, the shared
// declarations of src/cli/shared_options.cpp, carbon::resolve): the input is an argument list
// (cut at NUL) given to every subcommand's declarations, and to run's measurement options with
// what run does after parsing (the command, the run id, the carbon factors) but without running
// anything.  Bad input must be a usage_error (exit 2; the app prints it on one line, escaping
// what it quotes), never another exception or a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "carbon/carbon.hpp"
#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "fuzz/fuzz_input.hpp"
#include "options/parse.hpp"
#include "util/error.hpp"

namespace {

// run's options; running it only checks what run would run with.
class measure_check final : public joules::options::command {
 public:
  const joules::options::command_text& text() const override { return text_; }
  void declare(joules::options::option_table& t) override {
    t.positional(joules::options::positional_kind::command);
    joules::cli::declare_measure(t, options_, "run");
  }
  int run(std::vector<std::string> positional) override {
    const auto s = joules::cli::finish_measure(options_, std::move(positional), "run");
    JOULES_FUZZ_CHECK(!s.command.empty() && !s.run_id.empty());
    JOULES_FUZZ_CHECK(s.carbon.pue >= 1.0 && s.carbon.pue <= 5.0);
    if (s.carbon.grid)
      JOULES_FUZZ_CHECK(s.carbon.grid->g_per_kwh >= 0.0 && s.carbon.grid->g_per_kwh <= 2000.0);
    return 0;
  }

 private:
  joules::options::command_text text_{"run", "", "", "", ""};
  joules::cli::measure_options options_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules;
  const std::vector<std::string> args = fuzz::fields(fuzz::as_text(data, size), '\0');
  auto commands = cli::make_commands();
  commands.push_back(std::make_unique<measure_check>());
  for (auto& c : commands) {
    const bool runnable = dynamic_cast<measure_check*>(c.get()) != nullptr;
    options::declared_command d = options::declare(std::move(c));
    try {
      const options::parse_result r = options::parse(d, args);
      if (runnable && !r.help) (void)d.cmd->run(r.positional);
    } catch (const usage_error& e) {
      JOULES_FUZZ_CHECK(*e.what() != '\0');
    }
  }
  return 0;
}
