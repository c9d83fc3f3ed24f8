/*
 * simapp.c - the applications of the simulation: libcut's side of the
 * application protocol, replicated item for item, under a token bank.
 *
 * What libcut does (libclient/cut.c, send.c, recv.c, resume.c) is done
 * here the same way, without its threads:
 *
 *   - the first hello (no resume), whose reply says where each outgoing
 *     channel's numbering stands (AppHelloReply.sent);
 *   - sends numbered per channel (AppSend.seq), within the credit the
 *     daemon grants (AppCredit.limit, cut_try_send's room()), each kept
 *     until AppCredit.taken says the receiving application took it;
 *   - frames from the daemon taken in as its receiving thread does
 *     (ingest()): credit applied at once, unaligned state requests put
 *     ahead of everything queued, the rest queued; the application takes
 *     items off the queue at its own pace, and the state callback answers
 *     between two deliveries with the handed count;
 *   - the handed count reported (AppTaken) CUT_TAKEN_DELAY_MS after a
 *     delivery, at once for an eighth of a window, and when the
 *     application stops receiving;
 *   - after the connection the hello went over closes: on the next
 *     receive, forget what that connection had queued both ways, say
 *     hello again with where every channel stands (AppHello.resume: out
 *     taken and sent, in taken), and on the reply send again every kept
 *     message the daemon does not have.
 *
 * The token bank: each application starts with a balance, sends random
 * amounts ({"amount": k}, sometimes padded) to random peers it has a
 * channel to, adds what it is handed, and answers a state request with
 * {"balance": N}.  Every delivery is checked as it is handed: the next
 * seq of its channel, with the amount its sender sent under that seq.
 *
 * Behaviour (the "slow" faults): an application may for a while take
 * only a few deliveries now and then, take none at all, or have its state
 * callback fail (libcut then leaves the request unanswered).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* libcut's constants (cut_int.h). */
#define TAKEN_DELAY_MS   5
#define OUT_FRAME_MAX    (256u << 10)
#define DISPATCH_MAX     4096
#define KIND(field)      (uint8_t)(((field) << 3) | 2)
#define KIND_CREDIT      KIND(CUT__V1__APP_ITEM__ITEM_CREDIT)
#define KIND_STATE       KIND(CUT__V1__APP_ITEM__ITEM_STATE_REQUEST)
#define KIND_HELLO_REPLY KIND(CUT__V1__APP_ITEM__ITEM_HELLO_REPLY)
#define KIND_ERROR       KIND(CUT__V1__APP_ITEM__ITEM_ERROR)

static struct sim_node *
node_of(struct sim *s, const struct sim_app *a)
{
	return &s->nodes[a->node];
}

static const char *
name_of(struct sim *s, const struct sim_app *a)
{
	return s->nodes[a->node].name;
}

void
simapp_init(struct sim *s, struct sim_app *a, size_t node, int64_t balance)
{
	memset(a, 0, sizeof(*a));
	a->s = s;
	a->node = node;
	for (size_t i = 0; i < SIM_MAX_NODES; i++)
		fifo_init(&a->keep[i]);
	fifo_init(&a->q);
	a->balance = balance;
	a->taken_at = SIM_NEVER;
	a->dial_at = s->now + sim_range(s, 0, 20);
	a->next_recv = s->now;
	a->next_send = s->now + sim_range(s, 1, 50);
}

void
simapp_fini(struct sim_app *a)
{
	for (size_t i = 0; i < SIM_MAX_NODES; i++)
		fifo_fini(&a->keep[i]);
	fifo_fini(&a->q);
	free(a->out);
	a->out = NULL;
}

/* ---- Framing ---- */

static int
varint(const uint8_t *p, size_t len, size_t *i, uint64_t *ret)
{
	uint64_t v = 0;

	for (int shift = 0;; shift += 7) {
		if (*i == len || shift > 63)
			return -1;
		v |= (uint64_t)(p[*i] & 0x7f) << shift;
		if ((p[(*i)++] & 0x80) == 0)
			break;
	}
	*ret = v;
	return 0;
}

