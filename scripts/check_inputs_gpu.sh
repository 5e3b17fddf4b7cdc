#!/usr/bin/env bash
# On a GPU machine: issue 11's verification on real data (items 14, 15) in one short table.
#   bash scripts/check_inputs_gpu.sh [BUILD_DIR] [FAMILIES]     (default: build, fa2,wgmma,hopper)
# For each shape and --inputs kind, a tuning of every family's default space: how many variants
# came out ok and wrong, the worst error of an ok one, the naive and the rounding errors of the
# reference, the allowed error, which bound decided, and how far the worst ok error is below it.
# Then the GPU tests of items 14 and 15 (ATTN_TUNE_REQUIRE_GPU=1: a skip is a failure).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} families=${2:-fa2,wgmma,hopper}
tool=$build/attn-tune
[ -x "$tool" ] || { echo "no $tool: build first (cmake -S . -B $build -G Ninja && cmake --build $build)" >&2; exit 2; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
shapes=("2,8,777,128 --dtype fp16 --causal" "1,8,2048,64" "2,16,1024,128 --causal" "1,4,3000,256 --dtype fp16")
printf '%-34s %-6s %4s %5s %9s %9s %9s %9s %-8s %6s\n' shape inputs ok wrong worst_ok naive_err round_err allowed bound margin
status=0
for shape in "${shapes[@]}"; do
  for kind in normal wide sink; do
    # shellcheck disable=SC2086  # the shape's extra options split on purpose
    "$tool" --shape $shape --inputs "$kind" --family "$families" --seed 7 --no-db --out "$tmp/r.csv" --force \
      >"$tmp/out.txt" 2>"$tmp/err.txt"
    rc=$?
    python3 - "$tmp/r.csv" "$tmp/out.txt" "$shape" "$kind" "$rc" <<'PY' || status=1
import csv, re, sys
path, out, shape, kind, rc = sys.argv[1:]
rows = [r for r in csv.DictReader(l for l in open(path) if not l.startswith("#end"))] if rc in ("0", "1") else []
ok = [r for r in rows if r["status"] == "ok"]
wrong = [r for r in rows if r["status"] == "wrong"]
text = open(out).read()
m = re.search(r"naive error ([0-9.e+-]+).*rounding error ([0-9.e+-]+)", text)
naive, rounding = (float(m.group(1)), float(m.group(2))) if m else (float("nan"),) * 2
worst = max((float(r["max_error"]) for r in ok), default=float("nan"))
allowed = float(ok[0]["allowed_error"]) if ok else float("nan")
bound = ok[0]["bound"] if ok else "-"
print(f"{shape:34s} {kind:6s} {len(ok):4d} {len(wrong):5d} {worst:9.2e} {naive:9.2e} {rounding:9.2e} {allowed:9.2e} "
      f"{bound:8s} {allowed / worst if ok and worst > 0 else float('nan'):6.1f}" + ("" if rc == "0" else f"  exit {rc}"))
for r in wrong[:3]:
    print(f"    wrong: {r['family']} {r['config']}: {r['message'][:160]}")
sys.exit(0 if rc == "0" and not wrong else 1)
PY
  done
done
echo
echo "GPU tests of issue 11 items 14-15 (reference vs float64 and device fill per kind, correctness per kind,"
echo "planted defects incl. the skipped rescale on wide inputs, the memory formula against PyTorch):"
(cd "$build" && ATTN_TUNE_REQUIRE_GPU=1 ctest -L gpu \
   -R 'reference_vs_cpu|inputs_on_device|fa2_correctness|planted_defects|gpu_memory_formula_pytorch' \
   --output-on-failure >"$tmp/ctest.txt" 2>&1) || status=1
grep -E "tests passed|tests failed|\(Failed\)|Skipped|materialized|PyTorch" "$tmp/ctest.txt" | head -40
exit $status
