#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, tune the default shape.
# Without a GPU it compiles the whole search space for sm_90a instead and says so.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
./build/attn-tune --shape 4,32,4096,128 --causal "$@"
rc=$?
if [ $rc -eq 4 ]; then
  echo
  echo "No GPU here, so nothing can be timed. Compiling the whole space for sm_90a instead:"
  ./build/attn-tune --compile-only --arch sm_90a --shape 4,32,4096,128 --causal "$@"
  rc=$?
fi
exit $rc
