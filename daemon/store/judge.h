/*
 * judge.h - the cluster file's conditions ([condition NAME]), judged on
 * every complete, consistent snapshot this node initiated.
 *
 * The coordinator says nothing when a snapshot ends (it is sans-I/O and
 * keeps no listeners), so a judge follows the snapshots its node started:
 * after every turn's commit (judge_turn()) it adds the running ones it has
 * not seen to a small list, bounded by max_snapshots_in_flight, and looks
 * up each one on that list in the coordinator's view.  One that has ended
 * (its end is on disk) leaves the list; if its row says complete and
 * consistent, every condition is judged on it on the read-only connection
 * (cond.c), one deadline each, and the results go to snapshot_conditions
 * through the store, outside the turn's batch.  A snapshot that starts and
 * ends within one turn would be missed; with peers, that cannot happen
 * (markers take a round trip).
 *
 * Conditions run in the daemon's loop, so together they get
 * JUDGE_BUDGET_MS per snapshot (each at most COND_DEADLINE_MS): that
 * bounds how long a snapshot's end can hold the loop up.  cutd runs this
 * after each turn (shell/port.c), and so does every node of `cutlab sim`.
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
	struct coord *coord;
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
	char (*pending)[ENGINE_ID_MAX + 1];
	size_t npending, cap;
};

/* Checks that every condition of cfg prepares and is allowed, against
 * the database open in cond; logs each that does not, naming the file
 * and section, and returns 1 if any did not. */
int judge_check(const struct config *cfg, struct cond *cond);

/* After a turn's commit: notes the snapshots started here that are
 * running, and judges every condition on each of them that has ended
 * complete and consistent. */
void judge_turn(struct judge *j);

/* Frees what judge_turn() keeps. */
void judge_free(struct judge *j);

#endif
