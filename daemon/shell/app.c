/*
 * app.c - the application link: one pair1 socket on IPC to libcut.
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
 * taken when it answered become channel state (node.c records them from
 * this queue).  An aligned one goes at its place in the stream.  Credit
 * (AppCredit) goes at the front of every batch in which it changed.  The
 * up stream (sends, taken counts and state replies) is handled in the
 * order it arrives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "cutd.h"
#include "cutproto.h"
#include "log.h"

#define RECV_PER_TURN 256

/* Runs on an nng thread when a connection closes: only atomics. */
static void
pipe_event(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct cutd *d = arg;
	unsigned id = nng_pipe_id(pipe);

	(void)ev;
	atomic_store(&d->app_removed, id);
	if (atomic_load(&d->app_hello_pipe) == id)
		atomic_store(&d->app_gone, 1);
}

int
app_connected(struct cutd *d)
{
	return d->app_hello != 0 && !atomic_load(&d->app_gone);
}

int
app_start(struct cutd *d)
{
	const char *url = d->cfg->nodes[d->self].app;
	int rv;

	/* Not polyamorous: pair1 then refuses a second connection while
	 * one is open, so a second application cannot disturb the first
	 * (libcut tells it so), and sends are never discarded, as they may
	 * be in polyamorous mode when a connection is busy. */
	if ((rv = nng_pair1_open(&d->app)) != 0)
		return rv;
	nng_socket_set_size(d->app, NNG_OPT_RECVMAXSZ,
	                    d->cfg->max_message + 64 * 1024);
	nng_socket_set_int(d->app, NNG_OPT_SENDBUF, 64);
	nng_pipe_notify(d->app, NNG_PIPE_EV_REM_POST, pipe_event, d);
	return control_listen(d, d->app, url);
}

void
app_free(struct cutd *d)
{
	while (d->reqs != NULL) {
		struct appreq *r = d->reqs;
		d->reqs = r->next;
		free(r);
	}
	if (d->app_pending != NULL) {
		nng_msg_free(d->app_pending);
		d->app_pending = NULL;
	}
	fifo_fini(&d->down);
}

/* tag2 of a down record: the sending node and the payload bytes.  (An
 * app_seq means the same message across restarts of either side.) */
static uint64_t
down_tag(size_t node, size_t len)
{
	return (uint64_t)node | ((uint64_t)len << 32);
}
#define TAG_NODE(t) ((size_t)((t)&0xffff))
#define TAG_LEN(t)  ((size_t)((t) >> 32))

int
app_deliver(struct cutd *d, size_t from, const char *content_type,
            const void *payload, size_t len, uint64_t seq)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppDeliver dl = CUT__V1__APP_DELIVER__INIT;
	size_t size;
	void *buf;

	dl.from = d->cfg->nodes[from].name;
	dl.content_type = (char *)content_type;
	dl.payload.data = (uint8_t *)payload;
	dl.payload.len = len;
	dl.has_seq = 1;
	dl.seq = seq;
	it.item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
	it.deliver = &dl;
	/* Packed once, straight into the queue: no allocation of its own. */
	size = cut__v1__app_item__get_packed_size(&it);
	buf = fifo_push_space(&d->down, size, seq,
	                      down_tag(from, len));
	if (buf == NULL)
		return E_NOMEM;
	cut__v1__app_item__pack(&it, buf);
	return 0;
}

int
app_request_state(struct cutd *d, const char *id)
{
	struct appreq *r = calloc(1, sizeof(*r)), **tail = &d->reqs;

	if (r == NULL)
		return E_NOMEM;
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->at = d->down_head_abs + fifo_count(&d->down);
	r->overtake = !d->cfg->aligned;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = r;
	return 0;
}

void
app_forget_request(struct cutd *d, const char *id)
{
	for (struct appreq **rp = &d->reqs; *rp != NULL; rp = &(*rp)->next)
		if (strcmp((*rp)->id, id) == 0) {
			struct appreq *r = *rp;
			*rp = r->next;
			free(r);
			return;
		}
}

