#!/bin/sh
# Local permissions, with throwaway users and groups (needs root; they are
# removed at exit): p0 runs under umask 022 and p1 under umask 000, and
# both databases, WALs and WAL indexes are 0640; the IPC sockets are 0660
# and belong to socket_group.  A user only in the socket group can run
# `cutctl status` and `list` but `snapshot` and `delete` are refused with
# PERMISSION_DENIED (exit 77) and the snapshot stays; members of
# admin_group (as a supplementary or as the primary group) and root may
# start and delete.  A user outside the socket group cannot connect:
# permission denied (exit 77) naming the socket's group.  An unknown group
# in the cluster file is exit 78.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root (useradd, groupadd, runuser)"
for c in useradd groupadd userdel groupdel runuser; do
	command -v "$c" >/dev/null 2>&1 || fail "$c is missing"
done

S=$$
SOCKG=cutdts$S
ADMG=cutdta$S
READER=cutdtr$S
ADMIN=cutdtm$S
PRIMARY=cutdtp$S
OUTSIDER=cutdto$S
OUTG=cutdtg$S
# Only what this test created is removed: users first, then their groups.
MADE_USERS=""
MADE_GROUPS=""
remove_users() {
	for u in $MADE_USERS; do userdel "$u" 2>/dev/null; done
	for g in $MADE_GROUPS; do groupdel "$g" 2>/dev/null; done
}
AT_EXIT=remove_users
add_group() {
	groupadd "$1" || fail "groupadd $1"
	MADE_GROUPS="$MADE_GROUPS $1"
}
add_user() {
	u=$1
	shift
	useradd -M -N -s /usr/sbin/nologin "$@" "$u" || fail "useradd $u"
	MADE_USERS="$MADE_USERS $u"
}
add_group "$SOCKG"
add_group "$ADMG"
add_user "$READER" -g "$SOCKG"
add_user "$ADMIN" -g "$SOCKG" -G "$ADMG"
add_user "$PRIMARY" -g "$ADMG" -G "$SOCKG"
add_group "$OUTG"
add_user "$OUTSIDER" -g "$OUTG"
# The users reach the sockets through the test directory.
chgrp "$SOCKG" "$T" && chmod 0750 "$T" || fail "cannot open $T to $SOCKG"

# as USER COMMAND...: runs COMMAND as USER, with USER's groups.
as() {
	u=$1
	shift
	runuser -u "$u" -- "$@"
}

# An unknown group is a bad cluster file: exit 78, with the line.
CLUSTER_EXTRA="socket_group = nosuchgroup$S"
cluster 2
"$CUTD" --cluster "$T/cluster.ini" --node p0 >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 78 ] || fail "cutd with an unknown socket_group exited $rc, want 78"
grep -q "cluster.ini:6: \[cluster\] socket_group: no group 'nosuchgroup$S' on this host" \
	"$T/err" || fail "unexpected message: $(cat "$T/err")"
echo "ok: an unknown socket_group is refused, exit 78: $(cat "$T/err")"

CLUSTER_EXTRA="socket_group = $SOCKG
admin_group = $ADMG"
cluster 2
(umask 022 && exec "$CUTD" --cluster "$T/cluster.ini" --node p0 \
	2>>"$T/cutd-p0.log") &
PIDS="$PIDS $!"
(umask 000 && exec "$CUTD" --cluster "$T/cluster.ini" --node p1 \
	2>>"$T/cutd-p1.log") &
PIDS="$PIDS $!"
for i in 0 1; do
	wait_for "$CUTCTL --control ipc://$T/p$i.ctl status" 10 ||
		fail "daemon p$i did not come up"
done
start_app 0 18 --rate 50
start_app 1 26 --rate 50
sleep 0.5
id=$(snapshot 0)
check_snapshot 0 "$id" 44

