#!/usr/bin/env bash
# One device call for issue 23's packed variable-length batches beside the peers: build this tree;
# then bench/peers.py (ours through attn_tune.flash_attn_varlen_func beside FlashAttention's varlen
# functions when importable and FlexAttention max-autotune with a document mask; SDPA has no packed
# entry: one rule, one process) on the varlen bar's batch (32 sequences of lengths drawn in
# [128, 8192] by peers.py's random.Random(0), given to the tool explicit, so not varlen.sh's draw;
# H 16, D 128, bf16, causal and not; tuned with the default families, hopper on the H200, or
# TOOL_ARGS: e.g. "--family fa2 --space ...") and on its dense companion 4,16,8192,8192,128 (causal and not, the default families:
# hopper on the H200), into $OUT; ends with the --summary table, whose "of dense" lines give each
# packed batch's TFLOPS (its sequences' own pairs) over ours on the dense shape.
#   carry: .deps
#   usage: [ATTN_TUNE_COMMIT=HASH] [TOOL_ARGS="..."] [VARLEN_SHARE=60] [DENSE=0] bash bench/device/varlen_peers.sh [peers.py options]
#   e.g.   ATTN_TUNE_COMMIT=6fb819e bash bench/device/varlen_peers.sh --no-flex
# The device machine gets no .git: ATTN_TUNE_COMMIT names the commit in the results. TOOL_ARGS:
# attn-tune's options for the packed shapes. VARLEN_SHARE: the percent of the time left after the
# build that the packed shapes may take; DENSE=0 leaves the dense companion out. $OUT gets build.log, peers.log, varlen/peers.{csv,md}, dense/peers.{csv,md}: 6 files.
# A run cut by its time limit still writes the shapes it measured.
set -uo pipefail
source bench/device/peers_setup.sh
packed=32,16,8192,8192,128
tool=(); [ -n "${TOOL_ARGS:-}" ] && tool=(--tool-args="$TOOL_ARGS")
run varlen $(( $(left) * ${VARLEN_SHARE:-60} / 100 )) "${tool[@]}" \
  --shapes "$packed,seqlens:uniform:128:8192;${packed}c,seqlens:uniform:128:8192" "$@"
[ "${DENSE:-1}" = 0 ] || run dense $(( $(left) - 10 )) --shapes "4,16,8192,8192,128;4,16,8192,8192,128c" "$@"
grep -E "Traceback|Error|MISMATCH" $OUT/peers.log | grep -v UserWarning | head -8
python3 bench/peers.py --summary $OUT/varlen $( [ "${DENSE:-1}" = 0 ] || echo $OUT/dense)
