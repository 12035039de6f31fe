// libjoules on the fake NVML, through the C API only: totals from the opening, names, ids and
// arguments checked, and opening failures that say why (the harness: api_nvml_harness.hpp).

#include "api_nvml_harness.hpp"

namespace {

using namespace api_test;  // NOLINT(google-build-using-namespace): the harness, in tests only

TEST(api_nvml, totals_count_from_the_opening) {
  const fake_machine f({h100_constant(300)});
  joules_monitor* raw = nullptr;
  ASSERT_EQ(f.open(&raw), JOULES_OK) << joules_last_error();
  const monitor_guard m(raw);
  sleep_s(0.5);
  joules_result r{};
  r.struct_size = sizeof r;
  joules_device_energy d{};
  ASSERT_EQ(joules_totals(m.get(), &r, &d, 1), JOULES_OK);
  EXPECT_EQ(r.final, 0);
  EXPECT_NEAR(r.total_energy_j, 300.0 * r.duration_s, 0.01 * 300.0 * r.duration_s);
  EXPECT_GT(r.duration_s, 0.45);
}

TEST(api_nvml, names_ids_and_arguments_are_checked) {
  const fake_machine f({h100_constant(300)});
  joules_monitor* raw = nullptr;
  ASSERT_EQ(f.open(&raw), JOULES_OK) << joules_last_error();
  const monitor_guard m(raw);
  joules_window_id id = 0;
  // Unknown names, double end, double begin.
  EXPECT_EQ(joules_window_end(m.get(), "never begun", &id), JOULES_E_NOT_FOUND);
  EXPECT_NE(std::string(joules_last_error()).find("never begun"), std::string::npos);
  ASSERT_EQ(joules_window_begin(m.get(), "a"), JOULES_OK);
  EXPECT_EQ(joules_window_begin(m.get(), "a"), JOULES_E_STATE);
  ASSERT_EQ(joules_window_end(m.get(), "a", &id), JOULES_OK);
  EXPECT_EQ(joules_window_end(m.get(), "a", &id), JOULES_E_NOT_FOUND);
  ASSERT_EQ(joules_window_begin(m.get(), "a"), JOULES_OK);  // the name is free again
  ASSERT_EQ(joules_window_end(m.get(), "a", nullptr), JOULES_OK);
  // Unknown ids.
  joules_result r{};
  r.struct_size = sizeof r;
  EXPECT_EQ(joules_window_result(m.get(), 987654, 0, &r, nullptr, 0), JOULES_E_NOT_FOUND);
  EXPECT_EQ(joules_window_release(m.get(), 987654), JOULES_E_NOT_FOUND);
  EXPECT_EQ(joules_window_release(m.get(), id), JOULES_OK);
  EXPECT_EQ(joules_window_release(m.get(), id), JOULES_E_NOT_FOUND);
  // Bad names.
  EXPECT_EQ(joules_window_begin(m.get(), nullptr), JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(joules_window_begin(m.get(), ""), JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(joules_window_begin(m.get(), "\xff\xfe"), JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(joules_window_begin(m.get(), std::string(5000, 'x').c_str()),
            JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(joules_window_begin(m.get(), "d\xc3\xa9j\xc3\xa0 vu"), JOULES_OK);  // UTF-8 is fine
  // Bad results.
  ASSERT_EQ(joules_window_end(m.get(), "d\xc3\xa9j\xc3\xa0 vu", &id), JOULES_OK);
  EXPECT_EQ(joules_window_result(m.get(), id, -1, nullptr, nullptr, 0), JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(joules_window_result(m.get(), id, -2, &r, nullptr, 0), JOULES_E_INVALID_ARGUMENT);
  joules_result zero{};
  EXPECT_EQ(joules_window_result(m.get(), id, -1, &zero, nullptr, 0), JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(joules_totals(m.get(), nullptr, nullptr, 0), JOULES_E_INVALID_ARGUMENT);
  // A caller built against the first header (a shorter joules_result) gets exactly its fields.
  struct {
    joules_result r;
    char canary[32];
  } old{};
  std::memset(&old, 0x5a, sizeof old);
  old.r.struct_size = static_cast<std::uint32_t>(offsetof(joules_result, begin_monotonic_s));
  ASSERT_EQ(joules_window_result(m.get(), id, -1, &old.r, nullptr, 0), JOULES_OK);
  EXPECT_EQ(old.r.final, 1);
  const auto* tail = reinterpret_cast<const unsigned char*>(&old.r.begin_monotonic_s);
  for (std::size_t i = 0; i < sizeof(old) - offsetof(joules_result, begin_monotonic_s); ++i)
    ASSERT_EQ(tail[i], 0x5a) << "byte " << i << " past the old struct was written";
  // Fewer device entries than devices: only those are written.
  joules_device_energy none[1];
  ASSERT_EQ(joules_window_result(m.get(), id, -1, &r, none, 0), JOULES_OK);
  // Devices.
  joules_device_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(joules_device_get(m.get(), 1, &info), JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(joules_device_get(m.get(), 0, nullptr), JOULES_E_INVALID_ARGUMENT);
  ASSERT_EQ(joules_device_get(m.get(), 0, &info), JOULES_OK);
  EXPECT_EQ(std::string(info.uuid), "GPU-00000000-0000-4000-8000-000000000000");
  EXPECT_EQ(std::string(info.name), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(info.kind, JOULES_DEVICE_GPU);
  // joules_step without a monitor, outside wrap.
  unsetenv("JOULES_WRAP_STEP_SOCKET");
  EXPECT_EQ(joules_wrapped(), 0);
  EXPECT_EQ(joules_step(nullptr, 0, 0, nullptr), JOULES_E_NOT_WRAPPED);
}

TEST(api_nvml, opening_fails_with_a_status_that_says_why) {
  joules_monitor* m = reinterpret_cast<joules_monitor*>(0x1);
  EXPECT_EQ(joules_monitor_open(nullptr, nullptr), JOULES_E_INVALID_ARGUMENT);
  joules_options o;
  joules_options_init(&o);
  o.backend = JOULES_BACKEND_NVML;
  o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_NO_DEVICE);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(joules_last_error()).find("/nonexistent/"), std::string::npos);
  const std::string lib = std::string(FAKE_NVML_DIR) + "/full/libnvidia-ml.so.1";
  {
    const fake_machine f({h100_constant(100), h100_constant(100)});
    o.nvml_library = lib.c_str();
    o.cpu = 0;
    o.gpus = "7";
    EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_INVALID_ARGUMENT);
    EXPECT_NE(std::string(joules_last_error()).find("7"), std::string::npos);
    o.gpus = "1";
    ASSERT_EQ(joules_monitor_open(&o, &m), JOULES_OK) << joules_last_error();
    EXPECT_EQ(joules_device_count(m), 1U);
    joules_monitor_close(m);
    o.gpus = nullptr;
    setenv("CUDA_VISIBLE_DEVICES", "", 1);  // this job may use no GPU
    EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_NO_DEVICE);
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  setenv("FAKE_NVML_SCENARIO", "{\"init_error\": \"DRIVER_NOT_LOADED\", \"devices\": [{}]}", 1);
  EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_NO_DEVICE);
  setenv("FAKE_NVML_SCENARIO", "{\"init_error\": \"UNKNOWN\", \"devices\": [{}]}", 1);
  EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_BACKEND);
  const int seven = 7;
  std::memcpy(&o.backend, &seven, sizeof seven);  // not a joules_backend
  EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_INVALID_ARGUMENT);
  o.backend = JOULES_BACKEND_SIM;
  o.interval_ms = 100000;
  EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_INVALID_ARGUMENT);
  o.interval_ms = 0;
  o.sim_profile = "sometimes";
  EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_INVALID_ARGUMENT);
  o.struct_size = 0;
  EXPECT_EQ(joules_monitor_open(&o, &m), JOULES_E_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
}

}  // namespace
