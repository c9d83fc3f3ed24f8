/*
 * engine.c - the Chandy-Lamport snapshot state machine of one node.
 *
 * The engine decides, for every snapshot the node knows, when to ask for
 * the local state, when to send markers, which delivered messages belong to
 * which channel state and when the node's part is complete.  It does no I/O
 * and keeps no clock, so the daemon, the lab and the tests run identical
 * logic.
 *
 * One snapshot at one node moves through these states:
 *
 *                 initiate / first marker
 *     (unknown) ---------------------------> REQUESTED
 *                                               |
 *                                               | state_recorded
 *                                               | state_recorded_taken
 *                                               v       (markers sent)
 *                                            RECORDED
 *                                               |
 *                                               | last channel closes
 *                                               v  (or already closed)
 *                                            COMPLETE
 *
 *     REQUESTED, RECORDED --abort--> ABORTED
 *     COMPLETE, ABORTED   --forget--> (unknown)
 *
 * Transitions and the function performing each:
 *
 *   unknown   -> REQUESTED  engine_initiate(), or engine_marker() for an
 *                           id never seen: start().  Notes, for every
 *                           incoming channel, how many messages had
 *                           entered the down stream ("entered") and emits
 *                           REQUEST_STATE.  With the aligned cut that is m
 *                           (the down-stream cut); with the unaligned cut
 *                           it bounds m, which is not yet known.
 *   REQUESTED -> RECORDED   engine_state_recorded() (aligned) or
 *                           engine_state_recorded_taken() (either): fixes
 *                           n for every outgoing channel (the up-stream
 *                           cut) and emits SEND_MARKER on each.
 *                           Unaligned, it first fixes m = taken and emits
 *                           RECORD_QUEUED for the messages that had
 *                           entered but were not taken (cut_channel()),
 *                           then closes the channels whose marker came
 *                           while REQUESTED and that have all they need.
 *   RECORDED  -> COMPLETE   close_channel() when the last open channel
 *                           closes, or the recording call when none is
 *                           open; emits PART_COMPLETE.
 *   any open  -> ABORTED    engine_abort().
 *   COMPLETE/ABORTED -> unknown  engine_forget().
 *
 * engine_reset_in()/engine_reset_out() restart a channel's numbering after
 * its peer restarted, and engine_set_cut() switches cuts while no snapshot
 * is in progress; they touch no snapshot.
 *
 * Incoming channel recording, per snapshot, is independent of the state
 * above: a channel opens at start() and closes exactly once, emitting
 * CHANNEL_DONE:
 *
 *   classic: when the channel's marker arrives (its FIFO position ends the
 *            channel state);
 *   counted: when the marker has arrived and m + within >= n, where within
 *            counts the recorded messages with m < seq <= n: every message
 *            the sender sent before it recorded has been seen.  A marker
 *            that overtook older messages therefore keeps its channel open
 *            until they arrive; a message that overtook the marker does
 *            not count.
 *   unaligned (counted only): the same rule, but never while REQUESTED,
 *            because m is unknown until the state is recorded.  A marker
 *            that arrives while REQUESTED stores n; the recording call
 *            adds the queued range to the channel's record and closes the
 *            channel then if the rule holds.
 *
 * While a channel is open, a delivered message is recorded, except in
 * counted mode once the marker is known and the message's seq exceeds n
 * (it was sent after the sender recorded).  With the unaligned cut every
 * message delivered after the request is behind the cut too (the request
 * went ahead of it), so the same rule records it.
 *
 * Unaligned, a channel's record is at most two runs of consecutive seqs:
 * the queued range taken+1 .. min(entered, n), and the messages delivered
 * after the request, entered+1 .. , which deliveries in seq order keep
 * consecutive.  They join into one run unless the marker's n cut the
 * queued range short, and then nothing above n is recorded after it.
 *
 * Invariants: a snapshot in REQUESTED or RECORDED has open == the number of
 * its channels not done; COMPLETE implies open == 0; an unaligned snapshot
 * in REQUESTED has no channel done; an event that fails changes nothing,
 * because every check and allocation it may need happens first.
 */
