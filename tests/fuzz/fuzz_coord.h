/*
 * fuzz_coord.h - a coordinator on a real store, for the fuzz harnesses.
 *
 * The harnesses feed frames to the coordinator (core/coord.h) as the
 * daemon's shell does: decoded with cutproto, handed to
 * coord_peer_input() or coord_app_input(), and between frames a turn of
 * the loop (timers, the application's frames, the commit, the peers'
 * frames), every frame pulled decoded again and checked.  The node is
 * p0 of a three-node cluster (p0, p1, p2, every ordered pair a channel)
 * named "fuzz", with epoch FUZZ_EPOCH, whose database lives in a
 * temporary directory.
 *
 * Each input meets the same node: p1 (epoch FUZZ_P1_EPOCH) has sent it
 * three messages on link items 1 to 3 (queued for the application, which
 * has not said hello), p0 has started snapshot p0:1 (its state request
 * pending) and both peers' connections are up.  The clock is simulated:
 * the monotonic one starts at the real one's reading when the node is
 * made, the wall clock at 1 ms (with the store's id counter set back to
 * 0, so that the snapshot is p0:1, the id the seed corpus names), and
 * every turn moves both on by FUZZ_TURN_MS.
 *
 * The store is opened once per process.  Each input runs inside one
 * store batch that is rolled back when the node is freed: the port the
 * coordinator gets turns its begin, commit and rollback into no-ops on
 * that batch (they succeed), so the coordinator sees every turn commit,
 * the database sees nothing of the input afterwards, and a crash
 * replays.  Nothing is logged unless CUT_FUZZ_LOG is set.
 */
#ifndef CUT_FUZZ_COORD_H
#define CUT_FUZZ_COORD_H

#include <stddef.h>
#include <stdint.h>

#include "coord.h"
#include "cutproto.h"

struct store;

/* p0's epoch, which batches may name as to_epoch, and p1's. */
#define FUZZ_EPOCH    1000
#define FUZZ_P1_EPOCH 2000
/* The connection every peer frame comes on, and the application's. */
#define FUZZ_PEER_CONN 1
#define FUZZ_APP_CONN  1
/* How far the clock moves each turn. */
#define FUZZ_TURN_MS 100

struct fuzz_coord {
	struct coord *c;
	int64_t now, wall;
	struct cutproto_arena arena; /* for unpacking the input's frames */
};

/* The cluster file and the store, made on first use. */
struct config *fuzz_config(void);
struct store *fuzz_store(void);

/* Returns a new node; aborts when it cannot be built (a harness bug). */
struct fuzz_coord *fuzz_coord_new(void);
/* Stops the coordinator (coord_stop), frees it and rolls the input's
 * writes back. */
void fuzz_coord_free(struct fuzz_coord *f);

/* Decodes the len bytes at data as a PeerBatch (on FUZZ_PEER_CONN) or an
 * AppBatch (on FUZZ_APP_CONN) and hands it to the coordinator; a frame
 * that does not decode goes to coord_peer_bad() or coord_app_bad(). */
void fuzz_coord_peer(struct fuzz_coord *f, const uint8_t *data, size_t len);
void fuzz_coord_app(struct fuzz_coord *f, const uint8_t *data, size_t len);

/* Moves the clock on by ms. */
void fuzz_coord_advance(struct fuzz_coord *f, int64_t ms);
/* One turn of the daemon's loop, FUZZ_TURN_MS after the last: timers; a
 * peer the coordinator finds silent is dialed again at once
 * (coord_peer_redialed(), coord_peer_up()); the application's replies
 * and down-stream frames; the commit; then every peer's frames.  Each
 * frame pulled must be as long as its measure said (a peer frame at
 * most as long) and decode strictly; otherwise the harness aborts. */
void fuzz_coord_turn(struct fuzz_coord *f);

/* Calls fn(arg, frame, len) for each frame of a harness input: frames
 * follow one another, each a 2-byte little-endian length and that many
 * bytes (the last one may be cut short).  After each, turn(arg). */
void fuzz_frames(const uint8_t *data, size_t len,
                 void (*fn)(void *arg, const uint8_t *frame, size_t len),
                 void (*turn)(void *arg), void *arg);

/* Prints what went wrong and aborts: a harness bug or a finding. */
void fuzz_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* CUT_FUZZ_COORD_H */
