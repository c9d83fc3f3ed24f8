/*
 * lab.c - a deterministic in-memory cluster around the real engine.
 *
 * Every lab event is one numbered step.  A node's application takes the
 * items of its down queue in order: at once by default (the simulated
 * application is synchronous, and takes in the step of the delivery), or
 * one per lab_take() step with queued applications.  A node's cut is the
 * single step at which its application recorded: when it took the state
 * request (aligned), or when it answered it ahead of the queued messages
 * (unaligned).  A message was in flight at the cut of p -> q when it was
 * sent before p's step and taken by q's application after q's step (or not
 * yet); the engine's records are compared with exactly that, so a queued
 * message the engine forgot, or one it recorded although the application
 * took it first, is caught.
 */
#include "lab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct truth {
	int64_t amount;
	uint64_t sent;
	uint64_t delivered; /* 0 while in the channel */
	uint64_t taken;     /* 0 until the application takes it */
};

struct chan_rec {
	uint64_t *seqs; /* recorded, in order */
	size_t nseqs, capseqs;
	uint64_t m, m_high, n;
	int done;
};

struct node_rec {
	int recorded;
	int complete;
	int64_t tokens;
	uint64_t step;
};

struct snap {
	size_t initiator;
	uint64_t overtakes;
	uint64_t queued; /* recorded from down queues (RECORD_QUEUED) */
	struct node_rec *nodes;
	struct chan_rec *chans;
};

struct node {
	char name[LAB_NAME_MAX + 1];
	int64_t balance, initial;
	struct engine *eng;
	size_t *in, *out; /* engine channel index -> lab channel */
	size_t nin, nout;
	struct lab_item *down; /* the application's queue, oldest first */
	size_t ndown, capdown;
	uint64_t *taken; /* per engine incoming channel */
};

struct chan {
	size_t src, dst;
	size_t in_idx, out_idx; /* index at dst's and src's engine */
	struct lab_frame *q;
	size_t qlen, qcap;
	struct truth *msgs; /* by seq - 1 */
	size_t nmsgs, capmsgs;
};

struct lab {
	enum engine_mode mode;
	enum engine_cut cut;
	int queued_apps;
	int started;
	uint64_t step;
	struct node *nodes;
	size_t nnodes, capnodes;
	struct chan *chans;
	size_t nchans, capchans;
	struct snap *snaps;
	size_t nsnaps, capsnaps;
	lab_due_fn due;
	void *due_arg;
};

/* Grows *v (of elements of size elem) so that it holds need elements. */
static int
grow(void *vp, size_t *cap, size_t need, size_t elem)
{
	void **v = vp;
	size_t ncap = *cap ? *cap : 8;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if ((nv = realloc(*v, ncap * elem)) == NULL)
		return E_NOMEM;
	memset((char *)nv + *cap * elem, 0, (ncap - *cap) * elem);
	*v = nv;
	*cap = ncap;
	return 0;
}

int
lab_new(enum engine_mode mode, struct lab **ret_lab)
{
	struct lab *lab;

	if (mode != ENGINE_CLASSIC && mode != ENGINE_COUNTED)
		return E_INVAL;
	if ((lab = calloc(1, sizeof(*lab))) == NULL)
		return E_NOMEM;
	lab->mode = mode;
	*ret_lab = lab;
	return 0;
}

static void
snap_free(struct lab *lab, struct snap *s)
{
	for (size_t c = 0; s->chans != NULL && c < lab->nchans; c++)
		free(s->chans[c].seqs);
	free(s->chans);
	free(s->nodes);
}

void
lab_free(struct lab *lab)
{
	if (lab == NULL)
		return;
	for (size_t i = 0; i < lab->nnodes; i++) {
		engine_free(lab->nodes[i].eng);
		free(lab->nodes[i].in);
		free(lab->nodes[i].out);
		free(lab->nodes[i].down);
		free(lab->nodes[i].taken);
	}
	for (size_t c = 0; c < lab->nchans; c++) {
		free(lab->chans[c].q);
		free(lab->chans[c].msgs);
	}
	for (size_t s = 0; s < lab->nsnaps; s++)
		snap_free(lab, &lab->snaps[s]);
	free(lab->nodes);
	free(lab->chans);
	free(lab->snaps);
	free(lab);
}

