/*
 * simops.c - what the simulation does beyond starting snapshots: the
 * control calls Restore, Delete, Keep and Schedule/Pause as control.c
 * makes them (--faults restore,delete,schedule), a [schedule] and a
 * [retention] in the cluster file, and the checks of each.
 *
 * Restore.  Now and then a node is asked to restore one of its own
 * snapshots (mostly a complete one; sometimes an aborted, unknown or
 * other node's one, or a second while one runs, which must be refused
 * with a reason and change nothing).  A restore that starts is followed:
 *
 *   started --the restorer applies it (its generation moves)--> decided
 *   started --its call ends, or it dies, first--> given up: no
 *       application may take it, nothing changed anywhere
 *   decided --every application took it--> over (its era begins)
 *
 * The bank has eras: era 0 from the start, and one more per decided
 * restore, whose total is what the snapshot recorded (states and
 * messages in flight).  Each application enters the new era when it
 * takes the AppRestore (simops_app_restore()): the restore must be the
 * decided one, its state and channel positions those the snapshot
 * recorded; the balance becomes the recorded one, each incoming channel
 * resumes after m, and the channel logs (sim_log_of()) become the
 * recorded messages m+1 .. n and what is sent after them.  So the checks
 * of every delivery (simapp.c) check the replay and what follows, and the
 * end's balances check the new total.  States carry their era: a
 * snapshot holding two eras fails; one of an era that ended is checked
 * against that era's bank (unless an application's death left its bank
 * unknown: counted).
 *
 * The README leaves out crashes in two windows (Restore, Limits): a node
 * prepared (it voted yes) before the decision, and one that applied the
 * restore before its application took it and the replayed messages (or
 * before the generation is on disk).  The simulation leaves those out
 * (simops_crash_unsafe()); every other crash may come in the middle of a
 * restore, and the restore must still end all or nothing.  Applications
 * are killed at any point of it (appkill): a restore is taken once every
 * daemon read its application's AppRestored (coord_restore_view()'s
 * app_owed); a daemon that owes it while the life that took it is dead
 * is in the second window (its restart would forget it, and the next
 * life would not get it again).
 *
 * Deletes and retention.  A node deletes one of its snapshots (or a
 * participant its own copy of another's); a snapshot is kept or unkept;
 * a [retention] may be drawn.  After the turn the row must be gone (or
 * the batch failed).  At the end, after the cluster settled (no
 * deletion pending anywhere): no node holds a snapshot its initiator
 * deleted, and each snapshot retention deleted was one its rules (README,
 * Retention) let go: not kept, not among the newest keep_last complete,
 * not younger than keep_for, an aborted one not younger than
 * keep_aborted.
 *
 * Schedule.  A [schedule] may be drawn (an interval of 150 ms - 1.5 s,
 * one node or rotate).  Every snapshot it starts must start within
 * SLACK_MS of a tick boundary, at the node the tick belongs to, and not
 * while paused; a skipped tick must have found the last scheduled
 * snapshot still running; and each run of a daemon must count every tick
 * of its own that passed while it ran, each started, skipped, paused or
 * failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* As sim.c's: a daemon's turn at a timer's millisecond, give or take. */
#define SLACK_MS 5

/* ---- The cluster file ---- */

void
simops_config(struct sim *s, struct config *cfg)
{
	if ((s->o->faults & SIM_F_SCHEDULE) && sim_rand(s, 4) != 0) {
		cfg->sched_interval_ms = (unsigned)sim_range(s, 150, 1500);
		cfg->sched_initiator = sim_rand(s, 2) == 0
		                           ? SCHED_ROTATE
		                           : (long)sim_rand(s, cfg->nnodes);
		cfg->sched_timeout_ms =
		    sim_rand(s, 3) == 0 ? 0 : (unsigned)sim_range(s, 100, 3000);
	}
	if ((s->o->faults & SIM_F_DELETE) && sim_rand(s, 3) != 0) {
		cfg->keep_last = (unsigned)sim_range(s, 0, 4);
		cfg->keep_for_ms =
		    sim_rand(s, 2) == 0 ? 0 : (uint64_t)sim_range(s, 500, 8000);
		if (cfg->keep_last == 0 && cfg->keep_for_ms == 0)
			cfg->keep_last = 1;
		cfg->keep_aborted_ms = (uint64_t)sim_range(s, 200, 20000);
	}
}

/* ---- Restore ---- */

struct rload {
	struct sim *s;
	struct sim_restore *r;
	size_t src, dst;
	uint64_t next; /* the seq expected next */
};

