#!/bin/sh
# `joules serve` over 8 fake GPUs (tests/fake_nvml): scrape latency under 50 concurrent scrapers,
# CPU per wall second while idle and while scraped, resident memory.  From a Release build:
#   cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release
#   cmake --build build/release --target joules joules_scrape_load fake_nvml_full
#   bench/exposition/serve.sh build/release
# Client and server share the machine: run it on an otherwise idle one.
set -eu
build=${1:-build/release}
joules=$build/src/joules
load=$build/bench/exposition/joules_scrape_load

gpus='{"architecture":"hopper","latency_us":20,"power":{"type":"constant","watts":400}}'
scenario="{\"devices\":[$gpus,$gpus,$gpus,$gpus,$gpus,$gpus,$gpus,$gpus]}"
err=$(mktemp)
JOULES_NVML_LIBRARY=$build/tests/fake_nvml/full/libnvidia-ml.so.1 FAKE_NVML_SCENARIO=$scenario \
  JOULES_POWERCAP_ROOT=/nonexistent "$joules" serve --listen 127.0.0.1:0 --dcgm-compat 2>"$err" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$err"' EXIT
while ! grep -q 'metrics' "$err"; do sleep 0.1; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$err")

# CPU time of every thread, in ns (schedstat: finer than the 10 ms ticks of /proc/PID/stat).
cpu() { cat /proc/$pid/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }
sleep 3  # past the start and the first health reading
echo "== idle 10 s (sampler at 1 s, health at 1 s, no scrapes)"
c0=$(cpu); sleep 10; c1=$(cpu)
echo "cpu_per_wall_s_idle $(echo "scale=6; ($c1 - $c0) / 10000000000" | bc)"
echo "rss_kib $(awk '/VmRSS/ {print $2}' /proc/$pid/status)"
echo "scrape_bytes $(curl -s "http://127.0.0.1:$port/metrics" | wc -c)"

echo "== 50 scrapers, keep-alive, 100 ms between scrapes each (~500 scrapes/s), 10 s"
c0=$(cpu)
"$load" 127.0.0.1 "$port" --clients 50 --seconds 10 --pause-ms 100
c1=$(cpu)
echo "cpu_per_wall_s_scraped $(echo "scale=6; ($c1 - $c0) / 10000000000" | bc)"
echo "== 50 scrapers, a new connection per scrape, 100 ms apart, 10 s"
"$load" 127.0.0.1 "$port" --clients 50 --seconds 10 --pause-ms 100 --new-connection
echo "rss_kib_after $(awk '/VmRSS/ {print $2}' /proc/$pid/status)"