static int
name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > LAB_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return 0;
	return 1;
}

int
lab_node(const struct lab *lab, const char *name, size_t *ret_index)
{
	for (size_t i = 0; i < lab->nnodes; i++)
		if (strcmp(lab->nodes[i].name, name) == 0) {
			*ret_index = i;
			return 0;
		}
	return E_INVAL;
}

int
lab_channel(const struct lab *lab, const char *src, const char *dst,
            size_t *ret_index)
{
	size_t s, d;

	if (lab_node(lab, src, &s) != 0 || lab_node(lab, dst, &d) != 0)
		return E_INVAL;
	for (size_t c = 0; c < lab->nchans; c++)
		if (lab->chans[c].src == s && lab->chans[c].dst == d) {
			*ret_index = c;
			return 0;
		}
	return E_NOCHAN;
}

int
lab_add_node(struct lab *lab, const char *name, int64_t tokens)
{
	size_t dummy;
	struct node *n;
	int rv;

	if (lab->started)
		return E_ORDER;
	if (!name_valid(name) || tokens < 0 || lab_node(lab, name, &dummy) == 0)
		return E_INVAL;
	if ((rv = grow(&lab->nodes, &lab->capnodes, lab->nnodes + 1,
	               sizeof(*lab->nodes))) != 0)
		return rv;
	n = &lab->nodes[lab->nnodes++];
	memset(n, 0, sizeof(*n));
	memcpy(n->name, name, strlen(name) + 1);
	n->balance = n->initial = tokens;
	return 0;
}

int
lab_add_channel(struct lab *lab, const char *src, const char *dst)
{
	size_t s, d, dummy;
	int rv;

	if (lab->started)
		return E_ORDER;
	if (lab_node(lab, src, &s) != 0 || lab_node(lab, dst, &d) != 0 ||
	    s == d || lab_channel(lab, src, dst, &dummy) == 0)
		return E_INVAL;
	if ((rv = grow(&lab->chans, &lab->capchans, lab->nchans + 1,
	               sizeof(*lab->chans))) != 0)
		return rv;
	lab->chans[lab->nchans].src = s;
	lab->chans[lab->nchans].dst = d;
	lab->nchans++;
	return 0;
}

void
lab_set_due(struct lab *lab, lab_due_fn fn, void *arg)
{
	lab->due = fn;
	lab->due_arg = arg;
}

int
lab_set_cut(struct lab *lab, enum engine_cut cut)
{
	if (lab->started)
		return E_ORDER;
	if (cut != ENGINE_CUT_ALIGNED && cut != ENGINE_CUT_UNALIGNED)
		return E_INVAL;
	if (cut == ENGINE_CUT_UNALIGNED && lab->mode != ENGINE_COUNTED)
		return E_INVAL;
	lab->cut = cut;
	return 0;
}

int
lab_set_queued_apps(struct lab *lab, int queued)
{
	if (lab->started)
		return E_ORDER;
	lab->queued_apps = queued != 0;
	return 0;
}

/* Marks every node reachable from node 0, along channels or against them. */
static size_t
reach(const struct lab *lab, int forward, unsigned char *seen)
{
	size_t count = 1, changed = 1;

	memset(seen, 0, lab->nnodes);
	seen[0] = 1;
	while (changed) {
		changed = 0;
		for (size_t c = 0; c < lab->nchans; c++) {
			size_t a =
			    forward ? lab->chans[c].src : lab->chans[c].dst;
			size_t b =
			    forward ? lab->chans[c].dst : lab->chans[c].src;
			if (seen[a] && !seen[b]) {
				seen[b] = 1;
				count++;
				changed = 1;
			}
		}
	}
	return count;
}

