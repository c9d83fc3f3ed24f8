/*
 * test_turn.c - one turn of the daemon's loop (daemon/core/turn.c) over a
 * port the test plays, around a real coordinator (coord_harness.h: node
 * p0 of p0, p1, p2 on a real store).
 *
 * The port (struct fake) does what cutd's (shell/port.c) and the
 * simulation's (sim/simnet.c) do, without sockets: it holds queues of
 * frames in, takes or refuses each frame sent, reports the connections
 * that opened and closed, and writes down every call, so that a test can
 * say which frame went where, in which turn, and which was freed.  Each
 * frame it makes carries a serial number: a frame offered again is known
 * by it, not by its address, which malloc may give to another.
 *
 * Suites, after the rules of turn.h:
 *
 *   pending  a refused frame kept and offered first (peers, application),
 *            dropped when a new connection or application makes it stale;
 *   commit   nothing to a peer before the turn's batch is on disk;
 *   conn     connections: a hello read after its close, a silent peer
 *            hung up, a dialer replaced;
 *   bounds   frames read and sent per turn;
 *   timer    turn_next_timer();
 *   input    frames that do not decode, replies to one connection.
 *
 * Time is the harness's simulated clock (h_time()); nothing sleeps.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "coord_harness.h"
#include "turn.h"

#define ITEM_DATA   CUT__V1__PEER_ITEM__ITEM_DATA
#define ITEM_MARKER CUT__V1__PEER_ITEM__ITEM_MARKER
#define ITEM_HELLO  CUT__V1__PEER_ITEM__ITEM_HELLO

#define APP_CREDIT      CUT__V1__APP_ITEM__ITEM_CREDIT
#define APP_REQUEST     CUT__V1__APP_ITEM__ITEM_STATE_REQUEST
#define APP_DELIVER     CUT__V1__APP_ITEM__ITEM_DELIVER
#define APP_HELLO_REPLY CUT__V1__APP_ITEM__ITEM_HELLO_REPLY

/* The log's node for a frame sent to the application. */
#define TO_APP (-1)

/* A frame the port made: its serial number and bytes. */
struct frame {
	uint64_t serial;
	size_t len;
	uint8_t data[];
};

/* A frame read: a copy of the bytes the test queued. */
struct in_frame {
	uint32_t conn;
	size_t len;
	uint8_t data[];
};

struct in_queue {
	struct in_frame **v;
	size_t head, n, cap;
	size_t read; /* frames the turn took from it, ever */
};

/* One offer of a frame to the port: to whom, which, taken or refused,
 * and its bytes as they were then. */
struct sent {
	int node; /* TO_APP: the application */
	uint64_t serial;
	int taken;
	uint8_t *bytes;
	size_t len;
};

/* A reply to one application connection. */
struct reply {
	uint32_t conn;
	uint8_t *bytes;
	size_t len;
};

struct fake {
	struct h *h;
	struct turn t;
	struct turn_port port;
	/* Our dialers: open or not; a connection that opened, reported once
	 * by peer_added(); sends refused. */
	int connected[3], added[3], refuse[3];
	int refuse_app;
	/* Connections closed, reported once. */
	uint32_t peer_closed[16], app_closed[16];
	size_t npeer_closed, napp_closed;
	/* Closed by app_closed() when the turn reads the next application
	 * frame: a close that comes while the turn reads (0: none). */
	uint32_t app_close_on_read;
	struct in_queue peer_in, app_in;
	size_t in_done;
	/* Frames made and freed by frame_free(), by serial number. */
	uint64_t serials;
	uint64_t freed[64];
	size_t nfreed;
	struct sent *log;
	size_t nlog, caplog;
	struct reply replies[16];
	size_t nreplies;
	unsigned hang_ups[3], redials[3];
	int committed_rv;
	/* The coordinator's events the turn handed over, in order. */
	struct coord_event events[8];
	size_t nevents;
	/* Called as the shell's calls are (control, HTTP); the snapshot
	 * call_start() started. */
	void (*calls)(struct fake *f);
	const char *started;
};

/* ---- The port ---- */

static void
f_clock(void *ctx, int64_t *now, int64_t *wall)
{
	struct fake *f = ctx;

	*now = f->h->now;
	*wall = f->h->wall;
}

static size_t
take_ids(uint32_t *from, size_t *n, uint32_t *ids, size_t max)
{
	size_t k = *n < max ? *n : max;

	memcpy(ids, from, k * sizeof(ids[0]));
	memmove(from, from + k, (*n - k) * sizeof(ids[0]));
	*n -= k;
	return k;
}

static size_t
f_peer_closed(void *ctx, uint32_t *ids, size_t max)
{
	struct fake *f = ctx;

	return take_ids(f->peer_closed, &f->npeer_closed, ids, max);
}

static int
f_peer_added(void *ctx, size_t node)
{
	struct fake *f = ctx;
	int added = f->added[node];

	f->added[node] = 0;
	return added;
}

static int
f_peer_connected(void *ctx, size_t node)
{
	return ((struct fake *)ctx)->connected[node];
}

/* As net.c's: the connection is closed; the dialer dials again. */
static void
f_peer_hang_up(void *ctx, size_t node)
{
	struct fake *f = ctx;

	f->hang_ups[node]++;
	f->connected[node] = 0;
}

static void
f_peer_redial(void *ctx, size_t node)
{
	((struct fake *)ctx)->redials[node]++;
}

