/*
 * coord_app.c - the application link: what goes down to libcut and what
 * comes up from it.
 *
 * The down stream is a queue of packed AppDeliver items (fifo.h), sent in
 * batches once the application has said hello, and kept until libcut
 * reports them taken (AppTaken, or AppStateReply.handed): that is when a
 * message counts as received, and when its sender's window reopens.  At
 * most cfg->app_window payload bytes are sent and not yet taken.
 *
 * State requests are kept apart (struct appreq).  An unaligned one goes at
 * the front of the next batch, ahead of every queued delivery, so that a
 * backlog never delays a snapshot; the deliveries the application had not
 * taken when it answered become channel state (coord_snap.c records them
 * from this queue).  An aligned one goes at its place in the stream.  Credit
 * (AppCredit) goes at the front of every batch in which it changed.  The
 * up stream (sends, taken counts and state replies) is handled in the
 * order it arrives, by coord_app_in.c.
 *
 * The application connection (app_hello, app_gone):
 *
 *   NONE --AppHello on conn--> CONNECTED(conn)
 *   CONNECTED(a) --AppHello on conn b--> CONNECTED(b): what a was sent
 *       and did not take goes again; a pending aligned request whose
 *       place a passed is given up (new_connection(), coord_app_in.c)
 *   CONNECTED(a) --coord_app_closed(a)--> GONE(a): nothing goes down
 *   GONE(a) --AppHello on conn b--> CONNECTED(b), as above
 *
 * Only the connection in CONNECTED may send anything but a hello; items
 * from any other get NO_HELLO.  A state request (struct appreq):
 *
 *   QUEUED --in a frame--> SENT --AppStateReply--> answered (freed)
 *   SENT --new connection--> QUEUED (or given up, aligned and passed)
 *   QUEUED, SENT --snapshot ended--> forgotten (freed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "cutproto.h"
#include "log.h"

int
coord_app_connected(const struct coord *c)
{
	return c->app_hello != 0 && !c->app_gone;
}

uint32_t
coord_app_conn(const struct coord *c)
{
	return coord_app_connected(c) ? c->app_hello : 0;
}

/* Connection conn closed.  The frames still queued for it go nowhere:
 * the application socket (pair1) sends to whatever connection is open,
 * so a hello reply meant for a connection that closed before it left
 * would reach the application's next one, which would take it for the
 * answer to its own hello and speak before saying hello there. */
void
coord_app_closed(struct coord *c, uint32_t conn)
{
	struct app_reply **rp = &c->replies, *r;

	if (conn != 0 && conn == c->app_hello)
		c->app_gone = 1;
	while ((r = *rp) != NULL) {
		if (conn != 0 && r->conn == conn) {
			*rp = r->next;
			free(r->buf);
			free(r);
			c->nreplies--;
			continue;
		}
		rp = &r->next;
	}
	c->replies_tail = rp;
}

void
app_init(struct coord *c)
{
	fifo_init(&c->down);
	c->replies_tail = &c->replies;
}

void
app_fini(struct coord *c)
{
	uint32_t conn;
	uint8_t *buf;
	size_t len;

	while (c->reqs != NULL) {
		struct appreq *r = c->reqs;
		c->reqs = r->next;
		free(r->upto);
		free(r);
	}
	while (coord_next_app_reply(c, &conn, &buf, &len))
		free(buf);
	fifo_fini(&c->down);
}

int
app_deliver(struct coord *c, size_t from, const char *content_type,
            const void *payload, size_t len, uint64_t seq)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppDeliver dl = CUT__V1__APP_DELIVER__INIT;
	struct peer *p = &c->peers[from];
	size_t size;
	void *buf;

	dl.from = c->cfg->nodes[from].name;
	dl.content_type = (char *)content_type;
	dl.payload.data = (uint8_t *)payload;
	dl.payload.len = len;
	dl.has_seq = 1;
	dl.seq = seq;
	dl.has_numbering = p->renum_next != 0;
	dl.numbering = dl.has_numbering ? p->renum_epoch : 0;
	it.item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
	it.deliver = &dl;
	/* Packed once, straight into the queue: no allocation of its own. */
	size = cut__v1__app_item__get_packed_size(&it);
	buf = fifo_push_space(&c->down, size, seq,
	                      DOWN_TAG(from, len) |
	                          (dl.has_numbering ? DOWN_RENUM : 0));
	if (buf == NULL)
		return E_NOMEM;
	cut__v1__app_item__pack(&it, buf);
	if (dl.has_numbering) {
		p->renum_next = 0;
		p->renum_unseen = 1;
	}
	return 0;
}

