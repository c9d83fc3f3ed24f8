/*
 * test_store.c - the SQLite store: schema, round trips, JSON typing,
 * batches, cascades, concurrent readers, the id counter and storage
 * faults (a damaged page, a full database).  Each test gets a fresh
 * database in its own temporary directory; the test reads the file back
 * with SQLite directly, as a person at the sqlite3 shell would.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

static char dir[64];
static char path[128];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_store.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cut.db", dir);
}

static void
teardown(void)
{
	const char *suffix[] = {"", "-wal", "-shm", "-journal"};
	char name[160];
	size_t i;

	for (i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", path, suffix[i]);
		unlink(name);
	}
	rmdir(dir);
}

TestSuite(store, .init = setup, .fini = teardown);

static struct store *
open_store(void)
{
	struct store *st = NULL;
	char err[256] = "";
	int rv = store_open(path, &st, err, sizeof(err));

	cr_assert_eq(rv, 0, "store_open: %s (%s)", err_str(rv), err);
	return st;
}

/* Runs sql on its own connection; the first column of the first row goes
 * to *ret_int and, as text, to ret_text.  Returns 1 if there was a row. */
static int
query(const char *sql, int64_t *ret_int, char *ret_text, size_t len)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int rc, row;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	rc = sqlite3_step(s);
	cr_assert(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql,
	          sqlite3_errmsg(db));
	row = rc == SQLITE_ROW;
	if (row && ret_int != NULL)
		*ret_int = sqlite3_column_int64(s, 0);
	if (row && ret_text != NULL)
		snprintf(ret_text, len, "%s",
		         sqlite3_column_type(s, 0) == SQLITE_NULL
		             ? "NULL"
		             : (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return row;
}

static int64_t
query_int(const char *sql)
{
	int64_t v = -12345;

	cr_assert(query(sql, &v, NULL, 0), "no row: %s", sql);
	return v;
}

static const char *
query_text(const char *sql, char *buf, size_t len)
{
	cr_assert(query(sql, NULL, buf, len), "no row: %s", sql);
	return buf;
}

static void
exec_sql(const char *sql)
{
	sqlite3 *db;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK,
	             "%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

static void
create(struct store *st, const char *id, int64_t started_ms)
{
	cr_assert_eq(store_snapshot_create(st, id, "p0", 1, started_ms, 3), 0,
	             "%s", store_errmsg(st));
}

static void
put_json_message(struct store *st, const char *id, const char *src,
                 const char *dst, uint64_t seq, const char *json)
{
	cr_assert_eq(store_put_message(st, id, src, dst, seq,
	                               "application/json", json, strlen(json)),
	             0, "%s", store_errmsg(st));
}

Test(store, open_creates_schema)
{
	struct store *st = open_store();
	char buf[64];

	cr_assert_eq(query_int("PRAGMA user_version"), 3);
	cr_assert_str_eq(query_text("PRAGMA journal_mode", buf, sizeof(buf)),
	                 "wal");
	cr_assert_eq(query_int("PRAGMA application_id"), 0x63757464);
	cr_assert_eq(query_int("SELECT count(*) FROM pragma_table_list"
	                       " WHERE strict AND name IN ('snapshots',"
	                       " 'node_states', 'channel_states',"
	                       " 'channel_messages')"),
	             4);
	cr_assert_eq(query_int("SELECT count(*) FROM sqlite_schema"
	                       " WHERE type = 'view' AND name IN"
	                       " ('snapshot_summary', 'recorded_states',"
	                       " 'in_transit')"),
	             3);
	store_close(st);
	store_close(NULL);
}

Test(store, reopen_is_idempotent)
{
	struct store *st = open_store();
	struct store_snapshot snap;

	create(st, "p0-1", 1000);
	store_close(st);
	st = open_store();
	cr_assert_eq(store_get(st, "p0-1", &snap), 0);
	cr_assert_str_eq(snap.id, "p0-1");
	store_close(st);
	st = open_store();
	store_close(st);
	cr_assert_eq(query_int("PRAGMA user_version"), 3);
	cr_assert_eq(query_int("SELECT count(*) FROM snapshots"), 1);
}

Test(store, newer_schema_is_refused)
{
	struct store *st = open_store(), *st2 = (struct store *)&st;
	char err[256] = "";

	store_close(st);
	exec_sql("PRAGMA user_version = 99");
	cr_assert_eq(store_open(path, &st2, err, sizeof(err)), E_SCHEMA);
	cr_assert_eq(st2, (struct store *)&st, "ret_store written on failure");
	cr_assert(strstr(err, "user_version 99") != NULL, "%s", err);
	cr_assert_eq(query_int("PRAGMA user_version"), 99);
}

Test(store, foreign_database_is_refused)
{
	struct store *st = NULL;

	exec_sql("PRAGMA application_id = 42; CREATE TABLE t (x)");
	cr_assert_eq(store_open(path, &st, NULL, 0), E_SCHEMA);
	cr_assert_null(st);
	cr_assert_eq(store_open(NULL, &st, NULL, 0), E_INVAL);
}

struct chans {
	struct store_channel p1; /* the channel from p1, names cleared */
	int n;
};

static int
copy_channel(const struct store_channel *ch, void *arg)
{
	struct chans *c = arg;

	cr_assert_str_eq(ch->dst, "p0");
	cr_assert_str_eq(ch->src, c->n == 0 ? "p1" : "p2", "by src, dst");
	if (c->n++ == 0)
		c->p1 = *ch;
	c->p1.src = c->p1.dst = NULL; /* borrowed only during the call */
	return 0;
}

Test(store, round_trip)
{
	struct store *st = open_store();
	struct store_snapshot snap;
	struct store_channel ch = {"p1", "p0", 3, 5, 2, 4, 5, 1};
	struct store_channel empty = {"p2", "p0", 7, 7, 0, 0, 0, 1};
	struct chans got = {.n = 0};

	cr_assert_eq(
	    store_snapshot_create(st, "p0-7", "p0", 1, 1700000000123, 3), 0);
	cr_assert_eq(store_get(st, "p0-7", &snap), 0);
	cr_assert_eq(snap.status, STORE_IN_PROGRESS);
	cr_assert_eq(snap.finished_ms, 0);
	cr_assert_eq(snap.consistent, -1);
	cr_assert_eq(store_put_channel(st, "p0-7", &ch), 0);
	cr_assert_eq(store_put_channel(st, "p0-7", &empty), 0);
	cr_assert_eq(
	    store_finish(st, "p0-7", STORE_COMPLETE, NULL, 1700000000456), 0);
	cr_assert_eq(store_put_audit(st, "p0-7", 0,
	                             "channel p1 -> p0: 1"
	                             " missing"),
	             0);
	cr_assert_eq(store_get(st, "p0-7", &snap), 0);
	cr_assert_str_eq(snap.id, "p0-7");
	cr_assert_str_eq(snap.initiator, "p0");
	cr_assert_eq(snap.is_initiator, 1);
	cr_assert_eq(snap.status, STORE_COMPLETE);
	cr_assert_str_eq(snap.reason, "");
	cr_assert_eq(snap.started_ms, 1700000000123);
	cr_assert_eq(snap.finished_ms, 1700000000456);
	cr_assert_eq(snap.parts_expected, 3);
	cr_assert_eq(snap.parts, 0);
	cr_assert_eq(snap.channels, 2);
	cr_assert_eq(snap.messages, 0);
	cr_assert_eq(snap.consistent, 0);
	cr_assert_str_eq(snap.audit_reason, "channel p1 -> p0: 1 missing");

	cr_assert_eq(store_foreach_channel(st, "p0-7", copy_channel, &got), 0);
	cr_assert_eq(got.n, 2);
	cr_assert_eq(got.p1.m, 3);
	cr_assert_eq(got.p1.n, 5);
	cr_assert_eq(got.p1.recorded, 2);
	cr_assert_eq(got.p1.first_seq, 4);
	cr_assert_eq(got.p1.last_seq, 5);
	cr_assert_eq(got.p1.consecutive, 1);
	cr_assert_eq(query_int("SELECT first_seq IS NULL AND last_seq IS NULL"
	                       " FROM channel_states WHERE src = 'p2'"),
	             1);

	cr_assert_eq(store_snapshot_create(st, "p1-1", "p1", 0, 5, 1), 0);
	cr_assert_eq(store_finish(st, "p1-1", STORE_ABORTED,
	                          "node p2 did not answer", 9),
	             0);
	cr_assert_eq(store_get(st, "p1-1", &snap), 0);
	cr_assert_eq(snap.is_initiator, 0);
	cr_assert_eq(snap.status, STORE_ABORTED);
	cr_assert_str_eq(snap.reason, "node p2 did not answer");
	store_close(st);
}

struct value {
	const char *key;
	char ctype[64];
	unsigned char data[512];
	size_t len;
	int calls;
};

static int
copy_state(const char *node, const char *ctype, const void *data, size_t len,
           void *arg)
{
	struct value *v = arg;

	if (strcmp(node, v->key) != 0)
		return 0;
	cr_assert_not_null(data);
	cr_assert_leq(len, sizeof(v->data));
	snprintf(v->ctype, sizeof(v->ctype), "%s", ctype);
	memcpy(v->data, data, len);
	v->len = len;
	v->calls++;
	return 0;
}

/* Stores state under node and checks its SQL type and the bytes read
 * back. */
static void
check_state(struct store *st, const char *node, const char *ctype,
            const void *data, size_t len, const char *type)
{
	struct value v = {.key = node};
	char sql[160], buf[16];

	cr_assert_eq(store_put_state(st, "s", node, ctype, data, len, 7), 0,
	             "%s", store_errmsg(st));
	snprintf(sql, sizeof(sql),
	         "SELECT typeof(state) FROM node_states WHERE node = '%s'",
	         node);
	cr_assert_str_eq(query_text(sql, buf, sizeof(buf)), type, "%s", node);
	cr_assert_eq(store_foreach_state(st, "s", copy_state, &v), 0);
	cr_assert_eq(v.calls, 1);
	cr_assert_str_eq(v.ctype, ctype);
	cr_assert_eq(v.len, len);
	cr_assert(len == 0 || memcmp(v.data, data, len) == 0, "%s", node);
}

Test(store, json_is_text_and_queryable)
{
	struct store *st = open_store();
	const char *bal = "{\"balance\": 18}";
	const char *bad_utf8 = "{\"a\": \"\xc3\x28\"}";
	const char *nul = "{\"a\": 1}\0{";
	char buf[64];

	create(st, "s", 1);
	check_state(st, "p0", "application/json", bal, strlen(bal), "text");
	check_state(st, "p1", "Application/Vnd.Bank+JSON; charset=utf-8",
	            "[1,2]", 5, "text");
	check_state(st, "p2", "application/json", "{\"balance\":", 11, "blob");
	check_state(st, "p3", "application/json", bad_utf8, strlen(bad_utf8),
	            "blob");
	check_state(st, "p4", "application/json", nul, 10, "blob");
	check_state(st, "p5", "text/plain", "{}", 2, "blob");
	check_state(st, "p6", "application/json", "", 0, "blob");
	cr_assert_eq(query_int("SELECT json_extract(state, '$.balance')"
	                       " FROM recorded_states WHERE node = 'p0'"),
	             18);
	cr_assert_eq(query_int("SELECT is_json FROM recorded_states"
	                       " WHERE node = 'p0'"),
	             1);
	cr_assert_eq(query_int("SELECT size FROM recorded_states"
	                       " WHERE node = 'p3'"),
	             (int64_t)strlen(bad_utf8));
	cr_assert_str_eq(query_text("SELECT recorded_at FROM recorded_states"
	                            " WHERE node = 'p0'",
	                            buf, sizeof(buf)),
	                 "1970-01-01T00:00:00.007Z");
	store_close(st);
}

Test(store, binary_is_blob_and_exact)
{
	struct store *st = open_store();
	unsigned char bytes[256];
	size_t i;

	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(255 - i);
	create(st, "s", 1);
	check_state(st, "p0", "application/octet-stream", bytes, sizeof(bytes),
	            "blob");
	check_state(st, "p1", "application/octet-stream", NULL, 0, "blob");
	cr_assert_eq(query_int("SELECT size FROM recorded_states"
	                       " WHERE node = 'p0'"),
	             256);
	store_close(st);
}

struct order {
	uint64_t next;
	int bad;
};

static int
check_order(uint64_t seq, const char *ctype, const void *p, size_t len,
            void *arg)
{
	struct order *o = arg;
	char want[32];

	snprintf(want, sizeof(want), "{\"amount\": %llu}",
	         (unsigned long long)seq);
	if (seq != o->next || strcmp(ctype, "application/json") != 0 ||
	    len != strlen(want) || memcmp(p, want, len) != 0)
		o->bad++;
	o->next++;
	return 0;
}

Test(store, ten_thousand_messages_in_one_batch)
{
	struct store *st = open_store();
	struct order o = {.next = 1};
	char json[32];
	uint64_t i, seq;

	create(st, "s", 1);
	cr_assert_eq(store_begin(st), 0);
	for (i = 0; i < 10000; i++) {
		seq = i * 7919 % 10000 + 1; /* every seq once, out of order */
		snprintf(json, sizeof(json), "{\"amount\": %llu}",
		         (unsigned long long)seq);
		put_json_message(st, "s", "p1", "p0", seq, json);
	}
	cr_assert_eq(query_int("SELECT count(*) FROM channel_messages"), 0,
	             "the batch is visible before its commit");
	cr_assert_eq(store_commit(st), 0, "%s", store_errmsg(st));
	cr_assert_eq(query_int("SELECT in_transit FROM snapshot_summary"),
	             10000);
	cr_assert_eq(query_int("SELECT sum(json_extract(payload, '$.amount'))"
	                       " FROM in_transit WHERE is_json"),
	             50005000);
	cr_assert_eq(
	    store_foreach_message(st, "s", "p1", "p0", check_order, &o), 0);
	cr_assert_eq(o.next, 10001);
	cr_assert_eq(o.bad, 0);
	store_close(st);
}

static void
fill(struct store *st, const char *id)
{
	struct store_channel ch = {"p1", "p0", 0, 1, 1, 1, 1, 1};

	create(st, id, 1);
	cr_assert_eq(
	    store_put_state(st, id, "p0", "application/json", "{}", 2, 1), 0);
	cr_assert_eq(store_put_channel(st, id, &ch), 0);
	put_json_message(st, id, "p1", "p0", 1, "{\"amount\": 1}");
}

Test(store, delete_cascades)
{
	struct store *st = open_store();
	struct store_snapshot snap;

	fill(st, "gone");
	fill(st, "kept");
	cr_assert_eq(store_delete(st, "gone"), 0);
	cr_assert_eq(store_get(st, "gone", &snap), E_NOENT);
	cr_assert_eq(store_delete(st, "gone"), E_NOENT);
	cr_assert_eq(query_int("SELECT (SELECT count(*) FROM node_states)"
	                       " + (SELECT count(*) FROM channel_states)"
	                       " + (SELECT count(*) FROM channel_messages)"),
	             3);
	cr_assert_eq(query_int("SELECT count(*) FROM channel_messages"
	                       " WHERE snapshot_id = 'gone'"),
	             0);
	store_close(st);
}

struct ids {
	char id[4][STORE_ID_MAX + 1];
	int n, stop_at;
	struct store *st;
};

static int
collect(const struct store_snapshot *snap, void *arg)
{
	struct ids *ids = arg;
	struct store_snapshot again;

	cr_assert_lt(ids->n, 4);
	snprintf(ids->id[ids->n++], sizeof(ids->id[0]), "%s", snap->id);
	if (ids->st != NULL) {
		cr_assert_eq(store_get(ids->st, snap->id, &again), 0);
		cr_assert_eq(store_list(ids->st, collect, ids), E_STATE);
	}
	return ids->n == ids->stop_at ? 42 : 0;
}

Test(store, list_is_newest_first)
{
	struct store *st = open_store();
	struct ids ids = {.n = 0};

	create(st, "old", 100);
	create(st, "new", 300);
	create(st, "mid", 200);
	cr_assert_eq(store_list(st, collect, &ids), 0);
	cr_assert_eq(ids.n, 3);
	cr_assert_str_eq(ids.id[0], "new");
	cr_assert_str_eq(ids.id[1], "mid");
	cr_assert_str_eq(ids.id[2], "old");

	ids = (struct ids){.stop_at = 1, .st = st};
	cr_assert_eq(store_list(st, collect, &ids), 42);
	cr_assert_eq(ids.n, 1);
	cr_assert_str_eq(ids.id[0], "new");
	cr_assert_eq(store_list(st, collect, &(struct ids){.stop_at = 9}), 0,
	             "the list is usable after a stopped iteration");
	store_close(st);
}

Test(store, duplicates_are_eexist)
{
	struct store *st = open_store();
	struct store_channel ch = {"p1", "p0", 0, 1, 1, 1, 1, 1};

	fill(st, "s");
	cr_assert_eq(store_snapshot_create(st, "s", "p1", 0, 2, 1),
	             E_EXIST);
	cr_assert(strstr(store_errmsg(st), "UNIQUE") != NULL, "%s",
	          store_errmsg(st));
	cr_assert_eq(store_put_state(st, "s", "p0", "text/plain", "x", 1, 1),
	             E_EXIST);
	cr_assert_eq(store_put_channel(st, "s", &ch), E_EXIST);
	cr_assert_eq(
	    store_put_message(st, "s", "p1", "p0", 1, "text/plain", "x", 1),
	    E_EXIST);
	store_close(st);
}

Test(store, unknown_id_is_enoent)
{
	struct store *st = open_store();
	struct store_snapshot snap;
	struct store_channel ch = {"p1", "p0", 0, 0, 0, 0, 0, 1};
	struct value v = {.key = "p0"};

	cr_assert_eq(store_get(st, "nope", &snap), E_NOENT);
	cr_assert_eq(
	    store_put_message(st, "nope", "p1", "p0", 1, "text/plain", "x", 1),
	    E_NOENT);
	cr_assert_eq(store_put_state(st, "nope", "p0", "text/plain", "x", 1, 1),
	             E_NOENT);
	cr_assert_eq(store_put_channel(st, "nope", &ch), E_NOENT);
	cr_assert_eq(store_finish(st, "nope", STORE_ABORTED, "x", 1),
	             E_NOENT);
	cr_assert_eq(store_put_audit(st, "nope", 1, NULL), E_NOENT);
	cr_assert_eq(store_delete(st, "nope"), E_NOENT);
	cr_assert_eq(store_foreach_state(st, "nope", copy_state, &v), 0);
	cr_assert_eq(v.calls, 0);
	store_close(st);
}

Test(store, states_of_a_snapshot)
{
	struct store *st = open_store();

	create(st, "s", 1);
	cr_assert_eq(store_put_audit(st, "s", 1, NULL), E_STATE);
	cr_assert_eq(store_finish(st, "s", STORE_IN_PROGRESS, NULL, 2),
	             E_INVAL);
	cr_assert_eq(store_finish(st, "s", STORE_COMPLETE, NULL, 2), 0);
	cr_assert_eq(store_finish(st, "s", STORE_ABORTED, "late", 3),
	             E_STATE);
	cr_assert(strstr(store_errmsg(st), "already ended") != NULL);
	cr_assert_eq(store_put_audit(st, "s", 1, NULL), 0);
	cr_assert_eq(query_int("SELECT consistent FROM snapshots"), 1);
	store_close(st);
}

Test(store, bad_arguments_are_einval)
{
	struct store *st = open_store();
	char longid[STORE_ID_MAX + 2];
	struct store_channel ch = {"p1", "p0", 0, UINT64_MAX, 0, 0, 0, 1};

	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	cr_assert_eq(store_snapshot_create(st, longid, "p0", 1, 1, 1),
	             E_INVAL);
	longid[STORE_ID_MAX] = '\0';
	cr_assert_eq(store_snapshot_create(st, longid, "p0", 1, 1, 1), 0);
	cr_assert_eq(store_snapshot_create(st, "", "p0", 1, 1, 1),
	             E_INVAL);
	cr_assert_eq(store_snapshot_create(st, "a\xff", "p0", 1, 1, 1),
	             E_INVAL);
	cr_assert_eq(store_snapshot_create(st, "a", NULL, 1, 1, 1),
	             E_INVAL);
	cr_assert_eq(store_put_message(st, longid, "p1", "p0",
	                               (uint64_t)INT64_MAX + 1, "text/plain",
	                               "x", 1),
	             E_INVAL);
	cr_assert_eq(store_put_message(st, longid, "p1", "p0", 1, "", "x", 1),
	             E_INVAL);
	cr_assert_eq(
	    store_put_message(st, longid, "p1", "p0", 1, "text/plain", NULL, 1),
	    E_INVAL);
	cr_assert_eq(store_put_message(st, longid, "p1", "p0", 1,
	                               "application/json", NULL, 1),
	             E_INVAL);
	cr_assert_eq(store_put_message(st, longid, "p1", "p0", 1, NULL, "x", 1),
	             E_INVAL);
	cr_assert_eq(store_put_channel(st, longid, &ch), E_INVAL);
	cr_assert_eq(store_put_channel(st, longid, NULL), E_INVAL);
	cr_assert_eq(query_int("SELECT count(*) FROM channel_messages"), 0);
	store_close(st);
}

Test(store, summary_view_counts)
{
	struct store *st = open_store();
	struct store_channel ch = {"p1", "p0", 0, 2, 2, 1, 2, 1};
	struct store_snapshot snap;
	char buf[64];

	cr_assert_eq(
	    store_snapshot_create(st, "p0-1", "p0", 1, 1700000000123, 3), 0);
	cr_assert_eq(store_put_state(st, "p0-1", "p0", "application/json",
	                             "{\"balance\": 10}", 15, 1700000000200),
	             0);
	cr_assert_eq(store_put_state(st, "p0-1", "p1", "application/json",
	                             "{\"balance\": 14}", 15, 1700000000200),
	             0);
	cr_assert_eq(store_put_state(st, "p0-1", "p2", "application/json",
	                             "{\"balance\": 12}", 15, 1700000000200),
	             0);
	cr_assert_eq(store_put_channel(st, "p0-1", &ch), 0);
	ch.src = "p2";
	cr_assert_eq(store_put_channel(st, "p0-1", &ch), 0);
	put_json_message(st, "p0-1", "p1", "p0", 1, "{\"amount\": 5}");
	put_json_message(st, "p0-1", "p1", "p0", 2, "{\"amount\": 3}");
	cr_assert_eq(
	    store_finish(st, "p0-1", STORE_COMPLETE, NULL, 1700000001123), 0);
	cr_assert_eq(query_int("SELECT nodes_recorded * 10000"
	                       " + channels_recorded * 100 + in_transit"
	                       " FROM snapshot_summary WHERE id = 'p0-1'"),
	             30202);
	cr_assert_eq(query_int("SELECT duration_ms FROM snapshot_summary"),
	             1000);
	cr_assert_str_eq(query_text("SELECT started_at || ' ' || finished_at"
	                            " FROM snapshot_summary",
	                            buf, sizeof(buf)),
	                 "2023-11-14T22:13:20.123Z 2023-11-14T22:13:21.123Z");
	cr_assert_str_eq(query_text("SELECT consistent FROM snapshot_summary",
	                            buf, sizeof(buf)),
	                 "NULL");
	/* The conservation query of the README. */
	cr_assert_eq(
	    query_int(
	        "SELECT (SELECT sum(json_extract(state, '$.balance'))"
	        " FROM recorded_states WHERE snapshot_id = 'p0-1' AND is_json)"
	        " + (SELECT coalesce(sum(json_extract(payload,"
	        " '$.amount')), 0) FROM in_transit"
	        " WHERE snapshot_id = 'p0-1' AND is_json) AS total"),
	    44);
	cr_assert_eq(store_get(st, "p0-1", &snap), 0);
	cr_assert_eq(snap.parts, 3);
	cr_assert_eq(snap.channels, 2);
	cr_assert_eq(snap.messages, 2);
	store_close(st);
}

Test(store, reader_works_during_write_batch)
{
	struct store *st = open_store();
	sqlite3 *db;
	sqlite3_stmt *s;

	create(st, "a", 1);
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM snapshots",
	                                -1, &s, NULL),
	             SQLITE_OK);

	cr_assert_eq(store_begin(st), 0);
	cr_assert_eq(store_begin(st), E_STATE);
	create(st, "b", 2);
	/* The write transaction is open: the reader sees the last commit
	 * at once, without waiting for the writer. */
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	cr_assert_eq(sqlite3_column_int(s, 0), 1);
	/* With the reader's transaction still open, the writer commits. */
	cr_assert_eq(store_commit(st), 0, "%s", store_errmsg(st));
	cr_assert_eq(sqlite3_reset(s), SQLITE_OK);
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	cr_assert_eq(sqlite3_column_int(s, 0), 2);
	sqlite3_finalize(s);
	sqlite3_close(db);
	cr_assert_eq(store_commit(st), E_STATE);
	store_close(st);
}

