#!/usr/bin/env bash
# Packed GQA where it is new (NOTES D5, D6): Qwen2-7B's group of 7 (hopper packs it in 8 slots) and
# speculative decode over groups of 8 and 7 (packing searched on the prefill tiles). Each shape is
# tuned once by the tool (hopper, the default space for the problem: packed and unpacked configs
# side by side, one rule, the tool's own median); prints the best packed (_g1) and best unpacked
# config of each, and their ratio; a FAMILY/ prefix tunes that family instead (fa2 beside hopper
# at batch-1 speculative decode, where hopper now searches splits on its prefill tiles). First the
# hopper decode GPU tests (at most TEST_S seconds each of two runs), then the rows while time is left
# (each at most ROW_S seconds). Between them the A/B of NOTES D8 (the combine kernel's dependent
# launch) and the library's graph tests.
#   carry: .deps   usage: [SKIP_TESTS=1] [SKIP_PDL=1] [TEST_S=200] [ROW_S=150] bash bench/device/pack_ab.sh
set -uo pipefail
source bench/device/peers_setup.sh
W=$(mktemp -d)  # each row's table and CSV, packed into $OUT/pack_ab.tgz after each (few files come back)
if [ -z "${SKIP_TESTS:-}" ]; then
  for f in '*hopper_prefill_tiles*' '*hopper_decode*:*hopper_kv_cache*'; do  # the newest test first
    (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout ${TEST_S:-200} ./attn_gpu_tests --gtest_filter="$f" \
       >> $OUT/gtest_hopper_decode.log 2>&1; echo "gtest $f rc=$? $(el)")
  done
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure" $OUT/gtest_hopper_decode.log | head -20
fi
# NOTES D8: split configs with the combine kernel as a programmatic dependent launch and without
# (ATTN_TUNE_NO_PDL=1), alternating twice, the tool's own median (ms).
pdl() {  # NAME attn-tune options...
  local name=$1 on="" off=""; shift
  for r in 1 2; do
    on+=" $(timeout 60 build-gpu/attn-tune --no-db "$@" 2>&1 | awk '$1 == 1 && ($2 == "hopper" || $2 == "fa2") {print $4; exit}')"
    off+=" $(ATTN_TUNE_NO_PDL=1 timeout 60 build-gpu/attn-tune --no-db "$@" 2>&1 | awk '$1 == 1 && ($2 == "hopper" || $2 == "fa2") {print $4; exit}')"
  done
  echo "pdl $name on:$on off:$off $(el)"
}
if [ -z "${SKIP_PDL:-}" ]; then
  (cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 60 ./attn_library_gpu_tests --gtest_filter='LibraryGraph.*' 2>&1 |
     grep -E "^\[  (PASSED|FAILED) |Failure" | head -8)
  pdl hopper-1x32k-p16 --family hopper --shape 1,32,1,128 --kv-heads 8 --kv-len 32768 --configs m64_n64_w8_s2_k1_p16_g1
  pdl hopper-8x8k-p4 --family hopper --shape 8,32,1,128 --kv-heads 8 --kv-len 8192 --configs m64_n128_w8_s2_k1_p4_g1
  pdl fa2-1x32k-p32 --family fa2 --shape 1,32,1,128 --kv-heads 8 --kv-len 32768 --configs m64_n64_w4_s2_p32_g1
fi
shapes=("llama70b-spec16-b1-32k:--shape 1,64,16,128 --kv-heads 8 --kv-len 32768 --causal"
        "llama70b-spec16-b16-8k:--shape 16,64,16,128 --kv-heads 8 --kv-len 8192 --causal"
        "qwen2-b16-16k:--shape 16,28,1,128 --kv-heads 4 --kv-len 16384"
        "qwen2-spec16-b64-4k:--shape 64,28,16,128 --kv-heads 4 --kv-len 4096 --causal"
        "fa2/llama70b-spec16-b1-32k:--shape 1,64,16,128 --kv-heads 8 --kv-len 32768 --causal"
        "llama8b-b8-8k:--shape 8,32,1,128 --kv-heads 8 --kv-len 8192")
for s in "${shapes[@]}"; do
  [ $(left) -lt 60 ] && break
  n=${s%%:*} family=hopper
  [[ $n == */* ]] && family=${n%%/*} n=${n#*/}-${n%%/*}
  limit=$(( $(left) - 15 )); [ $limit -gt ${ROW_S:-150} ] && limit=${ROW_S:-150}
  timeout -k 5 $limit build-gpu/attn-tune --no-db --family $family ${s#*:} --top 0 --out $W/$n.csv > $W/$n.log 2>&1
  rc=$?
  row='$1 ~ /^[0-9]+$/ && ($2 == "hopper" || $2 == "fa2")'  # the ranked table's rows
  packed=$(awk "$row"' && $3 ~ /_g1/ {print $3, $4; exit}' $W/$n.log)
  plain=$(awk "$row"' && $3 !~ /_g1/ {print $3, $4; exit}' $W/$n.log)
  unsplit=$(awk "$row"' && $3 !~ /_p[0-9]/ {print $3, $4; exit}' $W/$n.log)
  ratio=$(echo "$packed $plain" | awk 'NF == 4 && $2 > 0 {printf "%.2f", $4 / $2}')
  tar czf $OUT/pack_ab.tgz -C $W .
  echo "$n rc=$rc packed: ${packed:--} unpacked: ${plain:--} unpacked/packed: ${ratio:--} unsplit: ${unsplit:--} $(el)"
done
