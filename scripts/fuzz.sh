#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each for FUZZ_SECONDS (default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-30}
B=build-fuzz
if [ ! -f $B/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHOGWILD_FUZZ=ON -DHOGWILD_TESTS=OFF -DHOGWILD_BENCH=OFF -DHOGWILD_CUDA=OFF >/dev/null
fi
targets=$(ls fuzz/fuzz_*.cpp 2>/dev/null | xargs -rn1 basename | sed 's/\.cpp$//')
[ -n "$targets" ] || { echo "fuzz: no targets"; exit 0; }
cmake --build $B -j "$(nproc)" --target $targets
for t in $targets; do
  corpus=fuzz/corpus/${t#fuzz_}
  work=$B/corpus/${t#fuzz_}
  mkdir -p "$work"
  echo "fuzz: $t for ${SECONDS_EACH}s"
  dict=""; [ -f "fuzz/${t#fuzz_}.dict" ] && dict="-dict=fuzz/${t#fuzz_}.dict"
  ./$B/fuzz/$t -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=0 \
    $dict "$work" $( [ -d "$corpus" ] && echo "$corpus" ) 2>&1 | tail -n 3
done
echo "fuzz: all targets ran without a crash"