/* The application took (or had) down-stream record r. */
static void
down_taken(struct coord *c, const struct fifo_rec *r)
{
	size_t from = TAG_NODE(r->tag2);

	peer_taken(c, from, r->tag, TAG_LEN(r->tag2));
	if (r->tag2 & DOWN_RENUM)
		c->peers[from].renum_unseen = 0;
}

void
app_restore_reset(struct coord *c)
{
	while (c->reqs != NULL) {
		struct appreq *r = c->reqs;
		c->reqs = r->next;
		free(r->upto);
		free(r);
	}
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		c->peers[v].renum_next = c->peers[v].renum_unseen = 0;
		c->peers[v].old_items = 0; /* dropped with the queue */
	}
	c->down_head_abs += fifo_count(&c->down);
	fifo_clear(&c->down);
	c->down_sent = 0;
	c->down_base = 0;
	c->down_sent_bytes = 0;
}

int
app_request_state(struct coord *c, const char *id)
{
	struct appreq *r = calloc(1, sizeof(*r)), **tail = &c->reqs;

	if (r == NULL ||
	    (r->upto = calloc(c->n_in + 1, sizeof(*r->upto))) == NULL) {
		free(r);
		return E_NOMEM;
	}
	for (size_t i = 0; i < c->n_in; i++)
		r->upto[i] = engine_delivered_count(c->eng, i);
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->at = c->down_head_abs + fifo_count(&c->down);
	/* An unaligned request overtakes what is queued for the
	 * application, which the channels then record by their numbering.
	 * Deliveries of a numbering a sender's restart ended (old_items)
	 * belong to no channel's numbering: overtaken, they would be in no
	 * state and no channel (seed 1242 of reboot), so the request waits
	 * behind them, and the state holds them. */
	r->overtake = !c->cfg->aligned && !app_old_queued(c);
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = r;
	return 0;
}

void
app_forget_request(struct coord *c, const char *id)
{
	for (struct appreq **rp = &c->reqs; *rp != NULL; rp = &(*rp)->next)
		if (strcmp((*rp)->id, id) == 0) {
			struct appreq *r = *rp;
			*rp = r->next;
			free(r->upto);
			free(r);
			return;
		}
}

int
app_queued(struct coord *c, size_t from, uint64_t first, uint64_t count,
           int (*fn)(void *arg, uint64_t app_seq, const char *ctype,
                     const void *payload, size_t len),
           void *arg)
{
	int rv = 0;

	for (size_t i = 0; i < fifo_count(&c->down) && rv == 0; i++) {
		const struct fifo_rec *r = fifo_rec(&c->down, i);
		Cut__V1__AppItem *it;

		if (TAG_NODE(r->tag2) != from || r->tag < first ||
		    r->tag - first >= count)
			continue;
		it = cut__v1__app_item__unpack(NULL, r->len,
		                               fifo_data(&c->down, r));
		if (it == NULL ||
		    it->item_case != CUT__V1__APP_ITEM__ITEM_DELIVER)
			rv = E_NOMEM;
		else
			rv = fn(arg, r->tag, it->deliver->content_type,
			        it->deliver->payload.data,
			        it->deliver->payload.len);
		if (it != NULL)
			cut__v1__app_item__free_unpacked(it, NULL);
	}
	return rv;
}

int
app_old_queued(const struct coord *c)
{
	for (size_t v = 0; v < c->cfg->nnodes; v++)
		if (c->peers[v].old_items > 0)
			return 1;
	return 0;
}

size_t
app_queued_from(const struct coord *c, size_t from)
{
	size_t n = 0;

	for (size_t i = 0; i < fifo_count(&c->down); i++)
		n += TAG_NODE(fifo_rec(&c->down, i)->tag2) == from;
	return n;
}

/* The application has been handed `handed` deliveries on this connection:
 * free them and credit their senders.  Returns -1 if the count goes
 * backwards or past what was sent. */
int
app_take_upto(struct coord *c, uint64_t handed)
{
	size_t k;

	if (handed < c->down_base || handed - c->down_base > c->down_sent)
		return -1;
	k = (size_t)(handed - c->down_base);
	for (size_t i = 0; i < k; i++) {
		const struct fifo_rec *r = fifo_rec(&c->down, i);

		down_taken(c, r);
		c->down_sent_bytes -= TAG_LEN(r->tag2);
	}
	fifo_pop(&c->down, k);
	c->down_sent -= k;
	c->down_base = handed;
	c->down_head_abs += k;
	return 0;
}

