/*
 * fuzz_daemon.h - a struct cutd without sockets, for the harnesses that
 * go through the daemon's shell (fuzz_control, fuzz_daemon_mix).
 *
 * Its coordinator and store are fuzz_coord.h's node (p0 of the "fuzz"
 * cluster, three messages from p1 queued, snapshot p0:1 in progress),
 * built into a struct cutd as cutd.c's start() builds one: d->coord,
 * d->store, the configuration, the epoch, a TLS context (the cluster is
 * plaintext, so it admits every batch) and the unpacking arena.  Frames
 * enter through the shell's own entry points: control_request() for
 * control requests, turn_peer_frame() and turn_app_frame() for peer and
 * application frames, each in an nng message whose pipe says which
 * connection it came on.  No socket is ever opened: every reply
 * control.c sends (nng_sendmsg() on d->ctl) fails and is freed, as when
 * the client has gone, so the replies are built and packed but seen by
 * no one.  Between frames a turn runs as fuzz_coord_turn(), followed by
 * control_wake() at the simulated clock and control_event() for each of
 * the coordinator's events.
 */
#ifndef CUT_FUZZ_DAEMON_H
#define CUT_FUZZ_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "cutd.h"
#include "fuzz_coord.h"

struct fuzz_daemon {
	struct cutd d;
	struct fuzz_coord *f; /* d.coord is f->c */
};

/* Returns a new daemon; aborts when it cannot be built (a harness bug). */
struct fuzz_daemon *fuzz_daemon_new(void);
/* Frees what the shell holds, then the node (fuzz_coord_free()). */
void fuzz_daemon_free(struct fuzz_daemon *fd);

/* Hands the len bytes at data (copied into an nng message) to the shell:
 * as a peer frame on connection FUZZ_PEER_CONN (turn_peer_frame()), an
 * application frame on FUZZ_APP_CONN (turn_app_frame()), or a control
 * request (control_request(), which takes the message). */
void fuzz_daemon_peer(struct fuzz_daemon *fd, const uint8_t *data,
                      size_t len);
void fuzz_daemon_app(struct fuzz_daemon *fd, const uint8_t *data, size_t len);
void fuzz_daemon_control(struct fuzz_daemon *fd, const uint8_t *data,
                         size_t len);

/* The end of a loop turn: fuzz_coord_turn(), control_wake(), then
 * control_event() for each event. */
void fuzz_daemon_turn(struct fuzz_daemon *fd);

#endif /* CUT_FUZZ_DAEMON_H */