static int
strongly_connected(const struct lab *lab)
{
	unsigned char *seen = malloc(lab->nnodes);
	int ok;

	if (seen == NULL)
		return 0;
	ok = reach(lab, 1, seen) == lab->nnodes &&
	     reach(lab, 0, seen) == lab->nnodes;
	free(seen);
	return ok;
}

static int
start_node(struct lab *lab, size_t v)
{
	struct node *n = &lab->nodes[v];

	for (size_t c = 0; c < lab->nchans; c++) {
		n->nin += lab->chans[c].dst == v;
		n->nout += lab->chans[c].src == v;
	}
	n->in = calloc(n->nin + 1, sizeof(*n->in));
	n->out = calloc(n->nout + 1, sizeof(*n->out));
	n->taken = calloc(n->nin + 1, sizeof(*n->taken));
	if (n->in == NULL || n->out == NULL || n->taken == NULL)
		return E_NOMEM;
	n->nin = n->nout = 0;
	for (size_t c = 0; c < lab->nchans; c++) {
		if (lab->chans[c].dst == v) {
			lab->chans[c].in_idx = n->nin;
			n->in[n->nin++] = c;
		}
		if (lab->chans[c].src == v) {
			lab->chans[c].out_idx = n->nout;
			n->out[n->nout++] = c;
		}
	}
	if (engine_new(lab->mode, n->nin, n->nout, &n->eng) != 0)
		return E_NOMEM;
	if (engine_set_cut(n->eng, lab->cut) != 0)
		return E_INVAL;
	return 0;
}

int
lab_start(struct lab *lab)
{
	int rv;

	if (lab->started)
		return 0;
	if (lab->nnodes == 0)
		return E_ORDER;
	if (!strongly_connected(lab))
		return E_NOTSC;
	for (size_t v = 0; v < lab->nnodes; v++)
		if ((rv = start_node(lab, v)) != 0)
			return rv;
	lab->started = 1;
	return 0;
}

static int
enqueue(struct lab *lab, size_t ch, const struct lab_frame *f)
{
	struct chan *c = &lab->chans[ch];
	int rv;

	if ((rv = grow(&c->q, &c->qcap, c->qlen + 1, sizeof(*c->q))) != 0)
		return rv;
	c->q[c->qlen] = *f;
	c->q[c->qlen].sent = lab->step;
	if (lab->due != NULL)
		c->q[c->qlen].due = lab->due(lab->due_arg, ch, &c->q[c->qlen]);
	c->qlen++;
	return 0;
}

static struct snap *
snap_of(struct lab *lab, const char *id)
{
	size_t s = (size_t)strtoul(id, NULL, 10);

	return s < lab->nsnaps ? &lab->snaps[s] : NULL;
}

static int
record_message(struct chan_rec *r, uint64_t seq)
{
	int rv;

	if ((rv = grow(&r->seqs, &r->capseqs, r->nseqs + 1,
	               sizeof(*r->seqs))) != 0)
		return rv;
	r->seqs[r->nseqs++] = seq;
	return 0;
}

/* Puts the unaligned range seqs first .. first + count - 1 ahead of what r
 * holds: those were all delivered after the request, so their seqs are
 * higher. */
static int
record_ahead(struct chan_rec *r, uint64_t first, uint64_t count)
{
	int rv;

	if (count > SIZE_MAX / sizeof(*r->seqs) - r->nseqs)
		return E_NOMEM;
	if ((rv = grow(&r->seqs, &r->capseqs, r->nseqs + (size_t)count,
	               sizeof(*r->seqs))) != 0)
		return rv;
	memmove(&r->seqs[count], &r->seqs[0], r->nseqs * sizeof(*r->seqs));
	for (uint64_t i = 0; i < count; i++)
		r->seqs[i] = first + i;
	r->nseqs += (size_t)count;
	return 0;
}