static size_t
f_app_closed(void *ctx, uint32_t *ids, size_t max)
{
	struct fake *f = ctx;

	return take_ids(f->app_closed, &f->napp_closed, ids, max);
}

static int
pop(struct in_queue *q, struct turn_in *in)
{
	struct in_frame *fr;

	if (q->head == q->n)
		return 0;
	fr = q->v[q->head++];
	q->read++;
	*in = (struct turn_in){
	    .frame = fr, .data = fr->data, .len = fr->len, .conn = fr->conn};
	return 1;
}

static int
f_peer_recv(void *ctx, struct turn_in *in)
{
	return pop(&((struct fake *)ctx)->peer_in, in);
}

static int
f_app_recv(void *ctx, struct turn_in *in)
{
	struct fake *f = ctx;

	if (f->app_close_on_read != 0 && f->app_in.head < f->app_in.n) {
		f->app_closed[f->napp_closed++] = f->app_close_on_read;
		f->app_close_on_read = 0;
	}
	return pop(&f->app_in, in);
}

static void
f_in_done(void *ctx, struct turn_in *in)
{
	((struct fake *)ctx)->in_done++;
	free(in->frame);
}

static void *
f_frame_new(void *ctx, size_t len, uint8_t **body)
{
	struct fake *f = ctx;
	struct frame *fr = malloc(sizeof(*fr) + len);

	cr_assert_not_null(fr);
	fr->serial = ++f->serials;
	fr->len = len;
	*body = fr->data;
	return fr;
}

static void
f_frame_trim(void *ctx, void *frame, size_t len)
{
	struct frame *fr = frame;

	(void)ctx;
	cr_assert_leq(len, fr->len, "frame_trim lengthens");
	fr->len = len;
}

static void
f_frame_free(void *ctx, void *frame)
{
	struct fake *f = ctx;
	struct frame *fr = frame;

	cr_assert_lt(f->nfreed, 64);
	f->freed[f->nfreed++] = fr->serial;
	free(fr);
}

/* Writes down the offer; a frame taken is the port's, and leaves. */
static int
offer(struct fake *f, int node, struct frame *fr, int refuse)
{
	struct sent *s;

	if (f->nlog == f->caplog) {
		f->caplog = f->caplog ? f->caplog * 2 : 64;
		f->log = realloc(f->log, f->caplog * sizeof(*f->log));
		cr_assert_not_null(f->log);
	}
	s = &f->log[f->nlog++];
	*s = (struct sent){node, fr->serial, !refuse, malloc(fr->len + 1),
	                   fr->len};
	cr_assert_not_null(s->bytes);
	memcpy(s->bytes, fr->data, fr->len);
	if (refuse)
		return -1;
	free(fr);
	return 0;
}

static int
f_peer_send(void *ctx, size_t node, void *frame)
{
	struct fake *f = ctx;

	cr_assert(f->connected[node], "a frame to p%zu, not connected", node);
	return offer(f, (int)node, frame, f->refuse[node]);
}

static int
f_app_send(void *ctx, void *frame)
{
	struct fake *f = ctx;

	return offer(f, TO_APP, frame, f->refuse_app);
}

static void
f_app_reply(void *ctx, uint32_t conn, const uint8_t *data, size_t len)
{
	struct fake *f = ctx;
	struct reply *r;

	cr_assert_lt(f->nreplies, 16);
	r = &f->replies[f->nreplies++];
	*r = (struct reply){conn, malloc(len + 1), len};
	cr_assert_not_null(r->bytes);
	memcpy(r->bytes, data, len);
}

static void
f_calls(void *ctx)
{
	struct fake *f = ctx;

	if (f->calls != NULL)
		f->calls(f);
}

static void
f_committed(void *ctx, int rv, int64_t now)
{
	(void)now;
	((struct fake *)ctx)->committed_rv = rv;
}

static void
f_event(void *ctx, const struct coord_event *ev)
{
	struct fake *f = ctx;

	cr_assert_lt(f->nevents, 8);
	f->events[f->nevents++] = *ev;
}

/* p0 and its turn, at the harness's start; no connection open. */
static struct fake *
fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));

	cr_assert_not_null(f);
	f->h = h_new(NULL);
	f->port = (struct turn_port){
	    .ctx = f,
	    .clock = f_clock,
	    .peer_closed = f_peer_closed,
	    .peer_added = f_peer_added,
	    .peer_connected = f_peer_connected,
	    .peer_hang_up = f_peer_hang_up,
	    .peer_redial = f_peer_redial,
	    .app_closed = f_app_closed,
	    .peer_recv = f_peer_recv,
	    .app_recv = f_app_recv,
	    .in_done = f_in_done,
	    .frame_new = f_frame_new,
	    .frame_trim = f_frame_trim,
	    .frame_free = f_frame_free,
	    .peer_send = f_peer_send,
	    .app_send = f_app_send,
	    .app_reply = f_app_reply,
	    .calls = f_calls,
	    .committed = f_committed,
	    .event = f_event,
	};
	cr_assert_eq(turn_init(&f->t, f->h->c, 0, 3, &f->port, f->h->now), 0);
	return f;
}

static void
queue_free(struct in_queue *q)
{
	for (size_t i = q->head; i < q->n; i++)
		free(q->v[i]);
	free(q->v);
}

static void
fake_free(struct fake *f)
{
	turn_fini(&f->t);
	h_free(f->h);
	queue_free(&f->peer_in);
	queue_free(&f->app_in);
	for (size_t i = 0; i < f->nlog; i++)
		free(f->log[i].bytes);
	free(f->log);
	for (size_t i = 0; i < f->nreplies; i++)
		free(f->replies[i].bytes);
	free(f);
}

