/*
 * appsock.c - the application's socket: one pair1 socket on IPC to libcut.
 *
 * What goes down and what comes up is the coordinator's business
 * (core/coord_app.c); this file carries the frames.  Not polyamorous:
 * pair1 then refuses a second connection while one is open, so a second
 * application cannot disturb the first (libcut tells it so), and sends are
 * never discarded, as they may be in polyamorous mode when a connection
 * is busy.  A down-stream frame nng will not take yet stays pending and
 * goes first next turn.
 *
 * A receive queue (APP_RECVBUF frames).  nng 1.5.2's pair1 (protocol/
 * pair1/pair.c) holds a frame in the connection when the socket's queue
 * is full, marking the socket "rd_ready", and the next nng_recvmsg()
 * takes it from the socket's current connection.  When the connection
 * closes, its receive callback can still be running: it marks rd_ready
 * after pair1_pipe_stop() detached the connection, and nng_recvmsg() then
 * takes a frame from a NULL connection (SIGSEGV in nni_aio_get_msg() on
 * the loop's thread) or from the next application's connection, whose
 * receive it corrupts (that connection's close then never completes:
 * pair1 refuses every new application, CUT_EBUSY, and the daemon goes on
 * sending state requests to the dead one).  Without a queue (nng's
 * default) the queue is always full; with one that the loop drains every
 * turn it never is, so the race cannot start.  And in case the queue does
 * fill (the loop far behind its application), the loop reads only while
 * a connection nng reported open (ADD_POST) has not been reported
 * closed (REM_POST): nng reports the close before it detaches the
 * connection, and that report waits for a read in progress, so no read
 * can meet a detached connection.  Meanwhile the socket is not polled
 * (its descriptor may stay readable); the reports wake the loop.
 *
 * Closed connections.  nng reports every connection that closes
 * (REM_POST), also the ones pair1 refused (a second application, the
 * listener probe) and sometimes before reporting it open.  Each id goes
 * into a list the loop drains (one closure is never hidden behind
 * another, as it was behind a single "latest closed" slot), which also
 * wakes the loop; and the loop looks the application's connection up in
 * nng now and then, in case the list overflowed.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "cutd.h"
#include "appsock.h"
#include "control.h"
#include "cutproto.h"
#include "log.h"

#define RECV_PER_TURN    256
#define BATCHES_PER_TURN 64
/* Frames nng may hold for the loop (see the top of the file). */
#define APP_RECVBUF 1024
/* How often the loop looks the application's connection up in nng. */
#define APP_CHECK_MS 500
/* How long the application listener may take to accept the probe's
 * connection (ipcprobe.h) before it is started again, which closes the
 * application's connection too (libcut connects again and resumes). */
#define APP_PROBE_WAIT_MS 2000

static void
wake(struct cutd *d)
{
	uint64_t one = 1;

	if (write(d->wake_fd, &one, sizeof(one)) < 0) {
		/* A full counter wakes the loop as well. */
	}
}

/* Runs on an nng thread when a connection closes, before nng detaches
 * it from the socket: notes it, wakes the loop. */
static void
pipe_removed(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct cutd *d = arg;
	uint32_t id = (uint32_t)nng_pipe_id(pipe);

	(void)ev;
	pthread_mutex_lock(&d->app_mx);
	if (d->napp_removed == APP_REMOVED_MAX) {
		memmove(d->app_removed, d->app_removed + 1,
		        (APP_REMOVED_MAX - 1) * sizeof(d->app_removed[0]));
		d->napp_removed--;
		d->app_removed_lost = 1;
	}
	d->app_removed[d->napp_removed++] = id;
	d->app_rem_recent[d->app_rem_next++ % APP_GONE_KEEP] = id;
	if (atomic_load(&d->app_attached) == id)
		atomic_store(&d->app_attached, 0);
	pthread_mutex_unlock(&d->app_mx);
	wake(d);
}

