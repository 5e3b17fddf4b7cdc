#!/usr/bin/env bash
# Nsight Compute of hopper variants side by side (e.g. dense against softcap, one config): the
# speed of light, the warp stalls, issue slots and the pipes' use (tensor, XU = MUFU's tanh/ex2,
# FMA, ALU) of one launch each. $OUT gets ncu_N.txt per item and a table of the lines that matter.
#   carry: .deps      usage: bash bench/device/hopper_profile.sh "SHAPE_ARGS|CONFIG" ...
#   e.g.   bash bench/device/hopper_profile.sh "--shape 2,16,4096,256 --causal|m128_n64_w12_s2_k3" \
#              "--shape 2,16,4096,256 --causal --softcap 50|m128_n64_w12_s2_k3"
set -uo pipefail
[ -x build-gpu/attn-tune ] || bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ncu --query-metrics 2>/dev/null | grep -E "pipe_(xu|tensor|fma|alu|fmaheavy)" > $OUT/pipe_metrics.txt
metrics=$(grep -oE "^sm__(inst_executed_pipe_(xu|fma|alu|fmaheavy|fmalite)|pipe_tensor_op_gmma_cycles_active|pipe_tensor_cycles_active)\b" $OUT/pipe_metrics.txt \
  | sort -u | sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd,)
i=0
for item in "$@"; do
  args=${item%|*}; config=${item#*|}; i=$((i+1))
  timeout 150 ncu --clock-control none --kernel-name "regex:^attn_hopper$" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    --section InstructionStats ${metrics:+--metrics $metrics} \
    build-gpu/attn-tune $args --family hopper --configs $config --no-db -q --out /tmp/p$i.csv --force \
    > $OUT/ncu_$i.txt 2>&1
  echo "== $i: $args $config (rc $?)"
  grep -E "Duration|Compute \(SM\) Throughput|Registers Per|Executed Ipc A|Issue Slots Busy|Stall|pipe_|Executed Instructions  |No Eligible|Warp Cycles Per Issued|ERR" $OUT/ncu_$i.txt | head -24
done