/* Checks that every message of an unaligned range really waits in node
 * n's down queue, untaken: the engine must only hand back what the
 * application has not received. */
static int
all_queued(const struct node *n, size_t ch, uint64_t first, uint64_t count)
{
	uint64_t found = 0;

	for (size_t i = 0; i < n->ndown; i++) {
		const struct lab_item *it = &n->down[i];
		found += !it->is_request && it->ch == ch && it->seq >= first &&
		         it->seq - first < count;
	}
	return found == count;
}

/* Adds item to node n's down queue: at the tail, or for an unaligned
 * state request ahead of every message (behind older requests). */
static int
push_down(struct lab *lab, struct node *n, const struct lab_item *item)
{
	size_t at = n->ndown;
	int rv;

	if ((rv = grow(&n->down, &n->capdown, n->ndown + 1,
	               sizeof(*n->down))) != 0)
		return rv;
	if (item->is_request && lab->cut == ENGINE_CUT_UNALIGNED)
		for (at = 0; at < n->ndown && n->down[at].is_request; at++)
			;
	memmove(&n->down[at + 1], &n->down[at],
	        (n->ndown - at) * sizeof(*n->down));
	n->down[at] = *item;
	n->ndown++;
	return 0;
}

/* Performs one engine action of node v.  A state request joins the down
 * queue; the caller lets the application take it. */
static int
perform(struct lab *lab, size_t v, const struct engine_action *a)
{
	struct node *n = &lab->nodes[v];
	struct snap *s = snap_of(lab, a->snap);
	struct lab_frame f;
	struct lab_item item;
	struct chan_rec *r;
	int rv;

	if (s == NULL)
		return E_ENGINE;
	switch (a->kind) {
	case ENGINE_REQUEST_STATE:
		memset(&item, 0, sizeof(item));
		item.is_request = 1;
		item.snap = (size_t)(s - lab->snaps);
		return push_down(lab, n, &item);
	case ENGINE_SEND_MARKER:
		memset(&f, 0, sizeof(f));
		f.is_marker = 1;
		f.snap = (size_t)(s - lab->snaps);
		f.count = a->count;
		return enqueue(lab, n->out[a->chan], &f);
	case ENGINE_RECORD_MESSAGE:
		return record_message(&s->chans[n->in[a->chan]], a->seq);
	case ENGINE_RECORD_QUEUED:
		if (a->count == 0 ||
		    !all_queued(n, n->in[a->chan], a->seq, a->count))
			return E_ENGINE;
		if ((rv = record_ahead(&s->chans[n->in[a->chan]], a->seq,
		                       a->count)) != 0)
			return rv;
		s->queued += a->count;
		return 0;
	case ENGINE_CHANNEL_DONE:
		r = &s->chans[n->in[a->chan]];
		r->m = a->m;
		r->m_high = a->m_high;
		r->n = a->n;
		r->done = 1;
		return 0;
	case ENGINE_PART_COMPLETE:
		s->nodes[v].complete = 1;
		return 0;
	}
	return E_ENGINE;
}

/* Performs the actions of node v's last engine event. */
static int
perform_engine(struct lab *lab, size_t v)
{
	const struct engine_action *acts;
	size_t nacts;
	int rv;

	acts = engine_actions(lab->nodes[v].eng, &nacts);
	for (size_t i = 0; i < nacts; i++)
		if ((rv = perform(lab, v, &acts[i])) != 0)
			return rv;
	return 0;
}

/* Node v's application records its state for snapshot si: its balance,
 * and what it took of each incoming channel, which the engine checks
 * (aligned: it must be m) or uses (unaligned: it is m). */
static int
record_state(struct lab *lab, size_t v, size_t si)
{
	struct node *n = &lab->nodes[v];
	struct node_rec *rec = &lab->snaps[si].nodes[v];
	char id[24];

	rec->recorded = 1;
	rec->tokens = n->balance;
	rec->step = lab->step;
	snprintf(id, sizeof(id), "%zu", si);
	if (engine_state_recorded_taken(n->eng, id, n->taken) != 0)
		return E_ENGINE;
	return perform_engine(lab, v);
}