static int
rload_state(const char *node, const char *ctype, const void *state, size_t len,
            void *arg)
{
	struct rload *l = arg;
	int v = config_node_index(l->s->cfg, node);
	long long b;

	(void)ctype;
	if (v < 0 || len >= sizeof(l->r->state[0])) {
		l->r->bad = 1;
		return 0;
	}
	memcpy(l->r->state[v], state, len);
	l->r->state[v][len] = '\0';
	if (sscanf(l->r->state[v], "{\"balance\": %lld", &b) != 1)
		l->r->bad = 1;
	else
		l->r->total += b;
	return 0;
}

static int
rload_message(uint64_t seq, const char *ctype, const void *payload, size_t len,
              void *arg)
{
	struct rload *l = arg;
	long v;

	(void)ctype;
	if (seq != l->next++ || sim_amount(payload, len, &v) != 0) {
		l->r->bad = 1;
		return 0;
	}
	sim_log_put(&l->r->rec[l->src][l->dst], (int32_t)v);
	l->r->total += v;
	return 0;
}

static int
rload_channel(const struct store_channel *ch, void *arg)
{
	struct rload *l = arg;
	int a = config_node_index(l->s->cfg, ch->src),
	    b = config_node_index(l->s->cfg, ch->dst);

	if (a < 0 || b < 0) {
		l->r->bad = 1;
		return 0;
	}
	l->r->has[a][b] = 1;
	l->r->m[a][b] = ch->m;
	l->r->n[a][b] = ch->n;
	return 0;
}

/* Reads what snapshot id recorded from node n's database into s->rst. */
static void
load_snapshot(struct sim *s, struct sim_node *n, const char *id)
{
	struct sim_restore *r = &s->rst;
	struct rload l = {s, r, 0, 0, 0};

	for (size_t a = 0; a < SIM_MAX_NODES; a++)
		for (size_t b = 0; b < SIM_MAX_NODES; b++)
			r->rec[a][b].n = 0;
	memset(r->has, 0, sizeof(r->has));
	memset(r->state, 0, sizeof(r->state));
	r->total = 0;
	r->bad = 0;
	if (store_foreach_state(n->st, id, rload_state, &l) != 0 ||
	    store_foreach_channel(n->st, id, rload_channel, &l) != 0)
		r->bad = 1;
	for (size_t a = 0; a < s->n; a++)
		for (size_t b = 0; b < s->n; b++) {
			if (!r->has[a][b])
				continue;
			l.src = a;
			l.dst = b;
			l.next = r->m[a][b] + 1;
			if (store_foreach_message(n->st, id, s->nodes[a].name,
			                          s->nodes[b].name,
			                          rload_message, &l) != 0 ||
			    l.next != r->n[a][b] + 1)
				r->bad = 1;
		}
	if (r->bad)
		sim_fail(s, SIM_C_SIM, "snapshot %s: cannot read it back", id);
}

/* The snapshot the restore call at n asks for: mostly a complete one of
 * n's, now and then anything (to be refused).  Writes whether the call
 * must be refused to *ret_refuse. */
static const char *
pick_restore(struct sim *s, struct sim_node *n, int *ret_refuse)
{
	size_t cand[64], k = 0, any[64], nany = 0;
	struct store_snapshot row;

	for (size_t i = s->nsnaps; i-- > 0 && k < 64 && nany < 64;) {
		struct sim_snap *sn = &s->snaps[i];
		int ok = sn->initiator == n->idx &&
		         store_get(n->st, sn->id, &row) == 0 &&
		         row.status == STORE_COMPLETE && row.consistent == 1;
		if (ok)
			cand[k++] = i;
		else
			any[nany++] = i;
	}
	*ret_refuse = 1;
	if (k > 0 && sim_rand(s, 8) != 0) {
		*ret_refuse = 0;
		return s->snaps[cand[sim_rand(s, k)]].id;
	}
	if (nany == 0)
		return NULL;
	return s->snaps[any[sim_rand(s, nany)]].id;
}

