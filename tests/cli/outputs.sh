#!/usr/bin/env bash
# outputs.sh ATTN_TUNE SOURCE_DIR CACHE_DIR: the commands that other CLI tests run for their exit
# code alone, run again here with what each produced read back (issue 20, item 5): the results
# CSV's rows and statuses, the sweep's shapes, the empty database, the export's JSON. No GPU.
set -uo pipefail
bin=$1 src=$2 cache=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/attn-tune-outputs-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }
# rows FILE: "family config status" per row of a results CSV (header and end line left out).
rows() {
  python3 - "$1" <<'PY'
import csv, sys
lines = [l for l in open(sys.argv[1]) if not l.startswith("#end,")]
for r in csv.DictReader(lines):
    print(r["family"], r["config"], r["status"], r["q_len"])
PY
}

# The compile-only smoke run: hopper refuses the space, fa2 and wgmma each compile their config.
"$bin" --compile-only --arch sm_90a --shape 1,2,128,64 --space block_m=64 block_n=64 warps=4 stages=2 \
  --out smoke.csv --force --cache-dir "$cache" >out 2>&1 || fail "smoke: $(cat out)"
[ "$(rows smoke.csv)" = "fa2 m64_n64_w4_s2 compiled 128
wgmma m64_n64_w4_s2 compiled 128" ] || fail "smoke.csv rows: $(rows smoke.csv)"
grep -q '^#end,rows=2,xxh3=' smoke.csv || fail "smoke.csv end line: $(tail -1 smoke.csv)"

# One family refuses the space (fa2: 64 rows on 8 warps), the other runs it. (Without --family, on
# sm_90a hopper runs alone: cli_one_family_refuses_the_other_runs no longer runs fa2 or wgmma.)
"$bin" --compile-only --shape 1,1,64,64 --family fa2,wgmma --space block_m=64 block_n=64 warps=8 stages=2 --out one.csv --force \
  --cache-dir "$cache" >out 2>&1 || fail "one family: $(cat out)"
[ "$(rows one.csv)" = "wgmma m64_n64_w8_s2 compiled 64" ] || fail "one.csv rows: $(rows one.csv)"

# A compile-only sweep: every shape of the sweep file, one config each.
"$bin" --compile-only --arch sm_80 --space block_m=64 block_n=64 warps=4 stages=1 splits=1 pack_gqa=0 \
  sweep "$src/sweeps/ci-smoke.csv" --out sweep.csv --force --cache-dir "$cache" >out 2>&1 || fail "sweep: $(cat out)"
grep -q '^#end,rows=4,' sweep.csv || fail "sweep.csv end line: $(tail -1 sweep.csv)"
[ "$(rows sweep.csv | awk '$3 == "compiled"' | wc -l)" -eq 4 ] || fail "sweep.csv rows: $(rows sweep.csv)"
[ "$(rows sweep.csv | awk '{print $4}' | sort -u | wc -l)" -ge 2 ] || fail "sweep.csv: one shape only"

# db list on a new path lists nothing and creates nothing (a reader; issue 21, item 21).
"$bin" --db new.sqlite db list >out 2>&1 || fail "db list: $(cat out)"
grep -q "new.sqlite: no database yet (a tuning creates it): 0 tunings" out || fail "db list said: $(cat out)"
[ ! -e new.sqlite ] || fail "db list created new.sqlite"

# export --format json: the fixture's three tuned keys, read back.
"$bin" export "$src/tests/data/export_fixture.csv" --format json --out fixture.json >out 2>&1 || fail "export: $(cat out)"
grep -q "wrote 3 entries (json) to fixture.json" out || fail "export's note: $(cat out)"
python3 - fixture.json <<'PY' || fail "fixture.json: $(cat fixture.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == 1, d["schema"]
e = {(x["head_dim"], x["causal"], x["seq_max"]): x for x in d["entries"]}
assert len(e) == 3, e.keys()
c = e[(128, False, 4096)]
assert (c["seq_min_exclusive"], c["device"], c["cc"], c["sm_count"]) == (2048, "NVIDIA H200", "9.0", 132), c
assert c["config"] == {"family": "fa2", "block_m": 256, "block_n": 64, "warps": 8, "stages": 2, "knob": 0, "splits": 1, "pack_gqa": 0,
                       "variant": "m256_n64_w8_s2"}, c
assert e[(64, True, 1024)]["seq_min_exclusive"] == 512
assert d["fallback"]["head_dim_le_128"]["block_m"] == 128
PY
echo "ok"
