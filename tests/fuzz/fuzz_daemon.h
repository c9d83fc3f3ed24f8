/*
 * fuzz_daemon.h - a struct cutd without sockets, for the fuzz harnesses.
 *
 * The harnesses feed frames to the daemon's own decode-and-check code
 * (peer_batch(), app_batch(), control_request()), which needs a daemon
 * whose configuration, links, engine and store are real.  This one is
 * node p0 of a three-node cluster (p0, p1, p2, every ordered pair a
 * channel) named "fuzz", with epoch 1000, whose database lives in a
 * temporary directory.  Its sockets are never opened, so whatever it
 * sends fails and is freed, as when a peer is gone.
 *
 * Each input gets a fresh daemon to which p1 has delivered three messages
 * (queued for the application) and in which snapshot p0:1 is then in
 * progress (its state request pending); every
 * database write of the input is rolled back when the daemon is freed,
 * so that an input always meets the same daemon and a crash replays.
 * The daemon logs nothing unless CUT_FUZZ_LOG is set in the environment.
 */
#ifndef CUT_FUZZ_DAEMON_H
#define CUT_FUZZ_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "cutd.h"

/* The daemon's epoch, which batches may name as to_epoch. */
#define FUZZ_EPOCH 1000

/* Returns a new daemon; aborts when it cannot be built (a harness bug). */
struct cutd *fuzz_daemon_new(void);
/* Stops and frees d as cutd does at exit, minus the sockets. */
void fuzz_daemon_free(struct cutd *d);

/* Calls fn for each frame of a harness input: frames follow one another,
 * each a 2-byte little-endian length and that many bytes (the last one
 * may be cut short).  Between frames fuzz_turn() runs. */
void fuzz_frames(struct cutd *d, const uint8_t *data, size_t len,
                 void (*fn)(struct cutd *d, const uint8_t *frame, size_t len));
/* Hands the len bytes at data (copied) to the daemon as one frame from a
 * peer (peer_batch()), from the application on connection 1
 * (app_batch()), or from a control client (control_request()). */
void fuzz_peer_frame(struct cutd *d, const uint8_t *data, size_t len);
void fuzz_app_frame(struct cutd *d, const uint8_t *data, size_t len);
void fuzz_control_frame(struct cutd *d, const uint8_t *data, size_t len);

/* The end of a loop turn: timers, the batch to the application (which
 * marks deliveries as sent, so that AppTaken counts can be checked), the
 * store's commit point (kept open: the input is rolled back). */
void fuzz_turn(struct cutd *d);

#endif /* CUT_FUZZ_DAEMON_H */