/* Node v's application takes the oldest item of its down queue, in the
 * current step. */
static int
take_one(struct lab *lab, size_t v)
{
	struct node *n = &lab->nodes[v];
	struct lab_item it = n->down[0];
	struct chan *c;

	memmove(&n->down[0], &n->down[1], (n->ndown - 1) * sizeof(*n->down));
	n->ndown--;
	if (it.is_request)
		return record_state(lab, v, it.snap);
	c = &lab->chans[it.ch];
	n->balance += it.amount;
	n->taken[c->in_idx]++;
	c->msgs[it.seq - 1].taken = lab->step;
	return 0;
}

/* Performs the actions node v's engine produced; unless applications are
 * queued, the application then takes everything at once. */
static int
perform_all(struct lab *lab, size_t v)
{
	int rv;

	if ((rv = perform_engine(lab, v)) != 0)
		return rv;
	while (!lab->queued_apps && lab->nodes[v].ndown > 0)
		if ((rv = take_one(lab, v)) != 0)
			return rv;
	return 0;
}

int
lab_send(struct lab *lab, const char *src, const char *dst, int64_t amount)
{
	struct lab_frame f;
	struct chan *c;
	size_t ch;
	int rv;

	if ((rv = lab_start(lab)) != 0)
		return rv;
	if ((rv = lab_channel(lab, src, dst, &ch)) != 0)
		return rv;
	c = &lab->chans[ch];
	if (amount <= 0)
		return E_INVAL;
	if (lab->nodes[c->src].balance < amount)
		return E_FUNDS;
	if ((rv = grow(&c->msgs, &c->capmsgs, c->nmsgs + 1,
	               sizeof(*c->msgs))) != 0)
		return rv;
	lab->step++;
	memset(&f, 0, sizeof(f));
	if (engine_sent(lab->nodes[c->src].eng, c->out_idx, &f.seq) != 0)
		return E_ENGINE;
	f.amount = amount;
	c->msgs[c->nmsgs].amount = amount;
	c->msgs[c->nmsgs].sent = lab->step;
	c->msgs[c->nmsgs].delivered = 0;
	c->nmsgs++;
	lab->nodes[c->src].balance -= amount;
	return enqueue(lab, ch, &f);
}

int
lab_snapshot(struct lab *lab, const char *node, size_t *ret_index)
{
	struct snap *s;
	char id[24];
	size_t v;
	int rv;

	if ((rv = lab_start(lab)) != 0)
		return rv;
	if (lab_node(lab, node, &v) != 0)
		return E_INVAL;
	if ((rv = grow(&lab->snaps, &lab->capsnaps, lab->nsnaps + 1,
	               sizeof(*lab->snaps))) != 0)
		return rv;
	s = &lab->snaps[lab->nsnaps];
	s->nodes = calloc(lab->nnodes, sizeof(*s->nodes));
	s->chans = calloc(lab->nchans + 1, sizeof(*s->chans));
	if (s->nodes == NULL || s->chans == NULL) {
		snap_free(lab, s);
		memset(s, 0, sizeof(*s));
		return E_NOMEM;
	}
	s->initiator = v;
	lab->nsnaps++;
	lab->step++;
	snprintf(id, sizeof(id), "%zu", lab->nsnaps - 1);
	if (engine_initiate(lab->nodes[v].eng, id) != 0)
		return E_ENGINE;
	if (ret_index != NULL)
		*ret_index = lab->nsnaps - 1;
	return perform_all(lab, v);
}

/* Counts the application messages a marker at position k overtakes. */
static uint64_t
overtaken(const struct chan *c, size_t k)
{
	uint64_t n = 0;

	for (size_t i = 0; i < k; i++)
		n += !c->q[i].is_marker;
	return n;
}

