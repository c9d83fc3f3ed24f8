#!/bin/sh
# The installed tree is enough to use cutd: `cmake --install` of the build
# directory BIN into a staging prefix puts every promised file there, libcut
# exports exactly the functions of cut/cut.h under its SONAME, a program
# builds out of tree against the staged files with pkg-config and with
# find_package(cut), and both builds take a consistent snapshot through the
# staged cutd.  The manual pages render without warnings when man (or groff)
# is there to render them.

HERE=$(cd "$(dirname "$0")" && pwd)
# The temporary directory, cleanup (SIGTERM, then SIGKILL after 5 s) and
# fail() are the integration tests' own.
. "$HERE/../integration/lib.sh"
STAGE=$T/stage

# The build's settings, from its cache.
cache() { sed -n "s/^$1:[A-Z]*=//p" "$BIN/CMakeCache.txt"; }
CC=$(cache CMAKE_C_COMPILER)
SAN=""
[ "$(cache CUT_SANITIZE)" = ON ] && SAN="-fsanitize=address,undefined"
for d in BINDIR SBINDIR LIBDIR INCLUDEDIR MANDIR; do
	v=$(cache "CMAKE_INSTALL_$d")
	# GNUInstallDirs leaves MANDIR empty in the cache for DATAROOTDIR/man.
	[ "$d" = MANDIR ] && [ -z "$v" ] && v=$(cache CMAKE_INSTALL_DATAROOTDIR)/man
	case "$v" in
	/* | "") fail "CMAKE_INSTALL_$d is '$v': cannot stage it" ;;
	esac
	eval "$d=\$STAGE/\$v"
done

cmake --install "$BIN" --prefix "$STAGE" >"$T/install.log" 2>&1 ||
	fail "cmake --install"

# Every promised file.
for f in "$SBINDIR/cutd" "$BINDIR/cutctl" "$BINDIR/cutlab"; do
	[ -x "$f" ] || fail "$f missing or not executable"
done
for f in "$INCLUDEDIR/cut/cut.h" "$LIBDIR/pkgconfig/cut.pc" \
	"$LIBDIR/cmake/cut/cutConfig.cmake" \
	"$LIBDIR/cmake/cut/cutConfigVersion.cmake" \
	"$STAGE/lib/systemd/system/cutd@.service" \
	"$MANDIR/man8/cutd.8" "$MANDIR/man1/cutctl.1" \
	"$MANDIR/man1/cutlab.1" "$MANDIR/man3/libcut.3"; do
	[ -s "$f" ] || fail "$f missing or empty"
done
# A page per exported function, and the bash completion.
for s in $(nm -D --defined-only "$LIBDIR/libcut.so" | awk '$2 == "T" { print $3 }'); do
	[ -s "$MANDIR/man3/$s.3" ] || fail "no page $MANDIR/man3/$s.3"
done
[ -s "$STAGE/$(cache CMAKE_INSTALL_DATAROOTDIR)/bash-completion/completions/cutctl" ] ||
	fail "the bash completion is not installed"
# The installed text files name installed paths, never the build tree.
if grep -rlF "$BIN" "$STAGE" --include='*.pc' --include='*.cmake' \
	--include='*.service' >/dev/null; then
	fail "an installed file names the build directory"
fi

# The unit starts the installed daemon.
unit=$STAGE/lib/systemd/system/cutd@.service
grep -q "^ExecStart=$SBINDIR/cutd " "$unit" ||
	fail "the unit's ExecStart is not $SBINDIR/cutd: $(grep ^ExecStart "$unit")"

# pkg-config: only the staged directory, so that cut.pc must stand alone
# (Debian's nng has no .pc file to require).
PKG_CONFIG_PATH="" PKG_CONFIG_LIBDIR=$LIBDIR/pkgconfig
export PKG_CONFIG_PATH PKG_CONFIG_LIBDIR
version=$(pkg-config --modversion cut) || fail "pkg-config cannot use cut.pc"
flags=$(pkg-config --cflags --libs cut) || fail "pkg-config --cflags --libs"
case "$flags" in *nng*) fail "cut.pc gives nng to its users: $flags" ;; esac
grep -q "^#define CUT_VERSION *\"$version\"" "$INCLUDEDIR/cut/cut.h" ||
	fail "cut.h's CUT_VERSION is not cut.pc's $version"

# The library: the SONAME names the major version, the links lead to the
# real file, and the dynamic symbols are exactly the functions cut.h
# declares.
real=$LIBDIR/libcut.so.$version
soname=libcut.so.${version%%.*}
if [ ! -f "$real" ] || [ -L "$real" ]; then fail "$real is not a file"; fi
[ "$(readlink "$LIBDIR/$soname")" = "libcut.so.$version" ] ||
	fail "$soname does not link to libcut.so.$version"
[ "$(readlink "$LIBDIR/libcut.so")" = "$soname" ] ||
	fail "libcut.so does not link to $soname"
readelf -d "$real" | grep -q "(SONAME).*\[$soname\]" ||
	fail "the SONAME of $real is not $soname"
nm -D --defined-only "$real" | awk '{print $3}' | sort >"$T/exported"
grep -o '\bcut_[a-z0-9_]*(' "$INCLUDEDIR/cut/cut.h" | tr -d '(' |
	sort -u >"$T/declared"
[ -s "$T/exported" ] || fail "libcut exports nothing"
diff "$T/declared" "$T/exported" >"$T/symbols.log" ||
	fail "libcut's exports differ from cut.h (< declared only, > exported only)"
echo "ok: installed, libcut $version ($soname) exports the $(wc -l <"$T/exported") functions of cut/cut.h"

# Build hello.c out of tree, both ways.
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror $SAN -o "$T/hello-pc" \
	"$HERE/hello.c" $flags 2>"$T/build-pc.log" ||
	fail "building with pkg-config ($flags)"
LD_LIBRARY_PATH=$LIBDIR ldd "$T/hello-pc" | grep -q "libcut.so.* => $LIBDIR/" ||
	fail "hello-pc does not load the staged libcut"
cmake -S "$HERE/consumer" -B "$T/consumer" -DCMAKE_PREFIX_PATH="$STAGE" \
	-DEXPECTED_CUT_DIR="$LIBDIR/cmake/cut" -DCMAKE_C_COMPILER="$CC" \
	-DCMAKE_C_FLAGS="$SAN" >"$T/build-cmake.log" 2>&1 ||
	fail "configuring with find_package(cut)"
cmake --build "$T/consumer" >>"$T/build-cmake.log" 2>&1 ||
	fail "building with find_package(cut)"
ldd "$T/consumer/hello" | grep -q "libcut.so.* => $LIBDIR/" ||
	fail "the find_package(cut) build does not load the staged libcut"
echo "ok: hello built with pkg-config and with find_package(cut)"

# One staged daemon, a cluster of one node, on the first port of the
# block this test holds (lib.sh).
port=$BASE
cat >"$T/cluster.ini" <<EOT
[cluster]
name = install$$
run_dir = $T
state_dir = $T

[node a]
peer = tcp://127.0.0.1:$port
EOT
"$SBINDIR/cutd" --cluster "$T/cluster.ini" --node a 2>"$T/cutd.log" &
DAEMON=$!
PIDS="$PIDS $DAEMON"
i=0
until "$BINDIR/cutctl" --control "ipc://$T/a.ctl" status >/dev/null 2>&1; do
	kill -0 "$DAEMON" 2>/dev/null || fail "cutd exited"
	[ $i -lt 100 ] || fail "cutd did not come up in 10 s"
	sleep 0.1
	i=$((i + 1))
done

LD_LIBRARY_PATH=$LIBDIR timeout 30 "$T/hello-pc" "ipc://$T/a.app" \
	"ipc://$T/a.ctl" a 2>"$T/hello-pc.log" ||
	fail "hello (pkg-config build) against cutd"
timeout 30 "$T/consumer/hello" "ipc://$T/a.app" "ipc://$T/a.ctl" a \
	2>"$T/hello-cmake.log" ||
	fail "hello (find_package build) against cutd"

# The manual pages: man(1) warns about what groff finds wrong; lexgrog
# checks that the NAME line is one whatis(1) and apropos(1) can index.
pages="$MANDIR/man8/cutd.8 $MANDIR/man1/cutctl.1 $MANDIR/man1/cutlab.1
$MANDIR/man3/libcut.3 $(ls "$MANDIR"/man3/cut_*.3)"
if command -v man >/dev/null 2>&1; then
	for p in $pages; do
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
		[ -z "$w" ] || fail "man warns about $p: $w"
		if command -v lexgrog >/dev/null 2>&1; then
			lexgrog "$p" >/dev/null 2>&1 || fail "lexgrog cannot parse $p"
		fi
	done
	echo "ok: the manual pages render without warnings"
elif command -v groff >/dev/null 2>&1; then
	for p in $pages; do
		w=$(groff -mandoc -Tutf8 -ww -z "$p" 2>&1)
		[ -z "$w" ] || fail "groff warns about $p: $w"
	done
	echo "ok: the manual pages render without warnings"
else
	echo "skip: neither man nor groff is installed; pages not rendered"
fi
echo "PASS: install"
