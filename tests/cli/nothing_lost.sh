#!/usr/bin/env bash
# nothing_lost.sh ATTN_TUNE SOURCE_DIR CACHE_DIR: issue 21's "data lost" items, each as the probe ran
# it: export and --json never write over an input or an existing file without --force, runs
# without --out started at once take a name each, the kernel cache follows no planted link and
# checks each entry's key, the best table goes beside a regular file only, long names and folders
# as --out. No GPU (compile-only, one config per shape).
source "$(dirname "$0")/probe_common.sh"

# 1. export: never over its input, nor over an existing file without --force.
cp "$src/tests/data/export_fixture.csv" r.csv
refused 2 "is the input itself" r.csv "$bin" export r.csv --out r.csv
refused 2 "is the input itself" r.csv "$bin" export r.csv --out ./r.csv --force
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE t (x)"); c.commit()' db.sqlite
refused 2 "is the input itself" db.sqlite "$bin" export db.sqlite --out db.sqlite --force
echo keep > e.csv
refused 2 "'e.csv' exists: --force overwrites it" e.csv "$bin" export r.csv --out e.csv
"$bin" export r.csv --out e.csv --force 2>/dev/null || fail "export --force"
grep -q '^"NVIDIA H200"' e.csv || fail "export --force did not write e.csv"

# 2. --json: same rules as --out, and never the --out file.
"$bin" "${one[@]}" --shape 1,8,512,64 --out a.csv >/dev/null 2>&1 || fail "a.csv"
refused 2 "--json and --out both name 'a.csv'" a.csv "$bin" "${one[@]}" --shape 1,8,512,64 --out a.csv --json a.csv --force
refused 2 "'a.csv' exists: --force overwrites it" a.csv "$bin" "${one[@]}" --shape 1,8,512,64 --out b.csv --json a.csv
cp "$src/sweeps/ci-smoke.csv" s.csv
refused 2 "--json 's.csv' is the sweep file itself" s.csv "$bin" "${small[@]}" sweep s.csv --out o.csv --json s.csv --force
"$bin" "${one[@]}" --shape 1,8,512,64 --out c.csv --json a.json >/dev/null 2>&1 || fail "--json a new file"
"$bin" "${one[@]}" --shape 1,8,512,64 --out c.csv --json a.json --force >/dev/null 2>&1 || fail "--json --force"