static void
turn(struct fake *f)
{
	turn_run(&f->t);
}

/* Our connection to node opens: peer_added() reports it next turn. */
static void
open_conn(struct fake *f, size_t node)
{
	f->connected[node] = 1;
	f->added[node] = 1;
}

/* ---- Frames in ---- */

static void
enqueue(struct in_queue *q, uint32_t conn, const uint8_t *data, size_t len)
{
	struct in_frame *fr = malloc(sizeof(*fr) + len + 1);

	cr_assert_not_null(fr);
	fr->conn = conn;
	fr->len = len;
	if (len > 0)
		memcpy(fr->data, data, len);
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 64;
		q->v = realloc(q->v, q->cap * sizeof(*q->v));
		cr_assert_not_null(q->v);
	}
	q->v[q->n++] = fr;
}

static size_t
queued(const struct in_queue *q)
{
	return q->n - q->head;
}

/* Packs b as its peer would (the header h_peer() packs, then its items)
 * and queues it on conn; b is empty again. */
static void
in_peer(struct fake *f, uint32_t conn, struct pb *b)
{
	size_t len;
	uint8_t *buf = pb_pack(b, &len);

	enqueue(&f->peer_in, conn, buf, len);
	free(buf);
}

static void
in_peer_hello(struct fake *f, uint32_t conn, const char *from)
{
	struct pb b;

	pb_init(&b, from);
	pb_hello(&b, 1, b.epoch);
	in_peer(f, conn, &b);
}

/* Queues an application batch on conn; b is empty again. */
static void
in_app(struct fake *f, uint32_t conn, struct ab *b)
{
	enqueue(&f->app_in, conn, b->items, b->len);
	free(b->items);
	b->items = NULL;
	b->len = b->cap = 0;
}

static void
in_app_hello(struct fake *f, uint32_t conn)
{
	struct ab b;

	ab_init(&b);
	ab_hello(&b, "p0", CUTPROTO_APP_VERSION, 0, NULL);
	in_app(f, conn, &b);
}

/* ---- What went out ---- */

/* Offers of frames to node (TO_APP: the application) from log entry
 * `from` on; taken only, if taken_only. */
static size_t
offers(const struct fake *f, int node, size_t from, int taken_only)
{
	size_t n = 0;

	for (size_t i = from; i < f->nlog; i++)
		n += f->log[i].node == node && (!taken_only || f->log[i].taken);
	return n;
}

/* The log entry of the first offer to node from entry `from` on;
 * asserts one.  (An index: the log moves as it grows.) */
static size_t
first_offer(const struct fake *f, int node, size_t from)
{
	for (size_t i = from; i < f->nlog; i++)
		if (f->log[i].node == node)
			return i;
	cr_assert_fail("no frame offered to %d since entry %zu", node, from);
	return 0;
}

/* Whether log entries i and j carry the same bytes. */
static int
same_bytes(const struct fake *f, size_t i, size_t j)
{
	return f->log[i].len == f->log[j].len &&
	       memcmp(f->log[i].bytes, f->log[j].bytes, f->log[i].len) == 0;
}

static int
was_freed(const struct fake *f, uint64_t serial)
{
	for (size_t i = 0; i < f->nfreed; i++)
		if (f->freed[i] == serial)
			return 1;
	return 0;
}

/* Items of kind in a peer frame; asserts that it is p0's and decodes. */
static size_t
peer_items(const struct sent *s, Cut__V1__PeerItem__ItemCase kind)
{
	Cut__V1__PeerBatch *b = (Cut__V1__PeerBatch *)cutproto_unpack(
	    &cut__v1__peer_batch__descriptor, s->len, s->bytes);
	size_t n = 0;

	cr_assert_not_null(b, "a frame to p%d does not decode", s->node);
	cr_assert_str_eq(b->from, "p0");
	for (size_t i = 0; i < b->n_items; i++)
		n += b->items[i]->item_case == kind;
	protobuf_c_message_free_unpacked(&b->base, NULL);
	return n;
}

/* Items of kind in an application frame (down stream or reply). */
static size_t
app_items(const uint8_t *bytes, size_t len, Cut__V1__AppItem__ItemCase kind)
{
	Cut__V1__AppBatch *b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, bytes);
	size_t n = 0;

	cr_assert_not_null(b, "an application frame does not decode");
	for (size_t i = 0; i < b->n_items; i++)
		n += b->items[i]->item_case == kind;
	protobuf_c_message_free_unpacked(&b->base, NULL);
	return n;
}

/* p1 and p2 connect both ways and say hello: the links run, and what
 * was owed to them has gone. */
static void
link_up(struct fake *f)
{
	open_conn(f, 1);
	open_conn(f, 2);
	in_peer_hello(f, H_C1, "p1");
	in_peer_hello(f, H_C2, "p2");
	turn(f);
	cr_assert_eq(coord_peer_epoch(f->h->c, 1), H_E1);
	cr_assert_eq(coord_peer_epoch(f->h->c, 2), H_E2);
	cr_assert_geq(offers(f, 1, 0, 1), 1, "p1 was owed a hello");
	cr_assert_geq(offers(f, 2, 0, 1), 1, "p2 was owed a hello");
}

/* The application says hello on H_APP and is connected. */
static void
app_up(struct fake *f)
{
	in_app_hello(f, H_APP);
	turn(f);
	cr_assert_eq(coord_app_conn(f->h->c), H_APP);
}

