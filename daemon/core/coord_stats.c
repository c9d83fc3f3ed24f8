/*
 * coord_stats.c - the coordinator's counters for metrics: snapshots
 * started and ended (with aborts in reason classes and a histogram of
 * durations), recorded messages, failed commits, and per link what the
 * shell's status does not show already.
 *
 * Pure like the rest of the coordinator: a duration is the difference of
 * two times the caller gave (coord_set_time()); nothing here reads a
 * clock or does I/O.  The other coordinator files call the
 * coord_stats_*() hooks, each one line at the place the event happens.
 */
#include <string.h>

#include "coord_int.h"

const uint32_t coord_duration_le_ms[COORD_DURATION_BUCKETS] = {
    5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000};

static const char *const class_names[COORD_ABORT_CLASSES] = {
    "deadline", "storage", "peer", "app", "other"};

const char *
coord_abort_class_name(enum coord_abort_class k)
{
	return k < COORD_ABORT_CLASSES ? class_names[k] : "other";
}

/* 1 if word occurs in the first len bytes of s. */
static int
has(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(s + i, word, n) == 0)
			return 1;
	return 0;
}

enum coord_abort_class
coord_abort_classify(const char *reason)
{
	size_t len;

	if (reason == NULL)
		return COORD_ABORT_OTHER;
	/* Reasons are gathered root causes first: the first clause is the
	 * one that names what went wrong. */
	len = strcspn(reason, ";");
	if (has(reason, len, "storage") || has(reason, len, "cannot store"))
		return COORD_ABORT_STORAGE;
	if (has(reason, len, "application"))
		return COORD_ABORT_APP;
	if (has(reason, len, "restarted") || has(reason, len, "silent") ||
	    has(reason, len, "numbering") || has(reason, len, "afresh") ||
	    has(reason, len, "cannot send"))
		return COORD_ABORT_PEER;
	if (has(reason, len, "deadline") || has(reason, len, "no marker") ||
	    has(reason, len, "no part"))
		return COORD_ABORT_DEADLINE;
	return COORD_ABORT_OTHER;
}

void
coord_stats_started(struct coord *c)
{
	c->stats.started++;
}

void
coord_stats_ended(struct coord *c, int complete, const char *reason,
                  int64_t started_ms)
{
	uint64_t ms;
	size_t b = 0;

	if (!complete) {
		c->stats.aborted[coord_abort_classify(reason)]++;
		return;
	}
	ms = c->now > started_ms ? (uint64_t)(c->now - started_ms) : 0;
	while (b < COORD_DURATION_BUCKETS && ms > coord_duration_le_ms[b])
		b++;
	c->stats.completed++;
	c->stats.duration_count[b]++;
	c->stats.duration_sum_ms += ms;
}

void
coord_stats_recorded(struct coord *c, size_t len)
{
	c->stats.recorded_msgs++;
	c->stats.recorded_bytes += len;
}

void
coord_counters(const struct coord *c, struct coord_counters *ret)
{
	*ret = c->stats;
}

void
coord_link_stats(const struct coord *c, size_t node,
                 struct coord_link_stats *ret)
{
	const struct peer *p = &c->peers[node];

	memset(ret, 0, sizeof(*ret));
	if (node == c->self)
		return;
	ret->sent_bytes = p->sent_bytes;
	ret->received_bytes = p->recv_bytes;
	ret->reconnects = p->ups > 0 ? p->ups - 1 : 0;
	ret->items_resent = link_resent(p->out);
	ret->items_dup = link_dups(p->in);
	ret->unacked_items = link_unacked(p->out);
	ret->held_items = link_held(p->in);
	ret->inflight_items = fifo_count(&p->inflight);
}