/* recv.c's cut_frame_item(): the next item (field 1) of an AppBatch. */
static int
frame_item(const uint8_t *p, size_t len, size_t *off, const uint8_t **ret,
           size_t *ret_len)
{
	size_t i = *off;
	uint64_t tag, n;

	while (i < len) {
		if (varint(p, len, &i, &tag) != 0)
			return -1;
		switch (tag & 7) {
		case 0:
			if (varint(p, len, &i, &n) != 0)
				return -1;
			continue;
		case 1:
		case 5:
			n = (tag & 7) == 1 ? 8 : 4;
			if (n > len - i)
				return -1;
			i += (size_t)n;
			continue;
		case 2:
			if (varint(p, len, &i, &n) != 0 || n > len - i)
				return -1;
			break;
		default:
			return -1;
		}
		if (tag >> 3 != 1) {
			i += (size_t)n;
			continue;
		}
		*ret = p + i;
		*ret_len = (size_t)n;
		*off = i + (size_t)n;
		return 1;
	}
	*off = i;
	return 0;
}

/* send.c's pack_field(): item as field 1 of an AppBatch, at dst. */
static size_t
pack_field(uint8_t *dst, const Cut__V1__AppItem *it, size_t len)
{
	size_t n = 0;

	dst[n++] = (1 << 3) | 2;
	for (uint64_t v = len;; v >>= 7) {
		dst[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		if (v <= 0x7f)
			break;
	}
	return n + cut__v1__app_item__pack(it, dst + n);
}

static void
out_append(struct sim_app *a, const void *p, size_t len)
{
	if (a->out_len + len > a->out_cap) {
		size_t cap = a->out_cap ? a->out_cap : 4096;
		while (cap < a->out_len + len)
			cap *= 2;
		if ((a->out = realloc(a->out, cap)) == NULL)
			abort();
		a->out_cap = cap;
	}
	memcpy(a->out + a->out_len, p, len);
	a->out_len += len;
}

/* Puts a frame on the connection to the daemon. */
static struct sim_frame *
up_frame(struct sim *s, struct sim_app *a, const void *p, size_t len)
{
	struct sim_node *n = node_of(s, a);
	struct sim_frame *f = simnet_frame_new(len);

	memcpy(f->data, p, len);
	f->at = s->now + 1;
	f->conn = a->conn;
	simnet_queue_push(&n->app_up, f);
	return f;
}

/* cut_kick(): what the out buffer holds goes, in frames of whole items
 * of at most a frame's size (one larger item goes alone). */
static void
kick(struct sim *s, struct sim_app *a)
{
	size_t max = a->max_message + (32u << 10), off = 0;
	const uint8_t *item;
	size_t ilen;

	if (max > OUT_FRAME_MAX)
		max = OUT_FRAME_MAX;
	if (a->conn == 0 || a->lost || a->out_len == 0)
		return;
	while (off < a->out_len) {
		size_t end = off, o;
		for (;;) {
			o = end;
			if (frame_item(a->out, a->out_len, &o, &item, &ilen) !=
			    1)
				break;
			if (end > off && o - off > max)
				break;
			end = o;
		}
		if (end == off)
			abort(); /* our own packing does not parse */
		up_frame(s, a, a->out + off, end - off);
		off = end;
	}
	a->out_len = 0;
}

/* cut_queue_item(): one control item after what is queued.  Returns -1
 * while the link is lost (CUT_ECLOSED). */
static int
queue_item(struct sim_app *a, const Cut__V1__AppItem *it)
{
	size_t len = cut__v1__app_item__get_packed_size(it);
	uint8_t *buf;

	if (a->lost)
		return -1;
	if ((buf = malloc(len + 11)) == NULL)
		abort();
	out_append(a, buf, pack_field(buf, it, len));
	free(buf);
	return 0;
}

/* cut_send_now(): one item in a frame of its own, at once. */
static void
send_now(struct sim *s, struct sim_app *a, const Cut__V1__AppItem *it)
{
	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppItem *items[1] = {(Cut__V1__AppItem *)it};
	size_t len;
	uint8_t *buf;

	b.items = items;
	b.n_items = 1;
	len = cut__v1__app_batch__get_packed_size(&b);
	if ((buf = malloc(len ? len : 1)) == NULL)
		abort();
	cut__v1__app_batch__pack(&b, buf);
	up_frame(s, a, buf, len)->hello =
	    it->item_case == CUT__V1__APP_ITEM__ITEM_HELLO;
	free(buf);
}

/* ---- The hello and its reply ---- */

static void
first_hello(struct sim *s, struct sim_app *a)
{
	Cut__V1__AppHello h = CUT__V1__APP_HELLO__INIT;
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;

	h.node = (char *)name_of(s, a);
	h.version = CUTPROTO_APP_VERSION;
	it.item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	it.hello = &h;
	send_now(s, a, &it);
	a->hello_sent = 1;
	a->hello_conn = a->conn;
}

/* cut.c's take_hello_reply(). */
static void
take_first_reply(struct sim *s, struct sim_app *a,
                 const Cut__V1__AppHelloReply *r)
{
	if (strcmp(r->node, name_of(s, a)) != 0 ||
	    r->version != CUTPROTO_APP_VERSION || !r->has_window_bytes ||
	    r->window_bytes == 0 || r->n_peers > SIM_MAX_NODES ||
	    r->n_sent != r->n_peers) {
		sim_fail(s, SIM_C_ONCE, "%s: a bad hello reply", name_of(s, a));
		return;
	}
	a->npeers = r->n_peers;
	for (size_t i = 0; i < r->n_peers; i++) {
		int v = config_node_index(s->cfg, r->peers[i]);
		if (v < 0) {
			sim_fail(s, SIM_C_ONCE, "%s: the hello reply names %s",
			         name_of(s, a), r->peers[i]);
			return;
		}
		a->peer[i] = (size_t)v;
		/* An application before us may have sent on the
		 * channels: number on from where the daemon stands. */
		a->out_seq[i] = a->out_taken[i] = r->sent[i];
	}
	a->max_message = r->max_message_size;
	a->window = r->window_bytes;
	a->cost = r->has_message_cost ? r->message_cost : 0;
	a->opened = 1;
}

/* resume.c's take_resume_reply(). */
static void
take_resume_reply(struct sim *s, struct sim_app *a,
                  const Cut__V1__AppHelloReply *r)
{
	if (strcmp(r->node, name_of(s, a)) != 0 || r->n_peers != a->npeers ||
	    r->n_sent != a->npeers) {
		sim_fail(s, SIM_C_ONCE,
		         "%s: the daemon answered the resume with another "
		         "node or set of peers",
		         name_of(s, a));
		return;
	}
	for (size_t i = 0; i < a->npeers; i++) {
		struct fifo *k = &a->keep[i];
		if (strcmp(r->peers[i], s->nodes[a->peer[i]].name) != 0) {
			sim_fail(s, SIM_C_ONCE,
			         "%s: the resume reply's peers differ",
			         name_of(s, a));
			return;
		}
		a->sent[i] = a->limit[i] = 0;
		for (size_t j = 0; j < fifo_count(k); j++) {
			const struct fifo_rec *rec = fifo_rec(k, j);
			if (rec->tag <= r->sent[i])
				continue;
			out_append(a, fifo_data(k, rec), rec->len);
			a->sent[i] += rec->tag2;
		}
	}
	a->resuming = 0;
	a->lost = 0;
	kick(s, a);
}

/* The frame of a hello's answer: its reply taken, or its refusal a
 * failure.  Returns 1 if the frame held one. */
static int
hello_answer(struct sim *s, struct sim_app *a, const uint8_t *buf, size_t len)
{
	Cut__V1__AppBatch *b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, buf);
	int found = 0;

	for (size_t k = 0; b != NULL && k < b->n_items && !found; k++) {
		const Cut__V1__AppItem *it = b->items[k];
		if (it->item_case == CUT__V1__APP_ITEM__ITEM_HELLO_REPLY) {
			found = 1;
			if (a->opened)
				take_resume_reply(s, a, it->hello_reply);
			else
				take_first_reply(s, a, it->hello_reply);
		} else if (it->item_case == CUT__V1__APP_ITEM__ITEM_ERROR) {
			found = 1;
			sim_fail(s, SIM_C_ONCE,
			         "%s: the daemon refused the hello: %s",
			         name_of(s, a), it->error->message);
		}
	}
	if (b != NULL)
		protobuf_c_message_free_unpacked(&b->base, NULL);
	return found;
}