int
lab_deliver(struct lab *lab, size_t ch, size_t k)
{
	struct lab_frame f;
	struct chan *c;
	struct node *dst;
	char id[24];
	int rv;

	if (!lab->started || ch >= lab->nchans)
		return E_NOCHAN;
	c = &lab->chans[ch];
	if (k == 0 || k > c->qlen)
		return E_EMPTY;
	f = c->q[k - 1];
	if (!f.is_marker && lab->cut == ENGINE_CUT_UNALIGNED &&
	    overtaken(c, k - 1) > 0)
		return E_SEQ;
	dst = &lab->nodes[c->dst];
	if (!f.is_marker &&
	    (rv = grow(&dst->down, &dst->capdown, dst->ndown + 1,
	               sizeof(*dst->down))) != 0)
		return rv;
	memmove(&c->q[k - 1], &c->q[k], (c->qlen - k) * sizeof(*c->q));
	c->qlen--;
	lab->step++;
	if (!f.is_marker) {
		struct lab_item it = {
		    .ch = ch, .seq = f.seq, .amount = f.amount};

		c->msgs[f.seq - 1].delivered = lab->step;
		if (engine_delivered(dst->eng, c->in_idx, f.seq) != 0)
			return E_ENGINE;
		if ((rv = push_down(lab, dst, &it)) != 0)
			return rv;
		return perform_all(lab, c->dst);
	}
	lab->snaps[f.snap].overtakes += overtaken(c, k - 1);
	snprintf(id, sizeof(id), "%zu", f.snap);
	if (engine_marker(dst->eng, c->in_idx, id, f.count) != 0)
		return E_ENGINE;
	return perform_all(lab, c->dst);
}

int
lab_take(struct lab *lab, size_t node)
{
	if (!lab->started || node >= lab->nnodes)
		return E_INVAL;
	if (lab->nodes[node].ndown == 0)
		return E_EMPTY;
	lab->step++;
	return take_one(lab, node);
}

size_t
lab_nodes(const struct lab *lab)
{
	return lab->nnodes;
}

size_t
lab_channels(const struct lab *lab)
{
	return lab->nchans;
}

const char *
lab_node_name(const struct lab *lab, size_t node)
{
	return node < lab->nnodes ? lab->nodes[node].name : NULL;
}

void
lab_channel_ends(const struct lab *lab, size_t ch, size_t *ret_src,
                 size_t *ret_dst)
{
	*ret_src = lab->chans[ch].src;
	*ret_dst = lab->chans[ch].dst;
}

int64_t
lab_balance(const struct lab *lab, size_t node)
{
	return lab->nodes[node].balance;
}

int64_t
lab_total(const struct lab *lab)
{
	int64_t t = 0;

	for (size_t i = 0; i < lab->nnodes; i++)
		t += lab->nodes[i].initial;
	return t;
}

size_t
lab_queue_len(const struct lab *lab, size_t ch)
{
	return ch < lab->nchans ? lab->chans[ch].qlen : 0;
}

const struct lab_frame *
lab_queue_at(const struct lab *lab, size_t ch, size_t k)
{
	if (ch >= lab->nchans || k == 0 || k > lab->chans[ch].qlen)
		return NULL;
	return &lab->chans[ch].q[k - 1];
}

uint64_t
lab_app_messages(const struct lab *lab)
{
	uint64_t n = 0;

	for (size_t c = 0; c < lab->nchans; c++)
		n += lab->chans[c].nmsgs;
	return n;
}

size_t
lab_snapshots(const struct lab *lab)
{
	return lab->nsnaps;
}

enum engine_mode
lab_mode(const struct lab *lab)
{
	return lab->mode;
}

enum engine_cut
lab_cut(const struct lab *lab)
{
	return lab->cut;
}

int
lab_queued_apps(const struct lab *lab)
{
	return lab->queued_apps;
}

size_t
lab_down_len(const struct lab *lab, size_t node)
{
	return node < lab->nnodes ? lab->nodes[node].ndown : 0;
}

