/*
 * port.c - the shell's port for the loop's turn (core/turn.h): nng's
 * sockets (net.c, appsock.c), the control and HTTP servers, the clocks.
 */
#include <nng/nng.h>

#include "appsock.h"
#include "control.h"
#include "cutd.h"
#include "cuterr.h"
#include "http.h"
#include "net.h"

static void
port_clock(void *ctx, int64_t *now, int64_t *wall)
{
	(void)ctx;
	*now = cutd_now_ms();
	*wall = cutd_wall_ms();
}

static void *
port_frame_new(void *ctx, size_t len, uint8_t **body)
{
	nng_msg *msg;

	(void)ctx;
	if (nng_msg_alloc(&msg, len) != 0)
		return NULL;
	*body = nng_msg_body(msg);
	return msg;
}

static void
port_frame_trim(void *ctx, void *frame, size_t len)
{
	(void)ctx;
	nng_msg_chop(frame, nng_msg_len(frame) - len);
}

static void
port_frame_free(void *ctx, void *frame)
{
	(void)ctx;
	nng_msg_free(frame);
}

void
cutd_port_in(struct turn_in *in, nng_msg *msg)
{
	in->frame = msg;
	in->data = nng_msg_body(msg);
	in->len = nng_msg_len(msg);
	in->conn = (uint32_t)nng_pipe_id(nng_msg_get_pipe(msg));
}

static void
port_in_done(void *ctx, struct turn_in *in)
{
	(void)ctx;
	nng_msg_free(in->frame);
}

/* Control and HTTP calls, when poll() saw them. */
static void
port_calls(void *ctx)
{
	struct cutd *d = ctx;

	if (d->ctl_ready)
		control_recv_all(d);
	if (d->http_ready)
		http_serve(d);
	d->ctl_ready = d->http_ready = 0;
}

static void
port_timers(void *ctx, int64_t now)
{
	struct cutd *d = ctx;

	net_timers(d, now);
	control_timers(d, now);
	app_timers(d, now);
}

/* Replies held for the commit (a Delete's), Wait calls whose deadline
 * passed. */
static void
port_committed(void *ctx, int rv, int64_t now)
{
	struct cutd *d = ctx;

	if (rv != E_BUSY)
		control_committed(d, rv == E_STORAGE);
	control_wake(d, now);
}

/* What the coordinator says happened: Wait and Restore calls answered,
 * the conditions judged. */
static void
port_event(void *ctx, const struct coord_event *ev)
{
	struct cutd *d = ctx;

	control_event(d, ev);
	judge_event(&d->judge, ev);
}

void
cutd_port(struct cutd *d)
{
	d->port = (struct turn_port){
	    .ctx = d,
	    .clock = port_clock,
	    .peer_closed = net_port_closed,
	    .peer_added = net_port_added,
	    .peer_connected = net_port_connected,
	    .peer_hang_up = net_port_hang_up,
	    .peer_redial = net_port_redial,
	    .app_closed = app_port_closed,
	    .peer_recv = net_port_recv,
	    .app_recv = app_port_recv,
	    .in_done = port_in_done,
	    .peer_admit = net_port_admit,
	    .frame_new = port_frame_new,
	    .frame_trim = port_frame_trim,
	    .frame_free = port_frame_free,
	    .peer_send = net_port_send,
	    .app_send = app_port_send,
	    .app_reply = app_port_reply,
	    .peer_auth = net_port_auth,
	    .calls = port_calls,
	    .timers = port_timers,
	    .committed = port_committed,
	    .event = port_event,
	};
}
