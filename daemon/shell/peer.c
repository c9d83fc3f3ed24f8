/*
 * peer.c - the sockets between daemons and the reliable links on them.
 *
 * Each daemon listens with one pair1 socket in polyamorous mode, which only
 * receives, and dials every other node with a pair1 socket, which only
 * sends.  (nng 1.5.2's push0 can crash when a connection closes under
 * load, nng issue #1653; pair1 does not.)  A batch (PeerBatch) carries a hello,
 * an ack and as many queued link items as fit in BATCH_BYTES.  Items are packed
 * once, when queued, and a batch is the packed header followed by the items as
 * field 4 of PeerBatch, so sending never re-encodes.
 *
 * Reliability lives in link.c; this file decides when to resend (after a
 * reconnect, a hello, or RESEND_MS without progress) and resets links when
 * a peer restarts (its epoch changes).  A restart loses no application
 * message: each outgoing channel keeps every message until the receiving
 * application has taken it (the inflight queue) and sends those again on
 * the new link; application numbering (app_seq) goes on across restarts,
 * and node.c drops an app_seq it already has.
 *
 * Connections.  The listener binds each peer to the connection its
 * batches come on (bind_pipe()).  A batch naming that peer on another
 * connection is dropped while the bound one is
 * open and was heard from within DEAD_MS, unless the new one proves it
 * hears us (its to_epoch is our random epoch).  A stranger who can reach
 * the port but not read our traffic can therefore not reset, take over or
 * silence a live link; see the README.
 *
 * Flow control.  Each outgoing channel has a window of cfg->window payload
 * bytes: a message counts against it from the moment the application sends
 * it until the receiving application has been handed it, which the
 * receiver reports as PeerAck.taken.  The application learns how far it
 * may send from AppCredit (app.c), so nothing is refused or dropped for
 * want of room: senders wait.  Acks and taken counts ride on whatever
 * batch goes to the peer next, or go alone after ACK_DELAY_MS, or at once
 * when they reopen a quarter of a window.
 *
 * Liveness.  Every peer gets a batch at least every HEARTBEAT_MS; a
 * connection that brought nothing for DEAD_MS is closed so that nng dials
 * again (TCP may otherwise sit on a dead connection for minutes after a
 * partition), and status reports the peer disconnected meanwhile.
 *
 * TLS.  On tls+tcp:// links tls.c configures the dialers and the listener,
 * signs the first batch of each new connection, and admits a batch on the
 * listener only on a connection its sender's signed hello bound to it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "cutd.h"
#include "cutproto.h"
#include "log.h"
#include "tls.h"

#define RECV_PER_TURN    256
#define BATCHES_PER_TURN 64

static void
pipe_event(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct peer *p = arg;

	if (ev == NNG_PIPE_EV_ADD_POST) {
		atomic_fetch_add(&p->pipes, 1);
		atomic_store(&p->pipe_id, nng_pipe_id(pipe));
		atomic_store(&p->pipe_since_ms, cutd_now_ms());
		atomic_store(&p->reconnected, 1);
	} else if (ev == NNG_PIPE_EV_REM_POST) {
		atomic_fetch_sub(&p->pipes, 1);
	}
}

/* A connection to our listener closed: it no longer speaks for anyone. */
static void
listener_event(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct cutd *d = arg;

	(void)ev;
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		unsigned id = nng_pipe_id(pipe);
		atomic_compare_exchange_strong(&d->peers[v].in_pipe, &id, 0);
	}
}

/* Replaces *lp with a new link; on failure *lp stays. */
static int
fresh_link(struct link **lp)
{
	struct link *l;

	if (link_new(LINK_WINDOW, LINK_HOLD, &l) != 0)
		return NNG_ENOMEM;
	link_free(*lp);
	*lp = l;
	return 0;
}

/* Forgets the batch nng would not take: its items go again after a
 * rewind, or not at all after a reset. */
static void
drop_pending(struct peer *p)
{
	if (p->pending != NULL) {
		nng_msg_free(p->pending);
		p->pending = NULL;
	}
}

/* Both links with p start again: numbering from 1, nothing held, nothing
 * unacknowledged.  The application channels keep their state. */