static void
call_restore(struct sim *s, struct sim_node *n)
{
	struct coord_restore_view before, after;
	struct errinfo e = {0};
	const char *id;
	uint32_t timeout;
	int refuse, rv;

	coord_restore_view(n->c, &before);
	if (s->rst.active) {
		/* One runs: a call where it runs must be refused. */
		if (!before.running)
			return;
	} else if (s->era >= SIM_MAX_ERAS - 1) {
		return;
	}
	if ((id = pick_restore(s, n, &refuse)) == NULL)
		return;
	refuse |= s->rst.active || before.running;
	timeout = sim_rand(s, 4) == 0 ? 0 : (uint32_t)sim_range(s, 200, 4000);
	rv = coord_restore(n->c, id, timeout, &e);
	coord_restore_view(n->c, &after);
	if (rv != 0) {
		s->st->restores_refused++;
		sim_trace(s, "%s: restore of %s refused: %s", n->name, id,
		          e.text);
		if (e.text[0] == '\0')
			sim_fail(s, SIM_C_RESTORE,
			         "%s: restore of %s refused without a reason",
			         n->name, id);
		if (after.generation != before.generation ||
		    after.running != before.running)
			sim_fail(s, SIM_C_RESTORE,
			         "%s: a refused restore of %s changed the "
			         "generation or the phase",
			         n->name, id);
		return;
	}
	if (refuse) {
		sim_fail(s, SIM_C_RESTORE,
		         "%s: a restore of %s started, which must have been "
		         "refused (%s)",
		         n->name, id,
		         before.running ? "one runs" : "not complete here");
		return;
	}
	s->st->restores++;
	memset(&s->rst.m, 0, sizeof(s->rst.m));
	s->rst.active = 1;
	s->rst.decided = s->rst.over = 0;
	snprintf(s->rst.id, sizeof(s->rst.id), "%s", id);
	s->rst.restorer = n->idx;
	s->rst.gen = before.generation + 1;
	s->rst.started = s->now;
	load_snapshot(s, n, id);
	sim_trace(s,
	          "%s: restore of %s (generation %" PRIu64 ") started, "
	          "timeout %" PRIu32 " ms; the bank will hold %" PRId64,
	          n->name, id, s->rst.gen, timeout, s->rst.total);
}

/* The restorer applied it: the next era's bank and channels. */
static void
decide(struct sim *s)
{
	struct sim_restore *r = &s->rst;

	r->decided = 1;
	s->era++;
	s->bank[s->era] = r->total;
	if (s->log_era != s->era - 1)
		sim_fail(s, SIM_C_SIM, "an era began before the last ended");
	for (size_t a = 0; a < s->n; a++)
		for (size_t b = 0; b < s->n; b++) {
			struct sim_log *log = &s->nsent[a][b];
			log->n = 0;
			s->replay_to[a][b] = r->has[a][b] ? r->n[a][b] : 0;
			if (!r->has[a][b])
				continue;
			/* 1 .. m were taken before the cut: never handed
			 * again, so their amounts do not matter. */
			for (uint64_t q = 1; q <= r->n[a][b]; q++)
				sim_log_put(
				    log, q <= r->m[a][b]
				             ? 0
				             : r->rec[a][b]
				                   .amount[q - r->m[a][b] - 1]);
		}
	sim_trace(
	    s, "restore of %s decided: the bank's era %d, %" PRId64 " tokens",
	    r->id, s->era, r->total);
}

/* Every application took it: the era's channels are the channels. */
static void
transition_done(struct sim *s)
{
	struct sim_restore *r = &s->rst;

	for (size_t a = 0; a < s->n; a++)
		for (size_t b = 0; b < s->n; b++) {
			free(s->sent[a][b].amount);
			s->sent[a][b] = s->nsent[a][b];
			memset(&s->nsent[a][b], 0, sizeof(s->nsent[a][b]));
		}
	s->log_era = s->era;
	r->active = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct coord_restore_view v;
		if (s->nodes[i].c == NULL)
			continue;
		coord_restore_view(s->nodes[i].c, &v);
		if (v.generation != r->gen || v.adopted != 0)
			sim_fail(
			    s, SIM_C_RESTORE,
			    "restore of %s: every application took it, but "
			    "%s is at generation %" PRIu64
			    " (%s), not %" PRIu64,
			    r->id, s->nodes[i].name, v.generation,
			    v.adopted ? "missed it" : "applied", r->gen);
	}
	sim_trace(s, "restore of %s taken by every application", r->id);
}

/* After a turn of the restorer: decided, or over, and how. */
static void
follow_restore(struct sim *s, struct sim_node *n)
{
	struct sim_restore *r = &s->rst;
	struct coord_restore_view v;

	coord_restore_view(n->c, &v);
	if (!r->decided && v.generation == r->gen)
		decide(s);
	if (v.running || r->over)
		return;
	r->over = 1;
	if (v.why == NULL || (v.result != 1 && v.why[0] == '\0'))
		sim_fail(s, SIM_C_RESTORE,
		         "restore of %s: ended without a reason (result %d)",
		         r->id, v.result);
	if (!r->decided) {
		/* Given up before anything changed. */
		if (v.result == 1)
			sim_fail(s, SIM_C_RESTORE,
			         "restore of %s: done, but the restorer's "
			         "generation did not move",
			         r->id);
		s->st->restores_given_up++;
		r->active = 0;
		sim_trace(s, "restore of %s given up: %s", r->id, v.why);
		return;
	}
	if (v.result == 1) {
		s->st->restores_done++;
	} else if (v.result == E_TIMEDOUT) {
		/* Decided; a node confirmed late, and applies it when it
		 * hears from the restorer (README, Restore). */
		s->st->restores_late++;
		sim_trace(s, "restore of %s: %s", r->id, v.why);
	} else {
		sim_fail(s, SIM_C_RESTORE,
		         "restore of %s: decided, then ended %s: %s", r->id,
		         err_str(v.result), v.why);
	}
}

