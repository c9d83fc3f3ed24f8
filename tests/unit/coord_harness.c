/*
 * coord_harness.c - node p0 around one coordinator; see coord_harness.h.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord_harness.h"
#include "log.h"

static void
keep(struct h *h, ProtobufCMessage *m)
{
	if (h->nkeep == h->capkeep) {
		size_t cap = h->capkeep ? h->capkeep * 2 : 64;
		ProtobufCMessage **v = realloc(h->keep, cap * sizeof(*v));
		cr_assert_not_null(v);
		h->keep = v;
		h->capkeep = cap;
	}
	h->keep[h->nkeep++] = m;
}

/* ---- The store port ---- */

/* The fault port's policy: whether the call of op fails now, and with
 * what (h_fail()); counts it. */
static int
injected(void *arg, enum store_op op)
{
	struct h *h = arg;
	struct h_fault *f = &h->fault[op];

	h->calls[op]++;
	if (f->rv == 0 || f->times == 0)
		return 0;
	if (f->times > 0)
		f->times--;
	store_fault_say(&h->port, "injected: %s failed", store_op_name(op));
	/* As SQLite after SQLITE_FULL: the transaction is gone, and the
	 * store fails what follows. */
	if (f->loses && op != STORE_OP_ROLLBACK)
		store_fault_lose(&h->port);
	return f->rv;
}

/* p0's port: the store behind the injecting policy. */
static struct store_port
port(struct h *h)
{
	store_fault_init(&h->port, store_port(h->st), injected, NULL, h);
	h->port.lost_why = "the batch was rolled back: injected";
	return store_fault_port(&h->port);
}

void
h_fail(struct h *h, enum store_op op, int rv, int times)
{
	h->fault[op].rv = rv;
	h->fault[op].times = times;
	h->fault[op].loses = 0;
}

void
h_fail_lost(struct h *h, enum store_op op, int rv, int times)
{
	h_fail(h, op, rv, times);
	h->fault[op].loses = 1;
}

/* ---- Life cycle ---- */

/* The temporary directories of the nodes alive, so that a test that
 * fails (an assertion ends it before h_free()) leaves none behind. */
static char live[4][64];

