#!/usr/bin/env bash
# The installed SDK end to end:
#
#   tests/install_consumer/run.sh BUILD_DIR
#
# 1. `cmake --install BUILD_DIR --prefix BUILD_DIR/install-test/prefix` (copies
#    what the build made);
# 2. every installed header compiles alone with only -I PREFIX/include (C
#    headers as C and C++), and none mentions LLVM, protobuf or ONNX;
# 3. this folder's CMakeLists.txt is configured and built against the prefix
#    (find_package(kiln), kiln::runtime), and main.c again with pkg-config;
# 4. the INSTALLED kiln compiles examples/small_cnn, the consumer runs it, and
#    its output is bitwise the one the installed `kiln run` writes.
set -euo pipefail

build=${1:?usage: tests/install_consumer/run.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$build/install-test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"

echo "== install into $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/kiln/kiln.h lib/libkiln_runtime.a lib/libkiln_compiler.a bin/kiln lib/kiln/kiln_hexagon_rt.o \
  lib/cmake/kiln/kilnConfig.cmake lib/cmake/kiln/kilnConfigVersion.cmake lib/pkgconfig/kiln-runtime.pc; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done

echo "== every public header alone, with only -I$prefix/include"
cc=${CC:-cc}
cxx=${CXX:-c++}
count=0
while IFS= read -r header; do
  rel=${header#"$prefix/include/"}
  if grep -nE '#include *[<"](llvm|google/protobuf|onnx)/' "$header"; then
    echo "FAIL: $rel includes LLVM, protobuf or ONNX"
    exit 1
  fi
  printf '#include <%s>\n' "$rel" >"$work/one.cc"
  "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" "$work/one.cc" ||
    { echo "FAIL: $rel does not compile alone as C++"; exit 1; }
  # Headers of C declarations (extern "C") must be C too.
  if grep -q 'extern "C"' "$header"; then
    printf '#include <%s>\n' "$rel" >"$work/one.c"
    "$cc" -std=c11 -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" "$work/one.c" ||
      { echo "FAIL: $rel does not compile alone as C"; exit 1; }
  fi
  count=$((count + 1))
done < <(find "$prefix/include" -name '*.h' | sort)
echo "$count headers compile alone"

echo "== configure and build tests/install_consumer against the prefix"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$here" -B "$work/consumer" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release -DKILN_CONSUMER_COMPILER=ON \
  >"$work/consumer-configure.log" || { cat "$work/consumer-configure.log"; exit 1; }
grep 'kiln::compiler:' "$work/consumer-configure.log"
cmake --build "$work/consumer" >"$work/consumer-build.log" || { cat "$work/consumer-build.log"; exit 1; }
"$work/consumer/kiln_consumer_cxx"

echo "== main.c with pkg-config"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
# CFLAGS/LDFLAGS from the environment: a sanitizer build's consumers need its
# flags to link its instrumented libraries (scripts/check-sanitize.sh sets them).
"$cc" ${CFLAGS:-} -o "$work/kiln_consumer_pc" "$here/main.c" $(pkg-config --cflags --libs kiln-runtime) ${LDFLAGS:-}

echo "== the installed kiln compiles and runs small_cnn; the consumers match it"
kiln=$prefix/bin/kiln
"$kiln" compile "$root/examples/small_cnn/small_cnn.kir" -o "$work/small_cnn.kmod" >/dev/null
# An input from kiln's own writer: the ramp the C API test writes.
"$build/tests/kiln_c_api_run" "$work/small_cnn.kmod" --write-inputs "$work" >/dev/null
"$kiln" run "$work/small_cnn.kmod" --input "image=$work/input_0.npy" --out "$work/kiln_run" --print-limit 0 >/dev/null
in_bytes=$((1 * 3 * 32 * 32 * 4))
out_bytes=$((10 * 4))
tail -c "$in_bytes" "$work/input_0.npy" >"$work/input.raw"
tail -c "$out_bytes" "$work/kiln_run/output_0.npy" >"$work/expected.raw"
for consumer in "$work/consumer/kiln_consumer" "$work/kiln_consumer_pc"; do
  "$consumer" "$work/small_cnn.kmod" "$work/input.raw" "$work/output.raw"
  cmp "$work/expected.raw" "$work/output.raw" || { echo "FAIL: $consumer's output differs from kiln run's"; exit 1; }
done
# Softmax probabilities: they sum to one (the values are real, not zeros).
python3 - "$work/output.raw" <<'PY' || { echo "FAIL: the outputs are not probabilities"; exit 1; }
import struct, sys
v = struct.unpack("<10f", open(sys.argv[1], "rb").read())
assert abs(sum(v) - 1) < 1e-4 and min(v) > 0, v
PY
echo "PASS: the installed SDK builds a consumer whose output is bitwise kiln run's"
