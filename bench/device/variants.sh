#!/usr/bin/env bash
# One device call for issue 23's window, softcap and head dims of 8s: build this tree; the GPU tests
# of the window, softcap and head dims 40-120 (every variant of a small space on each form, with
# the decode axes), the planted
# defects (window_off_by_one and softcap_before_scale among them), the Python package's GPU tests;
# then bench/peers.py on sweeps/llm-variants.csv (ours beside FlexAttention with the same
# mask_mod/score_mod, FlashAttention when importable, SDPA with a mask: one rule, one process) and
# the dense causal rows of the yardstick they compare with. $OUT gets build.log, tests.log,
# peers.log, variants/peers.{csv,md}, dense/peers.{csv,md}.
#   carry: .deps
#   usage: [ATTN_TUNE_COMMIT=HASH] [ROWS=0-4] [DENSE_ROWS=1,7,9] [TESTS=ctest regex]
#          bash bench/device/variants.sh [peers.py options]
set -uo pipefail
source bench/device/peers_setup.sh
export ATTN_TUNE_REQUIRE_GPU=1
(cd build-gpu && timeout -k 10 240 ctest -L gpu -R "${TESTS:-window|softcap|head_dim|planted|python_package_gpu}" --output-on-failure) \
  > $OUT/tests.log 2>&1
echo "tests rc=$? $(el)"; grep -E "tests passed|Failed|\*\*\*" $OUT/tests.log | head -12
run variants $(( $(left) * 70 / 100 )) --sweep sweeps/llm-variants.csv --rows "${ROWS:-0-4}" "$@"
run dense $(( $(left) - 10 )) --sweep sweeps/yardstick.csv --rows "${DENSE_ROWS:-1,7,9}" "$@"
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
python3 bench/peers.py --summary $OUT/variants $OUT/dense
