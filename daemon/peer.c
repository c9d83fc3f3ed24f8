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
 * a peer restarts (its epoch changes).
 */
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "cutd.h"
#include "cutproto.h"
#include "log.h"

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

/* Both links with p start again: numbering from 1, nothing held, nothing
 * unacknowledged (and so no application message awaiting its ack). */
static int
new_links(struct peer *p)
{
	p->head = p->tail = 0;
	p->app_acked = 0;
	if (fresh_link(&p->out) != 0 || fresh_link(&p->in) != 0)
		return NNG_ENOMEM;
	return 0;
}

static int
dial_peer(struct cutd *d, struct peer *p)
{
	const char *url = d->cfg->nodes[p->node].peer;
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
	if ((rv = nng_dial(p->push, url, NULL, NNG_FLAG_NONBLOCK)) != 0)
		log_err("cannot dial %s at %s: %s", d->cfg->nodes[p->node].name,
		        url, nng_strerror(rv));
	return rv;
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
	if ((rv = nng_listen(d->pull, url, NULL, 0)) != 0)
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
		if ((rv = new_links(p)) != 0 || (rv = dial_peer(d, p)) != 0)
			return rv;
		p->progress_ms = cutd_now_ms();
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

uint64_t
peer_next_seq(struct cutd *d, size_t node)
{
	return link_next_seq(d->peers[node].out);
}

int
peer_push(struct cutd *d, size_t node, const void *item, size_t len)
{
	struct peer *p = &d->peers[node];

	/* After a quiet spell the resend clock starts now, not then. */
	if (link_unacked(p->out) == 0)
		p->progress_ms = cutd_now_ms();
	return link_push(p->out, item, len);
}

void
peer_note_data(struct cutd *d, size_t node, uint64_t seq, uint64_t app_seq)
{
	struct peer *p = &d->peers[node];

	if (p->tail == p->cap) {
		size_t live = p->tail - p->head;
		if (p->head > 0 && live < p->cap / 2) {
			memmove(p->unacked, p->unacked + p->head,
			        live * sizeof(*p->unacked));
		} else {
			size_t cap = p->cap ? p->cap * 2 : 256;
			void *v =
			    realloc(p->unacked, cap * sizeof(*p->unacked));
			if (v == NULL)
				return; /* the count only lags */
			p->unacked = v;
			p->cap = cap;
			memmove(p->unacked, p->unacked + p->head,
			        live * sizeof(*p->unacked));
		}
		p->head = 0;
		p->tail = live;
	}
	p->unacked[p->tail].seq = seq;
	p->unacked[p->tail].app_seq = app_seq;
	p->tail++;
}

/* The peer restarted: its numbering starts again, and so does ours. */
static void
restarted(struct cutd *d, struct peer *p)
{
	size_t lost = link_unacked(p->out);

	log_warnx("%s restarted; %zu unacknowledged items to it are dropped",
	          d->cfg->nodes[p->node].name, lost);
	node_peer_restarted(d, p->node);
	if (new_links(p) != 0)
		log_err("out of memory resetting links");
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
			rv = ENGINE_EINVAL;
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
			rv = ENGINE_EINVAL;
			break;
		}
		rv = node_marker(
		    d, p->node, it->marker->snapshot_id, it->marker->count,
		    it->marker->has_timeout_ms ? it->marker->timeout_ms : 0);
		if (rv == ENGINE_EDUP || rv == ENGINE_ESTATE) {
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
	default:
		rv = ENGINE_EINVAL;
	}
	if (rv != 0)
		bad(d, from, engine_strerror(rv));
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

	p->ack_due = 1;
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
		p->progress_ms = cutd_now_ms();
	while (p->head < p->tail && p->unacked[p->head].seq <= upto)
		p->app_acked = p->unacked[p->head++].app_seq;
}

static void
item(struct cutd *d, struct peer *p, const Cut__V1__PeerItem *it)
{
	switch (it->item_case) {
	case CUT__V1__PEER_ITEM__ITEM_ACK:
		ack(d, p, it->ack->upto);
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

/* Checks a batch's header; returns the sending peer or NULL. */
static struct peer *
check_header(struct cutd *d, const Cut__V1__PeerBatch *b)
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
	if (b->has_epoch && p->epoch != 0 && b->epoch < p->epoch)
		return NULL; /* from an earlier run of the sender */
	if (b->has_epoch && b->epoch != p->epoch) {
		if (p->epoch != 0)
			restarted(d, p);
		else if (link_delivered(p->in) == 0)
			fresh_link(&p->in); /* drop anything held before */
		p->epoch = b->epoch;
	}
	p->last_seen_ms = cutd_wall_ms();
	return p;
}

static void
batch(struct cutd *d, nng_msg *msg)
{
	Cut__V1__PeerBatch *b;
	struct peer *p;

	b = (Cut__V1__PeerBatch *)cutproto_unpack(
	    &cut__v1__peer_batch__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg));
	if (b == NULL) {
		bad(d, "?", "batch does not decode");
		return;
	}
	if ((p = check_header(d, b)) != NULL)
		for (size_t i = 0; i < b->n_items; i++)
			item(d, p, b->items[i]);
	cut__v1__peer_batch__free_unpacked(b, NULL);
}

