#!/usr/bin/env bash
# Builds attn-tune on a GPU machine where some Debian-only build dependencies may be missing
# (fast-cpp-csv-parser, SQLite, xxHash, nlohmann-json): unpacks the .debs carried in .deps/
# (`apt-get download libfccp-dev libsqlite3-dev libsqlite3-0 libxxhash-dev libxxhash0
# nlohmann-json3-dev` there, on a machine with apt) and points CMake at what the system lacks.
# Programs linked against a carried library find it with:
#   export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
set -euo pipefail
cd "$(dirname "$0")/.."
for deb in .deps/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" .deps; done
[ -f /usr/include/libfccp/csv.h ] || [ -f .deps/usr/include/libfccp/csv.h ] ||
  { echo "libfccp-dev missing: put its .deb in .deps/" >&2; exit 1; }
lib=$PWD/.deps/usr/lib/x86_64-linux-gnu inc=$PWD/.deps/usr/include
extra=()
[ -f /usr/include/sqlite3.h ] || extra+=(-DSQLite3_INCLUDE_DIR="$inc" -DSQLite3_LIBRARY="$lib/libsqlite3.so")
[ -f /usr/include/xxhash.h ] || extra+=(-DXXHASH_INCLUDE_DIR="$inc" -DXXHASH_LIB="$lib/libxxhash.so")
[ -d /usr/share/cmake/nlohmann_json ] || [ -d /usr/lib/cmake/nlohmann_json ] ||
  extra+=(-Dnlohmann_json_DIR="$PWD/.deps/usr/share/cmake/nlohmann_json")
export LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}"  # for the test discovery that runs at build time
build=${1:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" >/dev/null
ninja -C "$build" ${ATTN_BUILD_TARGETS:-}  # e.g. ATTN_BUILD_TARGETS=attn_gpu_tests: that binary alone