static int
new_links(struct peer *p)
{
	p->taken_reported = 0;
	p->credit_force = 1;
	drop_pending(p);
	if (fresh_link(&p->out) != 0 || fresh_link(&p->in) != 0)
		return NNG_ENOMEM;
	return 0;
}

/* Starts a dialer to p's endpoint. */
static int
redial(struct cutd *d, struct peer *p)
{
	const char *url = d->cfg->nodes[p->node].peer;
	int rv;

	p->dialed_ms = cutd_now_ms();
	if ((rv = tls_dial(d->tls, p->push, p->node, url, &p->dialer)) != 0)
		log_err("cannot dial %s at %s: %s", d->cfg->nodes[p->node].name,
		        url, nng_strerror(rv));
	return rv;
}

static int
dial_peer(struct cutd *d, struct peer *p)
{
	int rv;

	if ((rv = nng_pair1_open(&p->push)) != 0)
		return rv;
	nng_socket_set_ms(p->push, NNG_OPT_RECONNMINT, 100);
	nng_socket_set_ms(p->push, NNG_OPT_RECONNMAXT, 1000);
	nng_socket_set_int(p->push, NNG_OPT_SENDBUF, 64);
	/* Nothing comes back on this socket; the limit guards it anyway. */
	nng_socket_set_size(p->push, NNG_OPT_RECVMAXSZ, 1024);
	nng_pipe_notify(p->push, NNG_PIPE_EV_ADD_POST, pipe_event, p);
	nng_pipe_notify(p->push, NNG_PIPE_EV_REM_POST, pipe_event, p);
	return redial(d, p);
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
peer_start(struct cutd *d)
{
	int rv;

	if ((rv = listen_peers(d)) != 0)
		return rv;
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		struct peer *p = &d->peers[v];
		if (v == d->self)
			continue;
		fifo_init(&p->inflight);
		if ((rv = new_links(p)) != 0 || (rv = dial_peer(d, p)) != 0)
			return rv;
		p->progress_ms = p->heard_ms = p->sent_ms = cutd_now_ms();
	}
	return 0;
}

void
peer_drop_connections(struct cutd *d)
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
		if (v == d->self ||
		    now - atomic_load(&d->peers[v].pipe_since_ms) < 200)
			continue;
		pipe.id = atomic_load(&d->peers[v].pipe_id);
		if (pipe.id != 0)
			nng_pipe_close(pipe);
	}
}

void
peer_free(struct cutd *d)
{
	for (size_t v = 0; d->peers != NULL && v < d->cfg->nnodes; v++) {
		struct peer *p = &d->peers[v];
		drop_pending(p);
		link_free(p->out);
		link_free(p->in);
		fifo_fini(&p->inflight);
	}
	free(d->peers);
	d->peers = NULL;
}

uint64_t
peer_next_seq(struct cutd *d, size_t node)
{
	return link_next_seq(d->peers[node].out);
}

void *
peer_push_space(struct cutd *d, size_t node, size_t len)
{
	struct peer *p = &d->peers[node];

	/* After a quiet spell the resend clock starts now, not then. */
	if (link_unacked(p->out) == 0)
		p->progress_ms = p->acked_ms = cutd_now_ms();
	return link_push_space(p->out, len);
}

int
peer_window_open(struct cutd *d, size_t node, size_t len)
{
	const struct peer *p = &d->peers[node];

	/* A message larger than the window goes when nothing is out. */
	return p->inflight_bytes == 0 ||
	       p->inflight_bytes + len + d->cfg->message_cost <= d->cfg->window;
}

int
peer_note_data(struct cutd *d, size_t node, const Cut__V1__PeerData *data,
               size_t len)
{
	struct peer *p = &d->peers[node];

	/* A window of W bytes holds at most W / message_cost messages,
	 * which bounds what a snapshot under load records in transit. */
	size_t charge = len + d->cfg->message_cost;
	void *buf = fifo_push_space(&p->inflight,
	                            cut__v1__peer_data__get_packed_size(data),
	                            data->app_seq, charge);

	if (buf == NULL)
		return E_NOMEM;
	cut__v1__peer_data__pack(data, buf);
	p->inflight_bytes += charge;
	p->accepted += charge;
	return 0;
}

/* The receiving application took the channel's messages up to taken:
 * their bytes leave the window. */