/* resume.c's send_resume_hello(): where every channel stands. */
static void
resume_hello(struct sim *s, struct sim_app *a)
{
	Cut__V1__AppHello h = CUT__V1__APP_HELLO__INIT;
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppResume r[2 * SIM_MAX_NODES], *rp[2 * SIM_MAX_NODES];
	size_t n = 0;

	for (size_t i = 0; i < a->npeers; i++, n++) {
		cut__v1__app_resume__init(&r[n]);
		r[n].node = (char *)s->nodes[a->peer[i]].name;
		r[n].has_out_taken = r[n].has_out_sent = 1;
		r[n].out_taken = a->out_taken[i];
		r[n].out_sent = a->out_seq[i];
		rp[n] = &r[n];
	}
	for (size_t i = 0; i < a->nsrcs; i++) {
		/* The planted bug: the first source is forgotten. */
		if (s->o->self_check == SIM_SC_ONCE && i == 0)
			continue;
		cut__v1__app_resume__init(&r[n]);
		r[n].node = (char *)s->nodes[a->srcs[i]].name;
		r[n].has_in_taken = 1;
		r[n].in_taken = a->src_taken[a->srcs[i]];
		rp[n] = &r[n];
		n++;
	}
	h.node = (char *)name_of(s, a);
	h.version = CUTPROTO_APP_VERSION;
	h.n_resume = n;
	h.resume = rp;
	it.item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	it.hello = &h;
	send_now(s, a, &it);
	a->hello_sent = 1;
	a->hello_conn = a->conn;
}

