#!/usr/bin/env bash
# Tunes the benchmark table (SHAPES.md: six shapes, causal and not, bf16) and measures the peers
# (peers.py: PyTorch SDPA backends; PEERS_ARGS="--with-flex" adds FlexAttention) in the same call.
#   bash bench/yardstick.sh BUILD_DIR PEERS_PY OUT_DIR [B,H,N,D ...]
# Writes OUT_DIR/<shape>.csv per tuning run, OUT_DIR/tune.log, OUT_DIR/peers.csv and prints
# a summary table (bench/summarize.py).
set -uo pipefail
build=$1 peers=$2 out=$3
shift 3
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(4,32,4096,128 16,16,1024,64 8,16,2048,128 1,32,16384,128 2,16,4096,256 32,32,512,64)
mkdir -p "$out"
# Peers first: if the call runs out of time, the comparison is what must survive.
# One process per shape: torch.compile (FlexAttention) stops compiling after a few shapes in one
# process and falls back to an unfused, materializing implementation.
: > "$out/peers.csv"
for s in "${shapes[@]}"; do
  PYTHONUNBUFFERED=1 python3 "$peers" --shape "$s" ${PEERS_ARGS:-} --csv "$out/peers-$s.csv" >> "$out/peers.log" 2>&1 ||
    echo "peers.py failed for $s (see peers.log)"
  cat "$out/peers-$s.csv" >> "$out/peers.csv" 2>/dev/null && rm -f "$out/peers-$s.csv"
done
for s in "${shapes[@]}"; do
  for causal in "" "--causal"; do
    tag="${s//,/x}${causal:+-causal}"
    start=$(date +%s.%N)
    "$build/attn-tune" --shape "$s" $causal --out "$out/$tag.csv" --force --top 5 ${ATTN_TUNE_ARGS:-} >>"$out/tune.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "$tag rc=$rc wall_s=$(awk "BEGIN{printf \"%.1f\", $end - $start}")" | tee -a "$out/walltimes.txt"
  done
done
python3 "$(dirname "$0")/summarize.py" "$out"
