/*
 * labprops.c - property runs of the engine over random lab scenarios.
 *
 * A "problem" is anything a correct engine and audit would never show: a
 * wrong snapshot the audit passed (silent), always; an incomplete
 * snapshot, or a right one the audit failed, unless application messages
 * themselves were reordered; and, where the configuration promises right
 * snapshots (FIFO, or counting markers that only markers overtake), any
 * wrong one.  When application messages are reordered no marker rule can
 * promise a consistent cut without tagging every message, and a counted
 * channel may wait forever for a message that was delivered early: the
 * audit must then reject every wrong cut, and may reject a right one it
 * cannot prove.
 *
 * Queued applications take their down queues at random steps, and the
 * ground truth judges by those take steps, so an unaligned cut that
 * recorded what the application had not taken, or missed a queued
 * message, is wrong here even if it agrees with itself.
 */
#include "labprops.h"

#include <stdio.h>
#include <string.h>

#include "lab.h"

#define MAX_NODES 12
#define MAX_SNAPS 5

static uint64_t
below(struct lab_rng *r, uint64_t n)
{
	return lab_rng_below(r, n);
}

static int
build(struct lab *lab, struct lab_rng *r)
{
	size_t n = 2 + below(r, MAX_NODES - 1);
	char a[24], b[24];
	int rv;

	for (size_t i = 0; i < n; i++) {
		snprintf(a, sizeof(a), "n%zu", i);
		if ((rv = lab_add_node(lab, a, (int64_t)below(r, 21))) != 0)
			return rv;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			int ring = j == (i + 1) % n;
			if (i == j || (!ring && below(r, 10) >= 3))
				continue;
			snprintf(a, sizeof(a), "n%zu", i);
			snprintf(b, sizeof(b), "n%zu", j);
			if ((rv = lab_add_channel(lab, a, b)) != 0)
				return rv;
		}
	return lab_start(lab);
}

static int
random_send(struct lab *lab, struct lab_rng *r)
{
	size_t ch = below(r, lab_channels(lab)), src, dst;
	int64_t bal;

	lab_channel_ends(lab, ch, &src, &dst);
	bal = lab_balance(lab, src);
	if (bal <= 0)
		return 0;
	return lab_send(lab, lab_node_name(lab, src), lab_node_name(lab, dst),
	                1 + (int64_t)below(r, (uint64_t)(bal < 5 ? bal : 5)));
}

/* Picks a deliverable frame: the head; with overtaking, any marker (an
 * application message never passes an older frame); or anything. */
static int
random_deliver(struct lab *lab, struct lab_rng *r, enum labprops_order order)
{
	size_t nch = lab_channels(lab), start = below(r, nch);

	for (size_t i = 0; i < nch; i++) {
		size_t ch = (start + i) % nch, len = lab_queue_len(lab, ch);
		size_t k = 1;

		if (len == 0)
			continue;
		if (order != LABPROPS_FIFO) {
			k = 1 + below(r, len);
			if (order == LABPROPS_OVERTAKE &&
			    !lab_queue_at(lab, ch, k)->is_marker)
				k = 1;
		}
		return lab_deliver(lab, ch, k);
	}
	return 0;
}

/* A random node's application takes one to three items, if any node has
 * something queued. */
static int
random_take(struct lab *lab, struct lab_rng *r)
{
	size_t n = lab_nodes(lab), start = below(r, n);

	for (size_t i = 0; i < n; i++) {
		size_t v = (start + i) % n, k;
		int rv;

		if (lab_down_len(lab, v) == 0)
			continue;
		for (k = 1 + below(r, 3); k > 0 && lab_down_len(lab, v) > 0;
		     k--)
			if ((rv = lab_take(lab, v)) != 0)
				return rv;
		return 0;
	}
	return 0;
}

static int
have_frames(const struct lab *lab)
{
	for (size_t ch = 0; ch < lab_channels(lab); ch++)
		if (lab_queue_len(lab, ch) > 0)
			return 1;
	return 0;
}

static int
have_items(const struct lab *lab)
{
	for (size_t v = 0; v < lab_nodes(lab); v++)
		if (lab_down_len(lab, v) > 0)
			return 1;
	return 0;
}

/* With queued applications: deliveries and takes at random until every
 * channel and every down queue is empty, so that snapshots started late
 * still meet lagging applications. */
static int
drain_queued(struct lab *lab, struct lab_rng *r, enum labprops_order order)
{
	int rv = 0;

	while (rv == 0) {
		int frames = have_frames(lab), items = have_items(lab);

		if (!frames && !items)
			break;
		if (frames && (!items || below(r, 2)))
			rv = random_deliver(lab, r, order);
		else
			rv = random_take(lab, r);
	}
	return rv;
}

static int
drain(struct lab *lab)
{
	int moved = 1, rv;

	while (moved) {
		moved = 0;
		for (size_t ch = 0; ch < lab_channels(lab); ch++)
			if (lab_queue_len(lab, ch) > 0) {
				if ((rv = lab_deliver(lab, ch, 1)) != 0)
					return rv;
				moved = 1;
			}
	}
	return 0;
}

