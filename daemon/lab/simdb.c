/*
 * simdb.c - a node's database in the simulation: the real store (store.c
 * on an in-memory SQLite database) behind a store port that fails writes
 * while the node's storage fault lasts.
 *
 * It fails the way SQLite does on a full disk or an I/O error (store.h):
 * a write fails either alone, the batch going on, or taking the whole
 * batch with it (SQLite rolled it back: every later write of the batch
 * and its commit then fail too); a begin or a commit can fail as well.
 * Reads never fail: a full disk still reads.  Outside a fault window every
 * call goes straight to the store.
 */
#include <stdio.h>
#include <string.h>

#include "sim.h"

#define INNER(d, fn, ...)                                                      \
	inner_rv((d), (d)->inner.ops->fn((d)->inner.db, __VA_ARGS__))
#define INNER0(d, fn) inner_rv((d), (d)->inner.ops->fn((d)->inner.db))

/* The store's own result: a failure of its own is the one errmsg()
 * names. */
static int
inner_rv(struct sim_db *d, int rv)
{
	if (rv != 0)
		d->ours = 0;
	return rv;
}

/* Like the store's errmsg(), ours names the last failure, until the
 * store itself fails. */
static int
fail(struct sim_db *d, const char *what)
{
	d->ours = 1;
	d->failures++;
	snprintf(d->err, sizeof(d->err), "%s (simulated)", what);
	return E_IO;
}

/* Whether a write may go to the store; if not, the failure. */
static int
write_fails(struct sim_db *d)
{
	if (d->lost)
		return fail(d, "the batch was rolled back: disk I/O error");
	if (!d->active || sim_rand(d->s, 1000) >= d->fail_pm)
		return 0;
	if (sim_rand(d->s, 2) == 0)
		return fail(d, "database or disk is full");
	/* SQLite rolled the whole batch back. */
	INNER0(d, rollback);
	d->lost = 1;
	return fail(d, "disk I/O error");
}

static const char *
p_errmsg(void *db)
{
	struct sim_db *d = db;

	return d->ours ? d->err : d->inner.ops->errmsg(d->inner.db);
}

static int
p_begin(void *db)
{
	struct sim_db *d = db;

	d->lost = 0;
	/* A batch that cannot begin is lost from the start (store.h). */
	if (d->active && sim_rand(d->s, 1000) < d->fail_pm / 4) {
		d->lost = 1;
		return fail(d, "cannot begin: disk I/O error");
	}
	return INNER0(d, begin);
}

static int
p_commit(void *db)
{
	struct sim_db *d = db;

	if (d->lost)
		return fail(d, "the batch was rolled back: disk I/O error");
	if (d->active && sim_rand(d->s, 1000) < d->fail_pm) {
		INNER0(d, rollback);
		d->lost = 1;
		return fail(d, "database or disk is full");
	}
	return INNER0(d, commit);
}

static int
p_rollback(void *db)
{
	struct sim_db *d = db;

	d->lost = 0;
	return INNER0(d, rollback);
}

static int
p_checkpoint(void *db)
{
	struct sim_db *d = db;

	return INNER0(d, checkpoint);
}

static int
p_probe(void *db, int64_t now_ms)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv : INNER(d, probe, now_ms);
}

static int
p_next_id(void *db, const char *node, int64_t now_ms, uint64_t floor,
          uint64_t *ret)
{
	struct sim_db *d = db;
	int rv;

	if ((rv = write_fails(d)) != 0)
		return rv;
	if ((rv = INNER(d, next_id, node, now_ms, floor, ret)) != 0)
		return rv;
	/* The planted bug: the second id repeats the first. */
	if (d->s->o->self_check == SIM_SC_IDS) {
		if (d->last_id != 0)
			*ret = d->last_id;
		d->last_id = *ret;
	}
	return 0;
}

static int
p_snapshot_create(void *db, const char *id, const char *initiator,
                  int is_initiator, int64_t started_ms, uint32_t parts)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, snapshot_create, id, initiator, is_initiator,
	                   started_ms, parts);
}

static int
p_put_message(void *db, const char *id, const char *src, const char *dst,
              uint64_t seq, const char *ctype, const void *payload, size_t len)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv
	                                  : INNER(d, put_message, id, src, dst,
	                                          seq, ctype, payload, len);
}

static int
p_put_state(void *db, const char *id, const char *node, const char *ctype,
            const void *state, size_t len, int64_t recorded_ms)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv
	                                  : INNER(d, put_state, id, node, ctype,
	                                          state, len, recorded_ms);
}

static int
p_put_channel(void *db, const char *id, const struct store_channel *ch)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv : INNER(d, put_channel, id, ch);
}

static int
p_finish(void *db, const char *id, enum store_status status, const char *reason,
         int64_t finished_ms)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, finish, id, status, reason, finished_ms);
}

