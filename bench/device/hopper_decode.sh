#!/usr/bin/env bash
# One device call for the hopper family's decode axes (issue 18: packed GQA and split-KV on TMA and
# wgmma): build this tree; the hopper decode GPU tests (gtest, their own log); then decode shapes
# through bench/peers.py (each tuned by the tool with the default families, fa2 and hopper both,
# then ours through the Python package beside SDPA's backends and, unless --no-flex is given in
# PEERS_ARGS, FlexAttention: one rule, one process).
#   carry: .deps
#   usage: [SHAPES="B,H/KV,NQ,NKV,D[c];..."] [SKIP_TESTS=1] [PEERS_ARGS=--no-flex] [TOOL_ARGS=--family hopper]
#          bash bench/device/hopper_decode.sh
# $OUT: build.log, gtest_hopper_decode.log, peers.log, decode/peers.{csv,md}.
set -uo pipefail
source bench/device/peers_setup.sh
if [ -z "${SKIP_TESTS:-}" ]; then
  (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout ${TEST_S:-220} ./attn_gpu_tests \
     --gtest_filter="${GTEST_FILTER:-*hopper_decode*:*hopper_kv_cache*:*decode_default_space.hopper*}" > $OUT/gtest_hopper_decode.log 2>&1
   echo "gtest rc=$? $(el)")
  grep -E "^\[  (PASSED|FAILED) |variants ok|Failure" $OUT/gtest_hopper_decode.log | head -40
fi
SHAPES=${SHAPES:-"8,32/8,1,8192,128;64,32/8,16,4096,128c;16,64/8,1,8192,128;1,32/8,1,32768,128"}
run decode $(( $(left) - 10 )) --shapes "$SHAPES" ${PEERS_ARGS:-} ${TOOL_ARGS:+--tool-args "$TOOL_ARGS"}
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
grep '^|' $OUT/decode/peers.md 2>/dev/null | head -30