/* p0 with its links running and its application connected. */
static struct fake *
ready(void)
{
	struct fake *f = fake_new();

	link_up(f);
	app_up(f);
	return f;
}

/* The application sends payload to node, in a frame of its own. */
static void
app_send_to(struct fake *f, const char *to, const char *payload, size_t len)
{
	struct ab b;

	ab_init(&b);
	ab_send(&b, to, payload, len, 0);
	in_app(f, H_APP, &b);
}

/* A control call: p0 starts a snapshot. */
static void
call_start(struct fake *f)
{
	static char id[ENGINE_ID_MAX + 1];

	snprintf(id, sizeof(id), "%s", h_start(f->h, 0));
	f->started = id;
	f->calls = NULL;
}

/* A snapshot started by p0 in a turn's calls, committed in that turn (the
 * calls come before the commit), and its state request taken: the
 * application's reply (queued by the test) is what sends the markers. */
static const char *
start(struct fake *f)
{
	size_t mark = f->nlog;

	f->calls = call_start;
	turn(f);
	cr_assert_not_null(f->started);
	cr_assert_str_eq(h_disk_status(f->h, f->started), "in_progress");
	cr_assert_eq(offers(f, TO_APP, mark, 1), 1, "the state request");
	return f->started;
}

static void
app_state(struct fake *f, const char *id)
{
	struct ab b;

	ab_init(&b);
	ab_reply(&b, id, "{}", 0);
	in_app(f, H_APP, &b);
}

/* Every frame the port made was offered in the turn that made it (none
 * was built and lost, none overwrote another): the last serial made is
 * the last offered. */
static void
all_offered(const struct fake *f)
{
	uint64_t last = 0;

	for (size_t i = 0; i < f->nlog; i++)
		if (f->log[i].serial > last)
			last = f->log[i].serial;
	cr_assert_eq(f->serials, last, "frames made %llu, offered up to %llu",
	             (unsigned long long)f->serials, (unsigned long long)last);
}

/* ---- pending: a frame the port refused ---- */

/* A peer frame the port refuses stays the turn's and is offered again,
 * first, as it was (the same frame, not rebuilt: the coordinator counted
 * its items sent), and nothing is built for that peer behind it: a
 * second frame would overtake nothing, but it would pile up. */
Test(pending, peer_frame_refused_is_offered_again_first)
{
	struct fake *f = ready();
	const char *id = start(f);
	size_t mark, refused, again;
	uint64_t serial;

	f->refuse[1] = 1;
	app_state(f, id);
	mark = f->nlog;
	turn(f);
	refused = first_offer(f, 1, mark);
	cr_assert_not(f->log[refused].taken);
	cr_assert_eq(peer_items(&f->log[refused], ITEM_MARKER), 1);
	cr_assert_eq(offers(f, 1, mark, 0), 1, "one offer, then it waits");
	cr_assert_eq(offers(f, 2, mark, 1), 1, "p2 takes its marker");
	serial = f->log[refused].serial;

	/* More for p1 while it refuses: a message from the application. */
	app_send_to(f, "p1", "{\"a\": 1}", 8);
	mark = f->nlog;
	turn(f);
	cr_assert_eq(offers(f, 1, mark, 0), 1);
	again = first_offer(f, 1, mark);
	cr_assert_eq(f->log[again].serial, serial);
	cr_assert(same_bytes(f, refused, again));
	all_offered(f);

	f->refuse[1] = 0;
	mark = f->nlog;
	turn(f);
	again = first_offer(f, 1, mark);
	cr_assert_eq(f->log[again].serial, serial, "the kept frame goes first");
	cr_assert(f->log[again].taken);
	cr_assert(same_bytes(f, refused, again));
	cr_assert_eq(offers(f, 1, again + 1, 1), 1, "then the message");
	cr_assert_eq(
	    peer_items(&f->log[first_offer(f, 1, again + 1)], ITEM_DATA), 1);
	cr_assert_not(was_freed(f, serial));
	all_offered(f);
	fake_free(f);
}

/* The frame that waited for p1's connection is dropped when the next
 * one comes up: whatever it held the coordinator sends again, after a
 * hello, on the new connection. */
Test(pending, peer_frame_dropped_on_new_connection)
{
	struct fake *f = ready();
	size_t mark, sent;
	uint64_t serial;

	f->refuse[1] = 1;
	app_send_to(f, "p1", "{\"a\": 1}", 8);
	mark = f->nlog;
	turn(f);
	serial = f->log[first_offer(f, 1, mark)].serial;
	cr_assert_eq(peer_items(&f->log[first_offer(f, 1, mark)], ITEM_DATA),
	             1);
	cr_assert_not(was_freed(f, serial));

	open_conn(f, 1); /* a new connection; this one takes frames */
	f->refuse[1] = 0;
	mark = f->nlog;
	turn(f);
	cr_assert(was_freed(f, serial), "the old connection's frame");
	sent = first_offer(f, 1, mark);
	cr_assert_neq(f->log[sent].serial, serial);
	cr_assert(f->log[sent].taken);
	cr_assert_eq(peer_items(&f->log[sent], ITEM_HELLO), 1);
	cr_assert_eq(peer_items(&f->log[sent], ITEM_DATA), 1, "sent again");
	all_offered(f);
	fake_free(f);
}

/* A down-stream frame the port refuses (nng's queue full) is kept and
 * goes first next turn, the same frame; nothing is built behind it. */