/* At most this many frames wait to go at once to a connection; beyond
 * it an application that floods bad frames gets no more errors. */
#define MAX_REPLIES 256

/* Queues one item to go at once, outside the down stream, on connection
 * conn. */
void
app_send_now(struct coord *c, uint32_t conn, const Cut__V1__AppItem *it)
{
	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppItem *items[1] = {(Cut__V1__AppItem *)it};
	struct app_reply *r;

	if (c->nreplies >= MAX_REPLIES || (r = calloc(1, sizeof(*r))) == NULL)
		return;
	b.items = items;
	b.n_items = 1;
	r->len = cut__v1__app_batch__get_packed_size(&b);
	if ((r->buf = malloc(r->len ? r->len : 1)) == NULL) {
		free(r);
		return;
	}
	cut__v1__app_batch__pack(&b, r->buf);
	r->conn = conn;
	*c->replies_tail = r;
	c->replies_tail = &r->next;
	c->nreplies++;
}

int
coord_next_app_reply(struct coord *c, uint32_t *ret_conn, uint8_t **ret_buf,
                     size_t *ret_len)
{
	struct app_reply *r = c->replies;

	if (r == NULL)
		return 0;
	if ((c->replies = r->next) == NULL)
		c->replies_tail = &c->replies;
	c->nreplies--;
	*ret_conn = r->conn;
	*ret_buf = r->buf;
	*ret_len = r->len;
	free(r);
	return 1;
}

void
app_error(struct coord *c, uint32_t conn, uint32_t code, const char *text)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppError e = CUT__V1__APP_ERROR__INIT;

	e.code = code;
	e.message = (char *)text;
	it.item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
	it.error = &e;
	app_send_now(c, conn, &it);
}

void
app_bad(struct coord *c, uint32_t conn, uint32_t code, const char *what)
{
	c->bad_app++;
	log_warnx("bad application frame: %s; dropped", what);
	app_error(c, conn, code, what);
}

/* Drops the queued deliveries from node `from` up to app_seq upto, which
 * the application already has (it was handed them by this daemon on an
 * earlier connection, or by an earlier run of it): they count as taken.
 * Across a delivery marked renumbered (DOWN_RENUM): HAD_OLD, upto counts
 * the numbering before it, which stays with all after it; HAD_NEW, upto
 * counts the numbering it begins, and all before it went too.  Aligned
 * requests keep their place among the rest. */
void
app_drop_had(struct coord *c, size_t from, uint64_t upto, enum had how)
{
	struct fifo kept;
	size_t n = fifo_count(&c->down), dropped = 0;
	int old = 1, mine, drop;

	fifo_init(&kept);
	for (size_t i = 0; i < n; i++) {
		const struct fifo_rec *r = fifo_rec(&c->down, i);
		mine = TAG_NODE(r->tag2) == from;
		if (mine && (r->tag2 & DOWN_RENUM))
			old = 0;
		drop = mine && (how == HAD_OLD   ? old && r->tag <= upto
		                : how == HAD_NEW ? old || r->tag <= upto
		                                 : r->tag <= upto);
		if (drop) {
			uint64_t abs = c->down_head_abs + i - dropped;
			down_taken(c, r);
			for (struct appreq *q = c->reqs; q != NULL; q = q->next)
				if (q->at > abs)
					q->at--;
			dropped++;
		} else if (fifo_push(&kept, fifo_data(&c->down, r), r->len,
		                     r->tag, r->tag2) != 0) {
			log_err("out of memory dropping deliveries");
			fifo_fini(&kept);
			return;
		}
	}
	fifo_fini(&c->down);
	c->down = kept;
}

/* Writes item as field 1 of an AppBatch at dst, or only measures it when
 * dst is NULL; returns its bytes. */
static size_t
put_item(uint8_t *dst, const Cut__V1__AppItem *it)
{
	size_t len = cut__v1__app_item__get_packed_size(it), n;

	if (dst == NULL)
		return wire_field_size(len);
	n = wire_put_header(dst, 1, len);
	return n + cut__v1__app_item__pack(it, dst + n);
}

/* The credit limit of the channel to p: what the application has sent on
 * it over this connection plus the room left in the window. */
static uint64_t
credit_limit(struct coord *c, const struct peer *p)
{
	size_t w = c->cfg->window;

	return p->accepted +
	       (p->inflight_bytes < w ? w - p->inflight_bytes : 0);
}

