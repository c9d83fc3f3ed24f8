/*
 * test_audit.c - unit tests of the consistency audit (daemon/core/audit.c).
 *
 * Each test starts from a consistent three-node cut, breaks exactly one
 * thing and checks every counter of the report (the ones it did not break
 * must stay zero), the verdict and the reason sentence.  The last suite
 * feeds the audit with cuts that two real engines recorded in the lab
 * (daemon/lab/lab.c).
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "lab.h"

enum { MAXN = 128 };

/* An assembled snapshot under construction. */
struct cut {
	const char *nodes[MAXN];
	size_t nnodes;
	const char *src[MAXN], *dst[MAXN];
	size_t nchans;
	const char *parts[MAXN];
	size_t nparts;
	struct audit_channel rec[MAXN];
	size_t nrec;
};

static void
add_node(struct cut *c, const char *name)
{
	cr_assert_lt(c->nnodes, MAXN);
	c->nodes[c->nnodes++] = name;
}

static void
add_part(struct cut *c, const char *name)
{
	cr_assert_lt(c->nparts, MAXN);
	c->parts[c->nparts++] = name;
}

static void
declare_chan(struct cut *c, const char *src, const char *dst)
{
	cr_assert_lt(c->nchans, MAXN);
	c->src[c->nchans] = src;
	c->dst[c->nchans++] = dst;
}

/* Adds a recorded channel with nothing recorded on it yet. */
static struct audit_channel *
add_rec(struct cut *c, const char *src, const char *dst, uint64_t m, uint64_t n)
{
	struct audit_channel *ch;

	cr_assert_lt(c->nrec, MAXN);
	ch = &c->rec[c->nrec++];
	ch->src = src;
	ch->dst = dst;
	ch->m = m;
	ch->n = n;
	audit_seqs_init(&ch->seqs);
	return ch;
}

/* Records seqs first .. last, in order, on ch. */
static void
add_run(struct audit_channel *ch, uint64_t first, uint64_t last)
{
	for (uint64_t q = first; q <= last; q++)
		audit_seqs_add(&ch->seqs, q);
}

/* Returns the recorded channel src -> dst (the first one). */
static struct audit_channel *
rec_of(struct cut *c, const char *src, const char *dst)
{
	for (size_t i = 0; i < c->nrec; i++)
		if (strcmp(c->rec[i].src, src) == 0 &&
		    strcmp(c->rec[i].dst, dst) == 0)
			return &c->rec[i];
	cr_assert_fail("no recorded channel %s -> %s", src, dst);
	return NULL;
}

/* Removes the recorded channel src -> dst. */
static void
drop_rec(struct cut *c, const char *src, const char *dst)
{
	struct audit_channel *ch = rec_of(c, src, dst);
	size_t i = (size_t)(ch - c->rec);

	memmove(&c->rec[i], &c->rec[i + 1], (c->nrec - i - 1) * sizeof(*ch));
	c->nrec--;
}

/*
 * A consistent cut of p0, p1, p2 with channels p0 -> p1, p1 -> p2,
 * p2 -> p0 and p1 -> p0:
 *   p0 -> p1: m=2, n=4, recorded 3, 4 (two messages in transit);
 *   p1 -> p2: m=n=5, nothing in transit;
 *   p2 -> p0: m=0, n=1, recorded 1;
 *   p1 -> p0: m=n=0, the channel was never used.
 */
static void
three_nodes(struct cut *c)
{
	memset(c, 0, sizeof(*c));
	add_node(c, "p0");
	add_node(c, "p1");
	add_node(c, "p2");
	declare_chan(c, "p0", "p1");
	declare_chan(c, "p1", "p2");
	declare_chan(c, "p2", "p0");
	declare_chan(c, "p1", "p0");
	add_part(c, "p0");
	add_part(c, "p1");
	add_part(c, "p2");
	add_run(add_rec(c, "p0", "p1", 2, 4), 3, 4);
	add_rec(c, "p1", "p2", 5, 5);
	add_run(add_rec(c, "p2", "p0", 0, 1), 1, 1);
	add_rec(c, "p1", "p0", 0, 0);
}

/* Runs the audit on in into a report first filled with garbage, so that
 * every field the audit forgets to set shows up. */
static void
run_input(const struct audit_input *in, struct audit_report *r)
{
	memset(r, 0xa5, sizeof(*r));
	audit_run(in, r);
	cr_assert_not_null(memchr(r->reason, '\0', sizeof(r->reason)),
	                   "reason is not terminated");
}

/* Runs the audit on c, as run_input(). */
static void
run(const struct cut *c, struct audit_report *r)
{
	struct audit_input in = {
	    .nodes = c->nodes,
	    .nnodes = c->nnodes,
	    .chan_src = c->src,
	    .chan_dst = c->dst,
	    .nchans = c->nchans,
	    .parts = c->parts,
	    .nparts = c->nparts,
	    .recorded = c->rec,
	    .nrecorded = c->nrec,
	};

	run_input(&in, r);
}

/* Asserts every counter of r against want (unnamed ones are zero), and
 * that the verdict is "consistent" exactly when all of them are zero. */
