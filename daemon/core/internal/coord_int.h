/*
 * coord_int.h - the coordinator's private state, shared by its files and
 * by nothing else:
 *
 *   coord.c         life cycle, the commit, events, timers, queries
 *   coord_batch.c   the turn's batch of writes, clock, wire helpers (the
 *                   bottom: it calls none of the others)
 *   coord_peer.c    the reliable links to the other nodes and their frames
 *   coord_route.c   a peer's batch from the top: each item to its layer
 *   coord_app.c     the application's down stream, its connection, frames
 *   coord_app_in.c  the up stream from the top: each item to its layer
 *   coord_snap.c    the engine's actions, snapshots, deadlines, storage
 *                   faults
 *   coord_asm.c     parts to the initiator, assembly and audit
 *   coord_sched.c   schedule, outcomes, retention and forget
 *   coord_restore.c restore
 *   coord_stats.c   counters for metrics
 *
 * Their calls to each other are declared at the end.
 */
#ifndef CUT_COORD_INT_H
/* Outcomes a participant keeps to store again after a lost commit. */
#define OUTCOMES_KEEP 32
#define CUT_COORD_INT_H

#include "audit.h"
#include "coord.h"
#include "fifo.h"
#include "link.h"

/* Another node, seen from this one. */
struct peer {
	size_t node;            /* index in cfg->nodes */
	struct link *out;       /* link self -> node */
	struct link *in;        /* link node -> self */
	uint64_t epoch;         /* its run id, from its hello; 0 unknown */
	int64_t last_seen_ms;   /* last batch from it (wall clock) */
	int64_t heard_ms;       /* last batch from it */
	int64_t sent_ms;        /* last batch to it */
	int64_t progress_ms;    /* last ack progress, or last resend */
	int64_t acked_ms;       /* last ack progress, or when items began
	                           waiting for one */
	int64_t ack_due_ms;     /* we owe it an ack since then; 0: none */
	int hello_due;          /* we owe it a hello */
	int up;                 /* a connection to it is open */
	long in_chan, out_chan; /* engine channel indexes, or -1 */
	/* The listener connection p's batches come on, 0 when none. */
	uint32_t in_conn;
	uint64_t refused_conns; /* connections ignored for posing as p */
	uint32_t refused_conn;  /* the latest of them */

	/* Outgoing channel: flow control and reliability across restarts.
	 * inflight holds each application message sent and not yet taken by
	 * the receiving application, as a packed PeerData (seq 0), tagged
	 * (app_seq, window charge): sent again if p restarts. */
	struct fifo inflight;
	uint64_t inflight_bytes;
	uint64_t app_taken;   /* the receiver's taken count */
	uint64_t taken_told;  /* app_taken as last told the application */
	uint64_t accepted;    /* bytes taken from this app connection */
	uint64_t credit_sent; /* the limit last told the application */
	int credit_force;     /* tell it even if unchanged */
	uint64_t stalls;      /* sends refused for want of window */
	uint64_t resend_upto; /* our application resends up to this app_seq */
	int out_numbered;     /* this run has numbered the channel */
	/* The link seq of our PeerRenumber until an ack passes it: the
	 * taken counts of acks before it are of the old numbering. */
	uint64_t renumber_seq;
	uint64_t resent; /* messages sent again after p restarted */

	/* Incoming channel: what our application has taken. */
	uint64_t taken;          /* app_seq of the last message handed */
	uint64_t taken_reported; /* as last told the peer */
	uint64_t taken_bytes;    /* payload bytes taken since last told */
	int in_known;            /* the channel's numbering is known */
	/* Deliveries of p's numbering before its PeerRenumber still in the
	 * down stream (the first ones of p there): taken, they are nothing
	 * taken of the new numbering. */
	size_t old_items;
	/* renum_next: the next delivery from p is the first of the numbering
	 * p's run renum_epoch began (AppDeliver.numbering, DOWN_RENUM);
	 * renum_unseen: one so marked is queued or was sent, and the
	 * application has not been heard to take it (then libcut's resume
	 * may count the old numbering: resume() in coord_app.c). */
	int renum_next, renum_unseen;
	uint64_t renum_epoch;
	/* The numberings of the channels to and from p (PeerRenumber
	 * .numbering), 0 when not known. */
	uint64_t out_numbering, in_numbering;
	uint64_t dups; /* messages dropped as already had */
	/* An outcome from p was lost (keep_outcome()): ask p for its
	 * outcomes again once the database stores them. */
	int ask_outcomes;
	uint64_t sent_bytes, recv_bytes, ups; /* metrics (coord_stats.c) */
};

