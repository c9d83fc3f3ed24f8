/*
 * fuzz_daemon.c - a struct cutd without sockets; see fuzz_daemon.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_daemon.h"
#include "log.h"
#include "tls.h"

/* Built once per process: parsing the file and opening SQLite for every
 * input would cost more than the input. */
static struct config *cfg;
static struct store *store;
static char dir[] = "/tmp/cutd-fuzz.XXXXXX";

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

static void
die(const char *what)
{
	fprintf(stderr, "fuzz_daemon: %s\n", what);
	abort();
}

static void
setup(void)
{
	char path[128], db[128];
	char err[256], *errors = NULL;
	FILE *f;

	if (mkdtemp(dir) == NULL)
		die("mkdtemp");
	atexit(teardown);
	snprintf(path, sizeof(path), "%s/cluster.ini", dir);
	snprintf(db, sizeof(db), "%s/p0.db", dir);
	if ((f = fopen(path, "w")) == NULL)
		die("cannot write the cluster file");
	fprintf(f,
	        "[cluster]\nname = fuzz\nrun_dir = %s\nstate_dir = %s\n"
	        "window = 65536\napp_window = 65536\nmessage_cost = 16\n"
	        "max_message = 4096\n"
	        "[node p0]\npeer = tcp://127.0.0.1:1\n"
	        "[node p1]\npeer = tcp://127.0.0.1:2\n"
	        "[node p2]\npeer = tcp://127.0.0.1:3\n",
	        dir, dir);
	fclose(f);
	if (config_load(path, &cfg, &errors) != 0)
		die(errors != NULL ? errors : "config_load");
	if (store_open(db, &store, err, sizeof(err)) != 0)
		die(err);
	/* The harnesses feed bad frames by the million: no logs, unless
	 * CUT_FUZZ_LOG is set (to replay one input). */
	log_init(getenv("CUT_FUZZ_LOG") != NULL ? LOG_DEBUG : -1);
}

struct cutd *
fuzz_daemon_new(void)
{
	static const char hello[] = "{\"amount\": 1}";
	struct cutd *d;
	char id[ENGINE_ID_MAX + 1];

	if (cfg == NULL)
		setup();
	if ((d = calloc(1, sizeof(*d))) == NULL ||
	    (d->peers = calloc(cfg->nnodes, sizeof(*d->peers))) == NULL)
		die("out of memory");
	d->cfg = cfg;
	d->self = 0;
	d->name = cfg->nodes[0].name;
	for (size_t v = 0; v < cfg->nnodes; v++) {
		struct peer *p = &d->peers[v];
		p->node = v;
		p->in_chan = p->out_chan = -1;
		fifo_init(&p->inflight);
		/* No dialer to renew: there are no sockets. */
		p->dialed_ms = INT64_MAX / 2;
		if (v != d->self &&
		    (link_new(LINK_WINDOW, LINK_HOLD, &p->out) != 0 ||
		     link_new(LINK_WINDOW, LINK_HOLD, &p->in) != 0))
			die("link_new");
	}
	fifo_init(&d->down);
	cutproto_arena_init(&d->arena);
	d->epoch = FUZZ_EPOCH;
	d->start_ms = cutd_now_ms();
	d->store = store;
	{
		char err[256];
		/* A plaintext cluster: TLS admits every batch. */
		if (tls_open(cfg, d->self, &d->tls, err, sizeof(err)) != 0)
			die(err);
	}
	if (node_start(d) != 0)
		die("node_start");
	cutd_db(d);
	for (uint64_t k = 1; k <= 3; k++)
		if (node_data(d, 1, k, "application/json", hello,
		              sizeof(hello) - 1) != 0)
			die("node_data");
	if (node_initiate(d, 0, id) != 0)
		die("node_initiate");
	return d;
}

void
fuzz_daemon_free(struct cutd *d)
{
	node_stop(d, "fuzz input done");
	if (d->batch_open)
		store_rollback(d->store);
	control_free(d);
	app_free(d);
	peer_free(d);
	tls_free(d->tls);
	cutproto_arena_fini(&d->arena);
	free(d);
}

void
fuzz_turn(struct cutd *d)
{
	int64_t now = cutd_now_ms();

	node_timers(d, now);
	peer_timers(d, now);
	/* The application that said hello is the one connected: no
	 * connection of it closes here (app_gone stays 0). */
	app_flush(d);
}

/* A new nng message holding len bytes at data, from connection pipe_id
 * (0: none). */
static nng_msg *
frame(const uint8_t *data, size_t len, uint32_t pipe_id)
{
	nng_pipe pipe = NNG_PIPE_INITIALIZER;
	nng_msg *msg;

	if (nng_msg_alloc(&msg, len) != 0)
		die("out of memory");
	if (len > 0)
		memcpy(nng_msg_body(msg), data, len);
	if (pipe_id != 0) {
		pipe.id = pipe_id;
		nng_msg_set_pipe(msg, pipe);
	}
	return msg;
}

void
fuzz_peer_frame(struct cutd *d, const uint8_t *data, size_t len)
{
	nng_msg *msg = frame(data, len, 0);

	peer_batch(d, msg);
	nng_msg_free(msg);
}

void
fuzz_app_frame(struct cutd *d, const uint8_t *data, size_t len)
{
	nng_msg *msg = frame(data, len, 1);

	app_batch(d, msg);
	nng_msg_free(msg);
}

void
fuzz_control_frame(struct cutd *d, const uint8_t *data, size_t len)
{
	control_request(d, frame(data, len, 0)); /* takes the message */
}

void
fuzz_frames(struct cutd *d, const uint8_t *data, size_t len,
            void (*fn)(struct cutd *d, const uint8_t *frame, size_t len))
{
	while (len >= 2) {
		size_t n = (size_t)data[0] | (size_t)data[1] << 8;
		data += 2;
		len -= 2;
		if (n > len)
			n = len;
		fn(d, data, n);
		fuzz_turn(d);
		data += n;
		len -= n;
	}
}