/* Runs on an nng thread once pair1 took a connection as its one. */
static void
pipe_added(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct cutd *d = arg;
	uint32_t id = (uint32_t)nng_pipe_id(pipe);
	int early = 0;

	(void)ev;
	/* One whose removal was reported first is being detached. */
	pthread_mutex_lock(&d->app_mx);
	for (size_t i = 0; i < APP_GONE_KEEP; i++)
		early |= d->app_rem_recent[i] == id;
	if (!early)
		atomic_store(&d->app_attached, id);
	pthread_mutex_unlock(&d->app_mx);
	wake(d);
}

int
app_start(struct cutd *d)
{
	const char *url = d->cfg->nodes[d->self].app;
	nng_listener l;
	int rv;

	pthread_mutex_init(&d->app_mx, NULL);
	if ((rv = nng_pair1_open(&d->app)) != 0)
		return rv;
	nng_socket_set_size(d->app, NNG_OPT_RECVMAXSZ,
	                    d->cfg->max_message + 64 * 1024);
	nng_socket_set_int(d->app, NNG_OPT_SENDBUF, 64);
	nng_socket_set_int(d->app, NNG_OPT_RECVBUF, APP_RECVBUF);
	nng_pipe_notify(d->app, NNG_PIPE_EV_ADD_POST, pipe_added, d);
	nng_pipe_notify(d->app, NNG_PIPE_EV_REM_POST, pipe_removed, d);
	if ((rv = control_listen(d, d->app, url, &l)) != 0)
		return rv;
	return ipcprobe_start(&d->app_probe, d->app, l, url, "application",
	                      APP_PROBE_WAIT_MS);
}

void
app_free(struct cutd *d)
{
	ipcprobe_stop(&d->app_probe);
	if (d->app_pending != NULL) {
		nng_msg_free(d->app_pending);
		d->app_pending = NULL;
	}
	pthread_mutex_destroy(&d->app_mx);
}

/* Tells the coordinator of the connections that closed since the last
 * call (it ignores those that are not its application's), and keeps
 * their ids for app_batch(). */
static void
drain_removed(struct cutd *d)
{
	uint32_t ids[APP_REMOVED_MAX];
	size_t n;
	int lost;

	pthread_mutex_lock(&d->app_mx);
	n = d->napp_removed;
	memcpy(ids, d->app_removed, n * sizeof(ids[0]));
	d->napp_removed = 0;
	lost = d->app_removed_lost;
	d->app_removed_lost = 0;
	pthread_mutex_unlock(&d->app_mx);
	for (size_t i = 0; i < n; i++) {
		d->app_gone[d->app_gone_next++ % APP_GONE_KEEP] = ids[i];
		/* The application's own: a close that can stop nng's
		 * reaper (ipcprobe.h), so it is checked now. */
		if (ids[i] == coord_app_conn(d->coord))
			ipcprobe_soon(&d->ctl_probe);
		coord_app_closed(d->coord, ids[i]);
	}
	if (lost)
		d->app_checked_ms = 0; /* look the connection up now */
}

static int
gone_recently(const struct cutd *d, uint32_t conn)
{
	for (size_t i = 0; i < APP_GONE_KEEP; i++)
		if (d->app_gone[i] == conn)
			return 1;
	return 0;
}

/* Whether nng still knows connection conn: it forgets one right after
 * reporting it closed. */
static int
conn_known(uint32_t conn)
{
	nng_pipe pipe = NNG_PIPE_INITIALIZER;

	pipe.id = conn;
	return nng_listener_id(nng_pipe_listener(pipe)) > 0;
}

void
app_events(struct cutd *d)
{
	int64_t now = cutd_now_ms();
	uint32_t conn;

	drain_removed(d);
	if (now - d->app_checked_ms < APP_CHECK_MS)
		return;
	d->app_checked_ms = now;
	if ((conn = coord_app_conn(d->coord)) != 0 && !conn_known(conn)) {
		log_warnx("the application's connection closed and nng did "
		          "not say so in time: the application is gone");
		coord_app_closed(d->coord, conn);
	}
}

