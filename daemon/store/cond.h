/*
 * cond.h - conditions: read-only SQL queries judged on one snapshot.
 *
 * A condition is one SELECT over the documented schema and views
 * (store.c) that names the snapshot it is asked about as the parameter
 * :snapshot; it holds when its first row's first column is true in SQL's
 * sense (non-NULL and not zero).  It runs on a connection of its own,
 * opened read-only, with PRAGMA query_only, an authorizer that allows
 * reading and nothing else, a deadline and a bound on what it returns:
 * see cond.c for what is refused and why.
 *
 * Calls that can fail return 0 or an E_* code (cuterr.h) with SQLite's
 * words, or cond.c's, in *e.
 */
#ifndef CUT_COND_H
#define CUT_COND_H

#include <stddef.h>
#include <stdint.h>

#include "cuterr.h"

/* The longest condition text, in bytes. */
#define COND_SQL_MAX 65536
/* The longest deadline a caller may ask for, and the default. */
/* Under the 2.5 s in which a daemon must hear from a peer (status,
 * impostor connections): a condition stalls the daemon's loop. */
#define COND_DEADLINE_MAX_MS 2000
#define COND_DEADLINE_MS     1000
/* Rows counted past the first (the rest are not read). */
#define COND_ROWS_MAX 1000

/* An open read-only connection to a daemon's database.  Opaque. */
struct cond;

struct cond_result {
	int held;        /* the first row's first column is true */
	uint32_t rows;   /* rows returned, counted up to COND_ROWS_MAX */
	int more;        /* there were more than that */
	char value[256]; /* the first row's columns as text, "" if no row */
};

/* Opens path read-only for conditions.  max_value bounds any string or
 * blob a condition reads or makes (SQLITE_LIMIT_LENGTH). */
int cond_open(const char *path, size_t max_value, struct cond **ret,
              struct errinfo *e);

/* Closes c.  Accepts NULL. */
void cond_close(struct cond *c);

/*
 * Prepares sql and, if snapshot_id is not NULL, runs it with :snapshot
 * bound to snapshot_id for at most deadline_ms (0: COND_DEADLINE_MS),
 * filling *ret.  With snapshot_id NULL it only checks that sql is one
 * read-only statement using :snapshot and no other parameter.  E_INVAL
 * for a condition that does not prepare, is not allowed, or fails while
 * running (SQLite's words); E_LIMIT when it runs past its deadline;
 * E_CORRUPT or E_IO when the database is damaged or cannot be read
 * ("storage: " and SQLite's words).
 */
int cond_eval(struct cond *c, const char *sql, const char *snapshot_id,
              uint32_t deadline_ms, struct cond_result *ret, struct errinfo *e);

#endif /* CUT_COND_H */
