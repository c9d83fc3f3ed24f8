/*
 * simnet.c - the simulated network between the daemons, their sockets,
 * and one turn of each daemon's loop.
 *
 * As in cutd (shell/net.c), every node listens on one socket and dials
 * every other node with a socket that only sends, so frames from p to q
 * go on p's connection to q's listener.  A connection is TCP as the
 * daemons see it: FIFO (each frame arrives after the one before it, each
 * with its own latency and now and then a spike), never losing or
 * duplicating a frame on its own, except under the fault lose
 * (simnet_lose_random()).  What breaks it:
 *
 *   - a reset (a dropped segment, a middlebox, a crash at either end):
 *     the frames in flight are lost, and each end hears of the close a
 *     latency later, when the network lets the news through;
 *   - a close by the dialer, as net.c does when the coordinator finds the
 *     peer silent: half of them abortive (frames lost), half graceful (the
 *     frames in flight still arrive, then the listener hears the close),
 *     so that an old connection's frames can arrive interleaved with the
 *     new one's;
 *   - a partition: frames from one group to the other wait in their
 *     connections (TCP retransmits) and arrive when it heals, if the
 *     connection is still there; a dial across it hangs until net.c
 *     replaces the dialer (REDIAL_MS); close notices wait as well.
 *
 * A send into a connection holding CONN_FRAMES frames is refused, as nng
 * refuses one beyond its send buffer: the frame stays pending and goes
 * first next turn.  Duplicates happen only where the transport makes them:
 * the links resend after a reconnect, a hello or a silence.
 *
 * The application's socket is one IPC connection at a time: frames the
 * daemon sends while none is open wait in the socket and go to the next
 * one (pair1 sends to whatever connection is open, replies too); a close
 * loses what was on the connection both ways.
 *
 * simnet_turn() runs the daemon's own turn (core/turn.c), cutd's loop
 * body, over this file's port: the same order and rules as cutd, with
 * this network in place of nng's sockets.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sim.h"

/* nng's send buffer (net.c sets NNG_OPT_SENDBUF 64) and its batches. */
#define CONN_FRAMES 64
/* How long after the heal (and a node's start) every link must have come
 * back: the silence that closes a connection, then a resend. */
#define HEALTHY_MS (DEAD_MS + RESEND_MS + 1000)
/* How soon a link must be whole once nothing stands in its way (see
 * recovered()): everything unacked sent again at once and acked, a few
 * latencies and turns, well inside the RESEND_MS after which the timer
 * would send it again. */
#define RECOVERY_MS 600
/* nng redials after RECONN_MIN, doubling up to RECONN_MAX (net.c). */
#define RECONN_MIN  100
#define RECONN_MAX   1000

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

struct sim_frame *
simnet_frame_new(size_t len)
{
	struct sim_frame *f = malloc(sizeof(*f) + (len ? len : 1));

	if (f == NULL)
		abort(); /* the simulation cannot go on honestly */
	memset(f, 0, sizeof(*f));
	f->len = len;
	return f;
}

void
simnet_frame_free(struct sim_frame *f)
{
	free(f);
}

void
simnet_queue_push(struct sim_queue *q, struct sim_frame *f)
{
	f->next = NULL;
	if (q->tail != NULL)
		q->tail->next = f;
	else
		q->head = f;
	q->tail = f;
	q->n++;
	if (f->at > q->last_at)
		q->last_at = f->at;
}

struct sim_frame *
simnet_queue_pop(struct sim_queue *q)
{
	struct sim_frame *f = q->head;

	if (f == NULL)
		return NULL;
	if ((q->head = f->next) == NULL)
		q->tail = NULL;
	q->n--;
	f->next = NULL;
	return f;
}

void
simnet_queue_clear(struct sim_queue *q)
{
	struct sim_frame *f;

	while ((f = simnet_queue_pop(q)) != NULL)
		simnet_frame_free(f);
	q->last_at = 0;
}

/* The latency of one frame from a to b: the path's, a little jitter,
 * and once in a while a spike (a retransmission, a full queue). */
static int64_t
latency(struct sim *s, size_t a, size_t b)
{
	int64_t ms = s->lat[a][b] + sim_range(s, 0, 1);

	if (sim_rand(s, 200) == 0)
		ms += sim_range(s, 10, 80);
	return ms;
}

/* A frame on a's connection to b, or on b's (carrying a's acks), vanished:
 * until what a had sent then is acked, the link a -> b may wait for a's
 * timer resend (recovered()). */
static void
lost_on(struct sim *s, size_t a, size_t b)
{
	struct sim_dial *d = &s->nodes[a].dial[b];
	struct coord_peer_stats ps;

	simnet_disturb(s, a);
	if (s->nodes[a].c == NULL)
		return;
	coord_peer_stats(s->nodes[a].c, b, &ps);
	if (ps.link_next - 1 > d->lost_upto)
		d->lost_upto = ps.link_next - 1;
	d->acked_seen = ps.link_acked;
	d->loss_until = s->now + RESEND_MS;
}