void
simops_app_restore(struct sim *s, struct sim_app *a,
                   const Cut__V1__AppRestore *r)
{
	struct sim_restore *rs = &s->rst;
	const char *name = s->nodes[a->node].name;
	long long balance;
	int again = 0;

	if (!rs->active || !rs->decided || r->generation != rs->gen ||
	    strcmp(r->snapshot_id, rs->id) != 0) {
		sim_fail(s, SIM_C_RESTORE,
		         "%s's application was restored to %s (generation "
		         "%" PRIu64 "), which was not decided",
		         name, r->snapshot_id, r->generation);
		return;
	}
	if (a->era == s->era)
		again = 1; /* on a new connection, before AppRestored went */
	else if (a->era != s->era - 1)
		sim_fail(s, SIM_C_SIM, "%s: era %d, the bank's %d", name,
		         a->era, s->era);
	if (r->state.len != strlen(rs->state[a->node]) ||
	    memcmp(r->state.data, rs->state[a->node], r->state.len) != 0 ||
	    sscanf(rs->state[a->node], "{\"balance\": %lld", &balance) != 1) {
		sim_fail(s, SIM_C_RESTORE,
		         "%s: restored to a state %s did not record for it",
		         name, rs->id);
		return;
	}
	for (size_t i = 0; i < r->n_channels; i++) {
		const Cut__V1__AppRestoreChannel *ch = r->channels[i];
		int v = config_node_index(s->cfg, ch->node);
		if (v < 0 ||
		    (ch->has_out_sent && ch->out_sent != rs->n[a->node][v]) ||
		    (ch->has_in_taken && ch->in_taken != rs->m[v][a->node]))
			sim_fail(s, SIM_C_RESTORE,
			         "%s: restored with %s's channels at positions "
			         "%s did not record",
			         name, ch->node, rs->id);
	}
	if (again && a->life != a->life_base)
		simapp_era_again(s, a);
	if (!again) {
		simapp_new_era(s, a);
		for (size_t v = 0; v < s->n; v++)
			if (rs->has[v][a->node])
				s->st->replayed +=
				    rs->n[v][a->node] - rs->m[v][a->node];
	}
	/* What it sent since it first took the restore was never read: the
	 * daemon ignores sends until AppRestored. */
	for (size_t v = 0; v < s->n; v++)
		if (rs->has[a->node][v])
			sim_log_of(s, a->node, v, a->era)->n =
			    rs->n[a->node][v];
	/* The planted bug: node 0 keeps its balance. */
	if (!(s->o->self_check == SIM_SC_RESTORE && a->node == 0))
		a->balance = balance;
	for (size_t v = 0; v < s->n; v++) {
		a->src_taken[v] = rs->has[v][a->node] ? rs->m[v][a->node] : 0;
		a->rewound[v] = 0;
	}
	sim_trace(s, "%s's application restored to %s%s: balance %lld", name,
	          rs->id, again ? " again" : "", balance);
}

/* ---- Delete and keep ---- */

/* A snapshot of node n's for Delete or Keep: one it initiated (or, now
 * and then for Delete, any); NULL if none. */
static struct sim_snap *
pick_snap(struct sim *s, struct sim_node *n, int own, int aborted_only)
{
	size_t cand[128], k = 0;

	for (size_t i = s->nsnaps; i-- > 0 && k < 128;) {
		struct sim_snap *sn = &s->snaps[i];
		if (sn->deleted || (own && sn->initiator != n->idx) ||
		    (!own && sn->initiator == n->idx))
			continue;
		/* With keep_last, a Delete takes only aborted ones: the
		 * end's check counts the complete ones as retention did. */
		if (aborted_only && (!sn->end_seen || sn->complete))
			continue;
		cand[k++] = i;
	}
	return k ? &s->snaps[cand[sim_rand(s, k)]] : NULL;
}

