#!/usr/bin/env bash
# One device call for issue 23's packed variable-length batches: build this tree; the GPU tests of
# varlen (every variant of a small space on each form), the planted defects (the sequence boundary
# crossed among them) and the reference; then the tool's own timing (one rule, one process) of the
# varlen bar's batch (32 sequences drawn in [128, 8192], H 16, D 128, causal and not) beside the
# dense problem of its longest sequence (4,16,8192,128), hopper's default space both, and with
# FA2=1 fa2's (SPACE) too. $OUT gets build.log, tests.log, tune-*.csv and a table.
#   carry: .deps
#   usage: [TESTS=ctest regex] [FA2=1] [SPACE="..."] bash bench/device/varlen.sh
set -uo pipefail
source bench/device/peers_setup.sh
export ATTN_TUNE_REQUIRE_GPU=1
(cd build-gpu && timeout -k 10 240 ctest -L gpu -R "${TESTS:-varlen|planted|reference_vs_cpu}" --output-on-failure) \
  > $OUT/tests.log 2>&1
echo "tests rc=$? $(el)"; grep -E "tests passed|Failed|\*\*\*" $OUT/tests.log | head -12
space=${SPACE:-"block_m=128,256 block_n=64,128 warps=8 stages=2"}
tune() {  # NAME options...
  local name=$1; shift
  timeout -k 10 120 build-gpu/attn-tune "$@" --no-db --out $OUT/tune-$name.csv > $OUT/tune-$name.log 2>&1
  echo "$name rc=$? $(el)"; grep -A3 "#  config" $OUT/tune-$name.log | head -4
}
for c in "" "--causal"; do
  n=${c:+causal}; n=${n:-full}
  tune varlen-hopper-$n --shape 32,16,8192,128 --seqlens uniform:128:8192 $c
  tune dense-hopper-$n --shape 4,16,8192,128 $c
  if [ -n "${FA2:-}" ]; then
    tune varlen-fa2-$n --shape 32,16,8192,128 --seqlens uniform:128:8192 $c --family fa2 --space $space
    tune dense-fa2-$n --shape 4,16,8192,128 $c --family fa2 --space $space
  fi
done
