#!/usr/bin/env bash
# Nsight Compute of our backward's kernels beside SDPA cuDNN's backward (issue 22's tensor-pipe
# utilization), one shape, the configs given.
#   usage: SHAPE=4,32,4096,128c CONFIGS=kv_m32_n64_w4_s2-q_m64_n64_w4_s2 bash bench/device/backward_profile.sh
set -uo pipefail
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
metrics=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed
# EXTRA_METRICS: more, comma-separated (e.g. the atomic dQ's L2 reductions: lts__t_sectors_op_red.sum).
[ -n "${EXTRA_METRICS:-}" ] && metrics=$metrics,$EXTRA_METRICS
timeout 400 ncu --clock-control none --metrics $metrics --kernel-name regex:'attn_bwd|bprop|dot_do|convert|bwd' \
  python3 bench/backward_peers.py --tool build-gpu/attn-backward-cubins --profile --shapes "${SHAPE:-4,32,4096,128c}" \
  --configs "${CONFIGS:-}" --out $OUT/prof > $OUT/ncu.log 2>&1
echo "ncu rc=$? $(el)"
python3 - "$OUT/ncu.log" <<'PY'
import re, sys
kernel = None
for line in open(sys.argv[1]):
    m = re.match(r"\s+(\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
    if m:
        kernel = m.group(1)[:60]; print("==", kernel); continue
    m = re.match(r"\s+(\S+)\s+(\S+)\s+([\d.,]+)$", line)
    if m and kernel:
        print(f"   {m.group(1)[:70]:70s} {m.group(3)} {m.group(2)}")
PY