static void
expect_counts(const struct audit_report *r, const struct audit_report *w)
{
	int clean = w->missing_parts == 0 && w->duplicate_parts == 0 &&
	            w->unknown_parts == 0 && w->missing_channels == 0 &&
	            w->duplicate_channels == 0 && w->unknown_channels == 0 &&
	            w->receive_without_send == 0 && w->missing_messages == 0 &&
	            w->extra_messages == 0 && w->unordered_channels == 0;

	cr_assert_eq(r->missing_parts, w->missing_parts, "missing_parts (%s)",
	             r->reason);
	cr_assert_eq(r->duplicate_parts, w->duplicate_parts,
	             "duplicate_parts (%s)", r->reason);
	cr_assert_eq(r->unknown_parts, w->unknown_parts, "unknown_parts (%s)",
	             r->reason);
	cr_assert_eq(r->missing_channels, w->missing_channels,
	             "missing_channels (%s)", r->reason);
	cr_assert_eq(r->duplicate_channels, w->duplicate_channels,
	             "duplicate_channels (%s)", r->reason);
	cr_assert_eq(r->unknown_channels, w->unknown_channels,
	             "unknown_channels (%s)", r->reason);
	cr_assert_eq(r->receive_without_send, w->receive_without_send,
	             "receive_without_send (%s)", r->reason);
	cr_assert_eq(r->missing_messages, w->missing_messages,
	             "missing_messages (%s)", r->reason);
	cr_assert_eq(r->extra_messages, w->extra_messages,
	             "extra_messages (%s)", r->reason);
	cr_assert_eq(r->unordered_channels, w->unordered_channels,
	             "unordered_channels (%s)", r->reason);
	cr_assert_eq(r->consistent, clean, "consistent (%s)", r->reason);
	if (clean)
		cr_assert_str_empty(r->reason);
	else
		cr_assert_str_not_empty(r->reason);
}

/* EXPECT_COUNTS(&report, .missing_parts = 1, ...) */
#define EXPECT_COUNTS(r, ...)                                                  \
	do {                                                                   \
		const struct audit_report w_ = {__VA_ARGS__};                  \
		expect_counts((r), &w_);                                       \
	} while (0)

static void
expect_consistent(const struct audit_report *r)
{
	EXPECT_COUNTS(r, .consistent = 1);
}

/* Audits c and asserts exactly this one problem, with this reason. */
#define EXPECT_ONLY(c, reason_, ...)                                           \
	do {                                                                   \
		struct audit_report r_;                                        \
		run((c), &r_);                                                 \
		EXPECT_COUNTS(&r_, __VA_ARGS__);                               \
		cr_assert_str_eq(r_.reason, (reason_));                        \
	} while (0)

/*
 * The running summary of recorded seqs.
 */

Test(audit_seqs, init_is_empty)
{
	struct audit_seqs s;

	memset(&s, 0xa5, sizeof(s));
	audit_seqs_init(&s);
	cr_assert_eq(s.count, 0);
	cr_assert_eq(s.first, 0);
	cr_assert_eq(s.last, 0);
	cr_assert_eq(s.consecutive, 1);
}

Test(audit_seqs, a_run)
{
	struct audit_seqs s;

	audit_seqs_init(&s);
	audit_seqs_add(&s, 4);
	cr_assert_eq(s.count, 1);
	cr_assert_eq(s.first, 4);
	cr_assert_eq(s.last, 4);
	cr_assert_eq(s.consecutive, 1);
	audit_seqs_add(&s, 5);
	audit_seqs_add(&s, 6);
	cr_assert_eq(s.count, 3);
	cr_assert_eq(s.first, 4);
	cr_assert_eq(s.last, 6);
	cr_assert_eq(s.consecutive, 1);
}

Test(audit_seqs, gap_duplicate_or_descent_breaks_the_run)
{
	static const uint64_t cases[][3] = {{1, 3, 4}, {2, 2, 3}, {3, 2, 3}};

	for (size_t i = 0; i < 3; i++) {
		struct audit_seqs s;

		audit_seqs_init(&s);
		for (size_t j = 0; j < 3; j++)
			audit_seqs_add(&s, cases[i][j]);
		cr_assert_eq(s.consecutive, 0, "case %zu", i);
		cr_assert_eq(s.count, 3, "case %zu", i);
		cr_assert_eq(s.first, cases[i][0], "case %zu", i);
		cr_assert_eq(s.last, cases[i][2], "case %zu", i);
	}
}

/*
 * Consistent cuts.
 */

Test(audit, consistent_cut_passes)
{
	struct cut c;
	struct audit_report r;

	three_nodes(&c);
	run(&c, &r);
	expect_consistent(&r);
	cr_assert_str_eq(r.reason, "");
}

Test(audit, order_of_parts_and_channels_does_not_matter)
{
	struct cut c, d;
	struct audit_report r;

	three_nodes(&c);
	d = c;
	for (size_t i = 0; i < c.nparts; i++)
		d.parts[i] = c.parts[c.nparts - 1 - i];
	for (size_t i = 0; i < c.nrec; i++)
		d.rec[i] = c.rec[c.nrec - 1 - i];
	run(&d, &r);
	expect_consistent(&r);
}

