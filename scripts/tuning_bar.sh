#!/usr/bin/env bash
# Issue 10's bar, measured in one call on the GPU machine: for 4,32,4096,128 and 16,16,1024,64,
# causal and not (bf16, default space),
#   (a) Triton's cold autotune time (peers.py --with-triton's tune_s),
#   (b) a cold attn-tune (empty --cache-dir, empty ATTN_TUNE_DB): wall time from process start to
#       exit of `attn-tune --shape S [--causal] --out F`,
#   (c) the same command again (new --out): wall time, answered from the database,
#   (d) --search exhaustive --no-db on the warm cache: its winner's median,
#   (e) when (b) and (d) chose different configs, the two side by side in one process (--configs
#       A,B, then B,A): two processes' medians differ by the clock's moves, more than 1% at times,
# then one table (bars: (b)/(a) <= 1/3, (c) < 0.5 s, (b)'s winner at most 1% slower than (d)'s,
# side by side), and a cold
# `sweep sweeps/yardstick.csv` beside the sum of Triton's per-shape autotune times.
#
#   bash scripts/device_build.sh build-gpu
#   export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
#   bash scripts/tuning_bar.sh [--sweep-triton | --rows-only | --sweep-only] [LOG_DIR]
#                                                    # default LOG_DIR /tmp/tuning_bar
#
# Run from the repository root; needs build-gpu/attn-tune and .peers/peers.py (python3 with torch
# and triton). LOG_DIR must be new or empty (nothing in it is overwritten): every command's output
# goes there, the table too (LOG_DIR/table.txt; it is printed before the sweep starts). Each
# command has a time limit (a hang shows as exit 124 in the table's notes). On an H200 (calls 14
# and 17): the four rows take about 3 minutes, the cold sweep under 1 minute and peers.py for the
# sweep's other four shapes about 5 more (--sweep-triton; without it the sweep line compares with
# the four rows' shapes only). The whole exceeds a 10-minute device call; it splits in two:
# --rows-only (the four rows and their table, no sweep) and --sweep-only (the cold sweep, then
# peers.py for every shape of the sweep file, and the sweep line; about 8 minutes).
#
# peers.py runs once per shape, as `--shape S --with-triton` (without --causal it runs both): each
# process starts with an empty Triton cache (peers.py makes one when TRITON_CACHE_DIR is unset), so
# the non-causal row is cold; the causal row runs second in that process and finds Triton's launcher
# already built, so it is slightly warm, which favours Triton, not attn-tune.
set -uo pipefail
sweep_triton=0 rows=1 sweep=1 log=/tmp/tuning_bar
for arg in "$@"; do
  case "$arg" in
    --sweep-triton) sweep_triton=1 ;;
    --rows-only) sweep=0 ;;
    --sweep-only) rows=0 sweep_triton=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "tuning_bar.sh: unknown option '$arg' (expected --sweep-triton, --rows-only, --sweep-only or a log folder)" >&2; exit 2 ;;
    *) log=$arg ;;
  esac
done
if [ "$rows" = 0 ] && [ "$sweep" = 0 ]; then
  echo "tuning_bar.sh: --rows-only and --sweep-only exclude each other (give neither for both parts)" >&2
  exit 2
fi
if [ "$sweep" = 0 ] && [ "$sweep_triton" = 1 ]; then
  echo "tuning_bar.sh: --sweep-triton measures the sweep's shapes, and --rows-only runs no sweep" >&2
  exit 2
fi
bin=build-gpu/attn-tune peers=.peers/peers.py helper=scripts/tuning_bar.py sweep_file=sweeps/yardstick.csv
shapes=("4,32,4096,128" "16,16,1024,64")
[ -x "$bin" ] || { echo "tuning_bar.sh: no $bin: run from the repository root after 'bash scripts/device_build.sh build-gpu'" >&2; exit 2; }
[ -f "$peers" ] || { echo "tuning_bar.sh: no $peers (copy /work/shared/yardstick/peers.py there)" >&2; exit 2; }
if [ -e "$log" ] && [ -n "$(ls -A "$log" 2>/dev/null)" ]; then
  echo "tuning_bar.sh: log folder '$log' exists and is not empty; give a new one (nothing in it is overwritten)" >&2
  exit 2
fi
mkdir -p "$log" || exit 2
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
# Caches that would make the cold runs warm: peers.py makes fresh Triton/Inductor folders only
# when these are unset. The cold runs get an empty CUDA driver compute cache too (CUDA_CACHE_PATH),
# which NVRTC would answer ptxas's work from (attn-tune turns it off unless CUDA_CACHE_DISABLE is
# set; this holds for any build).
unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR ATTN_TUNE_CACHE_DIR ATTN_TUNE_DB

