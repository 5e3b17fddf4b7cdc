# Sourced by the device scripts that run bench/peers.py (peers.sh, variants.sh): the clock (el:
# seconds since the start, left: of BUDGET_S, default 585), this tree built into build-gpu (the
# script ends when the build fails), the library and package paths, and run NAME SECONDS
# [peers.py options], one bench/peers.py run into $OUT/NAME, logged to $OUT/peers.log.
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
left() { echo $(( ${BUDGET_S:-585} - ($(date +%s) - t0) )); }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$PWD/build-gpu:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/python:${PYTHONPATH:-} ATTN_TUNE_LIBRARY=$PWD/build-gpu/libattn_tune.so PYTHONUNBUFFERED=1
run() {  # NAME SECONDS peers.py options...
  local name=$1 limit=$2; shift 2
  echo "== $name: bench/peers.py $* (at most $limit s) $(el)" | tee -a $OUT/peers.log
  timeout -k 20 $limit python3 bench/peers.py --tool build-gpu/attn-tune --out $OUT/$name "$@" >> $OUT/peers.log 2>&1
  echo "$name rc=$? $(el)"
}
