// `joules doctor`: can joules measure this machine, and are its GPUs healthy?

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "session/doctor.hpp"

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
    "Exit status: 0 healthy, 1 warnings, 2 unhealthy (a critical finding, or no GPU can be "
    "read), so that a Slurm prologue or a Kubernetes init container can drain the node; 2 also "
    "for bad options.",
    "joules doctor\n"
    "joules doctor --json | jq .findings\n"
    "joules doctor --gpus 0,1 || scontrol update nodename=$(hostname) state=drain"};

class doctor_command final : public options::command {
 public:
  const options::command_text& text() const override { return kDoctorText; }
  void declare(options::option_table& t) override {
    t.group("Output");
    t.flag("json", 0, "Print the report as one JSON object (docs/monitor-doctor.md).", s_.json);
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
