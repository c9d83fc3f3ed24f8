/*
 * test_engine.c - unit tests of the snapshot engine (daemon/core/engine.c).
 *
 * Every transition of the diagram at the top of engine.c is driven here in
 * both marker modes, and every event's actions are compared field by field
 * and in order with what the rules say.  Tests that only make sense in one
 * mode live in the engine_classic or engine_counted suite; tests of the
 * mode-independent surface live in the engine suite; the unaligned cut
 * (counted markers, m from what the application took) lives in the
 * engine_unaligned suite at the end.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* An expected action.  Fields that an action's kind does not use must be
 * zero, because the engine zeroes them. */
struct want {
	enum engine_action_kind kind;
	const char *snap;
	size_t chan;
	uint64_t seq, count, m, n;
};

#define WANT(...)                                                              \
	{                                                                      \
		__VA_ARGS__                                                    \
	}
#define REQ(s)          WANT(ENGINE_REQUEST_STATE, (s), 0, 0, 0, 0, 0)
#define MARK(s, c, cnt) WANT(ENGINE_SEND_MARKER, (s), (c), 0, (cnt), 0, 0)
#define REC(s, c, q)    WANT(ENGINE_RECORD_MESSAGE, (s), (c), (q), 0, 0, 0)
#define DONE(s, c, mm, nn, cnt)                                                \
	WANT(ENGINE_CHANNEL_DONE, (s), (c), 0, (cnt), (mm), (nn))
#define PART(s) WANT(ENGINE_PART_COMPLETE, (s), 0, 0, 0, 0, 0)
#define QUEUED(s, c, first, cnt)                                               \
	WANT(ENGINE_RECORD_QUEUED, (s), (c), (first), (cnt), 0, 0)

/* Asserts that the last event produced exactly these actions, in order. */
#define EXPECT(e, ...)                                                         \
	do {                                                                   \
		const struct want w_[] = {__VA_ARGS__};                        \
		expect_actions((e), w_, sizeof(w_) / sizeof(w_[0]));           \
	} while (0)

/* Asserts that call succeeds. */
#define OK(call)                                                               \
	do {                                                                   \
		int rv_ = (call);                                              \
		cr_assert_eq(rv_, 0, "%s: %s", #call, err_str(rv_));   \
	} while (0)

/* Asserts that call fails with err. */
#define FAILS(call, err)                                                       \
	do {                                                                   \
		int rv_ = (call);                                              \
		cr_assert_eq(rv_, (err), "%s: got \"%s\", want \"%s\"", #call, \
		             err_str(rv_), err_str(err));      \
	} while (0)

/* Runs the body once per marker mode, as engine_classic::name and
 * engine_counted::name. */
#define BOTH_MODES(name)                                                       \
	static void name(enum engine_mode mode);                               \
	Test(engine_classic, name)                                             \
	{                                                                      \
		name(ENGINE_CLASSIC);                                          \
	}                                                                      \
	Test(engine_counted, name)                                             \
	{                                                                      \
		name(ENGINE_COUNTED);                                          \
	}                                                                      \
	static void name(enum engine_mode mode)

static const char *
kind_name(enum engine_action_kind k)
{
	switch (k) {
	case ENGINE_REQUEST_STATE:
		return "REQUEST_STATE";
	case ENGINE_SEND_MARKER:
		return "SEND_MARKER";
	case ENGINE_RECORD_MESSAGE:
		return "RECORD_MESSAGE";
	case ENGINE_CHANNEL_DONE:
		return "CHANNEL_DONE";
	case ENGINE_PART_COMPLETE:
		return "PART_COMPLETE";
	case ENGINE_RECORD_QUEUED:
		return "RECORD_QUEUED";
	}
	return "?";
}

/* Writes the last event's actions into buf, one per line, for messages. */
static const char *
dump(const struct engine *e, char *buf, size_t size)
{
	size_t n, len = 0;
	const struct engine_action *a = engine_actions(e, &n);

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++) {
		int k = snprintf(
		    buf + len, size - len,
		    "\n  %s snap=%s chan=%zu seq=%llu count=%llu m=%llu n=%llu",
		    kind_name(a[i].kind), a[i].snap, a[i].chan,
		    (unsigned long long)a[i].seq,
		    (unsigned long long)a[i].count, (unsigned long long)a[i].m,
		    (unsigned long long)a[i].n);
		if (k < 0)
			break;
		len += (size_t)k;
	}
	return n == 0 ? " (none)" : buf;
}

static void
expect_actions(const struct engine *e, const struct want *w, size_t nw)
{
	char buf[2048];
	size_t n;
	const struct engine_action *a = engine_actions(e, &n);

	dump(e, buf, sizeof(buf));
	cr_assert_eq(n, nw, "got %zu actions, want %zu:%s", n, nw,
	             n ? buf : " (none)");
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(a[i].kind, w[i].kind,
		             "action %zu is %s, want %s:%s", i,
		             kind_name(a[i].kind), kind_name(w[i].kind), buf);
		cr_assert_not_null(a[i].snap, "action %zu has no snap", i);
		cr_assert_str_eq(a[i].snap, w[i].snap,
		                 "action %zu: snap %s, want %s:%s", i,
		                 a[i].snap, w[i].snap, buf);
		cr_assert_eq(a[i].chan, w[i].chan, "action %zu: chan:%s", i,
		             buf);
		cr_assert_eq(a[i].seq, w[i].seq, "action %zu: seq:%s", i, buf);
		cr_assert_eq(a[i].count, w[i].count, "action %zu: count:%s", i,
		             buf);
		cr_assert_eq(a[i].m, w[i].m, "action %zu: m:%s", i, buf);
		cr_assert_eq(a[i].n, w[i].n, "action %zu: n:%s", i, buf);
	}
}

static void
expect_none(const struct engine *e)
{
	char buf[2048];
	size_t n;

	engine_actions(e, &n);
	cr_assert_eq(n, 0, "got %zu actions, want none:%s", n,
	             dump(e, buf, sizeof(buf)));
}

/* Returns the first action of the last event with this kind (and snap,
 * unless NULL), or NULL. */
static const struct engine_action *
find_action(const struct engine *e, enum engine_action_kind kind,
            const char *snap)
{
	size_t n;
	const struct engine_action *a = engine_actions(e, &n);

	for (size_t i = 0; i < n; i++)
		if (a[i].kind == kind &&
		    (snap == NULL || strcmp(a[i].snap, snap) == 0))
			return &a[i];
	return NULL;
}

/* Counts the last event's actions of this kind (and snap, unless NULL). */
static size_t
count_actions(const struct engine *e, enum engine_action_kind kind,
              const char *snap)
{
	size_t n, k = 0;
	const struct engine_action *a = engine_actions(e, &n);

	for (size_t i = 0; i < n; i++)
		k += a[i].kind == kind &&
		     (snap == NULL || strcmp(a[i].snap, snap) == 0);
	return k;
}

static struct engine *
mk(enum engine_mode mode, size_t n_in, size_t n_out)
{
	struct engine *e = NULL;

	OK(engine_new(mode, n_in, n_out, &e));
	cr_assert_not_null(e);
	expect_none(e);
	return e;
}

/* The application sends k messages on out; asserts their sequence
 * numbers continue from what was sent before. */
static void
send_n(struct engine *e, size_t out, unsigned k)
{
	for (unsigned i = 0; i < k; i++) {
		uint64_t before = engine_sent_count(e, out), seq = 0;

		OK(engine_sent(e, out, &seq));
		cr_assert_eq(seq, before + 1);
		expect_none(e);
	}
}

static void
deliver(struct engine *e, size_t in, uint64_t seq)
{
	uint64_t before = engine_delivered_count(e, in);

	OK(engine_delivered(e, in, seq));
	cr_assert_eq(engine_delivered_count(e, in), before + 1);
}

/* The snapshot's state, or -1 when the engine does not know it. */
static int
state_of(const struct engine *e, const char *id)
{
	enum engine_snap_state st;

	if (engine_state(e, id, &st) != 0)
		return -1;
	return (int)st;
}

static size_t
open_of(const struct engine *e, const char *id)
{
	size_t open = 12345;

	OK(engine_channels_open(e, id, &open));
	return open;
}

/* Fills buf with an id of len 'x' characters. */
static const char *
id_of_len(char *buf, size_t len)
{
	memset(buf, 'x', len);
	buf[len] = '\0';
	return buf;
}

/* Ids that are not printable ASCII without spaces; the over-long one is
 * added by each test with id_of_len(). */
static const char *const bad_ids[] = {
    "",          "has space", " lead",   "trail ",      "tab\there",
    "new\nline", "ctl\x01",   "del\x7f", "caf\xc3\xa9",
};
#define NBAD (sizeof(bad_ids) / sizeof(bad_ids[0]))

/* Everything a caller can observe of an engine, for the ids below. */
static const char *const view_ids[] = {"A", "B", "C", "Z"};
#define NVIEW (sizeof(view_ids) / sizeof(view_ids[0]))

struct view {
	int state[NVIEW];
	size_t open[NVIEW];
	size_t in_progress;
	uint64_t sent[4], delivered[4];
	enum engine_mode mode;
	enum engine_cut cut;
};

static void
look(const struct engine *e, struct view *v)
{
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < NVIEW; i++) {
		v->state[i] = state_of(e, view_ids[i]);
		v->open[i] = SIZE_MAX;
		engine_channels_open(e, view_ids[i], &v->open[i]);
	}
	v->in_progress = engine_in_progress(e);
	for (size_t i = 0; i < 4; i++) {
		v->sent[i] = engine_sent_count(e, i);
		v->delivered[i] = engine_delivered_count(e, i);
	}
	v->mode = engine_mode(e);
	v->cut = engine_cut(e);
}

