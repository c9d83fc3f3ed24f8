/*
 * store_fault.c - a store port that fails the calls a policy chooses; see
 * store_fault.h.
 */
#include "store_fault.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int writes;
} op_info[STORE_OP_COUNT] = {
    [STORE_OP_BEGIN] = {"begin", 0},
    [STORE_OP_COMMIT] = {"commit", 0},
    [STORE_OP_ROLLBACK] = {"rollback", 0},
    [STORE_OP_CHECKPOINT] = {"checkpoint", 0},
    [STORE_OP_PROBE] = {"probe", 1},
    [STORE_OP_NEXT_ID] = {"next_id", 1},
    [STORE_OP_SNAPSHOT_CREATE] = {"snapshot_create", 1},
    [STORE_OP_PUT_MESSAGE] = {"put_message", 1},
    [STORE_OP_PUT_STATE] = {"put_state", 1},
    [STORE_OP_PUT_CHANNEL] = {"put_channel", 1},
    [STORE_OP_FINISH] = {"finish", 1},
    [STORE_OP_ABORT_SNAPSHOT] = {"abort_snapshot", 1},
    [STORE_OP_ABORT_UNFINISHED] = {"abort_unfinished", 1},
    [STORE_OP_PUT_AUDIT] = {"put_audit", 1},
    [STORE_OP_REMOVE] = {"remove", 1},
    [STORE_OP_FOREACH_STATE] = {"foreach_state", 0},
    [STORE_OP_FOREACH_CHANNEL] = {"foreach_channel", 0},
    [STORE_OP_FOREACH_MESSAGE] = {"foreach_message", 0},
    [STORE_OP_SET_OUTCOME] = {"set_outcome", 1},
    [STORE_OP_SET_KEEP] = {"set_keep", 1},
    [STORE_OP_FORGET_ADD] = {"forget_add", 1},
    [STORE_OP_FORGET_DONE] = {"forget_done", 1},
    [STORE_OP_FORGET_FOREACH] = {"forget_foreach", 0},
    [STORE_OP_FORGET_COUNT] = {"forget_count", 0},
    [STORE_OP_RETAIN_FOREACH] = {"retain_foreach", 0},
    [STORE_OP_RECLAIM] = {"reclaim", 1},
    [STORE_OP_GET] = {"get", 0},
    [STORE_OP_RESTORE_PUT] = {"restore_put", 1},
    [STORE_OP_RESTORE_GENERATION] = {"restore_generation", 0},
    [STORE_OP_LIST] = {"list", 0},
};

const char *
store_op_name(enum store_op op)
{
	return op < STORE_OP_COUNT ? op_info[op].name : "?";
}

int
store_op_writes(enum store_op op)
{
	return op < STORE_OP_COUNT && op_info[op].writes;
}

void
store_fault_init(struct store_fault *f, struct store_port inner,
                 int (*check)(void *, enum store_op),
                 void (*made)(void *, enum store_op, int, uint64_t *),
                 void *arg)
{
	memset(f, 0, sizeof(*f));
	f->inner = inner;
	f->check = check;
	f->made = made;
	f->arg = arg;
	f->lost_why = "the batch was rolled back";
}

void
store_fault_say(struct store_fault *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
}

void
store_fault_lose(struct store_fault *f)
{
	f->inner.ops->rollback(f->inner.db);
	f->lost = 1;
}

/* Whether op may go to the inner port: 0, or the failure. */
static int
before(struct store_fault *f, enum store_op op)
{
	int rv;

	if (op == STORE_OP_BEGIN || op == STORE_OP_ROLLBACK)
		f->lost = 0;
	if ((rv = f->check(f->arg, op)) != 0) {
		/* A batch that cannot begin is lost from the start. */
		if (op == STORE_OP_BEGIN)
			f->lost = 1;
	} else if (f->lost && (store_op_writes(op) || op == STORE_OP_COMMIT)) {
		store_fault_say(f, "%s", f->lost_why);
		rv = E_IO;
	} else {
		return 0;
	}
	f->ours = 1;
	f->failures++;
	return rv;
}

