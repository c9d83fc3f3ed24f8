/*
 * cond.c - conditions: read-only SQL queries judged on one snapshot.
 *
 * A condition comes from whoever may call Evaluate or write the cluster
 * file, and runs inside the daemon, so it is held to reading, in layers
 * that each suffice on their own against writes:
 *   - the connection is opened SQLITE_OPEN_READONLY, with PRAGMA
 *     query_only and SQLITE_DBCONFIG_DEFENSIVE on, and extension loading
 *     off;
 *   - the authorizer allows SELECT, reading tables and views, recursive
 *     common table expressions and functions other than load_extension(),
 *     and denies everything else (INSERT, UPDATE, DELETE, CREATE, DROP,
 *     ATTACH, DETACH, PRAGMA, transactions, savepoints, ANALYZE, ...);
 *   - one statement only, which SQLite must call read-only;
 *   - SQLITE_LIMIT_ATTACHED is 0.
 * It is bounded: its text (COND_SQL_MAX), any value it reads or makes
 * (max_value), its run time (a progress handler stops it at its deadline)
 * and what is read of its result (the first row's columns, cut to fit,
 * and a count of rows up to COND_ROWS_MAX).  The daemon runs a condition
 * in its event loop, so the deadline is also how long it may hold up the
 * daemon; hence COND_DEADLINE_MAX_MS.
 *
 * The connection reads only what is committed (WAL), so a condition sees
 * a snapshot once its end is on disk, never a batch in the making.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cond.h"
#include "store.h"
#include "text.h"

/* VM steps between looks at the clock. */
#define PROGRESS_STEPS 1000

struct cond {
	sqlite3 *db;
	int64_t deadline; /* CLOCK_MONOTONIC ms; 0: none (preparing) */
	int expired;      /* the progress handler stopped the query */
	char denied[128]; /* what the authorizer refused first, or "" */
};

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
progress(void *arg)
{
	struct cond *c = arg;

	if (c->deadline != 0 && mono_ms() >= c->deadline) {
		c->expired = 1;
		return 1; /* SQLITE_INTERRUPT */
	}
	return 0;
}

/* What a denied action is called in the error. */
static const char *
action_name(int action)
{
	switch (action) {
	case SQLITE_INSERT:
		return "INSERT";
	case SQLITE_UPDATE:
		return "UPDATE";
	case SQLITE_DELETE:
		return "DELETE";
	case SQLITE_ATTACH:
		return "ATTACH";
	case SQLITE_DETACH:
		return "DETACH";
	case SQLITE_PRAGMA:
		return "PRAGMA";
	case SQLITE_TRANSACTION:
		return "BEGIN, COMMIT or ROLLBACK";
	case SQLITE_SAVEPOINT:
		return "SAVEPOINT";
	case SQLITE_ANALYZE:
		return "ANALYZE";
	case SQLITE_REINDEX:
		return "REINDEX";
	case SQLITE_ALTER_TABLE:
		return "ALTER TABLE";
	default:
		return "a statement that is not a SELECT";
	}
}

static int
authorize(void *arg, int action, const char *a1, const char *a2, const char *db,
          const char *trigger)
{
	struct cond *c = arg;

	(void)a1;
	(void)db;
	(void)trigger;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_FUNCTION:
		if (a2 == NULL || sqlite3_stricmp(a2, "load_extension") != 0)
			return SQLITE_OK;
		if (c->denied[0] == '\0')
			snprintf(c->denied, sizeof(c->denied),
			         "load_extension()");
		return SQLITE_DENY;
	default:
		if (c->denied[0] == '\0')
			snprintf(
			    c->denied, sizeof(c->denied), "%s%s%s",
			    action_name(action),
			    action == SQLITE_PRAGMA && a1 != NULL ? " " : "",
			    action == SQLITE_PRAGMA && a1 != NULL ? a1 : "");
		return SQLITE_DENY;
	}
}

int
cond_open(const char *path, size_t max_value, struct cond **ret,
          struct errinfo *e)
{
	struct cond *c = calloc(1, sizeof(*c));
	int rc, on = 0;

