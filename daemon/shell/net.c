/*
 * net.c - the sockets between daemons.
 *
 * Each daemon listens with one pair1 socket in polyamorous mode, which only
 * receives, and dials every other node with a pair1 socket, which only
 * sends.  (nng 1.5.2's push0 can crash when a connection closes under
 * load, nng issue #1653; pair1 does not.)  What goes on them, and when a
 * connection should be given up, is the coordinator's decision
 * (core/coord_peer.c); this file carries frames, tells the coordinator
 * which connections opened and closed, and keeps the dialers fresh.
 *
 * A frame nng will not take yet stays pending and goes first next turn,
 * never rebuilt; nothing more is built for that peer meanwhile, so a slow
 * peer holds at most one frame here and its link's window in the
 * coordinator.
 *
 * TLS.  On tls+tcp:// links tls.c configures the dialers and the listener,
 * signs the first batch of each new connection, and admits a batch on the
 * listener only on a connection its sender's signed hello bound to it.
 */
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "cutd.h"
#include "net.h"
#include "cutproto.h"
#include "log.h"
#include "pipewatch.h"
#include "tls.h"

#define RECV_PER_TURN    256
#define BATCHES_PER_TURN 64

/* Whether push has an open connection. */
static int
connected(const struct net_peer *p)
{
	return pipewatch_id(&p->conn) != 0;
}

/* A connection to our listener closed: it no longer speaks for anyone.
 * Noted for the loop, which tells the coordinator. */
static void
listener_event(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct cutd *d = arg;

	(void)ev;
	pthread_mutex_lock(&d->closed_mx);
	if (d->nclosed == CLOSED_MAX) {
		memmove(d->closed, d->closed + 1,
		        (CLOSED_MAX - 1) * sizeof(d->closed[0]));
		d->nclosed--;
	}
	d->closed[d->nclosed++] = (uint32_t)nng_pipe_id(pipe);
	pthread_mutex_unlock(&d->closed_mx);
	atomic_store(&d->closed_any, 1);
}

/* Forgets the frame nng would not take: its items go again after a
 * rewind, or not at all after a reset. */
static void
drop_pending(struct net_peer *p)
{
	if (p->pending != NULL) {
		nng_msg_free(p->pending);
		p->pending = NULL;
	}
}

/* Starts a dialer to node's endpoint. */
static int
redial(struct cutd *d, size_t node)
{
	struct net_peer *p = &d->net[node];
	const char *url = d->cfg->nodes[node].peer;
	int rv;

	p->dialed_ms = cutd_now_ms();
	if ((rv = tls_dial(d->tls, p->push, node, url, &p->dialer)) != 0)
		log_err("cannot dial %s at %s: %s", d->cfg->nodes[node].name,
		        url, nng_strerror(rv));
	return rv;
}

static int
dial_peer(struct cutd *d, size_t node)
{
	struct net_peer *p = &d->net[node];
	int rv;

	if ((rv = nng_pair1_open(&p->push)) != 0)
		return rv;
	nng_socket_set_ms(p->push, NNG_OPT_RECONNMINT, 100);
	nng_socket_set_ms(p->push, NNG_OPT_RECONNMAXT, 1000);
	nng_socket_set_int(p->push, NNG_OPT_SENDBUF, 64);
	/* Nothing comes back on this socket; the limit guards it anyway. */
	nng_socket_set_size(p->push, NNG_OPT_RECVMAXSZ, 1024);
	if ((rv = pipewatch_start(&p->conn, p->push)) != 0)
		return rv;
	return redial(d, node);
}

