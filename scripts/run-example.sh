#!/usr/bin/env bash
# `make run`: the main job on the bundled example. Runs the small CNN on the
# reference interpreter with a fixed random image and prints its outputs.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
kiln="$build/kiln"
out="$build/example-out"
echo "== kiln run examples/small_cnn/small_cnn.kir (reference interpreter)"
"$kiln" run examples/small_cnn/small_cnn.kir --random-inputs 0 --out "$out"
echo "== outputs written to $out/"