int
app_queued(struct cutd *d, size_t from, uint64_t first, uint64_t count,
           int (*fn)(void *arg, uint64_t app_seq, const char *ctype,
                     const void *payload, size_t len),
           void *arg)
{
	int rv = 0;

	for (size_t i = 0; i < fifo_count(&d->down) && rv == 0; i++) {
		const struct fifo_rec *r = fifo_rec(&d->down, i);
		Cut__V1__AppItem *it;

		if (TAG_NODE(r->tag2) != from || r->tag < first || r->tag - first >= count)
			continue;
		it = cut__v1__app_item__unpack(NULL, r->len,
		                               fifo_data(&d->down, r));
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

/* The application has been handed `handed` deliveries on this connection:
 * free them and credit their senders.  Returns -1 if the count goes
 * backwards or past what was sent. */
static int
take_upto(struct cutd *d, uint64_t handed)
{
	size_t k;

	if (handed < d->down_base || handed - d->down_base > d->down_sent)
		return -1;
	k = (size_t)(handed - d->down_base);
	for (size_t i = 0; i < k; i++) {
		const struct fifo_rec *r = fifo_rec(&d->down, i);
		size_t from = TAG_NODE(r->tag2);

		peer_taken(d, from, r->tag, TAG_LEN(r->tag2));
		d->down_sent_bytes -= TAG_LEN(r->tag2);
	}
	fifo_pop(&d->down, k);
	d->down_sent -= k;
	d->down_base = handed;
	d->down_head_abs += k;
	return 0;
}

/* Sends one item at once, outside the down stream, on connection pipe. */
static void
send_now(struct cutd *d, uint32_t pipe, const Cut__V1__AppItem *it)
{
	nng_pipe to = NNG_PIPE_INITIALIZER;

	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppItem *items[1] = {(Cut__V1__AppItem *)it};
	size_t len;
	nng_msg *msg;

	b.items = items;
	b.n_items = 1;
	len = cut__v1__app_batch__get_packed_size(&b);
	if (nng_msg_alloc(&msg, len) != 0)
		return;
	cut__v1__app_batch__pack(&b, nng_msg_body(msg));
	to.id = pipe;
	nng_msg_set_pipe(msg, to);
	if (nng_sendmsg(d->app, msg, NNG_FLAG_NONBLOCK) != 0)
		nng_msg_free(msg);
}

static void
app_error(struct cutd *d, uint32_t pipe, uint32_t code, const char *text)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppError e = CUT__V1__APP_ERROR__INIT;

	e.code = code;
	e.message = (char *)text;
	it.item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
	it.error = &e;
	send_now(d, pipe, &it);
}

static void
bad(struct cutd *d, uint32_t pipe, uint32_t code, const char *what)
{
	d->bad_app++;
	log_warnx("bad application frame: %s; dropped", what);
	app_error(d, pipe, code, what);
}

/* Drops the queued deliveries from node `from` up to app_seq upto, which
 * the application already has (it was handed them by this daemon on an
 * earlier connection, or by an earlier run of it): they count as taken.
 * Aligned requests keep their place among the rest. */
static void
drop_had(struct cutd *d, size_t from, uint64_t upto)
{
	struct fifo kept;
	size_t n = fifo_count(&d->down), dropped = 0;

	fifo_init(&kept);
	for (size_t i = 0; i < n; i++) {
		const struct fifo_rec *r = fifo_rec(&d->down, i);
		if (TAG_NODE(r->tag2) == from && r->tag <= upto) {
			uint64_t abs = d->down_head_abs + i - dropped;
			peer_taken(d, from, r->tag, TAG_LEN(r->tag2));
			for (struct appreq *q = d->reqs; q != NULL; q = q->next)
				if (q->at > abs)
					q->at--;
			dropped++;
		} else if (fifo_push(&kept, fifo_data(&d->down, r), r->len,
		                     r->tag, r->tag2) != 0) {
			log_err("out of memory dropping deliveries");
			fifo_fini(&kept);
			return;
		}
	}
	fifo_fini(&d->down);
	d->down = kept;
}

/* Takes in where libcut stands on each channel (AppHello.resume): a daemon
 * that restarted resumes the numbering there, and what the application
 * already has is not sent to it again. */
static void
resume(struct cutd *d, const Cut__V1__AppHello *h)
{
	for (size_t i = 0; i < h->n_resume; i++) {
		const Cut__V1__AppResume *r = h->resume[i];
		int node = config_node_index(d->cfg, r->node);
		struct peer *p;

		if (node < 0 || (size_t)node == d->self)
			continue;
		p = &d->peers[node];
		if (p->out_chan >= 0 && r->has_out_taken) {
			uint64_t sent = engine_sent_count(d->eng,
			                                  (size_t)p->out_chan);
			if (r->out_taken > sent)
				node_resume_out(d, (size_t)node, r->out_taken);
		}
		if (p->in_chan >= 0 && r->has_in_taken) {
			if (r->in_taken > engine_delivered_count(
			                      d->eng, (size_t)p->in_chan))
				node_resume_in(d, (size_t)node, r->in_taken);
			else
				p->in_known = 1;
			drop_had(d, (size_t)node, r->in_taken);
			/* What a snapshot counts as taken (m), and what the
			 * sender may forget. */
			if (r->in_taken > p->taken) {
				p->taken = r->in_taken;
				if (p->ack_due_ms == 0)
					p->ack_due_ms = cutd_now_ms();
			}
		}
	}
}

/* The first application of this run that knows nothing of a channel
 * (libcut resumed none) while this daemon sent nothing on it either:
 * nobody holds the old numbering, so it starts again from 1, and the
 * receiver is told (PeerRenumber) before the first message. */
static void
renumber(struct cutd *d, const Cut__V1__AppHello *h)
{
	for (size_t i = 0; i < d->n_out; i++) {
		size_t node = d->out_node[i];
		struct peer *p = &d->peers[node];
		int known = 0;

		if (p->out_numbered)
			continue;
		p->out_numbered = 1;
		for (size_t k = 0; k < h->n_resume; k++)
			known |= h->resume[k]->has_out_taken &&
			         strcmp(h->resume[k]->node,
			                d->cfg->nodes[node].name) == 0;
		if (known || engine_sent_count(d->eng, (size_t)p->out_chan) > 0)
			continue;
		if (node_renumber(d, node) != 0)
			log_err("cannot tell %s that the channel numbers from 1",
			        d->cfg->nodes[node].name);
	}
}

/* A new application said hello on pipe.  What the previous one was sent
 * and did not take goes again, positions count from 0, and each channel's
 * credit is told afresh.  A pending state request goes again, except an
 * aligned one whose place in the stream the old application passed: that
 * cut is gone, so its snapshot is given up. */
static void
new_connection(struct cutd *d, uint32_t pipe)
{
	struct appreq *r, *next;

	d->app_hello = pipe;
	atomic_store(&d->app_hello_pipe, pipe);
	atomic_store(&d->app_gone, atomic_load(&d->app_removed) == pipe);
	d->down_sent = 0;
	d->down_base = 0;
	d->down_sent_bytes = 0;
	if (d->app_pending != NULL) {
		nng_msg_free(d->app_pending);
		d->app_pending = NULL;
	}
	for (size_t i = 0; i < d->n_out; i++) {
		struct peer *p = &d->peers[d->out_node[i]];
		p->accepted = 0;
		p->credit_force = 1;
	}
	for (r = d->reqs; r != NULL; r = next) {
		next = r->next;
		if (r->overtake || r->at >= d->down_head_abs)
			r->sent = 0;
		else
			node_abandon(d, r->id,
			             "the application reconnected before "
			             "answering the state request");
	}
}

static void
hello(struct cutd *d, uint32_t pipe, const Cut__V1__AppHello *h)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppHelloReply r = CUT__V1__APP_HELLO_REPLY__INIT;
	char *peers[CONFIG_MAX_NODES];
	uint64_t sent[CONFIG_MAX_NODES];
	size_t n = 0;

	if (h->version != CUTPROTO_APP_VERSION) {
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__VERSION,
		    "unsupported application protocol version");
		return;
	}
	if (h->node[0] != '\0' && strcmp(h->node, d->name) != 0) {
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__WRONG_NODE,
		    "this daemon serves another node");
		return;
	}
	resume(d, h);
	renumber(d, h);
	for (size_t i = 0; i < d->n_out; i++) {
		struct peer *p = &d->peers[d->out_node[i]];
		peers[n] = d->cfg->nodes[d->out_node[i]].name;
		sent[n++] = engine_sent_count(d->eng, (size_t)p->out_chan);
		p->resend_upto = 0;
	}
	for (size_t i = 0; i < h->n_resume; i++) {
		int node = config_node_index(d->cfg, h->resume[i]->node);
		if (node >= 0 && (size_t)node != d->self &&
		    h->resume[i]->has_out_sent)
			d->peers[node].resend_upto = h->resume[i]->out_sent;
	}
	r.node = (char *)d->name;
	r.version = CUTPROTO_APP_VERSION;
	r.cluster = d->cfg->cluster;
	r.peers = peers;
	r.n_peers = n;
	r.sent = sent;
	r.n_sent = n;
	r.max_message_size = (uint32_t)d->cfg->max_message;
	r.has_window_bytes = 1;
	r.window_bytes = d->cfg->window;
	r.has_message_cost = 1;
	r.message_cost = (uint32_t)d->cfg->message_cost;
	it.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	it.hello_reply = &r;
	send_now(d, pipe, &it);
	new_connection(d, pipe);
	log_info("application connected");
}

