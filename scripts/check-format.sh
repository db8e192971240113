#!/usr/bin/env bash
# Checks that every C and C++ file git tracks matches .clang-format, with
# Debian 12's clang-format (version 14; scripts/setup.sh installs it). Lists
# the files that differ and exits 1; `scripts/check-format.sh --fix`
# formats them instead.
#
#   scripts/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "SKIPPED: not a git checkout, so there is no list of tracked files to check"
  exit 77
fi
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "error: clang-format is not installed (run scripts/setup.sh, which installs Debian's clang-format 14)"
  exit 1
fi
version=$("$fmt" --version | sed -nE 's/.*version ([0-9]+)\..*/\1/p')
if [ "$version" != "14" ]; then
  echo "error: $fmt is clang-format $version; the tree is formatted with version 14 (Debian 12's clang-format)"
  exit 1
fi
bad=()
while IFS= read -r f; do
  if [ "${1:-}" = "--fix" ]; then
    "$fmt" -i "$f"
  elif ! "$fmt" "$f" | cmp -s - "$f"; then
    bad+=("$f")
  fi
done < <(git ls-files '*.c' '*.cc' '*.h')
if [ ${#bad[@]} -ne 0 ]; then
  echo "error: ${#bad[@]} files do not match .clang-format (scripts/check-format.sh --fix formats them):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format: every tracked C and C++ file matches .clang-format"
