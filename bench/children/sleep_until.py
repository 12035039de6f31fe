"""Sleeps until CLOCK_MONOTONIC reaches END_NS (nanoseconds), then exits 0: a workload whose end
is fixed in scenario time, however long the tool measuring it took to start.

    sleep_until.py END_NS
"""
import sys
import time

end = int(sys.argv[1]) / 1e9
while True:
    left = end - time.monotonic()
    if left <= 0:
        break
    time.sleep(min(left, 1.0))
