#!/bin/sh
# bench_step_parser built outside the CMake presets, with -O2, from a source tree's src/steps
# (and the bench of that tree, or of this one when it has none): the step parser's speed of two
# commits compared on one machine without a release build of all of joules.
#   bench/step_parser/quick.sh [SOURCE_ROOT] [OUT_DIR]   (default: this tree, /tmp/joules-quick)
# A commit's tree: mkdir /tmp/c && git archive COMMIT src bench | tar -x -C /tmp/c.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
src=${1:-$here}
out=${2:-/tmp/joules-quick}
mkdir -p "$out"
bench="$src/bench/step_parser/bench_step_parser.cpp"
[ -f "$bench" ] || bench="$here/bench/step_parser/bench_step_parser.cpp"
objs=""
for f in "$src"/src/steps/*.cpp "$src"/src/util/strings.cpp "$bench"; do
  o="$out/$(basename "$f" .cpp).o"
  ${CXX:-g++} -std=c++20 -O2 -DNDEBUG -I"$src/src" -c "$f" -o "$o"
  objs="$objs $o"
done
# shellcheck disable=SC2086
${CXX:-g++} -o "$out/bench_step_parser" $objs -lbenchmark -lpthread -lfmt -lpcre2-8
"$out/bench_step_parser" --benchmark_min_time=0.5
