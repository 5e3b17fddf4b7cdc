#!/usr/bin/env bash
# One device call (or its first part) for issue 19's energy: build this tree; how NVML's energy
# counter moves on this GPU (bench/nvml_energy_probe.py); the energy GPU tests; then joules per
# call of the yardstick shapes' tuned configs (bench/device/energy.sh, within DEADLINE s of T0).
# Files under $OUT: build.log, probe.txt, ctest_energy.log, energy.tar.gz, energy.txt.
#   carry: .deps      usage: [T0=...] [DEADLINE=...] bash bench/device/energy_probe.sh
set -uo pipefail
export T0=${T0:-$(date +%s)}  # energy.sh, which follows, counts its deadline from it too
source bench/device/build_tree.sh
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout 30 python3 bench/nvml_energy_probe.py 3 > $OUT/probe.txt 2>&1; echo "probe rc=$? $(el)"; cat $OUT/probe.txt
(cd build-gpu && ATTN_TUNE_REQUIRE_GPU=1 timeout 120 ctest -L gpu -R 'energy|sustained' --output-on-failure \
   > $OUT/ctest_energy.log 2>&1
 echo "ctest rc=$? $(el)"; grep -E 'tests passed|Failed|\*\*\*|Not Run|Timeout' $OUT/ctest_energy.log | head)
bash bench/device/energy.sh
