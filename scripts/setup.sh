#!/usr/bin/env bash
# Installs the Debian packages kiln needs, only when one is missing.
# Idempotent: when everything is present it only runs one dpkg-query.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config clang-format
  llvm-19-dev clang-19 lld-19 liblld-19-dev libclang-rt-19-dev
  libzstd-dev zlib1g-dev libedit-dev libxml2-dev
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libcli11-dev libfmt-dev libjemalloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev libopenblas-dev
  qemu-user-static
  python3-dev python3-numpy python3-pytest pybind11-dev python3-onnx
  nodejs
)

missing=()
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null || true)
for p in "${packages[@]}"; do
  if ! grep -qx "$p installed" <<<"$installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
