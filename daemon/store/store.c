/*
 * store.c - the daemon's SQLite database of snapshots.
 *
 * With cond.c (conditions, on a read-only connection of their own), the
 * only file that includes sqlite3.h: SQLite's codes become STORE_E*
 * codes here, and nothing here logs.  The file is in WAL mode, so the
 * sqlite3 shell can read it while the daemon writes; synchronous=NORMAL,
 * so a commit survives a daemon crash (an OS crash may lose the last ones).
 * The database, its -wal and its -shm are 0640 or tighter, whatever the
 * umask (narrow_modes()).
 *
 * Schema version 3 (PRAGMA user_version).  STRICT tables; a snapshot's
 * rows in the other tables go with it.  Times are Unix milliseconds.
 *   meta: key, value; never deleted.  'last_snapshot' is the counter of
 *     the last snapshot id this node issued (store_next_id()); 'probe' is
 *     when the daemon last proved, after a failure, that it can write.
 *   snapshots: id, initiator, role ('initiator' if this node started it,
 *     else 'participant'), status ('in_progress', 'complete', 'aborted'),
 *     reason (why aborted: which node, which channel), started_ms,
 *     finished_ms (NULL while in progress), parts_expected, consistent
 *     (audit verdict 0/1, NULL until audited), audit_reason.
 *   node_states: snapshot_id, node, content_type, state, recorded_ms.
 *   channel_states: snapshot_id, src, dst, m (delivered by dst before it
 *     recorded), n (sent by src before it recorded), recorded (n - m when
 *     consistent), first_seq, last_seq (NULL if none recorded),
 *     consecutive (1 if recorded in order without gaps).
 *   channel_messages: snapshot_id, src, dst, seq (numbered by the sender
 *     on src -> dst, from 1), content_type, payload.
 *   Version 3 (migrate_2_3()): snapshots gains keep (1: retention never
 *     deletes it), part_status (a participant's own part's end, once
 *     status holds the initiator's outcome), outcome_ms (when that
 *     outcome arrived, NULL before) and outcome_parts; forget_pending:
 *     node, snapshot_id, queued_ms, the deletions of this node's
 *     snapshots that node has not confirmed yet.  New files are made
 *     with auto_vacuum = INCREMENTAL (store_reclaim()).
 * A state or payload is TEXT when its content type is JSON
 * (application/json or type/subtype+json, parameters ignored) and its
 * bytes are UTF-8 without NUL that json_valid() accepts, so json_extract()
 * works on it; otherwise a BLOB.  Either way its bytes are those given.
 *   snapshot_conditions: snapshot_id, name (a [condition NAME] of the
 *     cluster file), held (1, 0, or NULL when it could not be judged),
 *     detail (its first row as text, or why not), evaluated_ms.  Only
 *     at a snapshot's initiator.  Made by migrate_conditions(), apart
 *     from the numbered migrations: see there.
 * Views: snapshot_summary (snapshots plus started_at, finished_at in ISO
 * 8601 UTC, duration_ms, nodes_recorded, channels_recorded, in_transit),
 * recorded_states (node_states plus is_json, size in bytes, recorded_at),
 * in_transit (channel_messages plus is_json, size).
 *
 * Example queries (sqlite3 /var/lib/cutd/p0.db); json_extract() fails on
 * a BLOB, hence "is_json".  The last adds balances and amounts in flight.
 *   SELECT id, status, started_at, duration_ms, nodes_recorded,
 *     channels_recorded, in_transit, consistent, audit_reason
 *     FROM snapshot_summary ORDER BY started_ms DESC;
 *   SELECT node, json_extract(state, '$.balance') FROM recorded_states
 *     WHERE snapshot_id = 'p0:1796116051122' AND is_json ORDER BY node;
 *   SELECT src, dst, seq, payload FROM in_transit
 *     WHERE snapshot_id = 'p0:1796116051122' ORDER BY src, dst, seq;
 *   SELECT (SELECT sum(json_extract(state, '$.balance')) FROM
 *     recorded_states WHERE snapshot_id = 'p0:1796116051122' AND is_json)
 *     + (SELECT coalesce(sum(json_extract(payload, '$.amount')), 0) FROM
 *     in_transit WHERE snapshot_id = 'p0:1796116051122' AND is_json)
 *     AS total;
 *
 * Snapshot ids are never reused.  The counter lives in meta, bumped in
 * the transaction that creates the snapshot, so deleting snapshots does
 * not lower it.  Each id is at least the wall clock in milliseconds when
 * it was issued (and above the last one and every id in snapshots), so a
 * database that was lost and started afresh still issues ids above those
 * the peers remember: the old one could only have issued ids ahead of the
 * clock by issuing more than one per millisecond, or if the clock has
 * since been set back.  Migration 1 -> 2 starts the counter the same way.
 * Other designs were weighed: the daemon's run id in the id would change
 * the id format every parser knows; asking the peers for the highest id
 * they remember needs them up at start.  The clock costs neither, and the
 * id stays "node:counter", ordered by time.
 *
 * Failures.  store_open() runs PRAGMA quick_check and refuses a damaged
 * file (E_CORRUPT) rather than let the daemon run on it.  When SQLite
 * rolls a batch back by itself (after a full disk or an I/O error), or the
 * batch could not begin, every write fails until store_commit() or
 * store_rollback() ends the batch, so no write of the lost batch lands on
 * its own, outside a transaction.  store_checkpoint() gives the WAL's
 * space back after a full disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store.h"
#include "text.h"

#define APPLICATION_ID  0x63757464 /* "cutd", set by migrations[0] */
#define BUSY_TIMEOUT_MS 5000

/* The wall clock in Unix milliseconds, in SQL (unixepoch('subsec') needs
 * SQLite 3.42; Debian 12 has 3.40). */
#define NOW_MS_SQL                                                             \
	"CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)"

/* Run on every connection; says 1 if the file is in WAL mode. */
/* auto_vacuum first: it takes effect only on a file without tables, and
 * only before the file is put in WAL mode (an older file keeps NONE, and
 * SQLite reuses its free pages anyway; see store_reclaim()). */
#define SETUP_SQL                                                              \
	"PRAGMA auto_vacuum = INCREMENTAL;"                                    \
	"PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;"               \
	"PRAGMA journal_mode = WAL;"                                           \
	"SELECT journal_mode = 'wal' FROM pragma_journal_mode"

/* migrations[v] takes the schema from version v to v + 1 and sets
 * user_version; a released entry never changes, a change is a new entry.
 * channel_messages keeps its rowid because payloads may be large. */