/* A state request waiting to go to the application, or answered not
 * yet.  An unaligned request goes at the front of the next batch; an
 * aligned one when the deliveries before it (up to absolute index at)
 * have gone.  upto[i]: the messages delivered on engine incoming channel
 * i when it was made; the application's state may cover no more. */
struct appreq {
	char id[ENGINE_ID_MAX + 1];
	uint64_t at;
	int overtake, sent;
	uint64_t *upto;
	struct appreq *next;
};

/* A frame for one application connection, to go at once. */
struct app_reply {
	uint32_t conn;
	uint8_t *buf;
	size_t len;
	struct app_reply *next;
};

/* A recorded incoming channel of this node's part. */
struct part_chan {
	size_t src; /* node index */
	uint64_t m, n;
	struct audit_seqs seqs;
	int done;
	/* Unaligned cut: messages the engine recorded while the state request
	 * was pending, seqs def_lo .. def_hi (0: none).  They are stored
	 * after the queued range the reply reveals, which comes before them
	 * in seq order; until then they wait, untaken, in the down stream. */
	uint64_t def_lo, def_hi;
};

/* A part the initiator is receiving from another node. */
struct incoming_part {
	int started, done;
	int reported; /* the node told us why it gave up */
	struct part_chan *chans;
	size_t nchans;
};

enum snap_state {
	SNAP_RUNNING, /* this node's part is being recorded */
	SNAP_WAITING, /* part done; the initiator waits for others */
	SNAP_DONE,    /* part done (participant) or snapshot complete */
	SNAP_ABORTED,
};

/* A snapshot this node takes part in. */
struct snap {
	char id[ENGINE_ID_MAX + 1];
	size_t initiator; /* node index */
	enum snap_state state;
	int64_t started_ms, deadline_ms;
	uint32_t timeout_ms; /* the initiator's timeout, passed on in markers */
	int state_recorded;
	struct part_chan *in; /* per engine incoming channel */
	/* Initiator only. */
	struct incoming_part *parts; /* per node */
	size_t nparts, parts_done;
	int64_t ended_ms;
	/* Why participants gave up, as they reported it; the initiator
	 * aborts with these at its deadline, root causes first. */
	char reasons[400];
	struct snap *next;
	/* Storage faults (coord_snap.c): when it started by the wall clock,
	 * why it was aborted, the batch that ended it, and whether that end
	 * is still to be written again because its batch was rolled back. */
	int64_t started_wall_ms;
	char why[400];
	uint64_t ended_gen;
	int unsaved;
	/* Participant: its part, complete in the open batch, goes to the
	 * initiator once that batch commits (snap_committed()). */
	int part_due;
	/* Participant: why it gave up went to the initiator (give_up()),
	 * and goes again if the initiator restarts before having it. */
	int told_abort;
	/* Participant: refused while degraded (refuse_degraded()), so that
	 * no row of it is here and none is written for its end. */
	int no_row;
	/* Its end as an event (coord_next_event()): 0 running, 1 ended and
	 * not told yet, 2 told. */
	int end_told;
};

/* The schedule at this node (coord_sched.c). */
struct coord_sched {
	int paused;
	int64_t last_tick; /* the last wall-clock tick seen */
	uint64_t ticks, started, skipped, paused_ticks, failed;
	char last_id[ENGINE_ID_MAX + 1]; /* the last scheduled start */
};

/* A restore (coord_restore.c).  Phases at the restorer (the snapshot's
 * initiator) and at every other node; see the diagram there. */
enum restore_phase {
	RS_IDLE,
	RS_VOTING,     /* restorer: prepares sent, votes coming in */
	RS_PREPARED,   /* other node: voted yes, waits for the decision */
	RS_CONFIRMING, /* restorer: applied, waits for every node's done */
};

/* A channel src -> dst of the snapshot being restored, with its counts. */
struct rchan {
	size_t src, dst;
	uint64_t m, n;
};

