#!/usr/bin/env bash
# Builds kiln with AddressSanitizer and UndefinedBehaviorSanitizer (GCC, in
# build-sanitize/) and runs the whole ctest suite on it (`make
# check-sanitize`; slow: not part of `make test`).
#
#   scripts/check-sanitize.sh [CTEST ARGS...]     e.g. -R cli_ to run some
#
# Any sanitizer report fails the test that caused it: UBSan does not
# recover, ASan stops at the first error. One test asks on purpose for a
# 16 TiB workspace and checks that kiln reports the failed allocation;
# ASan would abort on that request instead of failing it, so that test runs
# with allocator_may_return_null=1 and the rest without.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_SANITIZE_BUILD:-$root/build-sanitize}"
jobs="${SANITIZE_JOBS:-$(nproc)}"
# GCC's flow analysis under the sanitizers warns of uninitialised members in
# std::variant and std::optional that are not (-Wmaybe-uninitialized): the
# warnings are not what this build checks, so they are neither errors nor shown.
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wno-maybe-uninitialized"

if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # The Python extension would need the ASan runtime preloaded into python3: off.
  # Its own build type: -O1 compiles faster than the project's -O2 and keeps
  # the reports' stacks readable.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DKILN_WERROR=OFF -DKILN_PYTHON=OFF \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1" \
    -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" "${launcher[@]}" >/dev/null
fi
nice ninja -C "$build" -j"$jobs"

# The tests that build projects against the installed kiln (install_consumer,
# out_of_tree_backend) link its instrumented libraries: their compilers take
# the sanitizers from the environment (CMake reads these on a first configure).
export CFLAGS="-fsanitize=address,undefined" CXXFLAGS="-fsanitize=address,undefined"
export LDFLAGS="-fsanitize=address,undefined"
huge=TirWorkspace.ImpossibleWorkspaceIsAnErrorOnTheHost
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
common="detect_leaks=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1"
rc=0
ASAN_OPTIONS="$common" ctest --test-dir "$build" --output-on-failure -j"$jobs" --timeout 1800 \
  -E "^${huge}\$" "$@" || rc=$?
ASAN_OPTIONS="$common:allocator_may_return_null=1" ctest --test-dir "$build" --output-on-failure \
  --timeout 1800 -R "^${huge}\$" || rc=$?
exit $rc
