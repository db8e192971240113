#!/usr/bin/env bash
# End-to-end latency: each PP-OCR model on kiln (the reference interpreter
# today; compiled paths once they exist) against ONNX Runtime in the same run,
# one thread each, as a table of latencies and ratios. Outputs are checked too.
#
#   bench/e2e_ppocr.sh [BUILD_DIR]     (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../tests/e2e/ppocr.sh" "${1:-build}" --bench
