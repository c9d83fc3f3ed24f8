/*
 * fuzz_engine.c - libFuzzer harness: the snapshot engine, driven by
 * random events.
 *
 * The first bytes choose the engine (mode, cut, channels); every further
 * 4 bytes are one event: initiate, sent, delivered, marker, state
 * recorded (with or without taken counts), abort, forget or a channel
 * reset, on small channel indexes and eight snapshot ids, so that events
 * meet the same snapshots.  After each event the harness checks the
 * engine's promises (engine.h) against its own record of the actions:
 *
 *   - an event that fails produces no action;
 *   - every action names a known snapshot and a channel in range;
 *   - a snapshot is asked for its state once, sends one marker per
 *     outgoing channel (all in the event that records the state) and
 *     closes each incoming channel once, with as many messages as it was
 *     told to record on it;
 *   - PART_COMPLETE comes once, after the state and every channel, and
 *     the snapshot is then COMPLETE;
 *   - sent and delivered counts move by one per successful event;
 *   - engine_in_progress() counts the snapshots neither complete nor
 *     aborted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define MAX_CHAN 4
#define NIDS     8

struct snap_model {
	int known, requested, recorded, complete, aborted;
	int marker[MAX_CHAN];   /* SEND_MARKER seen per outgoing channel */
	int done[MAX_CHAN];     /* CHANNEL_DONE seen per incoming channel */
	uint64_t rec[MAX_CHAN]; /* messages recorded per incoming channel */
};

struct model {
	size_t n_in, n_out;
	struct snap_model s[NIDS];
	uint64_t sent[MAX_CHAN], delivered[MAX_CHAN];
};

static const char *const ids[NIDS] = {"p0:1", "p0:2", "p1:1", "p1:2",
                                      "p2:1", "p2:2", "p3:1", "x"};

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz_engine: %s:%d: %s\n", __FILE__,  \
			        __LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

static int
id_index(const char *id)
{
	for (int i = 0; i < NIDS; i++)
		if (strcmp(ids[i], id) == 0)
			return i;
	return -1;
}

/* Checks the actions of the event just done against the model and
 * updates it.  k is the snapshot the event named, or -1. */
static void
check_actions(struct engine *e, struct model *m, int rv, int k)
{
	const struct engine_action *acts;
	size_t n;

	acts = engine_actions(e, &n);
	if (rv != 0) {
		CHECK(n == 0);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct engine_action *a = &acts[i];
		int j = id_index(a->snap);
		struct snap_model *s;

		CHECK(j >= 0);
		s = &m->s[j];
		CHECK(!s->complete && !s->aborted);
		switch (a->kind) {
		case ENGINE_REQUEST_STATE:
			CHECK(j == k && !s->requested);
			s->known = s->requested = 1;
			break;
		case ENGINE_SEND_MARKER:
			CHECK(a->chan < m->n_out && s->requested);
			CHECK(!s->marker[a->chan]);
			s->marker[a->chan] = 1;
			s->recorded = 1;
			break;
		case ENGINE_RECORD_MESSAGE:
			CHECK(a->chan < m->n_in && !s->done[a->chan]);
			s->rec[a->chan]++;
			break;
		case ENGINE_RECORD_QUEUED:
			CHECK(a->chan < m->n_in && !s->done[a->chan]);
			CHECK(a->count > 0 && a->seq > 0);
			s->rec[a->chan] += a->count;
			break;
		case ENGINE_CHANNEL_DONE:
			CHECK(a->chan < m->n_in && !s->done[a->chan]);
			CHECK(a->count == s->rec[a->chan]);
			s->done[a->chan] = 1;
			break;
		case ENGINE_PART_COMPLETE:
			CHECK(s->recorded || m->n_out == 0);
			for (size_t c = 0; c < m->n_in; c++)
				CHECK(s->done[c]);
			for (size_t c = 0; c < m->n_out; c++)
				CHECK(s->marker[c]);
			s->complete = 1;
			break;
		default:
			CHECK(!"unknown action kind");
		}
	}
}

/* The markers of a snapshot all go in the event that records its state. */
static void
check_markers(const struct model *m, const struct snap_model *before,
              const struct snap_model *after)
{
	int any = 0, all = 1;

	for (size_t c = 0; c < m->n_out; c++) {
		int fresh = after->marker[c] && !before->marker[c];
		any |= fresh;
		all &= fresh;
	}
	CHECK(!any || all);
}

