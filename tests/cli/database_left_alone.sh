#!/usr/bin/env bash
# database_left_alone.sh ATTN_TUNE SOURCE_DIR CACHE_DIR: issue 21's database items, as the probe ran
# them: another program's SQLite file given as --db is refused by every db command and left as it
# was (its journal mode too), and db list on a path with nothing there creates nothing. (A lock
# held past the wait, and read-only storage: tests/cpu/test_db_access.cpp.)
source "$(dirname "$0")/probe_common.sh"

# 13. Another program's database: refused, not a byte changed, no WAL side files.
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE notes (t)"); c.commit()' theirs.sqlite
for action in "list" "show 1" "forget 1"; do
  # shellcheck disable=SC2086
  refused 2 "is not an attn-tune database" theirs.sqlite "$bin" --db theirs.sqlite db $action
done
[ ! -e theirs.sqlite-wal ] && [ ! -e theirs.sqlite-shm ] || fail "WAL files beside another program's database"
[ "$(od -An -tu1 -j18 -N2 theirs.sqlite | tr -d ' ')" = 11 ] || fail "another program's database is now in WAL mode"

# 21. A reader creates nothing: db list on a new path lists nothing and makes no folder or file.
"$bin" --db new/dir/x.sqlite db list >out 2>&1 || fail "db list of nothing: $(cat out)"
grep -q "no database yet" out || fail "db list of nothing said: $(cat out)"
[ ! -e new ] || fail "db list created $(find new)"
"$bin" --db new/x.sqlite db show 1 >out 2>err; rc=$?
[ $rc -eq 2 ] && grep -q "does not exist" err || fail "db show of nothing: exit $rc, $(cat err)"
[ ! -e new ] || fail "db show created $(find new)"

echo "ok"
