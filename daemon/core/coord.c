/*
 * coord.c - the coordinator's life cycle, the commit of the turn's batch of
 * database writes, and the queries the shell answers status and control
 * calls from.
 *
 * The turn's batch of writes is coord_batch.c's; this file commits it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "log.h"

int
coord_new(const struct config *cfg, size_t self, uint64_t epoch,
          struct store_port st, int64_t now_ms, int64_t wall_ms,
          struct coord **ret, struct errinfo *e)
{
	struct coord *c;
	int rv;

	if (self >= cfg->nnodes || epoch == 0)
		return err_set(e, E_INVAL, "bad node index or epoch");
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->peers = calloc(cfg->nnodes, sizeof(*c->peers))) == NULL) {
		free(c);
		return err_set(e, E_NOMEM, "out of memory");
	}
	c->cfg = cfg;
	c->self = self;
	c->name = cfg->nodes[self].name;
	c->epoch = epoch;
	c->st = st;
	c->now = c->start_ms = now_ms;
	c->wall = wall_ms;
	app_init(c);
	if ((rv = peer_init(c)) != 0) {
		coord_free(c);
		return err_set(e, rv, "out of memory");
	}
	if ((rv = snap_init(c, e)) != 0) {
		coord_free(c);
		return rv;
	}
	if ((rv = restore_init(c, e)) != 0) {
		coord_free(c);
		return rv;
	}
	sched_init(c);
	c->retain_due = 1; /* what an earlier run left to delete */
	*ret = c;
	return 0;
}

void
coord_free(struct coord *c)
{
	if (c == NULL)
		return;
	restore_fini(c);
	snap_fini(c);
	app_fini(c);
	peer_fini(c);
	free(c->peers);
	free(c);
}

void
coord_set_time(struct coord *c, int64_t now_ms, int64_t wall_ms)
{
	c->now = now_ms;
	c->wall = wall_ms;
}

int
coord_batch_open(const struct coord *c)
{
	return c->batch_open;
}

int
coord_commit(struct coord *c)
{
	int rv = 0;

	if (c->batch_open || c->begin_failed) {
		if (c->batch_open && !c->write_failed &&
		    (rv = DB0(c, commit)) == E_BUSY) {
			log_warnx("database busy; commit retried next turn");
			return E_BUSY;
		}
		if (rv != 0 || c->begin_failed || c->write_failed) {
			c->stats.commit_failures++;
			sched_batch_lost(c);
			snap_storage_failed(c);
			return E_STORAGE;
		}
		c->batch_open = 0;
		if (c->unfinished == c->batch_gen)
			c->unfinished = 0;
		snap_committed(c);
		restore_committed(c);
	}
	if (c->degraded[0] != '\0' && c->now - c->retry_ms >= 1000)
		snap_storage_retry(c);
	sched_committed(c);
	return 0;
}

int
coord_next_event(struct coord *c, struct coord_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (c->rs.end_due && c->rs.phase == RS_IDLE) {
		c->rs.end_due = 0;
		ev->kind = COORD_EV_RESTORE_ENDED;
		snprintf(ev->id, sizeof(ev->id), "%s", c->rs.id);
		ev->initiator = 1;
		ev->complete = c->rs.result == 1;
		return 1;
	}
	return snap_next_end(c, ev);
}

const char *
coord_degraded(const struct coord *c)
{
	return c->degraded;
}

void
coord_timers(struct coord *c)
{
	snap_timers(c);
	peer_timers(c);
	sched_timers(c);
	restore_timers(c);
}

int
coord_next_timer(struct coord *c, int max)
{
	return restore_next_timer(
	    c, sched_next_timer(c, peer_next_timer(c, snap_next_timer(c, max))));
}

uint64_t
coord_bad_peer(const struct coord *c)
{
	return c->bad_peer;
}

uint64_t
coord_bad_app(const struct coord *c)
{
	return c->bad_app;
}

size_t
coord_in_progress(const struct coord *c)
{
	return engine_in_progress(c->eng);
}

void
coord_peer_stats(struct coord *c, size_t node, struct coord_peer_stats *ret)
{
	const struct peer *p = &c->peers[node];

	memset(ret, 0, sizeof(*ret));
	if (node == c->self)
		return;
	ret->alive = coord_peer_alive(c, node);
	ret->last_seen_ms = p->last_seen_ms;
	ret->refused_conns = p->refused_conns;
	ret->renumbering = p->renumber_seq != 0;
	ret->in_known = p->in_known;
	ret->dups = p->dups;
	ret->link_next = link_next_seq(p->out);
	ret->link_acked = link_acked(p->out);
	if (p->out_chan >= 0) {
		ret->has_out = 1;
		ret->sent = engine_sent_count(c->eng, (size_t)p->out_chan);
		ret->app_taken = p->app_taken;
		ret->window_used = p->inflight_bytes;
		ret->stalls = p->stalls;
		ret->resent = p->resent;
	}
	if (p->in_chan >= 0) {
		ret->has_in = 1;
		ret->delivered =
		    engine_delivered_count(c->eng, (size_t)p->in_chan);
		ret->taken = p->taken;
	}
}