/* One random step: a send or a delivery, and with queued applications a
 * take as well. */
static int
random_step(struct lab *lab, struct lab_rng *r, enum labprops_order order)
{
	if (!lab_queued_apps(lab))
		return below(r, 2) ? random_send(lab, r)
		                   : random_deliver(lab, r, order);
	switch (below(r, 3)) {
	case 0:
		return random_send(lab, r);
	case 1:
		return random_deliver(lab, r, order);
	}
	return random_take(lab, r);
}

static int
play(struct lab *lab, struct lab_rng *r, enum labprops_order order)
{
	size_t steps = 20 + below(r, 100), nsnaps = 1 + below(r, MAX_SNAPS);
	size_t when[MAX_SNAPS];
	int rv = 0;

	for (size_t i = 0; i < nsnaps; i++)
		when[i] = below(r, steps);
	for (size_t t = 0; t < steps && rv == 0; t++) {
		for (size_t i = 0; i < nsnaps && rv == 0; i++)
			if (when[i] == t)
				rv = lab_snapshot(
				    lab,
				    lab_node_name(lab,
				                  below(r, lab_nodes(lab))),
				    NULL);
		if (rv == 0)
			rv = random_step(lab, r, order);
	}
	if (rv != 0)
		return rv;
	return lab_queued_apps(lab) ? drain_queued(lab, r, order) : drain(lab);
}

/* Whether every snapshot must come out right: with FIFO channels, or
 * with counting markers as long as messages never pass a marker. */
static int
promises_right(enum engine_mode mode, enum labprops_order order)
{
	return order == LABPROPS_FIFO ||
	       (order == LABPROPS_OVERTAKE && mode == ENGINE_COUNTED);
}

static void
tally(const struct lab *lab, const struct lab_snapshot_result *s,
      struct labprops_result *res)
{
	int conserved = s->node_total + s->channel_total == lab_total(lab);
	int wrong =
	    !conserved || s->missing || s->extra || s->receive_without_send;

	res->snapshots++;
	res->incomplete += !s->complete;
	res->not_conserved += !conserved;
	res->wrong += wrong;
	res->flagged += wrong && !s->audit.consistent;
	res->silent += wrong && s->audit.consistent;
	res->false_alarms += !wrong && !s->audit.consistent;
	res->overtakes += s->overtakes;
	res->queued += s->queued;
}

/* Whether the last scenario showed something its configuration rules
 * out; see the top of this file. */
static int
bad(const struct labprops_result *now, const struct labprops_result *before,
    enum engine_mode mode, enum labprops_order order)
{
	if (now->silent != before->silent)
		return 1;
	if (order == LABPROPS_ANY)
		return 0;
	return now->incomplete != before->incomplete ||
	       now->false_alarms != before->false_alarms ||
	       (promises_right(mode, order) && now->wrong != before->wrong);
}

static int
scenario(uint64_t seed, const struct labprops_options *o,
         struct labprops_result *res)
{
	struct lab_snapshot_result s;
	struct labprops_result before = *res;
	struct lab_rng r = {seed};
	struct lab *lab = NULL;
	int rv;

	if ((rv = lab_new(o->mode, &lab)) != 0)
		return rv;
	if ((rv = lab_set_cut(lab, o->cut)) != 0 ||
	    (rv = lab_set_queued_apps(lab, o->queued_apps)) != 0)
		goto out;
	if ((rv = build(lab, &r)) != 0 || (rv = play(lab, &r, o->order)) != 0)
		goto out;
	for (size_t i = 0; i < lab_snapshots(lab); i++) {
		if ((rv = lab_result(lab, i, &s)) != 0)
			goto out;
		tally(lab, &s, res);
	}
	res->scenarios++;
	if (!res->have_bad && bad(res, &before, o->mode, o->order)) {
		res->have_bad = 1;
		res->first_bad_seed = seed;
	}
out:
	lab_free(lab);
	return rv;
}

int
labprops_run_opts(uint64_t seed, uint64_t n,
                  const struct labprops_options *opts,
                  struct labprops_result *ret)
{
	struct labprops_result res;
	int rv;

	if (opts->cut == ENGINE_CUT_UNALIGNED &&
	    (opts->mode != ENGINE_COUNTED || opts->order == LABPROPS_ANY))
		return E_INVAL;
	memset(&res, 0, sizeof(res));
	for (uint64_t i = 0; i < n; i++)
		if ((rv = scenario(seed + i, opts, &res)) != 0)
			return rv;
	*ret = res;
	return 0;
}

int
labprops_run(uint64_t seed, uint64_t n, enum engine_mode mode,
             enum labprops_order order, struct labprops_result *ret)
{
	struct labprops_options o = {mode, order, ENGINE_CUT_ALIGNED, 0};

	return labprops_run_opts(seed, n, &o, ret);
}