	if (c == NULL)
		return err_set(e, E_NOMEM, "out of memory");
	rc = sqlite3_open_v2(path, &c->db,
	                     SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX |
	                         SQLITE_OPEN_EXRESCODE |
	                         (store_in_memory(path) ? SQLITE_OPEN_URI : 0),
	                     NULL);
	if (rc != SQLITE_OK) {
		err_set(e, E_IO, "cannot open %s read-only for conditions: %s",
		        path,
		        c->db != NULL ? sqlite3_errmsg(c->db)
		                      : sqlite3_errstr(rc));
		cond_close(c);
		return E_IO;
	}
	sqlite3_busy_timeout(c->db, 1000);
	sqlite3_db_config(c->db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on);
	sqlite3_db_config(c->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &on);
	sqlite3_limit(c->db, SQLITE_LIMIT_ATTACHED, 0);
	sqlite3_limit(c->db, SQLITE_LIMIT_SQL_LENGTH, COND_SQL_MAX);
	if (max_value > 0 && max_value < 0x7fffffff)
		sqlite3_limit(c->db, SQLITE_LIMIT_LENGTH, (int)max_value);
	/* Before the authorizer, which denies every PRAGMA. */
	if ((rc = sqlite3_exec(c->db, "PRAGMA query_only = ON", NULL, NULL,
	                       NULL)) != SQLITE_OK) {
		err_set(e, E_IO, "%s: %s", path, sqlite3_errmsg(c->db));
		cond_close(c);
		return E_IO;
	}
	sqlite3_set_authorizer(c->db, authorize, c);
	sqlite3_progress_handler(c->db, PROGRESS_STEPS, progress, c);
	*ret = c;
	return 0;
}

void
cond_close(struct cond *c)
{
	if (c == NULL)
		return;
	sqlite3_close(c->db);
	free(c);
}

/* A failure of the database, not of the condition, for SQLite's result
 * rc: E_CORRUPT for a damaged file, E_IO for one that could not be read,
 * with SQLite's words; 0 for anything else. */
static int
storage_failed(struct cond *c, int rc, struct errinfo *e)
{
	switch (rc & 0xff) {
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return err_set(e, E_CORRUPT, "storage: %s",
		               sqlite3_errmsg(c->db));
	case SQLITE_IOERR:
		return err_set(e, E_IO, "storage: %s", sqlite3_errmsg(c->db));
	default:
		return 0;
	}
}

/* Says why sql does not prepare: what the authorizer refused, or
 * SQLite's words. */
static int
prepare_failed(struct cond *c, int rc, struct errinfo *e)
{
	int rv;

	if ((rv = storage_failed(c, rc, e)) != 0)
		return rv;
	if (c->denied[0] != '\0')
		return err_set(e, E_INVAL,
		               "a condition may only read: %s is not allowed",
		               c->denied);
	return err_set(e, E_INVAL, "the condition does not prepare: %s",
	               sqlite3_errmsg(c->db));
}

/* Prepares sql, one read-only statement whose only parameter is
 * :snapshot, into *ret. */
static int
prepare(struct cond *c, const char *sql, sqlite3_stmt **ret, struct errinfo *e)
{
	sqlite3_stmt *s = NULL, *more = NULL;
	const char *tail = NULL;
	size_t len = strnlen(sql, COND_SQL_MAX + 1);
	int n, rc;

	if (len > COND_SQL_MAX)
		return err_set(e, E_INVAL, "the condition is over %d bytes",
		               COND_SQL_MAX);
	c->denied[0] = '\0';
	c->deadline = 0;
	rc = sqlite3_prepare_v2(c->db, sql, (int)len, &s, &tail);
	if (rc != SQLITE_OK)
		return prepare_failed(c, rc, e);
	if (s == NULL)
		return err_set(e, E_INVAL, "the condition is empty");
	/* What follows must be nothing but blanks, comments and ';'. */
	if (tail != NULL && *tail != '\0') {
		rc = sqlite3_prepare_v2(c->db, tail, -1, &more, NULL);
		sqlite3_finalize(more);
		if (rc != SQLITE_OK || more != NULL) {
			sqlite3_finalize(s);
			return err_set(e, E_INVAL,
			               "a condition is one statement; this one "
			               "goes on after the first");
		}
	}
	if (!sqlite3_stmt_readonly(s)) {
		sqlite3_finalize(s);
		return err_set(e, E_INVAL, "a condition may only read");
	}
	n = sqlite3_bind_parameter_count(s);
	for (int i = 1; i <= n; i++) {
		const char *name = sqlite3_bind_parameter_name(s, i);
		if (name == NULL || strcmp(name, ":snapshot") != 0) {
			/* The name is the statement's: said before it goes. */
			err_set(e, E_INVAL,
			        "parameter %.64s is not bound; a condition has "
			        "one parameter, :snapshot",
			        name != NULL ? name : "?");
			sqlite3_finalize(s);
			return E_INVAL;
		}
	}
	if (n == 0) {
		sqlite3_finalize(s);
		return err_set(e, E_INVAL,
		               "the condition does not use :snapshot, so it "
		               "would not be about the snapshot; e.g. WHERE "
		               "snapshot_id = :snapshot");
	}
	*ret = s;
	return 0;
}