static void
expect_same(const struct view *a, const struct view *b, const char *what)
{
	for (size_t i = 0; i < NVIEW; i++) {
		cr_assert_eq(a->state[i], b->state[i], "%s changed state of %s",
		             what, view_ids[i]);
		cr_assert_eq(a->open[i], b->open[i],
		             "%s changed open channels of %s", what,
		             view_ids[i]);
	}
	cr_assert_eq(a->in_progress, b->in_progress, "%s: in_progress", what);
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(a->sent[i], b->sent[i], "%s: sent[%zu]", what, i);
		cr_assert_eq(a->delivered[i], b->delivered[i],
		             "%s: delivered[%zu]", what, i);
	}
	cr_assert_eq(a->mode, b->mode, "%s: mode", what);
	cr_assert_eq(a->cut, b->cut, "%s: cut", what);
}

/* Asserts that call fails with err, produces no action and changes
 * nothing observable. */
#define UNCHANGED(e, call, err)                                                \
	do {                                                                   \
		struct view v0_, v1_;                                          \
		look((e), &v0_);                                               \
		FAILS(call, err);                                              \
		expect_none(e);                                                \
		look((e), &v1_);                                               \
		expect_same(&v0_, &v1_, #call);                                \
	} while (0)

/*
 * The mode-independent surface.
 */

Test(engine, new_rejects_unknown_mode)
{
	struct engine *e = (struct engine *)&e;

	FAILS(engine_new((enum engine_mode)7, 1, 1, &e), E_INVAL);
	cr_assert_eq(e, (struct engine *)&e, "out-parameter written on error");
}

Test(engine, new_engine_is_empty)
{
	struct engine *e = mk(ENGINE_COUNTED, 3, 2);
	size_t n = 99;

	cr_assert_eq(engine_mode(e), ENGINE_COUNTED);
	cr_assert_eq(engine_in_progress(e), 0);
	cr_assert_eq(engine_sent_count(e, 0), 0);
	cr_assert_eq(engine_sent_count(e, 1), 0);
	cr_assert_eq(engine_delivered_count(e, 2), 0);
	engine_actions(e, &n);
	cr_assert_eq(n, 0);
	cr_assert_eq(state_of(e, "s"), -1);
	engine_free(e);

	e = mk(ENGINE_CLASSIC, 0, 0);
	cr_assert_eq(engine_mode(e), ENGINE_CLASSIC);
	engine_free(e);
	engine_free(NULL); /* accepted, like free() */
}

/*
 * engine_new() sizes its per-channel arrays as n + 1 elements; for SIZE_MAX
 * that wrapped to calloc(0, ...) and "succeeded" with arrays every later
 * event overflowed.  It must refuse such counts.
 */
Test(engine, new_rejects_channel_count_that_overflows)
{
	struct engine *e = NULL;
	int rv = engine_new(ENGINE_CLASSIC, SIZE_MAX, 1, &e);

	if (rv == 0)
		engine_free(e);
	cr_assert_neq(rv, 0, "engine_new(SIZE_MAX incoming) succeeded");

	e = NULL;
	rv = engine_new(ENGINE_CLASSIC, 1, SIZE_MAX, &e);
	if (rv == 0)
		engine_free(e);
	cr_assert_neq(rv, 0, "engine_new(SIZE_MAX outgoing) succeeded");
}

Test(engine, id_valid)
{
	char buf[ENGINE_ID_MAX + 2];

	cr_assert_eq(engine_id_valid("a"), 1);
	cr_assert_eq(engine_id_valid("p0:17"), 1);
	cr_assert_eq(engine_id_valid("!~{}#\"'"), 1);
	cr_assert_eq(engine_id_valid(id_of_len(buf, ENGINE_ID_MAX)), 1);
	cr_assert_eq(engine_id_valid(id_of_len(buf, ENGINE_ID_MAX + 1)), 0);
	cr_assert_eq(engine_id_valid(NULL), 0);
	for (size_t i = 0; i < NBAD; i++)
		cr_assert_eq(engine_id_valid(bad_ids[i]), 0, "id %zu", i);
}

Test(engine, sent_numbers_each_channel_from_one)
{
	struct engine *e = mk(ENGINE_CLASSIC, 1, 3);
	uint64_t seq = 0;

	OK(engine_sent(e, 0, &seq));
	cr_assert_eq(seq, 1);
	OK(engine_sent(e, 0, &seq));
	cr_assert_eq(seq, 2);
	OK(engine_sent(e, 2, &seq));
	cr_assert_eq(seq, 1);
	OK(engine_sent(e, 0, NULL));
	expect_none(e);
	cr_assert_eq(engine_sent_count(e, 0), 3);
	cr_assert_eq(engine_sent_count(e, 1), 0);
	cr_assert_eq(engine_sent_count(e, 2), 1);
	engine_free(e);
}

Test(engine, sent_on_missing_channel)
{
	struct engine *e = mk(ENGINE_CLASSIC, 1, 2);
	uint64_t seq = 77;

	send_n(e, 1, 2);
	UNCHANGED(e, engine_sent(e, 2, &seq), E_NOCHAN);
	UNCHANGED(e, engine_sent(e, SIZE_MAX, &seq), E_NOCHAN);
	UNCHANGED(e, engine_sent(e, 2, NULL), E_NOCHAN);
	cr_assert_eq(seq, 77, "ret_seq written on error");
	cr_assert_eq(engine_sent_count(e, 1), 2);
	/* Counts of channels that do not exist read as zero. */
	cr_assert_eq(engine_sent_count(e, 2), 0);
	engine_free(e);

	e = mk(ENGINE_COUNTED, 1, 0);
	UNCHANGED(e, engine_sent(e, 0, &seq), E_NOCHAN);
	engine_free(e);
}

Test(engine, delivered_on_missing_channel)
{
	struct engine *e = mk(ENGINE_COUNTED, 2, 1);

	OK(engine_initiate(e, "A"));
	UNCHANGED(e, engine_delivered(e, 2, 1), E_NOCHAN);
	UNCHANGED(e, engine_delivered(e, SIZE_MAX, 1), E_NOCHAN);
	cr_assert_eq(engine_delivered_count(e, 2), 0);
	/* The snapshot still records real channels, from m = 0. */
	deliver(e, 1, 1);
	EXPECT(e, REC("A", 1, 1));
	engine_free(e);

	e = mk(ENGINE_CLASSIC, 0, 1);
	UNCHANGED(e, engine_delivered(e, 0, 1), E_NOCHAN);
	engine_free(e);
}

Test(engine, delivered_without_snapshot_only_counts)
{
	struct engine *e = mk(ENGINE_CLASSIC, 2, 1);

	deliver(e, 0, 1);
	expect_none(e);
	deliver(e, 0, 2);
	deliver(e, 1, 1);
	expect_none(e);
	cr_assert_eq(engine_delivered_count(e, 0), 2);
	cr_assert_eq(engine_delivered_count(e, 1), 1);
	cr_assert_eq(engine_delivered_count(e, 5), 0);
	engine_free(e);
}

Test(engine, queries_of_unknown_ids_leave_out_parameters)
{
	struct engine *e = mk(ENGINE_CLASSIC, 1, 1);
	enum engine_snap_state st = ENGINE_S_ABORTED;
	size_t open = 42;

	OK(engine_initiate(e, "known"));
	FAILS(engine_state(e, "unknown", &st), E_NOENT);
	FAILS(engine_state(e, "", &st), E_NOENT);
	FAILS(engine_state(e, "bad id", &st), E_NOENT);
	FAILS(engine_state(e, "know", &st), E_NOENT);
	FAILS(engine_state(e, "known2", &st), E_NOENT);
	cr_assert_eq(st, ENGINE_S_ABORTED);
	FAILS(engine_channels_open(e, "unknown", &open), E_NOENT);
	FAILS(engine_channels_open(e, "", &open), E_NOENT);
	cr_assert_eq(open, 42);
	OK(engine_state(e, "known", &st));
	cr_assert_eq(st, ENGINE_S_REQUESTED);
	OK(engine_channels_open(e, "known", &open));
	cr_assert_eq(open, 1);
	engine_free(e);
}

Test(engine, initiate_keeps_a_copy_of_the_id)
{
	struct engine *e = mk(ENGINE_CLASSIC, 1, 1);
	char buf[16] = "temp-id";
	size_t n;
	const struct engine_action *a;

	OK(engine_initiate(e, buf));
	a = engine_actions(e, &n);
	cr_assert_eq(n, 1);
	cr_assert_neq(a[0].snap, buf, "the action borrows the caller's id");
	strcpy(buf, "other");
	cr_assert_str_eq(a[0].snap, "temp-id");
	cr_assert_eq(state_of(e, "temp-id"), ENGINE_S_REQUESTED);
	cr_assert_eq(state_of(e, "other"), -1);
	engine_free(e);
}

Test(engine, ids_are_compared_exactly)
{
	struct engine *e = mk(ENGINE_CLASSIC, 1, 1);

	OK(engine_initiate(e, "s1"));
	OK(engine_initiate(e, "s10"));
	OK(engine_initiate(e, "s"));
	OK(engine_initiate(e, "S1"));
	cr_assert_eq(engine_in_progress(e), 4);
	OK(engine_marker(e, 0, "s1", 0));
	EXPECT(e, DONE("s1", 0, 0, 0, 0));
	cr_assert_eq(open_of(e, "s1"), 0);
	cr_assert_eq(open_of(e, "s10"), 1);
	cr_assert_eq(open_of(e, "s"), 1);
	cr_assert_eq(open_of(e, "S1"), 1);
	engine_free(e);
}

Test(engine, actions_are_cleared_by_the_next_event)
{
	struct engine *e = mk(ENGINE_CLASSIC, 1, 1);

	OK(engine_initiate(e, "A"));
	EXPECT(e, REQ("A"));
	OK(engine_sent(e, 0, NULL));
	expect_none(e);
	OK(engine_initiate(e, "B"));
	EXPECT(e, REQ("B"));
	FAILS(engine_initiate(e, "B"), E_EXIST);
	expect_none(e);
	OK(engine_delivered(e, 0, 1));
	EXPECT(e, REC("A", 0, 1), REC("B", 0, 1));
	OK(engine_abort(e, "A"));
	expect_none(e);
	engine_free(e);
}

/*
 * unknown -> REQUESTED by engine_initiate().
 */

BOTH_MODES(initiate_requests_state)
{
	struct engine *e = mk(mode, 2, 3);

	cr_assert_eq(engine_mode(e), mode);
	OK(engine_initiate(e, "p0:1"));
	EXPECT(e, REQ("p0:1"));
	cr_assert_eq(state_of(e, "p0:1"), ENGINE_S_REQUESTED);
	cr_assert_eq(open_of(e, "p0:1"), 2);
	cr_assert_eq(engine_in_progress(e), 1);
	engine_free(e);
}

BOTH_MODES(initiate_accepts_longest_id)
{
	struct engine *e = mk(mode, 1, 1);
	char id[ENGINE_ID_MAX + 1];

	id_of_len(id, ENGINE_ID_MAX);
	OK(engine_initiate(e, id));
	EXPECT(e, REQ(id));
	cr_assert_eq(state_of(e, id), ENGINE_S_REQUESTED);
	engine_free(e);
}

BOTH_MODES(initiate_rejects_invalid_ids)
{
	struct engine *e = mk(mode, 1, 1);
	char id[256];

	OK(engine_initiate(e, "A"));
	for (size_t i = 0; i < NBAD; i++)
		UNCHANGED(e, engine_initiate(e, bad_ids[i]), E_INVAL);
	UNCHANGED(e, engine_initiate(e, id_of_len(id, ENGINE_ID_MAX + 1)),
	          E_INVAL);
	UNCHANGED(e, engine_initiate(e, id_of_len(id, 200)), E_INVAL);
	UNCHANGED(e, engine_initiate(e, NULL), E_INVAL);
	cr_assert_eq(engine_in_progress(e), 1);
	engine_free(e);
}

BOTH_MODES(initiate_twice_is_eexist)
{
	struct engine *e = mk(mode, 1, 1);

	OK(engine_initiate(e, "A"));
	UNCHANGED(e, engine_initiate(e, "A"), E_EXIST);
	OK(engine_state_recorded(e, "A"));
	UNCHANGED(e, engine_initiate(e, "A"), E_EXIST);
	OK(engine_marker(e, 0, "A", 0));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	UNCHANGED(e, engine_initiate(e, "A"), E_EXIST);
	/* A snapshot started by a marker is known just the same. */
	OK(engine_marker(e, 0, "B", 0));
	UNCHANGED(e, engine_initiate(e, "B"), E_EXIST);
	engine_free(e);
}

/*
 * unknown -> REQUESTED by a first marker.
 */

BOTH_MODES(first_marker_starts_snapshot_and_records_channel_empty)
{
	struct engine *e = mk(mode, 3, 1);

	deliver(e, 0, 1);
	deliver(e, 1, 1);
	deliver(e, 1, 2);
	OK(engine_marker(e, 1, "p2:7", 2));
	EXPECT(e, REQ("p2:7"), DONE("p2:7", 1, 2, 2, 0));
	cr_assert_eq(state_of(e, "p2:7"), ENGINE_S_REQUESTED);
	cr_assert_eq(open_of(e, "p2:7"), 2);
	cr_assert_eq(engine_in_progress(e), 1);

	/* The other channels record from their own m; the marker's does
	 * not record at all. */
	deliver(e, 0, 2);
	EXPECT(e, REC("p2:7", 0, 2));
	deliver(e, 2, 1);
	EXPECT(e, REC("p2:7", 2, 1));
	deliver(e, 1, 3);
	expect_none(e);
	OK(engine_marker(e, 0, "p2:7", 2));
	EXPECT(e, DONE("p2:7", 0, 1, 2, 1));
	OK(engine_marker(e, 2, "p2:7", 1));
	EXPECT(e, DONE("p2:7", 2, 0, 1, 1));
	/* Every channel is done but the state is not in yet. */
	cr_assert_eq(state_of(e, "p2:7"), ENGINE_S_REQUESTED);
	cr_assert_eq(open_of(e, "p2:7"), 0);
	cr_assert_eq(engine_in_progress(e), 1);
	engine_free(e);
}

BOTH_MODES(marker_accepts_longest_id)
{
	struct engine *e = mk(mode, 1, 1);
	char id[ENGINE_ID_MAX + 1];

	id_of_len(id, ENGINE_ID_MAX);
	OK(engine_marker(e, 0, id, 0));
	EXPECT(e, REQ(id), DONE(id, 0, 0, 0, 0));
	engine_free(e);
}

BOTH_MODES(marker_rejects_invalid_ids)
{
	struct engine *e = mk(mode, 2, 1);
	char id[ENGINE_ID_MAX + 2];

	OK(engine_initiate(e, "A"));
	for (size_t i = 0; i < NBAD; i++)
		UNCHANGED(e, engine_marker(e, 0, bad_ids[i], 0), E_INVAL);
	UNCHANGED(e, engine_marker(e, 0, id_of_len(id, ENGINE_ID_MAX + 1), 0),
	          E_INVAL);
	UNCHANGED(e, engine_marker(e, 1, NULL, 0), E_INVAL);
	cr_assert_eq(engine_in_progress(e), 1);
	cr_assert_eq(open_of(e, "A"), 2);
	engine_free(e);
}

BOTH_MODES(marker_on_missing_channel_is_enochan)
{
	struct engine *e = mk(mode, 2, 1);

	/* Neither starts an unknown snapshot ... */
	UNCHANGED(e, engine_marker(e, 2, "A", 0), E_NOCHAN);
	UNCHANGED(e, engine_marker(e, SIZE_MAX, "A", 0), E_NOCHAN);
	cr_assert_eq(state_of(e, "A"), -1);
	cr_assert_eq(engine_in_progress(e), 0);
	/* ... nor touches a live one. */
	OK(engine_initiate(e, "A"));
	UNCHANGED(e, engine_marker(e, 2, "A", 0), E_NOCHAN);
	cr_assert_eq(open_of(e, "A"), 2);
	engine_free(e);

	e = mk(mode, 0, 1);
	UNCHANGED(e, engine_marker(e, 0, "A", 0), E_NOCHAN);
	engine_free(e);
}

BOTH_MODES(duplicate_marker_is_edup)
{
	struct engine *e = mk(mode, 2, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_marker(e, 0, "A", 0));
	EXPECT(e, DONE("A", 0, 0, 0, 0));
	UNCHANGED(e, engine_marker(e, 0, "A", 0), E_DUP);
	UNCHANGED(e, engine_marker(e, 0, "A", 9), E_DUP);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	cr_assert_eq(open_of(e, "A"), 1);
	/* The channel stays closed: nothing is recorded on it. */
	deliver(e, 0, 1);
	expect_none(e);

	OK(engine_state_recorded(e, "A"));
	OK(engine_marker(e, 1, "A", 0));
	EXPECT(e, DONE("A", 1, 0, 0, 0), PART("A"));
	/* A complete snapshot has had every marker: any more are dups. */
	UNCHANGED(e, engine_marker(e, 0, "A", 0), E_DUP);
	UNCHANGED(e, engine_marker(e, 1, "A", 0), E_DUP);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	engine_free(e);
}

BOTH_MODES(duplicate_first_marker_is_edup)
{
	struct engine *e = mk(mode, 2, 1);

	OK(engine_marker(e, 1, "B", 0));
	EXPECT(e, REQ("B"), DONE("B", 1, 0, 0, 0));
	UNCHANGED(e, engine_marker(e, 1, "B", 0), E_DUP);
	cr_assert_eq(engine_in_progress(e), 1);
	engine_free(e);
}

/*
 * REQUESTED -> RECORDED by engine_state_recorded().
 */

BOTH_MODES(state_recorded_sends_a_marker_on_every_channel)
{
	struct engine *e = mk(mode, 1, 3);

	send_n(e, 0, 2);
	send_n(e, 2, 1);
	OK(engine_initiate(e, "A"));
	/* Sent after the request but before the reply: before the cut. */
	send_n(e, 1, 1);
	send_n(e, 0, 1);
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 3), MARK("A", 1, 1), MARK("A", 2, 1));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_RECORDED);
	cr_assert_eq(open_of(e, "A"), 1);
	cr_assert_eq(engine_in_progress(e), 1);
	/* Sent after the reply: numbered on, not part of n. */
	send_n(e, 0, 1);
	cr_assert_eq(engine_sent_count(e, 0), 4);
	engine_free(e);
}