static void
window_taken(struct peer *p, uint64_t taken)
{
	size_t k = 0, n = fifo_count(&p->inflight);

	if (taken <= p->app_taken)
		return;
	p->app_taken = taken;
	while (k < n) {
		const struct fifo_rec *r = fifo_rec(&p->inflight, k);
		if (r->tag > taken)
			break;
		p->inflight_bytes -= r->tag2;
		k++;
	}
	fifo_pop(&p->inflight, k);
}

void
peer_taken(struct cutd *d, size_t node, uint64_t app_seq, size_t len)
{
	struct peer *p = &d->peers[node];

	p->taken = app_seq;
	p->taken_bytes += len;
	if (p->ack_due_ms == 0)
		p->ack_due_ms = cutd_now_ms();
}

/* Whether what we send to p has stopped arriving: items wait for an ack
 * that has not moved for DEAD_MS, though the peer acks at least every
 * HEARTBEAT_MS.  (Heard from, but not reached: a one-way partition.) */
static int
stuck(const struct peer *p, int64_t now)
{
	return link_unacked(p->out) > 0 && now - p->acked_ms >= DEAD_MS;
}

int
peer_connected(struct cutd *d, size_t node, int64_t now)
{
	const struct peer *p = &d->peers[node];

	return atomic_load(&p->pipes) > 0 && p->epoch != 0 &&
	       now - p->heard_ms < DEAD_MS && !stuck(p, now);
}

/* Queues again, on the new link to p, every application message its
 * application has not taken, in order.  Returns how many. */
static size_t
send_again(struct cutd *d, struct peer *p)
{
	size_t n = fifo_count(&p->inflight), k;

	for (k = 0; k < n; k++) {
		const struct fifo_rec *r = fifo_rec(&p->inflight, k);
		Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
		Cut__V1__PeerData *data = cut__v1__peer_data__unpack(
		    NULL, r->len, fifo_data(&p->inflight, r));
		int rv = E_NOMEM;

		if (data != NULL) {
			data->seq = peer_next_seq(d, p->node);
			it.item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
			it.data = data;
			rv = node_push_item(d, p->node, &it);
			cut__v1__peer_data__free_unpacked(data, NULL);
		}
		if (rv != 0) {
			log_err("cannot queue message %" PRIu64 " to %s again: "
			        "%s",
			        r->tag, d->cfg->nodes[p->node].name,
			        err_str(rv));
			break;
		}
	}
	p->resent += k;
	return k;
}

/* The peer restarted: link numbering starts again on both links, while
 * the application channels go on where they stand. */
static void
restarted(struct cutd *d, struct peer *p)
{
	size_t dropped = link_unacked(p->out), again;

	node_peer_restarted(d, p->node);
	if (new_links(p) != 0) {
		log_err("out of memory resetting links");
		return;
	}
	again = send_again(d, p);
	log_warnx("%s restarted; %zu messages its application had not taken "
	          "go again (%zu items of the old link dropped)",
	          d->cfg->nodes[p->node].name, again, dropped);
	p->progress_ms = cutd_now_ms();
}

static void
bad(struct cutd *d, const char *from, const char *what)
{
	d->bad_peer++;
	log_warnx("bad peer frame from %s: %s; dropped", from, what);
}

/* Hands one in-order item of the link from p to the node logic. */
static void
dispatch(struct cutd *d, struct peer *p, const Cut__V1__PeerItem *it)
{
	const char *from = d->cfg->nodes[p->node].name;
	int rv = 0;

	switch (it->item_case) {
	case CUT__V1__PEER_ITEM__ITEM_DATA:
		if (it->data->payload.len > d->cfg->max_message ||
		    cutd_ctype(it->data->content_type) == NULL) {
			rv = E_INVAL;
			break;
		}
		rv = node_data(d, p->node, it->data->app_seq,
		               cutd_ctype(it->data->content_type),
		               it->data->payload.data, it->data->payload.len);
		break;
	case CUT__V1__PEER_ITEM__ITEM_MARKER:
		/* The same bounds as a Start request's timeout. */
		if (it->marker->has_timeout_ms &&
		    (it->marker->timeout_ms < 100 ||
		     it->marker->timeout_ms > 3600000)) {
			rv = E_INVAL;
			break;
		}
		rv = node_marker(
		    d, p->node, it->marker->snapshot_id, it->marker->count,
		    it->marker->has_timeout_ms ? it->marker->timeout_ms : 0);
		if (rv == E_DUP || rv == E_STATE) {
			log_debug("late or duplicate marker %s from %s",
			          it->marker->snapshot_id, from);
			rv = 0;
		}
		break;
	case CUT__V1__PEER_ITEM__ITEM_PART:
		rv = node_part(d, p->node, it->part);
		break;
	case CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES:
		rv = node_part_messages(d, p->node, it->part_messages);
		break;
	case CUT__V1__PEER_ITEM__ITEM_ABORT:
		rv = node_abort_msg(d, p->node, it->abort->snapshot_id,
		                    it->abort->reason, it->abort->root_cause);
		break;
	case CUT__V1__PEER_ITEM__ITEM_RENUMBER:
		log_notice("the channel from %s numbers from 1 again: its "
		           "daemon and application both started afresh",
		           from);
		rv = node_resume_in(d, p->node, 0);
		break;
	default:
		rv = E_INVAL;
	}
	if (rv != 0)
		bad(d, from, err_str(rv));
}

