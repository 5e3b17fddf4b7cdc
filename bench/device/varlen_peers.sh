#!/usr/bin/env bash
# One device call for issue 23's packed variable-length batches beside the peers: build this tree;
# then bench/peers.py (ours through attn_tune.flash_attn_varlen_func beside FlashAttention's varlen
# functions when importable and FlexAttention max-autotune with a document mask; SDPA has no packed
# entry: one rule, one process) on the varlen bar's batch (32 sequences of lengths drawn in
# [128, 8192] by peers.py's random.Random(0), given to the tool explicit, so not varlen.sh's draw;
# H 16, D 128, bf16, causal and not; tuned over fa2's SPACE, the one family that reads a packed
# batch) and on its dense companion 4,16,8192,8192,128 (causal and not, the default families:
# hopper on the H200), into $OUT; ends with the --summary table, whose "of dense" lines give each
# packed batch's TFLOPS (its sequences' own pairs) over ours on the dense shape.
#   carry: .deps
#   usage: [ATTN_TUNE_COMMIT=HASH] [SPACE="..."] [VARLEN_SHARE=60] bash bench/device/varlen_peers.sh [peers.py options]
#   e.g.   ATTN_TUNE_COMMIT=6fb819e bash bench/device/varlen_peers.sh --no-flex
# The device machine gets no .git: ATTN_TUNE_COMMIT names the commit in the results. SPACE: fa2's
# space for the packed shapes (default "block_m=128,256 block_n=64,128 warps=8 stages=2", as
# varlen.sh's). VARLEN_SHARE: the percent of the time left after the build that the packed shapes
# may take. $OUT gets build.log, peers.log, varlen/peers.{csv,md}, dense/peers.{csv,md}: 6 files.
# A run cut by its time limit still writes the shapes it measured.
set -uo pipefail
source bench/device/peers_setup.sh
space=${SPACE:-"block_m=128,256 block_n=64,128 warps=8 stages=2"}
packed=32,16,8192,8192,128
run varlen $(( $(left) * ${VARLEN_SHARE:-60} / 100 )) --tool-args="--family fa2 --space $space" \
  --shapes "$packed,seqlens:uniform:128:8192;${packed}c,seqlens:uniform:128:8192" "$@"
run dense $(( $(left) - 10 )) --shapes "4,16,8192,8192,128;4,16,8192,8192,128c" "$@"
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
python3 bench/peers.py --summary $OUT/varlen $OUT/dense