static int
p_abort_snapshot(void *db, const char *id, const char *initiator,
                 int is_initiator, int64_t started_ms, uint32_t parts,
                 const char *reason, int64_t finished_ms)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, abort_snapshot, id, initiator, is_initiator,
	                   started_ms, parts, reason, finished_ms);
}

static int
p_abort_unfinished(void *db, const char *reason, int64_t finished_ms,
                   uint32_t *ret_count)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, abort_unfinished, reason, finished_ms, ret_count);
}

static int
p_put_audit(void *db, const char *id, int consistent, const char *reason)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, put_audit, id, consistent, reason);
}

static int
p_remove(void *db, const char *id)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv : INNER(d, remove, id);
}

static int
p_foreach_state(void *db, const char *id, store_state_fn fn, void *arg)
{
	struct sim_db *d = db;

	return INNER(d, foreach_state, id, fn, arg);
}

static int
p_foreach_channel(void *db, const char *id, store_channel_fn fn, void *arg)
{
	struct sim_db *d = db;

	return INNER(d, foreach_channel, id, fn, arg);
}

static int
p_foreach_message(void *db, const char *id, const char *src, const char *dst,
                  store_message_fn fn, void *arg)
{
	struct sim_db *d = db;

	return INNER(d, foreach_message, id, src, dst, fn, arg);
}

/* Schema 3's calls: writes fail as the others do in a fault window,
 * reads pass. */
static int
p_set_outcome(void *db, const char *id, enum store_status status,
              const char *reason, int consistent, const char *audit_reason,
              uint32_t parts, int64_t outcome_ms)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, set_outcome, id, status, reason, consistent,
	                   audit_reason, parts, outcome_ms);
}

static int
p_set_keep(void *db, const char *id, int keep)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv : INNER(d, set_keep, id, keep);
}

static int
p_forget_add(void *db, const char *node, const char *id, int64_t now_ms)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, forget_add, node, id, now_ms);
}

static int
p_forget_done(void *db, const char *node, const char *id)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv
	                                  : INNER(d, forget_done, node, id);
}

static int
p_forget_foreach(void *db, store_forget_fn fn, void *arg)
{
	struct sim_db *d = db;

	return INNER(d, forget_foreach, fn, arg);
}

static int
p_forget_count(void *db, const char *node, uint64_t *ret)
{
	struct sim_db *d = db;

	return INNER(d, forget_count, node, ret);
}

static int
p_retain_foreach(void *db, store_retain_fn fn, void *arg)
{
	struct sim_db *d = db;

	return INNER(d, retain_foreach, fn, arg);
}

static int
p_reclaim(void *db)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0 ? rv : INNER0(d, reclaim);
}

static int
p_get(void *db, const char *id, struct store_snapshot *ret)
{
	struct sim_db *d = db;

	return INNER(d, get, id, ret);
}

static int
p_restore_put(void *db, uint64_t generation, const char *id,
              const char *restorer, int64_t applied_ms, uint64_t replayed)
{
	struct sim_db *d = db;
	int rv;

	return (rv = write_fails(d)) != 0
	           ? rv
	           : INNER(d, restore_put, generation, id, restorer,
	                   applied_ms, replayed);
}

static int
p_restore_generation(void *db, uint64_t *ret)
{
	struct sim_db *d = db;

	return INNER(d, restore_generation, ret);
}

static const struct store_port_ops ops = {
    .errmsg = p_errmsg,
    .begin = p_begin,
    .commit = p_commit,
    .rollback = p_rollback,
    .checkpoint = p_checkpoint,
    .probe = p_probe,
    .next_id = p_next_id,
    .snapshot_create = p_snapshot_create,
    .put_message = p_put_message,
    .put_state = p_put_state,
    .put_channel = p_put_channel,
    .finish = p_finish,
    .abort_snapshot = p_abort_snapshot,
    .abort_unfinished = p_abort_unfinished,
    .put_audit = p_put_audit,
    .remove = p_remove,
    .foreach_state = p_foreach_state,
    .foreach_channel = p_foreach_channel,
    .foreach_message = p_foreach_message,
    .set_outcome = p_set_outcome,
    .set_keep = p_set_keep,
    .forget_add = p_forget_add,
    .forget_done = p_forget_done,
    .forget_foreach = p_forget_foreach,
    .forget_count = p_forget_count,
    .retain_foreach = p_retain_foreach,
    .reclaim = p_reclaim,
    .get = p_get,
    .restore_put = p_restore_put,
    .restore_generation = p_restore_generation,
};

void
simdb_init(struct sim_db *d, struct sim *s, struct store *st)
{
	memset(d, 0, sizeof(*d));
	d->s = s;
	d->st = st;
	d->inner = store_port(st);
}

struct store_port
simdb_port(struct sim_db *d)
{
	struct store_port p = {&ops, d};

	return p;
}

void
simdb_crash(struct sim_db *d)
{
	/* The process died: SQLite rolls back what it had not committed
	 * (the file keeps the last commit; here the memory does). */
	INNER0(d, rollback);
	d->lost = 0;
}
