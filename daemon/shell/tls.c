/*
 * tls.c - mutual TLS between daemons and the signed hello (see tls.h).
 *
 * Two libraries meet here.  nng (with mbedTLS inside) runs the TLS
 * sessions: a listener that requires a client certificate chaining to the
 * cluster's CA, and one dialer configuration per peer that requires the
 * listener's certificate to chain to the CA and to name the peer (the
 * server name is the node's name, matched against the SAN DNS names or
 * the CN).  OpenSSL's libcrypto signs and verifies the hello: X509 chain
 * and name checks and EVP signatures.  The private key is read once, here,
 * after checking that only its owner may read it, and given to both.
 *
 * What the hello guarantees: the connection it arrives on is a TLS
 * connection whose client certificate chains to the CA (nng checked it), and
 * the holder of the key of a certificate naming `from` signed this
 * cluster, from, to, both epochs, a time within HELLO_SKEW_MS of ours and a
 * nonce, the time later than any hello accepted before in the same sender
 * epoch.  It does not bind the hello to the TLS session itself (nng does
 * not expose it), so a member that was sent a hello could replay it only to
 * whom it was addressed: itself.
 *
 * nng 1.5.2 does not say why a handshake failed, nor who tried: failures
 * are counted from the dialers' and listener's statistics ("auth": a
 * certificate did not verify or the peer refused ours).  Connections that
 * close during the handshake ("other") are not counted: healthy peers'
 * reconnections make them too.
 *
 * And nng 1.5.2's listener can stop accepting for good: a connection that
 * fails its negotiation with NNG_ECLOSED (the client closed it at the
 * wrong moment) makes the listener's accept callback take that for its
 * own close (nng's src/core/listener.c, "no further action").  Later connections
 * finish their TLS handshake and SP negotiation, which is all their
 * dialer sees, and then wait unread for an accept that never comes; no
 * peer that reconnects is heard again.  So the daemon dials its own
 * listener (the probe) every PROBE_EVERY_MS, and at once when the
 * listener's "other" or "canceled" count grows: if the probe connects and
 * the listener's "accept" count does not move within PROBE_WAIT_MS, or
 * the probe cannot connect at all within PROBE_GIVEUP_MS, the listener
 * is started again (its connections close; their peers dial again).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/supplemental/tls/tls.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "nngstat.h"
#include "pipewatch.h"
#include "tls.h"

/* A hello's time may differ from ours by this much. */
#define HELLO_SKEW_MS (5 * 60 * 1000)
#define NONCE_BYTES   16
#define PEM_MAX       (64 * 1024)
#define SIG_MAX       1024
/* Repeated refusals of the same kind from one peer are logged this often. */
#define LOG_EVERY_MS 10000
/* The listener probe; see the top of the file. */
#define PROBE_EVERY_MS  5000
#define PROBE_WAIT_MS   2000
#define PROBE_GIVEUP_MS 5000

struct tls_node {
	int tls;              /* its peer URL is tls+tcp:// */
	nng_tls_config *dial; /* verifies it; NULL if plaintext */
	uint32_t bound;       /* listener pipe bound to it, 0: none */
	uint64_t hello_epoch; /* of the last hello accepted from it */
	uint64_t hello_time;  /* and its time */
	uint64_t sent_time;   /* time of our last hello to it */
	uint64_t dialer_auth; /* dialer handshake failures counted */
	uint64_t failures;
	char last_error[160];
	int64_t last_error_ms, logged_ms;
	/* Our hello to it, kept until the next. */
	Cut__V1__PeerAuth auth;
	uint8_t nonce[NONCE_BYTES];
	uint8_t sig[SIG_MAX];
};

