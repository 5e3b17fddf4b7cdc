#!/usr/bin/env bash
# out_files.sh ATTN_TUNE SOURCE_DIR CACHE_DIR: what --out points at is written, never replaced
# by something else, and never overwritten without --resume or --force (issue 11, items 1, 2,
# 4, 5). Runs without a GPU (compile-only, one config per shape).
set -uo pipefail
bin=$1 src=$2 cache=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/attn-tune-out-files-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }
one=(--compile-only --arch sm_80 --family fa2 --configs m64_n64_w4_s1 --cache-dir "$cache")
small=(--compile-only --arch sm_80 --space block_m=64 block_n=64 warps=4 stages=1 splits=1 pack_gqa=0 --cache-dir "$cache")

# A FIFO is written in place, a character device is not replaced, a symlink is followed.
mkfifo pipe
cat pipe > from-pipe & reader=$!
"$bin" "${one[@]}" --shape 1,8,512,64 --out pipe >/dev/null 2>&1 || fail "writing a FIFO"
wait $reader
[ -p pipe ] || fail "the FIFO was replaced"
grep -q '^#end,rows=1,' from-pipe || fail "the FIFO did not get the CSV"
"$bin" "${one[@]}" --shape 1,8,512,64 --out /dev/null >/dev/null 2>&1 || fail "writing /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
through=$("$bin" "${one[@]}" --shape 1,8,512,64 --out /dev/stdout 2>/dev/null | cat)
grep -q '^#end,rows=1,' <<<"$through" || fail "--out /dev/stdout on a pipe"
ln -s real.csv link.csv
"$bin" "${one[@]}" --shape 1,8,512,64 --out link.csv >/dev/null 2>&1 || fail "writing through a symlink"
[ -L link.csv ] && [ -f real.csv ] || fail "the symlink was replaced"

# "-" is standard output, for tune, sweep, merge and export; the table goes to stderr then.
"$bin" "${one[@]}" --shape 1,8,512,64 --out - 2>/dev/null > stdout.csv || fail "tune --out -"
head -1 stdout.csv | grep -q '^schema_version,' || fail "tune --out - did not start with the header"
tail -1 stdout.csv | grep -q '^#end,rows=1,' || fail "tune --out - did not end with the end line"
"$bin" export real.csv --out - >exported 2>err; rc=$?  # compile-only rows: nothing to export
[ $rc -eq 2 ] || fail "export of compile-only rows exited $rc: $(cat err)"
grep -q "has no shape with an ok variant to export" err || fail "export's refusal: $(cat err)"
[ ! -s exported ] || fail "export of nothing wrote: $(cat exported)"
"$bin" export "$src/tests/data/export_fixture.csv" --out - 2>/dev/null > exported || fail "export --out -"
[ "$(grep -c '^"NVIDIA H200",9\.0,132,bf16,' exported)" -eq 3 ] || fail "export --out - did not write the 3 entries: $(cat exported)"

# Never overwritten without --force (tune) or --resume/--force (sweep), whatever the mode.
cp real.csv keep.csv
"$bin" "${one[@]}" --shape 1,8,512,64 --out keep.csv >/dev/null 2>err && fail "tune replaced an existing --out"
grep -q "'keep.csv' exists: --force overwrites it" err || fail "tune's refusal: $(cat err)"
cmp -s real.csv keep.csv || fail "keep.csv changed"
"$bin" "${one[@]}" --shape 1,8,512,64 --out keep.csv --force >/dev/null 2>&1 || fail "tune --force"
cp "$src/results/h200/ci-smoke.csv" g.csv
"$bin" "${small[@]}" sweep "$src/sweeps/ci-smoke.csv" --out g.csv >/dev/null 2>err && fail "compile-only sweep replaced g.csv"
grep -q -- "--resume continues that sweep, --force overwrites it" err || fail "sweep's refusal: $(cat err)"
cmp -s g.csv "$src/results/h200/ci-smoke.csv" || fail "g.csv changed"
"$bin" "${small[@]}" sweep "$src/sweeps/ci-smoke.csv" --out g.csv --resume >/dev/null 2>err && fail "resumed H200 rows"
grep -q "not of a compile-only sweep for sm_80" err || fail "resume's refusal: $(cat err)"
cp "$src/sweeps/ci-smoke.csv" s.csv
"$bin" "${small[@]}" sweep s.csv --out s.csv --force >/dev/null 2>err && fail "sweep wrote over its sweep file"
grep -q "is the sweep file itself" err || fail "sweep file refusal: $(cat err)"
cmp -s s.csv "$src/sweeps/ci-smoke.csv" || fail "the sweep file changed"

# --resume in a compile-only sweep: the shapes already there are kept and skipped.
head -4 "$src/sweeps/ci-smoke.csv" > two.csv; sed -n 5,6p "$src/sweeps/ci-smoke.csv" >> two.csv
"$bin" "${small[@]}" sweep two.csv --out c.csv >/dev/null 2>&1 || fail "compile-only sweep of two shapes"
"$bin" "${small[@]}" sweep "$src/sweeps/ci-smoke.csv" --out c.csv --resume > out 2>&1 || fail "resume: $(cat out)"
[ "$(grep -c 'already in c.csv, skipped' out)" -eq 2 ] || fail "resume did not skip the 2 shapes: $(cat out)"
grep -q '^#end,rows=4,' c.csv || fail "resumed file lacks the 4 shapes"

# merge: never over one of its inputs (nor an existing file) without --force.
cp c.csv m.csv
"$bin" merge m.csv --out m.csv >/dev/null 2>err && fail "merge replaced its input"
grep -q "is one of the inputs" err || fail "merge's refusal: $(cat err)"

# A copy cut short is refused by every reader, exit 2, naming the file and the line.
head -n 3 c.csv > cut.csv
"$bin" export cut.csv >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] || fail "export of a cut file exited $rc: $(cat err)"
grep -q "cut.csv': line 3 is its last and there is no '#end' line" err || fail "export's message: $(cat err)"
"$bin" merge cut.csv --out merged.csv >/dev/null 2>err && fail "merge read a cut file"
grep -q "cut.csv': line 3" err || fail "merge's message: $(cat err)"

# --json FILE|- is real JSON with every variant; -q prints nothing but errors without a best.
"$bin" "${one[@]}" --shape 1,8,512,64 --out j.csv --json j.json >/dev/null 2>&1 || fail "--json"
python3 -c 'import json,sys; d=json.load(open("j.json")); assert len(d["variants"]) == 1 and d["run"]["device"]["arch"] == "sm_80", d' \
  || fail "j.json: $(cat j.json)"
"$bin" "${one[@]}" --shape 1,8,512,64 --out j2.csv --json - 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' \
  || fail "--json - is not JSON on stdout"
[ -z "$("$bin" -q "${one[@]}" --shape 1,8,512,64 --out q.csv 2>&1)" ] || fail "-q printed something"

# Nothing left behind: no temporary files beside the outputs.
leftovers=$(ls -A | grep -E '\.tmp|probe' || true)
[ -z "$leftovers" ] || fail "left behind: $leftovers"
echo "ok"
