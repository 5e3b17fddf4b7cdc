#!/usr/bin/env bash
# Installs what is missing, builds, runs every test. GPU tests (ctest label "gpu") skip with a
# message when there is no CUDA device; `ctest --test-dir build -L gpu` runs only those.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
