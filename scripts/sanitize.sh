#!/usr/bin/env bash
# CI without a GPU, part 2: the CPU tests built with AddressSanitizer + UndefinedBehaviorSanitizer
# (clang), then each fuzz target (libFuzzer) for a bounded time from its committed corpus
# (fuzz/corpus/<target>/). Needs clang (scripts/setup.sh --with-clang installs it). FUZZ_SECONDS (default 10)
# bounds each target; a crash leaves its input in build-asan/fuzz-artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ASAN_BUILD:-build-asan}
seconds=${FUZZ_SECONDS:-10}
# -O1 and line tables only: the quickest build that still gives sanitizer reports with file:line.
flags="-O1 -gline-tables-only -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_CXX_FLAGS="$flags" -DATTN_TUNE_FUZZ=ON -DCUDA_ROOT="${CUDA_ROOT:-/usr/local/cuda}" >/dev/null
targets=(fuzz_sweep_file fuzz_results_csv fuzz_shape fuzz_space fuzz_configs)
ninja -C "$build" attn_cpu_tests "${targets[@]}"
# hiprtc's threads and ASan's alternate signal stack do not mix; leaks in the vendors' compilers are
# not ours. The NVRTC/hiprtc compile suites are left to the plain build (they take minutes there).
export ASAN_OPTIONS=use_sigaltstack=0:detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0  # a failing test does not keep the fuzzers from running; the script fails at the end
"$build/attn_cpu_tests" --gtest_brief=1 \
  --gtest_filter='-*compile_default_space*:*mfma_default_space*:*compile_variants*:*compiles*' || failed=1
mkdir -p "$build/fuzz-artifacts"
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  work=$(mktemp -d)  # new inputs go here, the committed corpus stays as it is
  echo "fuzzing $name for ${seconds}s"
  "$build/$t" -max_total_time="$seconds" -print_final_stats=0 -artifact_prefix="$build/fuzz-artifacts/$name-" \
    "$work" "fuzz/corpus/$name" > "$build/fuzz-$name.log" 2>&1 || { failed=1; echo "fuzz_$name FAILED:"; }
  grep -v '^warning: ' "$build/fuzz-$name.log" | tail -n 3
  rm -rf "$work"
done
if [ "$failed" -ne 0 ]; then echo "sanitizers and fuzzers: FAILED (see above)"; exit 1; fi
echo "sanitizers and fuzzers: ok"
