/*
 * simdb.c - a node's database in the simulation: the real store (store.c
 * on an in-memory SQLite database) behind a fault port (store_fault.c)
 * that fails writes while the node's storage fault lasts.
 *
 * It fails the way SQLite does on a full disk or an I/O error (store.h):
 * a write fails either alone, the batch going on, or taking the whole
 * batch with it (SQLite rolled it back: every later write of the batch
 * and its commit then fail too); a begin or a commit can fail as well.
 * Reads never fail: a full disk still reads.  Outside a fault window every
 * call goes straight to the store.
 */
#include <string.h>

#include "sim.h"

/* The fault window's policy; see the top of the file. */
static int
check(void *arg, enum store_op op)
{
	struct sim_db *d = arg;
	struct store_fault *f = &d->fault;

	switch (op) {
	case STORE_OP_BEGIN:
		if (d->active && sim_rand(d->s, 1000) < d->fail_pm / 4) {
			store_fault_say(f, "cannot begin: disk I/O error "
			                   "(simulated)");
			return E_IO;
		}
		return 0;
	case STORE_OP_COMMIT:
		/* A lost batch's commit the port fails itself. */
		if (!f->lost && d->active &&
		    sim_rand(d->s, 1000) < d->fail_pm) {
			store_fault_lose(f);
			store_fault_say(f, "database or disk is full "
			                   "(simulated)");
			return E_IO;
		}
		return 0;
	default:
		break;
	}
	if (!store_op_writes(op) || f->lost || !d->active ||
	    sim_rand(d->s, 1000) >= d->fail_pm)
		return 0;
	if (sim_rand(d->s, 2) == 0) {
		store_fault_say(f, "database or disk is full (simulated)");
		return E_IO;
	}
	/* SQLite rolled the whole batch back. */
	store_fault_lose(f);
	store_fault_say(f, "disk I/O error (simulated)");
	return E_IO;
}

/* The planted bug SIM_SC_IDS: the second id repeats the first. */
static void
made(void *arg, enum store_op op, int rv, uint64_t *id)
{
	struct sim_db *d = arg;

	if (op != STORE_OP_NEXT_ID || rv != 0 ||
	    d->s->o->self_check != SIM_SC_IDS)
		return;
	if (d->last_id != 0)
		*id = d->last_id;
	d->last_id = *id;
}

void
simdb_init(struct sim_db *d, struct sim *s, struct store *st)
{
	memset(d, 0, sizeof(*d));
	d->s = s;
	d->st = st;
	store_fault_init(&d->fault, store_port(st), check, made, d);
	d->fault.lost_why =
	    "the batch was rolled back: disk I/O error (simulated)";
}

struct store_port
simdb_port(struct sim_db *d)
{
	return store_fault_port(&d->fault);
}

void
simdb_crash(struct sim_db *d)
{
	/* The process died: SQLite rolls back what it had not committed
	 * (the file keeps the last commit; here the memory does). */
	store_rollback(d->st);
	d->fault.lost = 0;
}