static void
app_send(struct cutd *d, uint32_t pipe, const Cut__V1__AppSend *s)
{
	int rv;

	if (s->payload.len > d->cfg->max_message) {
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__TOO_LARGE,
		    "message larger than max_message");
		return;
	}
	if (cutd_ctype(s->content_type) == NULL) {
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "bad content type");
		return;
	}
	if (s->has_seq && s->seq == 0) {
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "message sequence number 0");
		return;
	}
	rv = node_app_send(d, s->to, cutd_ctype(s->content_type),
	                   s->payload.data, s->payload.len,
	                   s->has_seq ? s->seq : 0);
	if (rv == E_DUP)
		return; /* sent again after a reconnect; we have it */
	if (rv == E_NOCHAN)
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__UNKNOWN_NODE,
		    "no channel to that node");
	else if (rv == E_GAP)
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__SEQ_GAP,
		    "message sequence number leaves a gap; message not sent");
	else if (rv == E_FULL)
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__BACKPRESSURE,
		    "send beyond the channel's window; message not sent");
	else if (rv != 0)
		app_error(d, pipe, CUT__V1__APP_ERROR__CODE__BACKPRESSURE,
		          "out of memory; message not sent");
}

static void
state_reply(struct cutd *d, uint32_t pipe, const Cut__V1__AppStateReply *r)
{
	int rv =
	    node_state_reply(d, r->snapshot_id, cutd_ctype(r->content_type),
	                     r->state.data, r->state.len);

	if (rv == 0)
		return;
	/* Late: the snapshot was aborted (a peer restarted, say) while the
	 * application was answering.  The application did nothing wrong. */
	if (rv == E_STATE) {
		log_info("state reply for %s came after it ended; dropped",
		         r->snapshot_id);
		return;
	}
	/* Refused by the engine (the handed counts do not fit the cut) or
	 * never asked for: the snapshot ends without this state, and the
	 * log says why. */
	log_warnx("state reply for %s refused: %s", r->snapshot_id,
	          err_str(rv));
	app_error(d, pipe, CUT__V1__APP_ERROR__CODE__UNKNOWN_SNAPSHOT,
	          "no state request pending for that snapshot");
}