Test(store, rollback_and_abort_unfinished)
{
	struct store *st = open_store();
	struct store_snapshot snap;
	uint32_t n = 99;

	cr_assert_eq(store_rollback(st), 0);
	cr_assert_eq(store_begin(st), 0);
	create(st, "lost", 1);
	cr_assert_eq(store_rollback(st), 0);
	cr_assert_eq(store_get(st, "lost", &snap), E_NOENT);

	create(st, "a", 1);
	create(st, "b", 2);
	create(st, "c", 3);
	cr_assert_eq(store_finish(st, "c", STORE_COMPLETE, NULL, 4), 0);
	cr_assert_eq(store_abort_unfinished(st, "daemon restarted", 5, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(store_get(st, "a", &snap), 0);
	cr_assert_eq(snap.status, STORE_ABORTED);
	cr_assert_str_eq(snap.reason, "daemon restarted");
	cr_assert_eq(snap.finished_ms, 5);
	cr_assert_eq(store_get(st, "c", &snap), 0);
	cr_assert_eq(snap.status, STORE_COMPLETE);
	cr_assert_eq(store_abort_unfinished(st, "again", 6, NULL), 0);
	store_close(st);
}

Test(store, long_reasons_are_cut_at_a_character)
{
	struct store *st = open_store();
	struct store_snapshot snap;
	char reason[1024];
	size_t i;

	for (i = 0; i + 2 < sizeof(reason); i += 2)
		memcpy(reason + i, "\xc3\xa9", 2); /* U+00E9 */
	reason[i] = '\0';
	create(st, "s", 1);
	cr_assert_eq(store_finish(st, "s", STORE_ABORTED, reason, 2), 0);
	cr_assert_eq(store_get(st, "s", &snap), 0);
	cr_assert_eq(strlen(snap.reason), 510);
	cr_assert_eq(memcmp(snap.reason, reason, 510), 0);
	store_close(st);
}

Test(store, errmsg_of_no_store)
{
	cr_assert_str_eq(store_errmsg(NULL), "");
}

/* The mode of path plus suffix, or -1 if it does not exist. */
static int
mode_of(const char *suffix)
{
	char name[160];
	struct stat sb;

	snprintf(name, sizeof(name), "%s%s", path, suffix);
	return stat(name, &sb) == 0 ? (int)(sb.st_mode & 07777) : -1;
}

/* Opens the store under umask mask, writes one snapshot so that the WAL
 * and its index exist, and checks the three files are 0640. */
static void
check_modes_under(mode_t mask)
{
	mode_t old = umask(mask);
	struct store *st = open_store();

	umask(old);
	cr_assert_eq(store_begin(st), 0);
	cr_assert_eq(store_snapshot_create(st, "p0:1", "p0", 1, 1000, 1), 0);
	cr_assert_eq(store_commit(st), 0);
	cr_assert_eq(mode_of(""), 0640, "db %o", mode_of(""));
	cr_assert_eq(mode_of("-wal"), 0640, "wal %o", mode_of("-wal"));
	cr_assert_eq(mode_of("-shm"), 0640, "shm %o", mode_of("-shm"));
	store_close(st);
}

Test(store, files_are_0640_whatever_the_umask)
{
	check_modes_under(022);
	teardown();
	setup();
	check_modes_under(0);
}

Test(store, wider_files_are_narrowed_tighter_kept)
{
	char name[160];
	struct store *st;
	FILE *f;

	st = open_store();
	store_close(st);
	cr_assert_eq(chmod(path, 0666), 0);
	snprintf(name, sizeof(name), "%s-shm", path);
	cr_assert_not_null(f = fopen(name, "w"));
	fclose(f);
	cr_assert_eq(chmod(name, 0666), 0);
	st = open_store();
	cr_assert_eq(mode_of(""), 0640);
	cr_assert_eq(mode_of("-shm"), 0640);
	store_close(st);
	/* A file tighter than 0640 stays as it is. */
	cr_assert_eq(chmod(path, 0600), 0);
	st = open_store();
	cr_assert_eq(mode_of(""), 0600);
	store_close(st);
}

Test(store, symlinked_database_is_refused)
{
	char target[160];
	struct store *st = NULL;

	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(store_open(path, &st, NULL, 0), E_IO);
	cr_assert_null(st);
	cr_assert_eq(access(target, F_OK), -1);
}
/* The wall clock in Unix milliseconds. */
static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t
next_id(struct store *st, int64_t now_ms, uint64_t floor)
{
	uint64_t k = 0;

	cr_assert_eq(store_next_id(st, "p0", now_ms, floor, &k), 0, "%s",
	             store_errmsg(st));
	return k;
}

Test(store, ids_are_never_reused_after_delete_and_reopen)
{
	int64_t before = wall_ms();
	struct store *st = open_store();
	uint64_t k1, k2, k3;
	char id[80];

	/* A fresh database starts at the wall clock, above any id a lost
	 * one could have issued before now. */
	k1 = next_id(st, 0, 0);
	cr_assert_geq(k1, (uint64_t)before, "%llu", (unsigned long long)k1);
	snprintf(id, sizeof(id), "p0:%llu", (unsigned long long)k1);
	create(st, id, 1);
	k2 = next_id(st, 0, 0);
	cr_assert_eq(k2, k1 + 1);
	snprintf(id, sizeof(id), "p0:%llu", (unsigned long long)k2);
	create(st, id, 2);
	cr_assert_eq(store_delete(st, id), 0);
	store_close(st);
	st = open_store();
	k3 = next_id(st, 0, 0);
	cr_assert_eq(k3, k2 + 1, "deleting the newest id took it back");
	cr_assert_eq(query_int("SELECT value FROM meta"
	                       " WHERE key = 'last_snapshot'"),
	             (int64_t)k3);
	store_close(st);
}

Test(store, next_id_follows_clock_floor_and_stored_ids)
{
	struct store *st = open_store();
	uint64_t k = next_id(st, 0, 0), big = k + 1000000;
	char id[80];

	cr_assert_eq(next_id(st, (int64_t)(k + 5000), 0), k + 5000);
	cr_assert_eq(next_id(st, 0, k + 9000), k + 9000, "floor");
	/* A row with a higher id (restored, or written by hand) wins. */
	snprintf(id, sizeof(id), "p0:%llu", (unsigned long long)big);
	create(st, id, 1);
	cr_assert_eq(next_id(st, 0, 0), big + 1);
	/* Other nodes' ids do not count. */
	cr_assert_eq(
	    store_snapshot_create(st, "p1:99999999999999", "p1", 0, 1, 3), 0);
	cr_assert_eq(next_id(st, 0, 0), big + 2);
	cr_assert_eq(store_next_id(st, "", 0, 0, &k), E_INVAL);
	store_close(st);
}

Test(store, rolled_back_id_is_not_issued_again_with_the_floor)
{
	struct store *st = open_store();
	uint64_t k;

	cr_assert_eq(store_begin(st), 0);
	k = next_id(st, 0, 0);
	cr_assert_eq(store_rollback(st), 0);
	/* The counter went back with the batch; the daemon's floor keeps
	 * the id it had already handed out from coming back. */
	cr_assert_eq(next_id(st, 0, k + 1), k + 1);
	store_close(st);
}

Test(store, migration_from_version_1_starts_the_counter_above_all)
{
	struct store *st = open_store();
	int64_t before;

	store_close(st);
	/* What a version 1 database looked like: no meta table. */
	exec_sql("DROP TABLE meta; PRAGMA user_version = 1;"
	         "INSERT INTO snapshots (id, initiator, role, started_ms,"
	         " parts_expected) VALUES ('p0:3', 'p0', 'initiator', 1, 3),"
	         " ('p1:99999999999999', 'p1', 'participant', 1, 3)");
	before = wall_ms();
	st = open_store();
	cr_assert_eq(query_int("PRAGMA user_version"), 3);
	cr_assert_geq(query_int("SELECT value FROM meta"
	                        " WHERE key = 'last_snapshot'"),
	              before, "below the clock");
	store_close(st);
	exec_sql("DELETE FROM meta; PRAGMA user_version = 1; DROP TABLE meta;"
	         "INSERT INTO snapshots (id, initiator, role, started_ms,"
	         " parts_expected) VALUES ('p0:99999999999999', 'p0',"
	         " 'initiator', 1, 3)");
	st = open_store();
	cr_assert_eq(query_int("SELECT value FROM meta"
	                       " WHERE key = 'last_snapshot'"),
	             99999999999999LL, "below the highest id");
	cr_assert_eq(next_id(st, 0, 0), 100000000000000ULL);
	cr_assert_eq(query_int("SELECT count(*) FROM snapshots"), 3,
	             "the migration lost rows");
	store_close(st);
}

Test(store, damaged_page_is_refused_at_open)
{
	struct store *st = open_store();
	char id[32], err[512] = "", junk[4096], header[100], now[100];
	struct store *st2 = NULL;
	FILE *f;
	int i;

	for (i = 0; i < 200; i++) {
		snprintf(id, sizeof(id), "p0:%d", i + 1);
		create(st, id, i);
		put_json_message(st, id, "p1", "p0", 1, "{\"amount\": 1}");
	}
	store_close(st); /* checkpoints: the WAL goes */
	cr_assert_gt(query_int("PRAGMA page_count"), 4);
	cr_assert_not_null(f = fopen(path, "r+b"));
	cr_assert_eq(fread(header, 1, sizeof(header), f), sizeof(header));
	memset(junk, 0x5a, sizeof(junk));
	cr_assert_eq(fseek(f, 4096 * 2, SEEK_SET), 0); /* page 3 */
	cr_assert_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
	cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
	cr_assert_eq(fread(now, 1, sizeof(now), f), sizeof(now));
	fclose(f);
	cr_assert_eq(memcmp(header, now, sizeof(header)), 0);
	cr_assert_eq(store_open(path, &st2, err, sizeof(err)), E_CORRUPT,
	             "%s", err);
	cr_assert_null(st2);
	cr_assert(strstr(err, path) != NULL, "%s", err);
	cr_assert(strstr(err, "quick_check") != NULL ||
	              strstr(err, "malformed") != NULL,
	          "%s", err);
}

/* Caps every new connection's database size while set: a full disk
 * without a small file system. */
static int max_pages;

static int
cap_pages(sqlite3 *db, char **errmsg, const void *api)
{
	char sql[64];

	(void)errmsg;
	(void)api;
	if (max_pages > 0) {
		snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %d",
		         max_pages);
		sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	return SQLITE_OK;
}

Test(store, full_database_fails_then_abort_is_written_again)
{
	static char big[60000];
	struct store_snapshot snap;
	struct store *st;
	int rv = 0, i;

	memset(big, 'x', sizeof(big));
	max_pages = 40;
	sqlite3_auto_extension((void (*)(void))cap_pages);
	st = open_store();
	cr_assert_eq(store_begin(st), 0);
	create(st, "p0:1", 1);
	for (i = 0; i < 20 && rv == 0; i++)
		rv = store_put_message(st, "p0:1", "p1", "p0", (uint64_t)i + 1,
		                       "application/octet-stream", big,
		                       sizeof(big));
	cr_assert_eq(rv, E_IO, "%d: %s", rv, store_errmsg(st));
	cr_assert(strstr(store_errmsg(st), "full") != NULL, "%s",
	          store_errmsg(st));
	/* The daemon rolls the batch back whatever the commit says. */
	store_commit(st);
	cr_assert_eq(store_rollback(st), 0);
	cr_assert_eq(store_get(st, "p0:1", &snap), E_NOENT);
	/* The abort is written again, creating the row the batch lost. */
	cr_assert_eq(store_begin(st), 0);
	cr_assert_eq(store_abort_snapshot(st, "p0:1", "p0", 1, 11, 3,
	                                  "p0: storage: database or disk is "
	                                  "full",
	                                  12),
	             0, "%s", store_errmsg(st));
	cr_assert_eq(store_probe(st, 13), 0);
	cr_assert_eq(store_commit(st), 0, "%s", store_errmsg(st));
	store_close(st);
	max_pages = 0;
	st = open_store();
	cr_assert_eq(store_get(st, "p0:1", &snap), 0);
	cr_assert_eq(snap.status, STORE_ABORTED);
	cr_assert_str_eq(snap.reason, "p0: storage: database or disk is full");
	cr_assert_eq(snap.started_ms, 11);
	cr_assert_eq(snap.finished_ms, 12);
	cr_assert_eq(snap.is_initiator, 1);
	cr_assert_eq(snap.messages, 0);
	cr_assert_eq(query_int("SELECT value FROM meta WHERE key = 'probe'"),
	             13);
	store_close(st);
	sqlite3_reset_auto_extension();
}

Test(store, abort_snapshot_ends_only_unfinished_ones)
{
	struct store *st = open_store();
	struct store_snapshot snap;

	create(st, "a", 1);
	create(st, "c", 1);
	cr_assert_eq(store_finish(st, "c", STORE_COMPLETE, NULL, 2), 0);
	cr_assert_eq(store_abort_snapshot(st, "a", "p0", 1, 99, 3, "why", 3),
	             0);
	cr_assert_eq(store_get(st, "a", &snap), 0);
	cr_assert_eq(snap.status, STORE_ABORTED);
	cr_assert_str_eq(snap.reason, "why");
	cr_assert_eq(snap.started_ms, 1, "an existing row keeps its start");
	cr_assert_eq(store_abort_snapshot(st, "a", "p0", 1, 1, 3, "again", 4),
	             E_STATE);
	cr_assert_eq(store_abort_snapshot(st, "c", "p0", 1, 1, 3, "late", 4),
	             E_STATE);
	cr_assert_eq(store_get(st, "c", &snap), 0);
	cr_assert_eq(snap.status, STORE_COMPLETE);
	store_close(st);
}

Test(store, checkpoint_truncates_the_wal)
{
	struct store *st = open_store();
	char wal[160];
	struct stat sb;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	create(st, "a", 1);
	cr_assert_eq(stat(wal, &sb), 0);
	cr_assert_gt(sb.st_size, 0);
	cr_assert_eq(store_begin(st), 0);
	cr_assert_eq(store_checkpoint(st), E_STATE);
	cr_assert_eq(store_rollback(st), 0);
	cr_assert_eq(store_checkpoint(st), 0, "%s", store_errmsg(st));
	cr_assert_eq(stat(wal, &sb), 0);
	cr_assert_eq(sb.st_size, 0);
	cr_assert_eq(query_int("SELECT count(*) FROM snapshots"), 1);
	store_close(st);
}

Test(store, batch_that_cannot_begin_takes_no_writes, .timeout = 30)
{
	struct store *st = open_store();
	struct store_snapshot snap;
	sqlite3 *db;

	/* Another connection holds the write lock past the busy timeout. */
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL),
	             SQLITE_OK);
	cr_assert_eq(store_begin(st), E_BUSY);
	cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	/* The lock is gone, yet the lost batch's writes do not land one by
	 * one outside a transaction. */
	cr_assert_eq(store_snapshot_create(st, "a", "p0", 1, 1, 3), E_IO);
	cr_assert(strstr(store_errmsg(st), "rolled back") != NULL, "%s",
	          store_errmsg(st));
	cr_assert_eq(store_commit(st), E_IO);
	cr_assert_eq(store_rollback(st), 0);
	cr_assert_eq(store_get(st, "a", &snap), E_NOENT);
	cr_assert_eq(store_begin(st), 0);
	create(st, "a", 1);
	cr_assert_eq(store_commit(st), 0);
	cr_assert_eq(store_get(st, "a", &snap), 0);
	store_close(st);
}

