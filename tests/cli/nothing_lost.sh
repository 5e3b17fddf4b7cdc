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
