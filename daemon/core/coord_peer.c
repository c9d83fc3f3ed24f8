/*
 * coord_peer.c - the reliable links between this node and the others, and
 * the frames that carry them.
 *
 * A batch (PeerBatch) carries a hello, an ack and as many queued link
 * items as fit in BATCH_BYTES.  Items are packed once, when queued, and a
 * batch is the packed header followed by the items as field 4 of
 * PeerBatch, so building a frame never re-encodes.
 *
 * Reliability lives in link.c; this file decides when to resend (after a
 * new connection, a hello, or RESEND_MS without progress) and resets links
 * when a peer restarts (its epoch changes).  A restart loses no application
 * message: each outgoing channel keeps every message until the receiving
 * application has taken it (the inflight queue) and sends those again on
 * the new link; application numbering (app_seq) goes on across restarts,
 * and coord_snap.c drops an app_seq it already has.
 *
 * What this node knows of each peer (struct peer), from the batches it
 * receives:
 *
 *   UNBOUND --a batch on listener connection a--> BOUND(a)
 *   BOUND(a) --batch on b; a closed (coord_peer_conn_closed()), silent
 *       for DEAD_MS, or b's to_epoch is our epoch--> BOUND(b)
 *   BOUND(a) --batch on b, otherwise--> BOUND(a); b refused, counted
 *
 *   EPOCH UNKNOWN --first batch with an epoch--> EPOCH e
 *   EPOCH e --bound batch with epoch e' != e--> EPOCH e': the peer
 *       restarted: snapshots in progress aborted, both links fresh, every
 *       message its application had not taken queued again (peer_restarted())
 *
 * and of the connection we dial to it (up, hello_due):
 *
 *   DOWN --coord_peer_up()--> UP, hello due, the outgoing link rewound
 *   UP --first frame--> UP, hello sent; --coord_peer_down()--> DOWN
 *   UP --nothing heard or acked for DEAD_MS--> coord_peer_silent(): the
 *       caller closes it and dials again
 *
 * Connections.  Each peer is bound to the listener connection its
 * batches come on (bind_conn()).  A batch naming that peer on another
 * connection is dropped while the bound one is open and was heard from
 * within DEAD_MS, unless the new one proves it hears us (its to_epoch is
 * our random epoch).  A stranger who can reach the port but not read our
 * traffic can therefore not reset, take over or silence a live link; see
 * the README.  Sequenced items count only in a batch whose to_epoch names
 * this run: a sender that has not heard from us yet may be sending the
 * rest of a link to an earlier run of ours, which already processed part
 * of it (a marker delivered twice, a renumbering undoing a resume); it
 * sends them again once it knows our epoch.
 *
 * Flow control.  Each outgoing channel has a window of cfg->window payload
 * bytes: a message counts against it from the moment the application sends
 * it until the receiving application has been handed it, which the
 * receiver reports as PeerAck.taken.  The application learns how far it
 * may send from AppCredit (coord_app.c), so nothing is refused or dropped
 * for want of room: senders wait.  Acks and taken counts ride on whatever
 * batch goes to the peer next, or go alone after ACK_DELAY_MS, or at once
 * when they reopen an eighth of a window.
 *
 * Liveness.  Every peer gets a batch at least every HEARTBEAT_MS; the
 * caller closes a connection that brought nothing for DEAD_MS
 * (coord_peer_silent()), so that its transport dials again.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "cutproto.h"
#include "log.h"

/* Replaces *lp with a new link; on failure *lp stays. */
static int
fresh_link(struct link **lp)
{
	struct link *l;

	if (link_new(LINK_WINDOW, LINK_HOLD, &l) != 0)
		return E_NOMEM;
	link_free(*lp);
	*lp = l;
	return 0;
}

/* Both links with p start again: numbering from 1, nothing held, nothing
 * unacknowledged.  The application channels keep their state. */
static int
new_links(struct peer *p)
{
	p->taken_reported = 0;
	p->credit_force = 1;
	p->renumber_seq = 0;
	if (fresh_link(&p->out) != 0 || fresh_link(&p->in) != 0)
		return E_NOMEM;
	return 0;
}

