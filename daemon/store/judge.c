/*
 * judge.c - the cluster file's conditions, judged at the initiator (see
 * judge.h).
 */
#include <stdlib.h>
#include <string.h>

#include "judge.h"
#include "log.h"

int
judge_check(const struct config *cfg, struct cond *cond)
{
	struct cond_result r;
	int bad = 0;

	for (size_t i = 0; i < cfg->nconds; i++) {
		struct errinfo e = {0};
		if (cond_eval(cond, cfg->conds[i].sql, NULL, 0, &r, &e) == 0)
			continue;
		log_err("%s:%d: [condition %s] %s", cfg->path,
		        cfg->conds[i].line, cfg->conds[i].name, e.text);
		bad = 1;
	}
	return bad;
}

/* Judges every condition on snapshot id and records the results.  All
 * of them share JUDGE_BUDGET_MS, so that one snapshot's end never stalls
 * the loop for longer than that; those left without time are recorded
 * as not judged. */
static void
judge_one(struct judge *j, const char *id)
{
	const struct config *cfg = j->cfg;
	int64_t now = j->wall_ms(j->arg), t0 = j->now_ms(j->arg);

	for (size_t i = 0; i < cfg->nconds; i++) {
		struct cond_stat *cs = &j->stats[i];
		struct cond_result r = {0};
		struct errinfo e = {0};
		const char *detail;
		int held, rv;
		int64_t left = JUDGE_BUDGET_MS - (j->now_ms(j->arg) - t0);

		if (left <= 0)
			rv =
			    err_set(&e, E_LIMIT,
			            "not judged: the conditions' %d ms on this "
			            "snapshot were used up",
			            JUDGE_BUDGET_MS);
		else
			rv = cond_eval(j->cond, cfg->conds[i].sql, id,
			               left < COND_DEADLINE_MS ? (uint32_t)left
			                                       : 0,
			               &r, &e);
		if (rv != 0) {
			held = -1;
			detail = e.text;
			cs->failed++;
			if (rv == E_CORRUPT && j->damaged != NULL)
				j->damaged(j->arg, e.text);
			log_warnx("snapshot %s: condition %s could not be "
			          "judged: %s",
			          id, cfg->conds[i].name, e.text);
		} else {
			held = r.held;
			detail = r.value;
			if (held)
				cs->held++;
			else
				cs->not_held++;
			log_notice("snapshot %s: condition %s %s (%s)", id,
			           cfg->conds[i].name,
			           held ? "holds" : "does not hold", r.value);
		}
		cs->evaluated++;
		cs->last_held = held;
		cs->last_ms = now;
		snprintf(cs->last_id, sizeof(cs->last_id), "%s", id);
		snprintf(cs->last_detail, sizeof(cs->last_detail), "%s",
		         detail);
		if (store_put_condition(j->store, id, cfg->conds[i].name, held,
		                        detail, now) != 0)
			log_warnx("snapshot %s: cannot record condition %s: "
			          "%s",
			          id, cfg->conds[i].name,
			          store_errmsg(j->store));
	}
}

void
judge_event(struct judge *j, const struct coord_event *ev)
{
	struct store_snapshot ss;

	if (j->cfg->nconds == 0 || j->cond == NULL ||
	    ev->kind != COORD_EV_SNAP_ENDED || !ev->initiator || !ev->complete)
		return;
	/* The row, not the event, says whether the audit found it
	 * consistent. */
	if (store_get(j->store, ev->id, &ss) == 0 &&
	    ss.status == STORE_COMPLETE && ss.consistent == 1 &&
	    ss.is_initiator)
		judge_one(j, ev->id);
}