static void
call_delete(struct sim *s, struct sim_node *n)
{
	int own = sim_rand(s, 4) != 0;
	struct sim_snap *sn =
	    pick_snap(s, n, own, own && s->cfg->keep_last != 0);
	struct coord_snap_view v;
	struct errinfo e = {0};
	int rv;

	if (sn == NULL)
		return;
	coord_snapshot_view(n->c, sn->id, &v);
	rv = coord_delete(n->c, sn->id, &e);
	if (rv != 0) {
		s->st->deletes_refused++;
		sim_trace(s, "%s: delete of %s refused: %s", n->name, sn->id,
		          e.text);
		if (e.text[0] == '\0')
			sim_fail(s, SIM_C_RETENTION,
			         "%s: delete of %s refused without a reason",
			         n->name, sn->id);
		return;
	}
	if (v.running)
		sim_fail(s, SIM_C_RETENTION,
		         "%s: deleted %s while it runs there", n->name, sn->id);
	sim_trace(s, "%s: %s deleted%s", n->name, sn->id,
	          own ? "" : " (this node's copy)");
	if (own) {
		sn->delete_due = 1;
		sn->delete_failures = n->db.fault.failures;
		return;
	}
	if (s->nldel % 16 == 0 &&
	    (s->ldel = realloc(s->ldel, (s->nldel + 16) * sizeof(*s->ldel))) ==
	        NULL)
		abort();
	memset(&s->ldel[s->nldel], 0, sizeof(s->ldel[0]));
	snprintf(s->ldel[s->nldel].id, sizeof(s->ldel[0].id), "%s", sn->id);
	s->ldel[s->nldel].node = n->idx;
	s->ldel[s->nldel].failures = n->db.fault.failures;
	s->ldel[s->nldel].due = 1;
	s->nldel++;
}

static void
call_keep(struct sim *s, struct sim_node *n)
{
	struct sim_snap *sn;
	struct errinfo e = {0};

	/* A keep changes which complete ones retention counts: with
	 * keep_last the end's check could not tell (see pick_snap()). */
	if (s->cfg->keep_last != 0 || (sn = pick_snap(s, n, 1, 0)) == NULL)
		return;
	if (coord_keep(n->c, sn->id, !sn->kept, &e) != 0) {
		sim_trace(s, "%s: keep of %s refused: %s", n->name, sn->id,
		          e.text);
		return;
	}
	sn->keep_due = 1;
	s->st->keeps++;
}

/* After a turn of n: the deletes and keeps it answered are in its rows,
 * unless its batch failed (the store counted a failure). */
static void
follow_rows(struct sim *s, struct sim_node *n)
{
	struct store_snapshot row;

	for (size_t i = 0; i < s->nsnaps; i++) {
		struct sim_snap *sn = &s->snaps[i];
		struct coord_snap_view v;
		int rv;
		if (sn->initiator != n->idx ||
		    (sn->end_seen && !sn->delete_due && !sn->keep_due))
			continue;
		/* Its end, once it is on disk (memory says when). */
		coord_snapshot_view(n->c, sn->id, &v);
		if (!sn->delete_due && !sn->keep_due && v.known && !v.ended)
			continue;
		rv = store_get(n->st, sn->id, &row);
		if (sn->keep_due && rv == 0)
			sn->kept = row.keep;
		sn->keep_due = 0;
		if (sn->delete_due) {
			sn->delete_due = 0;
			if (rv == E_NOENT) {
				sn->deleted = 1;
				s->st->deletes++;
			} else if (n->db.fault.failures !=
			           sn->delete_failures) {
				s->st->deletes_undone++;
			} else {
				sim_fail(s, SIM_C_RETENTION,
				         "%s: Delete of %s answered, and its "
				         "row is still there",
				         n->name, sn->id);
			}
		}
		if (!sn->end_seen && rv == 0 &&
		    row.status != STORE_IN_PROGRESS && !v.unsaved &&
		    (!v.known || v.ended)) {
			sn->end_seen = 1;
			sn->complete = row.status == STORE_COMPLETE;
			sn->ended_ms = row.finished_ms;
		} else if (!sn->end_seen && rv == E_NOENT && v.known &&
		           v.ended && !v.unsaved && !sn->deleted) {
			/* It ended in this turn, and retention deleted it
			 * in the same turn (it started before a complete
			 * one that had ended already).  An aborted one is
			 * never that young past keep_aborted: complete. */
			sn->end_seen = 1;
			sn->complete = 1;
			sn->ended_ms = sim_wall(s);
		}
	}
	for (size_t i = 0; i < s->nldel; i++) {
		struct sim_local_delete *d = &s->ldel[i];
		if (d->node != n->idx || !d->due)
			continue;
		d->due = 0;
		if (store_get(n->st, d->id, &row) == E_NOENT) {
			d->done = 1;
			s->st->local_deletes++;
		} else if (n->db.fault.failures == d->failures) {
			sim_fail(s, SIM_C_RETENTION,
			         "%s: Delete of its copy of %s answered, and "
			         "its row is still there",
			         n->name, d->id);
		}
	}
}

