// The floor of any sampler that reads every GPU every PERIOD ms the way joules does: one thread
// that wakes up on that schedule (clock_nanosleep to an absolute deadline, next += period) and
// makes, for each GPU, the one nvmlDeviceGetFieldValues call joules makes (energy counter and
// instantaneous power), and nothing else: no accounting, no records, no allocation.
// bench/suite/fig_steady.py measures it beside joules, so that what joules costs on top of the
// driver's calls is told apart from what the calls themselves cost on this machine.
// Usage: read_nvml PERIOD_MS SECONDS   (libnvidia-ml.so.1 from the usual search path)
#include <dlfcn.h>
#include <time.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/nvml/nvml_abi.hpp"

namespace nv = joules::nvml;

namespace {

template <typename F>
F symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    std::fprintf(stderr, "read_nvml: libnvidia-ml.so.1 has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(p);
}

}  // namespace

int main(int argc, char** argv) {
  const long period_ns = (argc > 1 ? std::atol(argv[1]) : 100) * 1000000L;
  const long seconds = argc > 2 ? std::atol(argv[2]) : 60;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "read_nvml: %s\n", dlerror());
    return 1;
  }
  using init_fn = nv::nvmlReturn_t (*)();
  using count_fn = nv::nvmlReturn_t (*)(unsigned int*);
  using handle_fn = nv::nvmlReturn_t (*)(unsigned int, nv::nvmlDevice_t*);
  using fields_fn = nv::nvmlReturn_t (*)(nv::nvmlDevice_t, int, nv::nvmlFieldValue_t*);
  if (symbol<init_fn>(lib, "nvmlInit_v2")() != nv::kSuccess) return 1;
  unsigned int count = 0;
  if (symbol<count_fn>(lib, "nvmlDeviceGetCount_v2")(&count) != nv::kSuccess) return 1;
  const auto handle_by_index = symbol<handle_fn>(lib, "nvmlDeviceGetHandleByIndex_v2");
  const auto field_values = symbol<fields_fn>(lib, "nvmlDeviceGetFieldValues");
  std::vector<nv::nvmlDevice_t> devices(count);
  for (unsigned int i = 0; i < count; ++i) {
    if (handle_by_index(i, &devices[i]) != nv::kSuccess) return 1;
  }

  std::array<nv::nvmlFieldValue_t, 2> f{};
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  const time_t end = next.tv_sec + seconds;
  unsigned long long checksum = 0;
  while (next.tv_sec < end) {
    next.tv_nsec += period_ns;
    while (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      next.tv_sec += 1;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    for (nv::nvmlDevice_t d : devices) {
      f[0].fieldId = nv::kFiDevTotalEnergyConsumption;
      f[1].fieldId = nv::kFiDevPowerInstant;
      if (field_values(d, 2, f.data()) == nv::kSuccess) checksum += f[0].value.ullVal;
    }
  }
  // The readings are used, so that no compiler drops the calls' results.
  return checksum == 1 ? 3 : 0;
}
