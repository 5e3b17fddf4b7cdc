# Sourced by the device calls that build this one tree: sets t0 (T0 when set) and el (the seconds
# since t0), builds build-gpu (scripts/device_build.sh, its output in $OUT/build.log) and exits,
# showing the log's end, when the build fails.
t0=${T0:-$(date +%s)}; el() { echo "[$(( $(date +%s) - t0 )) s]"; }
bash scripts/device_build.sh build-gpu > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build done $(el)"
