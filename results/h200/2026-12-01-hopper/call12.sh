#!/usr/bin/env bash
# Device call 12: the D=64 causal tuning bar again with the default space without schedule 23
# (Triton's cold autotune and a cold attn-tune in the same call, the second run, the exhaustive
# search's winner), and the memory-formula test with cuBLAS's workspace taken before measuring.
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
W=/tmp/c12; mkdir -p $W
ATTN_TUNE_REQUIRE_GPU=1 timeout 40 python3 scripts/check_memory_formula.py; echo "memory formula rc=$? $(el)"
timeout 60 python3 .peers/peers.py --shape 16,16,1024,64 --causal --with-triton --csv $W/peers.csv > $W/peers.log 2>&1; echo "peers rc=$? $(el)"
grep -iE "triton|cudnn" $W/peers.csv | cut -d, -f1-12
for r in 1 2; do
  a=$(date +%s.%N); ATTN_TUNE_DB=$W/db$r.sqlite timeout 60 build-gpu/attn-tune --shape 16,16,1024,64 --causal --cache-dir $W/cache$r --out $W/cold$r.csv > $W/cold$r.log 2>&1; rc=$?; b=$(date +%s.%N)
  echo "cold $r rc=$rc wall $(awk "BEGIN{printf \"%.2f\", $b-$a}") s | $(grep -E '^best|^compiled' $W/cold$r.log | cut -c1-150 | tr '\n' ' ')"
done
a=$(date +%s.%N); ATTN_TUNE_DB=$W/db1.sqlite timeout 20 build-gpu/attn-tune --shape 16,16,1024,64 --causal --cache-dir $W/cache1 --out $W/again.csv > $W/again.log 2>&1; b=$(date +%s.%N)
echo "second run wall $(awk "BEGIN{printf \"%.2f\", $b-$a}") s | $(head -1 $W/again.log | cut -c1-80)"
timeout 60 build-gpu/attn-tune --shape 16,16,1024,64 --causal --cache-dir $W/cache1 --search exhaustive --no-db --out $W/exh.csv > $W/exh.log 2>&1; echo "exhaustive: $(grep '^best' $W/exh.log | cut -c1-100)"
tar czf $OUT/c12.tgz --exclude='cache*' -C /tmp c12; echo "total $(el)"