static void
remove_dir(const char *dir)
{
	static const char *const files[] = {"cluster.ini", "p0.db", "p0.db-wal",
	                                    "p0.db-shm", "p0.db-journal"};
	char path[512];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void
remove_live(void)
{
	for (size_t i = 0; i < 4; i++)
		if (live[i][0] != '\0')
			remove_dir(live[i]);
}

static void
note_live(const char *dir, int alive)
{
	static int registered;

	if (!registered) {
		atexit(remove_live);
		registered = 1;
	}
	for (size_t i = 0; i < 4; i++)
		if (alive ? live[i][0] == '\0' : strcmp(live[i], dir) == 0) {
			snprintf(live[i], sizeof(live[i]), "%s",
			         alive ? dir : "");
			return;
		}
}

struct h *
h_new(const char *extra)
{
	struct h *h = calloc(1, sizeof(*h));
	char path[128], err[256], *errors = NULL;
	struct errinfo e = {0};
	FILE *f;
	int rv;

	cr_assert_not_null(h);
	log_init(getenv("CUT_TEST_LOG") != NULL ? LOG_DEBUG : -1);
	snprintf(h->dir, sizeof(h->dir), "/tmp/cutd-test.XXXXXX");
	cr_assert_not_null(mkdtemp(h->dir));
	note_live(h->dir, 1);
	snprintf(path, sizeof(path), "%s/cluster.ini", h->dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f,
	        "[cluster]\nname = test\nrun_dir = %s\nstate_dir = %s\n"
	        "window = 65536\napp_window = 65536\nmessage_cost = 16\n"
	        "max_message = 65536\n%s"
	        "[node p0]\npeer = tcp://127.0.0.1:1\n"
	        "[node p1]\npeer = tcp://127.0.0.1:2\n"
	        "[node p2]\npeer = tcp://127.0.0.1:3\n",
	        h->dir, h->dir, extra ? extra : "");
	fclose(f);
	rv = config_load(path, &h->cfg, &errors);
	cr_assert_eq(rv, 0, "config_load: %s", errors ? errors : "?");
	rv = store_open(h->cfg->nodes[0].database, &h->st, err, sizeof(err));
	cr_assert_eq(rv, 0, "store_open: %s", err);
	h->now = H_T0;
	h->wall = H_WALL0;
	rv = coord_new(h->cfg, 0, H_EPOCH, port(h), h->now, h->wall, &h->c, &e);
	cr_assert_eq(rv, 0, "coord_new: %s", e.text);
	h_commit(h);
	return h;
}

void
h_free(struct h *h)
{
	coord_free(h->c);
	store_close(h->st);
	config_free(h->cfg);
	for (size_t i = 0; i < h->nkeep; i++)
		protobuf_c_message_free_unpacked(h->keep[i], NULL);
	free(h->keep);
	remove_dir(h->dir);
	note_live(h->dir, 0);
	free(h);
}

void
h_time(struct h *h, int64_t ms)
{
	h->now += ms;
	h->wall += ms;
	coord_set_time(h->c, h->now, h->wall);
}

void
h_commit(struct h *h)
{
	int rv = coord_commit(h->c);

	/* E_STORAGE: the turn was lost, which the tests that cause it check
	 * by what it aborted. */
	cr_assert(rv == 0 || rv == E_STORAGE, "coord_commit: %s", err_str(rv));
}

/* ---- Wire helpers ---- */

static void
append(uint8_t **buf, size_t *len, size_t *cap, unsigned field,
       const uint8_t *data, size_t n)
{
	uint8_t hdr[11];
	size_t k = 0;
	uint64_t v = n;

	hdr[k++] = (uint8_t)((field << 3) | 2);
	do {
		hdr[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	if (*len + k + n > *cap) {
		size_t c = (*cap ? *cap * 2 : 1024) + k + n;
		uint8_t *p = realloc(*buf, c);
		cr_assert_not_null(p);
		*buf = p;
		*cap = c;
	}
	memcpy(*buf + *len, hdr, k);
	memcpy(*buf + *len + k, data, n);
	*len += k + n;
}

static void
pb_item(struct pb *b, const Cut__V1__PeerItem *it)
{
	size_t n = cut__v1__peer_item__get_packed_size(it);
	uint8_t *tmp = malloc(n ? n : 1);

	cr_assert_not_null(tmp);
	cut__v1__peer_item__pack(it, tmp);
	append(&b->items, &b->len, &b->cap, 4, tmp, n);
	free(tmp);
}

/* ---- Peer frames in ---- */

void
pb_init(struct pb *b, const char *from)
{
	memset(b, 0, sizeof(*b));
	b->cluster = "test";
	b->from = from;
	b->to = "p0";
	b->has_epoch = b->has_to_epoch = 1;
	b->epoch = strcmp(from, "p1") == 0 ? H_E1 : H_E2;
	b->to_epoch = H_EPOCH;
}

void
pb_data(struct pb *b, uint64_t seq, uint64_t app_seq, const char *payload)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerData d = CUT__V1__PEER_DATA__INIT;

	d.seq = seq;
	d.app_seq = app_seq;
	d.content_type = "application/json";
	d.payload.data = (uint8_t *)payload;
	d.payload.len = strlen(payload);
	it.item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
	it.data = &d;
	pb_item(b, &it);
}

void
pb_marker(struct pb *b, uint64_t seq, const char *id, uint64_t count,
          uint32_t timeout_ms)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerMarker m = CUT__V1__PEER_MARKER__INIT;

	m.seq = seq;
	m.snapshot_id = (char *)id;
	m.count = count;
	m.has_timeout_ms = timeout_ms != 0;
	m.timeout_ms = timeout_ms;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_MARKER;
	it.marker = &m;
	pb_item(b, &it);
}

void
pb_ack(struct pb *b, uint64_t upto, int has_taken, uint64_t taken)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerAck a = CUT__V1__PEER_ACK__INIT;

	a.upto = upto;
	a.has_taken = has_taken;
	a.taken = taken;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_ACK;
	it.ack = &a;
	pb_item(b, &it);
}

void
pb_hello(struct pb *b, uint64_t next_expected, uint64_t epoch)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerHello hl = CUT__V1__PEER_HELLO__INIT;

	hl.next_expected = next_expected;
	hl.epoch = epoch;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_HELLO;
	it.hello = &hl;
	pb_item(b, &it);
}