static const char *const migrations[] = {
    "CREATE TABLE snapshots (" /* version 0 -> 1 */
    " id TEXT NOT NULL PRIMARY KEY, initiator TEXT NOT NULL,"
    " role TEXT NOT NULL CHECK (role IN ('initiator', 'participant')),"
    " status TEXT NOT NULL DEFAULT 'in_progress'"
    "  CHECK (status IN ('in_progress', 'complete', 'aborted')),"
    " reason TEXT, started_ms INTEGER NOT NULL, finished_ms INTEGER,"
    " parts_expected INTEGER NOT NULL CHECK (parts_expected >= 0),"
    " consistent INTEGER CHECK (consistent IN (0, 1)), audit_reason TEXT"
    ") STRICT;"
    "CREATE INDEX snapshots_by_start ON snapshots (started_ms);"
    "CREATE TABLE node_states ("
    " snapshot_id TEXT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,"
    " node TEXT NOT NULL, content_type TEXT NOT NULL,"
    " state ANY NOT NULL CHECK (typeof(state) IN ('text', 'blob')),"
    " recorded_ms INTEGER NOT NULL, PRIMARY KEY (snapshot_id, node)"
    ") STRICT;"
    "CREATE TABLE channel_states ("
    " snapshot_id TEXT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,"
    " src TEXT NOT NULL, dst TEXT NOT NULL,"
    " m INTEGER NOT NULL CHECK (m >= 0), n INTEGER NOT NULL CHECK (n >= 0),"
    " recorded INTEGER NOT NULL CHECK (recorded >= 0),"
    " first_seq INTEGER, last_seq INTEGER,"
    " consecutive INTEGER NOT NULL CHECK (consecutive IN (0, 1)),"
    " PRIMARY KEY (snapshot_id, src, dst)"
    ") STRICT;"
    "CREATE TABLE channel_messages ("
    " snapshot_id TEXT NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,"
    " src TEXT NOT NULL, dst TEXT NOT NULL,"
    " seq INTEGER NOT NULL CHECK (seq >= 0), content_type TEXT NOT NULL,"
    " payload ANY NOT NULL CHECK (typeof(payload) IN ('text', 'blob')),"
    " PRIMARY KEY (snapshot_id, src, dst, seq)"
    ") STRICT;"
    "CREATE VIEW snapshot_summary AS SELECT s.id, s.initiator, s.role,"
    " s.status, s.reason, s.started_ms, s.finished_ms,"
    " strftime('%Y-%m-%dT%H:%M:%fZ', s.started_ms / 1000.0, 'unixepoch')"
    "  AS started_at,"
    " strftime('%Y-%m-%dT%H:%M:%fZ', s.finished_ms / 1000.0, 'unixepoch')"
    "  AS finished_at,"
    " s.finished_ms - s.started_ms AS duration_ms, s.parts_expected,"
    " (SELECT count(*) FROM node_states x WHERE x.snapshot_id = s.id)"
    "  AS nodes_recorded,"
    " (SELECT count(*) FROM channel_states x WHERE x.snapshot_id = s.id)"
    "  AS channels_recorded,"
    " (SELECT count(*) FROM channel_messages x WHERE x.snapshot_id = s.id)"
    "  AS in_transit, s.consistent, s.audit_reason FROM snapshots s;"
    "CREATE VIEW recorded_states AS SELECT snapshot_id, node, content_type,"
    " typeof(state) = 'text' AS is_json,"
    " length(CAST(state AS BLOB)) AS size, state, recorded_ms,"
    " strftime('%Y-%m-%dT%H:%M:%fZ', recorded_ms / 1000.0, 'unixepoch')"
    "  AS recorded_at FROM node_states;"
    "CREATE VIEW in_transit AS SELECT snapshot_id, src, dst, seq,"
    " content_type, typeof(payload) = 'text' AS is_json,"
    " length(CAST(payload AS BLOB)) AS size, payload FROM channel_messages;"
    "PRAGMA application_id = 1668641892; PRAGMA user_version = 1;",
    /* version 1 -> 2: the id counter, started above every id this node
     * issued that is still here and at the wall clock, above those of
     * snapshots deleted before there was a counter. */
    "CREATE TABLE meta (key TEXT NOT NULL PRIMARY KEY,"
    " value INTEGER NOT NULL) STRICT;"
    "INSERT INTO meta (key, value) SELECT 'last_snapshot', max(" NOW_MS_SQL
    ", coalesce(max(CAST(substr(id, instr(id, ':') + 1) AS INTEGER)), 0))"
    " FROM snapshots WHERE role = 'initiator';"
    "PRAGMA user_version = 2;",
};

/* The steps written as SQL above; later ones are functions (migrate()). */
#define SQL_STEPS      ((int)(sizeof(migrations) / sizeof(migrations[0])))
#define SCHEMA_VERSION 3

/* A value bound as TEXT stays TEXT only if it is JSON; see bind_value(). */
#define VALUE_SQL(p)                                                           \
	"CASE WHEN typeof(" p ") = 'text' AND json_valid(" p ") THEN " p       \
	" ELSE CAST(" p " AS BLOB) END"

/* Columns 2 and 3 are is_initiator and enum store_status. */
#define SUMMARY_SQL                                                            \
	"SELECT id, initiator, role = 'initiator', CASE status"                \
	" WHEN 'complete' THEN 1 WHEN 'aborted' THEN 2 ELSE 0 END, reason,"    \
	" started_ms, finished_ms, parts_expected, nodes_recorded,"            \
	" channels_recorded, in_transit, coalesce(consistent, -1),"            \
	" audit_reason, keep, CASE part_status WHEN 'complete' THEN 1"         \
	" WHEN 'aborted' THEN 2 ELSE 0 END, coalesce(outcome_ms, 0),"          \
	" coalesce(outcome_parts, 0) FROM snapshot_summary"

/* The statements prepared at open, kept in struct store. */
// clang-format off
enum { S_EXISTS, S_CREATE, S_MESSAGE, S_STATE, S_CHANNEL, S_FINISH,
       S_ABORT_ALL, S_AUDIT, S_DELETE, S_GET, S_LIST, S_STATES, S_CHANNELS,
       S_MESSAGES, S_NEXT_ID, S_RECREATE, S_PROBE, S_COND_PUT, S_CONDS,
       S_OUTCOME, S_KEEP, S_FORGET_ADD, S_FORGET_DONE, S_FORGET_LIST,
       S_FORGET_COUNT, S_RETAIN_LIST, S_RESTORE_PUT, S_RESTORE_GEN, S_COUNT };
// clang-format on

static const char *const statements[S_COUNT] = {
    [S_EXISTS] = "SELECT 1 FROM snapshots WHERE id = ?1",
    [S_CREATE] = "INSERT INTO snapshots (id, initiator, role, started_ms,"
                 " parts_expected) VALUES (?1, ?2, ?3, ?4, ?5)",
    [S_MESSAGE] = "INSERT INTO channel_messages (snapshot_id, src, dst, seq,"
                  " content_type, payload) VALUES (?1, ?2, ?3, ?4, ?5,"
                  " " VALUE_SQL("?6") ")",
    [S_STATE] = "INSERT INTO node_states (snapshot_id, node, content_type,"
                " recorded_ms, state) VALUES (?1, ?2, ?3, ?4,"
                " " VALUE_SQL("?5") ")",
    [S_CHANNEL] = "INSERT INTO channel_states (snapshot_id, src, dst, m, n,"
                  " recorded, first_seq, last_seq, consecutive) VALUES (?1,"
                  " ?2, ?3, ?4, ?5, ?6, CASE WHEN ?6 > 0 THEN ?7 END,"
                  " CASE WHEN ?6 > 0 THEN ?8 END, ?9)",
    [S_FINISH] = "UPDATE snapshots SET status = ?2, reason = ?3,"
                 " finished_ms = ?4 WHERE id = ?1 AND status = 'in_progress'",
    [S_ABORT_ALL] = "UPDATE snapshots SET status = 'aborted', reason = ?1,"
                    " finished_ms = ?2 WHERE status = 'in_progress'",
    [S_AUDIT] = "UPDATE snapshots SET consistent = ?2, audit_reason = ?3"
                " WHERE id = ?1 AND status = 'complete'",
    [S_DELETE] = "DELETE FROM snapshots WHERE id = ?1",
    [S_GET] = SUMMARY_SQL " WHERE id = ?1",
    [S_LIST] = SUMMARY_SQL " ORDER BY started_ms DESC, id DESC",
    [S_STATES] = "SELECT node, content_type, state FROM node_states"
                 " WHERE snapshot_id = ?1 ORDER BY node",
    [S_CHANNELS] = "SELECT src, dst, m, n, recorded, first_seq, last_seq,"
                   " consecutive FROM channel_states WHERE snapshot_id = ?1"
                   " ORDER BY src, dst",
    [S_MESSAGES] = "SELECT seq, content_type, payload FROM channel_messages"
                   " WHERE snapshot_id = ?1 AND src = ?2 AND dst = ?3"
                   " ORDER BY seq",
    /* ?1 node, ?2 now, ?3 floor; ids are "node:counter". */
    [S_NEXT_ID] = "UPDATE meta SET value = max(value + 1, ?2, ?3, (SELECT"
                  " coalesce(max(CAST(substr(id, length(?1) + 2) AS"
                  " INTEGER)), 0) + 1 FROM snapshots WHERE initiator = ?1"
                  " AND role = 'initiator')) WHERE key = 'last_snapshot'"
                  " RETURNING value",
    [S_RECREATE] = "INSERT OR IGNORE INTO snapshots (id, initiator, role,"
                   " started_ms, parts_expected) VALUES (?1, ?2, ?3, ?4, ?5)",
    [S_PROBE] = "INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', ?1)",
    [S_COND_PUT] = "INSERT OR REPLACE INTO snapshot_conditions (snapshot_id,"
                   " name, held, detail, evaluated_ms) VALUES (?1, ?2,"
                   " CASE WHEN ?3 >= 0 THEN ?3 END, ?4, ?5)",
    [S_CONDS] = "SELECT name, coalesce(held, -1), detail FROM"
                " snapshot_conditions WHERE snapshot_id = ?1 ORDER BY name",
    /* A participant's part keeps its own end in part_status; status,
     * reason and the verdict become the initiator's. */
    [S_OUTCOME] = "UPDATE snapshots SET part_status = coalesce(part_status,"
                  " CASE status WHEN 'in_progress' THEN 'aborted' ELSE status"
                  " END), status = ?2, reason = ?3,"
                  " consistent = CASE WHEN ?4 >= 0 THEN ?4 END,"
                  " audit_reason = ?5, outcome_ms = ?6, outcome_parts = ?7,"
                  " finished_ms = coalesce(finished_ms, ?6)"
                  " WHERE id = ?1 AND role = 'participant'",
    [S_KEEP] = "UPDATE snapshots SET keep = ?2 WHERE id = ?1",
    [S_FORGET_ADD] = "INSERT OR IGNORE INTO forget_pending (node,"
                     " snapshot_id, queued_ms) VALUES (?1, ?2, ?3)",
    [S_FORGET_DONE] = "DELETE FROM forget_pending WHERE node = ?1 AND"
                      " snapshot_id = ?2",
    [S_FORGET_LIST] = "SELECT node, snapshot_id FROM forget_pending"
                      " ORDER BY queued_ms, snapshot_id",
    [S_FORGET_COUNT] = "SELECT count(*) FROM forget_pending WHERE node = ?1",
    /* This node's own ended snapshots, newest first, for retention. */
    [S_RETAIN_LIST] = "SELECT id, status = 'complete', keep,"
                      " coalesce(finished_ms, started_ms) FROM snapshots"
                      " WHERE role = 'initiator' AND status != 'in_progress'"
                      " ORDER BY started_ms DESC, id DESC",
    [S_RESTORE_PUT] = "INSERT OR REPLACE INTO restores (generation,"
                      " snapshot_id, restorer, applied_ms, replayed)"
                      " VALUES (?1, ?2, ?3, ?4, ?5)",
    [S_RESTORE_GEN] = "SELECT coalesce(max(generation), 0) FROM restores",
};

