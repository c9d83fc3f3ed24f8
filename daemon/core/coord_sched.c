/*
 * coord_sched.c - what happens around snapshots rather than in them: the
 * schedule that starts them, the outcome the initiator tells its
 * participants, retention, and deletions that reach every node.
 *
 * Schedule.  Time is cut into ticks of cfg->sched_interval_ms by the wall
 * clock: tick k covers [k * interval, (k + 1) * interval).  Each daemon
 * decides alone whether a tick is its own: always, never, or (rotate)
 * when k mod N is its index.  No message is exchanged, so rotation
 * relies on roughly synchronized clocks: two nodes whose clocks differ
 * by d see a tick change d apart, and a tick may then be started by two
 * nodes (each thinks it is its own) or by none; every snapshot is still
 * an ordinary, consistent one.  A clock set back repeats no tick (ticks
 * only move forward); one set forward, or a daemon that was busy, starts
 * one snapshot for all the ticks it jumped.  While the last scheduled
 * snapshot started here is still running, a tick of ours is skipped and
 * counted, never stacked.  Pause is this daemon's alone and lasts until
 * it restarts.
 *
 *   IDLE --tick of ours, not paused--> start: RUNNING(id)
 *   RUNNING(id) --tick of ours--> skipped++ ; --id ended--> IDLE
 *   any --tick of ours while paused--> paused_ticks++
 *
 * Outcomes.  When a snapshot it initiated ends, the initiator queues a
 * PeerOutcome to every other node (complete with the audit verdict, or
 * aborted with the reason); each participant that holds it stores it in
 * its row.  The item rides the reliable link, so a participant that is
 * down or cut off gets it when the link resumes; one whose daemon or
 * the initiator's restarted in between does not (its row keeps its own
 * part's end, and show says the outcome is unknown).
 *
 * Deletions.  Deleting a snapshot this node initiated (Delete, or
 * retention) deletes every node's copy: one row per other node goes into
 * forget_pending in the same batch as the delete, and a PeerForget to
 * each.  A participant deletes its copy and answers PeerForgotten, which
 * clears the row.  Links reset when either side restarts, dropping what
 * was queued, so the rows for a node are sent again whenever that node's
 * epoch is learned or changes (its restart, or ours), and every
 * FORGET_RESEND_MS to the nodes alive (an answer's batch can fail, and a
 * participant still running the snapshot does not answer).  At most
 * FORGET_MAX rows per node are kept; past that a deletion is sent once,
 * unrecorded, and logged.
 *
 * Retention.  An initiator applies [retention] to its own ended
 * snapshots, after each of them ends and every RETAIN_EVERY_MS (for the
 * age rules): kept ones stay; of the others, the newest keep_last
 * complete ones stay, and so do complete ones younger than keep_for
 * (when set); aborted ones stay for keep_aborted.  At most RETAIN_BATCH
 * deletions go in one turn; the rest follow at the next pass.  After a
 * turn with deletions commits, the store gives the freed pages back and
 * truncates the WAL, at most every RECLAIM_EVERY_MS.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "cutproto.h"
#include "log.h"

#define RETAIN_EVERY_MS  (60 * 1000)
#define RETAIN_BATCH     64
#define RECLAIM_EVERY_MS 1000
#define FORGET_RESEND_MS 5000

/* ---- Schedule ---- */

/* The wall-clock tick containing wall. */
static int64_t
tick_of(const struct coord *c, int64_t wall)
{
	int64_t iv = c->cfg->sched_interval_ms;

	return wall >= 0 ? wall / iv : -((-wall + iv - 1) / iv);
}

/* 1 if tick k is started by this node. */
static int
tick_mine(const struct coord *c, int64_t k)
{
	long who = c->cfg->sched_initiator;

	if (who == SCHED_ROTATE)
		return (size_t)(k % (int64_t)c->cfg->nnodes) == c->self;
	return (size_t)who == c->self;
}

void
sched_init(struct coord *c)
{
	memset(&c->sched, 0, sizeof(c->sched));
	/* The tick we start in is not a fresh one: the first snapshot
	 * comes at the next boundary, not at every restart. */
	if (c->cfg->sched_interval_ms != 0)
		c->sched.last_tick = tick_of(c, c->wall);
}