/* cutlab sim opens one database per node in memory: no WAL there, and
 * each ":memory:" is a database of its own that works as a file does. */
Test(store, in_memory_databases_work_and_are_separate)
{
	struct store *a = NULL, *b = NULL;
	struct store_snapshot row;
	char err[256] = "";
	uint64_t k = 0;

	cr_assert_eq(store_open(":memory:", &a, err, sizeof(err)), 0, "%s",
	             err);
	cr_assert_eq(store_open(":memory:", &b, err, sizeof(err)), 0, "%s",
	             err);
	cr_assert_eq(store_begin(a), 0);
	cr_assert_eq(store_next_id(a, "p0", 4102444800000LL, 0, &k), 0);
	cr_assert_eq(k, 4102444800000ULL);
	cr_assert_eq(store_snapshot_create(a, "p0:1", "p0", 1, 1, 2), 0);
	cr_assert_eq(store_commit(a), 0);
	cr_assert_eq(store_checkpoint(a), 0, "%s", store_errmsg(a));
	cr_assert_eq(store_get(a, "p0:1", &row), 0);
	cr_assert_eq(row.status, STORE_IN_PROGRESS);
	cr_assert_eq(store_get(b, "p0:1", &row), E_NOENT);
	/* A rolled-back batch leaves nothing behind, as on disk. */
	cr_assert_eq(store_begin(a), 0);
	cr_assert_eq(store_snapshot_create(a, "p0:2", "p0", 1, 1, 2), 0);
	cr_assert_eq(store_rollback(a), 0);
	cr_assert_eq(store_get(a, "p0:2", &row), E_NOENT);
	store_close(a);
	store_close(b);
}

