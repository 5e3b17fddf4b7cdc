# Sourced by the device calls that compare two trees (house_check.sh, decode_ab.sh): builds this
# tree and the "before" tree carried in .dev/before side by side, then sets t0/el, LD_LIBRARY_PATH,
# $before and $after (the two attn-tune binaries), and exits when either did not build.
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
cp -r .deps .dev/before/ 2>/dev/null
(bash scripts/device_build.sh build-gpu > $OUT/build_after.log 2>&1; echo "after build rc=$?") &
(cd .dev/before && bash scripts/device_build.sh build-gpu > $OUT/build_before.log 2>&1; echo "before build rc=$?") &
wait; echo "builds done $(el)"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
before=.dev/before/build-gpu/attn-tune after=build-gpu/attn-tune
[ -x $after ] || { tail -30 $OUT/build_after.log; exit 1; }
[ -x $before ] || { tail -30 $OUT/build_before.log; exit 1; }
