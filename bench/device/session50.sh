#!/usr/bin/env bash
# The next device call, ready (session 50): build; bench/device/ab/session50.txt's configs through
# kernels_ab.sh (ONE_TREE: this tree's kernels only, so compare lines: D=256 softcap with bit 64, window
# rows with the persistent grid, two Q tiles and trimming); the window/softcap hopper GPU suite
# (D=256 softcap now keeps 128x64 with schedules 67 and 71) and the planted defects; then where the
# softmax-bound kernels' warps wait (hopper_sass_profile.sh: $OUT/prof/stalls.txt, sass.tgz).
#   carry: .deps   usage: bash bench/device/session50.sh     (~8 minutes)
set -uo pipefail
ATTN_BUILD_TARGETS="attn_gpu_tests attn-tune attn_tune" ONE_TREE=1 \
  CASES=bench/device/ab/session50.txt ROUNDS=2 BUDGET_S=${BUDGET_S:-420} TESTS_LAST=1 AB_RESERVE_S=150 TEST_S=120 \
  TESTS="gpu_test.planted_defects_come_out_wrong:*window_softcap_correctness.every_hopper_variant*" \
  bash bench/device/kernels_ab.sh 2>&1 | tee $OUT/run.log | tail -30
mkdir -p $OUT/prof
OUT=$OUT/prof timeout 170 bash bench/device/hopper_sass_profile.sh \
  "--shape 4,32,4096,128 --causal|m128_n128_w12_s2_k3" \
  "--shape 4,32,4096,128 --causal --softcap 50|m128_n128_w12_s2_k67" \
  "--shape 2,16,4096,256 --causal --window 1024,0|m128_n64_w12_s2_k131" 2>&1 | tail -40