void
coord_queue_stats(const struct coord *c, struct coord_queue_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->down_items = fifo_count(&c->down);
	for (size_t i = 0; i < ret->down_items; i++)
		ret->down_bytes += TAG_LEN(fifo_rec(&c->down, i)->tag2);
	ret->down_sent_bytes = c->down_sent_bytes;
	ret->outcomes_waiting = c->nout_retry;
	ret->app_replies = c->nreplies;
	for (const struct appreq *r = c->reqs; r != NULL; r = r->next)
		ret->state_requests++;
	for (const struct snap *s = c->snaps; s != NULL; s = s->next)
		ret->snaps++;
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		const struct peer *p = &c->peers[v];
		if (v == c->self)
			continue;
		if (link_unacked(p->out) > ret->link_items)
			ret->link_items = link_unacked(p->out);
		if (link_unacked_bytes(p->out) > ret->link_bytes)
			ret->link_bytes = link_unacked_bytes(p->out);
		if (link_held(p->in) > ret->held_items)
			ret->held_items = link_held(p->in);
		if (fifo_count(&p->inflight) > ret->inflight_items)
			ret->inflight_items = fifo_count(&p->inflight);
		if (p->inflight_bytes > ret->inflight_bytes)
			ret->inflight_bytes = p->inflight_bytes;
	}
}

void
coord_foreach_running(const struct coord *c,
                      void (*fn)(const char *id, void *arg), void *arg)
{
	for (const struct snap *s = c->snaps; s != NULL; s = s->next)
		if (s->state == SNAP_RUNNING || s->state == SNAP_WAITING)
			fn(s->id, arg);
}

size_t
coord_initiated_in_flight(const struct coord *c)
{
	size_t n = 0;

	for (const struct snap *s = c->snaps; s != NULL; s = s->next)
		n += s->initiator == c->self &&
		     (s->state == SNAP_RUNNING || s->state == SNAP_WAITING);
	return n;
}

void
coord_snapshot_view(struct coord *c, const char *id,
                    struct coord_snap_view *ret)
{
	struct snap *s = snap_find(c, id);
	struct store_snapshot *r = &ret->row;
	size_t open = 0;

	memset(ret, 0, sizeof(*ret));
	if (s == NULL) {
		ret->ended = 1; /* nothing to wait for here */
		return;
	}
	ret->known = 1;
	ret->initiator = s->initiator == c->self;
	ret->deadline_wall_ms =
	    s->started_wall_ms + (s->deadline_ms - s->started_ms);
	ret->running = s->state == SNAP_RUNNING || s->state == SNAP_WAITING;
	/* An end not yet readable as it is (a completion not committed, an
	 * end in a lost turn) is told once it is. */
	ret->ended = (s->state == SNAP_DONE || s->state == SNAP_ABORTED) &&
	             !snap_end_pending(c, s);
	if (s->parts != NULL)
		ret->parts_received = (uint32_t)s->parts_done;
	if (s->state == SNAP_RUNNING &&
	    engine_channels_open(c->eng, s->id, &open) == 0)
		ret->channels_recording = (uint32_t)open;
	if (!s->unsaved)
		return;
	ret->unsaved = 1;
	snprintf(r->id, sizeof(r->id), "%s", s->id);
	snprintf(r->initiator, sizeof(r->initiator), "%s",
	         c->cfg->nodes[s->initiator].name);
	r->is_initiator = s->initiator == c->self;
	r->status = STORE_ABORTED;
	snprintf(r->reason, sizeof(r->reason), "%s", s->why);
	r->started_ms = s->started_wall_ms;
	r->finished_ms = coord_wall_of(c, s->ended_ms);
	r->parts_expected = (uint32_t)c->cfg->nnodes;
	r->consistent = -1;
}

int
coord_delete(struct coord *c, const char *id, struct errinfo *e)
{
	struct snap *s = snap_find(c, id);
	int rv;

	if (s != NULL &&
	    (s->state == SNAP_RUNNING || s->state == SNAP_WAITING))
		return err_set(e, E_STATE, "snapshot still in progress");
	if (restore_uses(c, id))
		return err_set(e, E_STATE, "a restore of %s is running", id);
	if (c->degraded[0] != '\0')
		return err_set(e, E_STORAGE, "storage degraded: %.200s",
		               c->degraded);
	if ((rv = sched_delete(c, id)) == E_NOENT)
		return err_set(e, rv, "no such snapshot");
	if (rv != 0)
		return err_set(e, rv, "storage: %.200s", DB_ERR(c));
	return 0;
}
