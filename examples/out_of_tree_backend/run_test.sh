#!/usr/bin/env bash
# The out-of-tree backend end to end, as a vendor would build and use it:
#
#   examples/out_of_tree_backend/run_test.sh BUILD_DIR
#
# 1. kiln is installed from BUILD_DIR into a scratch prefix;
# 2. this folder is configured against the prefix alone (find_package(kiln))
#    and built: libacme_npu.so;
# 3. the INSTALLED kiln partitions model.kir with --plugin (the check's
#    refusal is explained), runs it with --verify (every acme region against
#    the reference kernels), compiles a .kmod and runs it through
#    KILN_PLUGIN_PATH with --verify, its outputs equal to the reference
#    interpreter's run of the model (kiln run without a backend);
# 4. the .kmod without the plugin names the plugin to pass.
set -euo pipefail

build=${1:?usage: examples/out_of_tree_backend/run_test.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$build/out-of-tree-test
# numpy writes the inputs and compares the outputs (Debian's python3 has it).
py=${KILN_PYTHON:-/usr/bin/python3}
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"

echo "== install kiln into $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"

echo "== build the plugin against the installed kiln"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$here" -B "$work/acme" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/acme" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
plugin=$work/acme/libacme_npu.so
kiln=$prefix/bin/kiln
model=$here/model.kir
# Inputs with negative values (so relu decides), from a fixed seed.
"$py" - "$work" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(7)
for name, shape in (("x", (4, 16)), ("y", (4, 16)), ("bias", (16,))):
    np.save(f"{sys.argv[1]}/{name}.npy", rng.uniform(-2, 2, shape).astype(np.float32))
PY
inputs=(--input "x=$work/x.npy" --input "y=$work/y.npy" --input "bias=$work/bias.npy")

# compare REFERENCE.npy GOT.npy WHAT: the host part is compiled code
# (sigmoid, the broadcast add), so float32 to about an ulp.
compare() {
  "$py" - "$@" <<'PY'
import sys
import numpy as np
ref, got = np.load(sys.argv[1]), np.load(sys.argv[2])
assert ref.shape == got.shape == (4, 16), (ref.shape, got.shape)
assert float(np.abs(ref).sum()) > 0, "FAIL: the reference output is all zeros"
err = float(np.max(np.abs(ref - got)))
assert err <= 1e-6, f"FAIL: {sys.argv[3]}: max abs error {err} against the reference"
print(f"{sys.argv[3]}: matches the reference interpreter (max abs error {err:.2g})")
PY
}

expect() {  # expect TEXT FILE
  grep -qF -- "$1" "$2" || { echo "FAIL: '$1' not in:"; cat "$2"; exit 1; }
}

echo "== kiln partition --plugin: what acme_npu claims, and why not the rest"
"$kiln" --plugin "$plugin" partition "$model" -b acme_npu --explain >"$work/partition.txt" 2>&1
cat "$work/partition.txt"
expect "4 of 6 ops offloaded" "$work/partition.txt"
expect "shapes [4,16] and [16] differ; acme_npu does not broadcast" "$work/partition.txt"
"$kiln" --plugin "$plugin" partition "$model" -b acme_npu --option acme_npu.buffer=32 --explain \
  >"$work/partition_small.txt" 2>&1
expect "64 elements exceed the buffer of 32" "$work/partition_small.txt"
# The declared option: kiln checks its key and type before partitioning.
for bad in bufer=32 buffer=lots; do
  if "$kiln" --plugin "$plugin" partition "$model" -b acme_npu --option "acme_npu.$bad" >"$work/bad.txt" 2>&1; then
    echo "FAIL: --option acme_npu.$bad was accepted"; exit 1
  fi
done
expect "acme_npu option buffer=lots: expected an integer" "$work/bad.txt"
"$kiln" --plugin "$plugin" partition "$model" -b acme_npu --option acme_npu.bufer=32 >"$work/bad.txt" 2>&1 || true
expect "acme_npu: unknown option 'bufer' (acme_npu takes buffer=INT)" "$work/bad.txt"

echo "== the reference interpreter's outputs (no backend)"
"$kiln" run "$model" "${inputs[@]}" --interpret --out "$work/reference" --print-limit 0 >/dev/null

echo "== kiln run --plugin --verify"
"$kiln" --plugin "$plugin" run "$model" -b acme_npu "${inputs[@]}" --verify --out "$work/run" \
  --print-limit 0 >"$work/run.txt" 2>&1 || { cat "$work/run.txt"; exit 1; }
cat "$work/run.txt"
expect "acme_npu" "$work/run.txt"
compare "$work/reference/output_0.npy" "$work/run/output_0.npy" "kiln run --plugin"

echo "== kiln compile --plugin, then run the .kmod through KILN_PLUGIN_PATH"
"$kiln" --plugin "$plugin" compile "$model" -b acme_npu -o "$work/model.kmod" >/dev/null
KILN_PLUGIN_PATH=$plugin "$kiln" run "$work/model.kmod" "${inputs[@]}" --verify --out "$work/kmod" \
  --print-limit 0 >"$work/kmod.txt" 2>&1 || { cat "$work/kmod.txt"; exit 1; }
cat "$work/kmod.txt"
compare "$work/reference/output_0.npy" "$work/kmod/output_0.npy" "the .kmod"

echo "== the .kmod without its plugin"
if "$kiln" run "$work/model.kmod" "${inputs[@]}" >"$work/missing.txt" 2>&1; then
  echo "FAIL: the .kmod ran without its plugin"; exit 1
fi
expect "needs backend runtime 'acme_npu', which this runtime does not have" "$work/missing.txt"
expect "load the plugin that provides acme_npu version 0.3.0: kiln --plugin" "$work/missing.txt"
echo "PASS: the out-of-tree acme_npu plugin builds against the installed kiln and matches the reference"