struct tls {
	const struct config *cfg;
	size_t self;
	int listen_tls; /* our own listener is TLS */
	int any_tls;    /* some peer is TLS */
	char *ca_pem, *cert_pem, *key_pem;
	uint8_t *cert_der; /* ours, for the hello */
	size_t cert_der_len;
	EVP_PKEY *key;
	X509_STORE *store; /* the CA, for hellos */
	nng_tls_config *server;
	nng_listener listener;
	nng_socket listen_sock;
	const char *listen_url; /* borrowed from cfg */
	int listening;          /* the listener is started */
	uint64_t listener_restarts;
	uint64_t listener_stops; /* its "other" + "canceled" last seen */
	/* The probe: a socket dialing our own listener (nodes[self].dial). */
	nng_socket probe;
	int probe_open, probing;
	nng_dialer probe_dialer;
	struct pipewatch probe_conn;
	uint64_t probe_accepts; /* the listener's "accept" as it began */
	int64_t probe_ms,
	    probe_up_ms; /* when the last probe began, and connected */
	int probe_unreached_logged;
	/* Tests: CUTD_TEST_DEAF_LISTENER=1 makes the first probe see the
	 * listener's "accept" count stand still, as after nng's accept
	 * loop stopped. */
	int test_deaf;
	uint64_t listener_failures_base; /* "auth" of listeners closed */
	uint64_t listener_failures, unknown_failures, unauthenticated;
	uint64_t listener_logged; /* listener failures logged so far */
	int64_t listener_logged_ms;
	int64_t stats_ms, unauth_logged_ms;
	struct tls_node *nodes;
};

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads a PEM file of at most PEM_MAX bytes into a NUL-terminated string.
 * private: refuse it if group or others may read it. */
