#!/bin/sh
# `joules serve` over N fake GPUs (tests/fake_nvml): CPU per wall second while idle, resident
# memory, then scrape latency under 50 concurrent scrapers (keep-alive connections, a new
# connection per scrape, keep-alive with Accept-Encoding: gzip) and the server's CPU while
# scraped.  From a Release build:
#   cmake --preset release
#   cmake --build build/release --target joules joules_scrape_load fake_nvml_full
#   bench/exposition/serve.sh build/release [GPUS] [SECONDS]        (defaults: 8 GPUs, 10 s)
# Environment:
#   SERVE_ARGS   extra arguments of joules serve (default: --dcgm-compat, the largest output)
#   SERVER_CPUS, LOAD_CPUS   CPU lists for taskset: pin the server and the load generator to
#                different cores (e.g. 0 and 1), so that 50 client threads do not preempt the
#                server; unset, both float
#   RT_PRIORITY  run both under SCHED_FIFO at this priority (chrt -f, as root), so that other
#                work on a shared machine does not preempt them; unset, normal scheduling
#   LOAD_ARGS    extra arguments of joules_scrape_load (e.g. --stagger)
#   JOULES, LOAD, FAKE_NVML   override the binaries and the fake library found under the build
set -eu
build=${1:-build/release}
gpus=${2:-8}
seconds=${3:-10}
joules=${JOULES:-$build/src/joules}
load=${LOAD:-$build/bench/exposition/joules_scrape_load}
fake=${FAKE_NVML:-$build/tests/fake_nvml/full/libnvidia-ml.so.1}
serve_args=${SERVE_ARGS---dcgm-compat}
pin_server=${SERVER_CPUS:+taskset -c $SERVER_CPUS}
pin_load=${LOAD_CPUS:+taskset -c $LOAD_CPUS}
rt=${RT_PRIORITY:+chrt -f $RT_PRIORITY}
pin_server="$rt $pin_server"
pin_load="$rt $pin_load"

gpu='{"architecture":"hopper","latency_us":20,"power":{"type":"constant","watts":400}}'
scenario="{\"devices\":[$gpu"
i=1
while [ "$i" -lt "$gpus" ]; do scenario="$scenario,$gpu"; i=$((i + 1)); done
scenario="$scenario]}"

err=$(mktemp)
# shellcheck disable=SC2086
JOULES_NVML_LIBRARY=$fake FAKE_NVML_SCENARIO=$scenario JOULES_POWERCAP_ROOT=/nonexistent \
  $pin_server "$joules" serve --listen 127.0.0.1:0 $serve_args 2>"$err" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$err"' EXIT
while ! grep -q 'metrics' "$err"; do sleep 0.1; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$err")

# CPU time of every thread, in ns (schedstat: finer than the 10 ms ticks of /proc/PID/stat).
# %.0f, not %d: mawk clamps %d to 2^31 - 1 (2.1 s).
cpu() { cat /proc/$pid/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }
echo "== joules serve $serve_args, $gpus GPUs, server on CPUs ${SERVER_CPUS:-any}," \
  "load on CPUs ${LOAD_CPUS:-any}, SCHED_FIFO ${RT_PRIORITY:-no}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
sleep 3  # past the start and the first health reading
c0=$(cpu); sleep 10; c1=$(cpu)
echo "cpu_per_wall_s_idle $(echo "scale=6; ($c1 - $c0) / 10000000000" | bc)" \
  "rss_kib $(awk '/VmRSS/ {print $2}' /proc/$pid/status)" \
  "scrape_bytes $(curl -s "http://127.0.0.1:$port/metrics" | wc -c)"

# Plain text on kept connections and on new ones, then gzip (what Prometheus asks for).
for mode in keep-alive new-connection gzip; do
  flag=""
  [ "$mode" = new-connection ] && flag=--new-connection
  [ "$mode" = gzip ] && flag=--gzip
  c0=$(cpu)
  # shellcheck disable=SC2086
  $pin_load "$load" 127.0.0.1 "$port" --clients 50 --seconds "$seconds" --pause-ms 100 $flag \
    ${LOAD_ARGS:-}
  c1=$(cpu)
  echo "cpu_per_wall_s_scraped $(echo "scale=6; ($c1 - $c0) / ($seconds * 1000000000)" | bc)"
done
echo "rss_kib_after $(awk '/VmRSS/ {print $2}' /proc/$pid/status)" \
  "load_average $(cut -d' ' -f1-3 /proc/loadavg)"