static int
collect_condition(const char *name, int held, const char *detail, void *arg)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%s=%d:%s;", name, held, detail);
	return 0;
}

/* snapshot_conditions: made on every open if missing (a database that
 * lost it gains it back; one that has it keeps its rows), replaced by
 * name, and deleted with its snapshot. */
Test(store, conditions_table)
{
	struct store *st = open_store();
	char out[256] = "";
	int64_t n = 0;

	cr_assert_eq(store_snapshot_create(st, "p0:1", "p0", 1, 1, 1), 0);
	cr_assert_eq(store_put_condition(st, "p0:1", "idle", 0, "0|3", 5), 0);
	cr_assert_eq(store_put_condition(st, "p0:1", "idle", 1, "1|3", 6), 0);
	cr_assert_eq(store_put_condition(st, "p0:1", "bank", -1,
	                                 "the condition failed: x", 6), 0);
	cr_assert_eq(store_put_condition(st, "p0:9", "idle", 1, "", 6),
	             E_NOENT);
	cr_assert_eq(store_put_condition(st, "p0:1", "idle", 2, "", 6),
	             E_INVAL);
	cr_assert_eq(store_foreach_condition(st, "p0:1", collect_condition,
	                                     out), 0);
	cr_assert_str_eq(out, "bank=-1:the condition failed: x;idle=1:1|3;");
	store_close(st);
	/* Opened again: the rows stay. */
	st = open_store();
	out[0] = '\0';
	store_foreach_condition(st, "p0:1", collect_condition, out);
	cr_assert_str_eq(out, "bank=-1:the condition failed: x;idle=1:1|3;");
	store_close(st);
	/* A database without the table (as an older cutd left it) gains it. */
	query("DROP TABLE snapshot_conditions", NULL, NULL, 0);
	st = open_store();
	cr_assert_eq(query("SELECT count(*) FROM snapshot_conditions", &n,
	                   NULL, 0), 1);
	cr_assert_eq(n, 0);
	cr_assert_eq(store_put_condition(st, "p0:1", "idle", 1, "", 7), 0);
	cr_assert_eq(store_delete(st, "p0:1"), 0);
	cr_assert_eq(query("SELECT count(*) FROM snapshot_conditions", &n,
	                   NULL, 0), 1);
	cr_assert_eq(n, 0);
	store_close(st);
}

