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
	pthread_mutex_destroy(&d->app_mx);
}

/* ---- The application half of the loop's port (turn.h) ---- */

/* Whether nng still knows connection conn: it forgets one right after
 * reporting it closed. */
static int
conn_known(uint32_t conn)
{
	nng_pipe pipe = NNG_PIPE_INITIALIZER;

	pipe.id = conn;
	return nng_listener_id(nng_pipe_listener(pipe)) > 0;
}

size_t
app_port_closed(void *ctx, uint32_t *ids, size_t max)
{
	struct cutd *d = ctx;
	int64_t now = cutd_now_ms();
	uint32_t conn = coord_app_conn(d->coord);
	size_t n;
	int lost;

	pthread_mutex_lock(&d->app_mx);
	n = d->napp_removed < max ? d->napp_removed : max;
	memcpy(ids, d->app_removed, n * sizeof(ids[0]));
	memmove(d->app_removed, d->app_removed + n,
	        (d->napp_removed - n) * sizeof(ids[0]));
	d->napp_removed -= n;
	lost = d->app_removed_lost;
	d->app_removed_lost = 0;
	pthread_mutex_unlock(&d->app_mx);
	for (size_t i = 0; i < n; i++)
		/* The application's own: a close that can stop nng's
		 * reaper (ipcprobe.h), so it is checked now. */
		if (ids[i] == conn && conn != 0)
			ipcprobe_soon(&d->ctl_probe);
	if (lost)
		d->app_checked_ms = 0; /* look the connection up now */
	if (n < max && conn != 0 && now - d->app_checked_ms >= APP_CHECK_MS) {
		d->app_checked_ms = now;
		if (!conn_known(conn)) {
			log_warnx("the application's connection closed and "
			          "nng did not say so in time: the "
			          "application is gone");
			ids[n++] = conn;
		}
	}
	return n;
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

int
app_poll_fd(struct cutd *d)
{
	return atomic_load(&d->app_attached) != 0 ? d->app_fd : -1;
}

int
app_port_recv(void *ctx, struct turn_in *in)
{
	struct cutd *d = ctx;
	nng_msg *msg;
	int rv = NNG_ECLOSED;

	if (!d->app_ready)
		return 0;
	/* Held across the read: a close reported meanwhile waits, and nng
	 * detaches the connection only after that. */
	pthread_mutex_lock(&d->app_mx);
	if (atomic_load(&d->app_attached) != 0)
		rv = nng_recvmsg(d->app, &msg, NNG_FLAG_NONBLOCK);
	pthread_mutex_unlock(&d->app_mx);
	if (rv != 0) {
		d->app_ready = 0;
		return 0;
	}
	cutd_port_in(in, msg);
	return 1;
}

int
app_port_send(void *ctx, void *frame)
{
	struct cutd *d = ctx;

	return nng_sendmsg(d->app, frame, NNG_FLAG_NONBLOCK);
}

void
app_port_reply(void *ctx, uint32_t conn, const uint8_t *data, size_t len)
{
	struct cutd *d = ctx;
	nng_pipe to = NNG_PIPE_INITIALIZER;
	nng_msg *msg;

	if (nng_msg_alloc(&msg, len) != 0)
		return;
	memcpy(nng_msg_body(msg), data, len);
	to.id = conn;
	nng_msg_set_pipe(msg, to);
	if (nng_sendmsg(d->app, msg, NNG_FLAG_NONBLOCK) != 0)
		nng_msg_free(msg);
}

int
app_next_timer(struct cutd *d, int64_t now, int max)
{
	return ipcprobe_next_timer(&d->app_probe, now, max);
}