/* A frame on k vanished (simnet_lose_random()).  Neither end hears of it:
 * the link k carries (its items) and the one whose acks it carries wait
 * for the timer's resend, RESEND_MS after their last progress (which acks
 * of what went before the lost frame may still bring). */
static void
lost(struct sim *s, struct sim_conn *k)
{
	lost_on(s, k->src, k->dst);
	lost_on(s, k->dst, k->src);
	s->st->losses++;
}

/* Queues f on connection k, behind what is already on it.  Returns -1
 * when the connection's buffer is full (f stays the caller's). */
static int
conn_send(struct sim *s, struct sim_conn *k, struct sim_frame *f)
{
	if (k->dead || k->closing) {
		/* Into a connection that is gone but not yet known gone. */
		simnet_frame_free(f);
		return 0;
	}
	if (k->q.n >= CONN_FRAMES)
		return -1;
	if (s->now < k->lossy_until && sim_rand(s, 1000) < k->loss_pm) {
		sim_trace(s, "a frame on %s -> %s (connection %u) lost",
		          s->nodes[k->src].name, s->nodes[k->dst].name, k->id);
		lost(s, k);
		simnet_frame_free(f);
		return 0;
	}
	f->conn = k->id;
	f->at = s->now + latency(s, k->src, k->dst);
	if (f->at < k->q.last_at)
		f->at = k->q.last_at;
	simnet_queue_push(&k->q, f);
	s->st->frames++;
	return 0;
}

/* Resets k: its frames are lost and both ends hear of it (unless an end
 * is the one that closed it, or is gone). */
/* A fault touched node i now; a later end some fault set (a loss's
 * RESEND_MS, a slow spell) stays. */
void
simnet_disturb(struct sim *s, size_t i)
{
	if (s->nodes[i].disturbed < s->now)
		s->nodes[i].disturbed = s->now;
}

static void
conn_reset(struct sim *s, struct sim_conn *k, int src_knows, int dst_knows)
{
	simnet_queue_clear(&k->q);
	k->dead = 1;
	if (src_knows)
		k->src_told = 1;
	else if (k->src_close_at == SIM_NEVER)
		k->src_close_at = s->now + latency(s, k->dst, k->src);
	if (dst_knows)
		k->dst_told = 1;
	else if (k->dst_close_at == SIM_NEVER)
		k->dst_close_at = s->now + latency(s, k->src, k->dst);
}

/* A fault resets k. */
static void
fault_reset(struct sim *s, struct sim_conn *k)
{
	simnet_disturb(s, k->src);
	simnet_disturb(s, k->dst);
	conn_reset(s, k, 0, 0);
}

/* The dialer of src to dst lost its connection now: nng dials again. */
static void
dial_lost(struct sim *s, struct sim_dial *d)
{
	d->cur = NULL;
	d->pipes = 0;
	d->backoff = 2 * RECONN_MIN;
	d->attempt_at = s->now + RECONN_MIN;
	d->connect_at = SIM_NEVER;
}

/* The src end of k learns that it closed. */
static void
tell_src(struct sim *s, struct sim_conn *k)
{
	struct sim_dial *d = &s->nodes[k->src].dial[k->dst];

	k->src_told = 1;
	if (d->cur == k) {
		if (s->o->verbose >= 3)
			sim_trace(s, "%s: connection %u to %s closed",
			          s->nodes[k->src].name, k->id,
			          s->nodes[k->dst].name);
		dial_lost(s, d);
	}
}

/* The dst end of k learns that it closed: its id waits for the port's
 * peer_closed, which the turn reads (cutd's port learns it from nng's
 * pipe events, in net.c). */
static void
tell_dst(struct sim *s, struct sim_conn *k)
{
	struct sim_node *n = &s->nodes[k->dst];

	k->dst_told = 1;
	if (n->c == NULL)
		return;
	if (s->o->verbose >= 3)
		sim_trace(s, "%s: connection %u from %s closed", n->name, k->id,
		          s->nodes[k->src].name);
	if (n->nclosed == sizeof(n->closed) / sizeof(n->closed[0])) {
		memmove(n->closed, n->closed + 1,
		        sizeof(n->closed) - sizeof(n->closed[0]));
		n->nclosed--;
	}
	n->closed[n->nclosed++] = k->id;
}

/* ---- The application's socket ---- */

/* Puts a frame for the application on its connection, or in the socket
 * until one opens. */
