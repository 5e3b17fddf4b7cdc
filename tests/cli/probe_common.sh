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