static int
read_pem(const char *path, int private, char **ret, char *err, size_t errlen,
         const char *what)
{
	struct stat st;
	char *buf;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "cannot read %s %s: %s", what, path,
		         strerror(errno));
		return E_CONFIG;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > PEM_MAX) {
		snprintf(err, errlen, "%s %s is not a PEM file", what, path);
		close(fd);
		return E_CONFIG;
	}
	if (private && (st.st_mode & 077) != 0) {
		snprintf(err, errlen,
		         "%s %s may be read by group or others (mode %04o); "
		         "make it 0600 (chmod 600 %s)",
		         what, path, (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return E_CONFIG;
	}
	if ((buf = calloc(1, (size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return E_NOMEM;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		snprintf(err, errlen, "cannot read %s %s", what, path);
		free(buf);
		return E_CONFIG;
	}
	*ret = buf;
	return 0;
}

static X509 *
pem_cert(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;

	BIO_free(bio);
	return x;
}

/* Verifies that x chains to the CA in store; 0 or a reason. */
static const char *
verify_chain(X509_STORE *store, X509 *x)
{
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	const char *why = "out of memory";

	if (ctx != NULL && X509_STORE_CTX_init(ctx, store, x, NULL) == 1) {
		X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
		why = X509_verify_cert(ctx) == 1
		          ? NULL
		          : X509_verify_cert_error_string(
		                X509_STORE_CTX_get_error(ctx));
	}
	X509_STORE_CTX_free(ctx);
	return why;
}

/* Loads the CA into an X509 store and self's certificate and key. */
static int
load_identity(struct tls *t, char *err, size_t errlen)
{
	const struct config_node *me = &t->cfg->nodes[t->self];
	X509 *ca = pem_cert(t->ca_pem), *x = pem_cert(t->cert_pem);
	BIO *bio = BIO_new_mem_buf(t->key_pem, -1);
	const char *why;
	uint8_t *p;
	int rv = E_CONFIG, len;

	t->key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (ca == NULL || (t->store = X509_STORE_new()) == NULL ||
	    X509_STORE_add_cert(t->store, ca) != 1)
		snprintf(err, errlen, "tls_ca %s holds no PEM certificate",
		         t->cfg->tls_ca);
	else if (x == NULL)
		snprintf(err, errlen, "tls_cert %s holds no PEM certificate",
		         me->tls_cert);
	else if (t->key == NULL)
		snprintf(err, errlen, "tls_key %s holds no PEM private key",
		         me->tls_key);
	else if (X509_check_private_key(x, t->key) != 1)
		snprintf(err, errlen,
		         "tls_key %s is not the key of tls_cert %s",
		         me->tls_key, me->tls_cert);
	else if ((len = i2d_X509(x, NULL)) <= 0 ||
	         (t->cert_der = malloc((size_t)len)) == NULL)
		rv = E_NOMEM;
	else {
		p = t->cert_der;
		t->cert_der_len = (size_t)i2d_X509(x, &p);
		rv = 0;
		/* Not fatal: the peers will refuse it, and say so. */
		if ((why = verify_chain(t->store, x)) != NULL)
			log_warnx("tls_cert %s does not verify against tls_ca "
			          "%s (%s): peers will refuse this node",
			          me->tls_cert, t->cfg->tls_ca, why);
		else if (X509_check_host(x, me->name, 0, 0, NULL) != 1)
			log_warnx("tls_cert %s does not name node %s: peers "
			          "will refuse this node",
			          me->tls_cert, me->name);
	}
	X509_free(ca);
	X509_free(x);
	return rv;
}

/* An nng TLS configuration with the CA and our certificate and key;
 * server_name NULL for the listener's. */
static int
nng_config(struct tls *t, const char *server_name, nng_tls_config **ret)
{
	nng_tls_config *c;
	int rv;

	if ((rv = nng_tls_config_alloc(&c, server_name
	                                       ? NNG_TLS_MODE_CLIENT
	                                       : NNG_TLS_MODE_SERVER)) != 0)
		return rv;
	if ((rv = nng_tls_config_ca_chain(c, t->ca_pem, NULL)) != 0 ||
	    (rv = nng_tls_config_own_cert(c, t->cert_pem, t->key_pem, NULL)) !=
	        0 ||
	    (rv = nng_tls_config_auth_mode(c, NNG_TLS_AUTH_MODE_REQUIRED)) !=
	        0 ||
	    (server_name != NULL &&
	     (rv = nng_tls_config_server_name(c, server_name)) != 0)) {
		nng_tls_config_free(c);
		return rv;
	}
	*ret = c;
	return 0;
}

static int
make_configs(struct tls *t, char *err, size_t errlen)
{
	const struct config *cfg = t->cfg;
	int rv;

	if ((rv = nng_config(t, NULL, &t->server)) != 0)
		goto fail;
	/* Ours is the probe's, which dials our own listener. */
	for (size_t v = 0; v < cfg->nnodes; v++) {
		if (v == t->self ? !t->listen_tls : !t->nodes[v].tls)
			continue;
		if ((rv = nng_config(t, cfg->nodes[v].name,
		                     &t->nodes[v].dial)) != 0)
			goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "nng refuses the TLS settings: %s",
	         nng_strerror(rv));
	return E_TRANSPORT;
}

int
tls_open(const struct config *cfg, size_t self, struct tls **ret_tls, char *err,
         size_t errlen)
{
	const struct config_node *me = &cfg->nodes[self];
	struct tls *t;
	char why[400] = "out of memory";
	int rv = E_NOMEM;

	if ((t = calloc(1, sizeof(*t))) == NULL ||
	    (t->nodes = calloc(cfg->nnodes, sizeof(*t->nodes))) == NULL)
		goto fail;
	t->cfg = cfg;
	t->test_deaf = getenv("CUTD_TEST_DEAF_LISTENER") != NULL;
	t->self = self;
	t->listen_tls = config_is_tls(me->peer);
	for (size_t v = 0; v < cfg->nnodes; v++) {
		t->nodes[v].tls = config_is_tls(cfg->nodes[v].peer);
		t->any_tls |= t->nodes[v].tls;
	}
	if (t->any_tls && ((rv = read_pem(cfg->tls_ca, 0, &t->ca_pem, why,
	                                  sizeof(why), "tls_ca")) != 0 ||
	                   (rv = read_pem(me->tls_cert, 0, &t->cert_pem, why,
	                                  sizeof(why), "tls_cert")) != 0 ||
	                   (rv = read_pem(me->tls_key, 1, &t->key_pem, why,
	                                  sizeof(why), "tls_key")) != 0 ||
	                   (rv = load_identity(t, why, sizeof(why))) != 0 ||
	                   (rv = make_configs(t, why, sizeof(why))) != 0))
		goto fail;
	*ret_tls = t;
	return 0;
fail:
	snprintf(err, errlen, "%s: [node %s] %s", cfg->path, me->name, why);
	tls_free(t);
	return rv;
}

void
tls_free(struct tls *t)
{
	if (t == NULL)
		return;
	if (t->probe_open)
		nng_close(t->probe);
	for (size_t v = 0; t->nodes != NULL && v < t->cfg->nnodes; v++)
		if (t->nodes[v].dial != NULL)
			nng_tls_config_free(t->nodes[v].dial);
	if (t->server != NULL)
		nng_tls_config_free(t->server);
	EVP_PKEY_free(t->key);
	X509_STORE_free(t->store);
	if (t->key_pem != NULL)
		OPENSSL_cleanse(t->key_pem, strlen(t->key_pem));
	free(t->key_pem);
	free(t->cert_pem);
	free(t->ca_pem);
	free(t->cert_der);
	free(t->nodes);
	free(t);
}

/* Creates and starts the TLS listener on t->listen_sock. */
static int
start_listener(struct tls *t)
{
	int rv;

	if ((rv = nng_listener_create(&t->listener, t->listen_sock,
	                              t->listen_url)) != 0)
		return rv;
	if ((rv = nng_listener_set_ptr(t->listener, NNG_OPT_TLS_CONFIG,
	                               t->server)) != 0 ||
	    (rv = nng_listener_start(t->listener, 0)) != 0) {
		nng_listener_close(t->listener);
		return rv;
	}
	t->listening = 1;
	return 0;
}

int
tls_listen(struct tls *t, nng_socket sock, const char *url)
{
	if (!t->listen_tls)
		return nng_listen(sock, url, NULL, 0);
	t->listen_sock = sock;
	t->listen_url = url;
	return start_listener(t);
}

int
tls_dial(struct tls *t, nng_socket sock, size_t node, const char *url,
         nng_dialer *ret_dialer)
{
	nng_dialer dialer;
	int rv;

	if (!t->nodes[node].tls)
		return nng_dial(sock, url, ret_dialer, NNG_FLAG_NONBLOCK);
	if ((rv = nng_dialer_create(&dialer, sock, url)) != 0)
		return rv;
	if ((rv = nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG,
	                             t->nodes[node].dial)) != 0 ||
	    (rv = nng_dialer_start(dialer, NNG_FLAG_NONBLOCK)) != 0) {
		nng_dialer_close(dialer);
		return rv;
	}
	*ret_dialer = dialer;
	return 0;
}

/* Records count refusals concerning node: counted, shown in status,
 * logged unless the same reason was logged within LOG_EVERY_MS. */
static void refused(struct tls *t, size_t node, uint64_t count, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));

static void
refused(struct tls *t, size_t node, uint64_t count, const char *fmt, ...)
{
	struct tls_node *n = &t->nodes[node];
	char why[sizeof(n->last_error)];
	int64_t now = wall_ms();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	n->failures += count;
	n->last_error_ms = now;
	if (strcmp(why, n->last_error) == 0 &&
	    now - n->logged_ms < LOG_EVERY_MS)
		return;
	snprintf(n->last_error, sizeof(n->last_error), "%s", why);
	n->logged_ms = now;
	log_warnx("TLS: %s: %s", t->cfg->nodes[node].name, why);
}

void
tls_dialer_done(struct tls *t, size_t node, nng_dialer dialer)
{
	struct tls_node *n = &t->nodes[node];
	nng_stat *all;
	uint64_t auth;

	if (!n->tls || nng_stats_get(&all) != 0)
		return;
	auth = nngstat_value(
	    nngstat_scope(all, "dialer", nng_dialer_id(dialer)), "auth");
	nng_stats_free(all);
	if (auth > 0)
		refused(t, node, auth,
		        "TLS handshake of this node's dialer failed: its "
		        "certificate does not chain to tls_ca or does not name "
		        "it, or it refused ours");
}

/* Starts the listener again: its accept loop has stopped (see the top of
 * the file).  Its connections close with it. */
static void
restart_listener(struct tls *t, const char *why)
{
	int rv;

	log_notice("TLS: this node's listener %s: listening again (the "
	           "peers connected to it connect again)",
	           why);
	nng_listener_close(t->listener);
	t->listening = 0;
	t->listener_stops = 0;
	t->listener_restarts++;
	if ((rv = start_listener(t)) != 0)
		log_err("TLS: cannot listen on %s again: %s (trying again in "
		        "1 s)",
		        t->listen_url, nng_strerror(rv));
}

static void
probe_start(struct tls *t, uint64_t accepts, int64_t now)
{
	int rv;

	if (!t->probe_open) {
		if (nng_pair1_open(&t->probe) != 0)
			return;
		t->probe_open = 1;
		nng_socket_set_size(t->probe, NNG_OPT_RECVMAXSZ, 1024);
		nng_socket_set_ms(t->probe, NNG_OPT_RECONNMINT, 1000);
		nng_socket_set_ms(t->probe, NNG_OPT_RECONNMAXT, 1000);
		if (pipewatch_start(&t->probe_conn, t->probe) != 0)
			return;
	}
	/* Only a connection made from now on is this probe's. */
	(void)pipewatch_take_added(&t->probe_conn);
	if ((rv = nng_dialer_create(&t->probe_dialer, t->probe,
	                            t->listen_url)) != 0 ||
	    (rv = nng_dialer_set_ptr(t->probe_dialer, NNG_OPT_TLS_CONFIG,
	                             t->nodes[t->self].dial)) != 0 ||
	    (rv = nng_dialer_start(t->probe_dialer, NNG_FLAG_NONBLOCK)) != 0) {
		nng_dialer_close(t->probe_dialer);
		return;
	}
	t->probing = 1;
	t->probe_accepts = accepts;
	t->probe_ms = now;
	t->probe_up_ms = 0;
}

/* One step of a probe running: whether the listener took its
 * connection. */
static void
probe_step(struct tls *t, uint64_t accepts, int64_t now)
{
	const char *dead = NULL;

	if (t->probe_up_ms == 0 && pipewatch_take_added(&t->probe_conn))
		t->probe_up_ms = now;
	if (t->test_deaf)
		accepts = t->probe_accepts;
	if (t->probe_up_ms != 0 && accepts > t->probe_accepts) {
		/* Alive.  The connection is set up: closing it now cannot
		 * be a close during its negotiation. */
	} else if (t->probe_up_ms != 0 &&
	           now - t->probe_up_ms >= PROBE_WAIT_MS) {
		dead = "takes no connection (nng 1.5.2 stops accepting after "
		       "one closed while it negotiated)";
	} else if (t->probe_up_ms == 0 &&
	           now - t->probe_ms >= PROBE_GIVEUP_MS) {
		if (!t->probe_unreached_logged)
			log_warnx("TLS: this node cannot connect to its own "
			          "listener at %s (check that tls_cert names "
			          "it), so a listener that stops accepting "
			          "(nng 1.5.2) would go unnoticed",
			          t->listen_url);
		t->probe_unreached_logged = 1;
	} else {
		return;
	}
	nng_dialer_close(t->probe_dialer);
	t->probing = 0;
	if (dead != NULL) {
		t->test_deaf = 0;
		restart_listener(t, dead);
	}
}

void
tls_timers(struct tls *t, int64_t now)
{
	nng_stat *all, *l;
	uint64_t failures, stops, accepts;

	if (!t->listen_tls || now - t->stats_ms < 1000)
		return;
	t->stats_ms = now;
	if (!t->listening && start_listener(t) != 0)
		return;
	if (nng_stats_get(&all) != 0)
		return;
	l = nngstat_scope(all, "listener", nng_listener_id(t->listener));
	/* Only "auth": "other" also grows when healthy peers reconnect (a
	 * connection that closes while nng negotiates it). */
	failures = t->listener_failures_base + nngstat_value(l, "auth");
	stops = nngstat_value(l, "other") + nngstat_value(l, "canceled");
	accepts = nngstat_value(l, "accept");
	nng_stats_free(all);
	if (failures > t->listener_logged &&
	    now - t->listener_logged_ms >= LOG_EVERY_MS) {
		log_warnx("TLS: %llu connection%s to this node failed the "
		          "handshake (a client certificate not from tls_ca, "
		          "or a client that refused ours); nng does not say "
		          "whose",
		          (unsigned long long)(failures - t->listener_logged),
		          failures - t->listener_logged == 1 ? "" : "s");
		t->listener_logged = failures;
		t->listener_logged_ms = now;
	}
	t->listener_failures = failures;
	if (t->probing) {
		uint64_t restarts = t->listener_restarts;
		probe_step(t, accepts, now);
		/* A new listener counts from 0. */
		if (t->listener_restarts != restarts)
			t->listener_failures_base = failures;
	} else if (stops > t->listener_stops ||
	           (!t->probe_unreached_logged &&
	            now - t->probe_ms >= PROBE_EVERY_MS)) {
		t->listener_stops = stops;
		probe_start(t, accepts, now);
	}
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The bytes a hello signs (see PeerAuth in peer.proto) into buf; returns
 * their length, or 0 if they do not fit. */
static size_t
signed_bytes(uint8_t *buf, size_t cap, const char *cluster, const char *from,
             const char *to, uint64_t epoch, uint64_t to_epoch,
             uint64_t time_ms, const uint8_t *nonce)
{
	const char *strs[4] = {"cutd-hello-v1", cluster, from, to};
	size_t n = 0;

	for (int i = 0; i < 4; i++) {
		size_t len = strlen(strs[i]) + 1;
		if (n + len > cap)
			return 0;
		memcpy(buf + n, strs[i], len);
		n += len;
	}
	if (n + 24 + NONCE_BYTES > cap)
		return 0;
	put64(buf + n, epoch);
	put64(buf + n + 8, to_epoch);
	put64(buf + n + 16, time_ms);
	memcpy(buf + n + 24, nonce, NONCE_BYTES);
	return n + 24 + NONCE_BYTES;
}

/* Ed25519 and Ed448 sign the message itself; other keys a SHA-256. */
static const EVP_MD *
digest_for(EVP_PKEY *key)
{
	int id = EVP_PKEY_get_base_id(key);

	return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? NULL
	                                                      : EVP_sha256();
}

int
tls_hello(struct tls *t, size_t node, uint64_t epoch, uint64_t to_epoch,
          const Cut__V1__PeerAuth **ret_auth)
{
	struct tls_node *n = &t->nodes[node];
	uint8_t msg[256];
	size_t len, siglen = sizeof(n->sig);
	uint64_t now = (uint64_t)wall_ms();
	EVP_MD_CTX *ctx;
	int ok;

	if (!n->tls) {
		*ret_auth = NULL;
		return 0;
	}
	/* Strictly increasing within the epoch, whatever the clock does. */
	n->sent_time = now > n->sent_time ? now : n->sent_time + 1;
	if (RAND_bytes(n->nonce, NONCE_BYTES) != 1 ||
	    (len = signed_bytes(msg, sizeof(msg), t->cfg->cluster,
	                        t->cfg->nodes[t->self].name,
	                        t->cfg->nodes[node].name, epoch, to_epoch,
	                        n->sent_time, n->nonce)) == 0 ||
	    (ctx = EVP_MD_CTX_new()) == NULL)
		return E_NOMEM;
	ok = EVP_DigestSignInit(ctx, NULL, digest_for(t->key), NULL, t->key) ==
	         1 &&
	     EVP_DigestSign(ctx, n->sig, &siglen, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return E_NOMEM;
	cut__v1__peer_auth__init(&n->auth);
	n->auth.cert.data = t->cert_der;
	n->auth.cert.len = t->cert_der_len;
	n->auth.signature.data = n->sig;
	n->auth.signature.len = siglen;
	n->auth.time_ms = n->sent_time;
	n->auth.nonce.data = n->nonce;
	n->auth.nonce.len = NONCE_BYTES;
	*ret_auth = &n->auth;
	return 0;
}

/* Whether sig is a signature of msg by the key of x. */
static int
signature_ok(X509 *x, const uint8_t *msg, size_t len, const uint8_t *sig,
             size_t siglen)
{
	EVP_PKEY *pub = X509_get0_pubkey(x);
	EVP_MD_CTX *ctx;
	int ok;

	if (pub == NULL || (ctx = EVP_MD_CTX_new()) == NULL)
		return 0;
	ok = EVP_DigestVerifyInit(ctx, NULL, digest_for(pub), NULL, pub) == 1 &&
	     EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

/* Checks b's hello, claimed to come from node; NULL or the reason. */
static const char *
check_hello(struct tls *t, size_t node, nng_pipe pipe,
            const Cut__V1__PeerBatch *b, char *why, size_t whylen)
{
	const Cut__V1__PeerAuth *a = b->auth;
	const struct tls_node *n = &t->nodes[node];
	const uint8_t *p = a->cert.data;
	uint8_t msg[256];
	size_t len;
	int64_t skew = wall_ms() - (int64_t)a->time_ms;
	const char *bad = NULL;
	bool verified = false;
	X509 *x;

	if (nng_pipe_get_bool(pipe, NNG_OPT_TLS_VERIFIED, &verified) != 0 ||
	    !verified)
		return "its TLS client certificate was not verified";
	if (strcmp(b->cluster, t->cfg->cluster) != 0 ||
	    strcmp(b->to, t->cfg->nodes[t->self].name) != 0)
		return "the hello is for another cluster or node";
	if (skew > HELLO_SKEW_MS || skew < -HELLO_SKEW_MS)
		return "the hello's time is more than 5 minutes off this "
		       "node's clock";
	if (a->nonce.len != NONCE_BYTES)
		return "the hello's nonce is not 16 bytes";
	if (b->has_epoch && b->epoch == n->hello_epoch &&
	    a->time_ms <= n->hello_time)
		return "the hello is not newer than the last one accepted "
		       "(a replay?)";
	if ((x = d2i_X509(NULL, &p, (long)a->cert.len)) == NULL)
		return "the hello's certificate does not decode";
	if ((bad = verify_chain(t->store, x)) != NULL) {
		snprintf(why, whylen,
		         "the hello's certificate does not chain to tls_ca: %s",
		         bad);
		bad = why;
	} else if (X509_check_host(x, b->from, 0, 0, NULL) != 1) {
		bad = "the hello's certificate does not name it";
	} else if ((len = signed_bytes(msg, sizeof(msg), b->cluster, b->from,
	                               b->to, b->has_epoch ? b->epoch : 0,
	                               b->has_to_epoch ? b->to_epoch : 0,
	                               a->time_ms, a->nonce.data)) == 0 ||
	           !signature_ok(x, msg, len, a->signature.data,
	                         a->signature.len)) {
		bad = "the hello's signature does not verify";
	}
	X509_free(x);
	ERR_clear_error();
	return bad;
}

int
tls_admit(struct tls *t, nng_pipe pipe, const Cut__V1__PeerBatch *b)
{
	int from = config_node_index(t->cfg, b->from);
	char why[200];
	const char *bad;
	int64_t now;

	if (!t->listen_tls)
		return 0;
	if (from < 0 || (size_t)from == t->self) {
		if (b->auth != NULL) {
			t->unknown_failures++;
			nng_pipe_close(pipe);
		}
		t->unauthenticated++;
		return E_AUTH;
	}
	if (b->auth != NULL) {
		if ((bad = check_hello(t, (size_t)from, pipe, b, why,
		                       sizeof(why))) != NULL) {
			refused(t, (size_t)from, 1,
			        "connection refused, claimed to come from it: "
			        "%s",
			        bad);
			nng_pipe_close(pipe);
			t->unauthenticated++;
			return E_AUTH;
		}
		if (t->nodes[from].bound != (uint32_t)nng_pipe_id(pipe))
			log_info("TLS: %s authenticated its connection",
			         b->from);
		t->nodes[from].bound = (uint32_t)nng_pipe_id(pipe);
		t->nodes[from].hello_epoch = b->has_epoch ? b->epoch : 0;
		t->nodes[from].hello_time = b->auth->time_ms;
	}
	if (t->nodes[from].bound == (uint32_t)nng_pipe_id(pipe))
		return 0;
	t->unauthenticated++;
	now = wall_ms();
	if (now - t->unauth_logged_ms >= LOG_EVERY_MS) {
		t->unauth_logged_ms = now;
		log_notice("TLS: batch from %s on a connection without its "
		           "signed hello dropped (%llu so far)",
		           b->from, (unsigned long long)t->unauthenticated);
	}
	return E_AUTH;
}

void
tls_peer_status(const struct tls *t, size_t node, struct tls_peer_status *ret)
{
	const struct tls_node *n = &t->nodes[node];
	nng_pipe pipe = NNG_PIPE_INITIALIZER;
	bool verified = false;

	pipe.id = n->bound;
	ret->tls = n->tls || t->listen_tls;
	ret->authenticated =
	    n->bound != 0 &&
	    nng_pipe_get_bool(pipe, NNG_OPT_TLS_VERIFIED, &verified) == 0 &&
	    verified;
	ret->failures = n->failures;
	ret->last_error = n->last_error[0] ? n->last_error : NULL;
	ret->last_error_ms = n->last_error_ms;
}

void
tls_status(const struct tls *t, struct tls_status *ret)
{
	ret->listener_failures = t->listener_failures;
	ret->listener_restarts = t->listener_restarts;
	ret->unknown_failures = t->unknown_failures;
	ret->unauthenticated = t->unauthenticated;
}
