#!/bin/sh
# The manual (issue 11, point 5): every function libcut.so exports has a
# page generated from cut.h (deploy/man/cutman.py, at build time), every
# page renders without a warning (groff -ww, and man -l), and a function
# added to the header gets a page with no list to edit.
set -u
: "${BIN:?BIN must name the build directory}"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/cutd-man.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
MAN3=$BIN/man/man3
LIB=$BIN/libclient/libcut.so
command -v nm >/dev/null 2>&1 || fail "nm is missing (binutils)"
command -v groff >/dev/null 2>&1 || fail "groff is missing (deploy/deps.sh installs groff-base)"
command -v python3 >/dev/null 2>&1 || fail "python3 is missing"

# render PAGE: no warning from groff, nor from man when it is there.
render() {
	groff -mandoc -Tutf8 -ww -z "$1" 2>"$T/groff.err" ||
		fail "groff cannot render $1: $(cat "$T/groff.err")"
	[ -s "$T/groff.err" ] && fail "groff warns on $1: $(cat "$T/groff.err")"
	if command -v man >/dev/null 2>&1; then
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$1" >"$T/man.out" 2>"$T/man.err" ||
			fail "man -l $1: $(cat "$T/man.err")"
		[ -s "$T/man.err" ] && fail "man -l warns on $1: $(cat "$T/man.err")"
		[ -s "$T/man.out" ] || fail "man -l $1 wrote nothing"
	fi
	# whatis(1) and apropos(1) can index its NAME line.
	if command -v lexgrog >/dev/null 2>&1; then
		lexgrog "$1" >/dev/null 2>&1 || fail "lexgrog cannot parse $1"
	fi
	return 0
}

syms=$(nm -D --defined-only "$LIB" | awk '$2 == "T" { print $3 }')
[ -n "$syms" ] || fail "$LIB exports no function"
n=0
for s in $syms; do
	[ -f "$MAN3/$s.3" ] || fail "$s has no page in $MAN3"
	grep -q "^\.Fn $s " "$MAN3/$s.3" || fail "$s.3 does not show $s in its synopsis"
	render "$MAN3/$s.3"
	n=$((n + 1))
done
for p in "$MAN3"/*.3; do
	s=$(basename "$p" .3)
	echo "$syms" | grep -qx "$s" || fail "$p: $s is not exported by $LIB"
done
echo "ok: $n exported functions, each with a page that renders cleanly"

for p in "$SRC"/deploy/man/*.[1-8]; do
	render "$p"
done
echo "ok: $(ls "$SRC"/deploy/man/*.[1-8] | wc -l) hand-written pages render cleanly"

# A function added to the header, with a typedef: its page comes without
# an edit to the generator.
python3 - "$SRC/libclient/include/cut/cut.h" "$T/cut.h" <<'PY'
import sys
text = open(sys.argv[1]).read()
new = '''
/*
 * Called by cut_recv() when the daemon probes snapshot snapshot_id:
 * state (len bytes, borrowed for the call) is this node's recorded state.
 */
typedef int (*cut_probe_fn)(void *arg, const char *snapshot_id,
                            const void *state, size_t len);

/*
 * Registers fn (with arg) as c's probe callback.  Returns 0, or
 * CUT_EINVAL if c is NULL.
 */
CUT_API int cut_set_probe_callback(struct cut *c, cut_probe_fn fn,
                                   void *arg);
'''
at = text.rindex("#ifdef __cplusplus")
text = text[:at] + new + "\n" + text[at:]
# And one that goes away: its page must go too.
text = text.replace("CUT_API uint64_t cut_msg_seq(const struct cut_msg *m);", "")
open(sys.argv[2], "w").write(text)
PY
mkdir "$T/man3"
cp "$MAN3/cut_msg_seq.3" "$T/man3/"
python3 "$SRC/deploy/man/cutman.py" --date "January 1, 2027" "$T/cut.h" "$T/man3" ||
	fail "cutman.py failed on the header with a new function"
P=$T/man3/cut_set_probe_callback.3
[ -f "$P" ] || fail "no page for the new function"
grep -q '^\.Vt typedef int (\*cut_probe_fn)' "$P" || fail "the typedef is not in the synopsis: $(cat "$P")"
grep -q '^\.Fn cut_set_probe_callback "struct cut \*c" "cut_probe_fn fn" "void \*arg"$' "$P" ||
	fail "bad synopsis: $(cat "$P")"
grep -A1 '^\.Sh RETURN VALUES' "$P" | grep -q '^Returns 0, or CUT_EINVAL if c is NULL\.$' ||
	fail "bad return values: $(cat "$P")"
grep -q '^\.Xr cut_recv 3' "$P" || fail "SEE ALSO misses cut_recv(3): $(cat "$P")"
grep -q '^\.Dd January 1, 2027$' "$P" || fail "--date ignored"
render "$P"
[ -f "$T/man3/cut_msg_seq.3" ] && fail "the page of a removed function stayed"
[ "$(ls "$T/man3" | wc -l)" = "$(ls "$MAN3" | wc -l)" ] ||
	fail "$(ls "$T/man3" | wc -l) pages for a header with as many functions as $MAN3's $(ls "$MAN3" | wc -l)"
echo "ok: a new function gets its page, a removed one loses it"
echo "PASS: the manual"