static int
sched_running(struct coord *c)
{
	struct snap *s;

	if (c->sched.last_id[0] == '\0' ||
	    (s = snap_find(c, c->sched.last_id)) == NULL)
		return 0;
	return s->state == SNAP_RUNNING || s->state == SNAP_WAITING;
}

static void
sched_tick(struct coord *c)
{
	struct coord_sched *sc = &c->sched;
	char id[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	int64_t k;

	if (c->cfg->sched_interval_ms == 0)
		return;
	k = tick_of(c, c->wall);
	if (k <= sc->last_tick) {
		sc->last_tick = k; /* a clock set back repeats no tick */
		return;
	}
	sc->last_tick = k;
	if (!tick_mine(c, k))
		return;
	sc->ticks++;
	if (sc->paused) {
		sc->paused_ticks++;
		return;
	}
	if (sched_running(c)) {
		sc->skipped++;
		log_info("schedule: tick skipped, %s is still running",
		         sc->last_id);
		return;
	}
	if (coord_start(c, c->cfg->sched_timeout_ms, id, &e) != 0) {
		sc->failed++;
		log_warnx("schedule: cannot start a snapshot: %s", e.text);
		return;
	}
	sc->started++;
	memcpy(sc->last_id, id, sizeof(sc->last_id));
	log_info("schedule: started %s", id);
}

/* The wall-clock start of the next tick that is this node's, or 0. */
static int64_t
next_mine(const struct coord *c)
{
	int64_t k = c->sched.last_tick + 1;

	if (c->cfg->sched_interval_ms == 0)
		return 0;
	for (size_t i = 0; i <= c->cfg->nnodes; i++, k++)
		if (tick_mine(c, k))
			return k * (int64_t)c->cfg->sched_interval_ms;
	return 0;
}

int
sched_next_timer(struct coord *c, int max)
{
	int64_t at, ms;

	if (c->cfg->sched_interval_ms == 0)
		return max;
	/* Every boundary, ours or not: last_tick must follow the clock. */
	at = (c->sched.last_tick + 1) * (int64_t)c->cfg->sched_interval_ms;
	ms = at - c->wall;
	if (ms < 0)
		ms = 0;
	return ms < max ? (int)ms : max;
}

void
coord_schedule_view(struct coord *c, struct coord_sched_view *ret)
{
	const struct coord_sched *sc = &c->sched;

	memset(ret, 0, sizeof(*ret));
	if ((ret->configured = c->cfg->sched_interval_ms != 0) == 0)
		return;
	ret->interval_ms = c->cfg->sched_interval_ms;
	ret->initiator = c->cfg->sched_initiator == SCHED_ROTATE
	                     ? "rotate"
	                     : c->cfg->nodes[c->cfg->sched_initiator].name;
	ret->timeout_ms = c->cfg->sched_timeout_ms ? c->cfg->sched_timeout_ms
	                                           : c->cfg->deadline_ms;
	ret->paused = sc->paused;
	ret->ticks = sc->ticks;
	ret->started = sc->started;
	ret->skipped = sc->skipped;
	ret->paused_ticks = sc->paused_ticks;
	ret->failed = sc->failed;
	ret->last_id = sc->last_id;
	ret->next_tick_ms = next_mine(c);
}

int
coord_schedule_pause(struct coord *c, int paused, struct errinfo *e)
{
	if (c->cfg->sched_interval_ms == 0)
		return err_set(e, E_CONFIG,
		               "the cluster file has no [schedule]");
	if (c->sched.paused != (paused != 0))
		log_notice("schedule %s at this node",
		           paused ? "paused" : "resumed");
	c->sched.paused = paused != 0;
	return 0;
}

/* ---- Outcomes ---- */

/* Fills o (and item) with how snapshot id ended. */
static void
outcome_item(Cut__V1__PeerItem *item, Cut__V1__PeerOutcome *o, const char *id,
             int complete, const char *reason, int consistent,
             const char *audit_reason, uint32_t parts)
{
	o->snapshot_id = (char *)id;
	o->complete = complete != 0;
	o->reason = reason != NULL && reason[0] != '\0' ? (char *)reason : NULL;
	if (complete && consistent >= 0) {
		o->has_consistent = 1;
		o->consistent = consistent != 0;
		o->audit_reason = audit_reason != NULL && audit_reason[0] != '\0'
		                      ? (char *)audit_reason
		                      : NULL;
	}
	o->has_parts = 1;
	o->parts = parts;
	item->item_case = CUT__V1__PEER_ITEM__ITEM_OUTCOME;
	item->outcome = o;
}

void
sched_tell_outcome(struct coord *c, const struct snap *s, int complete,
                   const char *reason, int consistent,
                   const char *audit_reason)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerOutcome o = CUT__V1__PEER_OUTCOME__INIT;
	char what[ENGINE_ID_MAX + 20];

	coord_stats_ended(c, complete, reason, s->started_ms);
	outcome_item(&item, &o, s->id, complete, reason, consistent,
	             audit_reason, (uint32_t)s->parts_done);
	/* A full link leaves that node with its own part's end: it shows
	 * the outcome as not known, never a wrong one (and it goes again
	 * when either side restarts: resend_outcomes()). */
	snprintf(what, sizeof(what), "the outcome of %s", s->id);
	peer_push_all(c, &item, &o.seq, what);
	c->retain_due = 1;
}