int
peer_restore_reset(struct coord *c, size_t node, uint64_t out_n, uint64_t in_m)
{
	struct peer *p = &c->peers[node];

	if (new_links(p) != 0)
		return E_NOMEM;
	fifo_clear(&p->inflight);
	p->inflight_bytes = 0;
	p->app_taken = p->taken_told = out_n;
	p->accepted = p->credit_sent = 0;
	p->credit_force = 1;
	p->resend_upto = 0;
	p->out_numbered = 1;
	p->taken = p->taken_reported = in_m;
	p->taken_bytes = 0;
	p->in_known = 1;
	p->hello_due = 1;
	p->ack_due_ms = c->now;
	p->progress_ms = p->acked_ms = c->now;
	if (p->out_chan >= 0 &&
	    engine_resume_out(c->eng, (size_t)p->out_chan, out_n) != 0)
		return E_STATE;
	if (p->in_chan >= 0 &&
	    engine_resume_in(c->eng, (size_t)p->in_chan, in_m) != 0)
		return E_STATE;
	/* The deletions it has not confirmed were on the old link. */
	sched_peer_epoch(c, node);
	return 0;
}

int
peer_init(struct coord *c)
{
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		struct peer *p = &c->peers[v];
		p->node = v;
		p->in_chan = p->out_chan = -1;
		fifo_init(&p->inflight);
		if (v == c->self)
			continue;
		if (new_links(p) != 0)
			return E_NOMEM;
		p->progress_ms = p->heard_ms = p->sent_ms = c->now;
	}
	return 0;
}

void
peer_fini(struct coord *c)
{
	for (size_t v = 0; c->peers != NULL && v < c->cfg->nnodes; v++) {
		struct peer *p = &c->peers[v];
		link_free(p->out);
		link_free(p->in);
		fifo_fini(&p->inflight);
	}
}

uint64_t
peer_next_seq(struct coord *c, size_t node)
{
	return link_next_seq(c->peers[node].out);
}

void *
peer_push_space(struct coord *c, size_t node, size_t len)
{
	struct peer *p = &c->peers[node];

	/* After a quiet spell the resend clock starts now, not then. */
	if (link_unacked(p->out) == 0)
		p->progress_ms = p->acked_ms = c->now;
	return link_push_space(p->out, len);
}

int
peer_push_item(struct coord *c, size_t node, const Cut__V1__PeerItem *item)
{
	size_t len = cut__v1__peer_item__get_packed_size(item);
	void *buf;

	/* Every message passes here: packed once, straight into the link's
	 * queue, with no allocation of its own. */
	if ((buf = peer_push_space(c, node, len)) == NULL)
		return E_FULL;
	cut__v1__peer_item__pack(item, buf);
	return 0;
}

size_t
peer_push_all(struct coord *c, const Cut__V1__PeerItem *item, uint64_t *seq,
              const char *what)
{
	size_t failed = 0;

	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		if (v == c->self)
			continue;
		*seq = peer_next_seq(c, v);
		if (peer_push_item(c, v, item) != 0) {
			log_warnx("cannot tell %s %s: its link is full",
			          c->cfg->nodes[v].name, what);
			failed++;
		}
	}
	return failed;
}

int
peer_window_open(struct coord *c, size_t node, size_t len)
{
	const struct peer *p = &c->peers[node];

	/* A message larger than the window goes when nothing is out. */
	return p->inflight_bytes == 0 ||
	       p->inflight_bytes + len + c->cfg->message_cost <= c->cfg->window;
}