BOTH_MODES(state_recorded_errors)
{
	struct engine *e = mk(mode, 1, 1);
	char id[ENGINE_ID_MAX + 2];

	UNCHANGED(e, engine_state_recorded(e, "A"), E_NOENT);
	OK(engine_initiate(e, "A"));
	UNCHANGED(e, engine_state_recorded(e, "B"), E_NOENT);
	UNCHANGED(e, engine_state_recorded(e, ""), E_INVAL);
	UNCHANGED(e, engine_state_recorded(e, "A B"), E_INVAL);
	UNCHANGED(e, engine_state_recorded(e, NULL), E_INVAL);
	UNCHANGED(e, engine_state_recorded(e, id_of_len(id, 65)),
	          E_INVAL);
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 0));
	/* Twice: no second round of markers. */
	UNCHANGED(e, engine_state_recorded(e, "A"), E_STATE);
	OK(engine_marker(e, 0, "A", 0));
	EXPECT(e, DONE("A", 0, 0, 0, 0), PART("A"));
	UNCHANGED(e, engine_state_recorded(e, "A"), E_STATE);
	engine_free(e);
}

/*
 * RECORDED -> COMPLETE.
 */

BOTH_MODES(last_marker_completes_part)
{
	struct engine *e = mk(mode, 2, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 0));
	OK(engine_marker(e, 1, "A", 0));
	EXPECT(e, DONE("A", 1, 0, 0, 0));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_RECORDED);
	cr_assert_eq(open_of(e, "A"), 1);
	OK(engine_marker(e, 0, "A", 0));
	EXPECT(e, DONE("A", 0, 0, 0, 0), PART("A"));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	cr_assert_eq(open_of(e, "A"), 0);
	cr_assert_eq(engine_in_progress(e), 0);
	engine_free(e);
}