void
pb_abort(struct pb *b, uint64_t seq, const char *id, const char *reason,
         int root_cause)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerAbort a = CUT__V1__PEER_ABORT__INIT;

	a.seq = seq;
	a.snapshot_id = (char *)id;
	a.reason = (char *)reason;
	a.has_root_cause = 1;
	a.root_cause = root_cause != 0;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_ABORT;
	it.abort = &a;
	pb_item(b, &it);
}

void
pb_outcome(struct pb *b, uint64_t seq, const char *id, int complete,
           const char *reason, int consistent, uint32_t parts)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerOutcome o = CUT__V1__PEER_OUTCOME__INIT;

	o.seq = seq;
	o.snapshot_id = (char *)id;
	o.complete = complete != 0;
	o.reason = (char *)reason;
	o.has_consistent = consistent >= 0;
	o.consistent = consistent == 1;
	o.has_parts = 1;
	o.parts = parts;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_OUTCOME;
	it.outcome = &o;
	pb_item(b, &it);
}

void
pb_forget(struct pb *b, uint64_t seq, const char *id, int forgotten)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerForget f = CUT__V1__PEER_FORGET__INIT;
	Cut__V1__PeerForgotten g = CUT__V1__PEER_FORGOTTEN__INIT;

	if (forgotten) {
		g.seq = seq;
		g.snapshot_id = (char *)id;
		it.item_case = CUT__V1__PEER_ITEM__ITEM_FORGOTTEN;
		it.forgotten = &g;
	} else {
		f.seq = seq;
		f.snapshot_id = (char *)id;
		it.item_case = CUT__V1__PEER_ITEM__ITEM_FORGET;
		it.forget = &f;
	}
	pb_item(b, &it);
}

void
pb_outcome_ask(struct pb *b, uint64_t seq)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerOutcomeAsk a = CUT__V1__PEER_OUTCOME_ASK__INIT;

	a.seq = seq;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_OUTCOME_ASK;
	it.outcome_ask = &a;
	pb_item(b, &it);
}

void
pb_renumber(struct pb *b, uint64_t seq)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRenumber r = CUT__V1__PEER_RENUMBER__INIT;

	r.seq = seq;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_RENUMBER;
	it.renumber = &r;
	pb_item(b, &it);
}

void
pb_part(struct pb *b, uint64_t seq, const char *id, const char *state,
        size_t nchans, const struct h_chan *chans)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerPart p = CUT__V1__PEER_PART__INIT;
	Cut__V1__PartChannel pc[8], *pcs[8];

	cr_assert_leq(nchans, 8);
	for (size_t i = 0; i < nchans; i++) {
		cut__v1__part_channel__init(&pc[i]);
		pc[i].src = (char *)chans[i].src;
		pc[i].m = chans[i].m;
		pc[i].n = chans[i].n;
		pc[i].count = chans[i].count;
		pc[i].first_seq = chans[i].first;
		pc[i].last_seq = chans[i].last;
		pc[i].consecutive = chans[i].consecutive;
		pcs[i] = &pc[i];
	}
	p.seq = seq;
	p.snapshot_id = (char *)id;
	p.node = (char *)b->from;
	p.content_type = "application/json";
	p.state.data = (uint8_t *)state;
	p.state.len = strlen(state);
	p.channels = pcs;
	p.n_channels = nchans;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_PART;
	it.part = &p;
	pb_item(b, &it);
}

void
pb_part_messages(struct pb *b, uint64_t seq, const char *id, const char *src,
                 int final, size_t n, const struct h_msg *msgs)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerPartMessages pm = CUT__V1__PEER_PART_MESSAGES__INIT;
	Cut__V1__ChannelMessage cm[8], *cms[8];

	cr_assert_leq(n, 8);
	for (size_t i = 0; i < n; i++) {
		cut__v1__channel_message__init(&cm[i]);
		cm[i].seq = msgs[i].seq;
		cm[i].content_type = "application/json";
		cm[i].payload.data = (uint8_t *)msgs[i].payload;
		cm[i].payload.len = strlen(msgs[i].payload);
		cms[i] = &cm[i];
	}
	pm.seq = seq;
	pm.snapshot_id = (char *)id;
	pm.src = (char *)src;
	pm.messages = cms;
	pm.n_messages = n;
	pm.final = final != 0;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES;
	it.part_messages = &pm;
	pb_item(b, &it);
}