int
peer_note_data(struct coord *c, size_t node, const Cut__V1__PeerData *data,
               size_t len)
{
	struct peer *p = &c->peers[node];

	/* A window of W bytes holds at most W / message_cost messages,
	 * which bounds what a snapshot under load records in transit. */
	size_t charge = len + c->cfg->message_cost;
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

void
peer_unnote_data(struct coord *c, size_t node, size_t len)
{
	struct peer *p = &c->peers[node];
	size_t charge = len + c->cfg->message_cost;

	fifo_unpush(&p->inflight);
	p->inflight_bytes -= charge;
	p->accepted -= charge;
}

/* The receiving application took the channel's messages up to taken:
 * their bytes leave the window.  Also when the count has not moved:
 * after this daemon restarted, its application sends again what it had
 * not heard was taken, and the receiver may have taken those messages
 * (from our previous run) before they join inflight; they leave at the
 * next ack instead of holding the window for good. */
static void
window_taken(struct peer *p, uint64_t taken)
{
	size_t k = 0, n = fifo_count(&p->inflight);

	if (taken > p->app_taken)
		p->app_taken = taken;
	while (k < n) {
		const struct fifo_rec *r = fifo_rec(&p->inflight, k);
		if (r->tag > p->app_taken)
			break;
		p->inflight_bytes -= r->tag2;
		k++;
	}
	fifo_pop(&p->inflight, k);
}

void
peer_taken(struct coord *c, size_t node, uint64_t app_seq, size_t len)
{
	struct peer *p = &c->peers[node];

	if (p->old_items > 0) {
		p->old_items--;
		return;
	}
	p->taken = app_seq;
	p->taken_bytes += len;
	if (p->ack_due_ms == 0)
		p->ack_due_ms = c->now;
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
coord_peer_alive(struct coord *c, size_t node)
{
	const struct peer *p = &c->peers[node];

	return p->up && p->epoch != 0 && c->now - p->heard_ms < DEAD_MS &&
	       !stuck(p, c->now);
}

uint64_t
coord_peer_epoch(const struct coord *c, size_t node)
{
	return c->peers[node].epoch;
}

int
coord_peer_hello_due(const struct coord *c, size_t node)
{
	return c->peers[node].hello_due;
}

/* Queues again, on the new link to p, every application message its
 * application has not taken, in order.  Returns how many. */
static size_t
send_again(struct coord *c, struct peer *p)
{
	size_t n = fifo_count(&p->inflight), k;

	for (k = 0; k < n; k++) {
		const struct fifo_rec *r = fifo_rec(&p->inflight, k);
		Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
		Cut__V1__PeerData *data = cut__v1__peer_data__unpack(
		    NULL, r->len, fifo_data(&p->inflight, r));
		int rv = E_NOMEM;

		if (data != NULL) {
			data->seq = peer_next_seq(c, p->node);
			it.item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
			it.data = data;
			rv = peer_push_item(c, p->node, &it);
			cut__v1__peer_data__free_unpacked(data, NULL);
		}
		if (rv != 0) {
			log_err("cannot queue message %" PRIu64 " to %s again: "
			        "%s",
			        r->tag, c->cfg->nodes[p->node].name,
			        err_str(rv));
			break;
		}
	}
	p->resent += k;
	return k;
}

/* The peer restarted: link numbering starts again on both links, while
 * the application channels go on where they stand.  Returns -1 if the
 * links could not be made (nothing changed). */
int
peer_restarted(struct coord *c, struct peer *p)
{
	size_t dropped = link_unacked(p->out), again;

	if (new_links(p) != 0) {
		log_err("out of memory resetting links");
		return -1;
	}
	again = send_again(c, p);
	log_warnx("%s restarted; %zu messages its application had not taken "
	          "go again (%zu items of the old link dropped)",
	          c->cfg->nodes[p->node].name, again, dropped);
	p->progress_ms = c->now;
	return 0;
}

static void
bad(struct coord *c, const char *from, const char *what)
{
	c->bad_peer++;
	log_warnx("bad peer frame from %s: %s; dropped", from, what);
}

void
coord_peer_bad(struct coord *c, const char *from, const char *what)
{
	bad(c, from, what);
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
	case CUT__V1__PEER_ITEM__ITEM_OUTCOME:
		return it->outcome->seq;
	case CUT__V1__PEER_ITEM__ITEM_OUTCOME_ASK:
		return it->outcome_ask->seq;
	case CUT__V1__PEER_ITEM__ITEM_FORGET:
		return it->forget->seq;
	case CUT__V1__PEER_ITEM__ITEM_FORGOTTEN:
		return it->forgotten->seq;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_PREPARE:
		return it->restore_prepare->seq;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_VOTE:
		return it->restore_vote->seq;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_ABORT:
		return it->restore_abort->seq;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_DONE:
		return it->restore_done->seq;
	default:
		return 0;
	}
}

/* Runs a sequenced item through the link and then any held items it
 * releases. */
/* Takes item it, sequenced on the link from p: 1 if it is the next in
 * order and goes to the layers above now (then so do those
 * peer_release() gives), 0 if it was held for a gap or dropped. */
static int
sequenced(struct coord *c, struct peer *p, const Cut__V1__PeerItem *it)
{
	uint64_t seq = item_seq(it);
	enum link_verdict v;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (seq == 0) {
		bad(c, c->cfg->nodes[p->node].name, "sequence number 0");
		return 0;
	}
	if (seq > link_delivered(p->in) + 1) {
		len = cut__v1__peer_item__get_packed_size(it);
		if ((buf = malloc(len ? len : 1)) == NULL)
			return 0;
		cut__v1__peer_item__pack(it, buf);
	}
	v = link_accept(p->in, seq, buf, len);
	free(buf);
	if (v != LINK_DELIVER)
		return 0;
	if (p->ack_due_ms == 0)
		p->ack_due_ms = c->now;
	return 1;
}

Cut__V1__PeerItem *
peer_release(struct coord *c, struct peer *p)
{
	void *held;
	size_t len;

	(void)c;
	while (link_release(p->in, &held, &len)) {
		Cut__V1__PeerItem *h =
		    cut__v1__peer_item__unpack(NULL, len, held);
		free(held);
		if (h != NULL)
			return h;
	}
	return NULL;
}

static void
ack(struct coord *c, struct peer *p, uint64_t upto)
{
	uint64_t before = link_acked(p->out);

	if (link_ack(p->out, upto) != 0) {
		bad(c, c->cfg->nodes[p->node].name, "ack beyond what was sent");
		return;
	}
	if (link_acked(p->out) != before)
		p->progress_ms = p->acked_ms = c->now;
}

int
peer_item(struct coord *c, struct peer *p, const Cut__V1__PeerItem *it,
          int for_us)
{
	switch (it->item_case) {
	case CUT__V1__PEER_ITEM__ITEM_ACK:
		ack(c, p, it->ack->upto);
		if (p->renumber_seq != 0 && it->ack->upto >= p->renumber_seq)
			p->renumber_seq = 0;
		if (it->ack->has_taken && p->renumber_seq == 0)
			window_taken(p, it->ack->taken);
		break;
	case CUT__V1__PEER_ITEM__ITEM_HELLO:
		/* The peer (re)connected to us: what we sent before may be
		 * lost, so start again from what it has. */
		if (it->hello->next_expected > 0)
			ack(c, p, it->hello->next_expected - 1);
		link_rewind(p->out);
		p->progress_ms = c->now;
		break;
	case CUT__V1__PEER_ITEM__ITEM__NOT_SET:
		bad(c, c->cfg->nodes[p->node].name, "item of unknown kind");
		break;
	default:
		/* A sender that does not know our run cannot know its items
		 * are meant for it: they may be the unacknowledged rest of
		 * a link to an earlier run of ours, which processed them
		 * already.  They go again once it has heard from us (see
		 * peer_bound()). */
		if (for_us)
			return sequenced(c, p, it);
	}
	return 0;
}

/*
 * Whether the batch b that came on connection conn may speak for p: it
 * came on p's bound connection, or the bound one is closed or silent for
 * DEAD_MS, or b proves it hears us (to_epoch is our epoch, which we send
 * only to p): p dialed again, and its old connection, if still open, is
 * stale.  Otherwise the connection poses as p: its batches are dropped.
 */
static int
bind_conn(struct coord *c, struct peer *p, const Cut__V1__PeerBatch *b,
          uint32_t conn)
{
	int proves = b->has_to_epoch && b->to_epoch == c->epoch;

	if (conn == p->in_conn)
		return 1;
	if (p->in_conn == 0 || c->now - p->heard_ms >= DEAD_MS || proves) {
		p->in_conn = conn;
		return 1;
	}
	/* Dropped, not closed: closing a connection nng has just accepted
	 * can stop nng 1.5.2's listener accepting at all (seen under
	 * ASan), which would let a stranger cut a node off. */
	/* Not a bad frame: a peer that restarted dials again before we
	 * hear its old connection close, and until it knows our run it
	 * cannot prove itself.  Counted once per connection (status:
	 * refused_conns), logged once. */
	if (p->refused_conn != conn) {
		p->refused_conn = conn;
		p->refused_conns++;
		log_info("%s: a second connection while its first is live; "
		         "dropped until it proves it hears us or the first "
		         "goes silent",
		         b->from);
	}
	return 0;
}

struct peer *
peer_bound(struct coord *c, const Cut__V1__PeerBatch *b, uint32_t conn)
{
	int from;
	struct peer *p;

	if (conn == 0) {
		bad(c, b->from, "batch on connection 0");
		return NULL;
	}
	if (strcmp(b->cluster, c->cfg->cluster) != 0) {
		bad(c, b->from, "batch for another cluster");
		return NULL;
	}
	if (strcmp(b->to, c->name) != 0) {
		bad(c, b->from, "batch for another node");
		return NULL;
	}
	if ((from = config_node_index(c->cfg, b->from)) < 0 ||
	    (size_t)from == c->self) {
		bad(c, "?", "batch from an unknown node");
		return NULL;
	}
	p = &c->peers[from];
	if (b->has_to_epoch && b->to_epoch != 0 && b->to_epoch != c->epoch)
		return NULL; /* meant for an earlier run of this daemon */
	if (!bind_conn(c, p, b, conn))
		return NULL;
	return p;
}

void
peer_first_epoch(struct coord *c, struct peer *p)
{
	(void)c;
	if (link_delivered(p->in) == 0)
		fresh_link(&p->in); /* drop anything held */
	/* What we sent it so far, without its epoch, was not taken
	 * (item()): it goes again, naming it. */
	link_rewind(p->out);
}

void
coord_peer_conn_closed(struct coord *c, uint32_t conn)
{
	for (size_t v = 0; v < c->cfg->nnodes; v++)
		if (c->peers[v].in_conn == conn)
			c->peers[v].in_conn = 0;
}

void
coord_peer_up(struct coord *c, size_t node)
{
	struct peer *p = &c->peers[node];

	/* Whatever went into the old connection may be gone: say hello and
	 * send it all again. */
	p->up = 1;
	p->ups++;
	p->hello_due = 1;
	link_rewind(p->out);
	log_info("connected to %s", c->cfg->nodes[node].name);
}

void
coord_peer_down(struct coord *c, size_t node)
{
	c->peers[node].up = 0;
	log_info("connection to %s closed", c->cfg->nodes[node].name);
}

int
coord_peer_silent(struct coord *c, size_t node)
{
	const struct peer *p = &c->peers[node];

	return c->now - p->heard_ms >= DEAD_MS || stuck(p, c->now);
}

void
coord_peer_redialed(struct coord *c, size_t node)
{
	struct peer *p = &c->peers[node];

	p->heard_ms = p->acked_ms = c->now;
}

/* Packs the batch header for p, with the signed hello auth if not NULL,
 * into buf (NULL: only measure). */
static size_t
batch_header(struct coord *c, struct peer *p, const Cut__V1__PeerAuth *auth,
             uint8_t *buf)
{
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT;

	b.auth = (Cut__V1__PeerAuth *)auth;
	b.cluster = c->cfg->cluster;
	b.from = (char *)c->name;
	b.to = c->cfg->nodes[p->node].name;
	b.has_epoch = 1;
	b.epoch = c->epoch;
	b.has_to_epoch = 1;
	b.to_epoch = p->epoch;
	b.has_generation = c->rs.gen != 0;
	b.generation = c->rs.gen;
	if (buf == NULL)
		return cut__v1__peer_batch__get_packed_size(&b);
	return cut__v1__peer_batch__pack(&b, buf);
}

/* Packs the hello and the ack p is owed, if any, into buf as PeerItems
 * (field 4 of the batch); buf holds at least 96 bytes. */
static size_t
control_items(struct coord *c, struct peer *p, int hello, int ack, uint8_t *buf)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerHello h = CUT__V1__PEER_HELLO__INIT;
	Cut__V1__PeerAck a = CUT__V1__PEER_ACK__INIT;
	uint8_t item[40];
	size_t n = 0;

	if (hello) {
		h.next_expected = link_delivered(p->in) + 1;
		h.epoch = c->epoch;
		it.item_case = CUT__V1__PEER_ITEM__ITEM_HELLO;
		it.hello = &h;
		n += wire_put_field(buf + n, 4, item,
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
		n += wire_put_field(buf + n, 4, item,
		                    cut__v1__peer_item__pack(&it, item));
	}
	return n;
}

/* Whether p is owed an ack that should go now: it rides on any batch,
 * and goes alone once ACK_DELAY_MS old or when it reopens an eighth of
 * the peer's window, or as a heartbeat. */
static int
ack_now(struct coord *c, struct peer *p)
{
	if (c->now - p->sent_ms >= HEARTBEAT_MS)
		return 1;
	if (p->ack_due_ms == 0)
		return 0;
	return link_unsent(p->out) > 0 || p->hello_due ||
	       c->now - p->ack_due_ms >= ACK_DELAY_MS ||
	       p->taken_bytes >= c->cfg->window / 8;
}

size_t
coord_peer_frame(struct coord *c, size_t node, const Cut__V1__PeerAuth *auth,
                 uint8_t *buf)
{
	struct peer *p = &c->peers[node];
	int ack = ack_now(c, p);
	uint8_t ctl[128];
	size_t hdr, nctl, total, off, len, k = 0, items = 0;
	uint64_t seq;
	const void *data;

	if (!p->hello_due && !ack && link_unsent(p->out) == 0)
		return 0;
	nctl = control_items(c, p, p->hello_due, ack, ctl);
	hdr = batch_header(c, p, p->hello_due ? auth : NULL, NULL);
	total = hdr + nctl;
	/* Measure first; the caller then has it copied once into a frame of
	 * the final size. */
	while (link_peek(p->out, k, &data, &len) &&
	       (k == 0 || total - hdr - nctl + len <= BATCH_BYTES)) {
		total += wire_field_size(len);
		k++;
	}
	if (buf == NULL)
		return total;
	off = batch_header(c, p, p->hello_due ? auth : NULL, buf);
	memcpy(buf + off, ctl, nctl);
	off += nctl;
	for (; items < k && link_next(p->out, &data, &len, &seq); items++)
		off += wire_put_field(buf + off, 4, data, len);
	p->hello_due = 0;
	if (ack) {
		p->ack_due_ms = 0;
		p->taken_reported = p->taken;
		p->taken_bytes = 0;
	}
	p->sent_ms = c->now;
	return off;
}

void
peer_timers(struct coord *c)
{
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		struct peer *p = &c->peers[v];
		if (v == c->self || link_unacked(p->out) == 0)
			continue;
		/* Everything went out and nothing came back in time: go back
		 * to the first unacknowledged item.  A backlog still going
		 * out is not silence. */
		if (link_unsent(p->out) == 0 &&
		    c->now - p->progress_ms >= RESEND_MS) {
			link_rewind(p->out);
			p->progress_ms = c->now;
		}
	}
}

int
peer_next_timer(struct coord *c, int max)
{
	int64_t ms = max, now = c->now;

	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		const struct peer *p = &c->peers[v];
		/* Nothing is sent without a connection. */
		if (v == c->self || !p->up)
			continue;
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