static void
app_send(struct sim *s, struct sim_node *n, struct sim_frame *f)
{
	struct coord_restore_view rv;

	f->at = s->now + 1;
	f->gen = 0;
	if (n->c != NULL) {
		coord_restore_view(n->c, &rv);
		f->gen = rv.generation;
	}
	if (n->app_conn != 0) {
		f->conn = n->app_conn;
		simnet_queue_push(&n->app_down, f);
	} else {
		simnet_queue_push(&n->app_held, f);
	}
}

/* ---- Time ---- */

int64_t
simnet_next_event(struct sim *s)
{
	int64_t t = SIM_NEVER;

	for (struct sim_conn *k = s->conns; k != NULL; k = k->next) {
		if (k->q.head != NULL && !s->blocked[k->src][k->dst])
			t = min64(t, k->q.head->at);
		if (!k->src_told && !s->blocked[k->dst][k->src])
			t = min64(t, k->src_close_at);
		if (!k->dst_told && !s->blocked[k->src][k->dst])
			t = min64(t, k->dst_close_at);
		if (!k->dead)
			t = min64(t, k->doom_at);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		if (n->c == NULL) {
			t = min64(t, n->restart_at);
			continue;
		}
		t = min64(t, n->wake);
		for (size_t v = 0; v < s->n; v++) {
			t = min64(t, n->dial[v].attempt_at);
			t = min64(t, n->dial[v].connect_at);
		}
		if (n->app_down.head != NULL)
			t = min64(t, n->app_down.head->at);
		if (n->app_up.head != NULL)
			t = min64(t, n->app_up.head->at);
	}
	return t;
}

/* Dials of node i: attempts that start, connects that complete. */
static void
dials(struct sim *s, size_t i)
{
	struct sim_node *n = &s->nodes[i];

	for (size_t v = 0; v < s->n; v++) {
		struct sim_dial *d = &n->dial[v];
		struct sim_conn *k;
		int cut = s->blocked[i][v] || s->blocked[v][i];

		if (v == i)
			continue;
		if (d->attempt_at <= s->now) {
			d->attempt_at = SIM_NEVER;
			/* A SYN into a partition is answered by nothing: the
			 * connect hangs until net.c replaces the dialer. */
			if (!cut)
				d->connect_at =
				    s->now + s->lat[i][v] + s->lat[v][i];
		}
		if (d->connect_at > s->now)
			continue;
		d->connect_at = SIM_NEVER;
		if (cut || s->nodes[v].c == NULL) {
			/* Refused (nobody listens) or cut off since. */
			d->attempt_at = s->now + d->backoff;
			d->backoff = min64(2 * d->backoff, RECONN_MAX);
			continue;
		}
		if ((k = calloc(1, sizeof(*k))) == NULL)
			abort();
		k->id = ++s->nodes[v].next_conn;
		k->src = i;
		k->dst = v;
		k->src_close_at = k->dst_close_at = SIM_NEVER;
		k->doom_at = SIM_NEVER;
		if (d->doom) {
			/* Before or just after its first frame arrives. */
			d->doom = 0;
			k->doom_at =
			    s->now + sim_range(s, 0, 2 * s->lat[i][v] + 1);
		}
		k->next = s->conns;
		s->conns = k;
		if (s->o->verbose >= 3)
			sim_trace(s, "%s: connected to %s (connection %u)",
			          n->name, s->nodes[v].name, k->id);
		d->cur = k;
		d->pipes = 1;
		d->reconnected = 1;
		d->backoff = RECONN_MIN;
	}
}

void
simnet_deliver(struct sim *s)
{
	struct sim_conn **kp = &s->conns, *k;

	while ((k = *kp) != NULL) {
		int to_dst = !s->blocked[k->src][k->dst];
		struct sim_frame *f;

		if (!k->dead && k->doom_at <= s->now) {
			sim_trace(s,
			          "reset of %s -> %s as it opens (connection "
			          "%u, %zu frames lost)",
			          s->nodes[k->src].name, s->nodes[k->dst].name,
			          k->id, k->q.n);
			fault_reset(s, k);
		}
		while (to_dst && k->q.head != NULL && k->q.head->at <= s->now) {
			f = simnet_queue_pop(&k->q);
			simnet_queue_push(&s->nodes[k->dst].inbox, f);
		}
		/* A graceful close: the listener hears of it after the last
		 * frame. */
		if (k->closing && k->q.head == NULL &&
		    k->dst_close_at == SIM_NEVER)
			k->dst_close_at =
			    (k->q.last_at > s->now ? k->q.last_at : s->now) + 1;
		if (!k->src_told && k->src_close_at <= s->now &&
		    !s->blocked[k->dst][k->src])
			tell_src(s, k);
		if (!k->dst_told && k->dst_close_at <= s->now && to_dst)
			tell_dst(s, k);
		if ((k->dead || k->closing) && k->src_told && k->dst_told &&
		    k->q.head == NULL) {
			*kp = k->next;
			free(k);
			continue;
		}
		kp = &k->next;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		struct sim_frame *f;

		if (n->c == NULL)
			continue;
		dials(s, i);
		while (n->app_up.head != NULL && n->app_up.head->at <= s->now) {
			f = simnet_queue_pop(&n->app_up);
			simnet_queue_push(&n->app_inbox, f);
			if (f->hello && n->flap) {
				n->flap = 0;
				sim_trace(s,
				          "%s's application connection "
				          "resets again",
				          n->name);
				simnet_app_close(s, n);
			}
		}
		while (n->app_down.head != NULL &&
		       n->app_down.head->at <= s->now) {
			f = simnet_queue_pop(&n->app_down);
			n->app.frame_gen = f->gen;
			simapp_ingest(s, &n->app, f->data, f->len);
			simnet_frame_free(f);
		}
	}
}