/* Outcomes told again to a node whose link started afresh: the newest
 * this many of this node's ended snapshots. */
#define OUTCOME_RESEND 64

struct recent {
	char ids[OUTCOME_RESEND][ENGINE_ID_MAX + 1];
	size_t n;
};

static int
recent_one(const char *id, int complete, int keep, int64_t ended_ms, void *arg)
{
	struct recent *r = arg;

	(void)complete;
	(void)keep;
	(void)ended_ms;
	if (r->n == OUTCOME_RESEND)
		return 1; /* enough: stops the walk */
	snprintf(r->ids[r->n++], ENGINE_ID_MAX + 1, "%s", id);
	return 0;
}

/* Whether the end of s, one of this node's snapshots, is known to
 * memory alone: its row went with a lost batch (unsaved), or it ended in
 * the open batch after a write of that batch failed, so that the batch
 * is lost whatever it reads back.  The second is how a peer's restart
 * ends a snapshot in a turn whose storage fails: the abort's outcome went
 * on the peer's old link, which the restart then drops, and the row it
 * would be told again from is not written (seeds 61590, 62179). */
static int
end_only_in_memory(const struct coord *c, const struct snap *s)
{
	if (s->unsaved)
		return 1;
	return (c->write_failed || c->begin_failed) &&
	       s->ended_gen == c->batch_gen;
}

/* The outcomes went on a link that is gone (either side restarted, or a
 * restore reset it): the node may never have heard them.  They go again,
 * for the newest of this node's snapshots; a node that holds one of them
 * stores it again (the same values), one that does not ignores it. */
static void
resend_outcomes(struct coord *c, size_t node)
{
	struct recent *r = calloc(1, sizeof(*r));
	struct store_snapshot row;
	const struct snap *s;
	int rv;

	if (r == NULL)
		return;
	rv = DB(c, retain_foreach, recent_one, r);
	if (rv != 0 && rv != 1) {
		log_warnx("cannot read the outcomes to tell %s: %s",
		          c->cfg->nodes[node].name, DB_ERR(c));
		free(r);
		return;
	}
	for (size_t i = r->n; i-- > 0;) {
		Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
		Cut__V1__PeerOutcome o = CUT__V1__PEER_OUTCOME__INIT;
		if (DB(c, get, r->ids[i], &row) != 0 ||
		    row.status == STORE_IN_PROGRESS)
			continue;
		/* The parts as this node lists them: from memory while it
		 * holds the snapshot there, as sched_tell_outcome() said. */
		s = snap_find(c, row.id);
		if (s != NULL && end_only_in_memory(c, s))
			continue; /* told below, once */
		outcome_item(&item, &o, row.id, row.status == STORE_COMPLETE,
		             row.reason, row.consistent, row.audit_reason,
		             s != NULL ? (uint32_t)s->parts_done : row.parts);
		o.seq = peer_next_seq(c, node);
		if (peer_push_item(c, node, &item) != 0)
			break; /* the link is full: the rest at the next epoch */
	}
	free(r);
	/* And the aborts the database does not hold, which only memory
	 * holds until the database takes them (coord_snap.c). */
	for (s = c->snaps; s != NULL; s = s->next) {
		Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
		Cut__V1__PeerOutcome o = CUT__V1__PEER_OUTCOME__INIT;
		if (s->initiator != c->self || s->state != SNAP_ABORTED ||
		    !end_only_in_memory(c, s))
			continue;
		outcome_item(&item, &o, s->id, 0, s->why, -1, NULL,
		             (uint32_t)s->parts_done);
		o.seq = peer_next_seq(c, node);
		if (peer_push_item(c, node, &item) != 0)
			break;
	}
}

