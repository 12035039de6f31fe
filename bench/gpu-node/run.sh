#!/bin/bash
# The real-hardware check of joules on a GPU node: what joules reads, its energy against an
# independent reference reader, its step windows on real trainers' output, its CPU cost against
# matcha's, and NVML's cost per call.  Reads GPU 0; changes no GPU setting (tune and sweep run
# with --dry-run only).  Needs nvidia-smi, python3 with torch, transformers, lightning and
# nvidia-ml-py; matcha (pip install usematcha) if MATCHA names its command.
#
#   JOULES=path/to/joules [MATCHA=path/to/matcha] bench/gpu-node/run.sh OUT_DIR
#   python3 bench/gpu-node/analyze.py OUT_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: JOULES=... bench/gpu-node/run.sh OUT_DIR}
J=${JOULES:-$(command -v joules)}
MATCHA=${MATCHA:-}
mkdir -p "$out"
exec > >(tee "$out/console.txt") 2>&1
export PYTHONUNBUFFERED=1
h() { echo; echo "=== $* [$(date +%T)]"; }

h node
nvidia-smi
nvidia-smi -q -d POWER >"$out/smi-power-before.txt"
nvidia-smi --query-gpu=name,driver_version,persistence_mode,power.limit,power.min_limit,power.max_limit \
  --format=csv
uname -r; ldd --version | head -1; nproc; "$J" --version

h "NVML cost per call (no other reader)"
python3 "$here/nvml_costs.py"
h "CPU of 10 s of measuring an idle GPU (no other reader)"
python3 "$here/cpu_of.py" "$J" run -- sleep 10
python3 "$here/cpu_of.py" "$J" run --interval 1000 -- sleep 10
[ -n "$MATCHA" ] && python3 "$here/cpu_of.py" "$MATCHA" run --output "$out/matcha-sleep.jsonl" -- sleep 10

python3 "$here/reference_reader.py" "$out/reference.txt" &
ref=$!
sleep 2
h doctor
"$J" doctor; echo "rc=$?"
"$J" doctor --json >"$out/doctor.json"
h monitor
"$J" monitor --once; "$J" monitor --once --json >"$out/monitor.json"
for t in "nanogpt:nanogpt_like.py 600" "hf:hf_trainer.py" "lightning:lightning_train.py"; do
  name=${t%%:*} script=${t#*:}
  h "wrap $name"
  # shellcheck disable=SC2086  # the script and its arguments
  timeout 300 "$J" wrap --output "$out/wrap-$name.jsonl" -- python3 "$here/"$script >"$out/$name.log" 2>&1
  echo "rc=$?"; tail -n 1 "$out/$name.log"
done
if [ -n "$MATCHA" ]; then
  h "matcha beside joules"
  "$MATCHA" run --output "$out/matcha-nanogpt.jsonl" -- python3 "$here/nanogpt_like.py" 600 >/dev/null
  "$J" run --output "$out/run-nanogpt.jsonl" -- python3 "$here/nanogpt_like.py" 600 >/dev/null
fi
h serve
"$J" serve --listen 127.0.0.1:9464 >"$out/serve.log" 2>&1 &
srv=$!
python3 - "$out/metrics.txt" <<'PY'
import sys, time, urllib.request
for _ in range(100):
    try:
        body = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=5).read()
        break
    except OSError:
        time.sleep(0.1)
time.sleep(2.5)  # a second scrape, after the rates have two readings
open(sys.argv[1], "wb").write(urllib.request.urlopen("http://127.0.0.1:9464/metrics").read())
PY
kill "$srv"; wait "$srv"
h "tune and sweep, dry runs"
"$J" tune --dry-run -- python3 "$here/nanogpt_like.py"
"$J" sweep --dry-run --limits 700:300:100 --steps 20 -- python3 "$here/nanogpt_like.py"
kill "$ref"; wait "$ref"
nvidia-smi -q -d POWER >"$out/smi-power-after.txt"
diff <(grep -i limit "$out/smi-power-before.txt") <(grep -i limit "$out/smi-power-after.txt") &&
  echo "power limits as before"
h finished