Test(audit, empty_cluster_is_consistent)
{
	struct cut c;
	struct audit_report r;

	memset(&c, 0, sizeof(c));
	run(&c, &r);
	expect_consistent(&r);
}

Test(audit, single_node_without_channels)
{
	struct cut c;
	struct audit_report r;

	memset(&c, 0, sizeof(c));
	add_node(&c, "solo");
	add_part(&c, "solo");
	run(&c, &r);
	expect_consistent(&r);
	c.nparts = 0;
	EXPECT_ONLY(&c, "node solo: no part recorded", .missing_parts = 1);
}

/*
 * Every node recorded exactly once.
 */

Test(audit, missing_part)
{
	struct cut c;

	three_nodes(&c);
	c.parts[1] = c.parts[2];
	c.nparts = 2;
	EXPECT_ONLY(&c, "node p1: no part recorded", .missing_parts = 1);
}

Test(audit, all_parts_missing)
{
	struct cut c;

	three_nodes(&c);
	c.nparts = 0;
	EXPECT_ONLY(&c,
	            "node p0: no part recorded; node p1: no part recorded; "
	            "node p2: no part recorded",
	            .missing_parts = 3);
}

Test(audit, duplicate_part)
{
	struct cut c;

	three_nodes(&c);
	add_part(&c, "p1");
	EXPECT_ONLY(&c, "node p1: 2 parts recorded", .duplicate_parts = 1);
	add_part(&c, "p1");
	EXPECT_ONLY(&c, "node p1: 3 parts recorded", .duplicate_parts = 1);
}

Test(audit, unknown_part)
{
	struct cut c;

	three_nodes(&c);
	add_part(&c, "p9");
	EXPECT_ONLY(&c, "node p9: not in the cluster", .unknown_parts = 1);
}

Test(audit, part_names_are_compared_exactly)
{
	struct cut c;

	three_nodes(&c);
	c.parts[0] = "p";
	add_part(&c, "p00");
	EXPECT_ONLY(&c,
	            "node p0: no part recorded; node p: not in the cluster; "
	            "node p00: not in the cluster",
	            .missing_parts = 1, .unknown_parts = 2);
}

/*
 * Every channel recorded exactly once.
 */

Test(audit, missing_channel)
{
	struct cut c;

	three_nodes(&c);
	drop_rec(&c, "p1", "p2");
	EXPECT_ONLY(&c, "channel p1 -> p2: not recorded",
	            .missing_channels = 1);
}

Test(audit, duplicate_channel)
{
	struct cut c;

	three_nodes(&c);
	add_run(add_rec(&c, "p0", "p1", 2, 4), 3, 4);
	EXPECT_ONLY(&c, "channel p0 -> p1: recorded 2 times",
	            .duplicate_channels = 1);
}

Test(audit, unknown_channel)
{
	struct cut c;

	three_nodes(&c);
	add_rec(&c, "p0", "p2", 0, 0);
	EXPECT_ONLY(&c, "channel p0 -> p2: not in the cluster",
	            .unknown_channels = 1);
}

Test(audit, channel_direction_matters)
{
	/* p1 -> p2 reported as p2 -> p1: the declared one is missing and the
	 * reported one is not in the cluster. */
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p1", "p2");
	ch->src = "p2";
	ch->dst = "p1";
	EXPECT_ONLY(&c,
	            "channel p1 -> p2: not recorded; "
	            "channel p2 -> p1: not in the cluster",
	            .missing_channels = 1, .unknown_channels = 1);
}

Test(audit, channel_of_unknown_node)
{
	struct cut c;

	three_nodes(&c);
	add_rec(&c, "p9", "p0", 0, 0);
	EXPECT_ONLY(&c, "channel p9 -> p0: not in the cluster",
	            .unknown_channels = 1);
}

/*
 * Channel contents: exactly m+1 .. n.
 */

Test(audit, receive_without_send)
{
	struct cut c;

	three_nodes(&c);
	rec_of(&c, "p1", "p2")->m = 5;
	rec_of(&c, "p1", "p2")->n = 3;
	EXPECT_ONLY(
	    &c,
	    "channel p1 -> p2: 2 messages received before the cut but sent "
	    "after it (m=5, n=3)",
	    .receive_without_send = 2);
}

Test(audit, receive_without_send_sums_over_channels)
{
	struct cut c;
	struct audit_report r;

	three_nodes(&c);
	rec_of(&c, "p1", "p2")->n = 3; /* m=5: 2 */
	rec_of(&c, "p1", "p0")->m = 3; /* n=0: 3 */
	run(&c, &r);
	EXPECT_COUNTS(&r, .receive_without_send = 5);
	cr_assert_not_null(strstr(r.reason, "channel p1 -> p2: 2 messages"));
	cr_assert_not_null(strstr(r.reason, "channel p1 -> p0: 3 messages"));
}