#include "engine.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct chan_rec {
	uint64_t m;           /* delivered on the channel before the cut */
	uint64_t m_high;      /* the highest seq among those */
	uint64_t entered;     /* delivered when the state was requested */
	uint64_t n;           /* the marker's count, once marker is set */
	uint64_t recorded;    /* messages recorded into the channel state */
	uint64_t first, last; /* seqs of the first and last recorded */
	uint64_t within;      /* recorded with m < seq <= n, once marker */
	unsigned char consecutive; /* each recorded seq was last + 1 */
	unsigned char marker;
	unsigned char done;
};

struct snap {
	char id[ENGINE_ID_MAX + 1];
	enum engine_snap_state state;
	size_t open; /* channels not yet done */
	struct chan_rec *in;
};

struct engine {
	enum engine_mode mode;
	enum engine_cut cut;
	size_t n_in, n_out;
	uint64_t *sent;      /* per outgoing channel */
	uint64_t *delivered; /* per incoming channel */
	uint64_t *max_seq;   /* per incoming channel: highest seq delivered */
	struct snap **snaps; /* in order of creation */
	size_t nsnaps, capsnaps;
	struct engine_action *acts;
	size_t nacts, capacts;
};

int
engine_new(enum engine_mode mode, size_t n_in, size_t n_out,
           struct engine **ret_engine)
{
	struct engine *e;

	if (mode != ENGINE_CLASSIC && mode != ENGINE_COUNTED)
		return E_INVAL;
	/* Per-snapshot channel arrays hold n_in + 1 records. */
	if (n_in >= SIZE_MAX / sizeof(struct chan_rec) - 1 ||
	    n_out >= SIZE_MAX / sizeof(uint64_t) - 1)
		return E_INVAL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return E_NOMEM;
	e->mode = mode;
	e->n_in = n_in;
	e->n_out = n_out;
	e->sent = calloc(n_out + 1, sizeof(*e->sent));
	e->delivered = calloc(n_in + 1, sizeof(*e->delivered));
	e->max_seq = calloc(n_in + 1, sizeof(*e->max_seq));
	if (e->sent == NULL || e->delivered == NULL || e->max_seq == NULL) {
		engine_free(e);
		return E_NOMEM;
	}
	*ret_engine = e;
	return 0;
}

static void
snap_free(struct snap *s)
{
	if (s == NULL)
		return;
	free(s->in);
	free(s);
}

void
engine_free(struct engine *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; i < e->nsnaps; i++)
		snap_free(e->snaps[i]);
	free(e->snaps);
	free(e->acts);
	free(e->sent);
	free(e->delivered);
	free(e->max_seq);
	free(e);
}