struct coord_restore {
	enum restore_phase phase;
	uint64_t gen;  /* the generation applied here (0: none) */
	uint64_t pgen; /* the generation prepared (valid with chans) */
	char id[ENGINE_ID_MAX + 1];
	size_t restorer;
	uint32_t timeout_ms;
	int64_t deadline;
	struct rchan *chans; /* NULL: nothing prepared */
	size_t nchans;
	/* The restorer: per node, voted yes / applied. */
	uint8_t *voted, *done;
	uint64_t replayed, state_bytes, message_bytes;
	/* The outcome of the last restore run here, for the control call:
	 * result 0 while it runs, 1 done, else an E_* code with why. */
	int result;
	char why[400];
	/* A restore this node started (coord_restore()) whose end
	 * coord_next_event() has not told yet: told once the phase is
	 * idle, however it got there. */
	int end_due;
	/* The application: it registered a restore callback; deliveries
	 * are held (voting or prepared); AppRestore is to go (app_due) or
	 * went and AppRestored has not come (app_wait); app_item holds
	 * the packed AppItem. */
	int restorable, paused, app_due, app_wait;
	uint8_t *app_item;
	size_t app_item_len;
	uint64_t old_batches; /* batches dropped as from an older generation */
	uint64_t adopted;     /* a generation taken without its restore */
	/* A prepared node that resumed keeps chans until then. */
	int64_t kept_until;
	/* After applying, a node owes the restorer (done_to) its
	 * PeerRestoreDone once its application took the restore; the
	 * restorer collects why applications failed. */
	int done_due;
	size_t done_to;
	uint64_t applied_replayed;
	char failed_why[400];
	/* The restores row of the last apply or adoption, written again
	 * while its batch is lost (row_unsaved). */
	int row_unsaved;
	uint64_t row_gen, row_replayed;
	char row_id[ENGINE_ID_MAX + 1];
	size_t row_by;
	int64_t row_ms;
};

/* Deletions kept per node until it confirms them. */
#define FORGET_MAX 4096
/* Deletions answered per turn at most; past that the initiator asks
 * again. */
#define FORGOT_MAX     64
/* Copies to delete again (sched_forget_late()) kept to write again. */
#define LATE_KEEP      32
#define FORGOTTEN_KEEP 256

struct coord {
	const struct config *cfg;
	/* Snapshots whose end_told is 1 (coord_next_event()). */
	size_t ends_untold;
	size_t self;
	const char *name;  /* cfg->nodes[self].name */
	uint64_t epoch;    /* this run's id */
	int64_t now, wall; /* the time, as the caller last gave it */
	int64_t start_ms;
	struct engine *eng;
	size_t *in_node, *out_node; /* engine channel index -> node */
	size_t n_in, n_out;
	struct peer *peers; /* by node index; self's entry unused */
	struct store_port st;

	/* The application link: the connection that said hello (0: none)
	 * and whether it closed since. */
	uint32_t app_hello;
	int app_gone;
	/* The down stream: packed AppItem deliveries, oldest first, tagged
	 * (app_seq, down_tag()).  The first down_sent went to the current
	 * application and wait for its AppTaken; down_base is its handed
	 * count at the head, down_head_abs the head's index since start. */
	struct fifo down;
	size_t down_sent;
	uint64_t down_base, down_head_abs;
	uint64_t down_sent_bytes; /* payload bytes sent, not taken */
	struct appreq *reqs;      /* in the order made */
	struct app_reply *replies, **replies_tail;
	size_t nreplies;

	/* The turn's batch of writes: opened on the first write of a turn
	 * (coord_db()); batch_gen counts batches opened so far (the current
	 * one's number); begin_failed: this turn's begin failed;
	 * write_failed: a call in the open batch failed as storage fails (a
	 * full disk, an I/O error), which may have lost that write alone
	 * and left the batch open: the batch is then lost as a whole.  While
	 * the database does not take writes, degraded holds SQLite's words
	 * ("" when it does) and retry_ms when coord_storage_retry() last
	 * tried.  unfinished: the batch that marks aborted what an earlier
	 * run left in progress, while it has not committed (0 once it has):
	 * if the start's batch fails, the retries mark it again.  lost_why:
	 * the words of the first failed write (coord_write_failed()). */
	int batch_open, begin_failed, write_failed;
	char lost_why[256];
	uint64_t unfinished;
	/* The parts an earlier run ended by stopping are still to be told
	 * to their initiators (snap_tell_stopped()). */
	int tell_stopped;
	uint64_t batch_gen;
	char degraded[256];
	int64_t retry_ms;

