/*
 * cut_int.h - what the files of libcut share: the handle's layout and the
 * helpers that cross files.  Never installed.
 *
 * Locks, always taken in this order and never held across a callback into
 * the application:
 *
 *   recv_mu  serializes processing of the down stream (cut_recv,
 *            cut_dispatch) and guards the queue of received items.  It is
 *            the one lock held while the application's callbacks run, and
 *            it is error-checking, so that a callback calling cut_recv()
 *            gets CUT_EBUSY instead of a deadlock.
 *   send_mu  held around each send on the application link, so that
 *            sends and state replies leave in the order of the calls.
 *   ctl_mu   serializes control calls (req0 allows one at a time) and
 *            guards the control connection.
 *   mu       guards the state callback registration, the last error text
 *            and the control timeout; held only briefly.
 *
 * The pipe callback (an nng thread) takes no lock: it updates atomics.
 */
#ifndef CUT_INT_H
#define CUT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "cut/cut.h"
#include "cutproto.h"
#include "rpc.h"

/* How long cut_open() waits for the daemon and its hello reply. */
#define CUT_OPEN_TIMEOUT_MS 5000
/* How long a send may block on a full queue. */
#define CUT_SEND_TIMEOUT_MS 10000
/*
 * Room on the application link beyond the payload limit: a frame from the
 * daemon is one AppBatch, which holds up to its batch budget (256 KiB in
 * cutd) of queued items plus one item that may be as large as the limit,
 * plus a few bytes of framing per item.  A frame over the receive limit
 * would make nng drop the connection, so the slack is generous.
 */
#define CUT_FRAME_SLACK (512u << 10)
/* The receive limit before the hello reply says the real one: the largest
 * max_message a cluster file allows (64 MiB), since frames that follow
 * the reply may be read before libcut has seen it. */
#define CUT_HELLO_MAX_MESSAGE (64u << 20)
/* The pause before closing a socket; see cut_close(). */
#define CUT_CLOSE_GRACE_MS 2
/* The control timeout unless cut_set_control_timeout() says otherwise. */
#define CUT_CONTROL_TIMEOUT_MS 5000
/* The longest content type accepted from the application. */
#define CUT_CONTENT_TYPE_MAX 255

/* A received AppBatch, with the index of its next unprocessed item. */
struct batch {
	Cut__V1__AppBatch *b;
	size_t next;
	struct batch *link;
};

struct cut {
	/* Set by cut_open() and never changed after. */
	int has_app;
	nng_socket app;
	char *node, *cluster;
	char **peers;
	size_t npeers;
	size_t max_message;
	char *control_url;

	/* Written by the pipe callback. */
	atomic_int connected;       /* a pipe came up at least once */
	atomic_int lost;            /* the pipe the hello went over is gone */
	atomic_uint_least32_t live; /* that pipe's id, 0 before the hello */
	atomic_uint_least32_t last_removed;

	pthread_mutex_t recv_mu;
	struct batch *head, *tail;

	pthread_mutex_t send_mu;

	pthread_mutex_t ctl_mu;
	struct rpc *rpc;

	pthread_mutex_t mu;
	cut_state_fn state_fn;
	void *state_arg;
	int ctl_timeout;
	char err[RPC_MSG_MAX];
};

/* A snapshot handed to the application: the SnapshotInfo the daemon sent,
 * checked with rpc_check_snapshot(). */
struct cut_snapshot {
	Cut__V1__SnapshotInfo *info;
	int owned; /* info is freed with the snapshot (not in a list) */
};

struct cut_snapshot_list {
	Cut__V1__ListReply *reply;
	struct cut_snapshot *items; /* one per reply->snapshots[i] */
};

/* Sets c's last error text, printf style. */
void cut_set_error(struct cut *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Sends one item on the application link, in one AppBatch, after the
 * sends that returned before.  item is borrowed.  Returns 0, CUT_ECLOSED,
 * CUT_ETIMEDOUT, CUT_ENOMEM or CUT_EIO.
 */
int cut_send_item(struct cut *c, const Cut__V1__AppItem *item);

/* 1 if s is a valid content type: at most CUT_CONTENT_TYPE_MAX printable
 * ASCII bytes.  NULL is valid (none). */
int cut_content_type_ok(const char *s);

/* Frees every batch queued on c. */
void cut_queue_free(struct cut *c);

/* Appends the unpacked batch b to c's queue, from item next on.  Takes
 * ownership of b, also on failure (CUT_ENOMEM). */
int cut_queue_push(struct cut *c, Cut__V1__AppBatch *b, size_t next);

#endif /* CUT_INT_H */
