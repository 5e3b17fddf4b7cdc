#!/usr/bin/env bash
# Decode rows beside SDPA's backends under two ways of clearing the L2 before each timed call, one
# process each, every kernel (and the copy) by the same rule: zeroing 256 MiB (do_bench's rule; the
# zeroing's dirty lines are written back while the timed call runs) and reading them (--flush read:
# the L2 left clean). Tells how much of a memory-bound row's time is the flush's write-back.
#   carry: .deps   usage: ATTN_BUILD_TARGETS="attn-tune attn_tune" [ROWS=names] [PEERS_ARGS=--no-flex] bash bench/device/flush_ab.sh
set -uo pipefail
source bench/device/peers_setup.sh
ROWS=${ROWS:-llama3-8b-b1-32k,llama3-70b-b1-32k,qwen2-7b-b1-128k,llama3-8b-b8-8k}
run zero $(( $(left) / 2 - 5 )) --sweep sweeps/llm-decode.csv --rows "$ROWS" ${PEERS_ARGS:---no-flex}
run read $(( $(left) - 10 )) --sweep sweeps/llm-decode.csv --rows "$ROWS" ${PEERS_ARGS:---no-flex} --flush read
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -6
for m in zero read; do echo "== flush $m"; grep -E "^\||Copy bandwidth" $OUT/$m/peers.md 2>/dev/null | head -10; done