Test(audit, receive_without_send_with_recorded_messages)
{
	/* Nothing belongs in a channel with m > n: whatever was recorded on
	 * it is extra as well. */
	struct cut c;

	three_nodes(&c);
	add_run(rec_of(&c, "p1", "p0"), 3, 3);
	rec_of(&c, "p1", "p0")->m = 2;
	EXPECT_ONLY(
	    &c,
	    "channel p1 -> p0: 2 messages received before the cut but sent "
	    "after it (m=2, n=0); channel p1 -> p0: 1 recorded messages "
	    "outside m+1..n (m=2, n=0)",
	    .receive_without_send = 2, .extra_messages = 1);
}

Test(audit, missing_messages_none_recorded)
{
	struct cut c;

	three_nodes(&c);
	audit_seqs_init(&rec_of(&c, "p0", "p1")->seqs);
	EXPECT_ONLY(
	    &c,
	    "channel p0 -> p1: 2 in-transit messages not recorded (m=2, n=4, "
	    "recorded 0)",
	    .missing_messages = 2);
}

Test(audit, missing_first_message)
{
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p0", "p1");
	audit_seqs_init(&ch->seqs);
	add_run(ch, 4, 4);
	EXPECT_ONLY(
	    &c,
	    "channel p0 -> p1: 1 in-transit messages not recorded (m=2, n=4, "
	    "recorded 1)",
	    .missing_messages = 1);
}

Test(audit, missing_last_message)
{
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p0", "p1");
	audit_seqs_init(&ch->seqs);
	add_run(ch, 3, 3);
	EXPECT_ONLY(
	    &c,
	    "channel p0 -> p1: 1 in-transit messages not recorded (m=2, n=4, "
	    "recorded 1)",
	    .missing_messages = 1);
}

Test(audit, extra_message_after_n)
{
	struct cut c;

	three_nodes(&c);
	add_run(rec_of(&c, "p0", "p1"), 5, 5);
	EXPECT_ONLY(
	    &c,
	    "channel p0 -> p1: 1 recorded messages outside m+1..n (m=2, n=4)",
	    .extra_messages = 1);
}

Test(audit, extra_message_before_m)
{
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p0", "p1");
	audit_seqs_init(&ch->seqs);
	add_run(ch, 1, 4);
	EXPECT_ONLY(
	    &c,
	    "channel p0 -> p1: 2 recorded messages outside m+1..n (m=2, n=4)",
	    .extra_messages = 2);
}

Test(audit, extra_message_on_empty_channel)
{
	struct cut c;

	three_nodes(&c);
	add_run(rec_of(&c, "p1", "p2"), 6, 6);
	EXPECT_ONLY(
	    &c,
	    "channel p1 -> p2: 1 recorded messages outside m+1..n (m=5, n=5)",
	    .extra_messages = 1);
}

Test(audit, missing_and_extra_when_disjoint)
{
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p0", "p1");
	audit_seqs_init(&ch->seqs);
	add_run(ch, 7, 8);
	EXPECT_ONLY(
	    &c,
	    "channel p0 -> p1: 2 in-transit messages not recorded (m=2, n=4, "
	    "recorded 2); channel p0 -> p1: 2 recorded messages outside "
	    "m+1..n (m=2, n=4)",
	    .missing_messages = 2, .extra_messages = 2);
}

Test(audit, missing_and_extra_when_shifted)
{
	/* m=2, n=5 wants 3..5; 5..7 overlaps in 5 only. */
	struct cut c;
	struct audit_channel *ch;
	struct audit_report r;

	three_nodes(&c);
	ch = rec_of(&c, "p0", "p1");
	ch->n = 5;
	audit_seqs_init(&ch->seqs);
	add_run(ch, 5, 7);
	run(&c, &r);
	EXPECT_COUNTS(&r, .missing_messages = 2, .extra_messages = 2);
}

Test(audit, recorded_out_of_sequence)
{
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p0", "p1");
	audit_seqs_init(&ch->seqs);
	audit_seqs_add(&ch->seqs, 4);
	audit_seqs_add(&ch->seqs, 3);
	EXPECT_ONLY(&c, "channel p0 -> p1: recorded messages out of sequence",
	            .unordered_channels = 1);
}

Test(audit, recorded_twice_is_out_of_sequence)
{
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p0", "p1");
	audit_seqs_add(&ch->seqs, 4); /* 3, 4, 4 */
	EXPECT_ONLY(&c, "channel p0 -> p1: recorded messages out of sequence",
	            .unordered_channels = 1);
}

Test(audit, recorded_with_a_gap_is_out_of_sequence)
{
	/* 3, 5 with m=0, n=5: a hole, reported as out of sequence (not also
	 * as missing or extra). */
	struct cut c;
	struct audit_channel *ch;

	three_nodes(&c);
	ch = rec_of(&c, "p2", "p0");
	ch->n = 5;
	audit_seqs_init(&ch->seqs);
	audit_seqs_add(&ch->seqs, 3);
	audit_seqs_add(&ch->seqs, 5);
	EXPECT_ONLY(&c, "channel p2 -> p0: recorded messages out of sequence",
	            .unordered_channels = 1);
}

