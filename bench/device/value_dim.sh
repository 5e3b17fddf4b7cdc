#!/usr/bin/env bash
# One device call for issue 23's dv != d: build this tree; the GPU tests of dv (every variant of a
# small space on each form, with the decode axes), of the head dims and the planted defects, the
# library's and the Python package's GPU tests; then bench/peers.py on sweeps/llm-value-dim.csv
# (ours beside FlexAttention, SDPA's backends that take dv != d and FlashAttention when importable:
# one rule, one process). $OUT gets build.log, tests.log, peers.log, value_dim/peers.{csv,md}.
#   carry: .deps
#   usage: [ATTN_TUNE_COMMIT=HASH] [ROWS=0-1] [TESTS=ctest regex] bash bench/device/value_dim.sh [peers.py options]
set -uo pipefail
source bench/device/peers_setup.sh
export ATTN_TUNE_REQUIRE_GPU=1
(cd build-gpu && timeout -k 10 300 ctest -L gpu -R "${TESTS:-value_dim|head_dim|planted|Library|python_package_gpu|reference_vs_cpu}" \
  --output-on-failure) > $OUT/tests.log 2>&1
echo "tests rc=$? $(el)"; grep -E "tests passed|Failed|\*\*\*" $OUT/tests.log | head -12
run value_dim $(( $(left) - 10 )) --sweep sweeps/llm-value-dim.csv --rows "${ROWS:-0-1}" "$@"
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
python3 bench/peers.py --summary $OUT/value_dim