static void note_forgotten(struct coord *c, const char *id);
static void keep_late(struct coord *c, struct late_rec *list, size_t *n,
                      size_t node, const char *id);

/* Keeps outcome r, which a failed write lost, to store it again once the
 * database works. */
static void
keep_outcome(struct coord *c, const struct outcome_rec *r)
{
	if (c->nout_retry == OUTCOMES_KEEP) {
		long from = snap_initiator_of(c, r->id);
		log_warnx("snapshot %s: its outcome was lost with a failed "
		          "write, and too many others wait to be stored "
		          "again; its initiator will be asked for it again",
		          r->id);
		if (from >= 0 && (size_t)from != c->self)
			c->peers[from].ask_outcomes = 1;
		return;
	}
	c->out_retry[c->nout_retry++] = *r;
}

/* Stores outcome r in the open batch, and keeps it until the batch
 * commits.  0, E_NOENT (no row here), E_INVAL, or the store's error. */
static int
store_outcome(struct coord *c, const struct outcome_rec *r)
{
	int rv;

	coord_db(c);
	rv = DB(c, set_outcome, r->id,
	        r->complete ? STORE_COMPLETE : STORE_ABORTED, r->reason,
	        r->consistent, r->audit_reason, r->parts, r->wall);
	if (rv == E_NOENT) {
		/* Its row is still to be written (an end a lost batch took,
		 * which waits for the database): again later.  Or not
		 * recorded here, or deleted: over, whatever marker comes
		 * late. */
		const struct snap *held = snap_find(c, r->id);
		if (held != NULL && !held->no_row &&
		    (held->unsaved || c->write_failed ||
		     c->degraded[0] != '\0'))
			keep_outcome(c, r);
		else if (held == NULL || held->no_row)
			/* (One refused here while degraded never has a row.) */
			note_forgotten(c, r->id);
		return rv;
	}
	if (rv == E_INVAL || rv == E_STATE)
		return E_INVAL;
	if (rv != 0) {
		coord_write_failed(c, "cannot store a snapshot's outcome");
		keep_outcome(c, r);
		return rv;
	}
	if (c->nout_batch < OUTCOMES_KEEP)
		c->out_batch[c->nout_batch++] = *r;
	return 0;
}

int
sched_outcome(struct coord *c, size_t from, const Cut__V1__PeerOutcome *o)
{
	struct outcome_rec r = {
	    .complete = o->complete != 0,
	    .consistent =
	        o->complete && o->has_consistent ? (int)o->consistent : -1,
	    .parts = o->has_parts ? o->parts : 0,
	    .wall = c->wall,
	};
	struct snap *s;
	int rv;

	if (!engine_id_valid(o->snapshot_id) ||
	    snap_initiator_of(c, o->snapshot_id) != (long)from)
		return E_INVAL;
	snprintf(r.id, sizeof(r.id), "%s", o->snapshot_id);
	snprintf(r.reason, sizeof(r.reason), "%s",
	         o->reason != NULL ? o->reason : "");
	snprintf(r.audit_reason, sizeof(r.audit_reason), "%s",
	         o->audit_reason != NULL ? o->audit_reason : "");
	/* The outcome ends the part here too.  The initiator's PeerAbort
	 * comes before it on a link, but not when the initiator learnt of
	 * this node's restart after the snapshot had reached this run: the
	 * abort went with the old link, and only the outcome is told again
	 * on the new one (resend_outcomes()).  Left running, the part would
	 * complete into a row the outcome has ended, and that failed write
	 * would lose the whole batch (seed 63518: the final snapshot with
	 * it). */
	s = snap_find(c, o->snapshot_id);
	if (s != NULL && s->state == SNAP_RUNNING)
		(void)snap_abort_msg(c, from, o->snapshot_id,
		                     r.reason[0] != '\0'
		                         ? r.reason
		                         : "ended by its initiator",
		                     0);
	if ((rv = store_outcome(c, &r)) == E_INVAL)
		return E_INVAL;
	if (rv == 0)
		log_debug("snapshot %s: outcome from %s: %s", o->snapshot_id,
		          c->cfg->nodes[from].name,
		          o->complete ? "complete" : "aborted");
	return 0;
}

