#!/usr/bin/env bash
# One device call for issue 23's dv != d, item 7 (the dense kernel's speed does not move): builds
# this tree and the "before" tree carried in .dev/before (git archive of the commit before dv),
# tunes the dense yardstick shapes with this tree, and times each winner with both builds,
# alternating (before, after, before, after), so the same kernel's median is compared within one
# call; then bench/peers.py on the MLA row without FlexAttention (the C API path with dv).
#   carry: .dev      usage: bash bench/device/value_dim_ab.sh
set -uo pipefail
source bench/device/build_before_after.sh
export LD_LIBRARY_PATH=$PWD/build-gpu:$LD_LIBRARY_PATH
table=$OUT/ab.txt; : > $table
for spec in "hopper|4,32,4096,128|--causal" "hopper|2,16,4096,256|" "fa2|4,32,4096,128|" "fa2|16,16,1024,64|--causal"; do
  IFS='|' read -r fam shp flag <<< "$spec"; tag=$fam-$(echo "$shp$flag" | tr ',' 'x' | tr -d '-')
  timeout 150 $after --shape $shp $flag --family $fam --no-db --out $OUT/tune_$tag.csv --force -q > /dev/null 2> $OUT/tune_$tag.err
  w=$(python3 -c "import csv; r=[x for x in csv.DictReader(l for l in open('$OUT/tune_$tag.csv') if not l.startswith('#')) if x['rank']=='1']; print(r[0]['config'])")
  for i in 1 2; do for side in before after; do
    bin=$before; [ $side = after ] && bin=$after
    $bin --shape $shp $flag --family $fam --configs $w --no-db --min-reps 100 --out $OUT/w_${side}_${i}_$tag.csv --force -q > /dev/null 2>&1
    ms=$(python3 -c "import csv; r=[x for x in csv.DictReader(l for l in open('$OUT/w_${side}_${i}_$tag.csv') if not l.startswith('#'))]; print(r[0]['median_ms'], r[0]['status'], r[0]['registers'])")
    echo "$tag $w $side#$i $ms" >> $table
  done; done
  echo "$tag done $(el)"
done
export PYTHONPATH=$PWD/python ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so PYTHONUNBUFFERED=1
timeout 150 python3 bench/peers.py --tool build-gpu/attn-tune --out $OUT/mla --sweep sweeps/llm-value-dim.csv --rows 0 \
  --no-flex > $OUT/peers.log 2>&1; echo "peers rc=$? $(el)"
echo "== dense winners, before and after (median ms, status, registers)"; cat $table
python3 bench/peers.py --summary $OUT/mla