static uint64_t
item_seq(const Cut__V1__PeerItem *it)
{
	switch (it->item_case) {
	case CUT__V1__PEER_ITEM__ITEM_DATA:
		return it->data->seq;
	case CUT__V1__PEER_ITEM__ITEM_MARKER:
		return it->marker->seq;
	case CUT__V1__PEER_ITEM__ITEM_PART:
		return it->part->seq;
	case CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES:
		return it->part_messages->seq;
	case CUT__V1__PEER_ITEM__ITEM_ABORT:
		return it->abort->seq;
	case CUT__V1__PEER_ITEM__ITEM_RENUMBER:
		return it->renumber->seq;
	default:
		return 0;
	}
}

/* Runs a sequenced item through the link and then any held items it
 * releases. */
static void
sequenced(struct cutd *d, struct peer *p, const Cut__V1__PeerItem *it)
{
	uint64_t seq = item_seq(it);
	enum link_verdict v;
	uint8_t *buf = NULL;
	size_t len = 0;
	void *held;

	if (seq == 0) {
		bad(d, d->cfg->nodes[p->node].name, "sequence number 0");
		return;
	}
	if (seq > link_delivered(p->in) + 1) {
		len = cut__v1__peer_item__get_packed_size(it);
		if ((buf = malloc(len ? len : 1)) == NULL)
			return;
		cut__v1__peer_item__pack(it, buf);
	}
	v = link_accept(p->in, seq, buf, len);
	free(buf);
	if (v != LINK_DELIVER)
		return;
	if (p->ack_due_ms == 0)
		p->ack_due_ms = cutd_now_ms();
	dispatch(d, p, it);
	while (link_release(p->in, &held, &len)) {
		Cut__V1__PeerItem *h =
		    cut__v1__peer_item__unpack(NULL, len, held);
		free(held);
		if (h == NULL)
			continue;
		dispatch(d, p, h);
		cut__v1__peer_item__free_unpacked(h, NULL);
	}
}

static void
ack(struct cutd *d, struct peer *p, uint64_t upto)
{
	uint64_t before = link_acked(p->out);

	if (link_ack(p->out, upto) != 0) {
		bad(d, d->cfg->nodes[p->node].name, "ack beyond what was sent");
		return;
	}
	if (link_acked(p->out) != before)
		p->progress_ms = p->acked_ms = cutd_now_ms();
}

static void
item(struct cutd *d, struct peer *p, const Cut__V1__PeerItem *it)
{
	switch (it->item_case) {
	case CUT__V1__PEER_ITEM__ITEM_ACK:
		ack(d, p, it->ack->upto);
		if (it->ack->has_taken)
			window_taken(p, it->ack->taken);
		break;
	case CUT__V1__PEER_ITEM__ITEM_HELLO:
		/* The peer (re)connected to us: what we sent before may be
		 * lost, so start again from what it has. */
		if (it->hello->next_expected > 0)
			ack(d, p, it->hello->next_expected - 1);
		link_rewind(p->out);
		p->progress_ms = cutd_now_ms();
		break;
	case CUT__V1__PEER_ITEM__ITEM__NOT_SET:
		bad(d, d->cfg->nodes[p->node].name, "item of unknown kind");
		break;
	default:
		sequenced(d, p, it);
	}
}

