/*
 * pipewatch.c - which connection a dialing pair1 socket has open; see
 * pipewatch.h for why ids and not a count.
 */
#include "pipewatch.h"

static void
pipe_event(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct pipewatch *w = arg;
	unsigned id = (unsigned)nng_pipe_id(pipe);

	if (ev == NNG_PIPE_EV_ADD_POST) {
		atomic_store(&w->id, id);
		atomic_store(&w->added, 1);
		/* Its removal came first: forget it again. */
		if (atomic_load(&w->removed_id) == id)
			atomic_compare_exchange_strong(&w->id, &id, 0);
	} else if (ev == NNG_PIPE_EV_REM_POST) {
		atomic_store(&w->removed_id, id);
		atomic_compare_exchange_strong(&w->id, &id, 0);
	}
}

int
pipewatch_start(struct pipewatch *w, nng_socket sock)
{
	int rv;

	atomic_init(&w->id, 0);
	atomic_init(&w->removed_id, 0);
	atomic_init(&w->added, 0);
	if ((rv = nng_pipe_notify(sock, NNG_PIPE_EV_ADD_POST, pipe_event, w)) !=
	    0)
		return rv;
	return nng_pipe_notify(sock, NNG_PIPE_EV_REM_POST, pipe_event, w);
}

uint32_t
pipewatch_id(const struct pipewatch *w)
{
	return atomic_load(&w->id);
}

int
pipewatch_take_added(struct pipewatch *w)
{
	return atomic_exchange(&w->added, 0);
}

void
pipewatch_check(struct pipewatch *w)
{
	nng_pipe pipe = NNG_PIPE_INITIALIZER;
	unsigned id = atomic_load(&w->id);

	pipe.id = id;
	/* A removed pipe is gone from nng's table right after REM_POST. */
	if (id != 0 && nng_dialer_id(nng_pipe_dialer(pipe)) <= 0)
		atomic_compare_exchange_strong(&w->id, &id, 0);
}
