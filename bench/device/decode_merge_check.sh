#!/usr/bin/env bash
# One device call after a change to split-KV's merge (issue 18): build this tree; the decode,
# KV-cache, head-dim, value-dim and graph GPU tests (split counts on both sides of
# FUSED_MERGE_SPLITS); then bench/peers.py (ours through Python beside SDPA, one rule, one process)
# on the N_q = 1 decode shapes, and, with the time left, speculative decode beside FlexAttention.
# Files under $OUT: build.log, ctest_gpu.log, decode/peers.{csv,md}, spec/peers.{csv,md}.
#   carry: .deps      usage: bash bench/device/decode_merge_check.sh
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$PWD/build-gpu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/python:${PYTHONPATH:-} ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 220 ctest -L gpu -R 'decode|value_dim|head_dim|LibraryGraph|Library.*Decode|kv' -j1 \
   --output-on-failure > $OUT/ctest_gpu.log 2>&1
 echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_gpu.log | head -30)
timeout 150 python3 bench/decode.py --tool build-gpu/attn-tune --out $OUT/decode --no-flex \
  --shapes "8,32/8,1,8192,128;1,32/8,1,32768,128;32,64/8,1,4096,128;16,64/8,1,8192,128;32,16/8,1,4096,256" 2>&1 | grep '^|'
echo "decode done $(el)"
left=$(( ${LIMIT:-560} - ($(date +%s) - t0) ))
[ $left -gt 60 ] && timeout $left python3 bench/decode.py --tool build-gpu/attn-tune --out $OUT/spec \
  --shapes "64,32/8,16,4096,128c" 2>&1 | grep '^|'
echo "done $(el)"