void
peer_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		nng_msg *msg;
		if (nng_recvmsg(d->pull, &msg, NNG_FLAG_NONBLOCK) != 0)
			return;
		batch(d, msg);
		nng_msg_free(msg);
	}
}

static int
append_packed(nng_msg *msg, const Cut__V1__PeerItem *it)
{
	uint8_t buf[64];
	size_t len = cut__v1__peer_item__pack(it, buf);

	return cutd_append_field(msg, 4, buf, len);
}

static int
start_batch(struct cutd *d, struct peer *p, nng_msg **ret)
{
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT;
	size_t len;
	nng_msg *msg;

	b.cluster = d->cfg->cluster;
	b.from = (char *)d->name;
	b.to = d->cfg->nodes[p->node].name;
	b.has_epoch = 1;
	b.epoch = d->epoch;
	b.has_to_epoch = 1;
	b.to_epoch = p->epoch;
	len = cut__v1__peer_batch__get_packed_size(&b);
	if (nng_msg_alloc(&msg, len) != 0)
		return -1;
	cut__v1__peer_batch__pack(&b, nng_msg_body(msg));
	*ret = msg;
	return 0;
}

/* The hello and ack the peer is owed, if any. */
static int
control_items(struct cutd *d, struct peer *p, nng_msg *msg)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerHello h = CUT__V1__PEER_HELLO__INIT;
	Cut__V1__PeerAck a = CUT__V1__PEER_ACK__INIT;
	int rv = 0;

	if (p->hello_due) {
		h.next_expected = link_delivered(p->in) + 1;
		h.epoch = d->epoch;
		it.item_case = CUT__V1__PEER_ITEM__ITEM_HELLO;
		it.hello = &h;
		rv |= append_packed(msg, &it);
	}
	if (p->ack_due) {
		a.upto = link_delivered(p->in);
		it.item_case = CUT__V1__PEER_ITEM__ITEM_ACK;
		it.ack = &a;
		rv |= append_packed(msg, &it);
	}
	return rv;
}

/* Sends one batch to p; returns 1 if it sent one and more may follow. */
static int
flush_one(struct cutd *d, struct peer *p)
{
	uint64_t first = 0, seq;
	const void *data;
	size_t len, bytes = 0;
	nng_msg *msg = NULL;
	int items = 0;

	if (!p->hello_due && !p->ack_due && link_unsent(p->out) == 0)
		return 0;
	if (start_batch(d, p, &msg) != 0 || control_items(d, p, msg) != 0)
		goto fail;
	while (bytes < BATCH_BYTES && link_next(p->out, &data, &len, &seq)) {
		if (first == 0)
			first = seq;
		if (cutd_append_field(msg, 4, data, len) != 0)
			goto fail;
		bytes += len;
		items++;
	}
	if (nng_sendmsg(p->push, msg, NNG_FLAG_NONBLOCK) != 0)
		goto fail;
	p->hello_due = p->ack_due = 0;
	return items > 0;
fail:
	if (msg != NULL)
		nng_msg_free(msg);
	if (first != 0)
		link_unsend(p->out, first);
	return 0;
}

void
peer_flush(struct cutd *d)
{
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		struct peer *p = &d->peers[v];
		if (v == d->self)
			continue;
		if (atomic_exchange(&p->reconnected, 0)) {
			/* Whatever went into the old connection may be
			 * gone: say hello and send it all again. */
			p->hello_due = 1;
			link_rewind(p->out);
		}
		for (int i = 0; i < BATCHES_PER_TURN && flush_one(d, p); i++)
			;
	}
}

void
peer_timers(struct cutd *d, int64_t now)
{
	for (size_t v = 0; v < d->cfg->nnodes; v++) {
		struct peer *p = &d->peers[v];
		if (v == d->self || link_unacked(p->out) == 0)
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
