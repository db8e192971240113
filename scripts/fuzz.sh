#!/usr/bin/env bash
# Fuzzes kiln with libFuzzer, ASan and UBSan (clang-19, in build-fuzz/):
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (make fuzz FUZZ_SECONDS=600)
#
# runs each TARGET for SECONDS (default $FUZZ_SECONDS, else 60). Targets:
#   parse_fuzz  the .kir parser          kmod_fuzz  the .kmod loader
#   graph_fuzz  the kiln.graph loader    onnx_fuzz  the ONNX importer
# (all four by default; tests/fuzz/<target>.cc says what each checks).
#
# Seeds: the corpus kept in the repo (tests/fuzz/corpus/<target>/), and for
# the parser every .kir under examples/ and tests/golden/. The corpus a run
# grows is kept in build-fuzz/corpus/<target>/; a crashing input is written
# to build-fuzz/crashes/<target>/. Fix the bug, then copy the input into
# tests/fuzz/corpus/<target>/ (a few KB at most): `make test` replays it.
# Exits non-zero when any target crashed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-${FUZZ_SECONDS:-60}}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse_fuzz kmod_fuzz graph_fuzz onnx_fuzz)
build="${KILN_FUZZ_BUILD:-$root/build-fuzz}"
jobs="${FUZZ_JOBS:-1}"

if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -G Ninja -DKILN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DKILN_PYTHON=OFF "${launcher[@]}" >/dev/null
fi
nice ninja -C "$build" -j"$jobs" "${targets[@]}"

# Seeds beyond the kept corpus: the parser gets every .kir of the tree.
seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds/parse_fuzz"
n=0
for dir in "$root/examples" "$root/tests/golden"; do
  [ -d "$dir" ] || continue
  while IFS= read -r -d '' f; do
    cp "$f" "$seeds/parse_fuzz/seed_$n.kir"
    n=$((n + 1))
  done < <(find "$dir" -name '*.kir' -size -16k -print0)
done

failed=()
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes" "$seeds/$t"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1
        -artifact_prefix="$crashes/")
  case "$t" in
    parse_fuzz) args+=(-max_len=8192 -dict="$root/tests/fuzz/kir.dict") ;;
    kmod_fuzz | graph_fuzz) args+=(-max_len=16384 -dict="$root/tests/fuzz/json.dict") ;;
    onnx_fuzz) args+=(-max_len=16384) ;;
  esac
  echo "fuzz: $t for ${seconds}s"
  log="$build/$t.log"
  rc=0
  (cd "$build" && nice ./tests/"$t" "${args[@]}" "$corpus" "$root/tests/fuzz/corpus/$t" "$seeds/$t") \
    >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    grep -E "ERROR|runtime error|Test unit written|==[0-9]+==" "$log" | head -20 || true
    summary+=("$t: FAILED after ${execs:-?} executions (log: $log)")
  else
    summary+=("$t: ${execs:-?} executions, no crash")
  fi
done
echo "fuzz summary (${seconds}s each):"
printf '  %s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ]
