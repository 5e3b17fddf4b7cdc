#!/usr/bin/env bash
# Device call 11 (merged main): issue 9's benchmark table (default families and spaces, SDPA and
# FlexAttention max-autotune in the same call), fp16 beside bf16 on the headline, then issue 10's
# tuning bar (cold tune against Triton's cold autotune; the table is printed before its sweep).
set -uo pipefail
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/c11
PEERS_ARGS="--with-flex" ATTN_TUNE_ARGS="--min-time-ms 40 --no-db" timeout 330 bash scripts/yardstick.sh build-gpu .peers/peers.py /tmp/c11/ys > $OUT/yardstick.md 2>&1
echo "yardstick rc=$? $(el)"; grep "^|" $OUT/yardstick.md; cat /tmp/c11/ys/walltimes.txt | tr '\n' ' '; echo
for t in bf16 fp16; do timeout 40 build-gpu/attn-tune --shape 4,32,4096,128 --dtype $t --min-time-ms 40 --no-db --out /tmp/c11/dt_$t.csv > /tmp/c11/dt_$t.log 2>&1; echo "$t rc=$? $(grep '^best' /tmp/c11/dt_$t.log | cut -c1-110)"; done
echo "dtype done $(el)"
timeout 200 bash scripts/tuning_bar.sh /tmp/c11/tb > $OUT/tuning_bar.txt 2>&1; echo "tuning_bar rc=$? $(el)"; cat /tmp/c11/tb/table.txt 2>/dev/null | tail -12
tar czf $OUT/c11.tgz --exclude='cache' -C /tmp c11; echo "total $(el)"
