/*
 * conds.h - the cluster file's conditions ([condition NAME]), judged by
 * the daemon on every complete, consistent snapshot it initiated.
 */
#ifndef CUT_CONDS_H
#define CUT_CONDS_H

#include <stdint.h>

#include "config.h"
#include "engine.h"

struct cutd;

/* What status shows of one condition. */
struct cond_stat {
	uint64_t evaluated, held, not_held, failed;
	char last_id[ENGINE_ID_MAX + 1]; /* "" before the first */
	int last_held;                   /* 1, 0, -1 could not be judged */
	char last_detail[256];
	int64_t last_ms; /* wall clock */
};

/* Checks that every condition of the cluster file prepares and is
 * allowed, against the open database; logs each that does not, naming
 * the file and section, and returns 1 if any did not. */
int conds_check(struct cutd *d);

/* After a turn's commit: notes the snapshots started here that are
 * running, and judges every condition on each of them that has ended
 * complete and consistent since, logging the outcome and recording it
 * in snapshot_conditions.  Nothing to do without conditions. */
void conds_turn(struct cutd *d);

/* Frees what conds_turn() keeps. */
void conds_free(struct cutd *d);

#endif /* CUT_CONDS_H */