/*
 * Whether the batch b that came on connection pipe may speak for p: it
 * came on p's bound connection, or the bound one is closed or silent for
 * DEAD_MS, or b proves it hears us (to_epoch is our epoch, which we send
 * only to p): p dialed again, and its old connection, if still open, is
 * stale.  Otherwise the connection poses as p: its batches are dropped.
 */
static int
bind_pipe(struct cutd *d, struct peer *p, const Cut__V1__PeerBatch *b,
          nng_pipe pipe, int64_t now)
{
	int proves = b->has_to_epoch && b->to_epoch == d->epoch;
	unsigned id = nng_pipe_id(pipe), cur = atomic_load(&p->in_pipe);

	if (id == cur)
		return 1;
	if (cur == 0 || now - p->heard_ms >= DEAD_MS || proves) {
		atomic_store(&p->in_pipe, id);
		return 1;
	}
	/* Dropped, not closed: closing a connection nng has just accepted
	 * can stop nng 1.5.2's listener accepting at all (seen under
	 * ASan), which would let a stranger cut a node off. */
	if (p->refused_pipe != id) {
		p->refused_pipe = id;
		p->refused_conns++;
	}
	bad(d, b->from,
	    "a second connection speaks for a node whose connection is live");
	return 0;
}

/* Checks a batch's header; returns the sending peer or NULL. */
static struct peer *
check_header(struct cutd *d, const Cut__V1__PeerBatch *b, nng_pipe pipe)
{
	int from;
	struct peer *p;

	if (strcmp(b->cluster, d->cfg->cluster) != 0) {
		bad(d, b->from, "batch for another cluster");
		return NULL;
	}
	if (strcmp(b->to, d->name) != 0) {
		bad(d, b->from, "batch for another node");
		return NULL;
	}
	if ((from = config_node_index(d->cfg, b->from)) < 0 ||
	    (size_t)from == d->self) {
		bad(d, "?", "batch from an unknown node");
		return NULL;
	}
	p = &d->peers[from];
	if (b->has_to_epoch && b->to_epoch != 0 && b->to_epoch != d->epoch)
		return NULL; /* meant for an earlier run of this daemon */
	if (!bind_pipe(d, p, b, pipe, cutd_now_ms()))
		return NULL;
	/* Only the bound connection gets here, so a new epoch is the
	 * peer's restart, not a stranger's say-so. */
	if (b->has_epoch && b->epoch != 0 && b->epoch != p->epoch) {
		if (p->epoch != 0)
			restarted(d, p);
		else if (link_delivered(p->in) == 0)
			fresh_link(&p->in); /* drop anything held before */
		p->epoch = b->epoch;
	}
	p->last_seen_ms = cutd_wall_ms();
	p->heard_ms = cutd_now_ms();
	return p;
}

void
peer_batch(struct cutd *d, nng_msg *msg)
{
	Cut__V1__PeerBatch *b;
	struct peer *p;

	b = (Cut__V1__PeerBatch *)cutproto_unpack_arena(
	    &cut__v1__peer_batch__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg), &d->arena);
	if (b == NULL) {
		bad(d, "?", "batch does not decode");
	} else if (tls_admit(d->tls, nng_msg_get_pipe(msg), b) != 0) {
		/* Not authenticated: before the header can change anything. */
	} else if ((p = check_header(d, b, nng_msg_get_pipe(msg))) != NULL) {
		for (size_t i = 0; i < b->n_items; i++)
			item(d, p, b->items[i]);
	}
	cutproto_arena_reset(&d->arena);
}

void
peer_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		nng_msg *msg;
		if (nng_recvmsg(d->pull, &msg, NNG_FLAG_NONBLOCK) != 0)
			return;
		peer_batch(d, msg);
		nng_msg_free(msg);
	}
}

/* Packs the batch header for p, with the signed hello auth if not NULL,
 * into buf (NULL: only measure). */
static size_t
batch_header(struct cutd *d, struct peer *p, const Cut__V1__PeerAuth *auth,
             uint8_t *buf)
{
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT;

	b.auth = (Cut__V1__PeerAuth *)auth;
	b.cluster = d->cfg->cluster;
	b.from = (char *)d->name;
	b.to = d->cfg->nodes[p->node].name;
	b.has_epoch = 1;
	b.epoch = d->epoch;
	b.has_to_epoch = 1;
	b.to_epoch = p->epoch;
	if (buf == NULL)
		return cut__v1__peer_batch__get_packed_size(&b);
	return cut__v1__peer_batch__pack(&b, buf);
}