void
app_timers(struct cutd *d, int64_t now)
{
	const char *url = d->cfg->nodes[d->self].app;
	nng_listener l;

	if (ipcprobe_check(&d->app_probe, now) != IPCPROBE_DEAF)
		return;
	nng_listener_close(d->app_probe.listener);
	ipcprobe_stop(&d->app_probe);
	if (control_listen(d, d->app, url, &l) == 0)
		ipcprobe_listening(&d->app_probe, l);
}

void
app_batch(struct cutd *d, nng_msg *msg)
{
	uint32_t conn = (uint32_t)nng_pipe_id(nng_msg_get_pipe(msg));
	uint32_t before = coord_app_conn(d->coord);
	Cut__V1__AppBatch *b;

	b = (Cut__V1__AppBatch *)cutproto_unpack_arena(
	    &cut__v1__app_batch__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg), &d->arena);
	if (b == NULL)
		coord_app_bad(d->coord, conn, "batch does not decode");
	else
		coord_app_input(d->coord, conn, b);
	cutproto_arena_reset(&d->arena);
	if (coord_app_conn(d->coord) != before) {
		/* A new application: what was pending for the old one goes
		 * again from the coordinator's down stream. */
		if (d->app_pending != NULL) {
			nng_msg_free(d->app_pending);
			d->app_pending = NULL;
		}
		/* It closed before its hello was handled. */
		drain_removed(d);
		if (gone_recently(d, conn))
			coord_app_closed(d->coord, conn);
	}
}

int
app_poll_fd(struct cutd *d)
{
	return atomic_load(&d->app_attached) != 0 ? d->app_fd : -1;
}

void
app_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		nng_msg *msg;
		int rv = NNG_ECLOSED;

		/* Held across the read: a close reported meanwhile waits,
		 * and nng detaches the connection only after that. */
		pthread_mutex_lock(&d->app_mx);
		if (atomic_load(&d->app_attached) != 0)
			rv = nng_recvmsg(d->app, &msg, NNG_FLAG_NONBLOCK);
		pthread_mutex_unlock(&d->app_mx);
		if (rv != 0)
			return;
		app_batch(d, msg);
		nng_msg_free(msg);
	}
}

/* Sends the frames the coordinator wants to go at once to one
 * connection: hello replies and errors. */
static void
send_replies(struct cutd *d)
{
	nng_pipe to = NNG_PIPE_INITIALIZER;
	uint32_t conn;
	uint8_t *buf;
	size_t len;
	nng_msg *msg;

	while (coord_next_app_reply(d->coord, &conn, &buf, &len)) {
		if (nng_msg_alloc(&msg, len) == 0) {
			memcpy(nng_msg_body(msg), buf, len);
			to.id = conn;
			nng_msg_set_pipe(msg, to);
			if (nng_sendmsg(d->app, msg, NNG_FLAG_NONBLOCK) != 0)
				nng_msg_free(msg);
		}
		free(buf);
	}
}

void
app_flush(struct cutd *d)
{
	size_t len;
	nng_msg *msg;

	send_replies(d);
	for (int i = 0; i < BATCHES_PER_TURN; i++) {
		if (d->app_pending != NULL) {
			if (nng_sendmsg(d->app, d->app_pending,
			                NNG_FLAG_NONBLOCK) != 0)
				return; /* kept: it goes first next turn */
			d->app_pending = NULL;
		}
		if ((len = coord_app_frame(d->coord, NULL)) == 0 ||
		    nng_msg_alloc(&msg, len) != 0)
			return;
		coord_app_frame(d->coord, nng_msg_body(msg));
		d->app_pending = msg;
	}
}

int
app_next_timer(struct cutd *d, int64_t now, int max)
{
	max = ipcprobe_next_timer(&d->app_probe, now, max);
	return d->app_pending != NULL && max > 1 ? 1 : max;
}