BOTH_MODES(state_recorded_completes_when_channels_already_done)
{
	struct engine *e = mk(mode, 2, 1);

	deliver(e, 0, 1);
	deliver(e, 0, 2);
	deliver(e, 1, 1);
	send_n(e, 0, 2);
	OK(engine_initiate(e, "A"));
	deliver(e, 0, 3);
	EXPECT(e, REC("A", 0, 3));
	OK(engine_marker(e, 0, "A", 3));
	EXPECT(e, DONE("A", 0, 2, 3, 1));
	OK(engine_marker(e, 1, "A", 1));
	EXPECT(e, DONE("A", 1, 1, 1, 0));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	cr_assert_eq(open_of(e, "A"), 0);
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 2), PART("A"));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	cr_assert_eq(engine_in_progress(e), 0);
	engine_free(e);
}

BOTH_MODES(messages_between_cut_and_marker_are_recorded)
{
	struct engine *e = mk(mode, 1, 1);

	deliver(e, 0, 1);
	OK(engine_initiate(e, "A"));
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 0));
	deliver(e, 0, 3);
	EXPECT(e, REC("A", 0, 3));
	OK(engine_marker(e, 0, "A", 3));
	EXPECT(e, DONE("A", 0, 1, 3, 2), PART("A"));
	/* After the marker nothing is recorded any more. */
	deliver(e, 0, 4);
	expect_none(e);
	engine_free(e);
}

BOTH_MODES(no_incoming_channels_complete_at_state_recorded)
{
	struct engine *e = mk(mode, 0, 2);

	send_n(e, 1, 3);
	OK(engine_initiate(e, "A"));
	EXPECT(e, REQ("A"));
	cr_assert_eq(open_of(e, "A"), 0);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	cr_assert_eq(engine_in_progress(e), 1);
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 0), MARK("A", 1, 3), PART("A"));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	cr_assert_eq(engine_in_progress(e), 0);
	engine_free(e);
}

BOTH_MODES(no_channels_at_all_complete_at_state_recorded)
{
	struct engine *e = mk(mode, 0, 0);

	OK(engine_initiate(e, "A"));
	EXPECT(e, REQ("A"));
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, PART("A"));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	engine_free(e);
}

BOTH_MODES(marker_below_m_closes_at_once)
{
	/* m > n (a receive without its send) cannot happen on FIFO
	 * channels; the engine closes the channel and reports both, so that
	 * the audit can flag it. */
	struct engine *e = mk(mode, 1, 1);

	deliver(e, 0, 1);
	deliver(e, 0, 2);
	deliver(e, 0, 3);
	OK(engine_marker(e, 0, "A", 1));
	EXPECT(e, REQ("A"), DONE("A", 0, 3, 1, 0));
	engine_free(e);
}

/*
 * REQUESTED, RECORDED -> ABORTED.
 */

BOTH_MODES(abort_requested)
{
	struct engine *e = mk(mode, 2, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_abort(e, "A"));
	expect_none(e);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_ABORTED);
	cr_assert_eq(engine_in_progress(e), 0);
	/* An aborted snapshot records nothing and takes no markers. */
	deliver(e, 0, 1);
	expect_none(e);
	UNCHANGED(e, engine_marker(e, 0, "A", 0), E_STATE);
	UNCHANGED(e, engine_state_recorded(e, "A"), E_STATE);
	UNCHANGED(e, engine_abort(e, "A"), E_STATE);
	UNCHANGED(e, engine_initiate(e, "A"), E_EXIST);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_ABORTED);
	engine_free(e);
}

BOTH_MODES(abort_recorded)
{
	struct engine *e = mk(mode, 2, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded(e, "A"));
	OK(engine_marker(e, 0, "A", 0));
	deliver(e, 1, 1);
	EXPECT(e, REC("A", 1, 1));
	OK(engine_abort(e, "A"));
	expect_none(e);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_ABORTED);
	cr_assert_eq(engine_in_progress(e), 0);
	deliver(e, 1, 2);
	expect_none(e);
	/* Even the marker that would have completed it is refused. */
	UNCHANGED(e, engine_marker(e, 1, "A", 2), E_STATE);
	UNCHANGED(e, engine_marker(e, 0, "A", 0), E_STATE);
	engine_free(e);
}

BOTH_MODES(abort_errors)
{
	struct engine *e = mk(mode, 1, 1);

	UNCHANGED(e, engine_abort(e, "A"), E_NOENT);
	UNCHANGED(e, engine_abort(e, ""), E_INVAL);
	UNCHANGED(e, engine_abort(e, "a b"), E_INVAL);
	UNCHANGED(e, engine_abort(e, NULL), E_INVAL);
	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded(e, "A"));
	OK(engine_marker(e, 0, "A", 0));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	/* A complete part cannot be taken back. */
	UNCHANGED(e, engine_abort(e, "A"), E_STATE);
	engine_free(e);
}

BOTH_MODES(abort_one_of_several)
{
	struct engine *e = mk(mode, 1, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_initiate(e, "B"));
	OK(engine_initiate(e, "C"));
	OK(engine_abort(e, "B"));
	cr_assert_eq(engine_in_progress(e), 2);
	deliver(e, 0, 1);
	EXPECT(e, REC("A", 0, 1), REC("C", 0, 1));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	cr_assert_eq(state_of(e, "C"), ENGINE_S_REQUESTED);
	engine_free(e);
}

/*
 * COMPLETE, ABORTED -> unknown by engine_forget().
 */

BOTH_MODES(forget_complete_then_marker_starts_afresh)
{
	struct engine *e = mk(mode, 2, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded(e, "A"));
	OK(engine_marker(e, 0, "A", 0));
	OK(engine_marker(e, 1, "A", 0));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	OK(engine_forget(e, "A"));
	expect_none(e);
	cr_assert_eq(state_of(e, "A"), -1);
	FAILS(engine_channels_open(e, "A", &(size_t){0}), E_NOENT);
	cr_assert_eq(engine_in_progress(e), 0);

	deliver(e, 0, 1);
	expect_none(e);
	OK(engine_marker(e, 1, "A", 0));
	EXPECT(e, REQ("A"), DONE("A", 1, 0, 0, 0));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	cr_assert_eq(open_of(e, "A"), 1);
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	engine_free(e);
}

BOTH_MODES(forget_aborted_then_initiate_again)
{
	struct engine *e = mk(mode, 1, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_abort(e, "A"));
	OK(engine_forget(e, "A"));
	expect_none(e);
	cr_assert_eq(state_of(e, "A"), -1);
	OK(engine_initiate(e, "A"));
	EXPECT(e, REQ("A"));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	cr_assert_eq(engine_in_progress(e), 1);
	engine_free(e);
}

BOTH_MODES(forget_errors)
{
	struct engine *e = mk(mode, 1, 1);

	UNCHANGED(e, engine_forget(e, "A"), E_NOENT);
	UNCHANGED(e, engine_forget(e, ""), E_INVAL);
	UNCHANGED(e, engine_forget(e, "\x01"), E_INVAL);
	UNCHANGED(e, engine_forget(e, NULL), E_INVAL);
	OK(engine_initiate(e, "A"));
	UNCHANGED(e, engine_forget(e, "A"), E_STATE);
	OK(engine_state_recorded(e, "A"));
	UNCHANGED(e, engine_forget(e, "A"), E_STATE);
	OK(engine_marker(e, 0, "A", 0));
	OK(engine_forget(e, "A"));
	UNCHANGED(e, engine_forget(e, "A"), E_NOENT);
	engine_free(e);
}

BOTH_MODES(forget_keeps_the_others_in_order)
{
	struct engine *e = mk(mode, 1, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_initiate(e, "B"));
	OK(engine_initiate(e, "C"));
	OK(engine_initiate(e, "D"));
	OK(engine_abort(e, "B"));
	OK(engine_forget(e, "B"));
	deliver(e, 0, 1);
	EXPECT(e, REC("A", 0, 1), REC("C", 0, 1), REC("D", 0, 1));
	OK(engine_abort(e, "A"));
	OK(engine_forget(e, "A"));
	OK(engine_initiate(e, "B"));
	deliver(e, 0, 2);
	EXPECT(e, REC("C", 0, 2), REC("D", 0, 2), REC("B", 0, 2));
	OK(engine_marker(e, 0, "B", 2));
	EXPECT(e, DONE("B", 0, 1, 2, 1));
	engine_free(e);
}