/* ---- Schedule ---- */

static int
tick_mine(const struct sim *s, int64_t k, size_t node)
{
	long who = s->cfg->sched_initiator;

	if (who == SCHED_ROTATE)
		return (size_t)(k % (int64_t)s->n) == node;
	return (size_t)who == node;
}

/* The ticks of n's own that passed while this run of its daemon ran:
 * boundaries after the tick it started in, up to its last turn. */
static uint64_t
ticks_due(const struct sim *s, const struct sim_node *n)
{
	int64_t iv = s->cfg->sched_interval_ms, k0, k1;
	uint64_t due = 0;

	if (n->last_turn < n->started)
		return 0;
	k0 = (SIM_WALL_BASE + n->started) / iv;
	k1 = (SIM_WALL_BASE + n->last_turn) / iv;
	for (int64_t k = k0 + 1; k <= k1; k++)
		due += tick_mine(s, k, n->idx);
	return due;
}

/* This run of n's daemon: every tick of its own counted once. */
static void
sched_account(struct sim *s, struct sim_node *n)
{
	struct coord_sched_view v;
	uint64_t due;

	if (s->cfg->sched_interval_ms == 0 || n->c == NULL)
		return;
	coord_schedule_view(n->c, &v);
	due = ticks_due(s, n);
	if (v.ticks != due)
		sim_fail(s, SIM_C_SCHEDULE,
		         "%s: %" PRIu64 " ticks of its own counted, %" PRIu64
		         " passed while it ran",
		         n->name, v.ticks, due);
	s->st->sched_ticks += v.ticks;
	s->st->sched_started += v.started;
	s->st->sched_skipped += v.skipped;
	s->st->sched_other += v.paused_ticks + v.failed;
}

static void
follow_schedule(struct sim *s, struct sim_node *n)
{
	int64_t iv = s->cfg->sched_interval_ms, wall = sim_wall(s), k;
	struct coord_sched_view v;
	struct sim_snap *sn;

	coord_schedule_view(n->c, &v);
	if (v.ticks != v.started + v.skipped + v.paused_ticks + v.failed)
		sim_fail(s, SIM_C_SCHEDULE,
		         "%s: %" PRIu64 " ticks, but %" PRIu64 " started, "
		         "%" PRIu64 " skipped, %" PRIu64 " paused, %" PRIu64
		         " failed",
		         n->name, v.ticks, v.started, v.skipped, v.paused_ticks,
		         v.failed);
	if (v.skipped > n->sched_skipped) {
		struct coord_snap_view sv;
		struct store_snapshot row;
		int64_t lost_at = INT64_MIN;
		coord_snapshot_view(n->c, v.last_id, &sv);
		/* Running at the tick; the same turn's batch may then have
		 * been lost, which ends what it held: unsaved, now, or, when
		 * the retry that follows the loss at once committed, on disk
		 * with the storage's reason, now. */
		if (sv.unsaved)
			lost_at = sv.row.finished_ms;
		else if (store_get(n->st, v.last_id, &row) == 0 &&
		         row.status == STORE_ABORTED &&
		         strstr(row.reason, ": storage: ") != NULL)
			lost_at = row.finished_ms;
		if (!sv.running && lost_at < sim_wall(s))
			sim_fail(s, SIM_C_SCHEDULE,
			         "%s: a tick skipped, but its last scheduled "
			         "snapshot %s was not running",
			         n->name, v.last_id);
	}
	if (v.started > n->sched_started) {
		k = wall / iv;
		if (v.started != n->sched_started + 1 || n->sched_paused)
			sim_fail(s, SIM_C_SCHEDULE,
			         "%s: %" PRIu64 " scheduled snapshots started "
			         "in one turn%s",
			         n->name, v.started - n->sched_started,
			         n->sched_paused ? ", paused" : "");
		if (wall - k * iv > SLACK_MS || !tick_mine(s, k, n->idx))
			sim_fail(
			    s, SIM_C_SCHEDULE,
			    "%s: scheduled snapshot %s started %" PRId64
			    " ms into tick %" PRId64 ", %s's",
			    n->name, v.last_id, wall - k * iv, k,
			    s->nodes[s->cfg->sched_initiator == SCHED_ROTATE
			                 ? (size_t)(k % (int64_t)s->n)
			                 : (size_t)s->cfg->sched_initiator]
			        .name);
		if ((sn = sim_snap_add(s, n, v.last_id, v.timeout_ms, 0)) !=
		    NULL) {
			sn->sched = 1;
			sim_trace(s, "%s: scheduled snapshot %s started",
			          n->name, sn->id);
		}
	}
	n->sched_ticks = v.ticks;
	n->sched_started = v.started;
	n->sched_skipped = v.skipped;
}

