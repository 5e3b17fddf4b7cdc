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

# 7. sweep --resume with another --space or --family than the file was made with is refused,
# naming the difference; with the same ones it goes on.
head -6 "$src/sweeps/ci-smoke.csv" > two.csv
sp=(--compile-only --arch sm_90a --cache-dir "$cache" --space block_m=64 block_n=64 warps=4)
"$bin" "${sp[@]}" stages=1 --family fa2 sweep two.csv --out r.csv >/dev/null 2>&1 || fail "the first sweep"
refused 2 "tuned with another fa2 space: it lacks m64_n64_w4_s2" r.csv \
  "$bin" "${sp[@]}" stages=1,2 --family fa2 sweep "$src/sweeps/ci-smoke.csv" --out r.csv --resume
refused 2 "tuned without family wgmma, which this run searches" r.csv \
  "$bin" "${sp[@]}" stages=1 --family fa2,wgmma sweep "$src/sweeps/ci-smoke.csv" --out r.csv --resume
refused 2 "tuned with family fa2, which this run does not search (--family wgmma)" r.csv \
  "$bin" "${sp[@]}" stages=1 --family wgmma sweep "$src/sweeps/ci-smoke.csv" --out r.csv --resume
"$bin" "${sp[@]}" stages=1,2 --family fa2 sweep two.csv --out wide.csv >/dev/null 2>&1 || fail "the wide sweep"
refused 2 "tuned with another fa2 space: m64_n64_w4_s2 is not in this run's" wide.csv \
  "$bin" "${sp[@]}" stages=1 --family fa2 sweep "$src/sweeps/ci-smoke.csv" --out wide.csv --resume
"$bin" "${sp[@]}" stages=1 --family fa2 sweep "$src/sweeps/ci-smoke.csv" --out r.csv --resume >out 2>&1 \
  || fail "resume with the same space: $(cat out)"
[ "$(grep -c 'already in r.csv, skipped' out)" -eq 2 ] || fail "the resume did not keep the 2 shapes: $(cat out)"

# 8. sm_100 and sm_120 are compute capability 10.0 and 12.0: fa2's configs are compiled, not pruned.
for arch in sm_80 sm_86 sm_89 sm_90a sm_100 sm_120; do
  "$bin" --compile-only --arch "$arch" --family fa2 --configs m64_n64_w4_s1 --shape 1,8,512,64 --out "$arch.csv" \
    --cache-dir "$cache" >out 2>&1 || fail "--arch $arch: $(cat out)"
  grep -q "1 configs: 1 to compile, 0 pruned" out || fail "--arch $arch pruned: $(cat out)"
done
grep -q ',12\.0,' sm_120.csv || fail "sm_120's cc is not 12.0: $(sed -n 2p sm_120.csv)"

# 17. An unknown family in a results CSV is refused naming it; the export quotes its family column.
schema3 "$src/tests/data/export_fixture.csv" fa3.csv "NVIDIA H200" fa3
refused 2 "unknown kernel family 'fa3'" fa3.csv "$bin" export fa3.csv
refused 2 "unknown kernel family 'fa3'" fa3.csv "$bin" merge fa3.csv --out never.csv

# 18. Invalid UTF-8 (a device name, an --out name) is replaced in JSON, not an exit 3 after the CSV.
schema3 "$src/tests/data/export_fixture.csv" bad-utf8.csv $'GPU \xff\xfe' fa2
"$bin" export bad-utf8.csv --format json --out bad.json 2>err || fail "export --format json of invalid UTF-8: $(cat err)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["entries"][0]["device"] == "GPU \ufffd\ufffd", d' bad.json \
  || fail "bad.json: $(cat bad.json)"
"$bin" "${one[@]}" --shape 1,8,512,64 --out $'x\xc3.csv' --json j.json >/dev/null 2>err || fail "--json with an odd --out: $(cat err)"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' j.json || fail "j.json is not JSON"

# 19. The exported header escapes '?': a device named ??/" or ??= compiles with trigraphs and looks up.
schema3 "$src/tests/data/export_fixture.csv" tri.csv 'X??/"??=Y' fa2
"$bin" export tri.csv --format header --out tri.hpp 2>err || fail "export --format header: $(cat err)"
! grep -q '??' tri.hpp || fail "the header holds '??': $(grep -n '??' tri.hpp)"
if c++ --version >/dev/null 2>&1; then
  printf '#include "tri.hpp"\nint main() { bool fell = true;\n  attn_tuned::lookup("X\\?\\?/\\"\\?\\?=Y", 9, 0, 132, "bf16", 128, false, 4096, &fell);\n  return fell; }\n' > tri.cpp
  c++ -std=c++17 -trigraphs -DATTN_TUNED_QUIET -o tri tri.cpp 2>err || fail "the header does not compile with -trigraphs: $(cat err)"
  ./tri || fail "the odd device name did not look up"
fi

# 21. --configs without --family on an --arch where one default family alone runs (sm_80: fa2) is
# that family's; escape bytes in a sweep file's names are refused, not printed to the terminal.
"$bin" --compile-only --arch sm_80 --configs m64_n64_w4_s1 --shape 1,8,512,64 --out c80.csv --cache-dir "$cache" \
  >out 2>&1 || fail "--configs on sm_80 without --family: $(cat out)"
grep -q "attn-tune fa2 --compile-only" out || fail "--configs on sm_80 ran: $(head -1 out)"
"$bin" --compile-only --arch sm_90a --configs m64_n64_w4_s1 --shape 1,8,512,64 --out c90.csv >out 2>err
grep -q "the configs of fa2,wgmma,hopper differ" err || fail "--configs on sm_90a: $(cat err)"
printf 'name,B,H,kv_heads,N,kv_len,D,causal,dtype,layout\n\033[31mred\033[0m,1,8,8,512,512,64,0,bf16,bhsd\n' > ansi.csv
refused 2 "column 'name' holds the control character 0x1b" ansi.csv "$bin" "${small[@]}" sweep ansi.csv --out ansi-out.csv
grep -q $'\033' err && fail "the escape byte reached the terminal: $(od -c err | head -3)"

echo "ok"