/* resume.c's cut_resume(…, 0): forgets the lost connection, once, and
 * says hello on each new one. */
static void
resume(struct sim *s, struct sim_app *a)
{
	if (!a->resuming) {
		a->handed = a->reported = a->unreported = 0;
		fifo_clear(&a->q);
		a->novt = 0;
		a->out_len = 0;
		a->resuming = 1;
		a->hello_sent = 0;
		a->hello_conn = 0;
	}
	if (a->conn != 0 && (!a->hello_sent || a->hello_conn != a->conn))
		resume_hello(s, a);
}

/* ---- Credit, deliveries, state ---- */

/* send.c's cut_credit(). */
static void
credit(struct sim_app *a, const Cut__V1__AppCredit *cr)
{
	size_t p = cr->peer;
	struct fifo *k;
	size_t n = 0;

	if (p >= a->npeers)
		return;
	k = &a->keep[p];
	if (cr->has_taken && cr->taken > a->out_taken[p] &&
	    cr->taken <= a->out_seq[p]) {
		a->out_taken[p] = cr->taken;
		while (n < fifo_count(k) && fifo_rec(k, n)->tag <= cr->taken)
			n++;
		fifo_pop(k, n);
	}
	if (cr->limit > a->limit[p])
		a->limit[p] = cr->limit;
}

void
simapp_ingest(struct sim *s, struct sim_app *a, const uint8_t *buf, size_t len)
{
	const uint8_t *p;
	size_t off = 0, n;
	int rv;

	if (!a->opened || a->resuming) {
		/* Frames before the answer to our hello belong to an
		 * application before us, or to the lost connection. */
		hello_answer(s, a, buf, len);
		return;
	}
	while ((rv = frame_item(buf, len, &off, &p, &n)) == 1)
		;
	if (rv < 0) {
		sim_fail(s, SIM_C_ONCE,
		         "%s: a frame from the daemon does not decode",
		         name_of(s, a));
		return;
	}
	for (off = 0; frame_item(buf, len, &off, &p, &n) == 1;) {
		Cut__V1__AppItem *it;
		/* recv.c's urgent(): credit and unaligned requests now,
		 * the rest in its turn (a lost connection's items are then
		 * forgotten if the resume comes first). */
		if (n == 0 || (p[0] != KIND_CREDIT && p[0] != KIND_STATE)) {
			if (fifo_push(&a->q, p, n, 0, 0) != 0)
				abort();
			continue;
		}
		it = (Cut__V1__AppItem *)cutproto_unpack(
		    &cut__v1__app_item__descriptor, n, p);
		if (it == NULL) {
			sim_fail(s, SIM_C_ONCE,
			         "%s: an item from the daemon does not decode",
			         name_of(s, a));
			continue;
		}
		switch (it->item_case) {
		case CUT__V1__APP_ITEM__ITEM_CREDIT:
			credit(a, it->credit);
			break;
		case CUT__V1__APP_ITEM__ITEM_STATE_REQUEST:
			if (!it->state_request->overtake) {
				if (fifo_push(&a->q, p, n, 0, 0) != 0)
					abort();
			} else if (a->novt <
			           sizeof(a->ovt) / sizeof(a->ovt[0])) {
				snprintf(a->ovt[a->novt++], sizeof(a->ovt[0]),
				         "%s", it->state_request->snapshot_id);
			}
			break;
		default:
			break;
		}
		protobuf_c_message_free_unpacked(&it->base, NULL);
	}
}

