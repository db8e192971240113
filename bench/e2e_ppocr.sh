#!/usr/bin/env bash
# End-to-end latency: each PP-OCR model (det also at 640x640) on kiln's
# reference interpreter, compiled by kiln on one and two threads, and on ONNX
# Runtime on one and two threads, in the same run, as a table of latencies,
# ratios and compile times, with the CPU, then the .kmod load against ONNX
# Runtime's session creation, and the targets kiln's host code is held to
# (every latency <= 1.0x ONNX Runtime's, det's compile under 2 s on one
# core, its load at most half of ORT's session), each met or MISSED. Outputs
# are checked too.
#
#   bench/e2e_ppocr.sh [BUILD_DIR]     (default: build)
#   KILN_E2E_TARGET="llvm -mcpu=x86-64-v3" bench/e2e_ppocr.sh BUILD_DIR
#                                      (kiln's code for another CPU)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../tests/e2e/ppocr.sh" "${1:-build}" --bench