SECONDS=0
say() { printf '[%4d s] %s\n' "$SECONDS" "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

"$bin" --version > "$log/version.txt" 2>&1 || { echo "tuning_bar.sh: $bin --version failed:" >&2; cat "$log/version.txt" >&2; exit 2; }
gpu="(no nvidia-smi)"
command -v nvidia-smi > /dev/null && gpu=$(nvidia-smi -L 2>&1 | head -1)
say "$(cat "$log/version.txt"); $gpu; logs in $log"

# peers.py's files are named BxHxNxD: no commas, which some file transfers refuse.
peers_file() { echo "$log/peers-${1//,/x}"; }
peers_run() {  # peers_run B,H,N,D: both causal rows, into $(peers_file B,H,N,D).csv
  local s=$1 t0 f
  t0=$(now) f=$(peers_file "$1")
  PYTHONUNBUFFERED=1 timeout 240 python3 "$peers" --shape "$s" --with-triton --csv "$f.csv" > "$f.txt" 2>&1 ||
    say "peers.py failed for $s (see $f.txt)"
  say "peers.py $s done in $(since "$t0") s"
}

if [ "$rows" = 1 ]; then
  # (a) first: if the call runs out of time, the comparison is what must survive.
  for s in "${shapes[@]}"; do
    say "peers.py --shape $s --with-triton (both causal and not; Triton autotunes cold)"
    peers_run "$s"
  done

  : > "$log/bar.tsv"
  for s in "${shapes[@]}"; do
    for causal in 0 1; do
      flag=() tag=${s//,/x}
      [ "$causal" = 1 ] && flag=(--causal) tag=$tag-causal
      d=$log/$tag
      mkdir -p "$d"
      say "$tag: cold attn-tune (empty cache and database)"
      t0=$(now)
      ATTN_TUNE_DB=$d/tuned.sqlite CUDA_CACHE_PATH=$d/nvcache timeout 180 "$bin" --shape "$s" "${flag[@]}" \
        --cache-dir "$d/cache" --out "$d/cold.csv" > "$d/cold.txt" 2>&1
      cold_rc=$? cold_s=$(since "$t0")
      say "$tag: cold ${cold_s} s (exit $cold_rc); $(grep -m1 '^compiled ' "$d/cold.txt")"
      t0=$(now)
      ATTN_TUNE_DB=$d/tuned.sqlite timeout 60 "$bin" --shape "$s" "${flag[@]}" --cache-dir "$d/cache" --out "$d/second.csv" > "$d/second.txt" 2>&1
      second_rc=$? second_s=$(since "$t0")
      from_db=0
      grep -q '^from the database' "$d/second.txt" && from_db=1
      say "$tag: second run ${second_s} s (exit $second_rc, from the database: $([ $from_db = 1 ] && echo yes || echo NO))"
      say "$tag: --search exhaustive --no-db, warm cache"
      t0=$(now)
      timeout 180 "$bin" --shape "$s" "${flag[@]}" --cache-dir "$d/cache" --search exhaustive --no-db --out "$d/exhaustive.csv" > "$d/exhaustive.txt" 2>&1
      exhaustive_rc=$?
      say "$tag: exhaustive $(since "$t0") s (exit $exhaustive_rc)"
      # Two processes' medians differ by the clock's moves (the H200 runs at its power cap): when
      # the winners differ, measure them side by side in one process, in both orders.
      side=""
      read -r sf sc _ <<< "$(python3 "$helper" winner "$d/cold.csv" 2> /dev/null)"
      read -r ef ec _ <<< "$(python3 "$helper" winner "$d/exhaustive.csv" 2> /dev/null)"
      if [ "$cold_rc" != 0 ] || [ "$exhaustive_rc" != 0 ]; then
        :  # a failed run's winner is not compared (the table says why)
      elif [ -n "$sc" ] && [ -n "$ec" ] && [ "$sf" != "$ef" ]; then
        say "$tag: the winners are of two families ($sf, $ef): not measured side by side"
      elif [ -n "$sc" ] && [ -n "$ec" ] && [ "$sc" != "$ec" ]; then
        say "$tag: the two winners side by side ($sf $sc, $ec), in both orders"
        side="$d/side-ab.csv;$d/side-ba.csv"
        for pair in "ab $sc,$ec" "ba $ec,$sc"; do
          timeout 120 "$bin" --shape "$s" "${flag[@]}" --family "$sf" --configs "${pair#* }" --search exhaustive \
            --no-db --cache-dir "$d/cache" --min-time-ms 200 --out "$d/side-${pair%% *}.csv" > "$d/side-${pair%% *}.txt" 2>&1 ||
            { say "$tag: side by side failed (see $d/side-${pair%% *}.txt)"; side=""; }
        done
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$causal" "$(peers_file "$s").csv" "$cold_s" \
        "$cold_rc" "$d/cold.csv" "$second_s" "$second_rc" "$from_db" "$d/exhaustive.csv" "$exhaustive_rc" "$side" \
        >> "$log/bar.tsv"
    done
  done
  # The table now, before the sweep: it is what must survive if the call runs out of time (it can be
  # printed again later with `python3 scripts/tuning_bar.py table LOG_DIR/bar.tsv`).
  { echo; python3 "$helper" table "$log/bar.tsv"; echo; } | tee "$log/table.txt"
fi
[ "$sweep" = 1 ] || { echo "whole script: $SECONDS s" | tee -a "$log/table.txt"; exit 0; }

d=$log/sweep
mkdir -p "$d"
say "sweep $sweep_file cold (empty cache and database)"
t0=$(now)
ATTN_TUNE_DB=$d/tuned.sqlite CUDA_CACHE_PATH=$d/nvcache timeout 400 "$bin" --cache-dir "$d/cache" sweep "$sweep_file" --out "$d/sweep.csv" > "$d/sweep.txt" 2>&1
sweep_rc=$? sweep_s=$(since "$t0")
say "sweep: ${sweep_s} s (exit $sweep_rc); $(grep -m1 '^sweep done' "$d/sweep.txt")"

if [ "$sweep_triton" = 1 ]; then
  for s in $(python3 "$helper" shapes "$sweep_file"); do
    [ -e "$(peers_file "$s").csv" ] && continue
    say "peers.py --shape $s --with-triton (for the sweep's sum)"
    peers_run "$s"
  done
fi

{
  if [ "$sweep_rc" = 0 ]; then
    python3 "$helper" sweep "$sweep_file" "$sweep_s" "$log"/peers-*.csv
  else
    echo "sweep cold: exited $sweep_rc after $sweep_s s (see $d/sweep.txt)"
  fi
  echo "whole script: $SECONDS s"
} | tee -a "$log/table.txt"