# Every file of both databases exists by now (a snapshot was written).
for i in 0 1; do
	for f in "p$i.db" "p$i.db-wal" "p$i.db-shm"; do
		[ -e "$T/$f" ] || fail "$f does not exist"
		m=$(stat -c %a "$T/$f")
		# 0640 or tighter: no bit outside rw-r-----.
		[ $((0$m & ~0640)) = 0 ] || fail "$f is $m, want 0640 or tighter"
		echo "ok: $f is $m (umask $([ $i = 0 ] && echo 022 || echo 000))"
	done
	for f in "p$i.app" "p$i.ctl"; do
		got=$(stat -c '%a %G' "$T/$f")
		[ "$got" = "660 $SOCKG" ] || fail "$f is '$got', want '660 $SOCKG'"
		echo "ok: socket $f is $got"
	done
done

CTL="$CUTCTL --control ipc://$T/p0.ctl"
# The reader can read.
expect_rc 0 as "$READER" $CTL status
expect_rc 0 as "$READER" $CTL list
grep -q "$id" "$T/out" || fail "list as $READER does not show $id"
expect_rc 0 as "$READER" $CTL show "$id"
echo "ok: $READER (group $SOCKG) can status, list and show"
# ... and nothing else.
expect_rc 77 as "$READER" $CTL delete "$id"
grep -q "permission denied: /cut.v1.Snapshots/Delete" "$T/err" ||
	fail "delete as $READER: $(cat "$T/err")"
grep -q "PERMISSION_DENIED" "$T/err" || fail "no status name: $(cat "$T/err")"
echo "ok: delete as $READER refused: $(cat "$T/err")"
expect_rc 77 as "$READER" $CTL snapshot
grep -q "permission denied: /cut.v1.Snapshots/Start starts a snapshot" \
	"$T/err" || fail "snapshot as $READER: $(cat "$T/err")"
echo "ok: snapshot as $READER refused"
n=$(sql 0 "SELECT count(*) FROM snapshots")
[ "$n" = 1 ] || fail "$n snapshots after the refusals, want 1"
[ "$(sql 0 "SELECT status FROM snapshots WHERE id = '$id'")" = complete ] ||
	fail "$id changed after a refused delete"
echo "ok: $id is still there, complete"
denied=$($CUTCTL --control "ipc://$T/p0.ctl" --json status |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["calls_denied"])')
[ "$denied" = 2 ] || fail "status says $denied calls denied, want 2"

# A user outside socket_group cannot connect at all: permission denied
# (77) with whose the socket is, not "transport error" (70, as it was).
# First the test directory ($T, 0750, group $SOCKG) stops the user, then,
# opened to others, the socket itself (0660, group $SOCKG).
expect_rc 77 as "$OUTSIDER" $CTL status
grep -q "^cutctl: permission denied: cannot connect to ipc://$T/p0.ctl: the directory $T is mode 0750, owner root, group $SOCKG: only the daemon's user, root and members of group $SOCKG (socket_group in the cluster file) may connect$" "$T/err" ||
	fail "status as $OUTSIDER: $(cat "$T/err")"
grep -q "transport error" "$T/err" && fail "still a transport error: $(cat "$T/err")"
echo "ok: $OUTSIDER (not in $SOCKG), stopped by the directory: $(cat "$T/err")"
chmod 0751 "$T" || fail "chmod $T"
expect_rc 77 as "$OUTSIDER" $CTL --json list
python3 - "$T/err" "$T" "$SOCKG" <<'PY' || fail "list --json as $OUTSIDER: $(cat "$T/err")"
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert e["code"] is None and e["exit_status"] == 77, e
assert e["message"].startswith("permission denied: cannot connect to ipc://%s/p0.ctl: "
                                "the socket %s/p0.ctl is mode 0660, owner root, group %s:"
                                % (sys.argv[2], sys.argv[2], sys.argv[3])), e
PY
chmod 0750 "$T" || fail "chmod $T"
echo "ok: $OUTSIDER, stopped by the socket: $(cat "$T/err" | tr -d '\n')"

