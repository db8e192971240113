#!/usr/bin/env bash
# `make run`: the main job on the bundled example. The small CNN is run on the
# reference interpreter, partitioned for the example NPU (with the reason for
# every op), compiled into one .kmod file, and run from that file with the
# NPU emulator, checking every offloaded region against the reference. Then
# the scratchpad kernel of examples/vtcm runs on the host and on emulated
# Hexagon (v68, HVX, VTCM from kiln's Hexagon runtime), and the two outputs
# must be identical. Last, the int8 CNN runs whole on the Hexagon backend
# (regions tiled into VTCM, int8 convs on HVX vrmpy), verified.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
kiln="$build/kiln"
model=examples/small_cnn/small_cnn.kir
out="$build/example-out"
mkdir -p "$out"

echo "== 1. reference interpreter: kiln run $model"
"$kiln" run "$model" --random-inputs 0 --out "$out/reference"

echo
echo "== 2. partition for example_npu: kiln partition $model --backend example_npu --explain"
"$kiln" partition "$model" --backend example_npu --explain --report "$out/partition.json" --dot "$out/partition.dot" |
  grep -E '^(@main|offload)'

echo
echo "== 3. compile: kiln compile $model --backend example_npu -o $out/small_cnn.kmod"
"$kiln" compile "$model" --backend example_npu -o "$out/small_cnn.kmod"

echo
echo "== 4. run the compiled module on the NPU emulator, verified against the reference"
"$kiln" run "$out/small_cnn.kmod" --random-inputs 0 --verify --out "$out/npu" \
  --dispatch-log "$out/dispatch.jsonl" --profile "$out/trace.json"

echo
kernel=examples/vtcm/vtcm_add.kir
echo "== 5. a VTCM kernel on the host and on Hexagon v68 under QEMU: kiln run $kernel --target ..."
"$kiln" run "$kernel" --target llvm --random-inputs 0 --print-limit 0 --out "$out/vtcm-host"
"$kiln" run "$kernel" --target hexagon-v68 --random-inputs 0 --print-limit 0 --out "$out/vtcm-hexagon"
cmp "$out/vtcm-host/C.npy" "$out/vtcm-hexagon/C.npy"
echo "host and Hexagon outputs are identical"

echo
echo "== outputs, partition report (JSON, DOT), dispatch log and Chrome trace are in $out/"

echo
model8=examples/small_cnn/small_cnn_int8.kir
echo "== 6. the int8 CNN on the Hexagon DSP: kiln run $model8 --backend hexagon --target hexagon-v66 --verify"
"$kiln" run "$model8" --backend hexagon --target hexagon-v66 --random-inputs 0 --verify --out "$out/hexagon" \
  --profile "$out/trace-hexagon.json"
