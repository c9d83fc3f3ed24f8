/*
 * cut_int.h - what the files of libcut share: the handle's layout and the
 * helpers that cross files.  Never installed.
 *
 * Threads.  An nng completion thread receives every frame from the daemon
 * (recv_done() in recv.c): it applies credit at once, notes unaligned
 * state requests, and queues the rest for the application.  Another
 * completion sends whatever the application's calls have packed into the
 * out buffer since the last frame left (one nng message for all of them),
 * so cut_send() never waits for a round trip and sends coalesce whenever
 * the application is faster than the link.
 *
 * Locks, always taken in this order and never held across a callback into
 * the application (except recv_mu):
 *
 *   recv_mu  serializes processing of the down stream (cut_recv,
 *            cut_dispatch).  It is the one lock held
 *            while the application's callbacks run, and it is
 *            error-checking, so that a callback calling cut_recv() gets
 *            CUT_EBUSY instead of a deadlock.
 *   taken_mu guards the handed count and its reporting, which a timer
 *            completes (nng_sleep_aio) while recv_mu may be held by a
 *            receiver that waits; held around appq_take(), which counts
 *            a delivery handed as it takes it.
 *   q_mu     guards the receive queue (struct appq: frames received,
 *            unaligned requests waiting); q_cv announces new ones and a
 *            lost link.  The receiving thread takes send_mu inside it
 *            for appq_ingest(), whose urgent items change credit.
 *   send_mu  guards the out buffer, the credit of each channel and the
 *            send in flight; send_cv announces credit and a lost link.
 *   ctl_mu   serializes control calls (req0 allows one at a time) and
 *            guards the control connection.
 *   mu       guards the state and restore callback registrations, the
 *            last error text and the timeouts; held only briefly (and
 *            taken inside send_mu by cut_set_restore_callback()).
 *
 *   re_mu    serializes resuming after the link was lost (resume.c);
 *            taken after recv_mu and before the others.
 *
 * The pipe callback (an nng thread) takes q_mu and send_mu only to wake
 * waiters.
 */
#ifndef CUT_INT_H
#define CUT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "appcore.h"
#include "appqueue.h"
#include "cut/cut.h"
#include "cutproto.h"
#include "rpc.h"

/* How long cut_open() waits for the daemon and its hello reply. */
#define CUT_OPEN_TIMEOUT_MS 5000
/* How long a send may block for credit unless cut_set_send_timeout() says
 * otherwise. */
#define CUT_SEND_TIMEOUT_MS 10000
/* A frame is sent as soon as the previous one left; the out buffer grows
 * up to this and more before it, but never holds more than the windows
 * plus control items. */
#define CUT_OUT_FRAME_MAX APPCORE_FRAME_MAX
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
/* Deliveries handed to the application are reported taken within this
 * long, or at once when they fill an eighth of a window: one report per
 * message at a low rate would cost more than the messages. */
#define CUT_TAKEN_DELAY_MS APPCORE_TAKEN_DELAY_MS
/* The longest one wait on a condition lasts before the waiter checks the
 * link. */
#define CUT_WAIT_SLICE_MS 200
/* How long cut_close() waits for queued sends to leave. */
#define CUT_LINGER_MS 1000
/* How long cut_close() waits for nng to stop reading the application
 * link before it closes it (quiesce() in cut.c). */
#define CUT_CLOSE_QUIET_MS 500
/* The control timeout unless cut_set_control_timeout() says otherwise. */
#define CUT_CONTROL_TIMEOUT_MS 5000
/* The longest content type accepted from the application. */
#define CUT_CONTENT_TYPE_MAX APPCORE_TEXT_MAX
/* The sending nodes whose position libcut remembers for a resume; a
 * cluster has at most this many nodes. */
#define CUT_MAX_SOURCES APPCORE_MAX_SOURCES
/* How long a call that may wait gives a lost link to come back before
 * it returns CUT_ECLOSED (and the next call tries again). */
#define CUT_RESUME_MS 10000
/* A resuming hello unanswered this long on its connection: that
 * connection is closed and the next one gets a hello (resume.c). */
#define CUT_HELLO_RETRY_MS 2000

struct cut {
	/* Set by cut_open() and never changed after. */
	int has_app;
	int test_stopped_reaper; /* CUT_TEST_STOPPED_REAPER (cut.c) */
	int test_dead_dialer;    /* CUT_TEST_DEAD_DIALER (resume.c) */
	char *app_url;
	char *control_url;
	/* The link's socket and dialer: replaced only by cut_relink(), with
	 * re_mu, q_mu, send_mu and link_mu held; the dialer alone also by
	 * cut_redial(), with re_mu and link_mu held. */
	nng_socket app;
	nng_dialer dialer;
	atomic_uint app_gen; /* how many times it was replaced */

