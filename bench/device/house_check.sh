#!/usr/bin/env bash
# One device call for a restructuring (issue 17): builds this tree and a "before" tree carried in
# .dev/before (git archive of the commit before it), runs this tree's GPU suite, and times the
# yardstick shapes' winners with both builds, alternating (before, after, before, after), so the
# same kernel's median is compared within one call. Writes logs under $OUT; ends with a table.
#   carry: .deps .dev      usage: bash bench/device/house_check.sh
set -uo pipefail
source bench/device/build_before_after.sh
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
table=$OUT/yardstick.txt; : > $table
for spec in "4,32,4096,128|" "16,16,1024,64|--causal" "2,16,4096,256|"; do
  shp=${spec%%|*} flag=${spec#*|}; tag=$(echo "$shp$flag" | tr ',' 'x' | tr -d '-')
  for side in before after; do  # a whole tune each: the winner
    bin=$before; [ $side = after ] && bin=$after
    timeout 120 $bin --shape $shp $flag --no-db --no-cache --out $OUT/tune_${side}_$tag.csv --force -q > /dev/null 2> $OUT/tune_${side}_$tag.err
    echo "$tag $side tune rc=$? $(el)"
  done
  w=$(python3 -c "import csv,sys; r=[x for x in csv.DictReader(l for l in open('$OUT/tune_after_$tag.csv') if not l.startswith('#')) if x['rank']=='1']; print(r[0]['config'])")
  wb=$(python3 -c "import csv,sys; r=[x for x in csv.DictReader(l for l in open('$OUT/tune_before_$tag.csv') if not l.startswith('#')) if x['rank']=='1']; print(r[0]['config'])")
  for i in 1 2; do for side in before after; do  # the after-winner, alternating
    bin=$before; [ $side = after ] && bin=$after
    $bin --shape $shp $flag --family hopper --configs $w --no-db --no-cache --min-reps 100 --out $OUT/w_${side}_${i}_$tag.csv --force -q > /dev/null 2>&1
    ms=$(python3 -c "import csv; r=[x for x in csv.DictReader(l for l in open('$OUT/w_${side}_${i}_$tag.csv') if not l.startswith('#'))]; print(r[0]['median_ms'], r[0]['status'], r[0]['registers'])")
    echo "$tag $w $side#$i $ms" >> $table
  done; done
  echo "$tag winners: before $wb after $w" >> $table
done
echo "yardstick done $(el)"
left=$(( 570 - ($(date +%s) - t0) ))
if [ $left -gt 120 ]; then
  (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout $left ctest -L gpu -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1
   echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_gpu.log | head -30)
else echo "no time for ctest -L gpu ($left s left)"; fi
echo "== yardstick (median ms, status, registers)"; cat $table