	struct snap *snaps;
	uint64_t next_snap; /* the last snapshot id counter issued */
	uint64_t bad_peer, bad_app;

	/* coord_sched.c: the schedule; retention due (an own snapshot
	 * ended) and when it last ran; free pages to give back once the
	 * turn commits, and when that was last done. */
	struct coord_sched sched;
	/* Outcomes stored in the open batch, and those a failed commit
	 * lost, stored again once the database works (the initiator tells
	 * an outcome once a link: it would never come again). */
	struct outcome_rec {
		char id[ENGINE_ID_MAX + 1];
		int complete, consistent;
		uint32_t parts;
		int64_t wall;
		char reason[256], audit_reason[256];
	} out_batch[OUTCOMES_KEEP], out_retry[OUTCOMES_KEEP];
	size_t nout_batch, nout_retry;
	int64_t out_retry_ms; /* when they were last tried again */
	int retain_due, reclaim_due;
	int64_t retain_ms, reclaim_ms;
	int64_t forget_ms; /* pending deletions last sent again */
	/* Deletions done here at their initiator's word, answered once
	 * their batch commits (a lost batch undoes them). */
	struct {
		char id[ENGINE_ID_MAX + 1];
		size_t node;
	} forgot[FORGOT_MAX];
	size_t nforgot;
	/* Copies of this node's deleted snapshots that a participant
	 * recorded again (sched_forget_late()): those whose pending
	 * deletion the open batch holds, and those a lost batch or a failed
	 * read left unwritten, written again once the database works (the
	 * participant's abort that told of the copy does not come again). */
	struct late_rec {
		char id[ENGINE_ID_MAX + 1];
		size_t node;
	} late_batch[LATE_KEEP], late_retry[LATE_KEEP];
	size_t nlate_batch, nlate_retry;
	int64_t late_retry_ms; /* when they were last tried again */
	/* The last FORGOTTEN_KEEP snapshots of other nodes deleted here
	 * at their initiator's word: a marker of one that comes later
	 * (on another link, or held by a partition) starts nothing. */
	char forgotten[FORGOTTEN_KEEP][ENGINE_ID_MAX + 1];
	size_t forgotten_next;
	struct coord_counters stats; /* metrics (coord_stats.c) */

	struct coord_restore rs;
};

/* The store port's calls, on c's database.  What DB() calls goes through
 * coord_db_rv(), which notes a storage failure in the open batch. */
#define DB(c, fn, ...)                                                         \
	coord_db_rv((c), (c)->st.ops->fn((c)->st.db, __VA_ARGS__))
#define DB0(c, fn) ((c)->st.ops->fn((c)->st.db))
#define DB_ERR(c)  ((c)->st.ops->errmsg((c)->st.db))

/* tag2 of a down-stream record (coord_app.c): the sending node and the
 * payload bytes.  (An app_seq means the same message across restarts of
 * either side.) */
#define DOWN_TAG(node, len) ((uint64_t)(node) | ((uint64_t)(len) << 32))
#define TAG_NODE(t)         ((size_t)((t)&0xffff))
#define DOWN_RENUM          ((uint64_t)1 << 16) /* in tag2: renumbered */
#define TAG_LEN(t)          ((size_t)((t) >> 32))

/* The content type to store for ctype as it came in: NULL or "" become
 * "application/octet-stream"; anything over 255 bytes or with bytes
 * outside printable ASCII is refused (NULL). */
const char *coord_ctype(const char *ctype);
/* Protobuf framing helpers (coord_batch.c): the bytes len bytes take as a
 * length-delimited field; its tag and length written to dst (at most 11
 * bytes); and the whole field.  A batch is its packed header followed by
 * its items this way, so queued items, packed once, are never re-encoded,
 * and a batch is built in one allocation of its final size. */