/* Handles one item that arrived on connection pipe.  Only the connection
 * that said hello may send anything else. */
static void
item(struct cutd *d, uint32_t pipe, const Cut__V1__AppItem *it)
{
	if (it->item_case == CUT__V1__APP_ITEM__ITEM_HELLO) {
		hello(d, pipe, it->hello);
		return;
	}
	if (pipe == 0 || pipe != d->app_hello) {
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__NO_HELLO,
		    "item before hello");
		return;
	}
	switch (it->item_case) {
	case CUT__V1__APP_ITEM__ITEM_SEND:
		app_send(d, pipe, it->send);
		break;
	case CUT__V1__APP_ITEM__ITEM_TAKEN:
		if (take_upto(d, it->taken->handed) != 0)
			bad(d, pipe, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "taken count out of range");
		break;
	case CUT__V1__APP_ITEM__ITEM_STATE_REPLY:
		if (take_upto(d, it->state_reply->handed) != 0)
			bad(d, pipe, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "state reply's handed count out of range");
		else if (it->state_reply->state.len > d->cfg->max_message)
			bad(d, pipe, CUT__V1__APP_ERROR__CODE__TOO_LARGE,
			    "state larger than max_message");
		else if (cutd_ctype(it->state_reply->content_type) == NULL)
			bad(d, pipe, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "bad content type");
		else
			state_reply(d, pipe, it->state_reply);
		break;
	default:
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "item an application does not send");
	}
}