/* ---- The application's connection, from the application's side ---- */

void
simnet_app_connect(struct sim *s, struct sim_node *n)
{
	struct sim_frame *f;

	n->app_conn = ++n->next_conn;
	n->app.conn = n->app_conn;
	/* What the daemon's socket held goes to the new connection. */
	while ((f = simnet_queue_pop(&n->app_held)) != NULL) {
		f->conn = n->app_conn;
		if (f->at < s->now + 1)
			f->at = s->now + 1;
		simnet_queue_push(&n->app_down, f);
	}
	if (n->flap_early) {
		n->flap_early = 0;
		sim_trace(s, "%s's application connection closes as it opens",
		          n->name);
		simnet_app_close(s, n);
	}
}

/* The application's connection closes: both ends know at once (IPC),
 * and what was on it is lost. */
void
simnet_app_close(struct sim *s, struct sim_node *n)
{
	if (n->app_conn == 0)
		return;
	if (n->c != NULL)
		n->app_removed = n->app_conn;
	n->app_conn = 0;
	simnet_queue_clear(&n->app_down);
	simnet_queue_clear(&n->app_up);
	simapp_conn_closed(s, &n->app);
}

/* ---- One turn of a daemon: core/turn.c over this port ---- */

int
simnet_due(const struct sim *s, const struct sim_node *n)
{
	if (n->c == NULL)
		return 0;
	if (s->now >= n->wake || n->inbox.head != NULL ||
	    n->app_inbox.head != NULL || n->nclosed > 0 || n->starts > 0 ||
	    (n->app_removed != 0 && n->app_removed != n->app_told))
		return 1;
	for (size_t v = 0; v < s->n; v++)
		if (n->dial[v].reconnected ||
		    (n->turn.peer[v].up && n->dial[v].pipes == 0))
			return 1;
	return 0;
}

static void
port_clock(void *ctx, int64_t *now, int64_t *wall)
{
	struct sim_node *n = ctx;

	*now = n->sim->now;
	*wall = sim_wall(n->sim);
}

/* The port's peer_closed: the simulated listener's closed connections. */
static size_t
port_peer_closed(void *ctx, uint32_t *ids, size_t max)
{
	struct sim_node *n = ctx;
	size_t k = n->nclosed < max ? n->nclosed : max;

	memcpy(ids, n->closed, k * sizeof(ids[0]));
	memmove(n->closed, n->closed + k, (n->nclosed - k) * sizeof(ids[0]));
	n->nclosed -= k;
	return k;
}

static int
port_peer_added(void *ctx, size_t node)
{
	struct sim_node *n = ctx;
	int added = n->dial[node].reconnected;

	n->dial[node].reconnected = 0;
	return added;
}

static int
port_peer_connected(void *ctx, size_t node)
{
	struct sim_node *n = ctx;

	return n->dial[node].pipes > 0;
}

/* A close of our own connection: abortive or graceful, at random. */
static void
close_own(struct sim *s, struct sim_conn *k)
{
	if (sim_rand(s, 2) == 0) {
		conn_reset(s, k, 1, 0);
	} else {
		k->closing = 1;
		k->src_told = 1;
	}
}