Test(audit, counts_add_up_over_channels)
{
	struct cut c;
	struct audit_report r;

	three_nodes(&c);
	audit_seqs_init(&rec_of(&c, "p0", "p1")->seqs); /* 2 missing */
	audit_seqs_init(&rec_of(&c, "p2", "p0")->seqs); /* 1 missing */
	add_run(rec_of(&c, "p1", "p2"), 6, 7);          /* 2 extra */
	add_run(rec_of(&c, "p1", "p0"), 1, 1);          /* 1 extra */
	run(&c, &r);
	EXPECT_COUNTS(&r, .missing_messages = 3, .extra_messages = 3);
}

/*
 * The reason.
 */

Test(audit, reason_lists_problems_in_check_order)
{
	struct cut c;

	three_nodes(&c);
	c.nparts = 2;                  /* p2 missing */
	rec_of(&c, "p1", "p2")->n = 4; /* m=5 > n */
	add_rec(&c, "p2", "p1", 0, 0); /* unknown */
	EXPECT_ONLY(
	    &c,
	    "node p2: no part recorded; channel p2 -> p1: not in the cluster; "
	    "channel p1 -> p2: 1 messages received before the cut but sent "
	    "after it (m=5, n=4)",
	    .missing_parts = 1, .unknown_channels = 1,
	    .receive_without_send = 1);
}

Test(audit, every_channel_problem_names_its_channel)
{
	/* One problem of each kind on a differently named channel. */
	struct cut c;
	struct audit_report r;
	struct audit_channel *ch;

	memset(&c, 0, sizeof(c));
	add_node(&c, "a");
	add_node(&c, "b");
	add_part(&c, "a");
	add_part(&c, "b");
	declare_chan(&c, "a", "b");
	declare_chan(&c, "b", "a");
	declare_chan(&c, "a", "a2");
	declare_chan(&c, "b", "b2");
	add_rec(&c, "b", "a", 0, 3);                 /* missing */
	add_rec(&c, "a", "b", 4, 1);                 /* receive without send */
	add_run(add_rec(&c, "a", "a2", 0, 0), 1, 1); /* extra */
	ch = add_rec(&c, "b", "b2", 0, 2);           /* out of sequence */
	audit_seqs_add(&ch->seqs, 2);
	audit_seqs_add(&ch->seqs, 1);
	run(&c, &r);
	EXPECT_COUNTS(&r, .missing_messages = 3, .receive_without_send = 3,
	              .extra_messages = 1, .unordered_channels = 1);
	cr_assert_not_null(strstr(r.reason, "channel b -> a: 3 in-transit"));
	cr_assert_not_null(strstr(r.reason, "channel a -> b: 3 messages"));
	cr_assert_not_null(strstr(r.reason, "channel a -> a2: 1 recorded"));
	cr_assert_not_null(strstr(r.reason, "channel b -> b2: recorded"));
}

Test(audit, long_reason_is_truncated_but_counted)
{
	struct cut c;
	struct audit_report r;
	char names[100][8];
	const char *prefix = "node x00: not in the cluster; "
	                     "node x01: not in the cluster; node x02: ";

	three_nodes(&c);
	for (int i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "x%02u",
		         (unsigned)i % 100u);
		add_part(&c, names[i]);
	}
	run(&c, &r);
	EXPECT_COUNTS(&r, .unknown_parts = 100);
	cr_assert_lt(strlen(r.reason), sizeof(r.reason));
	cr_assert_gt(strlen(r.reason), sizeof(r.reason) / 2);
	cr_assert_eq(strncmp(r.reason, prefix, strlen(prefix)), 0, "%s",
	             r.reason);
	cr_assert_null(strstr(r.reason, "node x99"), "%s", r.reason);
}

/*
 * Cuts recorded by real engines, in the lab: nodes p and q, channels q -> p
 * and p -> q declared in that order, so that channel QP leads into node P
 * and PQ into Q.  The frames in flight on a channel are held in order;
 * delivering the k-th oldest reorders the channel, and the lab sends the
 * markers when the engines say so.  The applications take every delivery
 * and answer every state request at once, except with the unaligned cut,
 * where they take only at lab_take(): a lagging application is one the test
 * does not let take.  lab_result() audits what the engines recorded and
 * judges it against the lab's ground truth, which must agree.
 */

enum { P, Q };   /* nodes */
enum { QP, PQ }; /* channels, each into the node of the same index */

static struct lab *
pq_lab(enum engine_mode mode, enum engine_cut cut, int queued_apps)
{
	struct lab *lab;
	size_t i;

	cr_assert_eq(lab_new(mode, &lab), 0);
	cr_assert_eq(lab_set_cut(lab, cut), 0);
	cr_assert_eq(lab_set_queued_apps(lab, queued_apps), 0);
	cr_assert_eq(lab_add_node(lab, "p", 100), 0);
	cr_assert_eq(lab_add_node(lab, "q", 100), 0);
	cr_assert_eq(lab_add_channel(lab, "q", "p"), 0);
	cr_assert_eq(lab_add_channel(lab, "p", "q"), 0);
	cr_assert_eq(lab_node(lab, "p", &i), 0);
	cr_assert_eq(i, P);
	cr_assert_eq(lab_node(lab, "q", &i), 0);
	cr_assert_eq(i, Q);
	cr_assert_eq(lab_channel(lab, "q", "p", &i), 0);
	cr_assert_eq(i, QP);
	cr_assert_eq(lab_channel(lab, "p", "q", &i), 0);
	cr_assert_eq(i, PQ);
	return lab;
}

