#!/usr/bin/env bash
# expect_output.sh PATTERNS COMMAND...: the command must exit 0 and print every one of PATTERNS
# ('|' between them; fixed strings) on stdout, e.g. a --help that must name each option.
patterns=$1
shift
out=$("$@" 2>/dev/null)
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "expected exit 0, got $rc from: $*"; echo "$out"; exit 1
fi
IFS='|' read -r -a wanted <<<"$patterns"
for p in "${wanted[@]}"; do
  if ! grep -qF -- "$p" <<<"$out"; then
    echo "stdout lacks '$p': $*"; echo "$out"; exit 1
  fi
done
echo "ok: ${#wanted[@]} patterns"