/* recv.c's report_locked(): AppTaken if the handed count moved. */
static void
report(struct sim_app *a)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppTaken t = CUT__V1__APP_TAKEN__INIT;

	if (a->handed == a->reported)
		return;
	t.handed = a->handed;
	it.item_case = CUT__V1__APP_ITEM__ITEM_TAKEN;
	it.taken = &t;
	if (queue_item(a, &it) == 0) {
		a->reported = a->handed;
		a->unreported = 0;
	}
}

/* recv.c's answer() with the bank's state callback. */
static void
answer(struct sim *s, struct sim_app *a, const char *id)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppStateReply r = CUT__V1__APP_STATE_REPLY__INIT;
	char state[64];
	int64_t balance = a->balance;

	/* A callback that fails without setting the state leaves the
	 * request unanswered. */
	if (s->now < a->mute_until)
		return;
	if (s->o->self_check == SIM_SC_CONSERVATION && a->node == 0)
		balance++; /* the planted bug */
	snprintf(state, sizeof(state), "{\"balance\": %" PRId64 "}", balance);
	r.snapshot_id = (char *)id;
	r.content_type = "application/json";
	r.state.data = (uint8_t *)state;
	r.state.len = strlen(state);
	r.handed = a->handed;
	it.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	it.state_reply = &r;
	if (queue_item(a, &it) == 0 && a->handed >= a->reported) {
		a->reported = a->handed;
		a->unreported = 0;
	}
}

/* The amount in a payload {"amount": k, ...}; -1 if none. */
static long
amount_of(const void *p, size_t len)
{
	char buf[48];
	long v;

	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return sscanf(buf, "{\"amount\": %ld", &v) == 1 ? v : -1;
}

/* A delivery is handed to the application: checked against what its
 * sender sent, and banked. */
static void
hand(struct sim *s, struct sim_app *a, const Cut__V1__AppDeliver *d)
{
	int from = config_node_index(s->cfg, d->from);
	uint64_t want;
	long amount = amount_of(d->payload.data, d->payload.len);

	if (from < 0 || (size_t)from == a->node || !d->has_seq) {
		sim_fail(s, SIM_C_ONCE,
		         "%s: a delivery from %s without a channel or seq",
		         name_of(s, a), d->from);
		return;
	}
	want = a->src_taken[from] + 1;
	if (d->seq != want)
		sim_fail(s, SIM_C_ONCE,
		         "%s -> %s: message %" PRIu64 " handed to the "
		         "application after %" PRIu64 " (%s)",
		         d->from, name_of(s, a), d->seq, want - 1,
		         d->seq < want ? "a duplicate or out of order"
		                       : "messages lost");
	else if (d->seq > s->sent[from][a->node].n ||
	         s->sent[from][a->node].amount[d->seq - 1] != amount)
		sim_fail(s, SIM_C_ONCE,
		         "%s -> %s: message %" PRIu64 " carries %ld, not what "
		         "was sent",
		         d->from, name_of(s, a), d->seq, amount);
	if (amount > 0)
		a->balance += amount;
	a->handed++;
	a->taken_total++;
	a->unreported += d->payload.len + a->cost;
	if (!a->src_seen[from]) {
		a->src_seen[from] = 1;
		a->srcs[a->nsrcs++] = (size_t)from;
	}
	if (d->seq > a->src_taken[from])
		a->src_taken[from] = d->seq;
	if (a->unreported >= a->window / 8)
		report(a);
	else if (a->taken_at == SIM_NEVER)
		a->taken_at = s->now + TAKEN_DELAY_MS;
}

