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
 * The loop's turn (core/turn.c) decides what to read, send and redial,
 * and when; these are its port's peer half.  A frame nng will not take
 * yet stays pending there and goes first next turn, never rebuilt;
 * nothing more is built for that peer meanwhile, so a slow peer holds at
 * most one frame and its link's window in the coordinator.
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
/* Starts a dialer to node's endpoint. */
static int
redial(struct cutd *d, size_t node)
{
	struct net_peer *p = &d->net[node];
	const char *url = d->cfg->nodes[node].peer;
	int rv;

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
		if (v == d->self || now - turn_peer_since(&d->turn, v) < 200)
			continue;
		pipe.id = pipewatch_id(&d->net[v].conn);
		if (pipe.id != 0)
			nng_pipe_close(pipe);
	}
}

void
net_free(struct cutd *d)
{
	free(d->net);
	d->net = NULL;
	pthread_mutex_destroy(&d->closed_mx);
}

/* ---- The peer half of the loop's port (turn.h) ---- */

size_t
net_port_closed(void *ctx, uint32_t *ids, size_t max)
{
	struct cutd *d = ctx;
	size_t n = 0;

	if (!atomic_exchange(&d->closed_any, 0))
		return 0;
	pthread_mutex_lock(&d->closed_mx);
	n = d->nclosed < max ? d->nclosed : max;
	memcpy(ids, d->closed, n * sizeof(ids[0]));
	memmove(d->closed, d->closed + n, (d->nclosed - n) * sizeof(ids[0]));
	d->nclosed -= n;
	if (d->nclosed > 0)
		atomic_store(&d->closed_any, 1);
	pthread_mutex_unlock(&d->closed_mx);
	return n;
}

int
net_port_added(void *ctx, size_t node)
{
	struct cutd *d = ctx;

	return pipewatch_take_added(&d->net[node].conn);
}

int
net_port_connected(void *ctx, size_t node)
{
	struct cutd *d = ctx;

	return connected(&d->net[node]);
}

void
net_port_hang_up(void *ctx, size_t node)
{
	struct cutd *d = ctx;
	nng_pipe pipe = NNG_PIPE_INITIALIZER;

	pipe.id = pipewatch_id(&d->net[node].conn);
	if (pipe.id != 0) {
		log_notice("no word from %s for %d ms: connecting again",
		           d->cfg->nodes[node].name, DEAD_MS);
		nng_pipe_close(pipe);
	}
}

void
net_port_redial(void *ctx, size_t node)
{
	struct cutd *d = ctx;
	struct net_peer *p = &d->net[node];

	tls_dialer_done(d->tls, node, p->dialer);
	nng_dialer_close(p->dialer);
	redial(d, node);
}

int
net_port_recv(void *ctx, struct turn_in *in)
{
	struct cutd *d = ctx;
	nng_msg *msg;

	/* poll() said whether a frame waits; an empty socket costs nng an
	 * aio per nng_recvmsg(). */
	if (!d->pull_ready || nng_recvmsg(d->pull, &msg, NNG_FLAG_NONBLOCK) != 0) {
		d->pull_ready = 0;
		return 0;
	}
	cutd_port_in(in, msg);
	return 1;
}

int
net_port_admit(void *ctx, uint32_t conn, const Cut__V1__PeerBatch *b)
{
	struct cutd *d = ctx;
	nng_pipe pipe = NNG_PIPE_INITIALIZER;

	/* Not authenticated: refused before the header can change
	 * anything. */
	pipe.id = conn;
	return tls_admit(d->tls, pipe, b);
}

int
net_port_send(void *ctx, size_t node, void *frame)
{
	struct cutd *d = ctx;

	return nng_sendmsg(d->net[node].push, frame, NNG_FLAG_NONBLOCK);
}

int
net_port_auth(void *ctx, size_t node, const Cut__V1__PeerAuth **auth)
{
	struct cutd *d = ctx;

	return tls_hello(d->tls, node, d->epoch,
	                 coord_peer_epoch(d->coord, node), auth);
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
	}
}
