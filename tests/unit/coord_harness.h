/*
 * coord_harness.h - node p0 of a three-node cluster around one
 * coordinator, for test_coord.c and test_restore.c.
 *
 * The cluster "test" has nodes p0, p1 and p2 and every ordered pair as a
 * channel; the coordinator is p0's, with epoch H_EPOCH, on a real SQLite
 * store in a temporary directory of its own (/tmp/cutd-test.XXXXXX).
 * The store reaches the coordinator through a port that passes every
 * call on, counts it, and fails the calls a test chooses (h_fail()), as
 * a full disk or a busy database would.  The clock is simulated and
 * moves only with h_time().
 *
 * Frames go in and come out as the shell sees them: a test builds a
 * PeerBatch (struct pb) or an AppBatch (struct ab) item by item; h_peer()
 * and h_app() pack it, decode it again with cutproto_unpack() (so that
 * only frames a peer could send reach the coordinator) and hand it over.
 * h_pull() and h_app_frame() take the coordinator's next frame, measured
 * then built, and decode it strictly.  Everything decoded is kept until
 * h_free(), so that tests may hold items.  Every helper asserts what
 * must hold for the test to make sense; a failure names the call.
 */
#ifndef CUT_COORD_HARNESS_H
#define CUT_COORD_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "coord.h"
#include "cutproto.h"
#include "store.h"
#include "store_fault.h"

/* Epochs of p0, p1 and p2. */
#define H_EPOCH 0xe0e0e0e0e0ULL
#define H_E1    0x1111111111ULL
#define H_E2    0x2222222222ULL
/* Connections: the application's, and p1's and p2's on p0's listener. */
#define H_APP 7
#define H_C1  11
#define H_C2  12
/* Where the clocks start. */
#define H_T0 1000000
#define H_WALL0                                                                \
	4000000000000LL /* ahead of the real clock, which the                  \
	                   store's id counter starts from */

struct h_fault {
	int rv;    /* the code to return; 0: none */
	int times; /* calls left to fail; -1: every one */
	int loses; /* the failure rolls the batch back, as SQLite does
	              after a full disk: later writes fail too */
};

struct h {
	char dir[64];
	struct config *cfg;
	struct store *st;
	struct coord *c;
	int64_t now, wall;
	/* The port in front of st (sim/store_fault.h), the faults it
	 * injects and the counts of its calls. */
	struct store_fault port;
	struct h_fault fault[STORE_OP_COUNT];
	uint64_t calls[STORE_OP_COUNT];
	/* Everything decoded, freed by h_free(). */
	ProtobufCMessage **keep;
	size_t nkeep, capkeep;
};

/* Makes p0 with extra lines (or NULL) in the [cluster] section, after
 * name, run_dir, state_dir, window = 65536, app_window = 65536,
 * message_cost = 16 and max_message = 65536.  The turn of coord_new()
 * is committed. */
struct h *h_new(const char *extra);
void h_free(struct h *h);

/* Moves both clocks on by ms. */
void h_time(struct h *h, int64_t ms);
/* coord_commit() must return 0. */
void h_commit(struct h *h);

/* The next `times` calls of op (-1: all, until h_fail(h, op, 0, 0)) fail
 * with rv; h_fail_lost() also rolls the batch back, as SQLite does after
 * a full disk, so that every later write and the commit fail until the
 * coordinator rolls back. */
void h_fail(struct h *h, enum store_op op, int rv, int times);
void h_fail_lost(struct h *h, enum store_op op, int rv, int times);

/* ---- Peer frames in ---- */

struct pb {
	const char *cluster, *from, *to; /* "test", from, "p0" */
	int has_epoch, has_to_epoch;     /* both 1 */
	uint64_t epoch, to_epoch;        /* from's H_E*, H_EPOCH */
	uint8_t *items;                  /* packed PeerItems, as field 4 */
	size_t len, cap;
	/* The restore generation in the header (pb_init: none). */
	int has_generation;
	uint64_t generation;
};

/* A recorded channel of a part, and a recorded message. */
struct h_chan {
	const char *src;
	uint64_t m, n, count, first, last;
	int consecutive;
};
struct h_msg {
	uint64_t seq;
	const char *payload; /* application/json */
};