const struct lab_item *
lab_down_at(const struct lab *lab, size_t node, size_t k)
{
	if (node >= lab->nnodes || k == 0 || k > lab->nodes[node].ndown)
		return NULL;
	return &lab->nodes[node].down[k - 1];
}

int
lab_recorded_tokens(const struct lab *lab, size_t s, size_t node,
                    int64_t *ret_tokens)
{
	if (s >= lab->nsnaps || node >= lab->nnodes ||
	    !lab->snaps[s].nodes[node].recorded)
		return E_INVAL;
	*ret_tokens = lab->snaps[s].nodes[node].tokens;
	return 0;
}

size_t
lab_recorded_count(const struct lab *lab, size_t s, size_t ch)
{
	if (s >= lab->nsnaps || ch >= lab->nchans)
		return 0;
	return lab->snaps[s].chans[ch].nseqs;
}

int64_t
lab_recorded_amount(const struct lab *lab, size_t s, size_t ch, size_t i)
{
	const struct chan_rec *r = &lab->snaps[s].chans[ch];
	const struct chan *c = &lab->chans[ch];

	if (i >= r->nseqs || r->seqs[i] == 0 || r->seqs[i] > c->nmsgs)
		return 0;
	return c->msgs[r->seqs[i] - 1].amount;
}

int
lab_channel_done(const struct lab *lab, size_t s, size_t ch)
{
	return s < lab->nsnaps && ch < lab->nchans &&
	       lab->snaps[s].chans[ch].done;
}

int
lab_part_complete(const struct lab *lab, size_t s, size_t node)
{
	return s < lab->nsnaps && node < lab->nnodes &&
	       lab->snaps[s].nodes[node].complete;
}

uint64_t
lab_recorded_seq(const struct lab *lab, size_t s, size_t ch, size_t i)
{
	if (s >= lab->nsnaps || ch >= lab->nchans ||
	    i >= lab->snaps[s].chans[ch].nseqs)
		return 0;
	return lab->snaps[s].chans[ch].seqs[i];
}

int
lab_recorded_channel(const struct lab *lab, size_t s, size_t ch,
                     struct audit_channel *ret)
{
	const struct chan_rec *r;

	if (!lab_channel_done(lab, s, ch))
		return E_INVAL;
	r = &lab->snaps[s].chans[ch];
	memset(ret, 0, sizeof(*ret));
	ret->src = lab->nodes[lab->chans[ch].src].name;
	ret->dst = lab->nodes[lab->chans[ch].dst].name;
	ret->m = r->m;
	ret->m_high = r->m_high;
	ret->n = r->n;
	audit_seqs_init(&ret->seqs);
	for (size_t i = 0; i < r->nseqs; i++)
		audit_seqs_add(&ret->seqs, r->seqs[i]);
	return 0;
}

/* Compares channel ch's record in s with the ground truth. */
static int
judge_channel(const struct lab *lab, const struct snap *s, size_t ch,
              struct lab_snapshot_result *ret)
{
	const struct chan *c = &lab->chans[ch];
	const struct chan_rec *r = &s->chans[ch];
	const struct node_rec *p = &s->nodes[c->src], *q = &s->nodes[c->dst];
	unsigned char *marked;

	for (size_t i = 0; i < r->nseqs; i++) {
		ret->channel_total +=
		    lab_recorded_amount(lab, (size_t)(s - lab->snaps), ch, i);
		ret->channel_messages++;
	}
	if (!p->recorded || !q->recorded)
		return 0;
	if ((marked = calloc(c->nmsgs + 1, 1)) == NULL)
		return E_NOMEM;
	for (size_t i = 0; i < r->nseqs; i++) {
		uint64_t seq = r->seqs[i];
		if (seq == 0 || seq > c->nmsgs || marked[seq - 1])
			ret->extra++;
		else
			marked[seq - 1] = 1;
	}
	for (size_t i = 0; i < c->nmsgs; i++) {
		const struct truth *t = &c->msgs[i];
		int before_p = t->sent < p->step;
		int after_q = t->taken == 0 || t->taken > q->step;
		if (before_p && after_q && !marked[i])
			ret->missing++;
		if (!(before_p && after_q) && marked[i])
			ret->extra++;
		if (!before_p && !after_q)
			ret->receive_without_send++;
	}
	free(marked);
	return 0;
}