static void
check_states(struct engine *e, const struct model *m)
{
	size_t open = 0;

	for (int j = 0; j < NIDS; j++) {
		const struct snap_model *s = &m->s[j];
		enum engine_snap_state st;
		int rv = engine_state(e, ids[j], &st);

		if (!s->known) {
			CHECK(rv == E_NOENT);
			continue;
		}
		CHECK(rv == 0);
		if (s->complete)
			CHECK(st == ENGINE_S_COMPLETE);
		else if (s->aborted)
			CHECK(st == ENGINE_S_ABORTED);
		else {
			CHECK(st == ENGINE_S_REQUESTED ||
			      st == ENGINE_S_RECORDED);
			open++;
		}
	}
	CHECK(engine_in_progress(e) == open);
	for (size_t c = 0; c < m->n_out; c++)
		CHECK(engine_sent_count(e, c) == m->sent[c]);
	for (size_t c = 0; c < m->n_in; c++)
		CHECK(engine_delivered_count(e, c) == m->delivered[c]);
}

/* Runs one 4-byte event. */
static void
event(struct engine *e, struct model *m, const uint8_t *ev)
{
	int k = ev[1] % NIDS, rv;
	size_t in = m->n_in ? ev[2] % (m->n_in + 1) : ev[2] % 2;
	size_t out = m->n_out ? ev[2] % (m->n_out + 1) : ev[2] % 2;
	uint64_t arg = ev[3], taken[MAX_CHAN];
	struct snap_model before = m->s[k];

	switch (ev[0] % 10) {
	case 0:
		rv = engine_initiate(e, ids[k]);
		break;
	case 1:
		if ((rv = engine_sent(e, out, NULL)) == 0)
			m->sent[out]++;
		break;
	case 2:
		/* Mostly the next seq, sometimes anything. */
		arg = (ev[3] & 0x80)
		          ? ev[3] & 0x7f
		          : (in < m->n_in ? m->delivered[in] + 1 : 1);
		if ((rv = engine_delivered(e, in, arg)) == 0)
			m->delivered[in]++;
		break;
	case 3:
		rv = engine_marker(e, in, ids[k], arg);
		break;
	case 4:
		rv = engine_state_recorded(e, ids[k]);
		break;
	case 5:
		for (size_t c = 0; c < MAX_CHAN; c++)
			taken[c] = c < m->n_in && (ev[3] >> c & 1)
			               ? m->delivered[c] - (ev[3] >> 4) % 2
			               : (c < m->n_in ? m->delivered[c] : 0);
		rv = engine_state_recorded_taken(e, ids[k],
		                                 m->n_in ? taken : NULL);
		break;
	case 6:
		if ((rv = engine_abort(e, ids[k])) == 0) {
			CHECK(m->s[k].known && !m->s[k].complete);
			m->s[k].aborted = 1;
		}
		break;
	case 7:
		if ((rv = engine_forget(e, ids[k])) == 0) {
			CHECK(m->s[k].complete || m->s[k].aborted);
			memset(&m->s[k], 0, sizeof(m->s[k]));
		}
		break;
	case 8:
		if ((rv = engine_reset_in(e, in)) == 0)
			m->delivered[in] = 0;
		break;
	default:
		if ((rv = engine_reset_out(e, out)) == 0)
			m->sent[out] = 0;
		break;
	}
	check_actions(e, m, rv, k);
	check_markers(m, &before, &m->s[k]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct engine *e;
	struct model m;
	enum engine_mode mode;

	if (len < 2)
		return 0;
	memset(&m, 0, sizeof(m));
	mode = data[0] & 1 ? ENGINE_COUNTED : ENGINE_CLASSIC;
	m.n_in = (data[1] >> 0) % (MAX_CHAN + 1);
	m.n_out = (data[1] >> 4) % (MAX_CHAN + 1);
	if (engine_new(mode, m.n_in, m.n_out, &e) != 0)
		return 0;
	if (data[0] & 2) {
		int rv = engine_set_cut(e, ENGINE_CUT_UNALIGNED);
		CHECK(rv == 0 || mode == ENGINE_CLASSIC);
	}
	for (size_t i = 2; i + 4 <= len; i += 4) {
		event(e, &m, data + i);
		check_states(e, &m);
	}
	engine_free(e);
	return 0;
}