/* node sends a message of one token to the other node. */
static void
msg(struct lab *lab, size_t node)
{
	cr_assert_eq(lab_send(lab, lab_node_name(lab, node),
	                      lab_node_name(lab, 1 - node), 1),
	             0);
}

/* node initiates the snapshot, the lab's first. */
static void
initiate(struct lab *lab, size_t node)
{
	size_t s;

	cr_assert_eq(lab_snapshot(lab, lab_node_name(lab, node), &s), 0);
	cr_assert_eq(s, 0);
}

/* Delivers the k-th oldest frame of channel ch (k = 1: FIFO). */
static void
deliver(struct lab *lab, size_t ch, size_t k)
{
	cr_assert_eq(lab_deliver(lab, ch, k), 0, "no frame %zu on channel %zu",
	             k, ch);
}

/* node's application takes the oldest item of its down queue. */
static void
take(struct lab *lab, size_t node)
{
	cr_assert_eq(lab_take(lab, node), 0);
}

/* Delivers the oldest frame of each channel in turn, into p first, until
 * none is left. */
static void
drain(struct lab *lab)
{
	while (lab_queue_len(lab, QP) > 0 || lab_queue_len(lab, PQ) > 0)
		for (size_t ch = QP; ch <= PQ; ch++)
			if (lab_queue_len(lab, ch) > 0)
				deliver(lab, ch, 1);
}

/* What the engines recorded on channel ch. */
static struct audit_channel
recorded(const struct lab *lab, size_t ch)
{
	struct audit_channel c;

	cr_assert_eq(lab_recorded_channel(lab, 0, ch, &c), 0,
	             "channel %zu not recorded", ch);
	return c;
}

/* The lab's verdict on the snapshot: the audit and the ground truth. */
static void
result(const struct lab *lab, struct lab_snapshot_result *res)
{
	memset(res, 0xa5, sizeof(*res));
	cr_assert_eq(lab_result(lab, 0, res), 0);
	cr_assert_not_null(
	    memchr(res->audit.reason, '\0', sizeof(res->audit.reason)),
	    "reason is not terminated");
}

/* Asserts the ground truth: messages in flight at the cut and not
 * recorded, recorded and not in flight, received before the cut and sent
 * after it.  With none, the tokens add up. */
static void
expect_truth(const struct lab *lab, const struct lab_snapshot_result *res,
             uint64_t missing, uint64_t extra, uint64_t receive_without_send)
{
	cr_assert(res->complete);
	cr_assert_eq(res->missing, missing);
	cr_assert_eq(res->extra, extra);
	cr_assert_eq(res->receive_without_send, receive_without_send);
	if (missing == 0 && extra == 0 && receive_without_send == 0)
		cr_assert_eq(res->node_total + res->channel_total,
		             lab_total(lab));
}

/* p sends twice, q once; p initiates; everything is delivered in order. */
static void
fifo_run(enum engine_mode mode)
{
	struct lab *lab = pq_lab(mode, ENGINE_CUT_ALIGNED, 0);
	struct lab_snapshot_result res;
	struct audit_channel c;

	msg(lab, P);
	msg(lab, P);
	msg(lab, Q);
	deliver(lab, QP, 1); /* q's 1 reaches p before the cut */
	initiate(lab, P);
	msg(lab, Q); /* q's 2 is in transit across the cut */
	msg(lab, P); /* p's 3 is after the cut */
	drain(lab);
	result(lab, &res);
	expect_consistent(&res.audit);
	expect_truth(lab, &res, 0, 0, 0);
	c = recorded(lab, QP);
	cr_assert_eq(c.m, 1);
	cr_assert_eq(c.n, 2);
	cr_assert_eq(c.seqs.count, 1);
	cr_assert_eq(c.seqs.first, 2);
	c = recorded(lab, PQ);
	cr_assert_eq(c.m, 2);
	cr_assert_eq(c.n, 2);
	cr_assert_eq(c.seqs.count, 0);
	lab_free(lab);
}

Test(audit_engine, classic_fifo_cut_is_consistent)
{
	fifo_run(ENGINE_CLASSIC);
}

Test(audit_engine, counted_fifo_cut_is_consistent)
{
	fifo_run(ENGINE_COUNTED);
}

/* p sends two messages, initiates, and its marker overtakes both. */
static struct lab *
overtake_run(enum engine_mode mode, struct lab_snapshot_result *res)
{
	struct lab *lab = pq_lab(mode, ENGINE_CUT_ALIGNED, 0);

	msg(lab, P);
	msg(lab, P);
	initiate(lab, P);
	cr_assert_eq(lab_queue_len(lab, PQ), 3);
	cr_assert(lab_queue_at(lab, PQ, 3)->is_marker);
	deliver(lab, PQ, 3); /* the marker first */
	drain(lab);
	result(lab, res);
	cr_assert_eq(res->overtakes, 2);
	return lab;
}