/*
 * "An event that fails changes nothing."
 */

BOTH_MODES(failed_events_change_nothing)
{
	struct engine *e = mk(mode, 2, 2);
	uint64_t seq = 1234;

	send_n(e, 0, 2);
	deliver(e, 0, 1);
	OK(engine_initiate(e, "A"));
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	OK(engine_marker(e, 1, "B", 0));
	EXPECT(e, REQ("B"), DONE("B", 1, 0, 0, 0));
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 2), MARK("A", 1, 0));

	UNCHANGED(e, engine_initiate(e, "A"), E_EXIST);
	UNCHANGED(e, engine_initiate(e, "B"), E_EXIST);
	UNCHANGED(e, engine_initiate(e, ""), E_INVAL);
	UNCHANGED(e, engine_sent(e, 2, &seq), E_NOCHAN);
	UNCHANGED(e, engine_delivered(e, 2, 3), E_NOCHAN);
	UNCHANGED(e, engine_marker(e, 2, "A", 0), E_NOCHAN);
	UNCHANGED(e, engine_marker(e, 2, "Z", 0), E_NOCHAN);
	UNCHANGED(e, engine_marker(e, 0, "bad id", 0), E_INVAL);
	UNCHANGED(e, engine_marker(e, 1, "B", 5), E_DUP);
	UNCHANGED(e, engine_state_recorded(e, "A"), E_STATE);
	UNCHANGED(e, engine_state_recorded(e, "Z"), E_NOENT);
	UNCHANGED(e, engine_state_recorded(e, ""), E_INVAL);
	UNCHANGED(e, engine_abort(e, "Z"), E_NOENT);
	UNCHANGED(e, engine_abort(e, " "), E_INVAL);
	UNCHANGED(e, engine_forget(e, "A"), E_STATE);
	UNCHANGED(e, engine_forget(e, "B"), E_STATE);
	UNCHANGED(e, engine_forget(e, "Z"), E_NOENT);
	cr_assert_eq(seq, 1234);

	/* And the run goes on exactly as if they had not happened. */
	deliver(e, 0, 3);
	EXPECT(e, REC("A", 0, 3), REC("B", 0, 3));
	OK(engine_marker(e, 0, "A", 3));
	EXPECT(e, DONE("A", 0, 1, 3, 2));
	OK(engine_marker(e, 1, "A", 0));
	EXPECT(e, DONE("A", 1, 0, 0, 0), PART("A"));
	OK(engine_state_recorded(e, "B"));
	EXPECT(e, MARK("B", 0, 2), MARK("B", 1, 0));
	OK(engine_marker(e, 0, "B", 3));
	EXPECT(e, DONE("B", 0, 2, 3, 1), PART("B"));
	engine_free(e);
}

/*
 * Concurrent snapshots that share channels.
 */

BOTH_MODES(three_concurrent_snapshots_share_channels)
{
	struct engine *e = mk(mode, 2, 1);

	OK(engine_initiate(e, "A")); /* A: m = (0, 0) */
	EXPECT(e, REQ("A"));
	deliver(e, 0, 1);
	EXPECT(e, REC("A", 0, 1));
	send_n(e, 0, 1);
	OK(engine_marker(e, 0, "B", 1)); /* B: m = (1, 0) */
	EXPECT(e, REQ("B"), DONE("B", 0, 1, 1, 0));
	cr_assert_eq(engine_in_progress(e), 2);
	deliver(e, 1, 1);
	EXPECT(e, REC("A", 1, 1), REC("B", 1, 1));
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 1));
	send_n(e, 0, 1);
	OK(engine_marker(e, 0, "A", 1));
	EXPECT(e, DONE("A", 0, 0, 1, 1));
	OK(engine_initiate(e, "C")); /* C: m = (1, 1) */
	EXPECT(e, REQ("C"));
	cr_assert_eq(engine_in_progress(e), 3);

	/* Channel 0 is closed for A and B, open for C only. */
	deliver(e, 0, 2);
	EXPECT(e, REC("C", 0, 2));
	/* Channel 1 is open for all three, recorded in creation order. */
	deliver(e, 1, 2);
	EXPECT(e, REC("A", 1, 2), REC("B", 1, 2), REC("C", 1, 2));
	OK(engine_state_recorded(e, "B"));
	EXPECT(e, MARK("B", 0, 2));
	OK(engine_marker(e, 1, "A", 2));
	EXPECT(e, DONE("A", 1, 0, 2, 2), PART("A"));
	cr_assert_eq(engine_in_progress(e), 2);
	OK(engine_marker(e, 0, "C", 2));
	EXPECT(e, DONE("C", 0, 1, 2, 1));
	deliver(e, 1, 3);
	EXPECT(e, REC("B", 1, 3), REC("C", 1, 3));
	OK(engine_marker(e, 1, "B", 3));
	EXPECT(e, DONE("B", 1, 0, 3, 3), PART("B"));
	OK(engine_state_recorded(e, "C"));
	EXPECT(e, MARK("C", 0, 2));
	cr_assert_eq(state_of(e, "C"), ENGINE_S_RECORDED);
	OK(engine_marker(e, 1, "C", 3));
	EXPECT(e, DONE("C", 1, 1, 3, 2), PART("C"));

	cr_assert_eq(engine_in_progress(e), 0);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	cr_assert_eq(state_of(e, "B"), ENGINE_S_COMPLETE);
	cr_assert_eq(state_of(e, "C"), ENGINE_S_COMPLETE);
	deliver(e, 1, 4);
	expect_none(e);
	engine_free(e);
}

BOTH_MODES(markers_of_two_snapshots_interleave)
{
	/* Two initiators' markers cross: each snapshot closes its own
	 * channel only, however the markers interleave. */
	struct engine *e = mk(mode, 2, 2);

	OK(engine_marker(e, 0, "p1:1", 0));
	EXPECT(e, REQ("p1:1"), DONE("p1:1", 0, 0, 0, 0));
	OK(engine_marker(e, 1, "p2:1", 0));
	EXPECT(e, REQ("p2:1"), DONE("p2:1", 1, 0, 0, 0));
	deliver(e, 1, 1);
	EXPECT(e, REC("p1:1", 1, 1));
	deliver(e, 0, 1);
	EXPECT(e, REC("p2:1", 0, 1));
	OK(engine_state_recorded(e, "p2:1"));
	EXPECT(e, MARK("p2:1", 0, 0), MARK("p2:1", 1, 0));
	OK(engine_state_recorded(e, "p1:1"));
	EXPECT(e, MARK("p1:1", 0, 0), MARK("p1:1", 1, 0));
	OK(engine_marker(e, 0, "p2:1", 1));
	EXPECT(e, DONE("p2:1", 0, 0, 1, 1), PART("p2:1"));
	cr_assert_eq(state_of(e, "p1:1"), ENGINE_S_RECORDED);
	OK(engine_marker(e, 1, "p1:1", 1));
	EXPECT(e, DONE("p1:1", 1, 0, 1, 1), PART("p1:1"));
	engine_free(e);
}

BOTH_MODES(many_snapshots_in_flight)
{
	enum { K = 20 };
	struct engine *e = mk(mode, 1, 1);
	char ids[K][16];
	size_t n;
	const struct engine_action *a;

	for (int i = 0; i < K; i++) {
		snprintf(ids[i], sizeof(ids[i]), "s%02d", i);
		OK(engine_initiate(e, ids[i]));
		OK(engine_state_recorded(e, ids[i]));
	}
	cr_assert_eq(engine_in_progress(e), K);
	deliver(e, 0, 1);
	a = engine_actions(e, &n);
	cr_assert_eq(n, K);
	for (int i = 0; i < K; i++) {
		cr_assert_eq(a[i].kind, ENGINE_RECORD_MESSAGE);
		cr_assert_str_eq(a[i].snap, ids[i]);
		cr_assert_eq(a[i].seq, 1);
	}
	for (int i = K - 1; i >= 0; i--) {
		OK(engine_marker(e, 0, ids[i], 1));
		EXPECT(e, DONE(ids[i], 0, 0, 1, 1), PART(ids[i]));
	}
	cr_assert_eq(engine_in_progress(e), 0);
	engine_free(e);
}

/*
 * Marker modes: a marker that overtakes older messages.
 */

Test(engine_counted, overtaking_marker_keeps_channel_open_until_n)
{
	struct engine *e = mk(ENGINE_COUNTED, 2, 1);

	/* The marker overtook messages 1..3 on channel 0. */
	OK(engine_marker(e, 0, "A", 3));
	EXPECT(e, REQ("A"));
	cr_assert_eq(open_of(e, "A"), 2);
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 0));
	OK(engine_marker(e, 1, "A", 0));
	EXPECT(e, DONE("A", 1, 0, 0, 0));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_RECORDED);
	cr_assert_eq(open_of(e, "A"), 1);
	/* A second marker on the still-open channel is a duplicate. */
	UNCHANGED(e, engine_marker(e, 0, "A", 0), E_DUP);

	deliver(e, 0, 1);
	EXPECT(e, REC("A", 0, 1));
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	cr_assert_eq(open_of(e, "A"), 1);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_RECORDED);
	deliver(e, 0, 3);
	EXPECT(e, REC("A", 0, 3), DONE("A", 0, 0, 3, 3), PART("A"));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	deliver(e, 0, 4);
	expect_none(e);
	engine_free(e);
}