# 3. Runs without --out started at once: each claims a name of its own.
mkdir runs && cd runs
pids=()
for i in 1 2 3 4 5 6 7 8; do "$bin" "${one[@]}" --shape 1,8,512,64 >"log$i" 2>&1 & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a run at once failed: $(cat log*)"; done
[ "$(ls results | wc -l)" -eq 8 ] || fail "8 runs wrote $(ls results | wc -l) files: $(ls results)"
[ "$(grep -ho 'wrote .*' log* | sort -u | wc -l)" -eq 8 ] || fail "runs reported one name twice: $(grep -h wrote log*)"
for f in results/*; do grep -q '^#end,rows=1,' "$f" || fail "$f is not a whole results CSV"; done
cd ..

# 4. The kernel cache follows no link planted in it, and without HOME it is a private folder.
own=(--compile-only --arch sm_80 --family fa2 --shape 1,8,512,64 --cache-dir own-cache --force)
"$bin" "${own[@]}" --configs m64_n64_w4_s1 --out k1.csv >/dev/null 2>&1 || fail "compile into own-cache"
entry=$(ls own-cache/*.entry)
echo "the user's file" > victim
rm "$entry" && ln -s ../victim "$entry"
"$bin" "${own[@]}" --configs m64_n64_w4_s1 --out k1.csv >/dev/null 2>err || fail "compile over a planted link: $(cat err)"
[ "$(cat victim)" = "the user's file" ] || fail "the cache wrote through a planted link"
[ -f "$entry" ] && [ ! -L "$entry" ] || fail "the planted link is still there"
rm "$entry" && ln -s ../created "$entry"
"$bin" "${own[@]}" --configs m64_n64_w4_s1 --out k1.csv >/dev/null 2>&1 || fail "compile over a dangling link"
[ ! -e created ] || fail "a dangling link in the cache created its target"
mkdir tmp
no_home=(env -u HOME -u XDG_CACHE_HOME -u ATTN_TUNE_CACHE_DIR -u ATTN_TUNE_DB TMPDIR="$dir/tmp" "$bin")
"${no_home[@]}" --compile-only --arch sm_80 --family fa2 --configs m64_n64_w4_s1 --shape 1,8,512,64 --out h.csv \
  >/dev/null 2>err || fail "no HOME: $(cat err)"
[ "$(stat -c %a "tmp/attn-tune-cache-$(id -u)")" = 700 ] || fail "the cache without HOME is not private"
if [ "$(id -u)" = 0 ] && setpriv --version >/dev/null 2>&1; then
  # Two users: another one (nobody) makes the folder first in a shared temporary folder.
  chmod 755 "$dir" && mkdir shared && chmod 1777 shared
  setpriv --reuid=65534 --regid=65534 --clear-groups mkdir -m 777 "shared/attn-tune-cache-0" || fail "nobody's mkdir"
  env -u HOME -u XDG_CACHE_HOME -u ATTN_TUNE_CACHE_DIR TMPDIR="$dir/shared" "$bin" --compile-only --arch sm_80 \
    --family fa2 --configs m64_n64_w4_s1 --shape 1,8,512,64 --out n.csv >/dev/null 2>err; rc=$?
  [ $rc -eq 2 ] && grep -q "belongs to user 65534" err || fail "another user's cache folder: exit $rc, $(cat err)"
  [ ! -e n.csv ] && [ -z "$(ls -A shared/attn-tune-cache-0)" ] || fail "another user's cache folder was used"
else
  echo "(not root: the two-user case is left to the unit test private_dir.made_0700_and_refused_when_another_users)"
fi

# 5. A cache entry copied over another config's is refused, and that config compiled again.
"$bin" "${own[@]}" --configs m64_n64_w4_s2 --out k2.csv >/dev/null 2>&1 || fail "compile m64_n64_w4_s2"
registers() { python3 -c 'import csv,sys; print([r["registers"] for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))][0])' "$1"; }
want=$(registers k2.csv)
for e in own-cache/*.entry; do [ "$e" = "$entry" ] || e2=$e; done
cp "$entry" "$e2"
"$bin" "${own[@]}" --configs m64_n64_w4_s2 --out k2.csv >/dev/null 2>err || fail "compile over a copied entry"
grep -q "holds the entry of another key" err || fail "a copied entry was not refused: $(cat err)"
[ "$(registers k2.csv)" = "$want" ] || fail "registers $(registers k2.csv) after the copied entry, not $want"

# 16. The best table goes beside a regular file only, named from the file's name alone.
cp "$src/results/h200/ci-smoke.csv" g.csv
"$bin" merge g.csv --out /dev/stdout --force >merged 2>err || fail "merge --out /dev/stdout: $(cat err)"
grep -q '^#end,' merged || fail "merge --out /dev/stdout wrote no CSV"
"$bin" merge g.csv --out /dev/null --force >/dev/null 2>err || fail "merge --out /dev/null: $(cat err)"
[ ! -e /dev/null.best.csv ] || fail "merge created /dev/null.best.csv"
"$bin" merge g.csv --out a.csv.d/out >/dev/null 2>err || fail "merge --out a.csv.d/out: $(cat err)"
[ -f a.csv.d/out.best.csv ] && [ ! -e a.best.csv ] || fail "the best table of a.csv.d/out: $(ls -R)"

# 20. A legal 250-byte --out name is written (its temporary name stays within the limit).
long=$(printf 'n%.0s' $(seq 246)).csv
"$bin" "${one[@]}" --shape 1,8,512,64 --out "$long" >out 2>&1 || fail "a 250-byte --out: $(cat out)"
grep -q '^#end,rows=1,' "$long" || fail "the 250-byte --out is not whole"

# 21. A folder as --out is bad input (exit 2), said before any work.
mkdir folder
refused 2 "cannot write 'folder': it is a directory" r.csv "$bin" "${one[@]}" --shape 1,8,512,64 --out folder
refused 2 "cannot write 'folder': it is a directory" r.csv "$bin" export r.csv --out folder --force

leftovers=$(ls -A | grep -E '\.tmp|probe' || true)
[ -z "$leftovers" ] || fail "left behind: $leftovers"
echo "ok"
