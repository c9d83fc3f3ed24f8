#!/bin/sh
# make-certs.sh OUTDIR NODE...: makes a cluster CA (OUTDIR/ca.pem and its
# key ca.key) unless OUTDIR already has one, and for each NODE a
# certificate OUTDIR/NODE.pem signed by it, with CN and SAN DNS = NODE, and
# its key OUTDIR/NODE.key (mode 0600).  EC P-256 keys; certificates valid
# for DAYS days (default 825).  For tests and small clusters: keep ca.key
# somewhere safe, or delete it once every node has its certificate.
#
# The cluster file then names them:
#   [cluster]  tls_ca = OUTDIR/ca.pem
#   [node p0]  tls_cert = OUTDIR/p0.pem
#              tls_key = OUTDIR/p0.key
set -eu

usage() {
	echo "usage: make-certs.sh OUTDIR NODE..." >&2
	exit 64
}
[ $# -ge 2 ] || usage
out=$1
shift
command -v openssl >/dev/null 2>&1 || {
	echo "make-certs.sh: needs the openssl command (Debian: openssl)" >&2
	exit 69
}
for n in "$@"; do
	case "$n" in
	"" | *[!A-Za-z0-9_.-]*)
		echo "make-certs.sh: invalid node name '$n'" >&2
		exit 65
		;;
	esac
	[ ${#n} -le 32 ] || {
		echo "make-certs.sh: node name '$n' is longer than 32" >&2
		exit 65
	}
done

days=${DAYS:-825}
mkdir -p "$out"
umask 077
tmp=$(mktemp -d "${TMPDIR:-/tmp}/make-certs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$out/ca.pem" ]; then
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-nodes -keyout "$out/ca.key" -out "$out/ca.pem" -days "$days" \
		-subj "/CN=${CA_NAME:-cutd cluster CA}" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>"$tmp/log" || {
		cat "$tmp/log" >&2
		exit 1
	}
	chmod 644 "$out/ca.pem"
	echo "make-certs.sh: made CA $out/ca.pem"
fi
[ -f "$out/ca.key" ] || {
	echo "make-certs.sh: $out/ca.pem exists but $out/ca.key does not" >&2
	exit 66
}

for n in "$@"; do
	printf '%s\n' \
		"basicConstraints=critical,CA:FALSE" \
		"keyUsage=critical,digitalSignature" \
		"extendedKeyUsage=serverAuth,clientAuth" \
		"subjectAltName=DNS:$n" >"$tmp/ext"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$out/$n.key" -out "$tmp/$n.csr" -subj "/CN=$n" \
		2>"$tmp/log" &&
		openssl x509 -req -in "$tmp/$n.csr" -CA "$out/ca.pem" \
			-CAkey "$out/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
			-days "$days" -extfile "$tmp/ext" -out "$out/$n.pem" \
			2>"$tmp/log" || {
		cat "$tmp/log" >&2
		exit 1
	}
	chmod 600 "$out/$n.key"
	chmod 644 "$out/$n.pem"
	echo "make-certs.sh: made $out/$n.pem and $out/$n.key"
done