static size_t
put_credit(uint8_t *dst, size_t peer, uint64_t limit, uint64_t taken)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppCredit c = CUT__V1__APP_CREDIT__INIT;

	c.peer = (uint32_t)peer;
	c.limit = limit;
	c.has_taken = 1;
	c.taken = taken;
	it.item_case = CUT__V1__APP_ITEM__ITEM_CREDIT;
	it.credit = &c;
	return put_item(dst, &it);
}

static size_t
put_request(uint8_t *dst, struct appreq *r, int commit)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppStateRequest rq = CUT__V1__APP_STATE_REQUEST__INIT;

	rq.snapshot_id = r->id;
	rq.has_overtake = 1;
	rq.overtake = r->overtake != 0;
	it.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REQUEST;
	it.state_request = &rq;
	if (commit)
		r->sent = 1;
	return put_item(dst, &it);
}

/*
 * Walks what the next batch to the application holds, in stream order:
 * changed credits, then unaligned state requests, then deliveries within
 * the application window and BATCH_BYTES, each aligned request at its
 * place among them.  With dst NULL it only measures; otherwise it writes
 * the batch at dst and commits what it wrote as sent.  Both walks see the
 * same state, so they agree.  Returns the batch's bytes.
 */
static size_t
walk_batch(struct coord *c, uint8_t *dst, int commit)
{
	size_t off = 0, idx = c->down_sent, batch = 0;
	uint64_t inflight = c->down_sent_bytes;
	struct appreq *r;

#define AT(dst) ((dst) != NULL ? (dst) + off : NULL)
	/* A restore that is to go waits, with everything behind it, until
	 * the application connected says it can take it (AppRestorable):
	 * one that connected after the vote (the one that voted yes died,
	 * or its connection was lost) has said nothing yet, and a libcut
	 * without a restore callback could only fail it, keeping its own
	 * state where the decided restore puts the snapshot's. */
	if (c->rs.app_due && !c->rs.restorable)
		return 0;
	/* A restore goes first, alone ahead of the replayed messages; no
	 * credit until libcut has taken it (credit applies on arrival, and
	 * the restore resets it). */
	if (c->rs.app_due) {
		if (dst != NULL)
			off += wire_put_field(dst + off, 1, c->rs.app_item,
			                      c->rs.app_item_len);
		else
			off += wire_field_size(c->rs.app_item_len);
		if (commit)
			c->rs.app_due = 0;
	}
	for (size_t i = 0; i < c->n_out && !c->rs.app_wait; i++) {
		struct peer *p = &c->peers[c->out_node[i]];
		uint64_t limit = credit_limit(c, p);
		if (!p->credit_force && limit == p->credit_sent &&
		    p->app_taken == p->taken_told)
			continue;
		off += put_credit(AT(dst), i, limit, p->app_taken);
		if (commit) {
			p->credit_sent = limit;
			p->taken_told = p->app_taken;
			p->credit_force = 0;
		}
	}
	for (r = c->reqs; r != NULL; r = r->next)
		if (!r->sent && r->overtake)
			off += put_request(AT(dst), r, commit);
	for (int first = 1;; first = 0) {
		uint64_t abs = c->down_head_abs + idx;
		const struct fifo_rec *rec;
		size_t len;

		for (r = c->reqs; r != NULL; r = r->next)
			if (!r->sent && !r->overtake &&
			    (r->at == abs || (first && r->at < abs)))
				off += put_request(AT(dst), r, commit);
		if (idx == fifo_count(&c->down))
			break;
		rec = fifo_rec(&c->down, idx);
		len = TAG_LEN(rec->tag2);
		if ((inflight > 0 && inflight + len > c->cfg->app_window) ||
		    (batch > 0 && batch + rec->len > BATCH_BYTES))
			break;
		if (dst != NULL)
			off += wire_put_field(
			    dst + off, 1, fifo_data(&c->down, rec), rec->len);
		else
			off += wire_field_size(rec->len);
		idx++;
		inflight += len;
		batch += rec->len;
	}
#undef AT
	if (commit) {
		c->down_sent = idx;
		c->down_sent_bytes = inflight;
	}
	return off;
}

size_t
coord_app_frame(struct coord *c, uint8_t *buf)
{
	/* Only to the connection that said hello, while it lasts; a new
	 * application gets nothing before its own hello. */
	if (!coord_app_connected(c) || c->rs.paused)
		return 0;
	return walk_batch(c, buf, buf != NULL);
}
