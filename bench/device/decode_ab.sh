#!/usr/bin/env bash
# One device call for the decode change (issue 18): builds this tree and a "before" tree carried in
# .dev/before (git archive of the commit before it), times prefill configs of fa2 (whose kernel
# changed) and hopper (whose parameters grew) with both builds alternating (before, after, before,
# after: the tool's own median), then runs this tree's whole GPU suite. Logs under $OUT.
#   carry: .deps .dev      usage: bash bench/device/decode_ab.sh
set -uo pipefail
source bench/device/build_before_after.sh
table=$OUT/ab.txt; : > $table
for spec in "4,32,4096,128||fa2|m128_n64_w4_s2" "16,16,1024,64|--causal|fa2|m64_n64_w4_s2" "2,32,1024,128|--kv-heads 8|fa2|m128_n64_w4_s3" \
            "4,32,4096,128||hopper|m192_n80_w16_s2_k7" "16,16,1024,64|--causal|hopper|m128_n128_w12_s2_k6"; do
  IFS='|' read -r shp flag fam cfg <<< "$spec"; tag=$(echo "$shp$flag$fam" | tr ', ' 'x_' | tr -d '-')
  for i in 1 2; do for side in before after; do
    bin=$before; [ $side = after ] && bin=$after
    $bin --shape $shp $flag --family $fam --configs $cfg --no-db --min-reps 100 --out $OUT/ab_${side}_${i}_$tag.csv --force -q > /dev/null 2>&1
    ms=$(python3 -c "import csv; r=[x for x in csv.DictReader(l for l in open('$OUT/ab_${side}_${i}_$tag.csv') if not l.startswith('#'))]; print(r[0]['median_ms'], r[0]['status'], r[0]['registers'])" 2>&1 | tail -1)
    echo "$shp $flag $fam $cfg $side#$i $ms" >> $table
  done; done
done
echo "a/b done $(el)"; cat $table
left=$(( 580 - ($(date +%s) - t0) ))
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout $left ctest -L gpu -j1 --output-on-failure > $OUT/ctest_gpu.log 2>&1
 echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_gpu.log | head -30)