/* The inner port's result, rv: a failure of its own is the one errmsg()
 * names. */
static int
after(struct store_fault *f, enum store_op op, int rv, uint64_t *id)
{
	if (rv != 0)
		f->ours = 0;
	if (f->made != NULL)
		f->made(f->arg, op, rv, id);
	return rv;
}

/* Makes call on the inner port, inner and db in scope, unless op fails. */
#define CALL(op, call)                                                         \
	do {                                                                   \
		struct store_fault *f = fdb;                                   \
		const struct store_port_ops *inner = f->inner.ops;             \
		void *db = f->inner.db;                                        \
		int rv_ = before(f, (op));                                     \
		return rv_ != 0 ? rv_ : after(f, (op), (call), NULL);          \
	} while (0)

static const char *
p_errmsg(void *fdb)
{
	struct store_fault *f = fdb;

	return f->ours ? f->why : f->inner.ops->errmsg(f->inner.db);
}

static int
p_begin(void *fdb)
{
	CALL(STORE_OP_BEGIN, inner->begin(db));
}

static int
p_commit(void *fdb)
{
	CALL(STORE_OP_COMMIT, inner->commit(db));
}

static int
p_rollback(void *fdb)
{
	struct store_fault *f = fdb;
	int rv = before(f, STORE_OP_ROLLBACK), irv;

	/* Made even when it fails: it ends the batch anyway. */
	irv = f->inner.ops->rollback(f->inner.db);
	return rv != 0 ? rv : after(f, STORE_OP_ROLLBACK, irv, NULL);
}

static int
p_checkpoint(void *fdb)
{
	CALL(STORE_OP_CHECKPOINT, inner->checkpoint(db));
}

static int
p_probe(void *fdb, int64_t now_ms)
{
	CALL(STORE_OP_PROBE, inner->probe(db, now_ms));
}

static int
p_next_id(void *fdb, const char *node, int64_t now_ms, uint64_t floor,
          uint64_t *ret)
{
	struct store_fault *f = fdb;
	int rv = before(f, STORE_OP_NEXT_ID);

	if (rv != 0)
		return rv;
	return after(
	    f, STORE_OP_NEXT_ID,
	    f->inner.ops->next_id(f->inner.db, node, now_ms, floor, ret), ret);
}

static int
p_snapshot_create(void *fdb, const char *id, const char *initiator,
                  int is_initiator, int64_t started_ms, uint32_t parts)
{
	CALL(STORE_OP_SNAPSHOT_CREATE,
	     inner->snapshot_create(db, id, initiator, is_initiator, started_ms,
	                            parts));
}

static int
p_put_message(void *fdb, const char *id, const char *src, const char *dst,
              uint64_t seq, const char *ctype, const void *payload, size_t len)
{
	CALL(STORE_OP_PUT_MESSAGE,
	     inner->put_message(db, id, src, dst, seq, ctype, payload, len));
}

static int
p_put_state(void *fdb, const char *id, const char *node, const char *ctype,
            const void *state, size_t len, int64_t recorded_ms)
{
	CALL(STORE_OP_PUT_STATE,
	     inner->put_state(db, id, node, ctype, state, len, recorded_ms));
}

static int
p_put_channel(void *fdb, const char *id, const struct store_channel *ch)
{
	CALL(STORE_OP_PUT_CHANNEL, inner->put_channel(db, id, ch));
}

static int
p_finish(void *fdb, const char *id, enum store_status status,
         const char *reason, int64_t finished_ms)
{
	CALL(STORE_OP_FINISH,
	     inner->finish(db, id, status, reason, finished_ms));
}

static int
p_abort_snapshot(void *fdb, const char *id, const char *initiator,
                 int is_initiator, int64_t started_ms, uint32_t parts,
                 const char *reason, int64_t finished_ms)
{
	CALL(STORE_OP_ABORT_SNAPSHOT,
	     inner->abort_snapshot(db, id, initiator, is_initiator, started_ms,
	                           parts, reason, finished_ms));
}