static void
port_peer_hang_up(void *ctx, size_t node)
{
	struct sim_node *n = ctx;
	struct sim *s = n->sim;
	struct sim_dial *d = &n->dial[node];

	sim_trace(s, "%s: no word from %s for %d ms: connecting again",
	          n->name, s->nodes[node].name, DEAD_MS);
	/* A link between two nodes that no fault has touched for a while
	 * (HEALTHY_MS: the silence that closes a connection, then a
	 * resend) does not go silent: acks and heartbeats flow both ways
	 * whatever the traffic.  If it does, that is a link bug. */
	if (s->now - n->disturbed > HEALTHY_MS &&
	    s->now - s->nodes[node].disturbed > HEALTHY_MS &&
	    !s->blocked[n->idx][node] && !s->blocked[node][n->idx] &&
	    !n->db.active && !s->nodes[node].db.active)
		sim_fail(s, SIM_C_LIVENESS,
		         "%s found %s silent for %d ms, though no fault "
		         "touched either for %" PRId64 " ms",
		         n->name, s->nodes[node].name, DEAD_MS,
		         s->now - (n->disturbed > s->nodes[node].disturbed
		                       ? n->disturbed
		                       : s->nodes[node].disturbed));
	close_own(s, d->cur);
	dial_lost(s, d);
}

/* A new dialer: it dials at once. */
static void
port_peer_redial(void *ctx, size_t node)
{
	struct sim_node *n = ctx;
	struct sim_dial *d = &n->dial[node];

	d->backoff = RECONN_MIN;
	d->connect_at = SIM_NEVER;
	d->attempt_at = n->sim->now;
}

/* The port's app_closed: the simulated application connection's close
 * (cutd's port learns it from nng's pipe events, in appsock.c). */
static size_t
port_app_closed(void *ctx, uint32_t *ids, size_t max)
{
	struct sim_node *n = ctx;

	if (max == 0 || n->app_removed == 0 || n->app_removed == n->app_told)
		return 0;
	n->app_told = n->app_removed;
	ids[0] = n->app_removed;
	return 1;
}

static int
pop_in(struct sim_queue *q, struct turn_in *in)
{
	struct sim_frame *f = simnet_queue_pop(q);

	if (f == NULL)
		return 0;
	*in = (struct turn_in){
	    .frame = f, .data = f->data, .len = f->len, .conn = f->conn};
	return 1;
}

static int
port_peer_recv(void *ctx, struct turn_in *in)
{
	return pop_in(&((struct sim_node *)ctx)->inbox, in);
}

static int
port_app_recv(void *ctx, struct turn_in *in)
{
	return pop_in(&((struct sim_node *)ctx)->app_inbox, in);
}

static void
port_in_done(void *ctx, struct turn_in *in)
{
	(void)ctx;
	simnet_frame_free(in->frame);
}

static void *
port_frame_new(void *ctx, size_t len, uint8_t **body)
{
	struct sim_frame *f = simnet_frame_new(len);

	(void)ctx;
	f->len = len;
	*body = f->data;
	return f;
}

static void
port_frame_trim(void *ctx, void *frame, size_t len)
{
	(void)ctx;
	((struct sim_frame *)frame)->len = len;
}

static void
port_frame_free(void *ctx, void *frame)
{
	(void)ctx;
	simnet_frame_free(frame);
}

static int
port_peer_send(void *ctx, size_t node, void *frame)
{
	struct sim_node *n = ctx;
	struct sim_dial *d = &n->dial[node];

	if (d->cur == NULL)
		return -1;
	return conn_send(n->sim, d->cur, frame);
}

/* pair1 holds CONN_FRAMES for a connection to come, then refuses. */
static int
port_app_send(void *ctx, void *frame)
{
	struct sim_node *n = ctx;

	if (n->app_conn == 0 && n->app_held.n >= CONN_FRAMES)
		return -1;
	app_send(n->sim, n, frame);
	return 0;
}

/* pair1 sends to the connection that is open, whichever the reply was
 * for. */
static void
port_app_reply(void *ctx, uint32_t conn, const uint8_t *data, size_t len)
{
	struct sim_node *n = ctx;
	struct sim_frame *f = simnet_frame_new(len);

	(void)conn;
	memcpy(f->data, data, len);
	app_send(n->sim, n, f);
}

/* Control calls: the snapshots this turn starts. */
static void
port_calls(void *ctx)
{
	struct sim_node *n = ctx;

	for (; n->starts > 0; n->starts--)
		sim_start_snapshot(n->sim, n);
}

static int64_t
judge_clock(void *arg)
{
	return ((struct sim_node *)arg)->sim->now;
}

static int64_t
judge_wall(void *arg)
{
	return sim_wall(((struct sim_node *)arg)->sim);
}

/* The coordinator's events: the conditions (the sim holds no replies). */
static void
port_event(void *ctx, const struct coord_event *ev)
{
	judge_event(&((struct sim_node *)ctx)->judge, ev);
}

/* The link n -> v is whole within RECOVERY_MS whenever nothing stands in
 * its way: both daemons up and connected both ways (acks come back on
 * v's own connection), n knowing v's current run (only then do its items
 * count there), no partition between them, no fault at either end for
 * the whole interval.  In each such interval of RECOVERY_MS, everything
 * sent before it began must be acked by its end.  After a reset, a
 * restart or a new run learnt, only the resend at that moment (on a new
 * connection, a peer's hello, its first epoch) is that quick: the timer's
 * waits RESEND_MS. */
