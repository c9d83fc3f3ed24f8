/*
 * fuzz_daemon.c - a struct cutd without sockets; see fuzz_daemon.h.
 */
#include <stdlib.h>
#include <string.h>

#include "appsock.h"
#include "control.h"
#include "fuzz_daemon.h"
#include "net.h"
#include "tls.h"

struct fuzz_daemon *
fuzz_daemon_new(void)
{
	struct fuzz_daemon *fd;
	struct cutd *d;
	char err[256];

	if ((fd = calloc(1, sizeof(*fd))) == NULL)
		fuzz_die("out of memory");
	fd->f = fuzz_coord_new();
	d = &fd->d;
	d->cfg = fuzz_config();
	d->self = 0;
	d->name = d->cfg->nodes[0].name;
	d->coord = fd->f->c;
	d->epoch = FUZZ_EPOCH;
	d->start_ms = cutd_now_ms();
	d->store = fuzz_store();
	if (tls_open(d->cfg, d->self, &d->tls, err, sizeof(err)) != 0)
		fuzz_die("tls_open: %s", err);
	cutd_port(d);
	if (turn_init(&d->turn, d->coord, d->self, d->cfg->nnodes, &d->port,
	              cutd_now_ms()) != 0)
		fuzz_die("out of memory");
	return fd;
}

void
fuzz_daemon_free(struct fuzz_daemon *fd)
{
	struct cutd *d = &fd->d;

	turn_fini(&d->turn);
	control_free(d);
	app_free(d);
	tls_free(d->tls);
	fuzz_coord_free(fd->f);
	free(fd);
}

/* A new nng message holding len bytes at data, from connection pipe_id
 * (0: none): a control request. */
static nng_msg *
frame(const uint8_t *data, size_t len, uint32_t pipe_id)
{
	nng_pipe pipe = NNG_PIPE_INITIALIZER;
	nng_msg *msg;

	if (nng_msg_alloc(&msg, len) != 0)
		fuzz_die("out of memory");
	if (len > 0)
		memcpy(nng_msg_body(msg), data, len);
	if (pipe_id != 0) {
		pipe.id = pipe_id;
		nng_msg_set_pipe(msg, pipe);
	}
	return msg;
}

void
fuzz_daemon_peer(struct fuzz_daemon *fd, const uint8_t *data, size_t len)
{
	struct turn_in in = {.data = data, .len = len, .conn = FUZZ_PEER_CONN};

	/* Admitted (TLS) through the shell's port, as in the loop. */
	turn_peer_frame(&fd->d.turn, &in);
}

void
fuzz_daemon_app(struct fuzz_daemon *fd, const uint8_t *data, size_t len)
{
	struct turn_in in = {.data = data, .len = len, .conn = FUZZ_APP_CONN};

	turn_app_frame(&fd->d.turn, &in);
}

void
fuzz_daemon_control(struct fuzz_daemon *fd, const uint8_t *data, size_t len)
{
	control_request(&fd->d, frame(data, len, 0)); /* takes the message */
}

void
fuzz_daemon_turn(struct fuzz_daemon *fd)
{
	struct coord_event ev;

	fuzz_coord_turn(fd->f);
	/* control.c sets a Wait's deadline from the real monotonic clock;
	 * the simulated one started at its reading and runs ahead of it. */
	control_wake(&fd->d, fd->f->now);
	while (coord_next_event(fd->f->c, &ev))
		control_event(&fd->d, &ev);
}