void
sched_storage_failed(struct coord *c)
{
	for (size_t i = 0; i < c->nout_batch; i++)
		keep_outcome(c, &c->out_batch[i]);
	c->nout_batch = 0;
	for (size_t i = 0; i < c->nlate_batch; i++)
		keep_late(c, c->late_retry, &c->nlate_retry,
		          c->late_batch[i].node, c->late_batch[i].id);
	c->nlate_batch = 0;
}

/* The outcomes a failed write lost, or that came before their row was
 * written, are stored again once the database works. */
static void
retry_outcomes(struct coord *c)
{
	size_t n = c->nout_retry;
	struct outcome_rec again[OUTCOMES_KEEP];

	if (c->degraded[0] != '\0')
		return;
	/* The initiators whose outcomes a full list lost tell them again
	 * once this node stores again and the list has room for them. */
	for (size_t v = 0; n == 0 && !c->write_failed && v < c->cfg->nnodes;
	     v++) {
		Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
		Cut__V1__PeerOutcomeAsk a = CUT__V1__PEER_OUTCOME_ASK__INIT;
		if (!c->peers[v].ask_outcomes)
			continue;
		a.seq = peer_next_seq(c, v);
		item.item_case = CUT__V1__PEER_ITEM__ITEM_OUTCOME_ASK;
		item.outcome_ask = &a;
		if (peer_push_item(c, v, &item) == 0) {
			c->peers[v].ask_outcomes = 0;
			log_info("outcomes asked of %s again: some were lost "
			         "with failed writes",
			         c->cfg->nodes[v].name);
		}
	}
	/* In the turn's batch, before it commits (after it, the batch it
	 * opened would hold the peers' frames back a turn); once a second,
	 * since one may wait for its row for a while. */
	if (n == 0 || c->now - c->out_retry_ms < 1000)
		return;
	c->out_retry_ms = c->now;
	/* A write that fails again keeps its outcome again. */
	memcpy(again, c->out_retry, n * sizeof(again[0]));
	c->nout_retry = 0;
	for (size_t i = 0; i < n; i++)
		if (store_outcome(c, &again[i]) == 0)
			log_info("snapshot %s: its outcome stored again after "
			         "a failed write",
			         again[i].id);
}

/* ---- Deletions ---- */

static int
send_forget(struct coord *c, size_t node, const char *id, int forgotten)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerForget f = CUT__V1__PEER_FORGET__INIT;
	Cut__V1__PeerForgotten g = CUT__V1__PEER_FORGOTTEN__INIT;

	if (forgotten) {
		g.seq = peer_next_seq(c, node);
		g.snapshot_id = (char *)id;
		item.item_case = CUT__V1__PEER_ITEM__ITEM_FORGOTTEN;
		item.forgotten = &g;
	} else {
		f.seq = peer_next_seq(c, node);
		f.snapshot_id = (char *)id;
		item.item_case = CUT__V1__PEER_ITEM__ITEM_FORGET;
		item.forget = &f;
	}
	return peer_push_item(c, node, &item);
}

/* Deletes this node's own snapshot id everywhere: the row here, a
 * pending deletion per other node, and a PeerForget to each. */
static int
forget_everywhere(struct coord *c, const char *id)
{
	uint64_t n;
	int rv;

	coord_db(c);
	if ((rv = DB(c, remove, id)) != 0)
		return rv;
	c->reclaim_due = 1;
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		const char *name = c->cfg->nodes[v].name;
		if (v == c->self)
			continue;
		if (DB(c, forget_count, name, &n) != 0 ||
		    n >= FORGET_MAX) {
			log_warnx("snapshot %s: %s has %d deletions pending "
			          "or more: this one is sent once, not kept",
			          id, name, FORGET_MAX);
		} else if (DB(c, forget_add, name, id, c->wall) != 0) {
			coord_write_failed(c, "cannot store a deletion");
			return E_STORAGE;
		}
		if (send_forget(c, v, id, 0) != 0)
			log_info("snapshot %s: the link to %s is full; its "
			         "deletion goes when %s returns",
			         id, name, name);
	}
	return 0;
}

