/*
 * test_cond.c - conditions (daemon/store/cond.c): what holds, what is
 * refused before anything runs (writes, ATTACH, PRAGMA, extensions, more
 * than one statement, parameters other than :snapshot), the deadline and
 * the bound on rows.  Each test gets a fresh database made by the store,
 * with one snapshot of two nodes, one of them idle, and a message in
 * flight.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cond.h"
#include "store.h"

static char dir[64];
static char path[128];
static struct store *st;
static struct cond *c;

#define ID "p0:1"

static void
setup(void)
{
	struct store_channel ch = {.src = "p1",
	                           .dst = "p0",
	                           .m = 3,
	                           .n = 4,
	                           .recorded = 1,
	                           .first_seq = 4,
	                           .last_seq = 4,
	                           .consecutive = 1};
	struct errinfo e = {0};
	char err[256] = "";
	const char *j = "application/json";

	snprintf(dir, sizeof(dir), "/tmp/test_cond.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cut.db", dir);
	cr_assert_eq(store_open(path, &st, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(store_snapshot_create(st, ID, "p0", 1, 1, 2), 0);
	cr_assert_eq(
	    store_put_state(st, ID, "p0", j, "{\"idle\": true}", 14, 2), 0);
	cr_assert_eq(
	    store_put_state(st, ID, "p1", j, "{\"idle\": false}", 15, 2), 0);
	cr_assert_eq(store_put_channel(st, ID, &ch), 0);
	cr_assert_eq(
	    store_put_message(st, ID, "p1", "p0", 4, j, "{\"amount\": 4}", 13),
	    0);
	cr_assert_eq(store_finish(st, ID, STORE_COMPLETE, NULL, 3), 0);
	cr_assert_eq(cond_open(path, 1 << 20, &c, &e), 0, "%s", e.text);
}

static void
teardown(void)
{
	const char *suffix[] = {"", "-wal", "-shm"};
	char name[160];

	cond_close(c);
	store_close(st);
	for (size_t i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%s%s", path, suffix[i]);
		unlink(name);
	}
	rmdir(dir);
}

TestSuite(cond, .init = setup, .fini = teardown);

static int
eval(const char *sql, const char *id, struct cond_result *r, struct errinfo *e)
{
	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	return cond_eval(c, sql, id, 0, r, e);
}

Test(cond, holds_by_the_first_column)
{
	struct cond_result r;
	struct errinfo e;

	cr_assert_eq(eval("SELECT count(*) = 2, count(*) FROM recorded_states"
	                  " WHERE snapshot_id = :snapshot",
	                  ID, &r, &e),
	             0, "%s", e.text);
	cr_assert(r.held);
	cr_assert_eq(r.rows, 1);
	cr_assert_str_eq(r.value, "1|2");
	/* One node is not idle: false. */
	cr_assert_eq(eval("SELECT count(*) = 0 FROM recorded_states WHERE"
	                  " snapshot_id = :snapshot AND NOT"
	                  " coalesce(json_extract(state, '$.idle'), 0)",
	                  ID, &r, &e),
	             0, "%s", e.text);
	cr_assert_not(r.held);
	/* No row, a NULL, a zero real: false; a non-zero real: true. */
	eval("SELECT 1 FROM recorded_states WHERE snapshot_id = :snapshot"
	     " AND 0",
	     ID, &r, &e);
	cr_assert_not(r.held);
	cr_assert_eq(r.rows, 0);
	cr_assert_str_eq(r.value, "");
	eval("SELECT NULL WHERE :snapshot IS NOT NULL", ID, &r, &e);
	cr_assert_not(r.held);
	eval("SELECT 0.0 WHERE :snapshot IS NOT NULL", ID, &r, &e);
	cr_assert_not(r.held);
	eval("SELECT 0.5 WHERE :snapshot IS NOT NULL", ID, &r, &e);
	cr_assert(r.held);
	/* Another snapshot's id sees none of these rows. */
	eval("SELECT count(*) FROM recorded_states WHERE snapshot_id ="
	     " :snapshot",
	     "p0:2", &r, &e);
	cr_assert_not(r.held);
}

Test(cond, conservation)
{
	struct cond_result r;
	struct errinfo e;

	cr_assert_eq(eval("SELECT coalesce((SELECT sum(json_extract(payload,"
	                  " '$.amount')) FROM in_transit WHERE snapshot_id ="
	                  " :snapshot AND is_json), 0) = 4",
	                  ID, &r, &e),
	             0, "%s", e.text);
	cr_assert(r.held);
}