void
pb_restore_prepare(struct pb *b, uint64_t seq, uint64_t generation,
                   const char *id, uint32_t timeout_ms, size_t nchans,
                   const struct h_rchan *chans)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRestorePrepare p = CUT__V1__PEER_RESTORE_PREPARE__INIT;
	Cut__V1__RestoreChannel rc[16], *rcs[16];

	cr_assert_leq(nchans, 16);
	for (size_t i = 0; i < nchans; i++) {
		cut__v1__restore_channel__init(&rc[i]);
		rc[i].src = (char *)chans[i].src;
		rc[i].dst = (char *)chans[i].dst;
		rc[i].m = chans[i].m;
		rc[i].n = chans[i].n;
		rcs[i] = &rc[i];
	}
	p.seq = seq;
	p.generation = generation;
	p.snapshot_id = (char *)id;
	p.timeout_ms = timeout_ms;
	p.channels = rcs;
	p.n_channels = nchans;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_PREPARE;
	it.restore_prepare = &p;
	pb_item(b, &it);
}

void
pb_restore_vote(struct pb *b, uint64_t seq, uint64_t generation, int ok,
                const char *reason)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRestoreVote v = CUT__V1__PEER_RESTORE_VOTE__INIT;

	v.seq = seq;
	v.generation = generation;
	v.ok = ok != 0;
	v.reason = (char *)reason;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_VOTE;
	it.restore_vote = &v;
	pb_item(b, &it);
}

void
pb_restore_abort(struct pb *b, uint64_t seq, uint64_t generation,
                 const char *reason)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRestoreAbort a = CUT__V1__PEER_RESTORE_ABORT__INIT;

	a.seq = seq;
	a.generation = generation;
	a.reason = (char *)reason;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_ABORT;
	it.restore_abort = &a;
	pb_item(b, &it);
}

void
pb_restore_done(struct pb *b, uint64_t seq, uint64_t generation,
                uint64_t replayed)
{
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRestoreDone d = CUT__V1__PEER_RESTORE_DONE__INIT;

	d.seq = seq;
	d.generation = generation;
	d.replayed = replayed;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_DONE;
	it.restore_done = &d;
	pb_item(b, &it);
}

uint8_t *
pb_pack(struct pb *b, size_t *ret_len)
{
	Cut__V1__PeerBatch hd = CUT__V1__PEER_BATCH__INIT;
	size_t hl;
	uint8_t *buf;

	hd.cluster = (char *)b->cluster;
	hd.from = (char *)b->from;
	hd.to = (char *)b->to;
	hd.has_epoch = b->has_epoch;
	hd.epoch = b->epoch;
	hd.has_to_epoch = b->has_to_epoch;
	hd.to_epoch = b->to_epoch;
	hd.has_generation = b->has_generation;
	hd.generation = b->generation;
	hl = cut__v1__peer_batch__get_packed_size(&hd);
	cr_assert_not_null(buf = malloc(hl + b->len + 1));
	cut__v1__peer_batch__pack(&hd, buf);
	if (b->len > 0)
		memcpy(buf + hl, b->items, b->len);
	*ret_len = hl + b->len;
	free(b->items);
	b->items = NULL;
	b->len = b->cap = 0;
	return buf;
}

void
h_peer(struct h *h, uint32_t conn, struct pb *b)
{
	Cut__V1__PeerBatch *u;
	size_t len;
	uint8_t *buf = pb_pack(b, &len);

	u = (Cut__V1__PeerBatch *)cutproto_unpack(
	    &cut__v1__peer_batch__descriptor, len, buf);
	cr_assert_not_null(u, "the test's peer frame does not decode");
	coord_peer_input(h->c, conn, u);
	protobuf_c_message_free_unpacked(&u->base, NULL);
	free(buf);
}

void
h_peer_hello(struct h *h, uint32_t conn, const char *from,
             uint64_t next_expected)
{
	struct pb b;

	pb_init(&b, from);
	pb_hello(&b, next_expected, b.epoch);
	h_peer(h, conn, &b);
}

/* ---- Peer frames out ---- */