	/* The protocol's state (appcore.h): node, peers and window are set
	 * by cut_open() and never changed after; the up stream's part is
	 * guarded by send_mu, the down stream's counts by taken_mu. */
	struct appcore k;

	/* Written by the pipe callback. */
	atomic_int connected;           /* a pipe came up at least once */
	atomic_uint_least32_t cur_pipe; /* the open connection, or 0 */
	atomic_uint dropped_early;      /* closed before our hello's reply */
	_Atomic uint64_t lost_at;       /* nng_clock() when lost was set */
	atomic_int lost;            /* the pipe the hello went over is gone */
	atomic_uint_least32_t live; /* that pipe's id, 0 before the hello */
	atomic_uint_least32_t last_removed;

	pthread_mutex_t recv_mu;

	/* Whether nng still lets go of the link's closed connections
	 * (cut_link_check()); link_mu is taken last of all. */
	pthread_mutex_t link_mu;
	uint64_t link_checked; /* nng_clock() of the last look */
	int64_t link_errs;     /* the dialer's error count, as of... */
	uint32_t errs_pipe;    /* ...this live connection */
	int64_t dial_ends;     /* how many dials the dialer ended, as of... */
	uint64_t dial_at;      /* ...this nng_clock() time, when it changed */
	/* What a look found to do (CUT_LINK_*), until cut_resume() does
	 * it: any thread that waits looks, and the one that resumes may not
	 * be the one that found it. */
	atomic_int link_fix;

	/* Resuming after the link was lost (resume.c). */
	pthread_mutex_t re_mu;
	uint32_t hello_pipe; /* cur_pipe when the resuming hello went */
	int hello_sent;
	uint64_t hello_at; /* nng_clock() when it went */
	int need_relink;   /* the socket is to be replaced (cut_relink()) */

	pthread_mutex_t taken_mu;
	nng_aio *taken_aio; /* reports them CUT_TAKEN_DELAY_MS later */
	int taken_armed;

	pthread_mutex_t q_mu;
	pthread_cond_t q_cv;
	/* The frames received and not yet taken (nng messages, freed by
	 * the queue), the unaligned requests ahead of them, a restore
	 * pending (appqueue.h). */
	struct appq q;
	int recv_efd;    /* cut_fd(): readable when items wait */
	int resuming;    /* waiting for the reply to a resuming hello */
	int resume_done; /* it came, and was taken with this result: */
	int resume_rv;
	/* An AppRestore arrived and its step (restore_step()) is not taken
	 * yet: a cut_send() waiting for room gives up (CUT_EAGAIN), since
	 * the fresh credit comes only after the step, which the thread in
	 * it may be the one to take. */
	atomic_int restore_arrived;
	nng_aio *recv_aio;
	int recv_err;    /* the reason receiving stopped, or 0 */
	int recv_moving; /* cut_relink() called recv_aio back: not an error */

	pthread_mutex_t send_mu;
	pthread_cond_t send_cv;
	nng_aio *send_aio;
	int sending;     /* a frame is in flight */
	int closing;     /* cut_close() is stopping send_aio: send no more */
	int send_efd;    /* cut_send_fd(): readable when credit came */
	int want_credit; /* a cut_try_send() found no room */
	int send_err;    /* why sending stopped, or 0 */

	/* The restore whose callback runs (recv_mu, on rs_thread), and
	 * whether it called cut_restore_commit(). */
	struct restore *rs_cur;
	int rs_done;
	pthread_t rs_thread;

	pthread_mutex_t ctl_mu;
	struct rpc *rpc;