void pb_init(struct pb *b, const char *from);
void pb_data(struct pb *b, uint64_t seq, uint64_t app_seq, const char *payload);
/* timeout_ms 0: none in the marker. */
void pb_marker(struct pb *b, uint64_t seq, const char *id, uint64_t count,
               uint32_t timeout_ms);
void pb_ack(struct pb *b, uint64_t upto, int has_taken, uint64_t taken);
void pb_hello(struct pb *b, uint64_t next_expected, uint64_t epoch);
void pb_abort(struct pb *b, uint64_t seq, const char *id, const char *reason,
              int root_cause);
void pb_renumber(struct pb *b, uint64_t seq);
/* consistent -1: no verdict. */
void pb_outcome(struct pb *b, uint64_t seq, const char *id, int complete,
                const char *reason, int consistent, uint32_t parts);
void pb_forget(struct pb *b, uint64_t seq, const char *id, int forgotten);
void pb_outcome_ask(struct pb *b, uint64_t seq);
void pb_part(struct pb *b, uint64_t seq, const char *id, const char *state,
             size_t nchans, const struct h_chan *chans);
void pb_part_messages(struct pb *b, uint64_t seq, const char *id,
                      const char *src, int final, size_t n,
                      const struct h_msg *msgs);
/* Restore items (coord_restore.c).  A channel of a PeerRestorePrepare;
 * reason NULL: none. */
struct h_rchan {
	const char *src, *dst;
	uint64_t m, n;
};
void pb_restore_prepare(struct pb *b, uint64_t seq, uint64_t generation,
                        const char *id, uint32_t timeout_ms, size_t nchans,
                        const struct h_rchan *chans);
void pb_restore_vote(struct pb *b, uint64_t seq, uint64_t generation, int ok,
                     const char *reason);
void pb_restore_abort(struct pb *b, uint64_t seq, uint64_t generation,
                      const char *reason);
void pb_restore_done(struct pb *b, uint64_t seq, uint64_t generation,
                     uint64_t replayed);
/* Packs b, decodes it and hands it to coord_peer_input() on conn; b is
 * empty again (its header kept). */
/* b packed as its peer would send it (header, then its items); b is
 * empty again.  The caller frees the frame. */
uint8_t *pb_pack(struct pb *b, size_t *ret_len);
void h_peer(struct h *h, uint32_t conn, struct pb *b);
/* A batch of one PeerHello(next_expected, from's epoch) from `from`. */
void h_peer_hello(struct h *h, uint32_t conn, const char *from,
                  uint64_t next_expected);

/* ---- Peer frames out ---- */

/* The next frame to node, or NULL when none is owed; its measure and its
 * build must agree. */
Cut__V1__PeerBatch *h_pull(struct h *h, size_t node);

struct h_items {
	const Cut__V1__PeerItem *v[1024];
	size_t n;
};
/* Pulls every frame owed to node and appends their items to out (which
 * the caller zeroes first); returns the number of frames. */
size_t h_pull_items(struct h *h, size_t node, struct h_items *out);
/* The nth (from 0) item of kind in it, or NULL; how many there are. */
const Cut__V1__PeerItem *h_find(const struct h_items *it,
                                Cut__V1__PeerItem__ItemCase kind, size_t nth);
size_t h_count(const struct h_items *it, Cut__V1__PeerItem__ItemCase kind);
/* Peers up, each has said hello on its connection, the hellos owed to
 * them pulled: links running, epochs known. */
void h_link(struct h *h);
/* Pulls and drops whatever is owed to p1 and p2. */
void h_drain(struct h *h);

/* ---- The application ---- */

struct ab {
	uint8_t *items; /* packed AppItems, as field 1 */
	size_t len, cap;
};

struct h_resume {
	const char *node;
	int has_out_taken, has_in_taken, has_out_sent;
	uint64_t out_taken, in_taken, out_sent;
	uint64_t in_numbering;  /* AppResume.in_numbering, sent when not 0 */
	uint64_t out_numbering; /* AppResume.out_numbering, likewise */
};

void ab_init(struct ab *b);
void ab_hello(struct ab *b, const char *node, uint32_t version, size_t nresume,
              const struct h_resume *resume);
/* seq 0: none in the item. */
void ab_send(struct ab *b, const char *to, const char *payload, size_t len,
             uint64_t seq);