/* Another node's snapshot id is deleted here, or its outcome came before
 * any of its markers: it is over here, and nothing writes its row again
 * (sched_was_forgotten()). */
static void
note_forgotten(struct coord *c, const char *id)
{
	if (sched_was_forgotten(c, id))
		return;
	snprintf(c->forgotten[c->forgotten_next], sizeof(c->forgotten[0]),
	         "%s", id);
	c->forgotten_next = (c->forgotten_next + 1) % FORGOTTEN_KEEP;
}

int
sched_delete(struct coord *c, const char *id)
{
	if (snap_initiator_of(c, id) != (long)c->self) {
		/* Another node's snapshot: only this node's copy. */
		coord_db(c);
		int rv = DB(c, remove, id);
		if (rv == 0) {
			c->reclaim_due = 1;
			note_forgotten(c, id);
		}
		return rv;
	}
	return forget_everywhere(c, id);
}

int
sched_forget(struct coord *c, size_t from, const Cut__V1__PeerForget *f)
{
	struct snap *s;
	int rv;

	if (!engine_id_valid(f->snapshot_id) ||
	    snap_initiator_of(c, f->snapshot_id) != (long)from)
		return E_INVAL;
	s = snap_find(c, f->snapshot_id);
	if (s != NULL && (s->state == SNAP_RUNNING || s->state == SNAP_WAITING))
		return 0; /* its initiator sends it again after a restart */
	coord_db(c);
	if ((rv = DB(c, remove, f->snapshot_id)) != 0 && rv != E_NOENT) {
		coord_write_failed(c, "cannot delete a snapshot");
		return 0;
	}
	if (rv == 0) {
		c->reclaim_due = 1;
		log_info("snapshot %s: deleted, as its initiator %s asked",
		         f->snapshot_id, c->cfg->nodes[from].name);
	}
	/* An end still to be written would write its row again
	 * (snap_storage_retry()), and so would a late marker. */
	if (s != NULL)
		s->unsaved = 0;
	note_forgotten(c, f->snapshot_id);
	/* Answered whether or not it was here (either way it is gone), once
	 * the batch that deleted it commits: sched_committed(). */
	if (c->nforgot < FORGOT_MAX) {
		snprintf(c->forgot[c->nforgot].id, sizeof(c->forgot[0].id),
		         "%s", f->snapshot_id);
		c->forgot[c->nforgot++].node = from;
	}
	return 0;
}

int
sched_was_forgotten(const struct coord *c, const char *id)
{
	for (size_t i = 0; i < FORGOTTEN_KEEP; i++)
		if (strcmp(c->forgotten[i], id) == 0)
			return 1;
	return 0;
}

/* Keeps the copy of id at node to delete again once the database works:
 * the participant's report that told of it does not come again. */
static void
keep_late(struct coord *c, struct late_rec *list, size_t *n, size_t node,
          const char *id)
{
	for (size_t i = 0; i < *n; i++)
		if (list[i].node == node && strcmp(list[i].id, id) == 0)
			return;
	if (*n == LATE_KEEP) {
		log_warnx("snapshot %s: %s recorded it after it was deleted, "
		          "and too many such copies wait for the database: "
		          "this one stays there",
		          id, c->cfg->nodes[node].name);
		return;
	}
	snprintf(list[*n].id, sizeof(list[0].id), "%s", id);
	list[(*n)++].node = node;
}

