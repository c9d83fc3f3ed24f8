/*
 * store_fault.h - a store port in front of another that fails the calls
 * a policy chooses, the way SQLite fails on a full disk or an I/O error
 * (store_fault.c).  The simulation's storage faults (sim/simdb.c) and the
 * coordinator tests' injected failures (tests/unit/coord_harness.c) are
 * two policies over it.
 *
 * Every call but errmsg() asks the policy's check() first: 0 makes the
 * call, anything else is returned as its failure (store_fault_say() words
 * it).  Around the policy the port keeps SQLite's batch rule: once a
 * batch is lost (store_fault_lose(), or a begin that failed), every later
 * write of it and its commit fail too, until a begin or a rollback.  A
 * rollback is always made, even when the policy fails it: it ends the
 * batch anyway.
 */
#ifndef CUT_STORE_FAULT_H
#define CUT_STORE_FAULT_H

#include "store_port.h"

/* The port's calls, in store_port_ops order. */
enum store_op {
	STORE_OP_BEGIN,
	STORE_OP_COMMIT,
	STORE_OP_ROLLBACK,
	STORE_OP_CHECKPOINT,
	STORE_OP_PROBE,
	STORE_OP_NEXT_ID,
	STORE_OP_SNAPSHOT_CREATE,
	STORE_OP_PUT_MESSAGE,
	STORE_OP_PUT_STATE,
	STORE_OP_PUT_CHANNEL,
	STORE_OP_FINISH,
	STORE_OP_ABORT_SNAPSHOT,
	STORE_OP_ABORT_UNFINISHED,
	STORE_OP_PUT_AUDIT,
	STORE_OP_REMOVE,
	STORE_OP_FOREACH_STATE,
	STORE_OP_FOREACH_CHANNEL,
	STORE_OP_FOREACH_MESSAGE,
	STORE_OP_SET_OUTCOME,
	STORE_OP_SET_KEEP,
	STORE_OP_FORGET_ADD,
	STORE_OP_FORGET_DONE,
	STORE_OP_FORGET_FOREACH,
	STORE_OP_FORGET_COUNT,
	STORE_OP_RETAIN_FOREACH,
	STORE_OP_RECLAIM,
	STORE_OP_GET,
	STORE_OP_RESTORE_PUT,
	STORE_OP_RESTORE_GENERATION,
	STORE_OP_LIST,
	STORE_OP_COUNT
};

/* The call's name as in store_port_ops ("begin", "put_state", ...). */
const char *store_op_name(enum store_op op);
/* Whether the call writes rows (a read or a batch boundary: 0). */
int store_op_writes(enum store_op op);

struct store_fault {
	struct store_port inner;
	/* Asked before each call: 0 to make it, or the code it fails with. */
	int (*check)(void *arg, enum store_op op);
	/* Told each call the inner port made, with its result and, for
	 * next_id, its id (else NULL); may change the id.  Optional. */
	void (*made)(void *arg, enum store_op op, int rv, uint64_t *id);
	void *arg;
	/* What a write of a lost batch fails with; the policy may set it. */
	const char *lost_why;
	int lost; /* the open batch was lost: writes fail */
	int ours; /* the last failure was ours: why says why */
	char why[256];
	uint64_t failures; /* calls failed here */
};

/* Sets f in front of inner, with the policy check (and made, or NULL). */
void store_fault_init(struct store_fault *f, struct store_port inner,
                      int (*check)(void *, enum store_op),
                      void (*made)(void *, enum store_op, int, uint64_t *),
                      void *arg);
struct store_port store_fault_port(struct store_fault *f);
/* Words the failure check() is about to return (printf format). */
void store_fault_say(struct store_fault *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Loses the open batch, as SQLite does after SQLITE_FULL or an I/O
 * error: the inner port rolls back and later writes fail. */
void store_fault_lose(struct store_fault *f);

#endif