Cut__V1__PeerBatch *
h_pull(struct h *h, size_t node)
{
	size_t len = coord_peer_frame(h->c, node, NULL, NULL), built;
	Cut__V1__PeerBatch *b;
	uint8_t *buf;

	if (len == 0)
		return NULL;
	cr_assert_not_null(buf = malloc(len));
	built = coord_peer_frame(h->c, node, NULL, buf);
	cr_assert_eq(built, len, "peer frame to %s measured %zu, built %zu",
	             h->cfg->nodes[node].name, len, built);
	b = (Cut__V1__PeerBatch *)cutproto_unpack(
	    &cut__v1__peer_batch__descriptor, built, buf);
	free(buf);
	cr_assert_not_null(b, "the coordinator's frame to %s does not decode",
	                   h->cfg->nodes[node].name);
	keep(h, &b->base);
	cr_assert_str_eq(b->cluster, "test");
	cr_assert_str_eq(b->from, "p0");
	cr_assert_str_eq(b->to, h->cfg->nodes[node].name);
	cr_assert(b->has_epoch && b->epoch == H_EPOCH);
	return b;
}

size_t
h_pull_items(struct h *h, size_t node, struct h_items *out)
{
	Cut__V1__PeerBatch *b;
	size_t frames = 0;

	while ((b = h_pull(h, node)) != NULL) {
		cr_assert_lt(++frames, 64, "frames to %s do not stop",
		             h->cfg->nodes[node].name);
		for (size_t i = 0; i < b->n_items; i++) {
			cr_assert_lt(out->n, 1024);
			out->v[out->n++] = b->items[i];
		}
	}
	return frames;
}

const Cut__V1__PeerItem *
h_find(const struct h_items *it, Cut__V1__PeerItem__ItemCase kind, size_t nth)
{
	for (size_t i = 0; i < it->n; i++)
		if (it->v[i]->item_case == kind && nth-- == 0)
			return it->v[i];
	return NULL;
}

size_t
h_count(const struct h_items *it, Cut__V1__PeerItem__ItemCase kind)
{
	size_t n = 0;

	for (size_t i = 0; i < it->n; i++)
		n += it->v[i]->item_case == kind;
	return n;
}

void
h_link(struct h *h)
{
	coord_peer_up(h->c, 1);
	coord_peer_up(h->c, 2);
	h_peer_hello(h, H_C1, "p1", 1);
	h_peer_hello(h, H_C2, "p2", 1);
	h_drain(h);
	cr_assert_eq(coord_peer_epoch(h->c, 1), H_E1);
	cr_assert_eq(coord_peer_epoch(h->c, 2), H_E2);
}

void
h_drain(struct h *h)
{
	struct h_items it = {0};

	h_pull_items(h, 1, &it);
	h_pull_items(h, 2, &it);
}

/* ---- The application ---- */

static void
ab_item(struct ab *b, const Cut__V1__AppItem *it)
{
	size_t n = cut__v1__app_item__get_packed_size(it);
	uint8_t *tmp = malloc(n ? n : 1);

	cr_assert_not_null(tmp);
	cut__v1__app_item__pack(it, tmp);
	append(&b->items, &b->len, &b->cap, 1, tmp, n);
	free(tmp);
}

void
ab_init(struct ab *b)
{
	memset(b, 0, sizeof(*b));
}

void
ab_hello(struct ab *b, const char *node, uint32_t version, size_t nresume,
         const struct h_resume *resume)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppHello hl = CUT__V1__APP_HELLO__INIT;
	Cut__V1__AppResume rs[4], *rsp[4];

	cr_assert_leq(nresume, 4);
	for (size_t i = 0; i < nresume; i++) {
		cut__v1__app_resume__init(&rs[i]);
		rs[i].node = (char *)resume[i].node;
		rs[i].has_out_taken = resume[i].has_out_taken;
		rs[i].out_taken = resume[i].out_taken;
		rs[i].has_in_taken = resume[i].has_in_taken;
		rs[i].in_taken = resume[i].in_taken;
		rs[i].has_out_sent = resume[i].has_out_sent;
		rs[i].out_sent = resume[i].out_sent;
		rs[i].has_in_numbering = resume[i].in_numbering != 0;
		rs[i].in_numbering = resume[i].in_numbering;
		rs[i].has_out_numbering = resume[i].out_numbering != 0;
		rs[i].out_numbering = resume[i].out_numbering;
		rsp[i] = &rs[i];
	}
	hl.node = (char *)node;
	hl.version = version;
	hl.resume = rsp;
	hl.n_resume = nresume;
	it.item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	it.hello = &hl;
	ab_item(b, &it);
}