static void
call_pause(struct sim *s, struct sim_node *n)
{
	struct errinfo e = {0};
	int paused = !n->sched_paused;

	if (s->cfg->sched_interval_ms == 0)
		return;
	if (coord_schedule_pause(n->c, paused, &e) != 0) {
		sim_fail(s, SIM_C_SCHEDULE, "%s: schedule pause: %s", n->name,
		         e.text);
		return;
	}
	n->sched_paused = paused;
	sim_trace(s, "%s: schedule %s", n->name, paused ? "paused" : "resumed");
}

/* ---- Hooks ---- */

void
simops_call(struct sim *s, struct sim_node *n, enum sim_call call)
{
	switch (call) {
	case SIM_CALL_RESTORE:
		call_restore(s, n);
		break;
	case SIM_CALL_DELETE:
		call_delete(s, n);
		break;
	case SIM_CALL_KEEP:
		call_keep(s, n);
		break;
	case SIM_CALL_PAUSE:
		call_pause(s, n);
		break;
	}
}

void
simops_after_turn(struct sim *s, size_t i)
{
	struct sim_node *n = &s->nodes[i];
	struct sim_restore *r = &s->rst;

	n->last_turn = s->now;
	if (s->cfg->sched_interval_ms != 0)
		follow_schedule(s, n);
	if (r->active && i == r->restorer)
		follow_restore(s, n);
	if (r->active && r->decided && r->over) {
		int all = 1;
		/* Taken: the daemon read its AppRestored (an application
		 * that took it may die before its answer was read, and the
		 * next one gets it again). */
		for (size_t v = 0; v < s->n && all; v++) {
			struct coord_restore_view rv;
			all = s->nodes[v].app.era == s->era;
			if (all && s->nodes[v].c != NULL) {
				coord_restore_view(s->nodes[v].c, &rv);
				all = !rv.app_owed;
			}
		}
		if (all)
			transition_done(s);
	}
	if (s->o->faults & (SIM_F_DELETE | SIM_F_SCHEDULE | SIM_F_RESTORE))
		follow_rows(s, n);
}

void
simops_crash(struct sim *s, struct sim_node *n)
{
	struct sim_restore *r = &s->rst;

	sched_account(s, n);
	n->sched_ticks = n->sched_started = n->sched_skipped = 0;
	n->sched_paused = 0;
	if (r->active && !r->over && r->restorer == n->idx) {
		/* Its call dies with it; decided, the others still apply
		 * it when they hear the new generation. */
		r->over = 1;
		if (!r->decided) {
			r->active = 0;
			s->st->restores_given_up++;
		}
	}
}

int
simops_crash_unsafe(struct sim *s, struct sim_node *n)
{
	struct sim_restore *r = &s->rst;
	struct coord_restore_view v;
	uint64_t g;

	if (!(s->o->faults & SIM_F_RESTORE) || n->c == NULL)
		return 0;
	coord_restore_view(n->c, &v);
	if (strcmp(v.phase, "prepared") == 0)
		return 1;
	if (store_restore_generation(n->st, &g) != 0 || g != v.generation)
		return 1;
	if (r->active && r->decided && n->app.era < s->era)
		return 1;
	/* Taken by a life that died before its answer was read: only the
	 * daemon's memory has it for the next life. */
	if (v.app_owed && n->app.life != n->app.life_base)
		return 1;
	/* The replay lives in the daemon's memory only, also after every
	 * application took the restore itself. */
	for (size_t u = 0; u < s->n; u++)
		if (n->app.src_taken[u] < s->replay_to[u][n->idx])
			return 1;
	return 0;
}

int
simops_busy(struct sim *s, char *why, size_t len)
{
	if (s->rst.active) {
		snprintf(why, len, "the restore of %s is not over everywhere",
		         s->rst.id);
		return 1;
	}
	if (!(s->o->faults & SIM_F_DELETE))
		return 0;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t k;
		if (s->nodes[i].c != NULL &&
		    (k = coord_forgets_pending(s->nodes[i].c)) > 0) {
			snprintf(why, len,
			         "%s has %" PRIu64 " deletions not confirmed",
			         s->nodes[i].name, k);
			return 1;
		}
	}
	return 0;
}

