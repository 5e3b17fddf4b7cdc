#!/usr/bin/env bash
# Installs what is missing (Debian packages; the CUDA toolkit must already be at /usr/local/cuda
# or $CUDA_ROOT), then configures and builds into build/. Works offline when all is installed.
#   --with-rocm    also ROCm's HIP runtime and hiprtc (the AMD backend: libamdhip64-dev, libhiprtc-builtins5)
#   --with-clang   also clang (scripts/sanitize.sh's sanitizers and fuzzers)
#   --list         print the packages it would make sure of, and stop
# In CI (CI set, as .ci/run and CI services do) both extras are taken: CI runs the HIP compile
# tests and the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
rocm=0 clang=0 list=0
[ -n "${CI:-}" ] && rocm=1 clang=1
for a in "$@"; do
  case "$a" in
    --with-rocm) rocm=1 ;;
    --with-clang) clang=1 ;;
    --list) list=1 ;;
    *) echo "error: unknown option '$a' (--with-rocm, --with-clang, --list)" >&2; exit 2 ;;
  esac
done
packages=(cmake ninja-build g++ libcli11-dev libfmt-dev libfccp-dev libgtest-dev libbenchmark-dev libsqlite3-dev
          libxxhash-dev nlohmann-json3-dev python3 python3-pip python3-setuptools python3-wheel pkg-config)
[ $clang -eq 1 ] && packages+=(clang)
[ $rocm -eq 1 ] && packages+=(libamdhip64-dev libhiprtc-builtins5)
if [ $list -eq 1 ]; then
  echo "${packages[*]}"
  exit 0
fi
cuda=${CUDA_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "error: no CUDA toolkit at $cuda (need NVRTC and the CUDA runtime; set CUDA_ROOT)" >&2
  exit 1
fi
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
