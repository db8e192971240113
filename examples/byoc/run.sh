#!/bin/sh
# The bring-your-own-codegen tutorial as `kiln` commands, for MatmulReLU and
# Conv2dReLU on the example NPU. Run from the repository root after building:
#   cmake -S . -B build -G Ninja && ninja -C build kiln
#   sh examples/byoc/run.sh [build]
# Every step fails loudly (set -e); the last step checks VALUES against the
# reference interpreter with --verify and by comparing the saved outputs.
set -eu
BUILD=${1:-build}
KILN="$BUILD/kiln"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "== 1. the patterns example_npu registered"
"$KILN" partition --list

for model in matmul_relu conv2d_relu; do
  echo "== 2. partition $model and explain every decision"
  "$KILN" partition "examples/$model.kir" --backend example_npu --explain \
    --report "$OUT/$model.report.json" --dot "$OUT/$model.dot"

  echo "== 3+4. codegen and build one file"
  "$KILN" compile "examples/$model.kir" --backend example_npu -o "$OUT/$model.kmod"

  echo "== 5. run the compiled module, checking each region against the reference"
  "$KILN" run "$OUT/$model.kmod" --random-inputs 1 --verify --out "$OUT/npu" \
    --dispatch-log "$OUT/$model.dispatch.jsonl" --profile "$OUT/$model.trace.json" --print-limit 0
  cat "$OUT/$model.dispatch.jsonl"
  "$KILN" run "examples/$model.kir" --random-inputs 1 --interpret --out "$OUT/ref" --print-limit 0

  echo "== values: NPU against the reference interpreter"
  cmp "$OUT/npu/output_0.npy" "$OUT/ref/output_0.npy" && echo "$model: outputs are identical"
done
