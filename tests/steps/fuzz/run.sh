#!/bin/sh
# Builds the step parser's libFuzzer target with clang (ASan + UBSan) and runs it.
# Usage: tests/steps/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]   (default 120 s)
# Seeds are the corpus logs (tests/steps/corpus), one per file and one per line; crashes are
# written to build/fuzz/step_parser/ as crash-*.  Not part of the default build or of ctest.
set -eu
cd "$(dirname "$0")/../../.."
seconds=${1:-120}
[ $# -gt 0 ] && shift
out=build/fuzz/step_parser
mkdir -p "$out/seeds" "$out/corpus"
CXX=${CXX:-clang++-14}
if [ ! -x "$out/step_parser_fuzz" ] || [ -n "$(find src/steps tests/steps/fuzz -newer "$out/step_parser_fuzz" -name '*.?pp')" ]; then
  echo "fuzz: building $out/step_parser_fuzz with $CXX" >&2
  $CXX -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Isrc tests/steps/fuzz/step_parser_fuzz.cpp src/steps/*.cpp src/util/strings.cpp \
    $(pkg-config --cflags --libs libpcre2-8 fmt) -o "$out/step_parser_fuzz"
fi
for f in tests/steps/corpus/*.log; do
  cp "$f" "$out/seeds/$(basename "$f")"
  split -l 1 -a 4 "$f" "$out/seeds/$(basename "$f" .log)-"
done
cd "$out"
exec ./step_parser_fuzz -max_total_time="$seconds" -max_len=4096 -timeout=5 -rss_limit_mb=2048 \
  -print_final_stats=1 "$@" corpus seeds
