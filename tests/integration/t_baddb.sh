#!/bin/sh
# A damaged or read-only database stops cutd at start with a clear error:
# garbage written over a page past the header (the header intact) makes
# cutd exit 73 telling the operator what to do, without reporting ready;
# once the file is moved aside, as the message says, cutd starts on a new
# database whose ids are new to the peers, and a snapshot completes.  A
# database on a read-only file system (a read-only bind mount as root,
# file modes otherwise) also exits 73, naming the problem.
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 200
start_app 1 14 --rate 200
start_app 2 12 --rate 200
sleep 1
for k in 1 2 3; do
	id=$(snapshot 0)
	check_snapshot 0 "$id" 44
done
old=$id

# stop_p0: SIGTERM, and wait for it to exit (the WAL is checkpointed).
stop_p0() {
	kill "$DAEMON_0"
	wait "$DAEMON_0"
}
# start_p0_expect_exit RC: starts p0 and waits for it to exit with RC.
start_p0_expect_exit() {
	start_daemon 0
	i=0
	while kill -0 "$DAEMON_0" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "p0 did not exit on a bad database"
		sleep 0.1
	done
	wait "$DAEMON_0"
	rc=$?
	[ "$rc" = "$1" ] || fail "p0 exited $rc, want $1"
}

kill "$APP_0"
stop_p0
[ ! -e "$T/p0.db-wal" ] || fail "the WAL is still there after a clean stop"
[ "$(sqlite3 "$T/p0.db" "PRAGMA quick_check")" = ok ] || fail "quick_check before damage"
pagesize=$(sqlite3 "$T/p0.db" "PRAGMA page_size")
cp "$T/p0.db" "$T/p0.db.orig"
# Page 2 is the root of the snapshots table.
dd if=/dev/urandom of="$T/p0.db" bs="$pagesize" seek=1 count=1 conv=notrunc 2>/dev/null
cmp -s -n 100 "$T/p0.db" "$T/p0.db.orig" || fail "the header changed"
: >"$T/cutd-p0.log"
start_p0_expect_exit 73
grep -q "cannot open the database $T/p0.db: .*" "$T/cutd-p0.log" ||
	fail "no 'cannot open' line"
grep -q "damaged" "$T/cutd-p0.log" || fail "the log does not say the database is damaged"
grep -q "mv $T/p0.db $T/p0.db.damaged" "$T/cutd-p0.log" || fail "the log does not say how to move it aside"
grep -q "sqlite3 $T/p0.db.damaged .recover | sqlite3 $T/p0.db" "$T/cutd-p0.log" ||
	fail "the log does not say how to recover"
grep -q "ready" "$T/cutd-p0.log" && fail "p0 reported ready on a damaged database"
echo "ok: damaged database refused, exit 73"

# As the message says: move it aside, start afresh.
mv "$T/p0.db" "$T/p0.db.damaged"
rm -f "$T/p0.db-wal" "$T/p0.db-shm"
start_daemon 0
wait_for "$CUTCTL --control ipc://$T/p0.ctl status" 10 || fail "p0 on a new database"
start_app 0 18 --rate 200
sleep 1
# A snapshot that overlaps the channels' renumbering after the restart
# aborts by design ("channel numbering resumed after a restart"): under
# load that can still be going on after a second, so such an abort is
# taken again, up to 5 times; any other outcome counts.
tries=0
while :; do
	new=$(snapshot 0)
	[ "${new#p0:}" -gt "${old#p0:}" ] || fail "new database issued $new, not above $old"
	# The restarted application starts again from 18 tokens, so the
	# total is not 44 any more; the cut must still be complete and
	# consistent.
	st=$(wait_done 0 "$new" 20)
	tries=$((tries + 1))
	[ "$st" = aborted ] && [ $tries -lt 5 ] &&
		sql 0 "SELECT reason FROM snapshots WHERE id = '$new'" | grep -q "channel numbering resumed after a restart" ||
		break
	sleep 1
done
[ "$st" = complete ] || fail "snapshot $new: $st ($(sql 0 "SELECT reason FROM snapshots WHERE id = '$new'"))"
[ "$(sql 0 "SELECT consistent FROM snapshots WHERE id = '$new'")" = 1 ] ||
	fail "snapshot $new: audit says $(sql 0 "SELECT audit_reason FROM snapshots WHERE id = '$new'")"
# p1 holds the 3 from before and the complete one, and perhaps the
# aborted tries (whether it took part in one depends on when it ended).
held=$(sql 1 "SELECT count(*) FROM snapshots WHERE initiator = 'p0'")
[ "$held" -ge 4 ] && [ "$held" -le $((3 + tries)) ] && [ "$(sql 1 "SELECT count(*) FROM snapshots WHERE id = '$new'")" = 1 ] ||
	fail "p1 holds $held snapshots of p0, not the 3 before and $new"
echo "ok: fresh database, id $new above $old, complete"

# Read-only.
kill "$APP_0"
stop_p0
mkdir "$T/ro"
cp "$T/p0.db" "$T/ro/p0.db"
sed -i "/^\[node p0\]/a database = $T/ro/p0.db" "$T/cluster.ini"
if [ "$(id -u)" = 0 ]; then
	mount --bind "$T/ro" "$T/ro" || fail "bind mount"
	AT_EXIT='umount "$T/ro"'
	mount -o remount,ro,bind "$T/ro" || fail "read-only remount"
	how="read-only bind mount"
else
	AT_EXIT='chmod u+w "$T/ro"'
	chmod a-w "$T/ro/p0.db" "$T/ro"
	how="file modes"
fi
: >"$T/cutd-p0.log"
start_p0_expect_exit 73
grep -Eq "cannot open the database $T/ro/p0.db: .*(the file system is read-only|is not writable)" "$T/cutd-p0.log" ||
	fail "no readonly error: $(cat "$T/cutd-p0.log")"
grep -q "writable" "$T/cutd-p0.log" || fail "no hint about a writable file system"
echo "ok: read-only database ($how) refused, exit 73"
pass "bad databases"
