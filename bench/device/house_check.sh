#!/usr/bin/env bash
# One device call for a restructuring (issue 17): builds this tree and a "before" tree carried in
# .dev/before (git archive of the commit before it), tunes the yardstick shapes cold with each
# build (the winners), then times the after-winner through both builds' libraries in one process
# (bench/ab_libs.py: one rule, before and after alternating), and runs this tree's GPU suite with
# the time left (GPU_SUITE=0: not). Writes logs under $OUT; ends with a table.
#   carry: .deps .dev      usage: [ROUNDS=3] [GPU_SUITE=1] bash bench/device/house_check.sh
set -uo pipefail
source bench/device/build_before_after.sh
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
# The before package registers torch.ops.attn_tune.forward at import: its copy gets another op name.
rm -rf /tmp/before_py && cp -r .dev/before/python /tmp/before_py &&
  sed -i 's/"attn_tune::/"attn_tune_before::/' /tmp/before_py/attn_tune/__init__.py
winners=$OUT/winners.txt; : > $winners
top() { python3 -c "import csv; r=[x for x in csv.DictReader(l for l in open('$1') if not l.startswith('#')) if x['rank']=='1']; print(r[0]['config'] if r else 'none')"; }
shapes=()
for spec in "4,32,4096,128|" "16,16,1024,64|--causal" "2,16,4096,256|"; do
  shp=${spec%%|*} flag=${spec#*|}; tag=$(echo "$shp$flag" | tr ',' 'x' | tr -d '-')
  for side in before after; do  # a whole cold tune each: the winner
    bin=$before; [ $side = after ] && bin=$after
    timeout 120 $bin --shape $shp $flag --no-db --no-cache --out $OUT/tune_${side}_$tag.csv --force -q > /dev/null 2> $OUT/tune_${side}_$tag.err
    echo "$tag $side tune rc=$? $(el)"
  done
  w=$(top $OUT/tune_after_$tag.csv)
  echo "$tag winners: before $(top $OUT/tune_before_$tag.csv) after $w" >> $winners
  for side in before after; do  # each side's table: the after-winner, tuned by that side's tool
    bin=$before; [ $side = after ] && bin=$after
    $bin --shape $shp $flag --family hopper --configs $w --no-db --no-cache --out $OUT/table_${side}_$tag.csv --force -q > /dev/null 2>&1
    echo "$tag $side table $w rc=$? $(el)"
  done
  shapes+=(--shape "$shp${flag:+,causal}")
done
# one process: each shape with its own two tables; ab_libs takes one table per side, so one run per shape
i=0
for tag in 4x32x4096x128 16x16x1024x64causal 2x16x4096x256; do
  timeout 150 python3 bench/ab_libs.py --rounds ${ROUNDS:-3} \
    --a /tmp/before_py:.dev/before/build-gpu/libattn_tune.so:$OUT/table_before_$tag.csv \
    --b python:build-gpu/libattn_tune.so:$OUT/table_after_$tag.csv ${shapes[$((2*i))]} ${shapes[$((2*i+1))]} \
    > $OUT/ab_$tag.md 2> $OUT/ab_$tag.err
  echo "ab $tag rc=$? $(el)"; i=$((i+1))
done
if [ "${GPU_SUITE:-1}" = 1 ]; then
  left=$(( 580 - ($(date +%s) - t0) ))
  (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout $left ctest -L gpu -j${JOBS:-3} --output-on-failure > $OUT/ctest_gpu.log 2>&1
   echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_gpu.log | head -30)
fi
echo "== winners (cold tunes)"; cat $winners
echo "== one process, before (A) and after (B)"; for f in $OUT/ab_*.md; do grep -v '^#' $f | tail -n +3; done
head -2 $OUT/ab_4x32x4096x128.md
