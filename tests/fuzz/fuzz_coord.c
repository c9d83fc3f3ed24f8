/*
 * fuzz_coord.c - a coordinator on a real store; see fuzz_coord.h.
 */
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_coord.h"
#include "log.h"
#include "store.h"

/* Built once per process: parsing the file and opening SQLite for every
 * input would cost more than the input. */
static struct config *cfg;
static struct store *store;
static struct store_port_ops ops; /* the store's, but for the batch */
static char dir[] = "/tmp/cutd-fuzz.XXXXXX";

void
fuzz_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* At exit: the store, the configuration and the temporary directory go. */
static void
teardown(void)
{
	static const char *const files[] = {"cluster.ini", "p0.db", "p0.db-wal",
	                                    "p0.db-shm"};
	char path[128];

	store_close(store);
	config_free(cfg);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* The input's batch is the store's one batch, opened and rolled back by
 * the harness: the coordinator's begin, commit and rollback only mark
 * points in it. */
static int
in_batch(void *db)
{
	(void)db;
	return 0;
}

/* Sets the store's id counter back to 0 (on a connection of its own, as
 * the sqlite3 shell would), so that ids follow the simulated wall clock,
 * which starts at 1 ms, rather than the real one the schema's migration
 * started the counter from. */
static void
reset_counter(const char *db)
{
	sqlite3 *s;
	char *err = NULL;

	if (sqlite3_open(db, &s) != SQLITE_OK ||
	    sqlite3_exec(s,
	                 "UPDATE meta SET value = 0 "
	                 "WHERE key = 'last_snapshot'",
	                 NULL, NULL, &err) != SQLITE_OK)
		fuzz_die("cannot reset the id counter: %s",
		         err ? err : sqlite3_errmsg(s));
	sqlite3_close(s);
}

static void
setup(void)
{
	char path[128], db[128];
	char err[256], *errors = NULL;
	FILE *f;

	if (mkdtemp(dir) == NULL)
		fuzz_die("mkdtemp");
	atexit(teardown);
	snprintf(path, sizeof(path), "%s/cluster.ini", dir);
	snprintf(db, sizeof(db), "%s/p0.db", dir);
	if ((f = fopen(path, "w")) == NULL)
		fuzz_die("cannot write the cluster file");
	/* p0's control endpoint is TCP and fully open, so that Start and
	 * Delete pass perm.c's real check in the control harness (a request
	 * made up by a harness has no IPC credentials). */
	fprintf(f,
	        "[cluster]\nname = fuzz\nrun_dir = %s\nstate_dir = %s\n"
	        "window = 65536\napp_window = 65536\nmessage_cost = 16\n"
	        "max_message = 4096\ntcp_control = full\n"
	        "[node p0]\npeer = tcp://127.0.0.1:1\n"
	        "control = tcp://127.0.0.1:4\n"
	        "[node p1]\npeer = tcp://127.0.0.1:2\n"
	        "[node p2]\npeer = tcp://127.0.0.1:3\n",
	        dir, dir);
	fclose(f);
	if (config_load(path, &cfg, &errors) != 0)
		fuzz_die("%s", errors != NULL ? errors : "config_load");
	if (store_open(db, &store, err, sizeof(err)) != 0)
		fuzz_die("%s", err);
	reset_counter(db);
	ops = *store_port(store).ops;
	ops.begin = ops.commit = ops.rollback = in_batch;
	/* The harnesses feed bad frames by the million: no logs, unless
	 * CUT_FUZZ_LOG is set (to replay one input). */
	log_init(getenv("CUT_FUZZ_LOG") != NULL ? LOG_DEBUG : -1);
}

struct config *
fuzz_config(void)
{
	if (cfg == NULL)
		setup();
	return cfg;
}

struct store *
fuzz_store(void)
{
	if (cfg == NULL)
		setup();
	return store;
}

/* p1's first three messages to p0, on link items 1 to 3. */
static void
three_messages(struct fuzz_coord *f)
{
	static const char amount[] = "{\"amount\": 1}";
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT;
	Cut__V1__PeerItem it[3], *items[3];
	Cut__V1__PeerData dt[3];

	for (size_t k = 0; k < 3; k++) {
		cut__v1__peer_item__init(&it[k]);
		cut__v1__peer_data__init(&dt[k]);
		dt[k].seq = dt[k].app_seq = k + 1;
		dt[k].content_type = "application/json";
		dt[k].payload.data = (uint8_t *)amount;
		dt[k].payload.len = sizeof(amount) - 1;
		it[k].item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
		it[k].data = &dt[k];
		items[k] = &it[k];
	}
	b.cluster = "fuzz";
	b.from = "p1";
	b.to = "p0";
	b.has_epoch = b.has_to_epoch = 1;
	b.epoch = FUZZ_P1_EPOCH;
	b.to_epoch = FUZZ_EPOCH;
	b.items = items;
	b.n_items = 3;
	coord_peer_input(f->c, FUZZ_PEER_CONN, &b);
}

struct fuzz_coord *
fuzz_coord_new(void)
{
	struct fuzz_coord *f;
	struct errinfo e = {0};
	char id[ENGINE_ID_MAX + 1];
	struct timespec ts;

	if (cfg == NULL)
		setup();
	if ((f = calloc(1, sizeof(*f))) == NULL)
		fuzz_die("out of memory");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	f->now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	f->wall = 1;
	cutproto_arena_init(&f->arena);
	if (store_begin(store) != 0)
		fuzz_die("store_begin: %s", store_errmsg(store));
	if (coord_new(cfg, 0, FUZZ_EPOCH, (struct store_port){&ops, store},
	              f->now, f->wall, &f->c, &e) != 0)
		fuzz_die("coord_new: %s", e.text);
	three_messages(f);
	coord_peer_up(f->c, 1);
	coord_peer_up(f->c, 2);
	if (coord_start(f->c, 0, id, &e) != 0)
		fuzz_die("coord_start: %s", e.text);
	if (strcmp(id, "p0:1") != 0)
		fuzz_die("the snapshot is %s, not p0:1", id);
	fuzz_coord_turn(f);
	return f;
}

void
fuzz_coord_free(struct fuzz_coord *f)
{
	coord_stop(f->c, "fuzz input done");
	coord_commit(f->c);
	coord_free(f->c);
	store_rollback(store);
	cutproto_arena_fini(&f->arena);
	free(f);
}

void
fuzz_coord_peer(struct fuzz_coord *f, const uint8_t *data, size_t len)
{
	Cut__V1__PeerBatch *b = (Cut__V1__PeerBatch *)cutproto_unpack_arena(
	    &cut__v1__peer_batch__descriptor, len, data, &f->arena);

	if (b == NULL)
		coord_peer_bad(f->c, "?", "batch does not decode");
	else
		coord_peer_input(f->c, FUZZ_PEER_CONN, b);
	cutproto_arena_reset(&f->arena);
}

void
fuzz_coord_app(struct fuzz_coord *f, const uint8_t *data, size_t len)
{
	Cut__V1__AppBatch *b = (Cut__V1__AppBatch *)cutproto_unpack_arena(
	    &cut__v1__app_batch__descriptor, len, data, &f->arena);

	if (b == NULL)
		coord_app_bad(f->c, FUZZ_APP_CONN, "batch does not decode");
	else
		coord_app_input(f->c, FUZZ_APP_CONN, b);
	cutproto_arena_reset(&f->arena);
}

void
fuzz_coord_advance(struct fuzz_coord *f, int64_t ms)
{
	f->now += ms;
	f->wall += ms;
	coord_set_time(f->c, f->now, f->wall);
}

/* What the coordinator built must decode as libcut and the peers decode
 * it, strictly. */
static void
check_frame(const ProtobufCMessageDescriptor *desc, const uint8_t *buf,
            size_t len, const char *what)
{
	ProtobufCMessage *m = cutproto_unpack(desc, len, buf);

	if (m == NULL)
		fuzz_die("%s frame of %zu bytes does not decode", what, len);
	protobuf_c_message_free_unpacked(m, NULL);
}

static void
pull_app(struct fuzz_coord *f)
{
	uint32_t conn;
	uint8_t *buf;
	size_t len, built;

	while (coord_next_app_reply(f->c, &conn, &buf, &len)) {
		check_frame(&cut__v1__app_batch__descriptor, buf, len,
		            "application reply");
		free(buf);
	}
	/* As the shell's app_flush(): at most 64 frames a turn. */
	for (int i = 0; i < 64; i++) {
		if ((len = coord_app_frame(f->c, NULL)) == 0)
			return;
		if ((buf = malloc(len)) == NULL)
			fuzz_die("out of memory");
		if ((built = coord_app_frame(f->c, buf)) != len)
			fuzz_die("application frame measured %zu bytes, built "
			         "%zu",
			         len, built);
		check_frame(&cut__v1__app_batch__descriptor, buf, len,
		            "application");
		free(buf);
	}
}

static void
pull_peer(struct fuzz_coord *f, size_t node)
{
	uint8_t *buf;
	size_t len, built;

	/* As the shell's net_flush(): at most 64 frames a turn. */
	for (int i = 0; i < 64; i++) {
		if ((len = coord_peer_frame(f->c, node, NULL, NULL)) == 0)
			return;
		if ((buf = malloc(len)) == NULL)
			fuzz_die("out of memory");
		if ((built = coord_peer_frame(f->c, node, NULL, buf)) > len)
			fuzz_die("peer frame measured %zu bytes, built %zu", len,
			         built);
		check_frame(&cut__v1__peer_batch__descriptor, buf, built,
		            "peer");
		free(buf);
	}
}

void
fuzz_coord_turn(struct fuzz_coord *f)
{
	fuzz_coord_advance(f, FUZZ_TURN_MS);
	coord_timers(f->c);
	for (size_t v = 1; v < cfg->nnodes; v++)
		if (coord_peer_silent(f->c, v)) {
			coord_peer_redialed(f->c, v);
			coord_peer_up(f->c, v);
		}
	pull_app(f);
	coord_commit(f->c);
	if (coord_batch_open(f->c))
		return; /* busy: nothing goes to a peer before the commit */
	for (size_t v = 1; v < cfg->nnodes; v++)
		pull_peer(f, v);
}

void
fuzz_frames(const uint8_t *data, size_t len,
            void (*fn)(void *arg, const uint8_t *frame, size_t len),
            void (*turn)(void *arg), void *arg)
{
	while (len >= 2) {
		size_t n = (size_t)data[0] | (size_t)data[1] << 8;
		data += 2;
		len -= 2;
		if (n > len)
			n = len;
		fn(arg, data, n);
		turn(arg);
		data += n;
		len -= n;
	}
}