static const char *const status_names[] = {"in_progress", "complete",
                                           "aborted"};

/* Indexed by the STORE_E* codes. */

struct store {
	sqlite3 *db;
	sqlite3_stmt *stmt[S_COUNT];
	char errmsg[256];
	int batch;      /* store_begin() opened a batch not yet ended */
	char lost[256]; /* why SQLite rolled that batch back, or "" */
	/* SQLite's words the first time it found the file damaged or could
	 * not read it (store_damaged()), or "". */
	char damaged[256];
};

/*
 * A statement in use: bound by query_start(), stepped row by row with
 * query_next(), ended by query_end().  Each iterator reads its own rows and
 * calls its own callback, so every callback is called through the type it
 * was declared with: there is no table of callbacks of every kind (a union
 * of them was what gcc's -Warray-bounds tripped on, inlining store_get()'s
 * copy into the channel path) and no row handed on as a void *.
 */
struct query {
	struct store *st;
	sqlite3_stmt *s; /* NULL: not started, nothing to end */
	int rc;          /* the last sqlite3_step() result */
};

/* SQLite's primary result codes that mean more than E_IO here. */
static const int codes[][2] = {
    {SQLITE_NOMEM, E_NOMEM},    {SQLITE_BUSY, E_BUSY},
    {SQLITE_LOCKED, E_BUSY},    {SQLITE_CORRUPT, E_CORRUPT},
    {SQLITE_NOTADB, E_CORRUPT}, {SQLITE_CONSTRAINT, E_INVAL},
    {SQLITE_TOOBIG, E_INVAL},   {SQLITE_RANGE, E_INVAL},
};

static int
translate(int rc)
{
	size_t i;

	if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE)
		return 0;
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return E_EXIST;
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return E_NOENT;
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if ((rc & 0xff) == codes[i][0])
			return codes[i][1];
	return E_IO;
}