static int
p_abort_unfinished(void *fdb, const char *reason, int64_t finished_ms,
                   uint32_t *ret_count)
{
	CALL(STORE_OP_ABORT_UNFINISHED,
	     inner->abort_unfinished(db, reason, finished_ms, ret_count));
}

static int
p_put_audit(void *fdb, const char *id, int consistent, const char *reason)
{
	CALL(STORE_OP_PUT_AUDIT, inner->put_audit(db, id, consistent, reason));
}

static int
p_remove(void *fdb, const char *id)
{
	CALL(STORE_OP_REMOVE, inner->remove(db, id));
}

static int
p_foreach_state(void *fdb, const char *id, store_state_fn fn, void *arg)
{
	CALL(STORE_OP_FOREACH_STATE, inner->foreach_state(db, id, fn, arg));
}

static int
p_foreach_channel(void *fdb, const char *id, store_channel_fn fn, void *arg)
{
	CALL(STORE_OP_FOREACH_CHANNEL, inner->foreach_channel(db, id, fn, arg));
}

static int
p_foreach_message(void *fdb, const char *id, const char *src, const char *dst,
                  store_message_fn fn, void *arg)
{
	CALL(STORE_OP_FOREACH_MESSAGE,
	     inner->foreach_message(db, id, src, dst, fn, arg));
}

static int
p_set_outcome(void *fdb, const char *id, enum store_status status,
              const char *reason, int consistent, const char *audit_reason,
              uint32_t parts, int64_t outcome_ms)
{
	CALL(STORE_OP_SET_OUTCOME,
	     inner->set_outcome(db, id, status, reason, consistent,
	                        audit_reason, parts, outcome_ms));
}

static int
p_set_keep(void *fdb, const char *id, int keep)
{
	CALL(STORE_OP_SET_KEEP, inner->set_keep(db, id, keep));
}

static int
p_forget_add(void *fdb, const char *node, const char *id, int64_t now_ms)
{
	CALL(STORE_OP_FORGET_ADD, inner->forget_add(db, node, id, now_ms));
}

static int
p_forget_done(void *fdb, const char *node, const char *id)
{
	CALL(STORE_OP_FORGET_DONE, inner->forget_done(db, node, id));
}

static int
p_forget_foreach(void *fdb, store_forget_fn fn, void *arg)
{
	CALL(STORE_OP_FORGET_FOREACH, inner->forget_foreach(db, fn, arg));
}

static int
p_forget_count(void *fdb, const char *node, uint64_t *ret)
{
	CALL(STORE_OP_FORGET_COUNT, inner->forget_count(db, node, ret));
}

static int
p_retain_foreach(void *fdb, store_retain_fn fn, void *arg)
{
	CALL(STORE_OP_RETAIN_FOREACH, inner->retain_foreach(db, fn, arg));
}

static int
p_list(void *fdb, store_list_fn fn, void *arg)
{
	CALL(STORE_OP_LIST, inner->list(db, fn, arg));
}

static int
p_reclaim(void *fdb)
{
	CALL(STORE_OP_RECLAIM, inner->reclaim(db));
}

static int
p_get(void *fdb, const char *id, struct store_snapshot *ret)
{
	CALL(STORE_OP_GET, inner->get(db, id, ret));
}

static int
p_restore_put(void *fdb, uint64_t generation, const char *id,
              const char *restorer, int64_t applied_ms, uint64_t replayed)
{
	CALL(STORE_OP_RESTORE_PUT,
	     inner->restore_put(db, generation, id, restorer, applied_ms,
	                        replayed));
}

static int
p_restore_generation(void *fdb, uint64_t *ret)
{
	CALL(STORE_OP_RESTORE_GENERATION, inner->restore_generation(db, ret));
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
    .list = p_list,
    .reclaim = p_reclaim,
    .get = p_get,
    .restore_put = p_restore_put,
    .restore_generation = p_restore_generation,
};

struct store_port
store_fault_port(struct store_fault *f)
{
	struct store_port p = {&ops, f};

	return p;
}