size_t wire_field_size(size_t len);
size_t wire_put_header(uint8_t *dst, unsigned field, size_t len);
size_t wire_put_field(uint8_t *dst, unsigned field, const void *data,
                      size_t len);

/* coord_batch.c: opens the turn's batch of writes if it is not open yet. */
void coord_db(struct coord *c);
/* A write failed whose loss nothing else handles: the turn's batch is
 * rolled back at coord_commit() and every snapshot it held aborted, so
 * that the database never holds half of what memory says. */
void coord_write_failed(struct coord *c, const char *what);
/* Returns rv, a store call's result, after noting a storage failure (not
 * a refusal such as E_EXIST or E_STATE) in the open batch: the batch is
 * then lost as coord_write_failed() makes it. */
int coord_db_rv(struct coord *c, int rv);
/* The wall-clock time of monotonic time t. */
int64_t coord_wall_of(const struct coord *c, int64_t t);

/* coord_peer.c */
int peer_init(struct coord *c);
void peer_fini(struct coord *c);
/* Returns where to pack a sequenced item of len bytes (a PeerItem whose
 * seq field is already peer_next_seq()) on the link to node, to be
 * written before any other peer call; NULL when the link is full. */
void *peer_push_space(struct coord *c, size_t node, size_t len);
uint64_t peer_next_seq(struct coord *c, size_t node);
/* Packs item (whose seq is already peer_next_seq()) onto the link. */
int peer_push_item(struct coord *c, size_t node, const Cut__V1__PeerItem *item);
/* Packs item onto the link to every other node, its seq field (*seq) set
 * for each; logs, for each link that is full, that it cannot tell that
 * node what (a phrase: "the outcome of p0:5").  Returns how many. */
size_t peer_push_all(struct coord *c, const Cut__V1__PeerItem *item,
                     uint64_t *seq, const char *what);
/* Keeps application message data (a PeerData, seq ignored) of len
 * payload bytes, sent on the channel to node, until the receiving
 * application has taken it. */
int peer_note_data(struct coord *c, size_t node, const Cut__V1__PeerData *data,
                   size_t len);
/* Takes back the last peer_note_data() of len bytes: the link refused. */
void peer_unnote_data(struct coord *c, size_t node, size_t len);
/* 1 if a message of len bytes fits the window of the channel to node. */
int peer_window_open(struct coord *c, size_t node, size_t len);
/* Our application took messages of the channel from node, up to app_seq,
 * with len payload bytes among them. */
void peer_taken(struct coord *c, size_t node, uint64_t app_seq, size_t len);
void peer_timers(struct coord *c);
int peer_next_timer(struct coord *c, int max);
/* A batch from a peer, from coord_route.c.  peer_bound(): its header
 * checked and its connection bound (bind_conn()), the peer it speaks for,
 * or NULL (dropped, counted if bad).  On a new epoch the caller then
 * calls peer_first_epoch() (the first one heard) or peer_restarted()
 * (the peer restarted: both links afresh, what its application had not
 * taken sent again; -1 if out of memory, nothing changed).
 * peer_item(): acks, hellos and the link's order; 1 when item is the
 * next in order and is to be handled now, followed by every item
 * peer_release() gives (the caller frees each). */
struct peer *peer_bound(struct coord *c, const Cut__V1__PeerBatch *b,
                        uint32_t conn);
void peer_first_epoch(struct coord *c, struct peer *p);
int peer_restarted(struct coord *c, struct peer *p);
int peer_item(struct coord *c, struct peer *p, const Cut__V1__PeerItem *it,
              int for_us);
Cut__V1__PeerItem *peer_release(struct coord *c, struct peer *p);

/* coord_app.c */
void app_init(struct coord *c);
void app_fini(struct coord *c);
/* Appends a delivery or a state request to the down stream. */
int app_deliver(struct coord *c, size_t from, const char *content_type,
                const void *payload, size_t len, uint64_t seq);
int app_request_state(struct coord *c, const char *id);
/* The snapshot id no longer needs its state request. */
void app_forget_request(struct coord *c, const char *id);
/* Calls fn for each queued delivery from node `from` that the application
 * has not taken, with app_seq in [first, first + count), oldest first.
 * Returns the first non-zero fn result, or 0. */