static void
recovered(struct sim *s, struct sim_node *n)
{
	for (size_t v = 0; v < s->n; v++) {
		struct sim_dial *d = &n->dial[v];
		const struct sim_node *w = &s->nodes[v];
		int64_t since = d->chk_at != 0 ? d->chk_at : s->now;
		struct coord_peer_stats ps;
		if (v == n->idx)
			continue;
		if (w->c == NULL || d->pipes == 0 ||
		    w->dial[n->idx].pipes == 0 || s->blocked[n->idx][v] ||
		    s->blocked[v][n->idx] || n->db.active || w->db.active ||
		    n->gen_seen != w->gen_seen ||
		    coord_degraded(n->c)[0] != '\0' ||
		    coord_degraded(w->c)[0] != '\0' ||
		    n->disturbed >= since || w->disturbed >= since ||
		    coord_peer_epoch(n->c, v) != w->epoch) {
			d->chk_at = 0;
			continue;
		}
		coord_peer_stats(n->c, v, &ps);
		/* A frame lost on the link (simnet_lose_random()): until what
		 * was sent then is acked, each ack restarts the sender's
		 * resend clock. */
		if (d->lost_upto != 0) {
			if (ps.link_acked >= d->lost_upto ||
			    ps.link_next - 1 < d->lost_upto)
				d->lost_upto = 0;
			else if (ps.link_acked != d->acked_seen)
				d->loss_until = s->now + RESEND_MS;
			d->acked_seen = ps.link_acked;
		}
		if (s->now < d->loss_until) {
			d->chk_at = 0;
			continue;
		}
		if (d->chk_at == 0) {
			d->chk_at = s->now;
			d->chk_upto = ps.link_next - 1;
			continue;
		}
		if (s->now - d->chk_at < RECOVERY_MS)
			continue;
		if (ps.link_acked < d->chk_upto)
			sim_fail(s, SIM_C_LIVENESS,
			         "%s -> %s: the link is acked up to %" PRIu64
			         ", %" PRId64 " ms after it could have been "
			         "up to %" PRIu64,
			         n->name, w->name, ps.link_acked,
			         s->now - d->chk_at, d->chk_upto);
		d->chk_at = s->now;
		d->chk_upto = ps.link_next - 1;
	}
}

void
simnet_recovered(struct sim *s)
{
	/* A restore holds links back (a prepared node drops the batches of
	 * the old generation): a node voting, prepared or confirming, or
	 * that just applied one, is disturbed. */
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		struct coord_restore_view v;
		if (n->c == NULL)
			continue;
		coord_restore_view(n->c, &v);
		if (v.generation != n->gen_seen)
			n->gen_at = s->now;
		if (strcmp(v.phase, "idle") != 0 ||
		    v.generation != n->gen_seen) {
			n->gen_seen = v.generation;
			simnet_disturb(s, i);
		}
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->nodes[i].c != NULL)
			recovered(s, &s->nodes[i]);
}

static const struct turn_port sim_port = {
    .clock = port_clock,
    .peer_closed = port_peer_closed,
    .peer_added = port_peer_added,
    .peer_connected = port_peer_connected,
    .peer_hang_up = port_peer_hang_up,
    .peer_redial = port_peer_redial,
    .app_closed = port_app_closed,
    .peer_recv = port_peer_recv,
    .app_recv = port_app_recv,
    .in_done = port_in_done,
    .frame_new = port_frame_new,
    .frame_trim = port_frame_trim,
    .frame_free = port_frame_free,
    .peer_send = port_peer_send,
    .app_send = port_app_send,
    .app_reply = port_app_reply,
    .calls = port_calls,
    .event = port_event,
};

void
simnet_turn(struct sim *s, struct sim_node *n)
{
	struct coord_counters before, after;
	uint64_t failed = n->db.fault.failures;
	int ms;

	n->turns++;
	s->st->turns++;
	if (s->o->verbose >= 3)
		sim_trace(s, "%s: turn", n->name);
	coord_counters(n->c, &before);
	turn_run(&n->turn);
	/* A batch is lost only to the storage: one that did not commit in a
	 * turn whose store calls all worked was lost by the daemon itself (a
	 * write its own logic made fail, such as an end written to a row
	 * that does not exist or has ended), and with it every snapshot it
	 * held. */
	coord_counters(n->c, &after);
	if (after.commit_failures != before.commit_failures &&
	    n->db.fault.failures == failed)
		sim_fail(s, SIM_C_SIM,
		         "%s lost a batch though its storage failed no call",
		         n->name);
	/* Every frame here was built by a daemon or by libcut's core: a
	 * daemon that finds one bad (it would only count and log it) found
	 * a bug in one of them. */
	if (coord_bad_peer(n->c) + coord_bad_app(n->c) != n->bad_seen) {
		n->bad_seen = coord_bad_peer(n->c) + coord_bad_app(n->c);
		sim_fail(s, SIM_C_SIM, "%s refused a frame as bad (%" PRIu64
		         " peer, %" PRIu64 " application)",
		         n->name, coord_bad_peer(n->c), coord_bad_app(n->c));
	}
	sim_note_running(s, n->idx);
	/* The next turn, at least a millisecond on. */
	ms = turn_next_timer(&n->turn, TURN_SLEEP_MAX_MS);
	n->wake = s->now + (ms < 1 ? 1 : ms);
}