void ab_taken(struct ab *b, uint64_t handed);
void ab_reply(struct ab *b, const char *id, const char *state, uint64_t handed);
/* AppRestorable and AppRestored (failed 0: the callback succeeded;
 * reason NULL: none). */
void ab_restorable(struct ab *b, int yes);
void ab_restored(struct ab *b, const char *id, uint32_t failed,
                 const char *reason);
void h_app(struct h *h, uint32_t conn, struct ab *b);
/* The application says hello on conn (node p0, this version, no
 * resume); the hello reply must come, alone, to conn.  Returns it. */
const Cut__V1__AppHelloReply *h_hello(struct h *h, uint32_t conn);
/* One send, one taken, one state reply, each alone in a batch. */
void h_send(struct h *h, const char *to, const char *payload, uint64_t seq);
void h_taken(struct h *h, uint64_t handed);
void h_reply(struct h *h, const char *id, const char *state, uint64_t handed);
/* One AppRestorable, one AppRestored (succeeded), alone on H_APP. */
void h_restorable(struct h *h, int yes);
void h_restored(struct h *h, const char *id);
/* The same on application connection conn. */
void h_restorable_on(struct h *h, uint32_t conn, int yes);
void h_restored_on(struct h *h, uint32_t conn, const char *id);
/* A marker of id, or application message app_seq with payload, on link
 * item seq from p1 or p2, in a batch of its own on its connection. */
void h_marker(struct h *h, const char *from, uint64_t seq, const char *id,
              uint64_t count);
void h_data(struct h *h, const char *from, uint64_t seq, uint64_t app_seq,
            const char *payload);

/* The next down-stream frame, or NULL; measure and build must agree. */
Cut__V1__AppBatch *h_app_frame(struct h *h);
/* The next frame for one connection (hello reply, error), or NULL. */
Cut__V1__AppBatch *h_app_reply(struct h *h, uint32_t *ret_conn);
/* The error the next reply to conn carries; asserts there is one. */
const Cut__V1__AppError *h_app_error(struct h *h, uint32_t conn);

struct h_app_items {
	const Cut__V1__AppItem *v[1024];
	size_t n;
};
/* Pulls every down-stream frame owed and appends their items. */
size_t h_app_items(struct h *h, struct h_app_items *out);
const Cut__V1__AppItem *h_app_find(const struct h_app_items *it,
                                   Cut__V1__AppItem__ItemCase kind, size_t nth);
size_t h_app_count(const struct h_app_items *it,
                   Cut__V1__AppItem__ItemCase kind);

/* ---- Snapshots and the store ---- */

/* coord_start() must succeed; returns the id (static storage). */
const char *h_start(struct h *h, uint32_t timeout_ms);
/* The row of id: 0, or store_get()'s E_NOENT. */
int h_row(struct h *h, const char *id, struct store_snapshot *ret);
/* The status of id in the database file as another connection sees it
 * (what is committed): "in_progress", "complete", "aborted", or "" when
 * it has no row. */
const char *h_disk_status(struct h *h, const char *id);
/* The stored state of node for id into buf (NUL-terminated): 1 if
 * found. */
int h_state(struct h *h, const char *id, const char *node, char *buf,
            size_t len);
/* The stored summary of channel src -> dst of id: 1 if found.  Its src
 * and dst are not set. */
int h_channel(struct h *h, const char *id, const char *src, const char *dst,
              struct store_channel *ret);
/* The seqs of the stored messages of src -> dst of id (at most max);
 * returns how many there are. */
size_t h_messages(struct h *h, const char *id, const char *src, const char *dst,
                  uint64_t *seqs, size_t max);
struct coord_snap_view h_view(struct h *h, const char *id);
/* The committed row of the restores table for generation (as another
 * connection sees the database file): 1 if there is one.  h_restores()
 * counts the rows. */
struct h_restore_row {
	char snapshot_id[64], restorer[32];
	int64_t applied_ms;
	uint64_t replayed;
};
int h_restore_row(struct h *h, uint64_t generation, struct h_restore_row *ret);
uint64_t h_restores(struct h *h);
/* The daemon restarts on the same database with run id epoch: the
 * coordinator is freed and made again (its start's turn committed);
 * links and application are to be set up again. */
void h_restart(struct h *h, uint64_t epoch);
struct coord_peer_stats h_stats(struct h *h, size_t node);

#endif /* CUT_COORD_HARNESS_H */