/* recv.c's take_item(): an unaligned request first, then the queue.
 * Returns 0 when there was nothing. */
static int
take_item(struct sim *s, struct sim_app *a)
{
	Cut__V1__AppItem *it;
	const struct fifo_rec *r;

	if (a->novt > 0) {
		char id[ENGINE_ID_MAX + 1];
		memcpy(id, a->ovt[0], sizeof(id));
		memmove(a->ovt[0], a->ovt[1],
		        (a->novt - 1) * sizeof(a->ovt[0]));
		a->novt--;
		answer(s, a, id);
		return 1;
	}
	if (fifo_count(&a->q) == 0)
		return 0;
	r = fifo_rec(&a->q, 0);
	it = (Cut__V1__AppItem *)cutproto_unpack(&cut__v1__app_item__descriptor,
	                                         r->len, fifo_data(&a->q, r));
	fifo_pop(&a->q, 1);
	if (it == NULL) {
		sim_fail(s, SIM_C_ONCE, "%s: a queued item does not decode",
		         name_of(s, a));
		return 1;
	}
	if (it->item_case == CUT__V1__APP_ITEM__ITEM_DELIVER)
		hand(s, a, it->deliver);
	else if (it->item_case == CUT__V1__APP_ITEM__ITEM_STATE_REQUEST)
		answer(s, a, it->state_request->snapshot_id);
	else if (it->item_case == CUT__V1__APP_ITEM__ITEM_ERROR)
		/* libcut never earns one (it numbers without gaps, sends
		 * within credit, answers what was asked): cut_recv() would
		 * return CUT_EREFUSED. */
		sim_fail(s, SIM_C_ONCE,
		         "%s: the daemon refused an item (code %u): %s",
		         name_of(s, a), it->error->code, it->error->message);
	else if (it->item_case == CUT__V1__APP_ITEM__ITEM_HELLO_REPLY)
		/* cut_recv() would return CUT_EPROTO. */
		sim_fail(s, SIM_C_ONCE,
		         "%s: a hello reply in the middle of the stream",
		         name_of(s, a));
	else
		sim_fail(s, SIM_C_ONCE,
		         "%s: an item of kind %d in the down stream",
		         name_of(s, a), (int)it->item_case);
	protobuf_c_message_free_unpacked(&it->base, NULL);
	return 1;
}

/* One receive pass: cut_dispatch() normally (everything queued, then the
 * handed count), cut_recv(…, 0) a few times while slow (the count goes
 * when nothing is left, or by the timer). */
static void
receive(struct sim *s, struct sim_app *a, int slow)
{
	size_t max = slow ? a->recv_max : DISPATCH_MAX, k;

	if (a->lost) {
		resume(s, a);
		return;
	}
	for (k = 0; k < max; k++)
		if (!take_item(s, a))
			break;
	if (!slow || k < max)
		report(a);
}

