#!/usr/bin/env bash
# Installs what is missing (Debian packages; the CUDA toolkit must already be at /usr/local/cuda
# or $CUDA_ROOT), then configures and builds into build/. Works offline when all is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=${CUDA_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "error: no CUDA toolkit at $cuda (need NVRTC and the CUDA runtime; set CUDA_ROOT)" >&2
  exit 1
fi
packages=(cmake ninja-build g++ libcli11-dev libfmt-dev libfccp-dev libgtest-dev libbenchmark-dev libsqlite3-dev
          libxxhash-dev nlohmann-json3-dev clang
          libamdhip64-dev libhiprtc-builtins5 python3 python3-pip python3-setuptools python3-wheel pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDA_ROOT="$cuda" >/dev/null
ninja -C build
