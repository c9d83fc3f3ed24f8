/*
 * conds.c - the cluster file's conditions, judged at the initiator.
 *
 * The coordinator says nothing when a snapshot ends (it is sans-I/O and
 * keeps no listeners), so this file follows the snapshots this node
 * started: after every turn's commit it adds the running ones it has not
 * seen to a small list, bounded by max_snapshots_in_flight, and looks up
 * each one on that list in the coordinator's view.  One that has ended
 * (its end is on disk) leaves the list; if its row says complete and
 * consistent, every condition is judged on it on the read-only
 * connection (store/cond.c), one deadline each, and the results go to
 * snapshot_conditions through the store, outside the turn's batch.  A
 * snapshot that starts and ends within one turn would be missed; with
 * peers, that cannot happen (markers take a round trip).
 *
 * Conditions run in the event loop, so together they get COND_BUDGET_MS
 * per snapshot (each at most COND_DEADLINE_MS): that bounds how long a
 * snapshot's end can hold the loop up.
 */
#include <stdlib.h>
#include <string.h>

#include "conds.h"
#include "control.h"
#include "cutd.h"
#include "log.h"

/* The time all conditions together may take on one snapshot. */
#define COND_BUDGET_MS COND_DEADLINE_MAX_MS

int
conds_check(struct cutd *d)
{
	const struct config *cfg = d->cfg;
	struct cond_result r;
	int bad = 0;

	for (size_t i = 0; i < cfg->nconds; i++) {
		struct errinfo e = {0};
		if (cond_eval(d->cond, cfg->conds[i].sql, NULL, 0, &r, &e) == 0)
			continue;
		log_err("%s:%d: [condition %s] %s", cfg->path,
		        cfg->conds[i].line, cfg->conds[i].name, e.text);
		bad = 1;
	}
	return bad;
}

/* Puts a running snapshot started here on the list, once. */
static void
note_running(const char *id, void *arg)
{
	struct cutd *d = arg;
	struct coord_snap_view v;

	for (size_t i = 0; i < d->ncond_pending; i++)
		if (strcmp(d->cond_pending[i], id) == 0)
			return;
	coord_snapshot_view(d->coord, id, &v);
	if (!v.initiator || d->ncond_pending == d->cond_cap)
		return;
	snprintf(d->cond_pending[d->ncond_pending++],
	         sizeof(d->cond_pending[0]), "%s", id);
}

/* Judges every condition on snapshot id and records the results.  All
 * of them share COND_BUDGET_MS, so that one snapshot's end never stalls
 * the loop for longer than that; those left without time are recorded
 * as not judged. */
static void
judge(struct cutd *d, const char *id)
{
	const struct config *cfg = d->cfg;
	int64_t now = cutd_wall_ms(), t0 = cutd_now_ms();

	for (size_t i = 0; i < cfg->nconds; i++) {
		struct cond_stat *cs = &d->cond_stats[i];
		struct cond_result r = {0};
		struct errinfo e = {0};
		const char *detail;
		int held, rv;

		int64_t left = COND_BUDGET_MS - (cutd_now_ms() - t0);

		if (left <= 0)
			rv =
			    err_set(&e, E_LIMIT,
			            "not judged: the conditions' %d ms on this "
			            "snapshot were used up",
			            COND_BUDGET_MS);
		else
			rv = cond_eval(d->cond, cfg->conds[i].sql, id,
			               left < COND_DEADLINE_MS ? (uint32_t)left
			                                       : 0,
			               &r, &e);
		if (rv != 0) {
			held = -1;
			detail = e.text;
			cs->failed++;
			if (rv == E_CORRUPT)
				control_storage_damaged(d, e.text);
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
		if (store_put_condition(d->store, id, cfg->conds[i].name, held,
		                        detail, now) != 0)
			log_warnx("snapshot %s: cannot record condition %s: "
			          "%s",
			          id, cfg->conds[i].name,
			          store_errmsg(d->store));
	}
}

void
conds_turn(struct cutd *d)
{
	size_t i = 0;

	if (d->cfg->nconds == 0 || d->cond == NULL)
		return;
	if (d->cond_pending == NULL) {
		d->cond_cap = d->cfg->max_inflight;
		d->cond_pending = calloc(d->cond_cap, sizeof(*d->cond_pending));
		if (d->cond_pending == NULL) {
			d->cond_cap = 0;
			return;
		}
	}
	coord_foreach_running(d->coord, note_running, d);
	while (i < d->ncond_pending) {
		struct coord_snap_view v;
		struct store_snapshot ss;
		char id[ENGINE_ID_MAX + 1];

		coord_snapshot_view(d->coord, d->cond_pending[i], &v);
		if (v.known && !v.ended) {
			i++;
			continue;
		}
		snprintf(id, sizeof(id), "%s", d->cond_pending[i]);
		/* The last takes its place. */
		d->ncond_pending--;
		memmove(d->cond_pending[i], d->cond_pending[d->ncond_pending],
		        sizeof(d->cond_pending[0]));
		if (store_get(d->store, id, &ss) == 0 &&
		    ss.status == STORE_COMPLETE && ss.consistent == 1 &&
		    ss.is_initiator)
			judge(d, id);
	}
}

void
conds_free(struct cutd *d)
{
	free(d->cond_pending);
	d->cond_pending = NULL;
	d->ncond_pending = d->cond_cap = 0;
}
