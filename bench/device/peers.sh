#!/usr/bin/env bash
# One device call: build this tree, then bench/peers.py (each shape tuned, then ours through the
# Python package beside SDPA's backends, FlashAttention when importable and FlexAttention
# max-autotune: one rule, one process) on sweeps/ci-smoke.csv and on rows of sweeps/yardstick.csv,
# into $OUT; ends with a short table of both (bench/peers.py --summary).
#   carry: .deps
#   usage: [ATTN_TUNE_COMMIT=HASH] [ROWS=0-3] [SMOKE_SHARE=40] bash bench/device/peers.sh [peers.py options]
#   e.g.   ATTN_TUNE_COMMIT=6fb819e ROWS=8-11 bash bench/device/peers.sh --sustained 2
# The device machine gets no .git: ATTN_TUNE_COMMIT names the commit in the results. ROWS: the
# yardstick rows (from 0; 0-3 are 4,32,4096,128 and 16,16,1024,64, causal and not). SMOKE_SHARE:
# the percent of the time left after the build that the smoke sweep may take. $OUT gets build.log,
# peers.log, smoke/peers.{csv,md}, yardstick/peers.{csv,md}: 6 files. A run cut by its time limit
# still writes the shapes it measured.
set -uo pipefail
source bench/device/peers_setup.sh
run smoke $(( $(left) * ${SMOKE_SHARE:-40} / 100 )) --sweep sweeps/ci-smoke.csv "$@"
run yardstick $(( $(left) - 10 )) --sweep sweeps/yardstick.csv --rows "${ROWS:-0-3}" "$@"
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
python3 bench/peers.py --summary $OUT/smoke $OUT/yardstick