static int
fail(struct store *st, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->errmsg, sizeof(st->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* Records SQLite's account of failure rc and returns its STORE_E* code. */
static int
db_fail(struct store *st, int rc)
{
	int prim = rc & 0xff,
	    e = st->db != NULL ? sqlite3_system_errno(st->db) : 0;
	int rv;

	/* The system's words say which I/O failed ("No space left on
	 * device").  Not for a failed open: SQLite's fallbacks leave an
	 * unrelated errno behind, and store_open() says why instead. */
	if (e != 0 && (prim == SQLITE_IOERR || prim == SQLITE_FULL))
		rv = fail(st, translate(rc), "%s (%s)", sqlite3_errmsg(st->db),
		          strerror(e));
	else
		rv = fail(st, translate(rc), "%s", sqlite3_errmsg(st->db));
	/* A damaged page does not mend, and a read that fails may fail
	 * again: kept until the daemon stops, unlike a write that fails
	 * for want of space (the coordinator's degraded state). */
	if (st->damaged[0] == '\0' &&
	    (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB ||
	     rc == SQLITE_IOERR_READ || rc == SQLITE_IOERR_SHORT_READ))
		snprintf(st->damaged, sizeof(st->damaged), "%s", st->errmsg);
	return rv;
}

/* Ends a statement's run, given the last result of stepping it: resets it
 * and drops its borrowed bindings. */
static int
finish(struct store *st, sqlite3_stmt *s, int rc)
{
	int err = translate(rc) != 0 ? db_fail(st, rc) : 0;

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return err;
}

static int
first_int(void *ret, int ncols, char **values, char **names)
{
	(void)names;
	if (ncols > 0 && values[0] != NULL)
		*(long long *)ret = strtoll(values[0], NULL, 10);
	return 0;
}

/* Runs sql; the first column of its last row, if any, goes to *ret. */
static int
exec(struct store *st, const char *sql, long long *ret)
{
	int rc = sqlite3_exec(st->db, sql, ret ? first_int : NULL, ret, NULL);

	return rc == SQLITE_OK ? 0 : db_fail(st, rc);
}

/* Binds a state or payload: as TEXT if it may be JSON (VALUE_SQL keeps
 * it TEXT if json_valid() agrees), else as a BLOB.  TEXT must be UTF-8,
 * which SQLite takes on trust, and without NUL, where SQLite's JSON
 * functions would stop reading; whether it is JSON is SQLite's to say,
 * since json_extract() is what reads it. */
static int
bind_value(sqlite3_stmt *s, int i, const char *ct, const void *p, size_t len)
{
	if (len == 0)
		p = ""; /* a NULL pointer would bind SQL NULL */
	if (content_type_is_json(ct) && utf8_valid(p, len) &&
	    memchr(p, '\0', len) == NULL)
		return sqlite3_bind_text64(s, i, p, len, SQLITE_STATIC,
		                           SQLITE_UTF8);
	return sqlite3_bind_blob64(s, i, p, len, SQLITE_STATIC);
}

/* Checks a string of kind I (snapshot id), N (node name) or C (content
 * type): non-empty UTF-8 that fits. */
static int
check_name(struct store *st, char kind, const char *s)
{
	static const size_t max[] = {STORE_ID_MAX, STORE_NAME_MAX,
	                             STORE_CTYPE_MAX};
	static const char *const what[] = {"snapshot id", "node name",
	                                   "content type"};
	int k = (int)(strchr("INC", kind) - "INC");
	size_t len;

	if (s == NULL || (len = strnlen(s, max[k] + 1)) == 0 || len > max[k] ||
	    !utf8_valid(s, len))
		return fail(st, E_INVAL, "bad %s", what[k]);
	return 0;
}

/*
 * Checks the arguments and binds them to parameters 1, 2, ... of s,
 * following fmt, one letter per parameter:
 *   I  a snapshot id       N  a node name       C  a content type
 *   t  a string, or NULL   i  an int64_t        u  a uint64_t <= INT64_MAX
 *   v  a state or payload: const void *, size_t, typed by the last C
 * Strings and data are borrowed until finish().
 */
static int
vbind(struct store *st, sqlite3_stmt *s, const char *fmt, va_list ap)
{
	const char *t, *ct = "";
	const void *p;
	uint64_t u;
	size_t len;
	int i, rc = SQLITE_OK, rv = 0;

	for (i = 1; *fmt != '\0' && rc == SQLITE_OK && rv == 0; fmt++, i++) {
		switch (*fmt) {
		case 'i':
			rc = sqlite3_bind_int64(s, i, va_arg(ap, int64_t));
			break;
		case 'u':
			if ((u = va_arg(ap, uint64_t)) > INT64_MAX)
				rv = fail(st, E_INVAL, "%llu is too large",
				          (unsigned long long)u);
			rc = sqlite3_bind_int64(s, i, (int64_t)u);
			break;
		case 'v':
			p = va_arg(ap, const void *);
			if ((len = va_arg(ap, size_t)) > 0 && p == NULL)
				rv = fail(st, E_INVAL, "NULL data");
			else
				rc = bind_value(s, i, ct, p, len);
			break;
		default:
			t = va_arg(ap, const char *);
			if (*fmt != 't')
				rv = check_name(st, *fmt, t);
			ct = *fmt == 'C' ? t : ct;
			rc = t == NULL ? sqlite3_bind_null(s, i)
			               : sqlite3_bind_text64(s, i, t, strlen(t),
			                                     SQLITE_STATIC,
			                                     SQLITE_UTF8);
		}
	}
	return rv != 0 ? rv : rc != SQLITE_OK ? db_fail(st, rc) : 0;
}

static const char *
text(sqlite3_stmt *s, int col)
{
	const char *t = (const char *)sqlite3_column_text(s, col);

	return t != NULL ? t : "";
}

/* Copies a text column, cut at a character boundary to fit. */
static void
copy_text(char *dst, size_t size, sqlite3_stmt *s, int col)
{
	const char *t = text(s, col);
	size_t n = strlen(t);

	if (n >= size) {
		n = size - 1;
		while (n > 0 && (t[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, t, n);
	dst[n] = '\0';
}

/* Reads a row of SUMMARY_SQL. */
static void
read_snapshot(sqlite3_stmt *s, struct store_snapshot *snap)
{
	memset(snap, 0, sizeof(*snap));
	copy_text(snap->id, sizeof(snap->id), s, 0);
	copy_text(snap->initiator, sizeof(snap->initiator), s, 1);
	snap->is_initiator = sqlite3_column_int(s, 2);
	snap->status = (enum store_status)sqlite3_column_int(s, 3);
	copy_text(snap->reason, sizeof(snap->reason), s, 4);
	snap->started_ms = sqlite3_column_int64(s, 5);
	snap->finished_ms = sqlite3_column_int64(s, 6);
	snap->parts_expected = (uint32_t)sqlite3_column_int64(s, 7);
	snap->parts = (uint32_t)sqlite3_column_int64(s, 8);
	snap->channels = (uint32_t)sqlite3_column_int64(s, 9);
	snap->messages = (uint64_t)sqlite3_column_int64(s, 10);
	snap->consistent = sqlite3_column_int(s, 11);
	copy_text(snap->audit_reason, sizeof(snap->audit_reason), s, 12);
	snap->keep = sqlite3_column_int(s, 13);
	snap->part_status = (enum store_status)sqlite3_column_int(s, 14);
	snap->outcome_ms = sqlite3_column_int64(s, 15);
	snap->outcome_parts = (uint32_t)sqlite3_column_int64(s, 16);
}

/* Column col of q's row as its exact bytes, TEXT or BLOB alike.  The
 * bytes are SQLite's, valid until the next step. */
static int
column_bytes(struct query *q, int col, const void **ret, size_t *ret_len)
{
	const void *p = sqlite3_column_blob(q->s, col);

	*ret_len = (size_t)sqlite3_column_bytes(q->s, col);
	*ret = p != NULL ? p : ""; /* SQLite gives NULL for zero bytes */
	if (p == NULL && sqlite3_errcode(q->st->db) == SQLITE_NOMEM)
		return fail(q->st, E_NOMEM, "out of memory");
	return 0;
}

/* 1 if SQLite rolled back the open batch by itself. */
static int
batch_lost(const struct store *st)
{
	return st->batch && sqlite3_get_autocommit(st->db);
}

/* After a failed call: if it cost the batch, keeps why. */
static void
note_loss(struct store *st)
{
	if (batch_lost(st) && st->lost[0] == '\0')
		snprintf(st->lost, sizeof(st->lost), "%s", st->errmsg);
}

/* Binds statement which following fmt (see vbind()) for query_next().
 * Whatever it returns, query_end() ends q.  Not re-entrant: a statement
 * already being stepped is E_STATE. */
static int
vquery_start(struct query *q, struct store *st, int which, const char *fmt,
             va_list ap)
{
	q->st = st;
	q->s = NULL;
	q->rc = SQLITE_OK;
	if (sqlite3_stmt_busy(st->stmt[which]))
		return fail(st, E_STATE, "iterator re-entered");
	if (batch_lost(st) && !sqlite3_stmt_readonly(st->stmt[which]))
		return fail(st, E_IO, "the batch was rolled back: %s",
		            st->lost);
	q->s = st->stmt[which];
	return vbind(st, q->s, fmt, ap);
}

static int
query_start(struct query *q, struct store *st, int which, const char *fmt, ...)
{
	va_list ap;
	int rv;

	va_start(ap, fmt);
	rv = vquery_start(q, st, which, fmt, ap);
	va_end(ap);
	return rv;
}

/* Steps q; 1 when a row is ready, 0 when done or failed (query_end()
 * says which). */
static int
query_next(struct query *q)
{
	q->rc = sqlite3_step(q->s);
	return q->rc == SQLITE_ROW;
}

/* Ends q: resets its statement and drops its bindings.  Returns rv, the
 * caller's result so far, if it is not 0, else the statement's error or 0.
 * A query stopped at a row (rv != 0, or the caller wanted one row) is no
 * error. */
static int
query_end(struct query *q, int rv)
{
	int rc;

	if (q->s == NULL)
		return rv;
	rc = finish(q->st, q->s, q->rc);
	note_loss(q->st);
	return rv != 0 ? rv : rc;
}

/* Binds statement which following fmt and runs it to the end: a write. */
static int
put(struct store *st, int which, const char *fmt, ...)
{
	struct query q;
	va_list ap;
	int rv;

	va_start(ap, fmt);
	rv = vquery_start(&q, st, which, fmt, ap);
	va_end(ap);
	while (rv == 0 && query_next(&q))
		;
	return query_end(&q, rv);
}

/* An update of snapshot id matched no row: says whether id is unknown
 * (E_NOENT) or in the wrong state, and why (E_STATE). */
static int
no_row(struct store *st, const char *id, const char *why)
{
	struct query q;
	int found = 0, rv = query_start(&q, st, S_EXISTS, "I", id);

	if (rv == 0)
		found = query_next(&q);
	if ((rv = query_end(&q, rv)) != 0)
		return rv;
	if (!found)
		return fail(st, E_NOENT, "no snapshot %s", id);
	return fail(st, E_STATE, "snapshot %s %s", id, why);
}

/* The most a database file may grant: owner read-write, group read. */
#define DB_MODE 0640

/*
 * Makes path exist with mode DB_MODE or tighter, whatever the umask.
 * SQLite creates a database 0644 less the umask, and gives its -wal and
 * -shm files the mode of the database (it fchmods them to it), so the
 * main file is created here first with open(O_CREAT, 0640) and fchmod,
 * rather than changing the process-wide umask around sqlite3_open.  A
 * file left wider by an older cutd is narrowed, and so are its -wal and
 * -shm when they exist.  O_NOFOLLOW: a symlink planted in the state
 * directory does not get its target's mode changed.
 */
static int
narrow_mode(struct store *st, const char *path, int create)
{
	struct stat sb;
	int fd, flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;

	if ((fd = open(path, flags | (create ? O_CREAT : 0), DB_MODE)) < 0) {
		if (!create && errno == ENOENT)
			return 0;
		return fail(st, E_IO, "cannot open %s: %s", path,
		            strerror(errno));
	}
	if (fstat(fd, &sb) == 0 && (sb.st_mode & 0777 & ~DB_MODE) != 0 &&
	    fchmod(fd, sb.st_mode & DB_MODE) != 0) {
		fail(st, E_IO, "cannot narrow the mode of %s to %o: %s", path,
		     DB_MODE, strerror(errno));
		close(fd);
		return E_IO;
	}
	close(fd);
	return 0;
}

int
store_in_memory(const char *path)
{
	return strcmp(path, ":memory:") == 0 ||
	       (strncmp(path, "file:", 5) == 0 &&
	        strstr(path, "mode=memory") != NULL);
}

static int
narrow_modes(struct store *st, const char *path)
{
	static const char *const suffixes[] = {"-wal", "-shm"};
	char side[4096];
	int rv;

	if (store_in_memory(path) || path[0] == '\0')
		return 0;
	if ((rv = narrow_mode(st, path, 1)) != 0)
		return rv;
	for (size_t i = 0; i < 2; i++) {
		if ((size_t)snprintf(side, sizeof(side), "%s%s", path,
		                     suffixes[i]) >= sizeof(side))
			return fail(st, E_INVAL, "path too long");
		if ((rv = narrow_mode(st, side, 0)) != 0)
			return rv;
	}
	return 0;
}

static int
connect_db(struct store *st, const char *path)
{
	long long wal = 0;
	int rc, rv;

	if ((rv = narrow_modes(st, path)) != 0)
		return rv;
	rc = sqlite3_open_v2(path, &st->db,
	                     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                         SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE |
	                         (store_in_memory(path) ? SQLITE_OPEN_URI : 0),
	                     NULL);
	if (rc != SQLITE_OK) /* st->db may be NULL: SQLite copes */
		return db_fail(st, rc);
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	if ((rv = exec(st, SETUP_SQL, &wal)) != 0 || wal)
		return rv;
	/* An in-memory database (cutlab sim opens one per node) has no file
	 * for a WAL: its journal stays "memory", and nobody else reads it. */
	if (store_in_memory(path))
		return 0;
	return fail(st, E_IO, "cannot use WAL journal mode");
}

static int
first_text(void *ret, int ncols, char **values, char **names)
{
	char *buf = ret;

	(void)names;
	if (buf[0] == '\0' && ncols > 0 && values[0] != NULL) {
		snprintf(buf, 200, "%s", values[0]);
		for (char *p = buf; *p != '\0'; p++)
			*p = *p == '\n' ? ' ' : *p; /* one log line */
	}
	return 0;
}

/* PRAGMA quick_check: the b-trees and their pages are well formed (it
 * reads every page, so it takes time in proportion to the file, but not
 * the index cross-checks of integrity_check).  A file whose header is
 * intact but whose pages are not would otherwise open, and fail, or
 * mislead, at the first read of the damaged page. */
static int
quick_check(struct store *st)
{
	char first[200] = "";
	int rc = sqlite3_exec(st->db, "PRAGMA quick_check(1)", first_text,
	                      first, NULL);

	if (rc != SQLITE_OK)
		return db_fail(st, rc);
	if (strcmp(first, "ok") != 0)
		return fail(st, E_CORRUPT, "quick_check: %s", first);
	return 0;
}

/* 1 if table has column col (PRAGMA table_info), so that a step that
 * adds it can run again on a file that has it. */
static int
has_column(struct store *st, const char *table, const char *col, int *ret)
{
	char sql[160];
	long long n = 0;
	int rv;

	snprintf(sql, sizeof(sql),
	         "SELECT count(*) FROM pragma_table_info('%s') WHERE name = "
	         "'%s'",
	         table, col);
	if ((rv = exec(st, sql, &n)) == 0)
		*ret = n > 0;
	return rv;
}

/*
 * Version 2 -> 3 (schedules, retention, outcomes): on snapshots, keep
 * (1: retention never deletes it), part_status (a participant's own
 * part's end, once status holds the initiator's outcome), outcome_ms
 * (when the initiator's outcome arrived; NULL: not yet) and
 * outcome_parts (the parts the initiator holds); forget_pending, the
 * deletions the initiator has not yet heard each participant apply.
 * Idempotent: each column is added only if missing, so a file half
 * migrated by hand, or by another branch's step, comes out the same.
 */
static int
migrate_2_3(struct store *st)
{
	static const char *const cols[][2] = {
	    {"keep", "keep INTEGER NOT NULL DEFAULT 0 CHECK (keep IN (0, 1))"},
	    {"part_status", "part_status TEXT CHECK (part_status IN"
	                    " ('complete', 'aborted'))"},
	    {"outcome_ms", "outcome_ms INTEGER"},
	    {"outcome_parts", "outcome_parts INTEGER"},
	};
	char sql[200];
	int has, rv;

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		if ((rv = has_column(st, "snapshots", cols[i][0], &has)) != 0)
			return rv;
		snprintf(sql, sizeof(sql),
		         "ALTER TABLE snapshots ADD COLUMN %s", cols[i][1]);
		if (!has && (rv = exec(st, sql, NULL)) != 0)
			return rv;
	}
	/* The summary view gains the new columns (a view is only SQL: it
	 * is made again whatever its old form). */
	return exec(st,
	            "DROP VIEW IF EXISTS snapshot_summary;"
	            "CREATE VIEW snapshot_summary AS SELECT s.id, s.initiator,"
	            " s.role, s.status, s.reason, s.started_ms, s.finished_ms,"
	            " strftime('%Y-%m-%dT%H:%M:%fZ', s.started_ms / 1000.0,"
	            " 'unixepoch') AS started_at,"
	            " strftime('%Y-%m-%dT%H:%M:%fZ', s.finished_ms / 1000.0,"
	            " 'unixepoch') AS finished_at,"
	            " s.finished_ms - s.started_ms AS duration_ms,"
	            " s.parts_expected,"
	            " (SELECT count(*) FROM node_states x"
	            "  WHERE x.snapshot_id = s.id) AS nodes_recorded,"
	            " (SELECT count(*) FROM channel_states x"
	            "  WHERE x.snapshot_id = s.id) AS channels_recorded,"
	            " (SELECT count(*) FROM channel_messages x"
	            "  WHERE x.snapshot_id = s.id) AS in_transit,"
	            " s.consistent, s.audit_reason, s.keep, s.part_status,"
	            " s.outcome_ms, s.outcome_parts FROM snapshots s;"
	            "CREATE TABLE IF NOT EXISTS forget_pending ("
	            " node TEXT NOT NULL, snapshot_id TEXT NOT NULL,"
	            " queued_ms INTEGER NOT NULL,"
	            " PRIMARY KEY (node, snapshot_id)) STRICT;"
	            "PRAGMA user_version = 3;",
	            NULL);
}

/* Brings the schema up to date, refusing files that are not cutd's or
 * are newer than this code. */
static int
migrate(struct store *st)
{
	long long version = 0, appid = 0;
	int rv;

	/* IMMEDIATE: two daemons opening one new file migrate it once. */
	if ((rv = exec(st, "BEGIN IMMEDIATE", NULL)) != 0)
		return rv;
	if ((rv = exec(st, "PRAGMA user_version", &version)) != 0 ||
	    (rv = exec(st, "PRAGMA application_id", &appid)) != 0)
		goto fail;
	if ((appid && appid != APPLICATION_ID) || version > SCHEMA_VERSION) {
		rv = fail(st, E_SCHEMA,
		          "not a cutd database of schema version %d or older "
		          "(application_id %#llx, user_version %lld)",
		          SCHEMA_VERSION, appid, version);
		goto fail;
	}
	for (; version < SQL_STEPS; version++)
		if ((rv = exec(st, migrations[version], NULL)) != 0)
			goto fail;
	if (version == 2 && (rv = migrate_2_3(st)) != 0)
		goto fail;
	if ((rv = exec(st, "COMMIT", NULL)) == 0)
		return 0;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rv;
}

/*
 * The table of condition results, made if it is missing, on every open.
 * It is not a numbered migration on purpose: the schema version is being
 * moved on elsewhere at the same time, and a table that any version may
 * lack and that CREATE TABLE IF NOT EXISTS makes when it does can join
 * whichever version comes without renumbering anything.  A database
 * without it (from an older cutd) gains it here; one that has it is left
 * alone, so opening is idempotent.  Readers of an older cutd ignore it.
 */
static int
migrate_conditions(struct store *st)
{
	return exec(st,
	            "CREATE TABLE IF NOT EXISTS snapshot_conditions ("
	            " snapshot_id TEXT NOT NULL"
	            "  REFERENCES snapshots (id) ON DELETE CASCADE,"
	            " name TEXT NOT NULL,"
	            " held INTEGER CHECK (held IN (0, 1)),"
	            " detail TEXT NOT NULL, evaluated_ms INTEGER NOT NULL,"
	            " PRIMARY KEY (snapshot_id, name)) STRICT",
	            NULL);
}

/*
 * restores: one row per restore this node applied (see the README's
 * Restore section): its generation (1, 2, ...), the snapshot, the node
 * that ran it, when it was applied here and how many recorded messages
 * it queued for replay on this node's channels.  The highest generation
 * is this node's restore generation, which its batches carry, so a
 * daemon that restarts after a restore speaks the generation it had.
 * Made like snapshot_conditions, idempotently and without a version.
 */
static int
migrate_restores(struct store *st)
{
	return exec(st,
	            "CREATE TABLE IF NOT EXISTS restores ("
	            " generation INTEGER PRIMARY KEY,"
	            " snapshot_id TEXT NOT NULL, restorer TEXT NOT NULL,"
	            " applied_ms INTEGER NOT NULL,"
	            " replayed INTEGER NOT NULL) STRICT",
	            NULL);
}

/* Why path cannot be written, if the file system says: SQLite reports a
 * read-only file system or directory as "unable to open database file"
 * or "attempt to write a readonly database". */
static const char *
unwritable(const char *path)
{
	char dir[512], *slash;
	struct statvfs sv;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (statvfs(dir, &sv) == 0 && (sv.f_flag & ST_RDONLY))
		return "; the file system is read-only";
	if (access(dir, W_OK) != 0 ||
	    (access(path, F_OK) == 0 && access(path, W_OK) != 0))
		return "; the file or its directory is not writable";
	return "";
}

int
store_open(const char *path, struct store **ret_store, char *errbuf,
           size_t errlen)
{
	struct store *st;
	int i, rc, rv;

	if (path == NULL || ret_store == NULL)
		return E_INVAL;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return E_NOMEM;
	if ((rv = connect_db(st, path)) != 0 || (rv = quick_check(st)) != 0 ||
	    (rv = migrate(st)) != 0 || (rv = migrate_conditions(st)) != 0 ||
	    (rv = migrate_restores(st)) != 0)
		goto fail;
	for (i = 0; i < S_COUNT; i++) {
		rc = sqlite3_prepare_v3(st->db, statements[i], -1,
		                        SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
		                        NULL);
		if (rc != SQLITE_OK && (rv = db_fail(st, rc)) != 0)
			goto fail;
	}
	*ret_store = st;
	return 0;
fail:
	if (errbuf != NULL && errlen > 0)
		snprintf(errbuf, errlen, "%s: %s%s", path, st->errmsg,
		         rv == E_IO ? unwritable(path) : "");
	store_close(st);
	return rv;
}

void
store_close(struct store *st)
{
	int i;

	if (st == NULL)
		return;
	for (i = 0; i < S_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->db); /* rolls back an open batch */
	free(st);
}

const char *
store_errmsg(const struct store *st)
{
	return st != NULL ? st->errmsg : "";
}

const char *
store_damaged(const struct store *st)
{
	return st != NULL ? st->damaged : "";
}

int
store_begin(struct store *st)
{
	int rv;

	if (!sqlite3_get_autocommit(st->db) || st->batch)
		return fail(st, E_STATE, "a batch is already open");
	st->batch = 1;
	st->lost[0] = '\0';
	/* A batch that could not begin is lost from the start: its writes
	 * fail at once rather than commit one by one. */
	if ((rv = exec(st, "BEGIN IMMEDIATE", NULL)) != 0)
		note_loss(st);
	return rv;
}

/* Ends the batch's bookkeeping once SQLite's transaction is over. */
static int
end_batch(struct store *st, int rv)
{
	if (sqlite3_get_autocommit(st->db)) {
		st->batch = 0;
		st->lost[0] = '\0';
	}
	return rv;
}

int
store_commit(struct store *st)
{
	int rv;

	if (batch_lost(st)) {
		rv = fail(st, E_IO, "the batch was rolled back: %s", st->lost);
		return end_batch(st, rv);
	}
	if (sqlite3_get_autocommit(st->db))
		return fail(st, E_STATE, "no batch is open");
	/* A failed COMMIT may leave the transaction open (SQLITE_BUSY, and
	 * some SQLITE_FULL cases): the caller retries or rolls back. */
	return end_batch(st, exec(st, "COMMIT", NULL));
}

int
store_rollback(struct store *st)
{
	int rv = 0;

	if (!sqlite3_get_autocommit(st->db))
		rv = exec(st, "ROLLBACK", NULL);
	return end_batch(st, rv);
}

int
store_snapshot_create(struct store *st, const char *id, const char *initiator,
                      int is_initiator, int64_t started_ms,
                      uint32_t parts_expected)
{
	return put(st, S_CREATE, "INtii", id, initiator,
	           is_initiator ? "initiator" : "participant", started_ms,
	           (int64_t)parts_expected);
}

int
store_next_id(struct store *st, const char *node, int64_t now_ms,
              uint64_t floor, uint64_t *ret_counter)
{
	struct query q;
	int64_t v = 0;
	int found = 0,
	    rv = query_start(&q, st, S_NEXT_ID, "Niu", node, now_ms, floor);

	if (rv == 0 && (found = query_next(&q)))
		v = sqlite3_column_int64(q.s, 0);
	if ((rv = query_end(&q, rv)) != 0)
		return rv;
	if (!found)
		return fail(st, E_SCHEMA, "no id counter in meta");
	if (v <= 0)
		return fail(st, E_IO, "id counter %lld", (long long)v);
	*ret_counter = (uint64_t)v;
	return 0;
}

int
store_abort_snapshot(struct store *st, const char *id, const char *initiator,
                     int is_initiator, int64_t started_ms,
                     uint32_t parts_expected, const char *reason,
                     int64_t finished_ms)
{
	int rv = put(st, S_RECREATE, "INtii", id, initiator,
	             is_initiator ? "initiator" : "participant", started_ms,
	             (int64_t)parts_expected);

	if (rv != 0)
		return rv;
	rv = put(st, S_FINISH, "Itti", id, status_names[STORE_ABORTED], reason,
	         finished_ms);
	if (rv != 0 || sqlite3_changes(st->db) > 0)
		return rv;
	return no_row(st, id, "has already ended");
}

int
store_checkpoint(struct store *st)
{
	int rc;

	if (st->batch || !sqlite3_get_autocommit(st->db))
		return fail(st, E_STATE, "a batch is open");
	/* Without waiting: a reader that holds its snapshot makes it
	 * SQLITE_BUSY now rather than stall the daemon for 5 s. */
	sqlite3_busy_timeout(st->db, 0);
	rc = sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
	                               NULL, NULL);
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	return rc == SQLITE_OK ? 0 : db_fail(st, rc);
}

int
store_probe(struct store *st, int64_t now_ms)
{
	return put(st, S_PROBE, "i", now_ms);
}

int
store_put_message(struct store *st, const char *id, const char *src,
                  const char *dst, uint64_t seq, const char *content_type,
                  const void *payload, size_t len)
{
	return put(st, S_MESSAGE, "INNuCv", id, src, dst, seq, content_type,
	           payload, len);
}

int
store_put_state(struct store *st, const char *id, const char *node,
                const char *content_type, const void *state, size_t len,
                int64_t recorded_ms)
{
	return put(st, S_STATE, "INCiv", id, node, content_type, recorded_ms,
	           state, len);
}

int
store_put_channel(struct store *st, const char *id,
                  const struct store_channel *ch)
{
	if (ch == NULL)
		return fail(st, E_INVAL, "NULL channel");
	return put(st, S_CHANNEL, "INNuuuuui", id, ch->src, ch->dst, ch->m,
	           ch->n, ch->recorded, ch->first_seq, ch->last_seq,
	           (int64_t) !!ch->consecutive);
}

int
store_finish(struct store *st, const char *id, enum store_status status,
             const char *reason, int64_t finished_ms)
{
	int rv;

	if (status != STORE_COMPLETE && status != STORE_ABORTED)
		return fail(st, E_INVAL, "bad final status %d", status);
	rv = put(st, S_FINISH, "Itti", id, status_names[status], reason,
	         finished_ms);
	if (rv != 0 || sqlite3_changes(st->db) > 0)
		return rv;
	return no_row(st, id, "has already ended");
}

int
store_abort_unfinished(struct store *st, const char *reason,
                       int64_t finished_ms, uint32_t *ret_count)
{
	int rv = put(st, S_ABORT_ALL, "ti", reason, finished_ms);

	if (rv == 0 && ret_count != NULL)
		*ret_count = (uint32_t)sqlite3_changes(st->db);
	return rv;
}

int
store_put_audit(struct store *st, const char *id, int consistent,
                const char *reason)
{
	int rv = put(st, S_AUDIT, "Iit", id, (int64_t) !!consistent, reason);

	if (rv != 0 || sqlite3_changes(st->db) > 0)
		return rv;
	return no_row(st, id, "is not complete");
}

int
store_delete(struct store *st, const char *id)
{
	int rv = put(st, S_DELETE, "I", id);

	if (rv != 0 || sqlite3_changes(st->db) > 0)
		return rv;
	return fail(st, E_NOENT, "no snapshot %s", id);
}

int
store_get(struct store *st, const char *id, struct store_snapshot *ret)
{
	struct store_snapshot snap;
	struct query q;
	int found = 0, rv = query_start(&q, st, S_GET, "I", id);

	if (rv == 0 && (found = query_next(&q)))
		read_snapshot(q.s, &snap);
	if ((rv = query_end(&q, rv)) != 0)
		return rv;
	if (!found)
		return fail(st, E_NOENT, "no snapshot %s", id);
	*ret = snap;
	return 0;
}

int
store_list(struct store *st,
           int (*cb)(const struct store_snapshot *snap, void *arg), void *arg)
{
	struct store_snapshot snap;
	struct query q;
	int rv = query_start(&q, st, S_LIST, "");

	while (rv == 0 && query_next(&q)) {
		read_snapshot(q.s, &snap);
		rv = cb(&snap, arg);
	}
	return query_end(&q, rv);
}

int
store_foreach_state(struct store *st, const char *id,
                    int (*cb)(const char *node, const char *content_type,
                              const void *state, size_t len, void *arg),
                    void *arg)
{
	struct query q;
	const void *p;
	size_t len;
	int rv = query_start(&q, st, S_STATES, "I", id);

	while (rv == 0 && query_next(&q))
		if ((rv = column_bytes(&q, 2, &p, &len)) == 0)
			rv = cb(text(q.s, 0), text(q.s, 1), p, len, arg);
	return query_end(&q, rv);
}

int
store_foreach_channel(struct store *st, const char *id,
                      int (*cb)(const struct store_channel *ch, void *arg),
                      void *arg)
{
	struct store_channel ch;
	struct query q;
	int rv = query_start(&q, st, S_CHANNELS, "I", id);

	while (rv == 0 && query_next(&q)) {
		ch.src = text(q.s, 0);
		ch.dst = text(q.s, 1);
		ch.m = (uint64_t)sqlite3_column_int64(q.s, 2);
		ch.n = (uint64_t)sqlite3_column_int64(q.s, 3);
		ch.recorded = (uint64_t)sqlite3_column_int64(q.s, 4);
		ch.first_seq = (uint64_t)sqlite3_column_int64(q.s, 5);
		ch.last_seq = (uint64_t)sqlite3_column_int64(q.s, 6);
		ch.consecutive = sqlite3_column_int(q.s, 7);
		rv = cb(&ch, arg);
	}
	return query_end(&q, rv);
}

int
store_foreach_message(struct store *st, const char *id, const char *src,
                      const char *dst,
                      int (*cb)(uint64_t seq, const char *content_type,
                                const void *payload, size_t len, void *arg),
                      void *arg)
{
	struct query q;
	const void *p;
	size_t len;
	int rv = query_start(&q, st, S_MESSAGES, "INN", id, src, dst);

	while (rv == 0 && query_next(&q))
		if ((rv = column_bytes(&q, 2, &p, &len)) == 0)
			rv = cb((uint64_t)sqlite3_column_int64(q.s, 0),
			        text(q.s, 1), p, len, arg);
	return query_end(&q, rv);
}

int
store_put_condition(struct store *st, const char *id, const char *name,
                    int held, const char *detail, int64_t evaluated_ms)
{
	if (held < -1 || held > 1)
		return fail(st, E_INVAL, "bad held value %d", held);
	return put(st, S_COND_PUT, "INiti", id, name, (int64_t)held,
	           detail != NULL ? detail : "", evaluated_ms);
}

int
store_foreach_condition(struct store *st, const char *id,
                        int (*cb)(const char *name, int held,
                                  const char *detail, void *arg),
                        void *arg)
{
	struct query q;
	int rv = query_start(&q, st, S_CONDS, "I", id);

	while (rv == 0 && query_next(&q))
		rv = cb(text(q.s, 0), sqlite3_column_int(q.s, 1), text(q.s, 2),
		        arg);
	return query_end(&q, rv);
}

int
store_set_outcome(struct store *st, const char *id, enum store_status status,
                  const char *reason, int consistent, const char *audit_reason,
                  uint32_t parts, int64_t outcome_ms)
{
	int rv;

	if (status != STORE_COMPLETE && status != STORE_ABORTED)
		return fail(st, E_INVAL, "bad outcome %d", status);
	rv = put(st, S_OUTCOME, "Ittitii", id, status_names[status], reason,
	         (int64_t)(consistent < 0 ? -1 : consistent != 0), audit_reason,
	         outcome_ms, (int64_t)parts);
	if (rv != 0 || sqlite3_changes(st->db) > 0)
		return rv;
	return no_row(st, id, "is not a participant's");
}

int
store_set_keep(struct store *st, const char *id, int keep)
{
	int rv = put(st, S_KEEP, "Ii", id, (int64_t)(keep != 0));

	if (rv != 0 || sqlite3_changes(st->db) > 0)
		return rv;
	return fail(st, E_NOENT, "no snapshot %s", id);
}

int
store_forget_add(struct store *st, const char *node, const char *id,
                 int64_t now_ms)
{
	return put(st, S_FORGET_ADD, "NIi", node, id, now_ms);
}

int
store_forget_done(struct store *st, const char *node, const char *id)
{
	return put(st, S_FORGET_DONE, "NI", node, id);
}

int
store_forget_foreach(struct store *st, store_forget_fn fn, void *arg)
{
	struct query q;
	int rv = query_start(&q, st, S_FORGET_LIST, "");

	while (rv == 0 && query_next(&q))
		rv = fn(text(q.s, 0), text(q.s, 1), arg);
	return query_end(&q, rv);
}

int
store_forget_count(struct store *st, const char *node, uint64_t *ret)
{
	struct query q;
	int64_t n = 0;
	int rv = query_start(&q, st, S_FORGET_COUNT, "N", node);

	if (rv == 0 && query_next(&q))
		n = sqlite3_column_int64(q.s, 0);
	if ((rv = query_end(&q, rv)) == 0)
		*ret = (uint64_t)n;
	return rv;
}

int
store_restore_put(struct store *st, uint64_t generation, const char *id,
                  const char *restorer, int64_t applied_ms, uint64_t replayed)
{
	return put(st, S_RESTORE_PUT, "utNiu", generation, id, restorer,
	           applied_ms, replayed);
}

int
store_restore_generation(struct store *st, uint64_t *ret)
{
	struct query q;
	int64_t g = 0;
	int rv = query_start(&q, st, S_RESTORE_GEN, "");

	if (rv == 0 && query_next(&q))
		g = sqlite3_column_int64(q.s, 0);
	if ((rv = query_end(&q, rv)) == 0)
		*ret = (uint64_t)g;
	return rv;
}

int
store_retain_foreach(struct store *st, store_retain_fn fn, void *arg)
{
	struct query q;
	int rv = query_start(&q, st, S_RETAIN_LIST, "");

	while (rv == 0 && query_next(&q))
		rv = fn(text(q.s, 0), sqlite3_column_int(q.s, 1),
		        sqlite3_column_int(q.s, 2),
		        sqlite3_column_int64(q.s, 3), arg);
	return query_end(&q, rv);
}

int
store_reclaim(struct store *st)
{
	int rv;

	if (st->batch || !sqlite3_get_autocommit(st->db))
		return fail(st, E_STATE, "a batch is open");
	/* Gives the pages the deletes freed back to the file system (a file
	 * made before auto_vacuum keeps them on its free list, where the
	 * next snapshots reuse them), then the WAL. */
	if ((rv = exec(st, "PRAGMA incremental_vacuum", NULL)) != 0)
		return rv;
	return store_checkpoint(st);
}

/* The store as the coordinator's port: each entry is the store.h
 * function of the same name. */
static const char *
port_errmsg(void *db)
{
	return store_errmsg(db);
}

#define PORT0(name)                                                            \
	static int port_##name(void *db)                                       \
	{                                                                      \
		return store_##name(db);                                       \
	}
PORT0(begin)
PORT0(commit)
PORT0(rollback)
PORT0(checkpoint)
PORT0(reclaim)
#undef PORT0

static int
port_set_outcome(void *db, const char *id, enum store_status status,
                 const char *reason, int consistent, const char *audit_reason,
                 uint32_t parts, int64_t outcome_ms)
{
	return store_set_outcome(db, id, status, reason, consistent,
	                         audit_reason, parts, outcome_ms);
}

static int
port_set_keep(void *db, const char *id, int keep)
{
	return store_set_keep(db, id, keep);
}

static int
port_forget_add(void *db, const char *node, const char *id, int64_t now_ms)
{
	return store_forget_add(db, node, id, now_ms);
}

static int
port_forget_done(void *db, const char *node, const char *id)
{
	return store_forget_done(db, node, id);
}

static int
port_forget_foreach(void *db, store_forget_fn fn, void *arg)
{
	return store_forget_foreach(db, fn, arg);
}

static int
port_forget_count(void *db, const char *node, uint64_t *ret)
{
	return store_forget_count(db, node, ret);
}

static int
port_retain_foreach(void *db, store_retain_fn fn, void *arg)
{
	return store_retain_foreach(db, fn, arg);
}

static int
port_list(void *db, store_list_fn fn, void *arg)
{
	return store_list(db, fn, arg);
}

static int
port_get(void *db, const char *id, struct store_snapshot *ret)
{
	return store_get(db, id, ret);
}

static int
port_probe(void *db, int64_t now_ms)
{
	return store_probe(db, now_ms);
}

static int
port_next_id(void *db, const char *node, int64_t now_ms, uint64_t floor,
             uint64_t *ret)
{
	return store_next_id(db, node, now_ms, floor, ret);
}

static int
port_snapshot_create(void *db, const char *id, const char *initiator,
                     int is_initiator, int64_t started_ms, uint32_t parts)
{
	return store_snapshot_create(db, id, initiator, is_initiator,
	                             started_ms, parts);
}

static int
port_put_message(void *db, const char *id, const char *src, const char *dst,
                 uint64_t seq, const char *ctype, const void *payload,
                 size_t len)
{
	return store_put_message(db, id, src, dst, seq, ctype, payload, len);
}

static int
port_put_state(void *db, const char *id, const char *node, const char *ctype,
               const void *state, size_t len, int64_t recorded_ms)
{
	return store_put_state(db, id, node, ctype, state, len, recorded_ms);
}

static int
port_put_channel(void *db, const char *id, const struct store_channel *ch)
{
	return store_put_channel(db, id, ch);
}

static int
port_finish(void *db, const char *id, enum store_status status,
            const char *reason, int64_t finished_ms)
{
	return store_finish(db, id, status, reason, finished_ms);
}

static int
port_abort_snapshot(void *db, const char *id, const char *initiator,
                    int is_initiator, int64_t started_ms, uint32_t parts,
                    const char *reason, int64_t finished_ms)
{
	return store_abort_snapshot(db, id, initiator, is_initiator, started_ms,
	                            parts, reason, finished_ms);
}

static int
port_abort_unfinished(void *db, const char *reason, int64_t finished_ms,
                      uint32_t *ret_count)
{
	return store_abort_unfinished(db, reason, finished_ms, ret_count);
}

static int
port_put_audit(void *db, const char *id, int consistent, const char *reason)
{
	return store_put_audit(db, id, consistent, reason);
}

static int
port_remove(void *db, const char *id)
{
	return store_delete(db, id);
}

static int
port_foreach_state(void *db, const char *id, store_state_fn fn, void *arg)
{
	return store_foreach_state(db, id, fn, arg);
}

static int
port_foreach_channel(void *db, const char *id, store_channel_fn fn, void *arg)
{
	return store_foreach_channel(db, id, fn, arg);
}

static int
port_foreach_message(void *db, const char *id, const char *src, const char *dst,
                     store_message_fn fn, void *arg)
{
	return store_foreach_message(db, id, src, dst, fn, arg);
}

static int
port_restore_put(void *db, uint64_t generation, const char *id,
                 const char *restorer, int64_t applied_ms, uint64_t replayed)
{
	return store_restore_put(db, generation, id, restorer, applied_ms,
	                         replayed);
}

static int
port_restore_generation(void *db, uint64_t *ret)
{
	return store_restore_generation(db, ret);
}

static const struct store_port_ops port_ops = {
    .errmsg = port_errmsg,
    .begin = port_begin,
    .commit = port_commit,
    .rollback = port_rollback,
    .checkpoint = port_checkpoint,
    .probe = port_probe,
    .next_id = port_next_id,
    .snapshot_create = port_snapshot_create,
    .put_message = port_put_message,
    .put_state = port_put_state,
    .put_channel = port_put_channel,
    .finish = port_finish,
    .abort_snapshot = port_abort_snapshot,
    .abort_unfinished = port_abort_unfinished,
    .put_audit = port_put_audit,
    .remove = port_remove,
    .foreach_state = port_foreach_state,
    .foreach_channel = port_foreach_channel,
    .foreach_message = port_foreach_message,
    .set_outcome = port_set_outcome,
    .set_keep = port_set_keep,
    .forget_add = port_forget_add,
    .forget_done = port_forget_done,
    .forget_foreach = port_forget_foreach,
    .forget_count = port_forget_count,
    .retain_foreach = port_retain_foreach,
    .list = port_list,
    .reclaim = port_reclaim,
    .get = port_get,
    .restore_put = port_restore_put,
    .restore_generation = port_restore_generation,
};

struct store_port
store_port(struct store *st)
{
	struct store_port p = {&port_ops, st};

	return p;
}
