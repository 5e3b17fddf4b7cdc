#!/usr/bin/env bash
# Packed GQA where it is new (NOTES D5, D6): Qwen2-7B's group of 7 (hopper packs it in 8 slots) and
# speculative decode over groups of 8 and 7 (packing searched on the prefill tiles). Each shape is
# tuned once by the tool (hopper, the default space for the problem: packed and unpacked configs
# side by side, one rule, the tool's own median); prints the best packed (_g1) and best unpacked
# config of each, and their ratio; a FAMILY/ prefix tunes that family instead (fa2 beside hopper
# at batch-1 speculative decode, where hopper now searches splits on its prefill tiles). First the
# hopper decode GPU tests (at most TEST_S seconds, default 200), then the rows while time is left.
#   carry: .deps   usage: [SKIP_TESTS=1] [TEST_S=200] bash bench/device/pack_ab.sh
set -uo pipefail
source bench/device/peers_setup.sh
W=$(mktemp -d)  # each row's table and CSV; $OUT/pack_ab.tgz at the end (few files come back)
trap 'tar czf $OUT/pack_ab.tgz -C $W .' EXIT
if [ -z "${SKIP_TESTS:-}" ]; then
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout ${TEST_S:-200} ./attn_gpu_tests \
   --gtest_filter='*hopper_decode*:*hopper_kv_cache*:*hopper_prefill_tiles*' > $OUT/gtest_hopper_decode.log 2>&1; echo "gtest rc=$? $(el)")
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure" $OUT/gtest_hopper_decode.log | head -20
fi
shapes=("qwen2-b16-16k:--shape 16,28,1,128 --kv-heads 4 --kv-len 16384"
        "qwen2-spec16-b64-4k:--shape 64,28,16,128 --kv-heads 4 --kv-len 4096 --causal"
        "llama70b-spec16-b16-8k:--shape 16,64,16,128 --kv-heads 8 --kv-len 8192 --causal"
        "llama8b-b8-8k:--shape 8,32,1,128 --kv-heads 8 --kv-len 8192"
        "llama70b-spec16-b1-32k:--shape 1,64,16,128 --kv-heads 8 --kv-len 32768 --causal"
        "fa2/llama70b-spec16-b1-32k:--shape 1,64,16,128 --kv-heads 8 --kv-len 32768 --causal")
for s in "${shapes[@]}"; do
  [ $(left) -lt 60 ] && break
  n=${s%%:*} family=hopper
  [[ $n == */* ]] && family=${n%%/*} n=${n#*/}-${n%%/*}
  timeout 120 build-gpu/attn-tune --no-db --family $family ${s#*:} --top 0 --out $W/$n.csv > $W/$n.log 2>&1
  rc=$?
  packed=$(awk '$1 ~ /^[0-9]+$/ && $3 ~ /_g1/ {print $3, $4; exit}' $W/$n.log)
  plain=$(awk '$1 ~ /^[0-9]+$/ && $3 !~ /_g1/ {print $3, $4; exit}' $W/$n.log)
  ratio=$(echo "$packed $plain" | awk 'NF == 4 && $2 > 0 {printf "%.2f", $4 / $2}')
  echo "$n rc=$rc packed: ${packed:--} unpacked: ${plain:--} unpacked/packed: ${ratio:--} $(el)"
done
