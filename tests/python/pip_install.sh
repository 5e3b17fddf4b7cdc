#!/usr/bin/env bash
# `pip install --no-build-isolation ./python` works offline (no index), from a copy of the source so
# the tree stays clean; the installed package imports. Exit 77 (skipped) without pip or wheel.
set -euo pipefail
python=$1 source=$2 work=$3
"$python" -c "import pip, setuptools, wheel" 2>/dev/null || { echo "no pip/setuptools/wheel for $python"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
cp -r "$source/python" "$work/src"
"$python" -m pip install --quiet --no-build-isolation --no-index --no-deps --target "$work/site" "$work/src"
cd "$work" && PYTHONPATH="$work/site" ATTN_TUNE_LIBRARY=/no/such/lib "$python" -c "import attn_tune; print(attn_tune.__file__)"