void
ab_send(struct ab *b, const char *to, const char *payload, size_t len,
        uint64_t seq)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppSend s = CUT__V1__APP_SEND__INIT;

	s.to = (char *)to;
	s.content_type = "application/json";
	s.payload.data = (uint8_t *)payload;
	s.payload.len = len;
	s.has_seq = seq != 0;
	s.seq = seq;
	it.item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	it.send = &s;
	ab_item(b, &it);
}

void
ab_taken(struct ab *b, uint64_t handed)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppTaken t = CUT__V1__APP_TAKEN__INIT;

	t.handed = handed;
	it.item_case = CUT__V1__APP_ITEM__ITEM_TAKEN;
	it.taken = &t;
	ab_item(b, &it);
}

void
ab_reply(struct ab *b, const char *id, const char *state, uint64_t handed)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppStateReply r = CUT__V1__APP_STATE_REPLY__INIT;

	r.snapshot_id = (char *)id;
	r.content_type = "application/json";
	r.state.data = (uint8_t *)state;
	r.state.len = strlen(state);
	r.handed = handed;
	it.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	it.state_reply = &r;
	ab_item(b, &it);
}

void
ab_restorable(struct ab *b, int yes)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppRestorable r = CUT__V1__APP_RESTORABLE__INIT;

	r.yes = yes != 0;
	it.item_case = CUT__V1__APP_ITEM__ITEM_RESTORABLE;
	it.restorable = &r;
	ab_item(b, &it);
}

void
ab_restored(struct ab *b, const char *id, uint32_t failed, const char *reason)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppRestored r = CUT__V1__APP_RESTORED__INIT;

	r.snapshot_id = (char *)id;
	r.has_failed = failed != 0;
	r.failed = failed;
	r.reason = (char *)reason;
	it.item_case = CUT__V1__APP_ITEM__ITEM_RESTORED;
	it.restored = &r;
	ab_item(b, &it);
}

void
h_app(struct h *h, uint32_t conn, struct ab *b)
{
	Cut__V1__AppBatch *u = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, b->len, b->items);

	cr_assert_not_null(u, "the test's application frame does not decode");
	coord_app_input(h->c, conn, u);
	protobuf_c_message_free_unpacked(&u->base, NULL);
	free(b->items);
	b->items = NULL;
	b->len = b->cap = 0;
}

const Cut__V1__AppHelloReply *
h_hello(struct h *h, uint32_t conn)
{
	struct ab b;
	Cut__V1__AppBatch *r;
	uint32_t to;

	ab_init(&b);
	ab_hello(&b, "p0", CUTPROTO_APP_VERSION, 0, NULL);
	h_app(h, conn, &b);
	r = h_app_reply(h, &to);
	cr_assert_not_null(r, "no hello reply");
	cr_assert_eq(to, conn);
	cr_assert_eq(r->n_items, 1);
	cr_assert_eq(r->items[0]->item_case,
	             CUT__V1__APP_ITEM__ITEM_HELLO_REPLY);
	cr_assert(coord_app_connected(h->c));
	cr_assert_eq(coord_app_conn(h->c), conn);
	return r->items[0]->hello_reply;
}

void
h_send(struct h *h, const char *to, const char *payload, uint64_t seq)
{
	struct ab b;

	ab_init(&b);
	ab_send(&b, to, payload, strlen(payload), seq);
	h_app(h, H_APP, &b);
}

void
h_taken(struct h *h, uint64_t handed)
{
	struct ab b;

	ab_init(&b);
	ab_taken(&b, handed);
	h_app(h, H_APP, &b);
}

void
h_reply(struct h *h, const char *id, const char *state, uint64_t handed)
{
	struct ab b;

	ab_init(&b);
	ab_reply(&b, id, state, handed);
	h_app(h, H_APP, &b);
}

void
h_restorable_on(struct h *h, uint32_t conn, int yes)
{
	struct ab b;

	ab_init(&b);
	ab_restorable(&b, yes);
	h_app(h, conn, &b);
}

void
h_restorable(struct h *h, int yes)
{
	h_restorable_on(h, H_APP, yes);
}

void
h_restored_on(struct h *h, uint32_t conn, const char *id)
{
	struct ab b;

	ab_init(&b);
	ab_restored(&b, id, 0, NULL);
	h_app(h, conn, &b);
}

void
h_restored(struct h *h, const char *id)
{
	h_restored_on(h, H_APP, id);
}