/* Packs the hello and the ack p is owed, if any, into buf as PeerItems
 * (field 4 of the batch); buf holds at least 96 bytes. */
static size_t
control_items(struct cutd *d, struct peer *p, int hello, int ack, uint8_t *buf)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerHello h = CUT__V1__PEER_HELLO__INIT;
	Cut__V1__PeerAck a = CUT__V1__PEER_ACK__INIT;
	uint8_t item[40];
	size_t n = 0;

	if (hello) {
		h.next_expected = link_delivered(p->in) + 1;
		h.epoch = d->epoch;
		it.item_case = CUT__V1__PEER_ITEM__ITEM_HELLO;
		it.hello = &h;
		n += cutd_put_field(buf + n, 4, item,
		                    cut__v1__peer_item__pack(&it, item));
	}
	if (ack) {
		a.upto = link_delivered(p->in);
		if (p->in_chan >= 0) {
			a.has_taken = 1;
			a.taken = p->taken;
		}
		it.item_case = CUT__V1__PEER_ITEM__ITEM_ACK;
		it.ack = &a;
		n += cutd_put_field(buf + n, 4, item,
		                    cut__v1__peer_item__pack(&it, item));
	}
	return n;
}

/* Tries to send p's pending batch; returns 1 if it left (or there was
 * none). */
static int
send_pending(struct peer *p)
{
	if (p->pending == NULL)
		return 1;
	if (nng_sendmsg(p->push, p->pending, NNG_FLAG_NONBLOCK) != 0)
		return 0;
	p->pending = NULL;
	return 1;
}

/* Builds one batch to p of everything owed and unsent, up to BATCH_BYTES
 * of items, in one allocation, and tries to send it; a batch nng does not
 * take stays pending and goes first next turn, never rebuilt.  Returns 1
 * if it sent a batch with items and more may follow. */
static int
flush_one(struct cutd *d, struct peer *p, int ack)
{
	uint8_t ctl[128];
	size_t hdr, nctl, total, off, len, k = 0, items = 0;
	uint64_t seq;
	const void *data;
	const Cut__V1__PeerAuth *auth = NULL;
	nng_msg *msg;

	if (!send_pending(p))
		return 0;
	if (!p->hello_due && !ack && link_unsent(p->out) == 0)
		return 0;
	/* A new connection's first batch proves who we are (TLS links). */
	if (p->hello_due &&
	    tls_hello(d->tls, p->node, d->epoch, p->epoch, &auth) != 0)
		return 0;
	nctl = control_items(d, p, p->hello_due, ack, ctl);
	hdr = batch_header(d, p, auth, NULL);
	total = hdr + nctl;
	/* Measure first, then copy once into a message of the final size. */
	while (link_peek(p->out, k, &data, &len) &&
	       (k == 0 || total - hdr - nctl + len <= BATCH_BYTES)) {
		total += cutd_field_size(len);
		k++;
	}
	if (nng_msg_alloc(&msg, total) != 0)
		return 0;
	off = batch_header(d, p, auth, nng_msg_body(msg));
	memcpy((uint8_t *)nng_msg_body(msg) + off, ctl, nctl);
	off += nctl;
	for (; items < k && link_next(p->out, &data, &len, &seq); items++) {
		off += cutd_put_field((uint8_t *)nng_msg_body(msg) + off, 4,
		                      data, len);
	}
	nng_msg_chop(msg, total - off);
	p->hello_due = 0;
	if (ack) {
		p->ack_due_ms = 0;
		p->taken_reported = p->taken;
		p->taken_bytes = 0;
	}
	p->sent_ms = cutd_now_ms();
	p->pending = msg;
	return send_pending(p) && items > 0;
}

/* Whether p is owed an ack that should go now: it rides on any batch,
 * and goes alone once ACK_DELAY_MS old or when it reopens a quarter of
 * the peer's window, or as a heartbeat. */
