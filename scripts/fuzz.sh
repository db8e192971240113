#!/usr/bin/env bash
# Fuzzes the .kir parser for SECONDS (default 60) with libFuzzer, ASan and
# UBSan. Seeds: every .kir under examples/ and tests/golden/. The corpus it
# grows is kept in build-fuzz/corpus; crashes are written to build-fuzz/.
set -euo pipefail
seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_FUZZ_BUILD:-$root/build-fuzz}"

if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -G Ninja -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "${launcher[@]}" >/dev/null
fi
ninja -C "$build" parse_fuzz

seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds" "$build/corpus"
n=0
for dir in "$root/examples" "$root/tests/golden"; do
  [ -d "$dir" ] || continue
  while IFS= read -r -d '' f; do
    cp "$f" "$seeds/seed_$n.kir"
    n=$((n + 1))
  done < <(find "$dir" -name '*.kir' -print0)
done
echo "fuzz: $n seed files, running for ${seconds}s"

cd "$build"
exec ./tests/parse_fuzz -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
  -dict="$root/tests/fuzz/kir.dict" -print_final_stats=1 corpus "$seeds"