/* ---- Crashes, starts, resets, partitions ---- */

void
simnet_crash(struct sim *s, struct sim_node *n)
{
	for (struct sim_conn *k = s->conns; k != NULL; k = k->next) {
		if (k->dead)
			continue;
		/* The kernel closes the dead process's sockets: its peers
		 * hear a reset. */
		if (k->src == n->idx)
			conn_reset(s, k, 1, 0);
		else if (k->dst == n->idx)
			conn_reset(s, k, 0, 1);
	}
	for (size_t v = 0; v < s->n; v++) {
		struct sim_dial *d = &n->dial[v];
		memset(d, 0, sizeof(*d));
		d->attempt_at = d->connect_at = SIM_NEVER;
	}
	simnet_app_close(s, n);
	simnet_queue_clear(&n->app_held);
	simnet_queue_clear(&n->app_inbox);
	simnet_queue_clear(&n->inbox);
	n->nclosed = 0;
	n->app_removed = n->app_told = 0;
	n->starts = 0;
	/* No coord_stop(): the process is gone, and so is what it had not
	 * committed. */
	turn_fini(&n->turn);
	coord_free(n->c);
	n->c = NULL;
	simdb_crash(&n->db);
	n->crashes++;
}

/* A start of node n's daemon, as cutd starts (turn_start()), on the
 * database the last run left; then its dialers dial. */
int
simnet_start(struct sim *s, struct sim_node *n)
{
	struct errinfo e = {0};
	uint64_t epoch = 0;
	int rv;

	while (epoch == 0)
		epoch = lab_rng_next(&s->rng);
	n->sim = s;
	n->port = sim_port;
	n->port.ctx = n;
	if ((rv = turn_start(&n->turn, s->cfg, n->idx, epoch,
	                     simdb_port(&n->db), &n->port, &e)) != 0) {
		/* As cutd exits on it and systemd starts it again. */
		sim_trace(s, "%s: cannot start: %s", n->name, e.text);
		simdb_crash(&n->db);
		n->c = NULL;
		return rv;
	}
	n->c = n->turn.c;
	n->judge = (struct judge){.cfg = s->cfg,
	                          .store = n->st,
	                          .cond = n->cond,
	                          .now_ms = judge_clock,
	                          .wall_ms = judge_wall,
	                          .arg = n};
	n->epoch = epoch;
	n->started = s->now;
	simnet_disturb(s, n->idx);
	n->bad_seen = 0;
	/* The planted bug: node 0 never runs its timers. */
	n->turn.no_timers = s->o->self_check == SIM_SC_DEADLINE && n->idx == 0;
	for (size_t v = 0; v < s->n; v++) {
		struct sim_dial *d = &n->dial[v];
		memset(d, 0, sizeof(*d));
		d->connect_at = d->attempt_at = SIM_NEVER;
		if (v == n->idx)
			continue;
		d->backoff = RECONN_MIN;
		d->attempt_at = s->now;
	}
	n->wake = s->now;
	return 0;
}

void
simnet_handshake(struct sim *s, struct sim_node *n, size_t peer)
{
	struct sim_dial *d;

	s->st->drops++;
	simnet_disturb(s, n->idx);
	if (peer >= s->n || peer == n->idx) {
		sim_trace(s,
		          "%s's application connection resets, and the next "
		          "one as it opens",
		          n->name);
		n->flap_early = 1;
		simnet_app_close(s, n);
		return;
	}
	d = &n->dial[peer];
	sim_trace(s, "%s's connection to %s resets, and the next one as it opens",
	          n->name, s->nodes[peer].name);
	d->doom = 1;
	simnet_disturb(s, peer);
	if (d->cur != NULL && !d->cur->dead)
		fault_reset(s, d->cur);
}

/* A random open connection (not reset, not closing), holding a frame if
 * busy says so; NULL if there is none.  One draw. */
