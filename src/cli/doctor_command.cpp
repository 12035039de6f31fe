// `joules doctor`: can joules measure this machine, and are its GPUs healthy?

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "options/suggest.hpp"
#include "session/doctor.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kDoctorText{
    "doctor", "can joules measure this machine, and are its GPUs healthy?", "[OPTIONS]",
    "Reports the GPU libraries found (NVML, AMD SMI or ROCm SMI, Level Zero: path, version, "
    "driver); for each GPU what can be measured "
    "(energy counter, instantaneous or averaged power, GPM metrics, power-limit control and "
    "whether this process may change it); which CUDA device is which GPU (CUDA_DEVICE_ORDER, "
    "CUDA_VISIBLE_DEVICES); whether CPU and DRAM energy can be read (RAPL), with the exact fix "
    "when not; and health findings, each with a severity and a fix: uncorrectable ECC errors, "
    "pages or rows waiting to be retired or remapped, failed row remapping, hardware or thermal "
    "slowdown, a PCIe link below its maximum, a power limit below the default, persistence mode "
    "off, a driver slower than 10 ms to answer a reading (its GPU's health is then not asked "
    "for, to keep doctor quick).\n"
    "doctor only reads: whether this process may change a GPU's power limit is learnt from its "
    "capabilities (CAP_SYS_ADMIN), not by setting one, and a limit a joules tune left changed "
    "is reported with its fix, not set back.\n"
    "Checks that say only what joules cannot measure here (no_energy_counter, not_measurable, "
    "cpu_not_measured, dram_not_measured, gpm_unavailable, power_limit_no_permission) are "
    "information, unless --fail-on names them.\n"
    "Exit status: 0 healthy, 1 warnings, 2 unhealthy (a critical finding, or no GPU can be "
    "read), so that a Slurm health check or prologue or a Kubernetes probe can drain the node; "
    "3 for an error of joules' own (bad options).",
    "joules doctor\n"
    "joules doctor --json | jq .findings\n"
    "joules doctor --gpus 0,1 || scontrol update nodename=$(hostname) state=drain\n"
    "joules doctor --fail-on no_energy_counter --ignore persistence_off"};

// CHECK[,CHECK...]: each a code doctor knows.
void add_checks(std::vector<std::string>& out, const std::string& value, const char* option) {
  const std::vector<std::string> known = session::doctor_checks();
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t end = std::min(value.find(',', start), value.size());
    const std::string code = value.substr(start, end - start);
    if (std::find(known.begin(), known.end(), code) == known.end()) {
      throw usage_error(fmt::format("{}: '{}' is not a check of doctor{}; the checks are {}",
                                    option, code, options::suggestion(code, known),
                                    fmt::join(known, ", ")));
    }
    if (std::find(out.begin(), out.end(), code) == out.end()) out.push_back(code);
    start = end + 1;
  }
}

class doctor_command final : public options::command {
 public:
  const options::command_text& text() const override { return kDoctorText; }
  void declare(options::option_table& t) override {
    t.group("Output");
    t.flag("json", 0, "Print the report as one JSON object (docs/monitor-doctor.md).", s_.json);
    t.group("Checks");
    t.repeated("fail-on", "CHECK[,CHECK]",
               "Count the findings of these checks as critical (exit 2): a capability gap "
               "(no_energy_counter, ...) or a warning this site cannot run with.",
               [this](const std::string& v) { add_checks(s_.fail_on, v, "--fail-on"); });
    t.repeated("ignore", "CHECK[,CHECK]",
               "Set the findings of these checks aside, for a known issue: listed as ignored, "
               "never counted in the exit status (over --fail-on).",
               [this](const std::string& v) { add_checks(s_.ignore, v, "--ignore"); });
    declare_gpus(t, s_.gpus);
    declare_backend(t, s_.backend);
    declare_sim(t, s_.backend);
    declare_components(t, s_.backend.components,
                       "gpu, plus cpu and dram where RAPL can be read; the report says what "
                       "cannot, and why");
  }
  int run(std::vector<std::string>) override { return session::check(s_); }

 private:
  session::doctor_settings s_;
};

}  // namespace

std::unique_ptr<options::command> make_doctor_command() {
  return std::make_unique<doctor_command>();
}

}  // namespace joules::cli