Test(engine_counted, messages_after_n_are_not_recorded)
{
	struct engine *e = mk(ENGINE_COUNTED, 1, 1);

	deliver(e, 0, 1);
	OK(engine_initiate(e, "A")); /* m = 1 */
	OK(engine_state_recorded(e, "A"));
	OK(engine_marker(e, 0, "A", 3));
	expect_none(e);
	/* 4 was sent after the sender recorded and overtook 2 and 3. */
	deliver(e, 0, 4);
	expect_none(e);
	cr_assert_eq(open_of(e, "A"), 1);
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	deliver(e, 0, 5);
	expect_none(e);
	cr_assert_eq(open_of(e, "A"), 1);
	deliver(e, 0, 3);
	EXPECT(e, REC("A", 0, 3), DONE("A", 0, 1, 3, 2), PART("A"));
	engine_free(e);
}

Test(engine_counted, only_messages_within_m_n_count_at_the_marker)
{
	/* Recorded before the marker: 2 (within m+1..n) and 3 (sent after
	 * the cut, it overtook the marker).  Only 2 counts, and it is enough
	 * for m = 1, n = 2. */
	struct engine *e = mk(ENGINE_COUNTED, 2, 1);

	deliver(e, 0, 1);
	OK(engine_initiate(e, "A")); /* m = (1, 0) */
	OK(engine_state_recorded(e, "A"));
	deliver(e, 0, 2);
	deliver(e, 0, 3);
	EXPECT(e, REC("A", 0, 3));
	OK(engine_marker(e, 0, "A", 2));
	EXPECT(e, DONE("A", 0, 1, 2, 2));

	/* When the transport reordered application messages (4 before 1
	 * here) the run says nothing and every recorded message counts; the
	 * audit judges the result. */
	deliver(e, 1, 4);
	deliver(e, 1, 1);
	EXPECT(e, REC("A", 1, 1));
	OK(engine_marker(e, 1, "A", 2));
	EXPECT(e, DONE("A", 1, 0, 2, 2), PART("A"));
	engine_free(e);
}

Test(engine_counted, one_delivery_completes_several_snapshots)
{
	/* Three markers overtook message 1; its delivery closes and
	 * completes all three (nine actions, more than the engine's
	 * initial room). */
	struct engine *e = mk(ENGINE_COUNTED, 1, 1);
	static const char *const ids[] = {"A", "B", "C"};

	for (size_t i = 0; i < 3; i++) {
		OK(engine_marker(e, 0, ids[i], 1));
		EXPECT(e, REQ(ids[i]));
		OK(engine_state_recorded(e, ids[i]));
		EXPECT(e, MARK(ids[i], 0, 0));
	}
	deliver(e, 0, 1);
	EXPECT(e, REC("A", 0, 1), DONE("A", 0, 0, 1, 1), PART("A"),
	       REC("B", 0, 1), DONE("B", 0, 0, 1, 1), PART("B"), REC("C", 0, 1),
	       DONE("C", 0, 0, 1, 1), PART("C"));
	cr_assert_eq(count_actions(e, ENGINE_PART_COMPLETE, NULL), 3);
	cr_assert_eq(engine_in_progress(e), 0);
	engine_free(e);
}

Test(engine_counted, overtaking_only_affects_its_own_snapshot)
{
	/* On one channel, A's marker overtook message 2 while B's did not
	 * (B started after 2 was delivered).  Message 2 belongs to A only. */
	struct engine *e = mk(ENGINE_COUNTED, 1, 1);
	const struct engine_action *a;

	deliver(e, 0, 1);
	OK(engine_marker(e, 0, "A", 2)); /* m = 1, n = 2: 2 in flight */
	EXPECT(e, REQ("A"));
	OK(engine_initiate(e, "B")); /* m = 1 */
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2), DONE("A", 0, 1, 2, 1), REC("B", 0, 2));
	a = find_action(e, ENGINE_CHANNEL_DONE, "B");
	cr_assert_null(a, "B's channel closed without its marker");
	OK(engine_marker(e, 0, "B", 2));
	EXPECT(e, DONE("B", 0, 1, 2, 1));
	engine_free(e);
}

Test(engine_classic, overtaking_marker_closes_channel_early)
{
	/* The same schedule as overtaking_marker_keeps_channel_open_until_n:
	 * classic rules trust the marker's position, so the three messages
	 * it overtook are lost from the channel state. */
	struct engine *e = mk(ENGINE_CLASSIC, 2, 1);

	OK(engine_marker(e, 0, "A", 3));
	EXPECT(e, REQ("A"), DONE("A", 0, 0, 3, 0));
	cr_assert_eq(open_of(e, "A"), 1);
	OK(engine_state_recorded(e, "A"));
	EXPECT(e, MARK("A", 0, 0));
	OK(engine_marker(e, 1, "A", 0));
	EXPECT(e, DONE("A", 1, 0, 0, 0), PART("A"));
	for (uint64_t seq = 1; seq <= 3; seq++) {
		deliver(e, 0, seq);
		expect_none(e);
	}
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	engine_free(e);
}

Test(engine_classic, late_marker_records_messages_sent_after_the_cut)
{
	/* Classic rules ignore n: a message sent after the sender recorded
	 * that overtakes the marker is recorded, and the CHANNEL_DONE
	 * reports the m, n and count that let the audit notice. */
	struct engine *e = mk(ENGINE_CLASSIC, 1, 1);

	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded(e, "A"));
	deliver(e, 0, 1);
	EXPECT(e, REC("A", 0, 1));
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	OK(engine_marker(e, 0, "A", 1));
	EXPECT(e, DONE("A", 0, 0, 1, 2), PART("A"));
	engine_free(e);
}

/*
 * Counted mode, an application message sent after the sender recorded
 * (seq 2 > n = 1) overtakes the marker and is delivered after this node
 * recorded.  It is recorded -- nothing yet says it is late -- but it must
 * not count as one of the m+1 .. n messages: the channel stays open until
 * message 1, which crossed the cut, has been recorded too.  (An earlier
 * ready_to_close() counted every recorded message and closed the channel
 * at the marker, losing message 1.)  The channel state is then 2, 1, which
 * the audit flags as out of sequence: see test_audit.c.
 */
Test(engine_counted, message_overtaking_marker_does_not_count_toward_n)
{
	struct engine *e = mk(ENGINE_COUNTED, 1, 1);

	OK(engine_initiate(e, "A")); /* m = 0 */
	OK(engine_state_recorded(e, "A"));
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	OK(engine_marker(e, 0, "A", 1));
	cr_assert_null(find_action(e, ENGINE_CHANNEL_DONE, "A"),
	               "channel closed with message 1 of 1 not yet seen");
	expect_none(e);
	cr_assert_eq(open_of(e, "A"), 1);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_RECORDED);
	/* 3 was sent after the cut too, and arrives after the marker. */
	deliver(e, 0, 3);
	expect_none(e);
	deliver(e, 0, 1);
	EXPECT(e, REC("A", 0, 1), DONE("A", 0, 0, 1, 2), PART("A"));
	engine_free(e);
}

/*
 * The unaligned cut.  The state request overtakes the deliveries queued for
 * the application; m is what the application took before it recorded, and
 * the messages that had entered the down stream but were not taken come
 * back as RECORD_QUEUED ranges.
 */

/* A counted engine with the unaligned cut. */
static struct engine *
mk_un(size_t n_in, size_t n_out)
{
	struct engine *e = mk(ENGINE_COUNTED, n_in, n_out);

	cr_assert_eq(engine_cut(e), ENGINE_CUT_ALIGNED, "aligned by default");
	OK(engine_set_cut(e, ENGINE_CUT_UNALIGNED));
	expect_none(e);
	cr_assert_eq(engine_cut(e), ENGINE_CUT_UNALIGNED);
	return e;
}

/* Delivers seqs from .. to on channel in, in order. */
static void
deliver_run(struct engine *e, size_t in, uint64_t from, uint64_t to)
{
	for (uint64_t seq = from; seq <= to; seq++)
		deliver(e, in, seq);
}

/* The m_high of the CHANNEL_DONE for snap in the last event. */
static uint64_t
m_high_of(const struct engine *e, const char *snap)
{
	const struct engine_action *a =
	    find_action(e, ENGINE_CHANNEL_DONE, snap);

	cr_assert_not_null(a, "no CHANNEL_DONE for %s", snap);
	return a->m_high;
}

Test(engine_unaligned, set_cut_needs_counted_markers)
{
	struct engine *e = mk(ENGINE_CLASSIC, 1, 1);

	UNCHANGED(e, engine_set_cut(e, ENGINE_CUT_UNALIGNED), E_INVAL);
	cr_assert_eq(engine_cut(e), ENGINE_CUT_ALIGNED);
	OK(engine_set_cut(e, ENGINE_CUT_ALIGNED));
	UNCHANGED(e, engine_set_cut(e, (enum engine_cut)2), E_INVAL);
	engine_free(e);

	e = mk(ENGINE_COUNTED, 1, 1);
	UNCHANGED(e, engine_set_cut(e, (enum engine_cut) - 1), E_INVAL);
	OK(engine_set_cut(e, ENGINE_CUT_UNALIGNED));
	OK(engine_set_cut(e, ENGINE_CUT_ALIGNED));
	cr_assert_eq(engine_cut(e), ENGINE_CUT_ALIGNED);
	engine_free(e);
}