static struct sim_conn *
random_conn(struct sim *s, int busy)
{
	size_t live = 0, pick;
	struct sim_conn *k;

	for (k = s->conns; k != NULL; k = k->next)
		live += !k->dead && !k->closing && (!busy || k->q.n > 0);
	if (live == 0)
		return NULL;
	pick = (size_t)sim_rand(s, live);
	for (k = s->conns; k != NULL; k = k->next)
		if (!k->dead && !k->closing && (!busy || k->q.n > 0) &&
		    pick-- == 0)
			break;
	return k;
}

void
simnet_reset_random(struct sim *s)
{
	struct sim_conn *k = random_conn(s, 0);

	if (k == NULL)
		return;
	sim_trace(s, "reset of %s -> %s (connection %u, %zu frames lost)",
	          s->nodes[k->src].name, s->nodes[k->dst].name, k->id, k->q.n);
	fault_reset(s, k);
	s->st->drops++;
}

/* One frame on a live peer connection vanishes, or (spell > 0) for spell
 * ms each frame sent on one does with pm per mille; the connection and the
 * frames after a lost one go on.  TCP never does this, but the link must
 * survive it (its timer's resend, coord_peer.c), and only this shows that
 * the receiver holds what comes after a gap, and drops a held item that
 * comes again (a resend whose first frame was lost too). */
void
simnet_lose_random(struct sim *s, int64_t spell, unsigned pm)
{
	struct sim_conn *k = random_conn(s, spell == 0);
	struct sim_frame *prev = NULL, *f;
	size_t at;

	if (k == NULL)
		return;
	if (spell > 0) {
		sim_trace(s,
		          "%s -> %s (connection %u) loses %u per mille of "
		          "its frames for %" PRId64 " ms",
		          s->nodes[k->src].name, s->nodes[k->dst].name, k->id,
		          pm, spell);
		k->lossy_until = s->now + spell;
		k->loss_pm = pm;
		return;
	}
	at = (size_t)sim_rand(s, k->q.n);
	sim_trace(s, "frame %zu of %zu on %s -> %s (connection %u) lost",
	          at + 1, k->q.n, s->nodes[k->src].name,
	          s->nodes[k->dst].name, k->id);
	for (f = k->q.head; at > 0; at--) {
		prev = f;
		f = f->next;
	}
	if (prev == NULL)
		k->q.head = f->next;
	else
		prev->next = f->next;
	if (k->q.tail == f)
		k->q.tail = prev;
	k->q.n--;
	simnet_frame_free(f);
	lost(s, k);
}

void
simnet_partition(struct sim *s, int one_way)
{
	unsigned char side[SIM_MAX_NODES] = {0};
	size_t size = (size_t)sim_range(s, 1, (int64_t)s->n - 1), k = 0;
	char group[SIM_MAX_NODES * 34] = "";

	/* A group of size nodes, drawn, against the rest. */
	while (k < size) {
		size_t i = (size_t)sim_rand(s, s->n);
		if (!side[i]) {
			side[i] = 1;
			k++;
		}
	}
	for (size_t a = 0; a < s->n; a++) {
		if (side[a]) {
			strcat(group, " ");
			strcat(group, s->nodes[a].name);
		}
		for (size_t b = 0; b < s->n; b++)
			if (side[a] && !side[b]) {
				s->blocked[a][b] = 1;
				if (!one_way)
					s->blocked[b][a] = 1;
			}
	}
	sim_trace(s, "partition%s:%s against the rest",
	          one_way ? " (one way: their frames do not get out)" : "",
	          group);
	s->st->partitions++;
}

void
simnet_heal(struct sim *s)
{
	int any = 0;

	/* What waited goes when TCP next retransmits. */
	for (struct sim_conn *k = s->conns; k != NULL; k = k->next) {
		int64_t at;
		if (!s->blocked[k->src][k->dst] || k->q.head == NULL)
			continue;
		at = s->now + sim_range(s, 1, 200);
		for (struct sim_frame *f = k->q.head; f != NULL; f = f->next)
			if (f->at < at)
				f->at = at;
		if (k->q.last_at < at)
			k->q.last_at = at;
	}
	for (size_t a = 0; a < s->n; a++)
		for (size_t b = 0; b < s->n; b++)
			any |= s->blocked[a][b];
	memset(s->blocked, 0, sizeof(s->blocked));
	if (any)
		sim_trace(s, "partition healed");
}

void
simnet_free(struct sim *s)
{
	struct sim_conn *k;

	while ((k = s->conns) != NULL) {
		s->conns = k->next;
		simnet_queue_clear(&k->q);
		free(k);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		if (n->c != NULL)
			turn_fini(&n->turn);
		simnet_queue_clear(&n->inbox);
		simnet_queue_clear(&n->app_held);
		simnet_queue_clear(&n->app_down);
		simnet_queue_clear(&n->app_up);
		simnet_queue_clear(&n->app_inbox);
	}
}
