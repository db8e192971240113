#!/usr/bin/env bash
# Builds the `kiln` target from a clean copy of the tree in the three
# configurations users hit first: CMake's default generator (Unix Makefiles),
# a Release build, and clang-19 with Ninja and warnings as errors. Too slow for
# CI's budget; run it before touching CMakeLists.txt or compiler flags.
#
#   scripts/check-builds.sh [REV]     (make check-builds)
#
# REV is a commit to build (default: the working tree's tracked files, with
# uncommitted changes). JOBS sets the parallel jobs (default 1); KEEP=1 keeps
# the build folders. Each build's log is kept until the end; a failing build's
# log tail is printed and the script exits 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${JOBS:-1}"
rev="${1:-$(git -C "$root" stash create)}"
rev="${rev:-HEAD}"  # `git stash create` prints nothing on a clean tree

work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-check-builds.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
git -C "$root" archive "$rev" | tar -x -C "$work/src"

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # Relative paths below $work, so a second run hits the cache.
  export CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=1
fi

failed=0
# check NAME CMAKE_ARGS...: configure and build `kiln` in $work/NAME.
check() {
  local name="$1" dir="$work/$1" log="$work/$1.log"
  shift
  echo "check-builds: $name: cmake $*"
  if cmake -S "$work/src" -B "$dir" "$@" "${launcher[@]}" >"$log" 2>&1 &&
     cmake --build "$dir" --target kiln -j "$jobs" >>"$log" 2>&1; then
    echo "check-builds: $name: ok ($(grep -c 'warning:' "$log" || true) warnings)"
  else
    echo "check-builds: $name: FAILED; last lines of its log:"
    tail -n 40 "$log"
    failed=1
  fi
  [ "${KEEP:-0}" = 1 ] || rm -rf "$dir"
}

check default
check release -DCMAKE_BUILD_TYPE=Release
check clang-19 -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_C_COMPILER=clang-19 -DKILN_WERROR=ON
exit "$failed"