static int
listen_peers(struct cutd *d)
{
	const char *url = d->cfg->nodes[d->self].peer;
	int rv;

	/* One receiving socket for every peer. */
	if ((rv = nng_pair1_open_poly(&d->pull)) != 0) {
		log_err("cannot open the peer socket: %s", nng_strerror(rv));
		return rv;
	}
	/* A batch holds at most one item over BATCH_BYTES, and no item is
	 * much larger than the largest application message. */
	nng_socket_set_size(d->pull, NNG_OPT_RECVMAXSZ,
	                    d->cfg->max_message + BATCH_BYTES + 64 * 1024);
	nng_pipe_notify(d->pull, NNG_PIPE_EV_REM_POST, listener_event, d);
	if ((rv = tls_listen(d->tls, d->pull, url)) != 0)
		log_err("cannot listen on %s: %s", url, nng_strerror(rv));
	return rv;
}

int
net_start(struct cutd *d)
{
	int rv;

	pthread_mutex_init(&d->closed_mx, NULL);
	if ((d->net = calloc(d->cfg->nnodes, sizeof(*d->net))) == NULL)
		return NNG_ENOMEM;
	if ((rv = listen_peers(d)) != 0)
		return rv;
	for (size_t v = 0; v < d->cfg->nnodes; v++)
		if (v != d->self && (rv = dial_peer(d, v)) != 0)
			return rv;
	return 0;
}

void
net_drop_connections(struct cutd *d)
{
	int64_t now = cutd_now_ms();

	/* Closing the connections, not the sockets: nng 1.5.2 can hang in
	 * nng_close() on a socket that is receiving (nng issue #1219).  And
	 * only connections that have settled, in case a connection closed
	 * while nng is still starting it trips another 1.5.2 race (nng
	 * issue #1653). */
	log_notice("dropping this node's peer connections (SIGUSR1)");
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		nng_pipe pipe = NNG_PIPE_INITIALIZER;
		if (v == d->self || now - d->net[v].since_ms < 200)
			continue;
		pipe.id = pipewatch_id(&d->net[v].conn);
		if (pipe.id != 0)
			nng_pipe_close(pipe);
	}
}

void
net_free(struct cutd *d)
{
	for (size_t v = 0; d->net != NULL && v < d->cfg->nnodes; v++)
		drop_pending(&d->net[v]);
	free(d->net);
	d->net = NULL;
	pthread_mutex_destroy(&d->closed_mx);
}

void
net_events(struct cutd *d)
{
	uint32_t closed[CLOSED_MAX];
	size_t n = 0;

	if (atomic_exchange(&d->closed_any, 0)) {
		pthread_mutex_lock(&d->closed_mx);
		n = d->nclosed;
		memcpy(closed, d->closed, n * sizeof(closed[0]));
		d->nclosed = 0;
		pthread_mutex_unlock(&d->closed_mx);
	}
	for (size_t i = 0; i < n; i++)
		coord_peer_conn_closed(d->coord, closed[i]);
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		struct net_peer *p = &d->net[v];
		if (v == d->self)
			continue;
		if (pipewatch_take_added(&p->conn)) {
			p->since_ms = cutd_now_ms();
			drop_pending(p);
			coord_peer_up(d->coord, v);
			p->up = 1;
		} else if (p->up && !connected(p)) {
			coord_peer_down(d->coord, v);
			p->up = 0;
		}
	}
}

void
net_batch(struct cutd *d, nng_msg *msg)
{
	Cut__V1__PeerBatch *b;
	nng_pipe pipe = nng_msg_get_pipe(msg);

	b = (Cut__V1__PeerBatch *)cutproto_unpack_arena(
	    &cut__v1__peer_batch__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg), &d->arena);
	if (b == NULL) {
		coord_peer_bad(d->coord, "?", "batch does not decode");
	} else if (tls_admit(d->tls, pipe, b) != 0) {
		/* Not authenticated: before the header can change anything. */
	} else {
		coord_peer_input(d->coord, (uint32_t)nng_pipe_id(pipe), b);
	}
	cutproto_arena_reset(&d->arena);
}

void
net_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		nng_msg *msg;
		if (nng_recvmsg(d->pull, &msg, NNG_FLAG_NONBLOCK) != 0)
			return;
		net_batch(d, msg);
		nng_msg_free(msg);
	}
}

