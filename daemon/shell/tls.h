/*
 * tls.h - mutual TLS between daemons: nng's TLS configurations for the
 * peer listener and dialers, and the signed hello that binds a connection
 * to the node that dialed it.
 *
 * nng 1.5.2 verifies that a client certificate chains to the cluster's CA
 * but cannot say which node it names, so the dialer's first batch on each
 * connection carries its certificate and a signature by its key over the
 * batch header (PeerAuth, proto/peer.proto).  The listener verifies it and
 * binds that nng pipe to the node; batches on a pipe not bound to their
 * sender are dropped.  Dialers verify the listener's certificate through
 * mbedTLS: it must chain to the CA and name the node dialed.
 *
 * Everything runs on the daemon's main thread.
 */
#ifndef CUT_TLS_H
#define CUT_TLS_H

#include "cuterr.h"

#include <nng/nng.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cutproto.h"

/* Calls that can fail return 0 or an E_* code (cuterr.h). */

struct tls;

/*
 * Prepares node self's TLS: reads the CA, and self's certificate and key
 * when any peer is tls+tcp://.  A key file that group or others may read is
 * refused.  On success stores a new struct tls in *ret_tls, which the
 * caller frees with tls_free(); in a plaintext cluster it does nothing.  On
 * failure writes a sentence ("FILE: message") to err and leaves *ret_tls
 * alone.  cfg is borrowed for the life of the struct tls.
 */
int tls_open(const struct config *cfg, size_t self, struct tls **ret_tls,
             char *err, size_t errlen);

/* Frees t.  Accepts NULL. */
void tls_free(struct tls *t);

/* Listens on sock at url, with TLS when url is tls+tcp://. */
int tls_listen(struct tls *t, nng_socket sock, const char *url);

/* Starts a non-blocking dialer of sock to node's url, with TLS that checks
 * the peer's certificate names node when url is tls+tcp://; stores it in
 * *ret_dialer on success. */
int tls_dial(struct tls *t, nng_socket sock, size_t node, const char *url,
             nng_dialer *ret_dialer);

/* The dialer to node is about to be closed: counts the TLS handshakes it
 * failed, which nng reports only in its statistics. */
void tls_dialer_done(struct tls *t, size_t node, nng_dialer dialer);

/* Counts the handshakes the listener failed (about once a second). */
void tls_timers(struct tls *t, int64_t now);

/*
 * The signed hello for the first batch of a new connection to node, over
 * the header (cluster, self, node, epoch, to_epoch): *ret_auth is NULL when
 * the link to node is not TLS, else points into t until the next call for
 * node.  Returns 0, or E_NOMEM.
 */
int tls_hello(struct tls *t, size_t node, uint64_t epoch, uint64_t to_epoch,
              const Cut__V1__PeerAuth **ret_auth);

/*
 * Whether batch b, which came on pipe, may be handled: always on a
 * plaintext listener; on a TLS one only when pipe is bound to b->from.  A
 * hello in b is verified first and, if good, binds pipe; if bad, the pipe
 * is closed.  Returns 0 or E_AUTH (the refusal is logged and counted).
 */
int tls_admit(struct tls *t, nng_pipe pipe, const Cut__V1__PeerBatch *b);

/* What status shows of node's authentication. */
struct tls_peer_status {
	int tls;                /* the links with node use TLS */
	int authenticated;      /* its connection to us is bound to it */
	uint64_t failures;      /* refused hellos and failed handshakes */
	const char *last_error; /* NULL: none; borrowed from t */
	int64_t last_error_ms;  /* Unix ms */
};
void tls_peer_status(const struct tls *t, size_t node,
                     struct tls_peer_status *ret);

/* Totals not tied to one peer. */
struct tls_status {
	uint64_t listener_failures; /* handshakes the listener failed */
	uint64_t listener_restarts; /* listener started again (tls.c) */
	uint64_t unknown_failures;  /* hellos naming no peer */
	uint64_t unauthenticated;   /* batches on an unbound pipe */
};
void tls_status(const struct tls *t, struct tls_status *ret);

#endif /* CUT_TLS_H */
