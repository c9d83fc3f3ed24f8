/*
 * turn.h - one turn of a daemon's loop, over a port.
 *
 * cutd (shell/cutd.c) and the simulation (sim/simnet.c) run a node the
 * same way: whenever something may have happened (a frame, a closed
 * connection, a call, a timer), they call turn_run(), which does the
 * turn in its one order and with its one set of rules:
 *
 *   1. the clock, then the connections that opened and closed: a peer's
 *      new connection drops the frame that waited for the old one, the
 *      coordinator hears of every closed peer and application
 *      connection;
 *   2. frames in, at most TURN_RECV_MAX from each socket, decoded into
 *      one arena; a frame that does not decode is the sender's fault
 *      (coord_peer_bad, coord_app_bad); a new application whose
 *      connection closed before its hello was read is closed at once;
 *   3. the shell's calls (control, HTTP; the simulation's starts), the
 *      coordinator's timers, a silent peer's connection closed and
 *      dialed again, a dialer that never connected replaced, and the
 *      shell's own timers;
 *   4. the application's replies and down-stream frames (at most
 *      TURN_BATCHES_MAX), which stand for nothing stored, so they go
 *      before the commit;
 *   5. the commit of the turn's writes, and the shell's after-commit
 *      step (held replies, conditions);
 *   6. frames to each connected peer, at most TURN_BATCHES_MAX, only
 *      once the batch is on disk: nothing goes to a peer before what it
 *      stands for (a part, an ack of what was recorded) is stored.
 *
 * A frame the port refuses (nng's queue full, the simulated connection
 * gone) is kept and goes first next time; a peer's is dropped when its
 * next connection comes up (the coordinator sends its content again).
 *
 * The port does the I/O: it reads and sends frames, reports connection
 * events and closes and dials connections.  It holds no protocol rule.
 * Nothing here touches a socket, a thread or a clock.
 */
#ifndef CUT_TURN_H
#define CUT_TURN_H

#include <stddef.h>
#include <stdint.h>

#include "coord.h"
#include "cutproto.h"

/* Frames read from each socket in a turn: the loop stays responsive. */
#define TURN_RECV_MAX 256
/* Frames sent to each peer, and to the application, in a turn. */
#define TURN_BATCHES_MAX 64
/* A dialer that has not connected for this long is replaced. */
#define TURN_REDIAL_MS 1000
/* A turn this long held up every peer and call (a disk that stalls the
 * database, a machine out of CPU): logged, since peers may have seen
 * this node silent (DEAD_MS) and dialed again. */
#define TURN_SLOW_MS     1000
#define TURN_SLOW_LOG_MS 10000
/* The longest sleep between turns. */
#define TURN_SLEEP_MAX_MS 1000
/* Closed application connections remembered, for a hello that is read
 * after its connection's close was reported. */
#define TURN_APP_GONE_KEEP 16

/* A frame read: the port's handle for it (given back to in_done), its
 * bytes, and the connection it came on. */
struct turn_in {
	void *frame;
	const uint8_t *data;
	size_t len;
	uint32_t conn;
};

struct turn_port {
	void *ctx;
	/* The monotonic and the wall clock, in milliseconds. */
	void (*clock)(void *ctx, int64_t *now, int64_t *wall);

	/* Peer connections (peers dial us; we dial them). */
	/* Listener connections closed since the last call: their ids. */
	size_t (*peer_closed)(void *ctx, uint32_t *ids, size_t max);
	/* 1 once for each connection of our dialer to node that opened. */
	int (*peer_added)(void *ctx, size_t node);
	/* Whether our dialer to node has an open connection. */
	int (*peer_connected)(void *ctx, size_t node);
	/* Closes our open connection to node (it went silent). */
	void (*peer_hang_up)(void *ctx, size_t node);
	/* Replaces our dialer to node, which has not connected. */
	void (*peer_redial)(void *ctx, size_t node);

	/* The application's connections closed since the last call. */
	size_t (*app_closed)(void *ctx, uint32_t *ids, size_t max);

	/* Frames in: 1 with *in filled, 0 when nothing more is there. */
	int (*peer_recv)(void *ctx, struct turn_in *in);
	int (*app_recv)(void *ctx, struct turn_in *in);
	void (*in_done)(void *ctx, struct turn_in *in);
	/* Whether a decoded peer batch may act (TLS authentication); NULL:
	 * every batch may. */
	int (*peer_admit)(void *ctx, uint32_t conn,
	                  const Cut__V1__PeerBatch *b);

