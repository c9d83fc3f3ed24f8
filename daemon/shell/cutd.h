/*
 * cutd.h - the daemon's shell: what it holds besides the coordinator.
 *
 * The shell owns the sockets, the event loop, the database file, the
 * signals, TLS and the control service; every decision about links,
 * application streams and snapshots is the coordinator's (core/coord.h).
 * One struct cutd holds the shell's state; it is passed explicitly, never
 * global.  The modules and their jobs:
 *
 *   cutd.c     main, options, signals and the poll loop
 *   net.c      sockets to the other daemons: dialers, the listener, frames
 *   appsock.c  the application's socket
 *   control.c  the control service (req/rep, gRPC-style)
 *   tls.c      TLS between daemons and the signed hello
 *
 * Everything runs on the main thread; nng's own threads only set the
 * atomic flags of pipe notifications and queue closed connections.
 */
#ifndef CUT_CUTD_H
#define CUT_CUTD_H

#include <nng/nng.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "coord.h"
#include "cutproto.h"
#include "perm.h"
#include "store.h"

#define CUTD_VERSION "0.1.0"

/* A dialer that has not connected for this long is replaced. */
#define REDIAL_MS 1000
/* Listener connections that closed, noted by nng threads, waiting for the
 * loop to tell the coordinator; a burst beyond this many drops the
 * oldest news, which only delays a rebinding by DEAD_MS. */
#define CLOSED_MAX 64

/* The connection to another node, as the shell holds it. */
struct net_peer {
	nng_socket push;        /* dialed to its peer endpoint */
	nng_dialer dialer;      /* push's dialer, replaced when stuck */
	int64_t dialed_ms;      /* when it was made */
	atomic_int pipes;       /* connections of push, from notifications */
	atomic_int reconnected; /* set when push gains a connection */
	atomic_uint pipe_id;    /* push's latest connection */
	_Atomic int64_t pipe_since_ms; /* when it was made */
	int up;                 /* as last told the coordinator */
	nng_msg *pending;       /* a frame nng would not take yet */
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

struct tls;

struct cutd {
	struct config *cfg;
	char *cfg_path;
	size_t self;
	const char *name; /* cfg->nodes[self].name */
	struct coord *coord;
	uint64_t epoch;   /* this run's id (random) */
	int64_t start_ms;
	struct net_peer *net; /* by node index; self's entry unused */
	nng_socket pull, app, ctl;
	int pull_fd, app_fd, ctl_fd;
	/* Listener connections closed (net.c): ids, under closed_mx. */
	pthread_mutex_t closed_mx;
	uint32_t closed[CLOSED_MAX];
	size_t nclosed;
	atomic_int closed_any;
	/* The application's connections: the latest to close (an nng thread
	 * sets it), and the frame nng would not take yet. */
	atomic_uint app_removed;
	uint32_t app_told; /* the closed connection last told the coord */
	nng_msg *app_pending;
	struct cutproto_arena arena; /* for unpacking frames */
	struct store *store;
	struct tls *tls; /* TLS configurations and the signed hello */
	uint64_t bad_control;
	/* Control calls refused by perm.c, and Start calls by the limits. */
	uint64_t calls_denied, starts_limited;
	struct perm_bucket start_bucket;
	struct waiter *waiters;
	size_t nwaiters;
	/* Recent control replies by request id, so a resent request is
	 * answered, not executed twice. */
	struct {
		uint64_t id;
		nng_msg *reply;
	} replies[64];
	size_t next_reply;
};

/* Milliseconds since the epoch, and on the monotonic clock. */
int64_t cutd_wall_ms(void);
int64_t cutd_now_ms(void);

/* net.c */
int net_start(struct cutd *d);
/* Closes this node's connections to its peers, losing whatever nng had
 * in flight on them: the links must recover.  SIGUSR1 does it, for
 * tests. */
void net_drop_connections(struct cutd *d);
/* Frees the pending frames.  The peer sockets must be closed first:
 * their pipe notifications write to d->net. */
void net_free(struct cutd *d);
/* Tells the coordinator which connections opened and closed. */
void net_events(struct cutd *d);
void net_recv_all(struct cutd *d);
/* Decodes, admits (TLS) and hands one PeerBatch as it came in msg
 * (borrowed) to the coordinator: what net_recv_all() does with each
 * message.  Exposed for the fuzz harnesses (tests/fuzz). */
void net_batch(struct cutd *d, nng_msg *msg);
void net_flush(struct cutd *d);
void net_timers(struct cutd *d, int64_t now);
/* Milliseconds until net_timers() or net_flush() has something to do. */
int net_next_timer(struct cutd *d, int64_t now, int max);

/* appsock.c */
int app_start(struct cutd *d);
void app_free(struct cutd *d);
/* Tells the coordinator of a closed application connection. */
void app_events(struct cutd *d);
void app_recv_all(struct cutd *d);
/* Decodes one AppBatch as it came in msg (borrowed) and hands it to the
 * coordinator.  Exposed for the fuzz harnesses. */
void app_batch(struct cutd *d, nng_msg *msg);
/* Sends the replies the coordinator queued, and the down stream. */
void app_flush(struct cutd *d);
int app_next_timer(struct cutd *d, int max);

/* control.c */
int control_start(struct cutd *d);
/* Listens on url with socket s; an ipc:// socket gets mode 0660 and the
 * cluster file's socket_group.  Returns 0 or an NNG_E* code (logged). */
int control_listen(struct cutd *d, nng_socket s, const char *url);
/* Frees the kept replies and answers no Wait call any more. */
void control_free(struct cutd *d);
void control_recv_all(struct cutd *d);
/* Decodes, checks and answers (or keeps, for Wait) one RpcRequest; takes
 * ownership of req.  Exposed for the fuzz harnesses. */
void control_request(struct cutd *d, nng_msg *req);
/* Answers the Wait calls whose snapshot ended (its end committed) or
 * whose deadline passed. */
void control_wake(struct cutd *d, int64_t now);
/* Milliseconds until a Wait call's deadline, at most max. */
int control_next_timer(struct cutd *d, int64_t now, int max);

#endif /* CUT_CUTD_H */
