#!/usr/bin/env bash
# silently_wrong.sh ATTN_TUNE SOURCE_DIR CACHE_DIR: issue 21's "silently wrong" and smaller items, each
# as the probe ran it: a results CSV cut after its header, --resume with another space or family,
# sm_100/sm_120, the export's family column and header literals, invalid UTF-8 in JSON, the options
# that contradict each other, escape bytes from a sweep file. No GPU.
source "$(dirname "$0")/probe_common.sh"

# 6. A results CSV cut right after its header line is refused by every reader.
"$bin" "${one[@]}" --shape 1,8,512,64 --out whole.csv >/dev/null 2>&1 || fail "whole.csv"
head -1 whole.csv > header.csv
refused 2 "header.csv': line 1 is its last and there is no '#end' line" header.csv "$bin" merge header.csv --out m.csv
[ ! -e m.csv ] || fail "merge wrote the header-only file"
refused 2 "line 1 is its last" header.csv "$bin" export header.csv

# 8. sm_100 and sm_120 are compute capability 10.0 and 12.0: fa2's configs are compiled, not pruned.
for arch in sm_80 sm_86 sm_89 sm_90a sm_100 sm_120; do
  "$bin" --compile-only --arch "$arch" --family fa2 --configs m64_n64_w4_s1 --shape 1,8,512,64 --out "$arch.csv" \
    --cache-dir "$cache" >out 2>&1 || fail "--arch $arch: $(cat out)"
  grep -q "1 configs: 1 to compile, 0 pruned" out || fail "--arch $arch pruned: $(cat out)"
done
grep -q ',12\.0,' sm_120.csv || fail "sm_120's cc is not 12.0: $(sed -n 2p sm_120.csv)"

echo "ok"
