"""Reference readings of GPU 0, independent of joules (nvidia-ml-py): the energy counter (mJ),
power usage and instantaneous power (mW, -1 where unsupported), every 5 ms plus the reads' own
time, each line stamped with CLOCK_MONOTONIC (the middle of its reads), until SIGTERM.

    python3 reference_reader.py OUT.txt
"""
import signal
import sys
import time

import pynvml as nvml

FI_DEV_POWER_INSTANT = 186
stopping = False


def stop(*_):
    global stopping
    stopping = True


def main():
    signal.signal(signal.SIGTERM, stop)
    nvml.nvmlInit()
    gpu = nvml.nvmlDeviceGetHandleByIndex(0)
    with open(sys.argv[1], "w") as out:
        while not stopping:
            t0 = time.clock_gettime(time.CLOCK_MONOTONIC)
            energy_mj = nvml.nvmlDeviceGetTotalEnergyConsumption(gpu)
            power_mw = nvml.nvmlDeviceGetPowerUsage(gpu)
            field = nvml.nvmlDeviceGetFieldValues(gpu, [FI_DEV_POWER_INSTANT])[0]
            instant_mw = field.value.uiVal if field.nvmlReturn == 0 else -1
            t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
            out.write(f"{(t0 + t1) / 2:.6f} {energy_mj} {power_mw} {instant_mw}\n")
            time.sleep(0.005)


if __name__ == "__main__":
    main()
