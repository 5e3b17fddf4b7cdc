#!/usr/bin/env bash
# expect_error.sh EXIT_CODE PATTERN COMMAND...: the command must exit with EXIT_CODE and print
# PATTERN (a fixed string) on stderr. Bad input must give a clear message, never a crash.
expected=$1 pattern=$2
shift 2
err=$("$@" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne "$expected" ]; then
  echo "expected exit $expected, got $rc from: $*"; echo "$err"; exit 1
fi
if ! grep -qF -- "$pattern" <<<"$err"; then
  echo "stderr lacks '$pattern': $*"; echo "$err"; exit 1
fi
echo "ok: exit $rc, '$pattern'"