Test(pending, app_frame_refused_is_sent_first)
{
	struct fake *f = ready();
	size_t mark, refused, again;
	uint64_t serial;
	struct pb b;

	f->refuse_app = 1;
	h_start(f->h, 0); /* a state request for the application */
	mark = f->nlog;
	turn(f);
	cr_assert_eq(offers(f, TO_APP, mark, 0), 1);
	refused = first_offer(f, TO_APP, mark);
	serial = f->log[refused].serial;
	cr_assert_not(f->log[refused].taken);

	/* A delivery for it meanwhile. */
	pb_init(&b, "p1");
	pb_data(&b, 1, 1, "{\"d\": 1}");
	in_peer(f, H_C1, &b);
	mark = f->nlog;
	turn(f);
	cr_assert_eq(offers(f, TO_APP, mark, 0), 1);
	again = first_offer(f, TO_APP, mark);
	cr_assert_eq(f->log[again].serial, serial);
	cr_assert(same_bytes(f, refused, again));
	all_offered(f);

	f->refuse_app = 0;
	mark = f->nlog;
	turn(f);
	again = first_offer(f, TO_APP, mark);
	cr_assert_eq(f->log[again].serial, serial, "the kept frame first");
	cr_assert(f->log[again].taken);
	cr_assert(same_bytes(f, refused, again));
	again = first_offer(f, TO_APP, again + 1);
	cr_assert_eq(
	    app_items(f->log[again].bytes, f->log[again].len, APP_DELIVER), 1,
	    "then the delivery");
	all_offered(f);
	fake_free(f);
}

/* A new application: the frame kept for the one before is dropped, and
 * the new one gets its own stream from the coordinator. */
Test(pending, app_frame_dropped_for_new_application)
{
	struct fake *f = ready();
	size_t mark, sent;
	uint64_t serial;

	f->refuse_app = 1;
	h_start(f->h, 0);
	mark = f->nlog;
	turn(f);
	serial = f->log[first_offer(f, TO_APP, mark)].serial;

	f->refuse_app = 0;
	in_app_hello(f, H_APP + 1);
	mark = f->nlog;
	turn(f);
	cr_assert_eq(coord_app_conn(f->h->c), H_APP + 1);
	cr_assert(was_freed(f, serial), "the old application's frame");
	sent = first_offer(f, TO_APP, mark);
	cr_assert_neq(f->log[sent].serial, serial);
	cr_assert(f->log[sent].taken);
	cr_assert_eq(
	    app_items(f->log[sent].bytes, f->log[sent].len, APP_CREDIT), 2,
	    "the new application's credit, from p1 and p2");
	cr_assert_eq(
	    app_items(f->log[sent].bytes, f->log[sent].len, APP_REQUEST), 1,
	    "the dropped frame's request, asked again");
	all_offered(f);
	fake_free(f);
}

/* ---- commit: nothing to a peer before its batch is on disk ---- */

/* The state reply is stored in the turn's batch, and the markers stand
 * for it: while the commit is busy they wait; they go in the turn whose
 * commit succeeds. */
Test(commit, peers_wait_for_the_commit)
{
	struct fake *f = ready();
	const char *id = start(f);
	size_t mark;

	app_state(f, id);
	h_fail(f->h, STORE_OP_COMMIT, E_BUSY, 1);
	mark = f->nlog;
	turn(f);
	cr_assert_eq(f->committed_rv, E_BUSY);
	cr_assert(coord_batch_open(f->h->c));
	cr_assert_eq(offers(f, 1, mark, 0), 0, "nothing to p1 while busy");
	cr_assert_eq(offers(f, 2, mark, 0), 0, "nothing to p2 while busy");

	mark = f->nlog;
	turn(f);
	cr_assert_eq(f->committed_rv, 0);
	cr_assert_not(coord_batch_open(f->h->c));
	cr_assert_eq(peer_items(&f->log[first_offer(f, 1, mark)], ITEM_MARKER),
	             1);
	cr_assert_eq(peer_items(&f->log[first_offer(f, 2, mark)], ITEM_MARKER),
	             1);
	fake_free(f);
}

/* ---- conn: connections ---- */

/* The application's connection closed before its hello was read (the
 * close was reported in step 1, the hello read in step 2): the hello
 * must not leave the coordinator with a connection that is gone, to
 * which it would send, and whose reply is dropped. */
Test(conn, hello_read_after_its_close)
{
	struct fake *f = ready();
	size_t mark = f->nlog, replies = f->nreplies;

	in_app_hello(f, H_APP + 1);
	f->app_closed[f->napp_closed++] = H_APP + 1;
	turn(f);
	cr_assert_eq(coord_app_conn(f->h->c), 0);
	cr_assert_not(coord_app_connected(f->h->c));
	cr_assert_eq(f->nreplies, replies, "no reply to a closed connection");
	cr_assert_eq(offers(f, TO_APP, mark, 0), 0);
	fake_free(f);
}

/* The same, with the close reported while the turn reads (nng's pipe
 * event comes between two reads). */
Test(conn, hello_closed_while_read)
{
	struct fake *f = fake_new();

	in_app_hello(f, H_APP);
	f->app_close_on_read = H_APP;
	turn(f);
	cr_assert_eq(coord_app_conn(f->h->c), 0);
	cr_assert_not(coord_app_connected(f->h->c));
	cr_assert_eq(offers(f, TO_APP, 0, 0), 0);
	fake_free(f);
}