/* How many deliveries from node `from` the down stream holds. */
size_t app_queued_from(const struct coord *c, size_t from);
/* Whether deliveries of a numbering a sender's PeerRenumber ended are
 * still queued for the application (struct peer's old_items). */
int app_old_queued(const struct coord *c);
int app_queued(struct coord *c, size_t from, uint64_t first, uint64_t count,
               int (*fn)(void *arg, uint64_t app_seq, const char *ctype,
                         const void *payload, size_t len),
               void *arg);
/* For the up stream (coord_app_in.c): the application has been handed
 * `handed` deliveries on this connection, which are freed and credited
 * (-1 if the count goes backwards or past what was sent); an item to go
 * at once to connection conn; an AppError; a bad frame, counted, logged
 * and answered with an AppError.  app_drop_had() drops the queued
 * deliveries from `from` up to app_seq upto, which the application
 * already has: across a delivery marked renumbered, HAD_OLD counts upto
 * in the numbering before it (which stays with all after it), HAD_NEW in
 * the one it begins (all before it go too). */
int app_take_upto(struct coord *c, uint64_t handed);
void app_send_now(struct coord *c, uint32_t conn, const Cut__V1__AppItem *it);
void app_error(struct coord *c, uint32_t conn, uint32_t code,
               const char *text);
void app_bad(struct coord *c, uint32_t conn, uint32_t code, const char *what);
enum had { HAD_ANY, HAD_OLD, HAD_NEW };
void app_drop_had(struct coord *c, size_t from, uint64_t upto, enum had how);

/* coord_snap.c */
int snap_init(struct coord *c, struct errinfo *e);
void snap_fini(struct coord *c);
struct snap *snap_find(struct coord *c, const char *id);
/* Sends application message seq (0: the next) to node `to`: E_DUP for a
 * seq the channel already has (dropped), E_GAP for a gap, E_FULL beyond
 * the window, E_NOCHAN without a channel. */
int snap_app_send(struct coord *c, const char *to, const char *content_type,
                  const void *payload, size_t len, uint64_t seq);
/* A restarted daemon learns where a channel's numbering stands from its
 * application; snapshots in progress are aborted first. */
int snap_resume_out(struct coord *c, size_t node, uint64_t count);
int snap_resume_in(struct coord *c, size_t node, uint64_t count);
/* Tells node that the channel to it numbers from 1 again. */
int snap_renumber(struct coord *c, size_t node, uint64_t numbering);
int snap_state_reply(struct coord *c, const char *id, const char *ctype,
                     const void *state, size_t len);
int snap_data(struct coord *c, size_t from, uint64_t app_seq,
              const char *content_type, const void *payload, size_t len);
int snap_marker(struct coord *c, size_t from, const char *id, uint64_t n,
                uint32_t timeout_ms);
int snap_abort_msg(struct coord *c, size_t from, const char *id,
                   const char *reason, int root_cause);
/* After node restarted and its links were made anew: the aborts of its
 * snapshots this node told its last run go again. */
void snap_tell_aborts_again(struct coord *c, size_t node);
void snap_peer_restarted(struct coord *c, size_t node);
void snap_timers(struct coord *c);
int snap_next_timer(struct coord *c, int max);
/* This node cannot finish s because what failed ("cannot store ..."); the
 * store's last error completes the reason. */
void snap_give_up(struct coord *c, struct snap *s, const char *what);
/* This node gives up snapshot id, because of why (a sentence). */
void snap_abandon(struct coord *c, const char *id, const char *why);
/* The turn's batch did not commit (or never began). */
void snap_storage_failed(struct coord *c);
/* After a commit: the parts it made durable go to their initiators. */
void snap_committed(struct coord *c);
int snap_storage_retry(struct coord *c);
/* 1 if s ended in the turn's batch and that end cannot be read as it is
 * yet: a completion not committed, or any end in a lost turn. */
int snap_end_pending(const struct coord *c, const struct snap *s);
/* s just ended here (DONE or ABORTED): its end is told as an event once
 * it can be read (snap_next_end()). */
void snap_ended(struct coord *c, struct snap *s);
/* The next ended snapshot not told yet whose end can be read, as ev;
 * 0 if none. */
int snap_next_end(struct coord *c, struct coord_event *ev);

/* The index of the node that initiated id (its name up to the last
 * ':'), or -1. */