int
lab_audit_input(const struct lab *lab, size_t s, struct lab_audit_input *ret)
{
	struct lab_audit_input a;

	if (s >= lab->nsnaps)
		return E_INVAL;
	memset(&a, 0, sizeof(a));
	a.nodes = calloc(lab->nnodes + 1, sizeof(*a.nodes));
	a.parts = calloc(lab->nnodes + 1, sizeof(*a.parts));
	a.chan_src = calloc(lab->nchans + 1, sizeof(*a.chan_src));
	a.chan_dst = calloc(lab->nchans + 1, sizeof(*a.chan_dst));
	a.recorded = calloc(lab->nchans + 1, sizeof(*a.recorded));
	if (!a.nodes || !a.parts || !a.chan_src || !a.chan_dst || !a.recorded) {
		lab_audit_input_free(&a);
		return E_NOMEM;
	}
	for (size_t v = 0; v < lab->nnodes; v++) {
		a.nodes[v] = lab->nodes[v].name;
		if (lab_part_complete(lab, s, v))
			a.parts[a.in.nparts++] = lab->nodes[v].name;
	}
	for (size_t ch = 0; ch < lab->nchans; ch++) {
		a.chan_src[ch] = lab->nodes[lab->chans[ch].src].name;
		a.chan_dst[ch] = lab->nodes[lab->chans[ch].dst].name;
		if (lab_recorded_channel(lab, s, ch,
		                         &a.recorded[a.in.nrecorded]) == 0)
			a.in.nrecorded++;
	}
	a.in.nodes = a.nodes;
	a.in.nnodes = lab->nnodes;
	a.in.chan_src = a.chan_src;
	a.in.chan_dst = a.chan_dst;
	a.in.nchans = lab->nchans;
	a.in.parts = a.parts;
	a.in.recorded = a.recorded;
	*ret = a;
	return 0;
}

void
lab_audit_input_free(struct lab_audit_input *a)
{
	free(a->nodes);
	free(a->parts);
	free(a->chan_src);
	free(a->chan_dst);
	free(a->recorded);
	memset(a, 0, sizeof(*a));
}

/* Runs the audit over what the engines recorded for s. */
static int
audit_snapshot(const struct lab *lab, size_t s, struct audit_report *ret)
{
	struct lab_audit_input a;
	int rv;

	if ((rv = lab_audit_input(lab, s, &a)) != 0)
		return rv;
	audit_run(&a.in, ret);
	lab_audit_input_free(&a);
	return 0;
}

int
lab_result(const struct lab *lab, size_t s, struct lab_snapshot_result *ret)
{
	struct lab_snapshot_result r;
	const struct snap *sn;
	int rv;

	if (s >= lab->nsnaps)
		return E_INVAL;
	sn = &lab->snaps[s];
	memset(&r, 0, sizeof(r));
	r.initiator = sn->initiator;
	r.overtakes = sn->overtakes;
	r.queued = sn->queued;
	r.complete = 1;
	for (size_t v = 0; v < lab->nnodes; v++) {
		r.complete &= sn->nodes[v].complete;
		r.node_total += sn->nodes[v].tokens;
	}
	for (size_t ch = 0; ch < lab->nchans; ch++)
		if ((rv = judge_channel(lab, sn, ch, &r)) != 0)
			return rv;
	if ((rv = audit_snapshot(lab, s, &r.audit)) != 0)
		return rv;
	*ret = r;
	return 0;
}


uint64_t
lab_rng_next(struct lab_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t
lab_rng_below(struct lab_rng *r, uint64_t n)
{
	return lab_rng_next(r) % n;
}
