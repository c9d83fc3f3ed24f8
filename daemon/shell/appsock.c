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
 */
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "cutd.h"
#include "appsock.h"
#include "control.h"
#include "cutproto.h"
#include "log.h"

#define RECV_PER_TURN    256
#define BATCHES_PER_TURN 64

/* Runs on an nng thread when a connection closes: only atomics. */
static void
pipe_event(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct cutd *d = arg;

	(void)ev;
	atomic_store(&d->app_removed, nng_pipe_id(pipe));
}

int
app_start(struct cutd *d)
{
	const char *url = d->cfg->nodes[d->self].app;
	nng_listener l;
	int rv;

	if ((rv = nng_pair1_open(&d->app)) != 0)
		return rv;
	nng_socket_set_size(d->app, NNG_OPT_RECVMAXSZ,
	                    d->cfg->max_message + 64 * 1024);
	nng_socket_set_int(d->app, NNG_OPT_SENDBUF, 64);
	nng_pipe_notify(d->app, NNG_PIPE_EV_REM_POST, pipe_event, d);
	return control_listen(d, d->app, url, &l);
}

void
app_free(struct cutd *d)
{
	if (d->app_pending != NULL) {
		nng_msg_free(d->app_pending);
		d->app_pending = NULL;
	}
}

void
app_events(struct cutd *d)
{
	uint32_t gone = atomic_load(&d->app_removed);

	/* pair1 holds one connection at a time, so the latest to close is
	 * the one that matters; one that closed before its hello was noted
	 * is caught when the hello is (app_batch()). */
	if (gone != 0 && gone != d->app_told) {
		d->app_told = gone;
		coord_app_closed(d->coord, gone);
	}
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
		if (atomic_load(&d->app_removed) == conn) {
			d->app_told = conn;
			coord_app_closed(d->coord, conn);
		}
	}
}

void
app_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		nng_msg *msg;

		if (nng_recvmsg(d->app, &msg, NNG_FLAG_NONBLOCK) != 0)
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
app_next_timer(struct cutd *d, int max)
{
	return d->app_pending != NULL && max > 1 ? 1 : max;
}
