#!/usr/bin/env bash
# `pip install --no-build-isolation ./python` works offline (no index), from a copy of the source so
# the tree stays clean; the installed package imports. Exit 77 (skipped) without pip or wheel.
set -euo pipefail
python=$1 source=$2 work=$3
if ! "$python" -c "import setuptools, wheel, pip" 2>/dev/null; then
  # e.g. a pyenv interpreter first on PATH: Debian's, which setup.sh equips, does the install
  python=/usr/bin/python3
  "$python" -c "import setuptools, wheel, pip" 2>/dev/null || { echo "no pip/setuptools/wheel"; exit 77; }
fi
rm -rf "$work" && mkdir -p "$work"
cp -r "$source/python" "$work/src"
"$python" -m pip install --quiet --no-build-isolation --no-index --no-deps --target "$work/site" "$work/src"
cd "$work" && PYTHONPATH="$work/site" ATTN_TUNE_LIBRARY=/no/such/lib "$python" -c "import attn_tune; print(attn_tune.__file__)"
