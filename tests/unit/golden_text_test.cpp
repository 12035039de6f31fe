// Golden files of what joules prints as text: every subcommand's --help at 80 and 120 columns,
// `joules steps` on two fixed logs, and `joules doctor`'s report of a simulated node at a fixed
// instant (tests/golden; `make golden` rewrites them).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backends/sim/sim_backend.hpp"
#include "cli/commands.hpp"
#include "devices/device_scope.hpp"
#include "doctor/cuda_order.hpp"
#include "doctor/examine.hpp"
#include "doctor/report.hpp"
#include "golden.hpp"
#include "options/help.hpp"
#include "options/parse.hpp"

namespace joules {
namespace {

TEST(GoldenHelp, EverySubcommandAt80And120Columns) {
  std::vector<options::declared_command> all;
  for (auto& c : cli::make_commands())
    all.push_back(options::declare(std::move(c)));
  ASSERT_GE(all.size(), 6U);
  for (const auto& d : all) {
    const std::string name(d.cmd->text().name);
    for (std::size_t width : {80U, 120U}) {
      const std::string text = options::help_text(d, width);
      testing::expect_golden("help/" + name + "-" + std::to_string(width) + ".txt", text);
      std::size_t start = 0;
      for (std::size_t end = text.find('\n'); end != std::string::npos;
           start = end + 1, end = text.find('\n', start)) {
        // Every line within the width, counted in code points (the help has no wide ones).
        std::size_t cells = 0;
        for (std::size_t i = start; i < end; ++i)
          cells += (static_cast<unsigned char>(text[i]) & 0xC0U) != 0x80U ? 1U : 0U;
        EXPECT_LE(cells, width) << name << ": " << text.substr(start, end - start);
      }
    }
  }
  testing::expect_golden("help/joules.txt", options::top_help(all));
}

// What a command writes on stdout while it runs, taken through a temporary file.
std::string stdout_of(const std::function<void()>& run) {
  std::FILE* tmp = std::tmpfile();
  EXPECT_NE(tmp, nullptr);
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  dup2(fileno(tmp), STDOUT_FILENO);
  run();
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  std::string out;
  std::rewind(tmp);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;)
    out.append(buf, n);
  std::fclose(tmp);
  return out;
}

std::string steps_output(std::vector<std::string> args) {
  auto d = options::declare(cli::make_steps_command());
  const auto parsed = options::parse(d, args);
  int status = -1;
  const std::string out = stdout_of([&] { status = d.cmd->run(parsed.positional); });
  EXPECT_EQ(status, 0);
  return out;
}

TEST(GoldenSteps, WhatTheParserSeesInFixedLogs) {
  const std::string inputs = std::string(JOULES_GOLDEN_DIR) + "/inputs/";
  testing::expect_golden("steps/nanogpt.txt", steps_output({inputs + "nanogpt.log"}));
  testing::expect_golden("steps/megatron-only-steps.txt",
                         steps_output({"--only-steps", inputs + "megatron.log"}));
}

// A node of eight simulated H100s, examined 12.5 s after the driver loaded, with a clock that
// stands still (every read takes 0 s).
doctor::report simulated_report() {
  const mono_time at = mono_time(std::chrono::seconds(1000));
  mono_time now = at - std::chrono::milliseconds(12500);
  sim_options o;
  o.clock = [&now] { return now; };
  auto b = open_sim_backend(o);
  now = at;
  doctor::report r;
  r.hostname = "node7";
  r.time = "2026-11-22T18:04:05.000000Z";
  r.backend_ok = true;
  doctor::describe(r, *b);
  const scope_result scope = select_devices(b->devices(), scope_request{}, {});
  r.scope = scope.value.empty() ? scope.source : scope.source + " " + scope.value;
  r.gpus = doctor::examine(*b, scope.devices, [&now] { return now; });
  r.cuda = doctor::map_cuda(b->devices(), std::nullopt, std::string("0,1,2,3"), {});
  for (auto& g : r.gpus) {
    for (const auto& e : r.cuda.devices) {
      if (e.uuid == g.info.uuid) g.cuda_index = e.cuda_index;
    }
  }
  doctor::conclude(r);
  return r;
}

TEST(GoldenDoctor, TheReportOfASimulatedNode) {
  const doctor::report r = simulated_report();
  EXPECT_EQ(r.exit_status, 0);
  testing::expect_golden("doctor/sim-8gpu.txt", doctor::render_text(r, /*color=*/false));
}

}  // namespace
}  // namespace joules
