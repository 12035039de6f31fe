#!/bin/sh
# `joules run --prometheus` against `matcha run --prometheus` (PyPI usematcha) on the same 8 fake
# GPUs (tests/fake_nvml): CPU per wall second and resident memory of the measuring process while
# the command sleeps, then /metrics latency under 50 scrapers.  From a Release build, with matcha
# installed in a virtual environment (python3 -m venv V && V/bin/pip install usematcha):
#   bench/exposition/run_vs_matcha.sh build/release V/bin/matcha
# Client and servers share the machine: run it on an otherwise idle one, or pin them as serve.sh
# does (SERVER_CPUS, LOAD_CPUS, RT_PRIORITY: see README.md); LOAD_ARGS are extra arguments of
# joules_scrape_load (e.g. --stagger).
set -eu
build=${1:-build/release}
matcha=${2:-matcha}
joules=${JOULES:-$build/src/joules}
load=${LOAD:-$build/bench/exposition/joules_scrape_load}
fake=$build/tests/fake_nvml/full
rt=${RT_PRIORITY:+chrt -f $RT_PRIORITY}
pin_server="$rt ${SERVER_CPUS:+taskset -c $SERVER_CPUS}"
pin_load="$rt ${LOAD_CPUS:+taskset -c $LOAD_CPUS}"
gpus='{"architecture":"hopper","latency_us":20,"power":{"type":"constant","watts":400}}'
export FAKE_NVML_SCENARIO="{\"devices\":[$gpus,$gpus,$gpus,$gpus,$gpus,$gpus,$gpus,$gpus]}"
export JOULES_NVML_LIBRARY=$fake/libnvidia-ml.so.1 JOULES_POWERCAP_ROOT=/nonexistent

measure() {  # NAME PID PORT
  # CPU time of every thread, in ns (schedstat: finer than /proc/PID/stat's 10 ms ticks).
  cpu() { cat /proc/$2/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }
  sleep 3
  c0=$(cpu "$@"); sleep 10; c1=$(cpu "$@")
  echo "$1 cpu_per_wall_s_idle $(echo "scale=6; ($c1 - $c0) / 10000000000" | bc)" \
    "rss_kib $(awk '/VmRSS/ {print $2}' "/proc/$2/status")" \
    "scrape_bytes $(curl -s "http://127.0.0.1:$3/metrics" | wc -c)"
  printf '%s ' "$1"
  # shellcheck disable=SC2086
  $pin_load "$load" 127.0.0.1 "$3" --clients 50 --seconds 10 --pause-ms 100 ${LOAD_ARGS:-}
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086
$pin_server "$joules" run --prometheus "127.0.0.1:$port" --quiet -- sleep 40 2>/dev/null &
jpid=$!
measure joules "$jpid" "$port"
kill "$jpid"; wait "$jpid" 2>/dev/null || true

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086
LD_LIBRARY_PATH=$fake $pin_server "$matcha" run --prometheus "127.0.0.1:$port" -- sleep 40 \
  2>/dev/null &
mpid=$!
measure matcha "$mpid" "$port"
kill "$mpid"; wait "$mpid" 2>/dev/null || true