/* A connection that brings nothing for DEAD_MS is hung up, once, and
 * not before: DEAD_MS from when it came up, however long ago the peer
 * was last heard from (here, never: before the connection). */
Test(conn, silent_peer_hung_up_after_dead_ms)
{
	struct fake *f = fake_new();

	h_time(f->h, 1000);
	open_conn(f, 1);
	turn(f);
	cr_assert_eq(turn_peer_since(&f->t, 1), f->h->now);
	h_time(f->h, DEAD_MS - 1);
	cr_assert(coord_peer_silent(f->h->c, 1), "nothing heard ever");
	turn(f);
	cr_assert_eq(f->hang_ups[1], 0, "not before DEAD_MS");
	cr_assert(f->connected[1]);
	h_time(f->h, 1);
	turn(f);
	cr_assert_eq(f->hang_ups[1], 1);
	cr_assert_not(coord_peer_silent(f->h->c, 1), "told it redialed");
	turn(f);
	h_time(f->h, 10);
	turn(f);
	cr_assert_eq(f->hang_ups[1], 1, "once");
	cr_assert_eq(f->hang_ups[2], 0, "p2 was never connected");
	fake_free(f);
}

/* A peer that answers is not hung up. */
Test(conn, heard_peer_kept)
{
	struct fake *f = fake_new();
	struct pb b;

	link_up(f);
	for (int i = 0; i < 3; i++) {
		h_time(f->h, DEAD_MS / 2);
		pb_init(&b, "p1");
		pb_ack(&b, 0, 0, 0);
		in_peer(f, H_C1, &b);
		pb_init(&b, "p2");
		pb_ack(&b, 0, 0, 0);
		in_peer(f, H_C2, &b);
		turn(f);
	}
	cr_assert_eq(f->hang_ups[1] + f->hang_ups[2], 0);
	fake_free(f);
}

/* Our connection to p1 closed: the coordinator is told, and nothing is
 * offered to p1 (it would only wait in a dead queue; f_peer_send()
 * asserts so) until the next connection, which gets it after a hello. */
Test(conn, closed_connection_told_and_sent_nothing)
{
	struct fake *f = ready();
	size_t mark = f->nlog, sent;

	cr_assert(coord_peer_alive(f->h->c, 1));
	f->connected[1] = 0;
	app_send_to(f, "p1", "{\"a\": 1}", 8);
	turn(f);
	cr_assert_not(coord_peer_alive(f->h->c, 1));
	cr_assert_eq(offers(f, 1, mark, 0), 0);

	open_conn(f, 1);
	mark = f->nlog;
	turn(f);
	sent = first_offer(f, 1, mark);
	cr_assert_eq(peer_items(&f->log[sent], ITEM_HELLO), 1);
	cr_assert_eq(peer_items(&f->log[sent], ITEM_DATA), 1);
	fake_free(f);
}

/* A dialer that has not connected for TURN_REDIAL_MS is replaced, and
 * its replacement gets TURN_REDIAL_MS of its own; a connected one never
 * is. */
Test(conn, dialer_replaced_every_redial_ms)
{
	struct fake *f = fake_new();

	open_conn(f, 2);
	h_time(f->h, TURN_REDIAL_MS - 1);
	turn(f);
	cr_assert_eq(f->redials[1], 0);
	h_time(f->h, 1);
	turn(f);
	cr_assert_eq(f->redials[1], 1);
	turn(f);
	h_time(f->h, TURN_REDIAL_MS - 1);
	turn(f);
	cr_assert_eq(f->redials[1], 1, "not again before TURN_REDIAL_MS");
	h_time(f->h, 1);
	turn(f);
	cr_assert_eq(f->redials[1], 2);
	cr_assert_eq(f->redials[2], 0, "p2 is connected");
	cr_assert_eq(f->redials[0], 0, "p0 is us");
	fake_free(f);
}

/* ---- bounds: frames per turn ---- */

/* At most TURN_RECV_MAX frames from each socket in a turn, so that one
 * busy sender does not keep the loop from its timers and the others;
 * the rest are read next turn. */
Test(bounds, frames_read_per_socket)
{
	struct fake *f = fake_new();
	size_t peer0, app0, done0;
	struct pb b;
	struct ab a;

	link_up(f);
	app_up(f);
	peer0 = f->peer_in.read;
	app0 = f->app_in.read;
	done0 = f->in_done;
	for (int i = 0; i < TURN_RECV_MAX + 44; i++) {
		pb_init(&b, "p1");
		pb_ack(&b, 0, 0, 0);
		in_peer(f, H_C1, &b);
		ab_init(&a); /* an empty batch: nothing to answer */
		in_app(f, H_APP, &a);
	}
	turn(f);
	cr_assert_eq(f->peer_in.read - peer0, TURN_RECV_MAX);
	cr_assert_eq(f->app_in.read - app0, TURN_RECV_MAX);
	cr_assert_eq(f->in_done - done0, 2 * TURN_RECV_MAX, "each given back");
	cr_assert_eq(queued(&f->peer_in), 44);
	cr_assert_eq(queued(&f->app_in), 44);
	turn(f);
	cr_assert_eq(queued(&f->peer_in), 0);
	cr_assert_eq(queued(&f->app_in), 0);
	cr_assert_eq(f->in_done - done0, 2 * (TURN_RECV_MAX + 44));
	cr_assert_eq(coord_bad_peer(f->h->c), 0);
	cr_assert_eq(coord_bad_app(f->h->c), 0);
	fake_free(f);
}

