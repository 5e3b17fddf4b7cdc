#!/usr/bin/env bash
# Device call 16: why the NVRTC log of a hopper compile on the device often lacks ptxas's report
# ("Used N registers"), so that the compile cache rejects its own entries. Compile the same
# variants several times in new processes (no attn-tune cache), with and without CUDA_CACHE_DISABLE,
# and look for files any of it wrote.
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ldd build-gpu/attn-tune | grep -iE 'nvrtc|cudart|libcuda' | tee $OUT/ldd.txt
lib=$(ldd build-gpu/attn-tune | awk '/nvrtc/ {print $3; exit}'); ls -la $(dirname $lib)/libnvrtc* | tee -a $OUT/ldd.txt
strings -a $lib | grep -E '^[A-Z_]*(CACHE|PTXAS|NVRTC)[A-Z_]*$' | sort -u | head -40 > $OUT/nvrtc_env_strings.txt
env | grep -iE 'cuda|nv|ptx' > $OUT/env.txt
ls -la ~ ~/.nv ~/.cache 2>&1 > $OUT/home.txt
touch /tmp/marker; sleep 1
run() {  # run TAG VAR=VALUE MODE
  local tag=$1 var=$2 mode=$3
  env "$var" build-gpu/attn-tune $mode --family hopper --shape 16,16,1024,64 --causal --space block_m=128 block_n=128 warps=12 stages=2 --no-cache -v --out /tmp/$tag.csv > $OUT/$tag.log 2>&1
  echo "$tag rc=$? $(grep -c 'Used [0-9]* registers' $OUT/$tag.log) reports; $(grep -m1 '^compiled' $OUT/$tag.log)"
}
run co1 A=1 --compile-only
run co2 A=1 --compile-only
run co3 CUDA_CACHE_DISABLE=1 --compile-only
run gpu1 A=1 --no-db
run gpu2 A=1 --no-db
run gpu3 CUDA_CACHE_DISABLE=1 --no-db
run co4 A=1 --compile-only
find / -xdev -newer /tmp/marker -type f -not -path '/proc/*' -not -path '/sys/*' -not -path '/root/out/*' 2>/dev/null | head -60 > $OUT/newfiles.txt
echo "new files: $(wc -l < $OUT/newfiles.txt)"; head -20 $OUT/newfiles.txt
for t in co1 co2 gpu1 gpu2; do echo "== $t"; grep -m3 -E 'ptxas|registers' $OUT/$t.log; done
echo "total $(el)"