/* ---- Schema 3: outcomes, keep, pending deletions, retention ---- */

Test(store, migration_2_to_3_is_idempotent)
{
	struct store *st = open_store();
	struct store_snapshot snap;

	create(st, "p0:1", 10);
	store_close(st);
	cr_assert_eq(query_int("PRAGMA auto_vacuum"), 2, "incremental");
	/* A file whose step ran, half or whole, but says version 2 (another
	 * branch's step, or by hand): the step runs again harmlessly. */
	exec_sql("PRAGMA user_version = 2");
	st = open_store();
	cr_assert_eq(query_int("PRAGMA user_version"), 3);
	cr_assert_eq(store_get(st, "p0:1", &snap), 0);
	cr_assert_eq(snap.keep, 0);
	cr_assert_eq(snap.outcome_ms, 0);
	store_close(st);
	/* A real version 2 file: no new columns, no forget_pending. */
	exec_sql("DROP VIEW snapshot_summary; DROP TABLE forget_pending;"
	         "ALTER TABLE snapshots DROP COLUMN keep;"
	         "ALTER TABLE snapshots DROP COLUMN part_status;"
	         "ALTER TABLE snapshots DROP COLUMN outcome_ms;"
	         "ALTER TABLE snapshots DROP COLUMN outcome_parts;"
	         "CREATE VIEW snapshot_summary AS SELECT id FROM snapshots;"
	         "PRAGMA user_version = 2");
	st = open_store();
	cr_assert_eq(query_int("SELECT count(*) FROM pragma_table_info("
	                       "'snapshots') WHERE name IN ('keep',"
	                       " 'part_status', 'outcome_ms',"
	                       " 'outcome_parts')"),
	             4);
	cr_assert_eq(query_int("SELECT count(*) FROM forget_pending"), 0);
	cr_assert_eq(store_set_keep(st, "p0:1", 1), 0, "%s", store_errmsg(st));
	cr_assert_eq(query_int("SELECT keep FROM snapshot_summary"), 1);
	store_close(st);
}

