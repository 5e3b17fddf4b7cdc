#!/usr/bin/env bash
# Device call 9: Nsight Compute of ours beside cuDNN: tensor-pipe utilization, instructions, issue
# slots, MUFU (XU) pipe and warp stalls, on the headline shape and the two D=64 causal shapes.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
W=/tmp/c9; mkdir -p $W
ncu --query-metrics 2>/dev/null | grep -E "^(sm|smsp)__(pipe|inst_executed_pipe)_(tensor|xu|fma|alu)" | awk '{print $1}' > $W/metric_names.txt
M="gpu__time_duration.sum,sm__inst_executed.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.sum,sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed"
B=build-gpu/attn-tune
M2="gpu__time_duration.sum,sm__inst_executed.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed"
run_ncu() {  # out args...: with M, else M2 when a metric is unknown
  local out=$1; shift
  timeout 90 ncu --clock-control none --metrics $M --section WarpStateStats "$@" > $out 2>&1
  if grep -q "==ERROR==" $out; then mv $out $out.err; timeout 90 ncu --clock-control none --metrics $M2 --section WarpStateStats "$@" > $out 2>&1; fi
}
prof() {  # tag shape causal config
  local tag=$1 s=$2 c=$3 cfg=$4
  run_ncu $W/ncu_$tag.txt -k attn_hopper -c 1 $B --shape $s $c --family hopper --configs $cfg --search exhaustive --no-db --min-reps 2 --max-reps 2 --min-time-ms 0 --out $W/$tag.csv --force
  echo "$tag rc=$? $(el)"
  IFS=, read -r b h n d <<< "$s"
  local pc=False; [ -n "$c" ] && pc=True
  cat > $W/cudnn_$tag.py <<PY
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn($b, $h, $n, $d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2): F.scaled_dot_product_attention(q, k, v, is_causal=$pc)
torch.cuda.synchronize()
PY
  run_ncu $W/ncu_cudnn_$tag.txt -k regex:cudnn -c 1 python3 $W/cudnn_$tag.py
  echo "cudnn $tag rc=$? $(el)"
}
prof d128 4,32,4096,128 "" m128_n128_w12_s2_k3
prof d64c1024 16,16,1024,64 --causal m128_n128_w12_s2_k6
prof d64c512 32,32,512,64 --causal m128_n128_w12_s2_k22
for f in $W/ncu_*.txt; do echo "== $(basename $f)"; grep -E "^\s+(gpu__|sm__|smsp__)|Stall|Warp Cycles|Issue" $f | sed 's/  */ /g' | head -24; done
tar czf $OUT/c9.tgz -C /tmp c9; echo "total $(el)"