void
sched_forget_late(struct coord *c, size_t node, const char *id)
{
	struct store_snapshot row;
	int rv;

	if (snap_initiator_of(c, id) != (long)c->self ||
	    (rv = DB(c, get, id, &row)) == 0)
		return;
	/* A read that failed, or a batch already lost (whose reads may show
	 * a deletion it undoes, and whose writes are undone): the pending
	 * deletion is written later, from a batch that commits. */
	if (rv != E_NOENT || c->write_failed || c->begin_failed) {
		keep_late(c, c->late_retry, &c->nlate_retry, node, id);
		return;
	}
	coord_db(c);
	if (DB(c, forget_add, c->cfg->nodes[node].name, id, c->wall) != 0) {
		coord_write_failed(c, "cannot store a deletion");
		keep_late(c, c->late_retry, &c->nlate_retry, node, id);
		return;
	}
	/* Until the batch commits: a later write of it may still fail. */
	keep_late(c, c->late_batch, &c->nlate_batch, node, id);
	log_info("snapshot %s: %s recorded it after it was deleted; "
	         "deleted there again",
	         id, c->cfg->nodes[node].name);
	(void)send_forget(c, node, id, 0); /* else forget_timers() */
}

/* The copies sched_forget_late() could not write the deletion of are
 * tried again, in the turn's batch, once a second while the database
 * works. */
static void
retry_late(struct coord *c)
{
	struct late_rec again[LATE_KEEP];
	size_t n = c->nlate_retry;

	if (n == 0 || c->degraded[0] != '\0' ||
	    c->now - c->late_retry_ms < 1000)
		return;
	c->late_retry_ms = c->now;
	memcpy(again, c->late_retry, n * sizeof(again[0]));
	c->nlate_retry = 0;
	for (size_t i = 0; i < n; i++)
		sched_forget_late(c, again[i].node, again[i].id);
}

int
sched_forgotten(struct coord *c, size_t from,
                const Cut__V1__PeerForgotten *g)
{
	if (!engine_id_valid(g->snapshot_id))
		return E_INVAL;
	coord_db(c);
	if (DB(c, forget_done, c->cfg->nodes[from].name, g->snapshot_id) != 0)
		coord_write_failed(c, "cannot clear a pending deletion");
	return 0;
}

struct resend {
	struct coord *c;
	size_t node;
	size_t sent;
	int full;
};

static int
resend_one(const char *node, const char *id, void *arg)
{
	struct resend *r = arg;

	if (r->full || strcmp(node, r->c->cfg->nodes[r->node].name) != 0)
		return 0;
	if (send_forget(r->c, r->node, id, 0) != 0)
		r->full = 1; /* the rest go at the next epoch */
	else
		r->sent++;
	return 0;
}

static void
resend_forgets(struct coord *c, size_t node)
{
	struct resend r = {c, node, 0, 0};

	if (DB(c, forget_foreach, resend_one, &r) != 0) {
		log_warnx("cannot read the deletions pending for %s: %s",
		          c->cfg->nodes[node].name, DB_ERR(c));
		return;
	}
	if (r.sent > 0)
		log_info("%zu deletions sent again to %s", r.sent,
		         c->cfg->nodes[node].name);
}

/* Node `from` lost outcomes this node sent (keep_outcome()). */
void
sched_outcome_ask(struct coord *c, size_t from)
{
	log_info("%s asks for the outcomes of this node's snapshots again",
	         c->cfg->nodes[from].name);
	resend_outcomes(c, from);
}

void
sched_peer_epoch(struct coord *c, size_t node)
{
	resend_outcomes(c, node);
	resend_forgets(c, node);
}

/* A deletion can stay pending with both links up: its PeerForgotten
 * cleared the row in a batch that then failed, or the participant
 * still ran the snapshot when its PeerForget came (it does not answer
 * then).  So what is pending goes again now and then, not only when an
 * epoch changes. */
static void
forget_timers(struct coord *c)
{
	if (c->now - c->forget_ms < FORGET_RESEND_MS ||
	    c->degraded[0] != '\0')
		return;
	c->forget_ms = c->now;
	for (size_t v = 0; v < c->cfg->nnodes; v++)
		if (v != c->self && coord_peer_alive(c, v))
			resend_forgets(c, v);
}

uint64_t
coord_forgets_pending(struct coord *c)
{
	uint64_t total = 0, n;

	for (size_t v = 0; v < c->cfg->nnodes; v++)
		if (v != c->self &&
		    DB(c, forget_count, c->cfg->nodes[v].name, &n) == 0)
			total += n;
	return total;
}

