#!/usr/bin/env bash
# Device call 13: the tensor-pipe utilization under Nsight Compute (the metric name this ncu has),
# ours beside cuDNN, on the headline shape and 16,16,1024,64 causal.
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
W=/tmp/c13; mkdir -p $W
M="gpu__time_duration.sum,sm__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
B=build-gpu/attn-tune
for c in "4,32,4096,128  m128_n128_w12_s2_k3 False" "16,16,1024,64 --causal m128_n128_w12_s2_k22 True"; do
  set -- $c; s=$1
  if [ "$2" = --causal ]; then cf=--causal cfg=$3 pc=$4; else cf= cfg=$2 pc=$3; fi
  IFS=, read -r b h n d <<< "$s"
  timeout 60 ncu --clock-control none -k attn_hopper -c 1 --metrics $M $B --shape $s $cf --family hopper --configs $cfg --search exhaustive --no-db --min-reps 2 --max-reps 2 --min-time-ms 0 --out $W/o.csv --force > $W/ours-$s.txt 2>&1
  printf 'import torch, torch.nn.functional as F\nfrom torch.nn.attention import SDPBackend, sdpa_kernel\nq, k, v = (torch.randn(%s, %s, %s, %s, device="cuda", dtype=torch.bfloat16) for _ in range(3))\nwith sdpa_kernel(SDPBackend.CUDNN_ATTENTION):\n    for _ in range(2): F.scaled_dot_product_attention(q, k, v, is_causal=%s)\ntorch.cuda.synchronize()\n' $b $h $n $d $pc > $W/c.py
  timeout 60 ncu --clock-control none -k regex:cudnn -c 1 --metrics $M python3 $W/c.py > $W/cudnn-$s.txt 2>&1
  for f in $W/ours-$s.txt $W/cudnn-$s.txt; do echo "== $(basename $f) $cf"; grep -E "^\s+(gpu__|sm__)|ERROR" $f | sed 's/  */ /g'; done
done
tar czf $OUT/c13.tgz -C /tmp c13; echo "total $(el)"