long snap_initiator_of(struct coord *c, const char *id);

/* coord_sched.c */
void sched_init(struct coord *c);
/* After a failed commit: the outcomes and the deletions of copies
 * recorded late (sched_forget_late()) it lost are stored again later. */
void sched_storage_failed(struct coord *c);
void sched_timers(struct coord *c);
int sched_next_timer(struct coord *c, int max);
/* After coord_commit(): gives back the pages deletions freed. */
void sched_committed(struct coord *c);
/* A part of this node's snapshot id came from node after id was
 * deleted here (a marker reached node after the deletion had): node
 * deletes it again. */
void sched_forget_late(struct coord *c, size_t node, const char *id);
/* 1 if snapshot id (another node's) was deleted here lately, at its
 * initiator's word or by a Delete here. */
int sched_was_forgotten(const struct coord *c, const char *id);
/* The turn's batch was lost: what it deleted is not answered. */
void sched_batch_lost(struct coord *c);
/* The initiator tells every other node how s ended (consistent -1: not
 * audited). */
void sched_tell_outcome(struct coord *c, const struct snap *s, int complete,
                        const char *reason, int consistent,
                        const char *audit_reason);
int sched_outcome(struct coord *c, size_t from, const Cut__V1__PeerOutcome *o);
void sched_outcome_ask(struct coord *c, size_t from);
/* Deletes stored snapshot id: this node's own everywhere, another's
 * here only. */
int sched_delete(struct coord *c, const char *id);
int sched_forget(struct coord *c, size_t from, const Cut__V1__PeerForget *f);
int sched_forgotten(struct coord *c, size_t from,
                    const Cut__V1__PeerForgotten *g);
/* node's epoch became known or changed: its link starts afresh, so the
 * deletions it has not confirmed go again. */
void sched_peer_epoch(struct coord *c, size_t node);

/* coord_asm.c */
/* Sends this node's complete part of s to its initiator. */
int asm_send_part(struct coord *c, struct snap *s);
/* The initiator's own part of s is complete. */
void asm_own_part(struct coord *c, struct snap *s);
int asm_part(struct coord *c, size_t from, const Cut__V1__PeerPart *p);
int asm_part_messages(struct coord *c, size_t from,
                      const Cut__V1__PeerPartMessages *pm);

/* coord_restore.c */
int restore_init(struct coord *c, struct errinfo *e);
void restore_fini(struct coord *c);
void restore_timers(struct coord *c);
int restore_next_timer(struct coord *c, int max);
/* A batch from p of restore generation gen: 0 to take it, -1 to drop
 * it (an older generation, or a newer one not prepared here). */
int restore_batch(struct coord *c, struct peer *p, uint64_t gen);
int restore_prepare(struct coord *c, size_t from,
                    const Cut__V1__PeerRestorePrepare *m);
int restore_vote(struct coord *c, size_t from,
                 const Cut__V1__PeerRestoreVote *m);
int restore_abort_msg(struct coord *c, size_t from,
                      const Cut__V1__PeerRestoreAbort *m);
int restore_done(struct coord *c, size_t from,
                 const Cut__V1__PeerRestoreDone *m);
/* The restores row again after its batch was lost; its batch committed. */
void restore_rewrite(struct coord *c);
void restore_committed(struct coord *c);
/* 1 while a restore (running, or prepared and kept) needs snapshot id. */
int restore_uses(const struct coord *c, const char *id);
/* The daemon stops: a restore it runs is given up. */
void restore_stop(struct coord *c, const char *reason);
/* The application's AppRestorable and AppRestored. */
void restore_app_restorable(struct coord *c, int yes);
void restore_app_restored(struct coord *c, const Cut__V1__AppRestored *m);

/* coord_peer.c: both links with node start afresh for a restore, and the
 * channels to and from it stand at out_n sent / in_m taken. */
int peer_restore_reset(struct coord *c, size_t node, uint64_t out_n,
                       uint64_t in_m);
/* coord_snap.c: aborts every snapshot in progress, for reason. */
void snap_abort_all(struct coord *c, const char *reason);
/* coord_app.c: forgets the down stream and the state requests. */
void app_restore_reset(struct coord *c);

#endif /* CUT_COORD_INT_H */