/* A payload larger than a batch, so that each message is a frame of its
 * own (coord.h, BATCH_BYTES), in JSON; the caller frees it. */
static char *
big_payload(size_t *ret_len)
{
	size_t len = BATCH_BYTES + 16;
	char *p = malloc(len + 1);

	cr_assert_not_null(p);
	memset(p, 'a', len);
	p[0] = p[len - 1] = '"';
	p[len] = '\0';
	*ret_len = len;
	return p;
}

/* Windows and a message size that let the coordinator owe a peer or
 * the application more than TURN_BATCHES_MAX frames at once.  The
 * coordinator borrows the configuration and reads these as it goes. */
static void
wide_windows(struct fake *f)
{
	f->h->cfg->max_message = 2 * BATCH_BYTES;
	f->h->cfg->window = 256 * BATCH_BYTES;
	f->h->cfg->app_window = 256 * BATCH_BYTES;
}

/* Messages in the frames offered to node from log entry `from` on. */
static size_t
data_to(const struct fake *f, int node, size_t from)
{
	size_t n = 0;

	for (size_t i = from; i < f->nlog; i++)
		if (f->log[i].node == node)
			n += peer_items(&f->log[i], ITEM_DATA);
	return n;
}

/* At most TURN_BATCHES_MAX frames to one peer in a turn: the loop goes
 * back to reading before it fills a queue; the rest go next turn. */
Test(bounds, frames_sent_per_peer)
{
	struct fake *f = fake_new();
	size_t len, mark;
	char *payload = big_payload(&len);

	wide_windows(f);
	link_up(f);
	app_up(f);
	for (int i = 0; i < TURN_BATCHES_MAX + 2; i++)
		app_send_to(f, "p1", payload, len);
	mark = f->nlog;
	turn(f);
	cr_assert_eq(queued(&f->app_in), 0);
	cr_assert_eq(offers(f, 1, mark, 0), TURN_BATCHES_MAX);
	cr_assert_eq(offers(f, 1, mark, 1), TURN_BATCHES_MAX, "all taken");
	cr_assert_eq(data_to(f, 1, mark), TURN_BATCHES_MAX, "one a frame");
	mark = f->nlog;
	turn(f);
	cr_assert_eq(data_to(f, 1, mark), 2, "the other two, next turn");
	all_offered(f);
	free(payload);
	fake_free(f);
}

/* Deliveries in the frames offered to the application from log entry
 * `from` on. */
static size_t
deliveries_from(const struct fake *f, size_t from)
{
	size_t n = 0;

	for (size_t i = from; i < f->nlog; i++)
		if (f->log[i].node == TO_APP)
			n += app_items(f->log[i].bytes, f->log[i].len,
			               APP_DELIVER);
	return n;
}

/* At most TURN_BATCHES_MAX frames to the application in a turn, each
 * offered in the turn that built it: none waits for the next turn
 * unless the port refused it. */
Test(bounds, frames_sent_to_the_application)
{
	struct fake *f = fake_new();
	size_t len, mark;
	char *payload = big_payload(&len);
	struct pb b;

	wide_windows(f);
	link_up(f);
	app_up(f);
	for (int i = 0; i < TURN_BATCHES_MAX + 2; i++) {
		pb_init(&b, "p1");
		pb_data(&b, (uint64_t)i + 1, (uint64_t)i + 1, payload);
		in_peer(f, H_C1, &b);
	}
	mark = f->nlog;
	turn(f);
	cr_assert_eq(offers(f, TO_APP, mark, 1), TURN_BATCHES_MAX);
	cr_assert_eq(deliveries_from(f, mark), TURN_BATCHES_MAX);
	mark = f->nlog;
	turn(f);
	cr_assert_eq(deliveries_from(f, mark), 2, "the rest next turn");
	free(payload);
	fake_free(f);
}

/* ---- timer: turn_next_timer() ---- */

/* A disconnected peer's dialer is replaced on time: the loop does not
 * sleep past it, though the coordinator has nothing to do before. */
Test(timer, not_past_a_redial)
{
	struct fake *f = fake_new();

	turn(f);
	h_time(f->h, 300);
	cr_assert_gt(coord_next_timer(f->h->c, TURN_SLEEP_MAX_MS),
	             TURN_REDIAL_MS - 300, "the redial comes first");
	cr_assert_eq(turn_next_timer(&f->t, TURN_SLEEP_MAX_MS),
	             TURN_REDIAL_MS - 300);
	h_time(f->h, TURN_REDIAL_MS);
	cr_assert_eq(turn_next_timer(&f->t, TURN_SLEEP_MAX_MS), 0, "overdue");
	/* Redialed: the next one is TURN_REDIAL_MS away. */
	turn(f);
	cr_assert_eq(f->redials[1], 1);
	h_time(f->h, 200);
	cr_assert_eq(turn_next_timer(&f->t, TURN_SLEEP_MAX_MS),
	             TURN_REDIAL_MS - 200);
	fake_free(f);
}

/* A frame kept for a peer is tried again after a millisecond, not after
 * the coordinator's next timer. */
Test(timer, pending_peer_frame)
{
	struct fake *f = ready();

	f->refuse[1] = 1;
	app_send_to(f, "p1", "{\"a\": 1}", 8);
	turn(f);
	cr_assert_eq(turn_next_timer(&f->t, TURN_SLEEP_MAX_MS), 1);
	f->refuse[1] = 0;
	turn(f);
	cr_assert_gt(turn_next_timer(&f->t, TURN_SLEEP_MAX_MS), 1,
	             "nothing kept: the coordinator's timer");
	fake_free(f);
}