/* Tries to send p's pending frame; returns 1 if it left (or there was
 * none). */
static int
send_pending(struct net_peer *p)
{
	if (p->pending == NULL)
		return 1;
	if (nng_sendmsg(p->push, p->pending, NNG_FLAG_NONBLOCK) != 0)
		return 0;
	p->pending = NULL;
	return 1;
}

/* Builds the coordinator's next frame to node in one allocation of its
 * final size and tries to send it.  Returns 1 if a frame left and more
 * may follow. */
static int
flush_one(struct cutd *d, size_t node)
{
	struct net_peer *p = &d->net[node];
	const Cut__V1__PeerAuth *auth = NULL;
	size_t len;
	nng_msg *msg;

	if (!send_pending(p))
		return 0;
	/* A new connection's first frame proves who we are (TLS links). */
	if (coord_peer_hello_due(d->coord, node) &&
	    tls_hello(d->tls, node, d->epoch, coord_peer_epoch(d->coord, node),
	              &auth) != 0)
		return 0;
	if ((len = coord_peer_frame(d->coord, node, auth, NULL)) == 0 ||
	    nng_msg_alloc(&msg, len) != 0)
		return 0;
	len = coord_peer_frame(d->coord, node, auth, nng_msg_body(msg));
	nng_msg_chop(msg, nng_msg_len(msg) - len);
	p->pending = msg;
	return send_pending(p);
}

void
net_flush(struct cutd *d)
{
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		if (v == d->self || !connected(&d->net[v]))
			continue; /* nng would only queue it for a dead pipe */
		for (int i = 0; i < BATCHES_PER_TURN && flush_one(d, v); i++)
			;
	}
}

/* Closes our connection to node when the coordinator finds it silent, so
 * that nng dials again: TCP can sit for minutes on a connection a
 * partition broke. */
static void
redial_if_dead(struct cutd *d, size_t node, int64_t now)
{
	struct net_peer *p = &d->net[node];
	nng_pipe pipe = NNG_PIPE_INITIALIZER;

	if (!connected(p) || now - p->since_ms < DEAD_MS ||
	    !coord_peer_silent(d->coord, node))
		return;
	pipe.id = pipewatch_id(&p->conn);
	if (pipe.id != 0) {
		log_notice("no word from %s for %d ms: connecting again",
		           d->cfg->nodes[node].name, DEAD_MS);
		nng_pipe_close(pipe);
	}
	coord_peer_redialed(d->coord, node);
}

/* A dialer that has not connected for REDIAL_MS is replaced: its connect
 * may be waiting out the kernel's SYN backoff (seconds, growing) from a
 * partition that has since healed, where a fresh one connects at once. */
static void
renew_dialer(struct cutd *d, size_t node, int64_t now)
{
	struct net_peer *p = &d->net[node];

	if (connected(p) || now - p->dialed_ms < REDIAL_MS)
		return;
	tls_dialer_done(d->tls, node, p->dialer);
	nng_dialer_close(p->dialer);
	redial(d, node);
}

void
net_timers(struct cutd *d, int64_t now)
{
	tls_timers(d->tls, now);
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		if (v == d->self)
			continue;
		/* A lookup under nng's lock: once a second, off the hot
		 * path. */
		if (now - d->net[v].checked_ms >= 1000) {
			d->net[v].checked_ms = now;
			pipewatch_check(&d->net[v].conn);
		}
		redial_if_dead(d, v, now);
		renew_dialer(d, v, now);
	}
}

int
net_next_timer(struct cutd *d, int64_t now, int max)
{
	int64_t ms = max;

	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		const struct net_peer *p = &d->net[v];
		if (v == d->self)
			continue;
		if (!connected(p)) {
			if (p->dialed_ms + REDIAL_MS - now < ms)
				ms = p->dialed_ms + REDIAL_MS - now;
		} else if (p->pending != NULL && ms > 1) {
			ms = 1;
		}
	}
	return ms < 0 ? 0 : (int)ms;
}
