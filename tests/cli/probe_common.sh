# Sourced by the probe scripts of issue 21 (nothing_lost.sh, silently_wrong.sh, database_left_alone.sh),
# which take ATTN_TUNE SOURCE_DIR CACHE_DIR: a fresh folder to work in (removed at the end), and
# what their checks share. No GPU: compile-only runs of one config per shape.
set -uo pipefail
bin=$1 src=$2 cache=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/attn-tune-probe-XXXXXX")
trap 'chmod -R u+w "$dir" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
one=(--compile-only --arch sm_80 --family fa2 --configs m64_n64_w4_s1 --cache-dir "$cache")
small=(--compile-only --arch sm_80 --space block_m=64 block_n=64 warps=4 stages=1 --cache-dir "$cache")
# refused CODE TEXT FILE COMMAND...: exits CODE, says TEXT on stderr, and FILE is unchanged.
refused() {
  local code=$1 text=$2 file=$3; shift 3
  local before; before=$(md5sum "$file")
  "$@" >out 2>err; local rc=$?
  [ $rc -eq "$code" ] || fail "exit $rc, not $code, from: $* ($(cat err))"
  grep -qF -- "$text" err || fail "no '$text' from: $* ($(cat err))"
  [ "$(md5sum "$file")" = "$before" ] || fail "$file changed by: $*"
}
# schema3 SRC DST DEVICE FAMILY: SRC's rows as a schema 3 results CSV (read without an end line),
# with every row's device name and family replaced: a results file with odd names, made by hand.
schema3() {
  python3 - "$@" <<'PY'
import csv, sys
src, dst, device, family = sys.argv[1:5]
lines = [l for l in open(src, encoding="utf-8", errors="surrogateescape") if not l.startswith("#end,")]
rows = list(csv.reader(lines))
keep = rows[0].index("noise")
with open(dst, "w", newline="", encoding="utf-8", errors="surrogateescape") as out:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(rows[0][:keep])
    for r in rows[1:]:
        r[0], r[1], r[7] = "3", device, family
        w.writerow(r[:keep])
PY
}