int
coord_keep(struct coord *c, const char *id, int keep, struct errinfo *e)
{
	int rv;

	if (c->degraded[0] != '\0')
		return err_set(e, E_STORAGE, "storage degraded: %.200s",
		               c->degraded);
	coord_db(c);
	if ((rv = DB(c, set_keep, id, keep)) == E_NOENT)
		return err_set(e, rv, "no such snapshot");
	if (rv != 0)
		return err_set(e, rv, "storage: %.200s", DB_ERR(c));
	return 0;
}

/* ---- Retention ---- */

struct retain {
	struct coord *c;
	const struct config *cfg;
	int64_t wall;
	unsigned complete; /* complete, not kept, seen so far */
	char ids[RETAIN_BATCH][ENGINE_ID_MAX + 1];
	size_t n;
};

static int
retain_one(const char *id, int complete, int keep, int64_t ended_ms,
           void *arg)
{
	struct retain *r = arg;
	int64_t age = r->wall - ended_ms;
	int drop;

	if (keep)
		return 0;
	if (complete) {
		r->complete++;
		/* Either rule keeps it: among the newest, or young. */
		drop = (r->cfg->keep_last == 0 ||
		        r->complete > r->cfg->keep_last) &&
		       (r->cfg->keep_for_ms == 0 ||
		        age > (int64_t)r->cfg->keep_for_ms);
	} else {
		drop = age > (int64_t)r->cfg->keep_aborted_ms;
	}
	if (drop && restore_uses(r->c, id))
		drop = 0; /* a restore reads it now */
	if (drop && r->n < RETAIN_BATCH)
		snprintf(r->ids[r->n++], sizeof(r->ids[0]), "%s", id);
	return 0;
}

static void
retain_run(struct coord *c)
{
	struct retain *r;
	size_t done = 0;

	c->retain_due = 0;
	c->retain_ms = c->now;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return;
	r->c = c;
	r->cfg = c->cfg;
	r->wall = c->wall;
	coord_db(c);
	if (DB(c, retain_foreach, retain_one, r) != 0) {
		log_warnx("retention: cannot list the snapshots: %s",
		          DB_ERR(c));
		free(r);
		return;
	}
	for (size_t i = 0; i < r->n; i++) {
		struct snap *s = snap_find(c, r->ids[i]);
		if (s != NULL && (s->unsaved || s->state == SNAP_RUNNING ||
		                  s->state == SNAP_WAITING))
			continue;
		if (forget_everywhere(c, r->ids[i]) != 0)
			break;
		done++;
	}
	if (done > 0)
		log_info("retention: deleted %zu snapshots", done);
	/* More than one batch's worth: the next turn goes on. */
	if (r->n == RETAIN_BATCH)
		c->retain_due = 1;
	free(r);
}

void
sched_timers(struct coord *c)
{
	const struct config *cfg = c->cfg;

	sched_tick(c);
	forget_timers(c);
	retry_outcomes(c);
	retry_late(c);
	if ((cfg->keep_last != 0 || cfg->keep_for_ms != 0) &&
	    c->degraded[0] == '\0' &&
	    (c->retain_due || c->now - c->retain_ms >= RETAIN_EVERY_MS))
		retain_run(c);
}

void
sched_batch_lost(struct coord *c)
{
	c->nforgot = 0; /* their initiators ask again (forget_timers()) */
}

void
sched_committed(struct coord *c)
{
	for (size_t i = 0; i < c->nforgot; i++)
		if (send_forget(c, c->forgot[i].node, c->forgot[i].id, 1) != 0)
			log_info("snapshot %s: cannot answer %s's deletion "
			         "now; it asks again",
			         c->forgot[i].id,
			         c->cfg->nodes[c->forgot[i].node].name);
	c->nforgot = 0;
	c->nout_batch = 0;
	if (!c->batch_open)
		c->nlate_batch = 0;
	if (!c->reclaim_due || c->batch_open ||
	    c->now - c->reclaim_ms < RECLAIM_EVERY_MS)
		return;
	c->reclaim_due = 0;
	c->reclaim_ms = c->now;
	/* A reader holding an old snapshot makes the checkpoint busy: the
	 * next deletion tries again, and SQLite reuses the pages anyway. */
	if (DB0(c, reclaim) != 0)
		log_debug("cannot reclaim free pages now: %s", DB_ERR(c));
}
