/*
 * test_tls.c - daemon/shell/tls.c: what tls_open() refuses (keys others may read,
 * missing files, a key that is not the certificate's) and what it does not
 * need (other nodes' keys), and the signed hello over a real nng TLS
 * connection on loopback: a good hello binds the pipe, and a hello for the
 * wrong name, a replayed hello, a batch from another node on a bound pipe
 * and a batch without a hello on a fresh pipe are refused.
 *
 * Certificates come from deploy/make-certs.sh (MAKE_CERTS, set by CMake),
 * made once per test in a temporary directory.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "cutproto.h"
#include "log.h"
#include "tls.h"

static char dir[] = "/tmp/test_tls.XXXXXX";
static int port;

/* 1 if nothing listens on 127.0.0.1:p (a listener there could bind). */
static int
port_free(int p)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd, on = 1, ok;

	a.sin_port = htons((uint16_t)p);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* The first port of a block of 64 this process holds, as the integration
 * tests take theirs (tests/integration/lib.sh, claim_ports): flock() on
 * /tmp/cutd-ports/block-PORT.lock, held until the process exits, so that
 * two copies of the suite on one machine never share a port. */
static int
claim_port(void)
{
	const char *locks = getenv("CUT_PORT_LOCKS");
	char f[512];
	int nblocks = (32768 - 20000) / 64, k, fd;

	if (locks == NULL || locks[0] == '\0')
		locks = "/tmp/cutd-ports";
	(void)mkdir(locks, 01777);
	(void)chmod(locks, 01777);
	k = (int)(getpid() % nblocks);
	for (int tries = 0; tries < nblocks; tries++, k = (k + 1) % nblocks) {
		int b = 20000 + k * 64;
		snprintf(f, sizeof(f), "%s/block-%d.lock", locks, b);
		if ((fd = open(f, O_RDONLY | O_CREAT | O_CLOEXEC, 0666)) < 0)
			continue;
		(void)fchmod(fd, 0666);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && port_free(b) &&
		    port_free(b + 1) && port_free(b + 2))
			return b; /* fd stays open: the lock lasts */
		close(fd);
	}
	cr_assert_fail("no free block of 64 ports in 20000-32767");
	return -1;
}

static void
setup(void)
{
	char cmd[512];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
	         "sh %s %s/c p0 p1 p2 >/dev/null && "
	         "sh %s %s/other p1 >/dev/null",
	         MAKE_CERTS, dir, MAKE_CERTS, dir);
	cr_assert_eq(system(cmd), 0, "make-certs.sh failed");
	port = claim_port();
	log_init(LOG_DEBUG);
}

static void
teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(tls, .init = setup, .fini = teardown);

/* Writes a three-node TLS cluster file; key0 and cert0 override p0's. */
static struct config *
cluster(const char *cert0, const char *key0)
{
	char path[256], def_cert[256], def_key[256];
	struct config *cfg = NULL;
	char *errs = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.ini", dir);
	snprintf(def_cert, sizeof(def_cert), "%s/c/p0.pem", dir);
	snprintf(def_key, sizeof(def_key), "%s/c/p0.key", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "[cluster]\nname = t\ntls_ca = %s/c/ca.pem\n", dir);
	fprintf(f, "[node p0]\npeer = tls+tcp://127.0.0.1:%d\n", port);
	fprintf(f, "tls_cert = %s\ntls_key = %s\n", cert0 ? cert0 : def_cert,
	        key0 ? key0 : def_key);
	for (int i = 1; i < 3; i++) {
		fprintf(f, "[node p%d]\npeer = tls+tcp://127.0.0.1:%d\n", i,
		        port + i);
		fprintf(f, "tls_cert = %s/c/p%d.pem\ntls_key = %s/c/p%d.key\n",
		        dir, i, dir, i);
	}
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(config_load(path, &cfg, &errs), 0, "%s", errs);
	return cfg;
}

static void
path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* tls_open(cfg, self) must fail with E_CONFIG and an error holding
 * want. */
static void
expect_refused(struct config *cfg, size_t self, const char *want)
{
	struct tls *t = NULL;
	char err[512] = "";

	cr_assert_eq(tls_open(cfg, self, &t, err, sizeof(err)), E_CONFIG);
	cr_assert_null(t);
	cr_assert_not_null(strstr(err, want), "error: %s\nwant: %s", err, want);
}

Test(tls, refuses_a_key_others_may_read)
{
	char key[256], want[512];
	struct config *cfg;

	path(key, sizeof(key), "c/p0.key");
	cr_assert_eq(chmod(key, 0644), 0);
	cfg = cluster(NULL, NULL);
	snprintf(want, sizeof(want),
	         "[node p0] tls_key %s may be read by group or others (mode "
	         "0644); make it 0600",
	         key);
	expect_refused(cfg, 0, want);
	cr_assert_eq(chmod(key, 0640), 0);
	expect_refused(cfg, 0, "(mode 0640)");
	config_free(cfg);
}

Test(tls, refuses_missing_and_mismatched_files)
{
	char key1[256];
	struct config *cfg = cluster(NULL, "/nonexistent/p0.key");

	expect_refused(cfg, 0,
	               "cannot read tls_key /nonexistent/p0.key: No such file");
	config_free(cfg);
	path(key1, sizeof(key1), "c/p1.key");
	cfg = cluster(NULL, key1);
	expect_refused(cfg, 0, "is not the key of tls_cert");
	config_free(cfg);
}

Test(tls, needs_only_its_own_key)
{
	struct config *cfg = cluster(NULL, "/nonexistent/p0.key");
	struct tls *t = NULL;
	char err[512] = "";

	cr_assert_eq(tls_open(cfg, 1, &t, err, sizeof(err)), 0, "%s", err);
	tls_free(t);
	config_free(cfg);
}