	pthread_mutex_t mu;
	cut_state_fn state_fn;
	void *state_arg;
	cut_restore_fn restore_fn;
	void *restore_arg;
	int ctl_timeout;
	int send_timeout;
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
 * Queues one item on the application link after the items queued before
 * it, and starts sending if nothing is in flight.  item is borrowed.
 * Returns 0, CUT_ECLOSED or CUT_ENOMEM.  cut_queue_item_locked() is the
 * same with send_mu held.
 */
int cut_queue_item(struct cut *c, const Cut__V1__AppItem *item);
int cut_queue_item_locked(struct cut *c, const Cut__V1__AppItem *item);

/* Sends a packed frame (len bytes at buf, borrowed) synchronously (for
 * the hello, before the send machinery runs), waiting up to timeout_ms. */
int cut_send_now(struct cut *c, const void *buf, size_t len, int timeout_ms);

/* Wakes the senders waiting for room: an AppCredit raised a limit
 * (appcore_urgent()).  send_mu held. */
void cut_credit_grew(struct cut *c);

/* Starts the receiving completion loop (after the hello). */
int cut_recv_start(struct cut *c);

/* Reports the handed count to the daemon now if it changed (AppTaken). */
void cut_report_taken(struct cut *c);

/* Starts sending the out buffer unless a frame is in flight or the link
 * is lost.  send_mu held. */
void cut_kick(struct cut *c);
/* Marks pipe p as the one the hello went over. */
void cut_set_live(struct cut *c, nng_pipe p);
/* The code for the refusal of a hello (appcore_hello_answer()), whose
 * sentence becomes the last error. */
int cut_hello_refused(struct cut *c, const struct appcore_answer *a);

/*
 * Looks, at most every CUT_LINK_CHECK_MS, at what nng's statistics say of
 * the link (rpc.h, rpc_reaper_stopped()).  Before nng's reaper stopped:
 * when the link is lost, nothing was dialed again, and the socket still
 * counts a connection CUT_REAPER_WAIT_MS after the loss, the reaper has
 * stopped (said to rpc_set_reaper_stopped()), and the socket must be
 * replaced: link_fix says CUT_LINK_RELINK, and cut_resume() calls
 * cut_relink().  After: nng reports no lost connection any more, so a
 * live link whose dialer counts a new error is marked lost here.  Either
 * way, a lost link whose dialer has ended no dial (connected, refused,
 * failed) for CUT_REDIAL_WAIT_MS has a dialer that nng gave up on: it is
 * replaced (CUT_LINK_REDIAL: cut_redial(); once the reaper stopped,
 * CUT_LINK_RELINK).  Takes link_mu only.
 */
void cut_link_check(struct cut *c);
#define CUT_LINK_RELINK 1
#define CUT_LINK_REDIAL 2
/* Once nng's reaper stopped: notes the dialer's error count as a hello
 * goes on connection pipe, so that cut_link_check() counts as its loss
 * any error after.  re_mu held. */
void cut_link_baseline(struct cut *c, uint32_t pipe);
#define CUT_LINK_CHECK_MS  250
#define CUT_REAPER_WAIT_MS 1000
/* nng dials again within its reconnect time (1 s, NNG_OPT_RECONNMINT) of
 * a failed dial: twice that with no dial ended means it gave up. */
#define CUT_REDIAL_WAIT_MS 2000

/* Replaces the link's socket with a new one dialing the same daemon, and
 * leaves the old one open (closing it would wait for the stopped reaper
 * forever).  re_mu held, no frame in flight.  0 or a CUT_E* code. */
int cut_relink(struct cut *c);
/* Replaces the link's dialer with a new one on the same socket.  re_mu
 * held.  0 or a CUT_E* code. */
int cut_redial(struct cut *c);

/* While resuming: takes frame msg (consumed) in if it holds the answer
 * to the hello (appcore_hello_frame()), and returns 1; drops it (from
 * the lost connection) and returns 0 otherwise.  q_mu held. */
int cut_resume_frame(struct cut *c, nng_msg *msg);
/* Queues AppRestorable (whether a restore callback is registered) after
 * the items queued before it: after every hello.  send_mu held; 0 or the
 * code of cut_queue_item_locked(). */
int cut_restorable_locked(struct cut *c);
/*
 * Resumes a lost link: says hello again, waits up to timeout_ms (0: not
 * at all, -1: as long as it takes) for the reply, and sends again what
 * the daemon does not have.  Returns 0 when the link is up (or was not
 * lost), CUT_ECLOSED when the daemon has not answered yet (a later call
 * goes on), or the error of a refused hello.  No lock held but recv_mu.
 */
int cut_resume(struct cut *c, int timeout_ms);
/* What a call that found no answer while the link is lost returns:
 * CUT_ETIMEDOUT for CUT_RESUME_MS after the loss (the daemon may be
 * restarting), CUT_ECLOSED after that. */
int cut_lost_code(struct cut *c);

/* Waits on cv (mu held) until signalled, CUT_WAIT_SLICE_MS pass (so that
 * the caller looks at the link again), or, if timeout_ms > 0, deadline
 * (an nng_clock() time) comes. */
void cut_wait_slice(pthread_cond_t *cv, pthread_mutex_t *mu, int timeout_ms,
                    nng_time deadline);

/* Wakes every thread waiting on c (the link was lost). */
void cut_wake_all(struct cut *c);

/* The completion of the send aio (send.c). */
void cut_send_done(void *arg);

/* Waits up to CUT_LINGER_MS for queued items to leave (cut_close). */
void cut_linger(struct cut *c);

#endif /* CUT_INT_H */
