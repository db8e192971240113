#!/usr/bin/env bash
# End-to-end latency beyond PP-OCR: ResNet-18, MobileNetV2, EfficientNet-B0
# and two BERT-base encoder layers, and a CNN and an encoder layer of
# awkward extents (prime channel counts and widths; written with random
# weights by bench/models/make_models.py), and a CRNN text recognizer with
# two bidirectional LSTM layers, a small 3-D U-Net, and ResNet-18 and
# MobileNetV2 in float16 (each op's result rounded to float16, and with
# --float16-precision excess: float32 between ops), and ResNet-18 quantized
# to int8 (QDQ, and with QLinearConv ops: ONNX Runtime and kiln run integer
# kernels, docs/compile.md), and the two BERT layers quantized
# dynamically (DynamicQuantizeLinear and MatMulInteger, as ONNX Runtime's
# quantize_dynamic writes them) and statically (QDQ MatMuls), compiled by
# kiln on one
# and two threads against ONNX Runtime on one and two threads, in
# interleaved rounds of the same run, as a table of latencies, ratios and
# compile times, with the CPU. Every kiln run checks its outputs against
# ONNX Runtime's.
#
#   bench/e2e_models.sh [BUILD_DIR]     (default: build)
#   KILN_E2E_TARGET="llvm -mcpu=x86-64-v3" bench/e2e_models.sh BUILD_DIR
#                                       (kiln's code for another CPU)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
work=$build/e2e-models
compare=$build/tests/kiln_onnx_compare
ort_run=$here/../tests/e2e/ort_run.js
atol=1e-4 rtol=1e-3 atol16=5e-2 rtol16=1e-2 atol16x=1e-3 rtol16x=2e-3 atol8=0.2 atol8d=0.1
repeat=7 rounds=${KILN_E2E_ROUNDS:-3}

# Debian's interpreter has numpy and onnx (scripts/setup.sh installs them);
# the first python3 on PATH may not.
python=/usr/bin/python3
"$python" -c 'import numpy, onnx' 2>/dev/null || { echo "error: $python lacks numpy or onnx (run scripts/setup.sh)"; exit 1; }
command -v node >/dev/null || { echo "error: node is not installed (run scripts/setup.sh)"; exit 1; }
[ -x "$compare" ] || { echo "error: $compare not built (ninja -C $build kiln_onnx_compare)"; exit 1; }

# shellcheck source=../tests/e2e/bench_lib.sh
source "$here/../tests/e2e/bench_lib.sh"
# ONNX Runtime where tests/e2e/ppocr.sh keeps it: one install for both.
mkdir -p "$work" "$build/e2e-npm"
ort_modules "$build/e2e-npm" ||
  { echo "error: 'npm install onnxruntime-node@1.30.0' failed (see $build/e2e-npm/npm-install.log)"; exit 1; }
cd "$work"
[ -f models/resnet18_qlinear.onnx ] || "$python" "$here/models/make_models.py" models

target=()
[ -n "${KILN_E2E_TARGET:-}" ] && target=(--target "$KILN_E2E_TARGET")
field() { sed -nE "s/.*\"?$1\"?[=:]([0-9.]+).*/\1/p" <<<"$2" | tail -1; }