/* cut_try_send() of a random amount to a random peer. */
static void
send_one(struct sim *s, struct sim_app *a)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppSend snd = CUT__V1__APP_SEND__INIT;
	char payload[4200];
	size_t i, len, plen;
	uint64_t charge;
	long amount;
	uint8_t *buf;

	if (!a->opened || a->npeers == 0 || a->balance <= 0)
		return;
	i = (size_t)sim_rand(s, a->npeers);
	amount =
	    1 + (long)sim_rand(s, a->balance < 9 ? (uint64_t)a->balance : 9);
	len = (size_t)snprintf(payload, sizeof(payload), "{\"amount\": %ld",
	                       amount);
	/* Now and then a larger message: the windows and batches fill
	 * sooner, parts go in several chunks. */
	if (sim_rand(s, 8) == 0) {
		size_t pad = (size_t)sim_range(s, 0, 4000);
		len += (size_t)snprintf(payload + len, sizeof(payload) - len,
		                        ", \"pad\": \"");
		memset(payload + len, 'x', pad);
		len += pad;
		payload[len++] = '"';
	}
	payload[len++] = '}';
	charge = len + a->cost;
	/* send.c's room(): within the limit, or alone when the whole window
	 * is free. */
	if (!(a->sent[i] + charge <= a->limit[i] ||
	      (a->limit[i] >= a->sent[i] &&
	       a->limit[i] - a->sent[i] >= a->window)))
		return; /* CUT_EAGAIN: try later */
	snd.to = (char *)s->nodes[a->peer[i]].name;
	snd.content_type = "application/json";
	snd.payload.data = (uint8_t *)payload;
	snd.payload.len = len;
	snd.has_seq = 1;
	snd.seq = a->out_seq[i] + 1;
	it.item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	it.send = &snd;
	plen = cut__v1__app_item__get_packed_size(&it);
	if ((buf = malloc(plen + 11)) == NULL)
		abort();
	plen = pack_field(buf, &it, plen);
	if (fifo_push(&a->keep[i], buf, plen, snd.seq, charge) != 0)
		abort();
	a->out_seq[i]++;
	a->sent[i] += charge;
	a->balance -= amount;
	a->sent_total++;
	s->st->messages++;
	{
		/* The channel's log, for the receiver's check. */
		struct sim_log *log = &s->sent[a->node][a->peer[i]];
		if (log->n == log->cap) {
			log->cap = log->cap ? 2 * log->cap : 256;
			if ((log->amount =
			         realloc(log->amount,
			                 log->cap * sizeof(int32_t))) == NULL)
				abort();
		}
		log->amount[log->n++] = (int32_t)amount;
		if (log->n != snd.seq)
			sim_fail(s, SIM_C_SIM,
			         "%s -> %s: libcut numbered %" PRIu64
			         " after %zu messages",
			         name_of(s, a), snd.to, snd.seq, log->n - 1);
	}
	/* While the link is lost, the message is only kept: it goes after
	 * the resume. */
	if (!a->lost)
		out_append(a, buf, plen);
	free(buf);
}

/* ---- Time ---- */

int64_t
simapp_next_event(const struct sim_app *a)
{
	int64_t t = a->taken_at;

	if (a->conn == 0 && a->dial_at < t)
		t = a->dial_at;
	if (a->next_recv < t)
		t = a->next_recv;
	if (a->next_send < t)
		t = a->next_send;
	return t;
}

void
simapp_conn_closed(struct sim *s, struct sim_app *a)
{
	a->conn = 0;
	a->dial_at = s->now + sim_range(s, 1, 100);
	if (a->opened)
		a->lost = 1; /* the connection our hello went over */
	else
		a->hello_sent = 0;
}

void
simapp_step(struct sim *s, struct sim_app *a)
{
	struct sim_node *n = node_of(s, a);
	int slow = s->now < a->slow_until;

	if (a->conn == 0 && s->now >= a->dial_at) {
		if (n->c == NULL) {
			a->dial_at = s->now + sim_range(s, 50, 150);
		} else {
			simnet_app_connect(s, n);
			if (!a->opened)
				first_hello(s, a);
		}
	}
	if (a->taken_at <= s->now) {
		a->taken_at = SIM_NEVER;
		report(a);
	}
	if (a->next_recv <= s->now) {
		if (s->now < a->stop_until) {
			a->next_recv = a->stop_until;
		} else {
			if (a->opened)
				receive(s, a, slow);
			a->next_recv = s->now + (slow ? a->recv_every
			                              : sim_range(s, 1, 3));
		}
	}
	if (a->next_send <= s->now) {
		if (s->phase < 2)
			send_one(s, a);
		a->next_send = s->phase < 2
		                   ? s->now + sim_range(s, 1, 2000 / s->o->rate)
		                   : SIM_NEVER;
	}
	kick(s, a);
}

uint64_t
simapp_taken_from(const struct sim_app *a, size_t from)
{
	return a->src_taken[from];
}
