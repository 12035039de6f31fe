# Wall and CPU time of one call of each NVML function joules reads, through nvidia-ml-py.
import time, pynvml as n
n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(0)
calls = {
    "TotalEnergyConsumption": lambda: n.nvmlDeviceGetTotalEnergyConsumption(h),
    "PowerUsage": lambda: n.nvmlDeviceGetPowerUsage(h),
    "FieldValues(POWER_INSTANT)": lambda: n.nvmlDeviceGetFieldValues(h, [186]),
    "UtilizationRates": lambda: n.nvmlDeviceGetUtilizationRates(h),
    "Temperature": lambda: n.nvmlDeviceGetTemperature(h, 0),
    "ClockInfo(SM)": lambda: n.nvmlDeviceGetClockInfo(h, 1),
    "MemoryInfo": lambda: n.nvmlDeviceGetMemoryInfo(h),
    "CurrentClocksEventReasons": lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h),
    "PerformanceState": lambda: n.nvmlDeviceGetPerformanceState(h),
}
for name, f in calls.items():
    f()
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(300):
        f()
    w, c = (time.perf_counter() - w0) / 300, (time.process_time() - c0) / 300
    print(f"{name:30s} wall {w*1e6:8.1f} us  cpu {c*1e6:8.1f} us")