void
app_batch(struct cutd *d, nng_msg *msg)
{
	uint32_t pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(msg));
	Cut__V1__AppBatch *b;

	b = (Cut__V1__AppBatch *)cutproto_unpack_arena(
	    &cut__v1__app_batch__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg), &d->arena);
	if (b == NULL)
		bad(d, pipe, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "batch does not decode");
	else
		for (size_t k = 0; k < b->n_items; k++)
			item(d, pipe, b->items[k]);
	cutproto_arena_reset(&d->arena);
}

void
app_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		nng_msg *msg;

		if (nng_recvmsg(d->app, &msg, NNG_FLAG_NONBLOCK) != 0)
			return;
		app_batch(d, msg);
		nng_msg_free(msg);
	}
}

/* Writes item as field 1 of an AppBatch at dst, or only measures it when
 * dst is NULL; returns its bytes. */
static size_t
put_item(uint8_t *dst, const Cut__V1__AppItem *it)
{
	size_t len = cut__v1__app_item__get_packed_size(it), n;

	if (dst == NULL)
		return cutd_field_size(len);
	n = cutd_put_header(dst, 1, len);
	return n + cut__v1__app_item__pack(it, dst + n);
}

/* The credit limit of the channel to p: what the application has sent on
 * it over this connection plus the room left in the window. */
static uint64_t
credit_limit(struct cutd *d, const struct peer *p)
{
	size_t w = d->cfg->window;

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
walk_batch(struct cutd *d, uint8_t *dst, int commit)
{
	size_t off = 0, idx = d->down_sent, batch = 0;
	uint64_t inflight = d->down_sent_bytes;
	struct appreq *r;

#define AT(dst) ((dst) != NULL ? (dst) + off : NULL)
	for (size_t i = 0; i < d->n_out; i++) {
		struct peer *p = &d->peers[d->out_node[i]];
		uint64_t limit = credit_limit(d, p);
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
	for (r = d->reqs; r != NULL; r = r->next)
		if (!r->sent && r->overtake)
			off += put_request(AT(dst), r, commit);
	for (int first = 1;; first = 0) {
		uint64_t abs = d->down_head_abs + idx;
		const struct fifo_rec *rec;
		size_t len;

		for (r = d->reqs; r != NULL; r = r->next)
			if (!r->sent && !r->overtake &&
			    (r->at == abs || (first && r->at < abs)))
				off += put_request(AT(dst), r, commit);
		if (idx == fifo_count(&d->down))
			break;
		rec = fifo_rec(&d->down, idx);
		len = TAG_LEN(rec->tag2);
		if ((inflight > 0 && inflight + len > d->cfg->app_window) ||
		    (batch > 0 && batch + rec->len > BATCH_BYTES))
			break;
		if (dst != NULL)
			off += cutd_put_field(
			    dst + off, 1, fifo_data(&d->down, rec), rec->len);
		else
			off += cutd_field_size(rec->len);
		idx++;
		inflight += len;
		batch += rec->len;
	}
#undef AT
	if (commit) {
		d->down_sent = idx;
		d->down_sent_bytes = inflight;
	}
	return off;
}

void
app_flush(struct cutd *d)
{
	size_t len;
	nng_msg *msg;

	/* Only to the connection that said hello, while it lasts; a new
	 * application gets nothing before its own hello. */
	if (!app_connected(d))
		return;
	for (int i = 0; i < 64; i++) {
		if (d->app_pending != NULL) {
			if (nng_sendmsg(d->app, d->app_pending,
			                NNG_FLAG_NONBLOCK) != 0)
				return; /* kept: it goes first next turn */
			d->app_pending = NULL;
		}
		if ((len = walk_batch(d, NULL, 0)) == 0 ||
		    nng_msg_alloc(&msg, len) != 0)
			return;
		walk_batch(d, nng_msg_body(msg), 1);
		d->app_pending = msg;
	}
}

int
app_next_timer(struct cutd *d, int max)
{
	return d->app_pending != NULL && max > 1 ? 1 : max;
}