Test(audit_engine, classic_marker_overtake_is_flagged)
{
	struct lab_snapshot_result res;
	struct lab *lab = overtake_run(ENGINE_CLASSIC, &res);

	EXPECT_COUNTS(&res.audit, .missing_messages = 2);
	cr_assert_str_eq(
	    res.audit.reason,
	    "channel p -> q: 2 in-transit messages not recorded (m=0, n=2, "
	    "recorded 0)");
	expect_truth(lab, &res, 2, 0, 0);
	lab_free(lab);
}

Test(audit_engine, counted_marker_overtake_is_consistent)
{
	struct lab_snapshot_result res;
	struct lab *lab = overtake_run(ENGINE_COUNTED, &res);
	struct audit_channel c = recorded(lab, PQ);

	expect_consistent(&res.audit);
	expect_truth(lab, &res, 0, 0, 0);
	cr_assert_eq(c.seqs.count, 2);
	cr_assert_eq(c.seqs.first, 1);
	cr_assert_eq(c.seqs.last, 2);
	lab_free(lab);
}

/*
 * An application message that overtakes a marker, delivered after the
 * receiver recorded: q initiates; p records on q's marker with n = 1 and
 * then sends 2, which reaches q before the marker and message 1.  Message 2
 * lands in q's channel state although it was sent after p's cut; the audit
 * must flag the channel, whatever the marker mode.
 */
static struct lab *
late_overtake_run(enum engine_mode mode, struct lab_snapshot_result *res)
{
	struct lab *lab = pq_lab(mode, ENGINE_CUT_ALIGNED, 0);

	initiate(lab, Q);
	msg(lab, P);         /* 1 */
	deliver(lab, QP, 1); /* q's marker: p records, n = 1 */
	cr_assert(lab_part_complete(lab, 0, P));
	msg(lab, P);         /* 2, after p's cut */
	deliver(lab, PQ, 3); /* 2 */
	deliver(lab, PQ, 2); /* the marker */
	drain(lab);          /* 1 */
	cr_assert(lab_part_complete(lab, 0, Q));
	result(lab, res);
	return lab;
}

Test(audit_engine, classic_message_overtake_after_cut_is_flagged)
{
	struct lab_snapshot_result res;
	struct lab *lab = late_overtake_run(ENGINE_CLASSIC, &res);

	EXPECT_COUNTS(&res.audit, .missing_messages = 1, .extra_messages = 1);
	expect_truth(lab, &res, 1, 1, 0);
	lab_free(lab);
}

Test(audit_engine, counted_message_overtake_after_cut_is_flagged)
{
	struct lab_snapshot_result res;
	struct lab *lab = late_overtake_run(ENGINE_COUNTED, &res);

	EXPECT_COUNTS(&res.audit, .unordered_channels = 1);
	cr_assert_str_eq(res.audit.reason,
	                 "channel p -> q: recorded messages out of sequence");
	expect_truth(lab, &res, 0, 1, 0);
	lab_free(lab);
}

/*
 * The same overtaking message, delivered BEFORE the receiver recorded.  p
 * sends 1, initiates (marker n = 1), sends 2; q gets 2, then the marker,
 * then 1.  q's state holds the receipt of 2, whose send is not in p's
 * state: a receive without its send; and 1, which crossed the cut, is in no
 * state at all.  m counts deliveries, so it is 1 = n and records nothing;
 * only m_high, the highest seq delivered before the cut, shows that 2 was
 * received, and the audit must flag the cut from it.
 */
static void
early_overtake_run(enum engine_mode mode)
{
	struct lab *lab = pq_lab(mode, ENGINE_CUT_ALIGNED, 0);
	struct lab_snapshot_result res;
	struct audit_channel c;

	msg(lab, P);         /* 1 */
	initiate(lab, P);    /* marker n = 1 */
	msg(lab, P);         /* 2, after p's cut */
	deliver(lab, PQ, 3); /* 2, before q's cut */
	deliver(lab, PQ, 2); /* the marker: q records */
	drain(lab);          /* 1, and q's marker to p */
	cr_assert(lab_part_complete(lab, 0, P));
	cr_assert(lab_part_complete(lab, 0, Q));
	result(lab, &res);
	c = recorded(lab, PQ);
	cr_expect_eq(res.audit.consistent, 0,
	             "inconsistent cut passed the audit (q: m=%llu, n=%llu, "
	             "%llu recorded)",
	             (unsigned long long)c.m, (unsigned long long)c.n,
	             (unsigned long long)c.seqs.count);
	EXPECT_COUNTS(&res.audit, .receive_without_send = 1);
	cr_assert_str_eq(res.audit.reason,
	                 "channel p -> q: 1 messages received before the cut "
	                 "but sent after it (m=1, n=1)");
	cr_assert_eq(c.m, 1);
	cr_assert_eq(c.m_high, 2);
	cr_assert_eq(c.n, 1);
	cr_assert_eq(c.seqs.count, 0);
	expect_truth(lab, &res, 1, 0, 1);
	lab_free(lab);
}

