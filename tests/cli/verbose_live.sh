#!/usr/bin/env bash
# verbose_live.sh ATTN_TUNE OUT_DIR CACHE_DIR: -v prints each variant's compile log as it is
# compiled (stderr, flushed), so with stdout and stderr in one pipe every variant's line, its log
# and the progress line that counts it come before the table, in that order, not after it.
set -u
tool=$1 out=$2 cache=$3
text=$("$tool" -v --compile-only --arch sm_80 --family fa2 --space block_m=64 block_n=64 warps=4 stages=1,2 \
  --shape 1,2,128,64 --jobs 1 --out "$out/verbose.csv" --force --cache-dir "$cache" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || { echo "exit $rc"; echo "$text"; exit 1; }
line_of() { grep -n -F -- "$1" <<<"$text" | head -n 1 | cut -d: -f1; }
first=$(line_of "compiled fa2 m64_n64_w4_s1: ") log=$(line_of "    ptxas info    : Used ")
counted=$(line_of "compiling 1/2") second=$(line_of "compiled fa2 m64_n64_w4_s2: ") table=$(line_of "#  config")
for v in first log counted second table; do
  [ -n "${!v}" ] || { echo "no '$v' line in:"; echo "$text"; exit 1; }
done
if ! [ "$first" -lt "$log" ] || ! [ "$log" -lt "$counted" ] || ! [ "$counted" -lt "$second" ] ||
   ! [ "$second" -lt "$table" ]; then
  echo "lines out of order (first $first, log $log, counted $counted, second $second, table $table):"
  echo "$text"; exit 1
fi
# After the table nothing repeats the per-variant lines.
if tail -n +"$table" <<<"$text" | grep -q -F "ptxas info"; then echo "a compile log after the table:"; echo "$text"; exit 1; fi
echo "ok: -v reports each variant as it is compiled"
