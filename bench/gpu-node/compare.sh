#!/bin/bash
# Two builds of joules side by side on a GPU node, with matcha: the CPU of measuring an idle GPU
# for 10 s and 30 s, and `wrap` on the nanoGPT-style loop with each (the new build before and
# after the other, as the first run also warms the caches), while reference_reader.py reads the
# energy counter every 10 ms; Lightning under the new build.  Reads GPU 0 and changes nothing.
#
#   JOULES=new/joules JOULES_BEFORE=old/joules MATCHA=path/to/matcha bench/gpu-node/compare.sh OUT
#   python3 bench/gpu-node/analyze.py OUT
set -u
G=$(cd "$(dirname "$0")" && pwd)
O=${1:?usage: JOULES=... JOULES_BEFORE=... MATCHA=... bench/gpu-node/compare.sh OUT_DIR}
NEW=${JOULES:?} OLD=${JOULES_BEFORE:?} MATCHA=${MATCHA:?}
mkdir -p "$O"
exec > >(tee "$O/console.txt") 2>&1
export PYTHONUNBUFFERED=1
h() { echo; echo "=== $* [$(date +%T)]"; }
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv
h "CPU of 10 s of an idle GPU, no other NVML reader"
for _ in 1 2; do
  python3 "$G/cpu_of.py" "$NEW" run -- sleep 10
  python3 "$G/cpu_of.py" "$OLD" run -- sleep 10
done
python3 "$G/cpu_of.py" "$MATCHA" run --output "$O/matcha-sleep.jsonl" -- sleep 10
h "CPU of 30 s"
python3 "$G/cpu_of.py" "$NEW" run -- sleep 30
python3 "$G/cpu_of.py" "$MATCHA" run --output "$O/matcha-sleep30.jsonl" -- sleep 30
python3 "$G/reference_reader.py" "$O/reference.txt" &
ref=$!
sleep 1
h "wrap, the nanoGPT-style loop: new, before, new"
for run in new:"$NEW" old:"$OLD" new2:"$NEW"; do
  python3 "$G/cpu_of.py" "${run#*:}" wrap --output "$O/wrap-${run%%:*}.jsonl" -- \
    python3 "$G/nanogpt_like.py" 600 >"$O/${run%%:*}.log" 2>&1
  tail -n 2 "$O/${run%%:*}.log"
done
h "wrap, Lightning: new"
python3 "$G/cpu_of.py" "$NEW" wrap --output "$O/wrap-lightning-new.jsonl" -- \
  python3 "$G/lightning_train.py" >"$O/lightning.log" 2>&1
tail -n 1 "$O/lightning.log"
h "matcha run, the nanoGPT-style loop"
python3 "$G/cpu_of.py" "$MATCHA" run --output "$O/matcha-nanogpt.jsonl" -- \
  python3 "$G/nanogpt_like.py" 600 >"$O/matcha.log" 2>&1
tail -n 1 "$O/matcha.log"
kill "$ref"; wait "$ref"
h finished