static int
ack_now(struct cutd *d, struct peer *p, int64_t now)
{
	if (now - p->sent_ms >= HEARTBEAT_MS)
		return 1;
	if (p->ack_due_ms == 0)
		return 0;
	return link_unsent(p->out) > 0 || p->hello_due ||
	       now - p->ack_due_ms >= ACK_DELAY_MS ||
	       p->taken_bytes >= d->cfg->window / 8;
}

void
peer_flush(struct cutd *d)
{
	int64_t now = cutd_now_ms();

	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		struct peer *p = &d->peers[v];
		if (v == d->self)
			continue;
		if (atomic_exchange(&p->reconnected, 0)) {
			/* Whatever went into the old connection may be
			 * gone: say hello and send it all again. */
			p->hello_due = 1;
			link_rewind(p->out);
			drop_pending(p);
		}
		if (atomic_load(&p->pipes) == 0)
			continue; /* nng would only queue it for a dead pipe */
		flush_one(d, p, ack_now(d, p, now));
		for (int i = 0; i < BATCHES_PER_TURN && flush_one(d, p, 0); i++)
			;
	}
}

/* Closes our connection to p when nothing came from p for DEAD_MS or
 * nothing we sent was acknowledged for as long, so that nng dials again:
 * TCP can sit for minutes on a connection a partition broke. */
static void
redial_if_dead(struct cutd *d, struct peer *p, int64_t now)
{
	nng_pipe pipe = NNG_PIPE_INITIALIZER;

	if (atomic_load(&p->pipes) == 0 ||
	    now - atomic_load(&p->pipe_since_ms) < DEAD_MS ||
	    (now - p->heard_ms < DEAD_MS && !stuck(p, now)))
		return;
	pipe.id = atomic_load(&p->pipe_id);
	if (pipe.id != 0) {
		log_notice("no word from %s for %d ms: connecting again",
		           d->cfg->nodes[p->node].name, DEAD_MS);
		nng_pipe_close(pipe);
	}
	/* Give the new connection its time. */
	p->heard_ms = p->acked_ms = now;
}

/* A dialer that has not connected for REDIAL_MS is replaced: its connect
 * may be waiting out the kernel's SYN backoff (seconds, growing) from a
 * partition that has since healed, where a fresh one connects at once. */
static void
renew_dialer(struct cutd *d, struct peer *p, int64_t now)
{
	if (atomic_load(&p->pipes) > 0 || now - p->dialed_ms < REDIAL_MS)
		return;
	tls_dialer_done(d->tls, p->node, p->dialer);
	nng_dialer_close(p->dialer);
	redial(d, p);
}

void
peer_timers(struct cutd *d, int64_t now)
{
	tls_timers(d->tls, now);
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		struct peer *p = &d->peers[v];
		if (v == d->self)
			continue;
		redial_if_dead(d, p, now);
		renew_dialer(d, p, now);
		if (link_unacked(p->out) == 0)
			continue;
		/* Everything went out and nothing came back in time: go back
		 * to the first unacknowledged item.  A backlog still going
		 * out is not silence. */
		if (link_unsent(p->out) == 0 &&
		    now - p->progress_ms >= RESEND_MS) {
			link_rewind(p->out);
			p->progress_ms = now;
		}
	}
}

int
peer_next_timer(struct cutd *d, int64_t now, int max)
{
	int64_t ms = max;

	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		const struct peer *p = &d->peers[v];
		if (v == d->self)
			continue;
		if (atomic_load(&p->pipes) == 0) {
			/* Nothing is sent without a connection: only the
			 * dialer's renewal is due. */
			if (p->dialed_ms + REDIAL_MS - now < ms)
				ms = p->dialed_ms + REDIAL_MS - now;
			continue;
		}
		if (p->pending != NULL)
			ms = ms < 1 ? ms : 1;
		if (p->ack_due_ms != 0 &&
		    p->ack_due_ms + ACK_DELAY_MS - now < ms)
			ms = p->ack_due_ms + ACK_DELAY_MS - now;
		if (p->sent_ms + HEARTBEAT_MS - now < ms)
			ms = p->sent_ms + HEARTBEAT_MS - now;
		if (link_unacked(p->out) > 0 &&
		    p->progress_ms + RESEND_MS - now < ms)
			ms = p->progress_ms + RESEND_MS - now;
	}
	return ms < 0 ? 0 : (int)ms;
}