/* ---- The end ---- */

static int
newer(const struct sim_snap *a, const struct sim_snap *b)
{
	/* store.c's retention order: started_ms, then id, descending. */
	if (a->started != b->started)
		return a->started > b->started;
	return strcmp(a->id, b->id) > 0;
}

/* Whether retention's rules keep sn at the end (they kept it at every
 * moment before too: the newer complete ones only grow, ages only
 * grow). */
static int
retention_keeps(struct sim *s, const struct sim_snap *sn)
{
	const struct config *cfg = s->cfg;
	int64_t age = sim_wall(s) - sn->ended_ms;
	unsigned rank = 1;

	if (sn->kept)
		return 1;
	if (!sn->complete)
		return age <= (int64_t)cfg->keep_aborted_ms;
	for (size_t i = 0; i < s->nsnaps; i++) {
		const struct sim_snap *o = &s->snaps[i];
		if (o != sn && o->initiator == sn->initiator && o->end_seen &&
		    o->complete && !o->kept && !o->deleted && newer(o, sn))
			rank++;
	}
	return (cfg->keep_last != 0 && rank <= cfg->keep_last) ||
	       (cfg->keep_for_ms != 0 && age <= (int64_t)cfg->keep_for_ms);
}

static void
final_rows(struct sim *s)
{
	struct store_snapshot row;
	int retention = s->cfg->keep_last != 0 || s->cfg->keep_for_ms != 0;

	for (size_t i = 0; i < s->nsnaps; i++) {
		struct sim_snap *sn = &s->snaps[i];
		struct sim_node *n = &s->nodes[sn->initiator];
		if (sn->lost_ok || !sn->end_seen ||
		    store_get(n->st, sn->id, &row) != E_NOENT)
			continue;
		if (!sn->deleted) {
			s->st->retained_away++;
			if (!retention)
				sim_fail(s, SIM_C_RETENTION,
				         "snapshot %s: gone from its initiator "
				         "without a Delete or a retention",
				         sn->id);
			else if (retention_keeps(s, sn))
				sim_fail(s, SIM_C_RETENTION,
				         "snapshot %s (%s%s): deleted by "
				         "retention, whose rules keep it",
				         sn->id,
				         sn->complete ? "complete" : "aborted",
				         sn->kept ? ", kept" : "");
		}
		/* A deletion reaches every node. */
		for (size_t v = 0; v < s->n; v++)
			if (store_get(s->nodes[v].st, sn->id, &row) != E_NOENT)
				sim_fail(
				    s, SIM_C_RETENTION,
				    "snapshot %s: deleted at its initiator, "
				    "still held by %s",
				    sn->id, s->nodes[v].name);
	}
	for (size_t i = 0; i < s->nldel; i++)
		if (s->ldel[i].done &&
		    store_get(s->nodes[s->ldel[i].node].st, s->ldel[i].id,
		              &row) != E_NOENT)
			sim_fail(
			    s, SIM_C_RETENTION,
			    "%s: its copy of %s came back after its Delete",
			    s->nodes[s->ldel[i].node].name, s->ldel[i].id);
}

void
simops_final(struct sim *s)
{
	uint64_t gen = UINT64_MAX;

	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		struct coord_restore_view v;
		if (n->c == NULL)
			continue;
		sched_account(s, n);
		if (!(s->o->faults & SIM_F_RESTORE))
			continue;
		/* All or nothing: one generation everywhere, none missed,
		 * every application in the bank's era. */
		coord_restore_view(n->c, &v);
		if (gen == UINT64_MAX)
			gen = v.generation;
		if (v.generation != gen || v.adopted != 0 ||
		    n->app.era != s->era)
			sim_fail(s, SIM_C_RESTORE,
			         "%s ends at generation %" PRIu64 "%s, its "
			         "application in era %d; %s at %" PRIu64
			         ", the bank in era %d",
			         n->name, v.generation,
			         v.adopted ? " (missed)" : "", n->app.era,
			         s->nodes[0].name, gen, s->era);
	}
	if (s->o->faults & (SIM_F_DELETE | SIM_F_SCHEDULE | SIM_F_RESTORE))
		final_rows(s);
}

void
simops_free(struct sim *s)
{
	for (size_t a = 0; a < SIM_MAX_NODES; a++)
		for (size_t b = 0; b < SIM_MAX_NODES; b++) {
			free(s->nsent[a][b].amount);
			free(s->rst.rec[a][b].amount);
		}
	free(s->ldel);
}