/* A listener for p0 and a dialer from p1, connected. */
struct pair {
	struct config *cfg;
	struct tls *t0, *t1;
	nng_socket s0, s1;
	nng_dialer dialer;
};

static void
connect_pair(struct pair *p, struct config *cfg)
{
	char err[512] = "", url[64];

	p->cfg = cfg;
	cr_assert_eq(tls_open(cfg, 0, &p->t0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(tls_open(cfg, 1, &p->t1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nng_pair1_open_poly(&p->s0), 0);
	cr_assert_eq(nng_pair1_open(&p->s1), 0);
	nng_socket_set_ms(p->s0, NNG_OPT_RECVTIMEO, 5000);
	nng_socket_set_ms(p->s1, NNG_OPT_SENDTIMEO, 5000);
	snprintf(url, sizeof(url), "tls+tcp://127.0.0.1:%d", port);
	cr_assert_eq(tls_listen(p->t0, p->s0, url), 0);
	cr_assert_eq(tls_dial(p->t1, p->s1, 0, url, &p->dialer), 0);
}

/* Closes the pair and frees what it holds. */
static void
pair_free(struct pair *p)
{
	nng_close(p->s1);
	nng_close(p->s0);
	tls_free(p->t1);
	tls_free(p->t0);
	config_free(p->cfg);
}

/* Sends a batch from `from` to p0 over the pair, with auth if not NULL,
 * and returns tls_admit()'s verdict on it at p0. */
static int
send_batch(struct pair *p, const char *from, uint64_t epoch,
           const Cut__V1__PeerAuth *auth)
{
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT, *got;
	size_t len;
	uint8_t *buf;
	nng_msg *msg;
	int rv;

	b.cluster = "t";
	b.from = (char *)from;
	b.to = "p0";
	b.has_epoch = 1;
	b.epoch = epoch;
	b.auth = (Cut__V1__PeerAuth *)auth;
	len = cut__v1__peer_batch__get_packed_size(&b);
	cr_assert_not_null(buf = malloc(len));
	cut__v1__peer_batch__pack(&b, buf);
	cr_assert_eq(nng_send(p->s1, buf, len, 0), 0);
	free(buf);
	cr_assert_eq(nng_recvmsg(p->s0, &msg, 0), 0);
	got = cut__v1__peer_batch__unpack(NULL, nng_msg_len(msg),
	                                  nng_msg_body(msg));
	cr_assert_not_null(got);
	rv = tls_admit(p->t0, nng_msg_get_pipe(msg), got);
	cut__v1__peer_batch__free_unpacked(got, NULL);
	nng_msg_free(msg);
	return rv;
}

Test(tls, hello_binds_the_pipe)
{
	struct pair p;
	const Cut__V1__PeerAuth *auth;
	struct tls_peer_status ps;
	struct tls_status ts;

	connect_pair(&p, cluster(NULL, NULL));
	/* Before any hello, nothing is admitted. */
	cr_assert_eq(send_batch(&p, "p1", 7, NULL), E_AUTH);
	cr_assert_eq(tls_hello(p.t1, 0, 7, 0, &auth), 0);
	cr_assert_not_null(auth);
	cr_assert_eq(send_batch(&p, "p1", 7, auth), 0);
	cr_assert_eq(send_batch(&p, "p1", 7, NULL), 0);
	tls_peer_status(p.t0, 1, &ps);
	cr_assert_eq(ps.tls, 1);
	cr_assert_eq(ps.authenticated, 1);
	cr_assert_eq(ps.failures, 0);
	/* The pipe is p1's: a batch on it claiming p2 is dropped. */
	cr_assert_eq(send_batch(&p, "p2", 7, NULL), E_AUTH);
	/* The same hello again is a replay; it closes the pipe. */
	cr_assert_eq(send_batch(&p, "p1", 7, auth), E_AUTH);
	tls_peer_status(p.t0, 1, &ps);
	cr_assert_eq(ps.failures, 1);
	cr_assert_not_null(strstr(ps.last_error, "not newer"), "%s",
	                   ps.last_error);
	tls_status(p.t0, &ts);
	cr_assert_eq(ts.unauthenticated, 3);
	pair_free(&p);
}

Test(tls, hello_for_another_name_is_refused)
{
	struct pair p;
	const Cut__V1__PeerAuth *auth;
	struct tls_peer_status ps;

	connect_pair(&p, cluster(NULL, NULL));
	/* p1 signs, with its own certificate, a hello claiming to be p2. */
	cr_assert_eq(tls_hello(p.t1, 0, 9, 0, &auth), 0);
	cr_assert_eq(send_batch(&p, "p2", 9, auth), E_AUTH);
	tls_peer_status(p.t0, 2, &ps);
	cr_assert_eq(ps.authenticated, 0);
	cr_assert_eq(ps.failures, 1);
	cr_assert_not_null(strstr(ps.last_error, "does not name it"), "%s",
	                   ps.last_error);
	pair_free(&p);
}

Test(tls, hello_with_a_changed_header_is_refused)
{
	struct pair p;
	const Cut__V1__PeerAuth *auth;
	struct tls_peer_status ps;

	connect_pair(&p, cluster(NULL, NULL));
	/* Signed for epoch 9, sent with epoch 10. */
	cr_assert_eq(tls_hello(p.t1, 0, 9, 0, &auth), 0);
	cr_assert_eq(send_batch(&p, "p1", 10, auth), E_AUTH);
	tls_peer_status(p.t0, 1, &ps);
	cr_assert_not_null(strstr(ps.last_error, "signature does not verify"),
	                   "%s", ps.last_error);
	pair_free(&p);
}