	/* Frames out.  frame_new() gives a frame of len bytes and its
	 * body; frame_trim() shortens it; a send returns 0 once the frame
	 * is the port's, else the frame stays the turn's. */
	void *(*frame_new)(void *ctx, size_t len, uint8_t **body);
	void (*frame_trim)(void *ctx, void *frame, size_t len);
	void (*frame_free)(void *ctx, void *frame);
	int (*peer_send)(void *ctx, size_t node, void *frame);
	int (*app_send)(void *ctx, void *frame);
	/* A reply to one application connection (a hello's, an error). */
	void (*app_reply)(void *ctx, uint32_t conn, const uint8_t *data,
	                  size_t len);
	/* The proof of who we are for a new connection's first frame;
	 * nonzero: not ready, send nothing yet.  NULL: no proof. */
	int (*peer_auth)(void *ctx, size_t node,
	                 const Cut__V1__PeerAuth **auth);

	/* The shell's steps: calls (control, HTTP, starts), its own timers,
	 * what follows the commit (rv: coord_commit()'s), and then each of
	 * the coordinator's events (coord_next_event()).  Each may be NULL
	 * (events are then taken and dropped). */
	void (*calls)(void *ctx);
	void (*timers)(void *ctx, int64_t now);
	void (*committed)(void *ctx, int rv, int64_t now);
	void (*event)(void *ctx, const struct coord_event *ev);
};

/* What the turn keeps of one peer. */
struct turn_peer {
	int up;         /* as last told the coordinator */
	void *pending;  /* a frame the port would not take yet */
	int64_t since;  /* when its connection came up */
	int64_t dialed; /* when its dialer was made */
};

struct turn {
	struct coord *c;
	const struct turn_port *p;
	size_t self, nnodes;
	struct turn_peer *peer;
	void *app_pending;
	uint32_t app_gone[TURN_APP_GONE_KEEP];
	size_t app_gone_next;
	struct cutproto_arena arena;
	/* The simulation's planted bug (cutlab sim --self-check deadline):
	 * the coordinator's timers never run. */
	int no_timers;
	/* Turns that took TURN_SLOW_MS or more, and when one was last
	 * logged (at most one line per TURN_SLOW_LOG_MS). */
	uint64_t slow_turns;
	int64_t slow_logged;
};

/*
 * A run of node self of cfg, begun and ended the same way by cutd and by
 * the simulation.  turn_start() makes the coordinator of run epoch
 * (random, never 0) on the store sp, at the port's clock; commits its
 * first batch, which marks what the last run left unfinished aborted
 * ("daemon restarted"), so that nothing of this run can mix with it;
 * and prepares t (turn_init()) with the dialers made now.  The port must
 * be ready (its clock and committed step are used).  Returns 0 with the
 * coordinator in t->c (the caller frees it after turn_fini()), or
 * coord_new()'s error with e saying why, or E_NOMEM.
 *
 * turn_stop() ends the run in order: what is in flight ends aborted
 * with reason, that batch is committed, and the shell's after-commit
 * step runs (held replies answered, waits woken, conditions judged).
 * A process that is killed does neither: its next start finds what it
 * had not committed gone.
 */
int turn_start(struct turn *t, const struct config *cfg, size_t self,
               uint64_t epoch, struct store_port sp, const struct turn_port *p,
               struct errinfo *e);
void turn_stop(struct turn *t, const char *reason);

/* Prepares t for node self of nnodes, whose dialers were made at now.
 * 0, or ENOMEM. */
int turn_init(struct turn *t, struct coord *c, size_t self, size_t nnodes,
              const struct turn_port *p, int64_t now);
/* Frees the pending frames and the arena. */
void turn_fini(struct turn *t);
/* One turn. */
void turn_run(struct turn *t);
/* How long the loop may sleep, at most max milliseconds: until the
 * coordinator's next timer, a redial, or at once for a pending frame. */
int turn_next_timer(struct turn *t, int max);
/* Decodes one frame read from a peer (admitted by the port) or from the
 * application and hands it to the coordinator, as turn_run() does with
 * each; exposed for the fuzz harnesses. */
void turn_peer_frame(struct turn *t, const struct turn_in *in);
void turn_app_frame(struct turn *t, const struct turn_in *in);
/* When node's connection came up (for a shell that spares young ones). */
int64_t turn_peer_since(const struct turn *t, size_t node);

#endif /* CUT_TURN_H */