Test(audit_engine, classic_message_overtake_before_cut_is_flagged)
{
	early_overtake_run(ENGINE_CLASSIC);
}

Test(audit_engine, counted_message_overtake_before_cut_is_flagged)
{
	early_overtake_run(ENGINE_COUNTED);
}

/*
 * The unaligned cut, with applications that take only at lab_take().  p
 * sends 1 and 2 to q, whose application lags and takes neither; p
 * initiates, answers at once, and its marker reaches q, whose request
 * overtakes both in q's down queue.  q's state holds neither receipt, so
 * both are in transit: the engine hands them back as a queued range and the
 * cut is consistent.  q's application never catches up, so the range is
 * still in its down queue at the end.
 */
static struct lab *
unaligned_lag_run(struct lab_snapshot_result *res)
{
	struct lab *lab = pq_lab(ENGINE_COUNTED, ENGINE_CUT_UNALIGNED, 1);

	msg(lab, P);
	msg(lab, P);
	deliver(lab, PQ, 1);
	deliver(lab, PQ, 1); /* both in q's down queue, not taken */
	initiate(lab, P);
	take(lab, P);        /* p records: its marker counts 2 */
	deliver(lab, PQ, 1); /* the marker: q's request goes ahead */
	cr_assert_eq(lab_down_len(lab, Q), 3);
	cr_assert(lab_down_at(lab, Q, 1)->is_request);
	take(lab, Q); /* q records, having taken neither message */
	drain(lab);   /* q's marker to p */
	cr_assert_eq(lab_down_len(lab, P), 0);
	cr_assert_eq(lab_down_len(lab, Q), 2);
	cr_assert(lab_part_complete(lab, 0, P));
	cr_assert(lab_part_complete(lab, 0, Q));
	result(lab, res);
	return lab;
}

Test(audit_engine, unaligned_queued_messages_are_in_transit)
{
	struct lab_snapshot_result res;
	struct lab *lab = unaligned_lag_run(&res);
	struct audit_channel c = recorded(lab, PQ);

	expect_consistent(&res.audit);
	expect_truth(lab, &res, 0, 0, 0);
	cr_assert_eq(res.queued, 2);
	cr_assert_eq(c.m, 0);
	cr_assert_eq(c.m_high, 0);
	cr_assert_eq(c.n, 2);
	cr_assert_eq(c.seqs.count, 2);
	cr_assert_eq(c.seqs.first, 1);
	cr_assert_eq(c.seqs.last, 2);
	lab_free(lab);
}

/* Whether message seq of channel ch waits in node's down queue. */
static int
in_down_queue(const struct lab *lab, size_t node, size_t ch, uint64_t seq)
{
	for (size_t k = 1; k <= lab_down_len(lab, node); k++) {
		const struct lab_item *it = lab_down_at(lab, node, k);

		if (!it->is_request && it->ch == ch && it->seq == seq)
			return 1;
	}
	return 0;
}

/*
 * A broken caller that drops the queued range loses the in-transit
 * messages, and the audit says so from m (what was taken) and n alone.  The
 * lab is not such a caller: it records the range (the test above).  So
 * this test breaks the input itself: it takes the lab's audit input for
 * the run above, removes from channel p -> q the range -- the messages q's
 * lagging application still holds untaken -- and runs audit_run() on it.
 */
Test(audit_engine, unaligned_range_dropped_is_flagged)
{
	struct lab_snapshot_result res;
	struct lab *lab = unaligned_lag_run(&res);
	struct audit_channel *c = NULL;
	struct lab_audit_input in;
	struct audit_report r;
	uint64_t dropped = 0;

	cr_assert_eq(lab_audit_input(lab, 0, &in), 0);
	run_input(&in.in, &r); /* as it is, what lab_result() audited */
	expect_counts(&r, &res.audit);
	cr_assert_str_eq(r.reason, res.audit.reason);
	for (size_t i = 0; i < in.in.nrecorded; i++)
		if (strcmp(in.recorded[i].src, "p") == 0 &&
		    strcmp(in.recorded[i].dst, "q") == 0)
			c = &in.recorded[i];
	cr_assert_not_null(c);
	audit_seqs_init(&c->seqs);
	for (size_t i = 0; i < lab_recorded_count(lab, 0, PQ); i++) {
		uint64_t seq = lab_recorded_seq(lab, 0, PQ, i);

		if (in_down_queue(lab, Q, PQ, seq))
			dropped++;
		else
			audit_seqs_add(&c->seqs, seq);
	}
	cr_assert_eq(dropped, 2);
	run_input(&in.in, &r);
	EXPECT_COUNTS(&r, .missing_messages = 2);
	cr_assert_str_eq(
	    r.reason,
	    "channel p -> q: 2 in-transit messages not recorded (m=0, n=2, "
	    "recorded 0)");
	lab_audit_input_free(&in);
	lab_free(lab);
}