Test(timer, pending_app_frame)
{
	struct fake *f = ready();

	f->refuse_app = 1;
	h_start(f->h, 0);
	turn(f);
	cr_assert_eq(turn_next_timer(&f->t, TURN_SLEEP_MAX_MS), 1);
	f->refuse_app = 0;
	turn(f);
	cr_assert_gt(turn_next_timer(&f->t, TURN_SLEEP_MAX_MS), 1);
	fake_free(f);
}

/* ---- input: frames that do not decode, replies ---- */

/* A peer frame that does not decode is the sender's fault: counted, and
 * the frames after it in the same turn are handed over all the same. */
Test(input, bad_peer_frame_among_good)
{
	struct fake *f = fake_new();
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff};

	in_peer_hello(f, H_C1, "p1");
	enqueue(&f->peer_in, H_C1, junk, sizeof(junk));
	in_peer_hello(f, H_C2, "p2");
	turn(f);
	cr_assert_eq(coord_bad_peer(f->h->c), 1);
	cr_assert_eq(f->in_done, 3, "every frame given back");
	cr_assert_eq(coord_peer_epoch(f->h->c, 1), H_E1);
	cr_assert_eq(coord_peer_epoch(f->h->c, 2), H_E2, "read after it");
	fake_free(f);
}

/* An application frame that does not decode is answered with an error,
 * to the connection it came on; the next one is read and answered, to
 * its own. */
Test(input, bad_app_frame_then_hello)
{
	struct fake *f = fake_new();
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff};

	enqueue(&f->app_in, H_APP + 1, junk, sizeof(junk));
	in_app_hello(f, H_APP);
	turn(f);
	cr_assert_eq(coord_bad_app(f->h->c), 1);
	cr_assert_eq(coord_app_conn(f->h->c), H_APP);
	cr_assert_eq(f->nreplies, 2);
	cr_assert_eq(f->replies[0].conn, H_APP + 1);
	cr_assert_eq(app_items(f->replies[0].bytes, f->replies[0].len,
	                       CUT__V1__APP_ITEM__ITEM_ERROR),
	             1);
	cr_assert_eq(f->replies[1].conn, H_APP);
	cr_assert_eq(
	    app_items(f->replies[1].bytes, f->replies[1].len, APP_HELLO_REPLY),
	    1);
	fake_free(f);
}

/* A hello's reply goes to its connection by app_reply(), in the turn,
 * not down the stream; the stream's first frame follows it. */
Test(input, hello_reply_to_its_connection)
{
	struct fake *f = fake_new();

	in_app_hello(f, H_APP);
	turn(f);
	cr_assert_eq(f->nreplies, 1);
	cr_assert_eq(f->replies[0].conn, H_APP);
	cr_assert_eq(
	    app_items(f->replies[0].bytes, f->replies[0].len, APP_HELLO_REPLY),
	    1);
	cr_assert_eq(offers(f, TO_APP, 0, 0), 1);
	cr_assert_eq(app_items(f->log[0].bytes, f->log[0].len, APP_HELLO_REPLY),
	             0);
	fake_free(f);
}

/* turn_stop() ends the run in order: what is in flight aborted with the
 * reason, that batch on disk, and only then the shell's after-commit step
 * (which answers held replies), told coord_commit()'s result. */
Test(run, stop_commits_before_the_shells_step)
{
	struct fake *f = fake_new();
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;

	snprintf(sid, sizeof(sid), "%s", h_start(f->h, 0));
	h_commit(f->h);
	cr_assert_str_eq(h_disk_status(f->h, sid), "in_progress");
	f->committed_rv = -1;
	turn_stop(&f->t, "daemon stopped");
	cr_assert_eq(f->committed_rv, 0);
	cr_assert_str_eq(h_disk_status(f->h, sid), "aborted");
	cr_assert_eq(h_row(f->h, sid, &row), 0);
	cr_assert_str_eq(row.reason, "daemon stopped");
	fake_free(f);
}

/* The stop's abort is an event, handed over after the commit that
 * wrote it. */
Test(run, stop_tells_the_end)
{
	struct fake *f = fake_new();
	char sid[ENGINE_ID_MAX + 1];

	snprintf(sid, sizeof(sid), "%s", h_start(f->h, 0));
	h_commit(f->h);
	turn_stop(&f->t, "daemon stopped");
	cr_assert_eq(f->nevents, 1);
	cr_assert_eq(f->events[0].kind, COORD_EV_SNAP_ENDED);
	cr_assert_str_eq(f->events[0].id, sid);
	cr_assert_eq(f->events[0].initiator, 1);
	cr_assert_eq(f->events[0].complete, 0);
	fake_free(f);
}

/* A turn whose step takes TURN_SLOW_MS or more is counted (and logged);
 * one just under is not. */
static void
call_slow(struct fake *f)
{
	h_time(f->h, TURN_SLOW_MS);
}

static void
call_almost_slow(struct fake *f)
{
	h_time(f->h, TURN_SLOW_MS - 1);
}

Test(run, slow_turn_counted)
{
	struct fake *f = ready();

	f->calls = call_almost_slow;
	turn(f);
	cr_assert_eq(f->t.slow_turns, 0);
	f->calls = call_slow;
	turn(f);
	cr_assert_eq(f->t.slow_turns, 1);
	f->calls = NULL;
	turn(f);
	cr_assert_eq(f->t.slow_turns, 1);
	fake_free(f);
}