Test(store, participant_takes_the_outcome)
{
	struct store *st = open_store();
	struct store_snapshot snap;

	cr_assert_eq(store_snapshot_create(st, "p1:5", "p1", 0, 10, 3), 0);
	cr_assert_eq(store_finish(st, "p1:5", STORE_COMPLETE, NULL, 20), 0);
	cr_assert_eq(store_get(st, "p1:5", &snap), 0);
	cr_assert_eq(snap.outcome_ms, 0);
	cr_assert_eq(snap.part_status, STORE_IN_PROGRESS);
	cr_assert_eq(store_set_outcome(st, "p1:5", STORE_COMPLETE, "", 1, NULL,
	                               3, 30),
	             0, "%s", store_errmsg(st));
	cr_assert_eq(store_get(st, "p1:5", &snap), 0);
	cr_assert_eq(snap.status, STORE_COMPLETE);
	cr_assert_eq(snap.part_status, STORE_COMPLETE);
	cr_assert_eq(snap.consistent, 1);
	cr_assert_eq(snap.outcome_ms, 30);
	cr_assert_eq(snap.outcome_parts, 3);
	/* An abort after all (a lost batch at the initiator) replaces it;
	 * the part's own end stays. */
	cr_assert_eq(store_set_outcome(st, "p1:5", STORE_ABORTED,
	                               "p1: storage: disk full", -1, NULL, 3,
	                               40),
	             0);
	cr_assert_eq(store_get(st, "p1:5", &snap), 0);
	cr_assert_eq(snap.status, STORE_ABORTED);
	cr_assert_str_eq(snap.reason, "p1: storage: disk full");
	cr_assert_eq(snap.consistent, -1);
	cr_assert_eq(snap.part_status, STORE_COMPLETE);
	/* Never on the initiator's own row, never for an unknown one. */
	create(st, "p0:1", 10);
	cr_assert_eq(store_set_outcome(st, "p0:1", STORE_COMPLETE, "", 1, NULL,
	                               3, 30),
	             E_STATE);
	cr_assert_eq(store_set_outcome(st, "p1:6", STORE_COMPLETE, "", 1, NULL,
	                               3, 30),
	             E_NOENT);
	cr_assert_eq(store_set_outcome(st, "p1:5", STORE_IN_PROGRESS, "", 1,
	                               NULL, 3, 30),
	             E_INVAL);
	store_close(st);
}

