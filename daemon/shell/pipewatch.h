/*
 * pipewatch.h - which connection a dialing pair1 socket has open, from
 * nng's pipe notifications (pipewatch.c).
 *
 * nng 1.5.2 reports the removal of a connection whose addition it never
 * reported (one pair1 refused because the socket had one already, or one
 * that closed while it started), and can report a removal before the
 * addition: pipe_destroy() runs the REM_POST callback before it waits for
 * the thread that is still adding the pipe.  So a count of additions
 * minus removals drifts, in both directions.  A watch keeps the open
 * connection's id instead, and pipewatch_check() forgets an id nng no
 * longer knows.
 */
#ifndef CUT_PIPEWATCH_H
#define CUT_PIPEWATCH_H

#include <nng/nng.h>
#include <stdatomic.h>
#include <stdint.h>

struct pipewatch {
	atomic_uint id;         /* the open connection, 0 if none */
	atomic_uint removed_id; /* the last one nng said closed */
	atomic_int added;       /* set when a connection opens */
};

/* Registers w for sock's ADD_POST and REM_POST notifications; w must
 * outlive the socket. */
int pipewatch_start(struct pipewatch *w, nng_socket sock);
/* The open connection's id, or 0. */
uint32_t pipewatch_id(const struct pipewatch *w);
/* Whether a connection opened since the last call (reads and clears). */
int pipewatch_take_added(struct pipewatch *w);
/* Forgets the open connection if nng no longer knows it.  Call it now
 * and then (a lookup under one of nng's locks). */
void pipewatch_check(struct pipewatch *w);

#endif