/* Appends the first row's columns to out, separated by '|' as in the
 * sqlite3 shell, cut at a character boundary; bytes that are not UTF-8
 * become '?'. */
static void
row_text(sqlite3_stmt *s, char *out, size_t size)
{
	size_t n = 0, k;
	char blob[48];

	out[0] = '\0';
	for (int i = 0; i < sqlite3_column_count(s) && n + 1 < size; i++) {
		const char *t;
		if (i > 0)
			out[n++] = '|';
		if (sqlite3_column_type(s, i) == SQLITE_NULL) {
			t = "NULL";
		} else if (sqlite3_column_type(s, i) == SQLITE_BLOB) {
			snprintf(blob, sizeof(blob), "<blob of %d bytes>",
			         sqlite3_column_bytes(s, i));
			t = blob;
		} else {
			t = (const char *)sqlite3_column_text(s, i);
			t = t != NULL ? t : "";
		}
		k = strlen(t);
		if (k > size - 1 - n)
			k = size - 1 - n;
		memcpy(out + n, t, k);
		n += k;
		out[n] = '\0';
	}
	if (!utf8_valid(out, n))
		for (k = 0; k < n; k++)
			if ((unsigned char)out[k] >= 0x80)
				out[k] = '?';
	/* A multi-byte character cut at the end is now '?' too; fine. */
}

/* True in SQL's sense: what WHERE would accept. */
static int
truthy(sqlite3_stmt *s)
{
	switch (sqlite3_column_type(s, 0)) {
	case SQLITE_NULL:
		return 0;
	case SQLITE_INTEGER:
		return sqlite3_column_int64(s, 0) != 0;
	default:
		return sqlite3_column_double(s, 0) != 0.0;
	}
}

int
cond_eval(struct cond *c, const char *sql, const char *snapshot_id,
          uint32_t deadline_ms, struct cond_result *ret, struct errinfo *e)
{
	struct cond_result r = {0};
	sqlite3_stmt *s = NULL;
	int rc, rv;

	if (sql == NULL)
		return err_set(e, E_INVAL, "no condition");
	if ((rv = prepare(c, sql, &s, e)) != 0)
		return rv;
	if (snapshot_id == NULL) {
		sqlite3_finalize(s);
		*ret = r;
		return 0;
	}
	if (deadline_ms == 0)
		deadline_ms = COND_DEADLINE_MS;
	if (deadline_ms > COND_DEADLINE_MAX_MS)
		deadline_ms = COND_DEADLINE_MAX_MS;
	sqlite3_bind_text(s, 1, snapshot_id, -1, SQLITE_TRANSIENT);
	c->expired = 0;
	c->deadline = mono_ms() + deadline_ms;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (r.rows == 0) {
			r.held = truthy(s);
			row_text(s, r.value, sizeof(r.value));
		}
		if (r.rows == COND_ROWS_MAX) {
			r.more = 1;
			rc = SQLITE_DONE;
			break;
		}
		r.rows++;
	}
	c->deadline = 0;
	if (rc != SQLITE_DONE) {
		if (c->expired)
			rv = err_set(e, E_LIMIT,
			             "the condition ran past its deadline of "
			             "%u ms and was stopped",
			             deadline_ms);
		else if ((rv = storage_failed(c, rc, e)) == 0)
			rv = err_set(e, E_INVAL, "the condition failed: %s",
			             sqlite3_errmsg(c->db));
	}
	sqlite3_finalize(s);
	if (rv == 0)
		*ret = r;
	return rv;
}