Test(engine_unaligned, set_cut_refused_while_a_snapshot_runs)
{
	struct engine *e = mk_un(1, 1);
	static const uint64_t none[1] = {0};

	OK(engine_initiate(e, "A"));
	UNCHANGED(e, engine_set_cut(e, ENGINE_CUT_ALIGNED), E_STATE);
	UNCHANGED(e, engine_set_cut(e, ENGINE_CUT_UNALIGNED), E_STATE);
	OK(engine_state_recorded_taken(e, "A", none));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_RECORDED);
	UNCHANGED(e, engine_set_cut(e, ENGINE_CUT_ALIGNED), E_STATE);
	OK(engine_marker(e, 0, "A", 0));
	EXPECT(e, DONE("A", 0, 0, 0, 0), PART("A"));
	/* Complete and aborted snapshots do not hold the cut. */
	OK(engine_initiate(e, "B"));
	OK(engine_abort(e, "B"));
	OK(engine_set_cut(e, ENGINE_CUT_ALIGNED));
	cr_assert_eq(engine_cut(e), ENGINE_CUT_ALIGNED);
	engine_free(e);
}

Test(engine_unaligned, plain_state_recorded_is_einval)
{
	struct engine *e = mk_un(1, 1);

	OK(engine_initiate(e, "A"));
	UNCHANGED(e, engine_state_recorded(e, "A"), E_INVAL);
	UNCHANGED(e, engine_state_recorded(e, "Z"), E_INVAL);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	engine_free(e);
}

Test(engine_unaligned, deliveries_must_come_in_seq_order)
{
	struct engine *e = mk_un(2, 1);

	UNCHANGED(e, engine_delivered(e, 0, 2), E_INVAL);
	UNCHANGED(e, engine_delivered(e, 0, 0), E_INVAL);
	deliver(e, 0, 1);
	UNCHANGED(e, engine_delivered(e, 0, 1), E_INVAL);
	UNCHANGED(e, engine_delivered(e, 0, 3), E_INVAL);
	UNCHANGED(e, engine_delivered(e, 2, 1), E_NOCHAN);
	deliver(e, 0, 2);
	deliver(e, 1, 1);
	cr_assert_eq(engine_delivered_count(e, 0), 2);
	cr_assert_eq(engine_delivered_count(e, 1), 1);
	engine_free(e);

	/* The aligned cut still takes any order. */
	e = mk(ENGINE_COUNTED, 1, 1);
	deliver(e, 0, 2);
	deliver(e, 0, 1);
	engine_free(e);
}

Test(engine_unaligned, queued_ranges_come_before_the_markers)
{
	struct engine *e = mk_un(3, 2);
	const uint64_t taken[3] = {1, 2, 0};

	deliver_run(e, 0, 1, 3); /* the application took 1 of 3 */
	deliver_run(e, 1, 1, 2); /* took both */
	deliver_run(e, 2, 1, 1); /* took none */
	send_n(e, 0, 2);
	OK(engine_initiate(e, "A"));
	EXPECT(e, REQ("A"));
	send_n(e, 1, 1); /* before the application recorded: in n */
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 2, 2), QUEUED("A", 2, 1, 1), MARK("A", 0, 2),
	       MARK("A", 1, 1));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_RECORDED);
	cr_assert_eq(open_of(e, "A"), 3);

	OK(engine_marker(e, 0, "A", 3));
	EXPECT(e, DONE("A", 0, 1, 3, 2));
	cr_assert_eq(m_high_of(e, "A"), 1);
	OK(engine_marker(e, 1, "A", 2));
	EXPECT(e, DONE("A", 1, 2, 2, 0));
	cr_assert_eq(m_high_of(e, "A"), 2);
	OK(engine_marker(e, 2, "A", 1));
	EXPECT(e, DONE("A", 2, 0, 1, 1), PART("A"));
	cr_assert_eq(m_high_of(e, "A"), 0);
	engine_free(e);
}

Test(engine_unaligned, taken_beyond_the_request_is_refused)
{
	struct engine *e = mk_un(2, 1);
	const uint64_t too_many[2] = {3, 0}, later[2] = {2, 2};
	const uint64_t ok[2] = {2, 1};

	deliver_run(e, 0, 1, 2);
	deliver_run(e, 1, 1, 1);
	OK(engine_initiate(e, "A"));
	/* Delivered after the request: behind it, never taken before. */
	deliver(e, 1, 2);
	EXPECT(e, REC("A", 1, 2));
	UNCHANGED(e, engine_state_recorded_taken(e, "A", too_many),
	          E_INVAL);
	UNCHANGED(e, engine_state_recorded_taken(e, "A", later), E_INVAL);
	UNCHANGED(e, engine_state_recorded_taken(e, "A", NULL), E_INVAL);
	UNCHANGED(e, engine_state_recorded_taken(e, "Z", ok), E_NOENT);
	UNCHANGED(e, engine_state_recorded_taken(e, "", ok), E_INVAL);
	UNCHANGED(e, engine_state_recorded_taken(e, NULL, ok), E_INVAL);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);

	/* The refusals changed nothing: the run goes on as if they had not
	 * happened. */
	OK(engine_state_recorded_taken(e, "A", ok));
	EXPECT(e, MARK("A", 0, 0));
	UNCHANGED(e, engine_state_recorded_taken(e, "A", ok), E_STATE);
	OK(engine_marker(e, 0, "A", 2));
	EXPECT(e, DONE("A", 0, 2, 2, 0));
	OK(engine_marker(e, 1, "A", 2));
	EXPECT(e, DONE("A", 1, 1, 2, 1), PART("A"));
	engine_free(e);
}

Test(engine_unaligned, no_incoming_channels_take_null)
{
	struct engine *e = mk_un(0, 1);

	send_n(e, 0, 2);
	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded_taken(e, "A", NULL));
	EXPECT(e, MARK("A", 0, 2), PART("A"));
	cr_assert_eq(state_of(e, "A"), ENGINE_S_COMPLETE);
	engine_free(e);
}

/* The aligned cut: taken is only checked against the m fixed at the
 * request, and the call then acts exactly as engine_state_recorded(). */
BOTH_MODES(aligned_taken_must_equal_m)
{
	struct engine *e = mk(mode, 2, 1);
	const uint64_t m[2] = {2, 0}, fewer[2] = {1, 0}, more[2] = {2, 1};

	cr_assert_eq(engine_cut(e), ENGINE_CUT_ALIGNED);
	deliver_run(e, 0, 1, 2);
	send_n(e, 0, 1);
	OK(engine_initiate(e, "A"));
	OK(engine_initiate(e, "B"));
	deliver(e, 1, 1);
	EXPECT(e, REC("A", 1, 1), REC("B", 1, 1));
	UNCHANGED(e, engine_state_recorded_taken(e, "A", fewer), E_INVAL);
	UNCHANGED(e, engine_state_recorded_taken(e, "A", more), E_INVAL);
	OK(engine_state_recorded_taken(e, "A", m));
	EXPECT(e, MARK("A", 0, 1));
	OK(engine_state_recorded_taken(e, "B", NULL));
	EXPECT(e, MARK("B", 0, 1));
	UNCHANGED(e, engine_state_recorded_taken(e, "A", m), E_STATE);
	OK(engine_marker(e, 0, "A", 2));
	EXPECT(e, DONE("A", 0, 2, 2, 0));
	OK(engine_marker(e, 1, "A", 1));
	EXPECT(e, DONE("A", 1, 0, 1, 1), PART("A"));
	engine_free(e);
}

Test(engine_unaligned, aligned_markers_close_while_requested_unaligned_do_not)
{
	/* The same schedule under both cuts: a first marker whose channel
	 * has all it needs.  Aligned, m is known and it closes at once;
	 * unaligned, it waits for the taken count. */
	struct engine *al = mk(ENGINE_COUNTED, 2, 1);
	struct engine *un = mk_un(2, 1);
	const uint64_t taken[2] = {2, 0};

	deliver_run(al, 0, 1, 2);
	deliver_run(un, 0, 1, 2);
	OK(engine_marker(al, 0, "A", 2));
	EXPECT(al, REQ("A"), DONE("A", 0, 2, 2, 0));
	OK(engine_marker(un, 0, "A", 2));
	EXPECT(un, REQ("A"));
	cr_assert_eq(open_of(un, "A"), 2);
	OK(engine_marker(un, 1, "A", 0));
	expect_none(un);
	cr_assert_eq(open_of(un, "A"), 2);
	OK(engine_state_recorded_taken(un, "A", taken));
	EXPECT(un, MARK("A", 0, 0), DONE("A", 0, 2, 2, 0),
	       DONE("A", 1, 0, 0, 0), PART("A"));
	engine_free(al);
	engine_free(un);
}

Test(engine_unaligned, marker_before_the_state_is_recorded)
{
	/* Channel 0: 1..3 entered, the application took 1; 4 arrives after
	 * the request; the marker (n = 5) comes while the state is still
	 * requested and only stores n. */
	struct engine *e = mk_un(2, 1);
	const uint64_t taken[2] = {1, 0};

	deliver_run(e, 0, 1, 3);
	OK(engine_initiate(e, "A"));
	deliver(e, 0, 4);
	EXPECT(e, REC("A", 0, 4));
	OK(engine_marker(e, 0, "A", 5));
	expect_none(e);
	OK(engine_marker(e, 1, "A", 0));
	expect_none(e);
	cr_assert_eq(open_of(e, "A"), 2);
	cr_assert_eq(state_of(e, "A"), ENGINE_S_REQUESTED);
	/* Messages above n are not recorded even before the state is. */
	OK(engine_state_recorded_taken(e, "A", taken));
	/* 2..4 recorded, 5 still to come: channel 0 stays open. */
	EXPECT(e, QUEUED("A", 0, 2, 2), MARK("A", 0, 0), DONE("A", 1, 0, 0, 0));
	cr_assert_eq(open_of(e, "A"), 1);
	deliver(e, 0, 5);
	EXPECT(e, REC("A", 0, 5), DONE("A", 0, 1, 5, 4), PART("A"));
	cr_assert_eq(m_high_of(e, "A"), 1);
	deliver(e, 0, 6);
	expect_none(e);
	engine_free(e);
}