status=0
rows=()
for entry in "resnet18 1,3,224,224" "mobilenet_v2 1,3,224,224" "efficientnet_b0 1,3,224,224" \
  "bert_base_2_layers 1,128,768" "odd_shapes_cnn 1,3,115,117" "odd_shapes_encoder 1,77,388" "crnn_bilstm 1,3,32,320" \
  "unet3d 1,1,16,64,64" "resnet18_float16 1,3,224,224 float16" "mobilenet_v2_float16 1,3,224,224 float16" \
  "resnet18_float16 1,3,224,224 excess" "mobilenet_v2_float16 1,3,224,224 excess" "resnet18_int8 1,3,224,224 int8" \
  "resnet18_qlinear 1,3,224,224 int8" "bert_base_2_layers_int8 1,128,768 dynamic" "bert_base_2_layers_qdq 1,128,768 dynamic"; do
  read -r model shape kind <<<"$entry"
  onnx=models/$model.onnx dir=run/$model label=$model
  # float16 models: ORT computes in float32 between its casts, kiln rounds
  # each op's result to float16 as the op's definition does; they differ by
  # a few float16 units (2^-11 relative) per layer. With excess precision
  # kiln computes in float32 between ops too: the outputs' final rounding
  # and the sums' order are all that differ.
  tol=(--atol "$atol" --rtol "$rtol") half=() precision=()
  [ "$kind" = float16 ] && tol=(--atol "$atol16" --rtol "$rtol16") half=(--float16)
  [ "$kind" = excess ] && tol=(--atol "$atol16x" --rtol "$rtol16x") half=(--float16) \
    precision=(--float16-precision excess) label=$model+excess
  # int8: a product's sum in another order can round one activation to the
  # next quantization step (0.1), and that step reach the output.
  [ "$kind" = int8 ] && tol=(--atol "$atol8" --rtol 0)
  # dynamic: the data's scale is its range / 255 at run time; x / scale
  # computed another way can round an input to the next step, which moves
  # an output of the layer norms by a few hundredths (the static QDQ
  # layers: a product's float32 rounding, one step of the quantize after).
  [ "$kind" = dynamic ] && tol=(--atol "$atol8d" --rtol 0)
  cmp=("$compare" "$onnx" "$dir" --input-shape "x=$shape" "${tol[@]}" --repeat "$repeat" "${target[@]}" "${precision[@]}")
  ort=(node "$ort_run" "$onnx" "$dir" "x=${shape//,/x}" --repeat $((repeat + 2)) "${half[@]}")
  o1s=() k1s=() k2s=() o2s=()
  for ((r = 0; r < rounds; r++)); do
    o1s+=("$(field ort_ms "$("${pin[@]}" "${ort[@]}" | tail -1)")")
    out=$(KILN_NUM_THREADS=1 "${pin[@]}" "${cmp[@]}") || { echo "$out"; status=1; }
    k1s+=("$(field kiln_ms "$out")")
    [ "$r" = 0 ] && echo "$out" | sed 's/^/  1 thread:  /'
    out=$(KILN_NUM_THREADS=2 "${cmp[@]}") || { echo "$out"; status=1; }
    k2s+=("$(field kiln_ms "$out")")
    o2s+=("$(field ort_ms "$("${ort[@]}" --threads 2 | tail -1)")")
  done
  t0=$(date +%s%N)
  "${pin[@]}" "$build/kiln" compile "$onnx" --input-shape "x=$shape" "${target[@]}" "${precision[@]}" \
    -o "$dir/model.kmod" >/dev/null || status=1
  compile_ms=$((($(date +%s%N) - t0) / 1000000))
  k1=$(median "${k1s[@]}") k2=$(median "${k2s[@]}") o1=$(median "${o1s[@]}") o2=$(median "${o2s[@]}")
  rows+=("$(printf '%-27s %9.2f %9.2f %9.2f %9.2f %8sx %8sx %8d' "$label" "$k1" "$k2" "$o1" "$o2" \
    "$(ratio "$k1" "$o1")" "$(ratio "$k2" "$o2")" "$compile_ms")")
done
echo
echo "$(cpu_line)${KILN_E2E_TARGET:+; kiln code for $KILN_E2E_TARGET}"
printf '%-27s %9s %9s %9s %9s %9s %9s %8s\n' "model" "kiln 1t" "kiln 2t" "ORT 1t" "ORT 2t" "k1/ORT1" "k2/ORT2" "compile"
printf '%s\n' "${rows[@]}"
echo "times in ms: the median of $rounds interleaved rounds, each the median of $repeat runs after a warm-up;"
echo "kiln: compiled host code (KILN_NUM_THREADS=1, 2); ORT: onnxruntime-node 1.30 (intra-op threads 1, 2);"
if [ ${#pin[@]} -gt 0 ]; then echo "one-thread runs and the compile pinned to CPU $pin_cpu (taskset)"; fi
echo "compile: kiln compile MODEL.onnx -o MODEL.kmod, wall clock; outputs checked: |kiln - ort| <= $atol + $rtol * |ort|"
echo "(*_float16: weights, input and output in float16; |kiln - ort| <= $atol16 + $rtol16 * |ort|;"
echo " +excess: kiln compile --float16-precision excess, |kiln - ort| <= $atol16x + $rtol16x * |ort|;"
echo " resnet18_int8, _qlinear: QDQ and QLinearConv, activations quantized in steps of 0.1, |kiln - ort| <= $atol8;"
echo " bert_base_2_layers_int8, _qdq: quantized dynamically and statically, |kiln - ort| <= $atol8d)"
exit $status
