#!/usr/bin/env bash
# One device call for split-KV's merge in the last split (issue 18 item 2: "a second kernel, or the
# last block of a row through a counter: measure both"): builds this tree (the merge in the kernel)
# and the "before" tree carried in .dev/before (git archive of the commit with the combine kernel),
# times fixed decode configs with both builds alternating (before, after, before, after: the
# tool's own median, 100 reps or more), runs this tree's decode, value-dim, head-dim and graph GPU
# tests, then bench/peers.py (ours through Python beside SDPA, one rule, one process) on this tree.
#   carry: .deps .dev      usage: [PEERS=0] bash bench/device/fused_merge_ab.sh
set -uo pipefail
source bench/device/build_before_after.sh
table=$OUT/ab.txt; : > $table
for spec in "8,32,1,128|--kv-heads 8 --kv-len 8192|m32_n64_w2_s2_p4_g1" "8,32,1,128|--kv-heads 8 --kv-len 8192|m32_n64_w2_s2_p8_g1" \
            "1,32,1,128|--kv-heads 8 --kv-len 32768|m32_n64_w2_s2_p32_g1" "16,64,1,128|--kv-heads 8 --kv-len 8192|m32_n64_w2_s2_p2_g1" \
            "64,32,16,128|--kv-heads 8 --kv-len 4096 --causal|m64_n64_w4_s2_p2_g1" "32,16,1,256|--kv-heads 8 --kv-len 4096|m64_n64_w4_s2_g1"; do
  IFS='|' read -r shp flag cfg <<< "$spec"; tag=$(echo "$shp$flag$cfg" | tr ', ' 'x_' | tr -d '-')
  for i in 1 2; do for side in before after; do
    bin=$before; [ $side = after ] && bin=$after
    $bin --shape $shp $flag --family fa2 --configs $cfg --no-db --min-reps 100 --out $OUT/ab.csv --force -q > /dev/null 2>$OUT/ab.err
    ms=$(python3 -c "import csv; r=[x for x in csv.DictReader(l for l in open('$OUT/ab.csv') if not l.startswith('#'))]; print(r[0]['median_ms'], r[0]['status'], r[0]['registers'], r[0]['spill_bytes'])" 2>&1 | tail -1)
    echo "$shp $flag $cfg $side#$i $ms" >> $table
  done; done
done
rm -f $OUT/ab.csv
echo "a/b done $(el)"; cat $table
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 200 ctest -L gpu -R 'decode|value_dim|head_dim|LibraryGraph|Library.*Decode|kv' -j1 \
   --output-on-failure > $OUT/ctest_gpu.log 2>&1
 echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_gpu.log | head -30)
export LD_LIBRARY_PATH=$PWD/build-gpu:$LD_LIBRARY_PATH PYTHONPATH=$PWD/python:${PYTHONPATH:-} ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so
left=$(( 585 - ($(date +%s) - t0) ))
[ "${PEERS:-1}" = 1 ] && [ $left -gt 40 ] && timeout $left python3 bench/decode.py --tool build-gpu/attn-tune --out $OUT/decode --no-flex \
  --shapes "8,32/8,1,8192,128;1,32/8,1,32768,128;32,64/8,1,4096,128;16,64/8,1,8192,128;32,16/8,1,4096,256" 2>&1 | tail -12
echo "done $(el)"