Test(engine_unaligned, messages_above_n_are_not_recorded_while_requested)
{
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {0};

	deliver(e, 0, 1);
	OK(engine_marker(e, 0, "A", 2)); /* starts A: entered 1 */
	EXPECT(e, REQ("A"));
	deliver(e, 0, 2);
	EXPECT(e, REC("A", 0, 2));
	deliver(e, 0, 3); /* sent after the sender recorded */
	expect_none(e);
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 1, 1), MARK("A", 0, 0), DONE("A", 0, 0, 2, 2),
	       PART("A"));
	engine_free(e);
}

Test(engine_unaligned, marker_after_the_state_is_recorded)
{
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {1};

	deliver_run(e, 0, 1, 3);
	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 2, 2), MARK("A", 0, 0));
	/* After the cut the channel behaves as in counted mode, from m = 1
	 * with 2 and 3 already recorded. */
	deliver(e, 0, 4);
	EXPECT(e, REC("A", 0, 4));
	OK(engine_marker(e, 0, "A", 5));
	expect_none(e);
	cr_assert_eq(open_of(e, "A"), 1);
	deliver(e, 0, 5);
	EXPECT(e, REC("A", 0, 5), DONE("A", 0, 1, 5, 4), PART("A"));
	engine_free(e);

	/* The marker closes at once when the range already holds m+1..n. */
	e = mk_un(1, 1);
	deliver_run(e, 0, 1, 3);
	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 2, 2), MARK("A", 0, 0));
	OK(engine_marker(e, 0, "A", 3));
	EXPECT(e, DONE("A", 0, 1, 3, 2), PART("A"));
	cr_assert_eq(m_high_of(e, "A"), 1);
	engine_free(e);
}

Test(engine_unaligned, everything_taken_leaves_no_range)
{
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {3};

	deliver_run(e, 0, 1, 3);
	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, MARK("A", 0, 0));
	deliver(e, 0, 4);
	EXPECT(e, REC("A", 0, 4));
	OK(engine_marker(e, 0, "A", 4));
	EXPECT(e, DONE("A", 0, 3, 4, 1), PART("A"));
	engine_free(e);
}

Test(engine_unaligned, marker_n_below_the_queued_end_caps_the_range)
{
	/* 1..4 entered the down stream; the marker says only 2 were sent
	 * before the sender recorded (3 and 4 overtook it).  Known before
	 * the state is recorded, n caps the range at 2: 3 and 4 were taken
	 * after this node recorded, sent after the sender did, in neither
	 * state nor channel. */
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {1};

	deliver_run(e, 0, 1, 4);
	OK(engine_marker(e, 0, "A", 2));
	EXPECT(e, REQ("A"));
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 2, 1), MARK("A", 0, 0), DONE("A", 0, 1, 2, 1),
	       PART("A"));
	engine_free(e);
}

Test(engine_unaligned, marker_n_below_taken_closes_for_the_audit)
{
	/* The application took 3 messages but the sender says it had sent 1
	 * when it recorded: a receive without its send, which no range can
	 * repair.  The channel closes with m = 3 > n = 1 for the audit. */
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {3};

	deliver_run(e, 0, 1, 4);
	OK(engine_initiate(e, "A"));
	OK(engine_marker(e, 0, "A", 1));
	expect_none(e);
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, MARK("A", 0, 0), DONE("A", 0, 3, 1, 0), PART("A"));
	engine_free(e);
}

Test(engine_unaligned, capped_range_and_a_late_delivery_above_n)
{
	/* 4 was delivered after the request and recorded before the marker
	 * (n = 2) said it was sent after the sender recorded; the range is
	 * capped at 2, the channel closes (1 and 2 are in), and the count
	 * reports all three recorded so the audit sees the extra one. */
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {0};

	deliver_run(e, 0, 1, 3);
	OK(engine_initiate(e, "A"));
	deliver(e, 0, 4);
	EXPECT(e, REC("A", 0, 4));
	OK(engine_marker(e, 0, "A", 2));
	expect_none(e);
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 1, 2), MARK("A", 0, 0), DONE("A", 0, 0, 2, 3),
	       PART("A"));
	engine_free(e);
}

Test(engine_unaligned, unknown_marker_lets_the_range_run_to_entered)
{
	/* Without the marker the engine cannot cap the range: 1..3 are
	 * handed back; a later marker with n = 2 closes the channel at once
	 * with all three recorded, for the audit to judge. */
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {0};

	deliver_run(e, 0, 1, 3);
	OK(engine_initiate(e, "A"));
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 1, 3), MARK("A", 0, 0));
	OK(engine_marker(e, 0, "A", 2));
	EXPECT(e, DONE("A", 0, 0, 2, 3), PART("A"));
	engine_free(e);
}

Test(engine_unaligned, concurrent_snapshots_each_with_its_own_taken)
{
	struct engine *e = mk_un(2, 1);
	const uint64_t taken_a[2] = {1, 0}, taken_b[2] = {2, 1};

	deliver_run(e, 0, 1, 2);
	OK(engine_initiate(e, "A")); /* entered (2, 0) */
	deliver(e, 0, 3);
	EXPECT(e, REC("A", 0, 3));
	deliver(e, 1, 1);
	EXPECT(e, REC("A", 1, 1));
	OK(engine_marker(e, 1, "B", 1)); /* B: entered (3, 1) */
	EXPECT(e, REQ("B"));
	OK(engine_marker(e, 1, "A", 1));
	expect_none(e);
	/* B records first, having taken 2 of channel 0 and 1 of channel 1:
	 * its request overtook 3. */
	OK(engine_state_recorded_taken(e, "B", taken_b));
	EXPECT(e, QUEUED("B", 0, 3, 1), MARK("B", 0, 0), DONE("B", 1, 1, 1, 0));
	/* A's request came before 3 entered: its range ends at 2, and 3 was
	 * recorded as a delivery after the request. */
	OK(engine_state_recorded_taken(e, "A", taken_a));
	EXPECT(e, QUEUED("A", 0, 2, 1), MARK("A", 0, 0), DONE("A", 1, 0, 1, 1));
	deliver(e, 0, 4);
	EXPECT(e, REC("A", 0, 4), REC("B", 0, 4));
	OK(engine_marker(e, 0, "A", 4));
	EXPECT(e, DONE("A", 0, 1, 4, 3), PART("A"));
	OK(engine_marker(e, 0, "B", 3));
	EXPECT(e, DONE("B", 0, 2, 3, 2), PART("B"));
	cr_assert_eq(engine_in_progress(e), 0);
	engine_free(e);
}

Test(engine_unaligned, failed_events_change_nothing)
{
	struct engine *e = mk_un(2, 1);
	const uint64_t taken[2] = {1, 0}, bad[2] = {0, 1};

	deliver_run(e, 0, 1, 2);
	OK(engine_initiate(e, "A"));
	OK(engine_marker(e, 1, "A", 0));
	expect_none(e);
	UNCHANGED(e, engine_marker(e, 1, "A", 0), E_DUP);
	UNCHANGED(e, engine_delivered(e, 0, 4), E_INVAL);
	UNCHANGED(e, engine_state_recorded(e, "A"), E_INVAL);
	UNCHANGED(e, engine_state_recorded_taken(e, "A", bad), E_INVAL);
	UNCHANGED(e, engine_set_cut(e, ENGINE_CUT_ALIGNED), E_STATE);
	OK(engine_state_recorded_taken(e, "A", taken));
	EXPECT(e, QUEUED("A", 0, 2, 1), MARK("A", 0, 0), DONE("A", 1, 0, 0, 0));
	OK(engine_marker(e, 0, "A", 2));
	EXPECT(e, DONE("A", 0, 1, 2, 1), PART("A"));
	engine_free(e);
}

Test(engine_unaligned, abort_while_requested)
{
	struct engine *e = mk_un(1, 1);
	const uint64_t taken[1] = {0};

	deliver(e, 0, 1);
	OK(engine_initiate(e, "A"));
	OK(engine_abort(e, "A"));
	UNCHANGED(e, engine_state_recorded_taken(e, "A", taken), E_STATE);
	deliver(e, 0, 2);
	expect_none(e);
	OK(engine_set_cut(e, ENGINE_CUT_ALIGNED));
	engine_free(e);
}

/* A daemon that restarted resumes a channel's numbering where its
 * application says it stands; never under a snapshot in progress. */
Test(engine, resume_sets_the_counts_outside_snapshots)
{
	struct engine *e = mk(ENGINE_COUNTED, 1, 1);
	uint64_t seq = 0;

	OK(engine_resume_out(e, 0, 41));
	OK(engine_sent(e, 0, &seq));
	cr_assert_eq(seq, 42);
	OK(engine_resume_in(e, 0, 7));
	cr_assert_eq(engine_delivered_count(e, 0), 7);
	OK(engine_delivered(e, 0, 8));
	cr_assert_eq(engine_delivered_count(e, 0), 8);
	FAILS(engine_resume_in(e, 1, 0), E_NOCHAN);
	FAILS(engine_resume_out(e, 1, 0), E_NOCHAN);
	OK(engine_initiate(e, "p0:1"));
	FAILS(engine_resume_in(e, 0, 100), E_STATE);
	FAILS(engine_resume_out(e, 0, 100), E_STATE);
	cr_assert_eq(engine_delivered_count(e, 0), 8);
	cr_assert_eq(engine_sent_count(e, 0), 42);
	engine_free(e);
}