Cut__V1__AppBatch *
h_app_frame(struct h *h)
{
	size_t len = coord_app_frame(h->c, NULL), built;
	Cut__V1__AppBatch *b;
	uint8_t *buf;

	if (len == 0)
		return NULL;
	cr_assert_not_null(buf = malloc(len));
	built = coord_app_frame(h->c, buf);
	cr_assert_eq(built, len, "application frame measured %zu, built %zu",
	             len, built);
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, built, buf);
	free(buf);
	cr_assert_not_null(b, "the application frame does not decode");
	keep(h, &b->base);
	return b;
}

Cut__V1__AppBatch *
h_app_reply(struct h *h, uint32_t *ret_conn)
{
	Cut__V1__AppBatch *b;
	uint8_t *buf;
	size_t len;

	if (!coord_next_app_reply(h->c, ret_conn, &buf, &len))
		return NULL;
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, buf);
	free(buf);
	cr_assert_not_null(b, "an application reply does not decode");
	keep(h, &b->base);
	return b;
}

const Cut__V1__AppError *
h_app_error(struct h *h, uint32_t conn)
{
	uint32_t to = 0;
	Cut__V1__AppBatch *b = h_app_reply(h, &to);

	cr_assert_not_null(b, "no error for connection %u", conn);
	cr_assert_eq(to, conn);
	cr_assert_eq(b->n_items, 1);
	cr_assert_eq(b->items[0]->item_case, CUT__V1__APP_ITEM__ITEM_ERROR);
	return b->items[0]->error;
}

size_t
h_app_items(struct h *h, struct h_app_items *out)
{
	Cut__V1__AppBatch *b;
	size_t frames = 0;

	while ((b = h_app_frame(h)) != NULL) {
		cr_assert_lt(++frames, 64, "application frames do not stop");
		for (size_t i = 0; i < b->n_items; i++) {
			cr_assert_lt(out->n, 1024);
			out->v[out->n++] = b->items[i];
		}
	}
	return frames;
}

const Cut__V1__AppItem *
h_app_find(const struct h_app_items *it, Cut__V1__AppItem__ItemCase kind,
           size_t nth)
{
	for (size_t i = 0; i < it->n; i++)
		if (it->v[i]->item_case == kind && nth-- == 0)
			return it->v[i];
	return NULL;
}

size_t
h_app_count(const struct h_app_items *it, Cut__V1__AppItem__ItemCase kind)
{
	size_t n = 0;

	for (size_t i = 0; i < it->n; i++)
		n += it->v[i]->item_case == kind;
	return n;
}

/* ---- Snapshots and the store ---- */

