/*
 * judge.h - the cluster file's conditions ([condition NAME]), judged on
 * every complete, consistent snapshot this node initiated.
 *
 * The coordinator tells when a snapshot ends (COORD_EV_SNAP_ENDED, once
 * its end is on disk), and the loop hands each such event to the judge
 * (judge_event()).  For a snapshot this node initiated whose row says
 * complete and consistent, every condition is judged on the read-only
 * connection (cond.c), one deadline each, and the results go to
 * snapshot_conditions through the store, outside the turn's batch.
 *
 * Conditions run in the daemon's loop, so together they get
 * JUDGE_BUDGET_MS per snapshot (each at most COND_DEADLINE_MS): that
 * bounds how long a snapshot's end can hold the loop up.  cutd hands it
 * the events (shell/port.c), and so does every node of `cutlab sim`.
 */
#ifndef CUT_JUDGE_H
#define CUT_JUDGE_H

#include <stdint.h>

#include "config.h"
#include "coord.h"
#include "cond.h"
#include "engine.h"
#include "store.h"

/* The time all conditions together may take on one snapshot. */
#define JUDGE_BUDGET_MS COND_DEADLINE_MAX_MS

/* What status shows of one condition. */
struct cond_stat {
	uint64_t evaluated, held, not_held, failed;
	char last_id[ENGINE_ID_MAX + 1]; /* "" before the first */
	int last_held;                   /* 1, 0, -1 could not be judged */
	char last_detail[256];
	int64_t last_ms; /* wall clock */
};

struct judge {
	const struct config *cfg;
	struct store *store;
	struct cond *cond; /* NULL: nothing is judged */
	/* A monotonic clock in ms for the budget, and the wall clock the
	 * results are stamped with. */
	int64_t (*now_ms)(void *arg);
	int64_t (*wall_ms)(void *arg);
	/* The database turned out damaged while judging (E_CORRUPT). */
	void (*damaged)(void *arg, const char *why);
	void *arg;

	struct cond_stat stats[CONFIG_MAX_CONDITIONS];
};

/* Checks that every condition of cfg prepares and is allowed, against
 * the database open in cond; logs each that does not, naming the file
 * and section, and returns 1 if any did not. */
int judge_check(const struct config *cfg, struct cond *cond);

/* An event of the coordinator: a snapshot this node initiated that
 * ended complete and consistent gets every condition judged. */
void judge_event(struct judge *j, const struct coord_event *ev);

#endif