# Members of the admin group may start and delete: by a supplementary
# group, and by the primary one.
expect_rc 0 as "$ADMIN" $CTL snapshot --wait
id2=$(sql 0 "SELECT id FROM snapshots WHERE id != '$id' ORDER BY started_ms DESC LIMIT 1")
[ -n "$id2" ] || fail "no snapshot started by $ADMIN"
expect_rc 0 as "$ADMIN" $CTL delete "$id2"
echo "ok: $ADMIN (supplementary group $ADMG) started and deleted $id2"
expect_rc 0 as "$PRIMARY" $CTL snapshot --wait
id3=$(sql 0 "SELECT id FROM snapshots WHERE id != '$id' ORDER BY started_ms DESC LIMIT 1")
expect_rc 0 as "$PRIMARY" $CTL delete "$id3"
echo "ok: $PRIMARY (primary group $ADMG) started and deleted $id3"
# Root may delete.
expect_rc 0 $CTL delete "$id"
n=$(sql 0 "SELECT count(*) FROM snapshots")
[ "$n" = 0 ] || fail "$n snapshots left, want 0"
echo "ok: root deleted $id"

# The connected application's user may start snapshots (libcut's
# cut_snapshot_start), not delete: run p1's application as the reader.
kill "$APP_1" 2>/dev/null
wait "$APP_1" 2>/dev/null
runuser -u "$READER" -- "$TOKENBANK" --app "ipc://$T/p1.app" \
	--control "ipc://$T/p1.ctl" --node p1 --balance 26 --seed 2 --rate 50 \
	>/dev/null 2>>"$T/tokenbank-p1.log" &
PIDS="$PIDS $!"
wait_for "$CUTCTL --control ipc://$T/p1.ctl --json status | grep -q '\"app_connected\": true'" 10 ||
	fail "p1's application did not connect as $READER"
expect_rc 0 as "$READER" $CUTCTL --control "ipc://$T/p1.ctl" snapshot --wait
echo "ok: $READER, the user of p1's application, started a snapshot at p1"
expect_rc 77 as "$READER" $CTL snapshot
echo "ok: ... but not at p0, whose application is root's"

# A daemon that is not root: run as the reader, with its own group as
# socket_group (no chown needed) it comes up and its own user may delete;
# with a group it is not in, it says so and exits 69.
O=$T/own
mkdir "$O" && chown "$READER:$SOCKG" "$O" || fail "cannot make $O"
own_ini() {
	printf '[cluster]\nname = own%s\nrun_dir = %s\nstate_dir = %s\ndeadline_ms = 1000\n' "$S" "$O" "$O"
	printf 'socket_group = %s\n[node q0]\npeer = tcp://127.0.0.1:%s\n' \
		"$1" $((BASE + 7))
}
own_ini "$ADMG" >"$T/own.ini"
as "$READER" "$CUTD" --cluster "$T/own.ini" --node q0 >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 69 ] || fail "cutd as $READER with socket_group $ADMG exited $rc, want 69"
grep -q "cannot give $O/q0.app to group $ADMG: Operation not permitted" "$T/err" ||
	fail "unexpected message: $(cat "$T/err")"
echo "ok: a daemon outside socket_group says so: $(grep cannot "$T/err")"
own_ini "$SOCKG" >"$T/own.ini"
runuser -u "$READER" -- "$CUTD" --cluster "$T/own.ini" --node q0 \
	2>>"$T/cutd-q0.log" &
PIDS="$PIDS $!"
OCTL="$CUTCTL --control ipc://$O/q0.ctl"
wait_for "$OCTL status" 10 || fail "q0 did not come up as $READER"
[ "$(stat -c '%a %U %G' "$O/q0.ctl")" = "660 $READER $SOCKG" ] ||
	fail "q0.ctl is $(stat -c '%a %U %G' "$O/q0.ctl")"
expect_rc 1 as "$READER" $OCTL snapshot --wait # aborted: no application
oid=$(as "$READER" $OCTL --json list | python3 -c '
import json, sys
print(json.load(sys.stdin)["snapshots"][0]["id"])')
expect_rc 77 as "$ADMIN" $OCTL delete "$oid"
expect_rc 0 as "$READER" $OCTL delete "$oid"
echo "ok: q0, run by $READER, lets $READER delete $oid and not $ADMIN (no admin_group)"
pass "local permissions"