const char *
h_start(struct h *h, uint32_t timeout_ms)
{
	static char id[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	int rv = coord_start(h->c, timeout_ms, id, &e);

	cr_assert_eq(rv, 0, "coord_start: %s: %s", err_str(rv), e.text);
	return id;
}

int
h_row(struct h *h, const char *id, struct store_snapshot *ret)
{
	return store_get(h->st, id, ret);
}

const char *
h_disk_status(struct h *h, const char *id)
{
	static char status[32];
	sqlite3 *db;
	sqlite3_stmt *q;

	status[0] = '\0';
	cr_assert_eq(sqlite3_open_v2(h->cfg->nodes[0].database, &db,
	                             SQLITE_OPEN_READONLY, NULL),
	             SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db,
	                                "SELECT status FROM snapshots "
	                                "WHERE id = ?1",
	                                -1, &q, NULL),
	             SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW)
		snprintf(status, sizeof(status), "%s",
		         (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	sqlite3_close(db);
	return status;
}

struct find_state {
	const char *node;
	char *buf;
	size_t len;
	int found;
};

static int
find_state(const char *node, const char *ctype, const void *state, size_t len,
           void *arg)
{
	struct find_state *f = arg;

	(void)ctype;
	if (strcmp(node, f->node) != 0)
		return 0;
	snprintf(f->buf, f->len, "%.*s", (int)len, (const char *)state);
	f->found = 1;
	return 0;
}

int
h_state(struct h *h, const char *id, const char *node, char *buf, size_t len)
{
	struct find_state f = {node, buf, len, 0};

	cr_assert_eq(store_foreach_state(h->st, id, find_state, &f), 0);
	return f.found;
}

struct find_chan {
	const char *src, *dst;
	struct store_channel *ret;
	int found;
};

static int
find_chan(const struct store_channel *ch, void *arg)
{
	struct find_chan *f = arg;

	if (strcmp(ch->src, f->src) != 0 || strcmp(ch->dst, f->dst) != 0)
		return 0;
	*f->ret = *ch;
	f->ret->src = f->ret->dst = NULL;
	f->found = 1;
	return 0;
}

int
h_channel(struct h *h, const char *id, const char *src, const char *dst,
          struct store_channel *ret)
{
	struct find_chan f = {src, dst, ret, 0};

	cr_assert_eq(store_foreach_channel(h->st, id, find_chan, &f), 0);
	return f.found;
}

struct seqs {
	uint64_t *v;
	size_t n, max;
};

static int
add_seq(uint64_t seq, const char *ctype, const void *payload, size_t len,
        void *arg)
{
	struct seqs *s = arg;

	(void)ctype;
	(void)payload;
	(void)len;
	if (s->n < s->max)
		s->v[s->n] = seq;
	s->n++;
	return 0;
}

size_t
h_messages(struct h *h, const char *id, const char *src, const char *dst,
           uint64_t *seqs, size_t max)
{
	struct seqs s = {seqs, 0, max};

	cr_assert_eq(store_foreach_message(h->st, id, src, dst, add_seq, &s),
	             0);
	return s.n;
}

struct coord_snap_view
h_view(struct h *h, const char *id)
{
	struct coord_snap_view v;

	coord_snapshot_view(h->c, id, &v);
	return v;
}

struct coord_peer_stats
h_stats(struct h *h, size_t node)
{
	struct coord_peer_stats st;

	coord_peer_stats(h->c, node, &st);
	return st;
}

int
h_restore_row(struct h *h, uint64_t generation, struct h_restore_row *ret)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	int found = 0;

	memset(ret, 0, sizeof(*ret));
	cr_assert_eq(sqlite3_open_v2(h->cfg->nodes[0].database, &db,
	                             SQLITE_OPEN_READONLY, NULL),
	             SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db,
	                                "SELECT snapshot_id, restorer, "
	                                "applied_ms, replayed FROM restores "
	                                "WHERE generation = ?1",
	                                -1, &q, NULL),
	             SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_bind_int64(q, 1, (sqlite3_int64)generation);
	if (sqlite3_step(q) == SQLITE_ROW) {
		snprintf(ret->snapshot_id, sizeof(ret->snapshot_id), "%s",
		         (const char *)sqlite3_column_text(q, 0));
		snprintf(ret->restorer, sizeof(ret->restorer), "%s",
		         (const char *)sqlite3_column_text(q, 1));
		ret->applied_ms = sqlite3_column_int64(q, 2);
		ret->replayed = (uint64_t)sqlite3_column_int64(q, 3);
		found = 1;
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	return found;
}

uint64_t
h_restores(struct h *h)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	uint64_t n = 0;

	cr_assert_eq(sqlite3_open_v2(h->cfg->nodes[0].database, &db,
	                             SQLITE_OPEN_READONLY, NULL),
	             SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM restores", -1,
	                                &q, NULL),
	             SQLITE_OK, "%s", sqlite3_errmsg(db));
	if (sqlite3_step(q) == SQLITE_ROW)
		n = (uint64_t)sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return n;
}

void
h_restart(struct h *h, uint64_t epoch)
{
	struct errinfo e = {0};
	int rv;

	coord_free(h->c);
	h->c = NULL;
	rv = coord_new(h->cfg, 0, epoch, port(h), h->now, h->wall, &h->c, &e);
	cr_assert_eq(rv, 0, "coord_new: %s", e.text);
	h_commit(h);
}

void
h_marker(struct h *h, const char *from, uint64_t seq, const char *id,
         uint64_t count)
{
	struct pb b;

	pb_init(&b, from);
	pb_marker(&b, seq, id, count, 0);
	h_peer(h, strcmp(from, "p1") == 0 ? H_C1 : H_C2, &b);
}

void
h_data(struct h *h, const char *from, uint64_t seq, uint64_t app_seq,
       const char *payload)
{
	struct pb b;

	pb_init(&b, from);
	pb_data(&b, seq, app_seq, payload);
	h_peer(h, strcmp(from, "p1") == 0 ? H_C1 : H_C2, &b);
}
