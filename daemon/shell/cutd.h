/*
 * cutd.h - the daemon's shell: what it holds besides the coordinator.
 *
 * The shell owns the sockets, the event loop, the database file, the
 * signals, TLS and the control service; every decision about links,
 * application streams and snapshots is the coordinator's (core/coord.h).
 * One struct cutd holds the shell's state; it is passed explicitly, never
 * global.  The modules, each with its header, and their jobs:
 *
 *   cutd.c     main, options, signals and the poll loop
 *   net.c      sockets to the other daemons: dialers, the listener, frames
 *   appsock.c  the application's socket
 *   control.c  the control service (req/rep, gRPC-style)
 *   tls.c      TLS between daemons and the signed hello
 *   http.c     metrics, the read-only HTTP API and the web view
 *   metrics.c  the Prometheus text of the daemon's counters
 *
 * Everything runs on the main thread; nng's own threads only set the
 * atomic flags of pipe notifications, queue closed connections and queue
 * HTTP requests for the loop (http.c).
 */
#ifndef CUT_CUTD_H
#define CUT_CUTD_H

#include <nng/nng.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cond.h"
#include "judge.h"
#include "config.h"
#include "coord.h"
#include "cutproto.h"
#include "ipcprobe.h"
#include "perm.h"
#include "pipewatch.h"
#include "store.h"
#include "turn.h"

#define CUTD_VERSION "0.1.0"

/* Listener connections that closed, noted by nng threads, waiting for the
 * loop to tell the coordinator; a burst beyond this many drops the
 * oldest news, which only delays a rebinding by DEAD_MS. */
#define CLOSED_MAX 64
/* Application connections that closed, noted for the loop; beyond this
 * many in one turn the oldest news is dropped and the loop looks the
 * application's connection up instead (appsock.c). */
#define APP_REMOVED_MAX 64
/* Closed application connections the loop remembers, for a hello that
 * comes after its connection's close was drained. */
#define APP_GONE_KEEP 16

/* The connection to another node, as the shell holds it. */
struct net_peer {
	nng_socket push;       /* dialed to its peer endpoint */
	nng_dialer dialer;     /* push's dialer, replaced when stuck */
	struct pipewatch conn; /* push's open connection */
	int64_t checked_ms;    /* when pipewatch_check() last ran */
};

/* A control Wait call waiting for a snapshot to end. */
struct waiter {
	nng_msg *req; /* the request, kept for its header */
	uint64_t request_id;
	char id[ENGINE_ID_MAX + 1];
	int64_t deadline_ms;
	int include_states, include_messages;
	struct waiter *next;
};
/* Wait calls kept at once; more are refused (RESOURCE_EXHAUSTED). */
#define MAX_WAITERS 256

/* A reply held until the turn's writes commit (a Delete's). */
struct held_reply {
	nng_msg *req;
	uint64_t request_id;
	int32_t status;
	char message[256];
	uint8_t *body;
	size_t len;
	int as_made; /* answered as made even if the batch is lost (BATCH) */
	struct held_reply *next;
};

struct tls;
struct http;

struct cutd {
	struct config *cfg;
	char *cfg_path;
	size_t self;
	const char *name; /* cfg->nodes[self].name */
	struct coord *coord;
	uint64_t epoch; /* this run's id (random) */
	int64_t start_ms;
	struct net_peer *net; /* by node index; self's entry unused */
	nng_socket pull, app, ctl;
	int pull_fd, app_fd, ctl_fd;
	/* Listener connections closed (net.c): ids, under closed_mx. */
	pthread_mutex_t closed_mx;
	uint32_t closed[CLOSED_MAX];
	size_t nclosed;
	atomic_int closed_any;
	/* The application's connections that closed (appsock.c): noted by
	 * nng threads under app_mx, drained by the loop, which keeps the
	 * last APP_GONE_KEEP it drained; and the frame nng would not take
	 * yet. */
	pthread_mutex_t app_mx;
	uint32_t app_removed[APP_REMOVED_MAX];
	size_t napp_removed;
	int app_removed_lost; /* the oldest news was dropped */
	/* The connection pair1 holds, as nng reported it (0: none), and the
	 * last closed ones, to tell a removal reported before the
	 * addition; under app_mx (app_attached is read without it to
	 * decide whether to poll). */
	atomic_uint app_attached;
	uint32_t app_rem_recent[APP_GONE_KEEP];
	size_t app_rem_next;
	int64_t app_checked_ms; /* when the connection was last looked up */
	struct ipcprobe app_probe; /* keeps the application listener
	                            * accepting */
	/* Written by nng threads when an application connection opens or
	 * closes, so that the loop wakes and tells the coordinator at once
	 * and polls the socket again (or not). */
	int wake_fd;
	/* nng stopped reaping connections (ipcprobe.h): the loop ends and
	 * main() runs cutd again in this process (execv). */
	int restart;
	/* The loop's turn (core/turn.h) over this shell's port (port.c),
	 * and what poll() said of the sockets. */
	struct turn turn;
	struct turn_port port;
	int pull_ready, app_ready, ctl_ready, http_ready;
	struct store *store;
	struct cond *cond;      /* read-only, for conditions (store/cond.h) */
	char cond_damaged[256]; /* what cond found of a damaged database */
	int damaged_logged;
	/* The cluster file's conditions, judged after each turn
	 * (store/judge.h): their counts, and the snapshots started here
	 * not yet seen to end. */
	struct judge judge;
	struct tls *tls;   /* TLS configurations and the signed hello */
	struct http *http; /* metrics, HTTP API, web view; NULL: off */
	uint64_t bad_control;
	struct ipcprobe ctl_probe; /* keeps the control listener accepting */
	/* Control calls refused by perm.c, and Start calls by the limits. */
	uint64_t calls_denied, starts_limited;
	struct perm_bucket start_bucket;
	struct waiter *waiters;
	size_t nwaiters;
	struct held_reply *held; /* answered at control_committed() */
	/* The Restore call being run, answered when it ends (one at a
	 * time: the coordinator runs one restore). */
	nng_msg *restore_req;
	uint64_t restore_request_id;
	/* Recent control replies by request id, so a resent request is
	 * answered, not executed twice. */
	struct {
		uint64_t id;
		nng_msg *reply;
	} replies[64];
	size_t next_reply;
};

/* Fills d->port: the loop's I/O over nng (port.c). */
void cutd_port(struct cutd *d);
/* A frame read from nng, as the turn takes it (the message is the
 * frame's handle). */
void cutd_port_in(struct turn_in *in, nng_msg *msg);

/* Milliseconds since the epoch, and on the monotonic clock. */
int64_t cutd_wall_ms(void);
int64_t cutd_now_ms(void);

#endif /* CUT_CUTD_H */
