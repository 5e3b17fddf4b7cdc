#!/usr/bin/env bash
# The CI performance gate, for a self-hosted GPU runner: build, then re-run every shape of the
# committed baseline with its recorded best config and compare.
#   scripts/ci-perf.sh [BASELINE.csv] [TOLERANCE]        (defaults: results/h200/ci-smoke.csv 0.10)
# Exit 0: every shape within tolerance; 1: a confirmed regression or a wrong result; 5: the
# baseline is from another GPU (measure one on this runner: attn-tune sweep sweeps/ci-smoke.csv).
# Writes ci-out/perf.csv and ci-out/perf.md (appended to GitHub's job summary when there is one).
set -uo pipefail
cd "$(dirname "$0")/.."
baseline=${1:-results/h200/ci-smoke.csv}
tolerance=${2:-0.10}
bash scripts/setup.sh || exit 1
mkdir -p ci-out
./build/attn-tune check --baseline "$baseline" --tolerance "$tolerance" \
  --csv ci-out/perf.csv --markdown ci-out/perf.md
rc=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f ci-out/perf.md ]; then cat ci-out/perf.md >> "$GITHUB_STEP_SUMMARY"; fi
exit $rc