/* Every way to write, attach, change settings or load code is refused
 * at prepare time, and the database is as it was. */
Test(cond, writes_refused)
{
	static const char *const bad[] = {
	    "DELETE FROM snapshots WHERE id = :snapshot",
	    "INSERT INTO meta VALUES (:snapshot, 1)",
	    "UPDATE snapshots SET reason = :snapshot",
	    "ATTACH '/tmp/x.db' AS x",
	    "PRAGMA query_only = OFF",
	    "PRAGMA journal_mode",
	    "DROP TABLE snapshots",
	    "CREATE TEMP TABLE t AS SELECT :snapshot",
	    "BEGIN",
	    "SELECT load_extension('/tmp/x.so') WHERE :snapshot",
	    "WITH d AS (DELETE FROM snapshots RETURNING id) SELECT :snapshot",
	};
	struct cond_result r;
	struct errinfo e;
	struct store_snapshot ss;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(eval(bad[i], ID, &r, &e), E_INVAL, "%s", bad[i]);
		cr_assert_neq(e.text[0], '\0');
	}
	eval("DELETE FROM snapshots WHERE id = :snapshot", ID, &r, &e);
	cr_assert(strstr(e.text, "may only read: DELETE") != NULL, "%s",
	          e.text);
	eval("PRAGMA query_only = OFF", ID, &r, &e);
	cr_assert(strstr(e.text, "PRAGMA query_only") != NULL, "%s", e.text);
	cr_assert_eq(store_get(st, ID, &ss), 0);
	cr_assert_eq(ss.status, STORE_COMPLETE);
}

Test(cond, bad_conditions)
{
	struct cond_result r;
	struct errinfo e;

	cr_assert_eq(eval("SELEC 1", NULL, &r, &e), E_INVAL);
	cr_assert(strstr(e.text, "syntax error") != NULL, "%s", e.text);
	cr_assert_eq(eval("SELECT x FROM nosuch WHERE :snapshot", NULL, &r, &e),
	             E_INVAL);
	cr_assert(strstr(e.text, "no such table: nosuch") != NULL, "%s",
	          e.text);
	cr_assert_eq(eval("SELECT 1", NULL, &r, &e), E_INVAL);
	cr_assert(strstr(e.text, ":snapshot") != NULL);
	cr_assert_eq(eval("SELECT :snapshot, ?2", NULL, &r, &e), E_INVAL);
	cr_assert(strstr(e.text, "parameter ?2 is not bound") != NULL, "%s",
	          e.text);
	cr_assert_eq(eval("SELECT :other", NULL, &r, &e), E_INVAL);
	cr_assert_eq(eval("", NULL, &r, &e), E_INVAL);
	cr_assert_eq(eval("-- only a comment", NULL, &r, &e), E_INVAL);
	cr_assert_eq(eval("SELECT :snapshot; SELECT 2", NULL, &r, &e), E_INVAL);
	cr_assert(strstr(e.text, "one statement") != NULL, "%s", e.text);
	/* A trailing ';' and comment are fine; so is checking alone. */
	cr_assert_eq(eval("SELECT :snapshot; -- done\n", NULL, &r, &e), 0, "%s",
	             e.text);
	/* Fails while running: SQLite's words. */
	cr_assert_eq(
	    eval("SELECT json_extract('{', '$') WHERE :snapshot IS NOT NULL",
	         ID, &r, &e),
	    E_INVAL);
	cr_assert(strstr(e.text, "malformed JSON") != NULL, "%s", e.text);
}

Test(cond, deadline_and_rows)
{
	struct cond_result r = {0};
	struct errinfo e = {0};
	int rv;

	rv = cond_eval(c,
	               "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT"
	               " x + 1 FROM n) SELECT count(*) FROM n WHERE"
	               " :snapshot IS NOT NULL",
	               ID, 200, &r, &e);
	cr_assert_eq(rv, E_LIMIT, "%d %s", rv, e.text);
	cr_assert(strstr(e.text, "deadline of 200 ms") != NULL, "%s", e.text);
	/* The connection is usable afterwards. */
	cr_assert_eq(eval("SELECT 1 WHERE :snapshot", ID, &r, &e), 0);
	/* Rows past COND_ROWS_MAX are not read. */
	cr_assert_eq(eval("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT"
	                  " x + 1 FROM n) SELECT x FROM n WHERE :snapshot"
	                  " IS NOT NULL",
	                  ID, &r, &e),
	             0, "%s", e.text);
	cr_assert_eq(r.rows, COND_ROWS_MAX);
	cr_assert(r.more);
	cr_assert(r.held);
}