int
engine_id_valid(const char *id)
{
	size_t len;

	if (id == NULL)
		return 0;
	len = strnlen(id, ENGINE_ID_MAX + 1);
	if (len == 0 || len > ENGINE_ID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (id[i] <= ' ' || id[i] > '~')
			return 0;
	return 1;
}

static struct snap *
find(const struct engine *e, const char *id)
{
	for (size_t i = 0; i < e->nsnaps; i++)
		if (strcmp(e->snaps[i]->id, id) == 0)
			return e->snaps[i];
	return NULL;
}

/* Makes room for n more actions, so that emitting them cannot fail. */
static int
reserve_actions(struct engine *e, size_t n)
{
	struct engine_action *a;
	size_t cap;

	if (e->nacts + n <= e->capacts)
		return 0;
	cap = e->capacts ? e->capacts : 8;
	while (cap < e->nacts + n)
		cap *= 2;
	if ((a = realloc(e->acts, cap * sizeof(*a))) == NULL)
		return E_NOMEM;
	e->acts = a;
	e->capacts = cap;
	return 0;
}

static struct engine_action *
emit(struct engine *e, enum engine_action_kind kind, const struct snap *s)
{
	struct engine_action *a;

	assert(e->nacts < e->capacts);
	a = &e->acts[e->nacts++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->snap = s->id;
	return a;
}

/* Allocates a snapshot record and a slot for it, without linking it in. */
static int
snap_alloc(struct engine *e, const char *id, struct snap **ret_snap)
{
	struct snap *s;

	if (e->nsnaps == e->capsnaps) {
		size_t cap = e->capsnaps ? e->capsnaps * 2 : 4;
		struct snap **v = realloc(e->snaps, cap * sizeof(*v));
		if (v == NULL)
			return E_NOMEM;
		e->snaps = v;
		e->capsnaps = cap;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return E_NOMEM;
	if ((s->in = calloc(e->n_in + 1, sizeof(*s->in))) == NULL) {
		free(s);
		return E_NOMEM;
	}
	memcpy(s->id, id, strlen(id) + 1);
	*ret_snap = s;
	return 0;
}

/* unknown -> REQUESTED.  The snapshot must have been allocated and the
 * action list reserved by the caller. */
static void
start(struct engine *e, struct snap *s)
{
	s->state = ENGINE_S_REQUESTED;
	s->open = e->n_in;
	for (size_t i = 0; i < e->n_in; i++) {
		/* Unaligned, m and m_high are provisional until
		 * cut_channel() learns what the application took. */
		s->in[i].m = e->delivered[i];
		s->in[i].m_high = e->max_seq[i];
		s->in[i].entered = e->delivered[i];
	}
	e->snaps[e->nsnaps++] = s;
	emit(e, ENGINE_REQUEST_STATE, s);
}

static void
complete_if_done(struct engine *e, struct snap *s)
{
	if (s->state == ENGINE_S_RECORDED && s->open == 0) {
		s->state = ENGINE_S_COMPLETE;
		emit(e, ENGINE_PART_COMPLETE, s);
	}
}

static void
close_channel(struct engine *e, struct snap *s, size_t in)
{
	struct chan_rec *c = &s->in[in];
	struct engine_action *a;

	assert(!c->done && s->open > 0);
	c->done = 1;
	s->open--;
	a = emit(e, ENGINE_CHANNEL_DONE, s);
	a->chan = in;
	a->m = c->m;
	a->m_high = c->m_high;
	a->n = c->n;
	a->count = c->recorded;
	complete_if_done(e, s);
}

/* Whether channel c, whose marker has arrived, has everything it needs. */
static int
ready_to_close(const struct engine *e, const struct chan_rec *c)
{
	if (e->mode == ENGINE_CLASSIC)
		return 1;
	return c->m + c->within >= c->n;
}

/* How many of the messages recorded before the marker lie in m+1 .. n.
 * Messages that overtook the marker were sent after the sender recorded
 * and must not count.  Without a consecutive run to reason about (the
 * transport reordered application messages) every one counts, and the
 * audit judges the result. */
static uint64_t
recorded_within(const struct chan_rec *c)
{
	uint64_t lo = c->m + 1, hi = c->n;

	if (c->recorded == 0)
		return 0;
	if (!c->consecutive)
		return c->recorded;
	if (c->first > lo)
		lo = c->first;
	if (c->last < hi)
		hi = c->last;
	return hi >= lo ? hi - lo + 1 : 0;
}

static void
note_recorded(struct chan_rec *c, uint64_t seq)
{
	if (c->recorded == 0) {
		c->first = seq;
		c->consecutive = 1;
	} else if (seq != c->last + 1) {
		c->consecutive = 0;
	}
	c->last = seq;
	c->recorded++;
	if (c->marker)
		c->within++;
}

static int
live(const struct snap *s)
{
	return s->state == ENGINE_S_REQUESTED || s->state == ENGINE_S_RECORDED;
}

/* Whether s's channels may close now: not while an unaligned snapshot
 * waits for its state, because m is only known once it is recorded. */
static int
may_close(const struct engine *e, const struct snap *s)
{
	return e->cut == ENGINE_CUT_ALIGNED || s->state != ENGINE_S_REQUESTED;
}

int
engine_set_cut(struct engine *e, enum engine_cut cut)
{
	e->nacts = 0;
	if (cut != ENGINE_CUT_ALIGNED && cut != ENGINE_CUT_UNALIGNED)
		return E_INVAL;
	if (cut == ENGINE_CUT_UNALIGNED && e->mode != ENGINE_COUNTED)
		return E_INVAL;
	if (engine_in_progress(e) > 0)
		return E_STATE;
	e->cut = cut;
	return 0;
}

enum engine_cut
engine_cut(const struct engine *e)
{
	return e->cut;
}

int
engine_initiate(struct engine *e, const char *id)
{
	struct snap *s;
	int rv;

	e->nacts = 0;

	if (!engine_id_valid(id))
		return E_INVAL;
	if (find(e, id) != NULL)
		return E_EXIST;
	if ((rv = reserve_actions(e, 1)) != 0)
		return rv;
	if ((rv = snap_alloc(e, id, &s)) != 0)
		return rv;
	start(e, s);
	return 0;
}

int
engine_sent(struct engine *e, size_t out, uint64_t *ret_seq)
{
	e->nacts = 0;
	if (out >= e->n_out)
		return E_NOCHAN;
	e->sent[out]++;
	if (ret_seq != NULL)
		*ret_seq = e->sent[out];
	return 0;
}

int
engine_delivered(struct engine *e, size_t in, uint64_t seq)
{
	int rv;

	e->nacts = 0;

	if (in >= e->n_in)
		return E_NOCHAN;
	if (e->cut == ENGINE_CUT_UNALIGNED && seq != e->delivered[in] + 1)
		return E_INVAL; /* taken counts would not name seqs */
	/* Each snapshot may record, close and complete: three actions. */
	if ((rv = reserve_actions(e, 3 * e->nsnaps)) != 0)
		return rv;
	e->delivered[in]++;
	if (seq > e->max_seq[in])
		e->max_seq[in] = seq;
	for (size_t i = 0; i < e->nsnaps; i++) {
		struct snap *s = e->snaps[i];
		struct chan_rec *c = &s->in[in];
		struct engine_action *a;

		if (!live(s) || c->done)
			continue;
		if (c->marker && seq > c->n)
			continue; /* sent after the sender recorded */
		note_recorded(c, seq);
		a = emit(e, ENGINE_RECORD_MESSAGE, s);
		a->chan = in;
		a->seq = seq;
		if (c->marker && may_close(e, s) && ready_to_close(e, c))
			close_channel(e, s, in);
	}
	return 0;
}

int
engine_marker(struct engine *e, size_t in, const char *id, uint64_t n)
{
	struct snap *s;
	struct chan_rec *c;
	int rv;

	e->nacts = 0;

	if (in >= e->n_in)
		return E_NOCHAN;
	if (!engine_id_valid(id))
		return E_INVAL;
	s = find(e, id);
	if (s != NULL && !live(s))
		return s->state == ENGINE_S_ABORTED ? E_STATE
		                                    : E_DUP;
	if (s != NULL && s->in[in].marker)
		return E_DUP;
	/* Request, channel done, part complete. */
	if ((rv = reserve_actions(e, 3)) != 0)
		return rv;
	if (s == NULL) {
		if ((rv = snap_alloc(e, id, &s)) != 0)
			return rv;
		start(e, s);
	}
	c = &s->in[in];
	c->marker = 1;
	c->n = n;
	if (!may_close(e, s))
		return 0; /* cut_channel() judges it once m is known */
	c->within = recorded_within(c);
	if (ready_to_close(e, c))
		close_channel(e, s, in);
	return 0;
}

/* Finds id for a recording call: the snapshot must wait for its state. */
static int
find_requested(struct engine *e, const char *id, struct snap **ret_snap)
{
	struct snap *s;

	if (!engine_id_valid(id))
		return E_INVAL;
	if ((s = find(e, id)) == NULL)
		return E_NOENT;
	if (s->state != ENGINE_S_REQUESTED)
		return E_STATE;
	*ret_snap = s;
	return 0;
}

/* REQUESTED -> RECORDED: the up-stream cut.  Room for n_out markers and
 * the part must have been reserved. */
static void
send_markers(struct engine *e, struct snap *s)
{
	s->state = ENGINE_S_RECORDED;
	for (size_t j = 0; j < e->n_out; j++) {
		struct engine_action *a = emit(e, ENGINE_SEND_MARKER, s);
		a->chan = j;
		a->count = e->sent[j];
	}
}

int
engine_state_recorded(struct engine *e, const char *id)
{
	struct snap *s;
	int rv;

	e->nacts = 0;

	if (e->cut == ENGINE_CUT_UNALIGNED)
		return E_INVAL; /* only the taken counts fix m */
	if ((rv = find_requested(e, id, &s)) != 0)
		return rv;
	if ((rv = reserve_actions(e, e->n_out + 1)) != 0)
		return rv;
	send_markers(e, s);
	complete_if_done(e, s);
	return 0;
}

/* How many seqs of the run lo .. hi lie in m+1 .. n. */
static uint64_t
run_within(uint64_t lo, uint64_t hi, uint64_t m, uint64_t n)
{
	if (lo <= m)
		lo = m + 1;
	if (hi > n)
		hi = n;
	return hi >= lo ? hi - lo + 1 : 0;
}

/* Fixes m = taken on channel in of an unaligned snapshot and records the
 * messages that had entered the down stream before the request but were
 * not taken: seqs taken+1 .. entered, or .. n if the marker said fewer
 * were sent before the sender recorded.  The messages recorded so far
 * were delivered after the request, seqs entered+1 .. last, in order. */
static void
cut_channel(struct engine *e, struct snap *s, size_t in, uint64_t taken)
{
	struct chan_rec *c = &s->in[in];
	uint64_t end = c->entered, queued = 0, after = 0;

	assert(c->recorded == 0 || c->consecutive);
	if (c->marker && c->n < end)
		end = c->n;
	if (c->marker && c->recorded > 0)
		after = run_within(c->first, c->last, taken, c->n);
	c->m = c->m_high = taken;
	if (end > taken) {
		struct engine_action *a = emit(e, ENGINE_RECORD_QUEUED, s);

		queued = end - taken;
		a->chan = in;
		a->seq = taken + 1;
		a->count = queued;
		if (c->recorded == 0) {
			c->last = end;
			c->consecutive = 1;
		} else if (c->first != end + 1) {
			c->consecutive = 0; /* n cut the queued range short */
		}
		c->first = taken + 1;
		c->recorded += queued;
	}
	/* Every queued seq lies in m+1 .. n: end <= n when the marker is
	 * known. */
	if (c->marker)
		c->within = queued + after;
}

int
engine_state_recorded_taken(struct engine *e, const char *id,
                            const uint64_t *taken)
{
	struct snap *s;
	int rv;

	e->nacts = 0;

	if ((rv = find_requested(e, id, &s)) != 0)
		return rv;
	if (e->cut == ENGINE_CUT_ALIGNED) {
		for (size_t i = 0; taken != NULL && i < e->n_in; i++)
			if (taken[i] != s->in[i].m)
				return E_INVAL;
		return engine_state_recorded(e, id);
	}
	if (taken == NULL && e->n_in > 0)
		return E_INVAL;
	for (size_t i = 0; i < e->n_in; i++)
		if (taken[i] > s->in[i].entered)
			return E_INVAL; /* took what was not there */
	/* A queued range and a close per channel, markers, the part. */
	if ((rv = reserve_actions(e, 2 * e->n_in + e->n_out + 1)) != 0)
		return rv;
	for (size_t i = 0; i < e->n_in; i++)
		cut_channel(e, s, i, taken[i]);
	send_markers(e, s);
	for (size_t i = 0; i < e->n_in; i++) {
		struct chan_rec *c = &s->in[i];

		assert(!c->done);
		if (c->marker && ready_to_close(e, c))
			close_channel(e, s, i);
	}
	complete_if_done(e, s);
	return 0;
}

int
engine_abort(struct engine *e, const char *id)
{
	struct snap *s;

	e->nacts = 0;

	if (!engine_id_valid(id))
		return E_INVAL;
	if ((s = find(e, id)) == NULL)
		return E_NOENT;
	if (!live(s))
		return E_STATE;
	s->state = ENGINE_S_ABORTED;
	return 0;
}

int
engine_forget(struct engine *e, const char *id)
{
	size_t i;

	e->nacts = 0;

	if (!engine_id_valid(id))
		return E_INVAL;
	for (i = 0; i < e->nsnaps; i++)
		if (strcmp(e->snaps[i]->id, id) == 0)
			break;
	if (i == e->nsnaps)
		return E_NOENT;
	if (live(e->snaps[i]))
		return E_STATE;
	snap_free(e->snaps[i]);
	memmove(&e->snaps[i], &e->snaps[i + 1],
	        (e->nsnaps - i - 1) * sizeof(e->snaps[0]));
	e->nsnaps--;
	return 0;
}

const struct engine_action *
engine_actions(const struct engine *e, size_t *ret_n)
{
	*ret_n = e->nacts;
	return e->acts;
}

int
engine_state(const struct engine *e, const char *id,
             enum engine_snap_state *ret_state)
{
	const struct snap *s;

	if (!engine_id_valid(id) || (s = find(e, id)) == NULL)
		return E_NOENT;
	*ret_state = s->state;
	return 0;
}

size_t
engine_in_progress(const struct engine *e)
{
	size_t n = 0;

	for (size_t i = 0; i < e->nsnaps; i++)
		n += live(e->snaps[i]);
	return n;
}

int
engine_channels_open(const struct engine *e, const char *id, size_t *ret_open)
{
	const struct snap *s;

	if (!engine_id_valid(id) || (s = find(e, id)) == NULL)
		return E_NOENT;
	*ret_open = s->open;
	return 0;
}

int
engine_reset_in(struct engine *e, size_t in)
{
	e->nacts = 0;
	if (in >= e->n_in)
		return E_NOCHAN;
	e->delivered[in] = 0;
	e->max_seq[in] = 0;
	return 0;
}

int
engine_reset_out(struct engine *e, size_t out)
{
	e->nacts = 0;
	if (out >= e->n_out)
		return E_NOCHAN;
	e->sent[out] = 0;
	return 0;
}

int
engine_resume_in(struct engine *e, size_t in, uint64_t count)
{
	e->nacts = 0;
	if (in >= e->n_in)
		return E_NOCHAN;
	if (engine_in_progress(e) > 0)
		return E_STATE;
	e->delivered[in] = count;
	if (e->max_seq[in] < count)
		e->max_seq[in] = count;
	return 0;
}

int
engine_resume_out(struct engine *e, size_t out, uint64_t count)
{
	e->nacts = 0;
	if (out >= e->n_out)
		return E_NOCHAN;
	if (engine_in_progress(e) > 0)
		return E_STATE;
	e->sent[out] = count;
	return 0;
}

uint64_t
engine_sent_count(const struct engine *e, size_t out)
{
	return out < e->n_out ? e->sent[out] : 0;
}

uint64_t
engine_delivered_count(const struct engine *e, size_t in)
{
	return in < e->n_in ? e->delivered[in] : 0;
}

enum engine_mode
engine_mode(const struct engine *e)
{
	return e->mode;
}

