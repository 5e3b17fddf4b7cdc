#!/usr/bin/env bash
# Builds attn-tune on a GPU machine where fast-cpp-csv-parser may be missing: unpacks a carried
# libfccp-dev .deb from .deps/ first (apt-get download libfccp-dev there, on a machine with apt).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f /usr/include/libfccp/csv.h ] && [ ! -f .deps/usr/include/libfccp/csv.h ]; then
  deb=$(ls .deps/libfccp-dev_*.deb 2>/dev/null | head -1) || true
  [ -n "${deb:-}" ] || { echo "libfccp-dev missing: put its .deb in .deps/" >&2; exit 1; }
  dpkg -x "$deb" .deps
fi
build=${1:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build"