static int
count_forget(const char *node, const char *id, void *arg)
{
	(void)node;
	(void)id;
	(*(int *)arg)++;
	return 0;
}

struct retained {
	char ids[8][32];
	int complete[8], keep[8];
	int n;
};

static int
note_retained(const char *id, int complete, int keep, int64_t ended,
              void *arg)
{
	struct retained *r = arg;

	(void)ended;
	snprintf(r->ids[r->n], sizeof(r->ids[0]), "%s", id);
	r->complete[r->n] = complete;
	r->keep[r->n++] = keep;
	return 0;
}

Test(store, pending_deletions_and_retention_list)
{
	struct store *st = open_store();
	struct retained r = {0};
	uint64_t n = 9;
	int k = 0;

	cr_assert_eq(store_forget_add(st, "p1", "p0:1", 5), 0);
	cr_assert_eq(store_forget_add(st, "p1", "p0:1", 6), 0, "idempotent");
	cr_assert_eq(store_forget_add(st, "p2", "p0:1", 5), 0);
	cr_assert_eq(store_forget_count(st, "p1", &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(store_forget_foreach(st, count_forget, &k), 0);
	cr_assert_eq(k, 2);
	cr_assert_eq(store_forget_done(st, "p1", "p0:1"), 0);
	cr_assert_eq(store_forget_count(st, "p1", &n), 0);
	cr_assert_eq(n, 0);
	create(st, "p0:1", 10);
	create(st, "p0:2", 20);
	create(st, "p0:3", 30); /* in progress: not listed */
	cr_assert_eq(store_snapshot_create(st, "p1:4", "p1", 0, 40, 3), 0);
	cr_assert_eq(store_finish(st, "p1:4", STORE_COMPLETE, NULL, 41), 0);
	cr_assert_eq(store_finish(st, "p0:1", STORE_COMPLETE, NULL, 11), 0);
	cr_assert_eq(store_finish(st, "p0:2", STORE_ABORTED, "x", 21), 0);
	cr_assert_eq(store_set_keep(st, "p0:1", 1), 0);
	cr_assert_eq(store_set_keep(st, "p0:9", 1), E_NOENT);
	cr_assert_eq(store_retain_foreach(st, note_retained, &r), 0);
	cr_assert_eq(r.n, 2);
	cr_assert_str_eq(r.ids[0], "p0:2");
	cr_assert_eq(r.complete[0], 0);
	cr_assert_str_eq(r.ids[1], "p0:1");
	cr_assert_eq(r.complete[1], 1);
	cr_assert_eq(r.keep[1], 1);
	cr_assert_eq(store_delete(st, "p0:2"), 0);
	cr_assert_eq(store_reclaim(st), 0, "%s", store_errmsg(st));
	store_close(st);
}
