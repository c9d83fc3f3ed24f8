/*
 * coord.h - the coordinator: everything one daemon decides, without I/O.
 *
 * A coordinator is one node of a cluster: its reliable links to the other
 * nodes, its application's down and up streams, and its snapshots
 * (initiating, markers, parts, assembly, audit, deadlines, aborts with
 * reasons), around the snapshot engine (engine.h).  It does no I/O and
 * reads no clock.  Its caller (the daemon's shell, the simulation, a unit
 * test) gives it:
 *
 *   - the time, with coord_set_time() before each turn's events;
 *   - events: a decoded batch from a peer or from the application, a
 *     connection that opened or closed, a control call, a timer;
 *   - a database, as a store port (store_port.h), through which it writes
 *     the rows of its snapshots and reads back what it assembles.
 *
 * and takes from it:
 *
 *   - frames to send: the next batch for a peer (coord_peer_frame()) and
 *     for the application (coord_app_frame()), each built straight into
 *     the caller's buffer, measured first; and the few frames that must go
 *     to one application connection at once (coord_next_app_reply());
 *   - what it would have the caller do about connections
 *     (coord_peer_silent());
 *   - answers to queries for status and the control service.
 *
 * The caller owns the sockets and decides when a frame can be sent; a
 * frame it took is the coordinator's no more (it is resent by the link if
 * it is lost).  One turn of the caller's loop: set the time, feed events,
 * coord_timers(), build the application's frames, coord_commit(), and
 * only then the peers' frames, so that nothing leaves for a peer before
 * what it stands for is on disk.
 *
 * Calls that can fail return 0 or an E_* code (cuterr.h); a struct
 * errinfo, where given, gets the words.  Everything a node logs goes
 * through the base layer's log (base/log.h).
 */
#ifndef CUT_COORD_H
#define CUT_COORD_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cutproto.h"
#include "cuterr.h"
#include "engine.h"
#include "store_port.h"

/* Largest batch of items in one frame, unless one item is larger. */
#define BATCH_BYTES (256 * 1024)
/* Resend unacknowledged items after this long without progress. */
#define RESEND_MS 1000
/* Items a link keeps unacknowledged, and early items it holds.  The
 * channel window bounds the data; this bounds what a runaway could
 * queue. */
#define LINK_WINDOW (1024 * 1024)
#define LINK_HOLD   4096
/* Recorded messages per part chunk travel in at most this many bytes. */
#define CHUNK_BYTES (64 * 1024)
/* An ack (with the taken count) that has no batch to ride on goes alone
 * after this long; credit that reopens a quarter window goes at once. */
#define ACK_DELAY_MS 5
/* A peer is sent something at least this often, and a connection that has
 * brought nothing for DEAD_MS is to be closed and dialed again: TCP alone
 * can take minutes to notice a partition. */
#define HEARTBEAT_MS 500
#define DEAD_MS      2500
/* Keep ended snapshots this long, for late markers and Wait calls. */
#define KEEP_ENDED_MS (10 * 60 * 1000)

struct coord;

/* Makes the coordinator of node self of cfg (borrowed; it must outlive
 * the coordinator), whose run is epoch (random, never 0), on database st.
 * Marks what an earlier run left unfinished in st aborted ("daemon
 * restarted").  The time must be given first: now_ms (monotonic) and
 * wall_ms (milliseconds since the Unix epoch). */
int coord_new(const struct config *cfg, size_t self, uint64_t epoch,
              struct store_port st, int64_t now_ms, int64_t wall_ms,
              struct coord **ret, struct errinfo *e);
/* Aborts what is in flight with reason (stored in the open batch, which
 * the caller then commits), and keeps nothing else running. */
void coord_stop(struct coord *c, const char *reason);
void coord_free(struct coord *c);

/* The time of the events that follow. */
void coord_set_time(struct coord *c, int64_t now_ms, int64_t wall_ms);

/* ---- Peers ---- */

/* A batch from a peer, as decoded from connection conn (an id the caller
 * gives each connection of its listener, never 0), already admitted by
 * TLS if the cluster uses it.  Bad input is counted and dropped. */
void coord_peer_input(struct coord *c, uint32_t conn,
                      const Cut__V1__PeerBatch *b);
/* A frame from a peer (from, as it claims, or "?") that did not decode:
 * counted and logged with what was wrong. */
void coord_peer_bad(struct coord *c, const char *from, const char *what);
/* Listener connection conn closed: it speaks for no one any more. */
void coord_peer_conn_closed(struct coord *c, uint32_t conn);
/* Our connection to node is new: whatever went into the old one may be
 * lost, so the next frame says hello and the link resends from its
 * first unacknowledged item. */
void coord_peer_up(struct coord *c, size_t node);
/* Our connection to node closed: nothing goes to it until one opens. */
void coord_peer_down(struct coord *c, size_t node);
/* 1 when the connection to node (open for DEAD_MS at least) should be
 * closed and dialed again: nothing came from node for DEAD_MS, or what
 * we sent has not been acknowledged for as long. */
int coord_peer_silent(struct coord *c, size_t node);
/* The caller closed the connection to node for being silent: the new one
 * gets DEAD_MS of its own. */
void coord_peer_redialed(struct coord *c, size_t node);
/* 1 if a connection to node is open, node was heard from lately and it
 * acknowledges what we send. */
int coord_peer_alive(struct coord *c, size_t node);
/* node's epoch from its hello; 0 while unknown. */
uint64_t coord_peer_epoch(const struct coord *c, size_t node);
/* 1 if the next frame to node must carry the signed hello (TLS). */
int coord_peer_hello_due(const struct coord *c, size_t node);
/*
 * The next frame to node: everything owed and unsent, up to BATCH_BYTES
 * of items, with an ack when one is due.  auth, if not NULL, goes in the
 * header (the signed hello).  With buf NULL it only measures: 0 means
 * nothing is owed; otherwise the caller allocates that many bytes and
 * calls again with buf, which builds the frame and counts it sent.
 */
size_t coord_peer_frame(struct coord *c, size_t node,
                        const Cut__V1__PeerAuth *auth, uint8_t *buf);

/* ---- The application ---- */

/* A batch from the application on connection conn (never 0). */
void coord_app_input(struct coord *c, uint32_t conn,
                     const Cut__V1__AppBatch *b);
/* A frame from application connection conn that did not decode: counted,
 * logged, and answered with an AppError. */
void coord_app_bad(struct coord *c, uint32_t conn, const char *what);
/* Application connection conn closed. */
void coord_app_closed(struct coord *c, uint32_t conn);
/* 1 if an application said hello and its connection is open. */
int coord_app_connected(const struct coord *c);
/* The connection of the application that said hello, or 0. */
uint32_t coord_app_conn(const struct coord *c);
/* The next down-stream frame (credit, state requests, deliveries) for the
 * application, measured (buf NULL) then built, as coord_peer_frame(). */
size_t coord_app_frame(struct coord *c, uint8_t *buf);
/* Takes the next frame that must go at once to one connection (a hello
 * reply, an error): *ret_buf is the caller's to free.  0 when none. */
int coord_next_app_reply(struct coord *c, uint32_t *ret_conn,
                         uint8_t **ret_buf, size_t *ret_len);

/* ---- Snapshots and the control service ---- */

/* Starts a snapshot with timeout_ms (0: the cluster's deadline) and
 * writes its id to ret_id.  E_STORAGE when the database cannot take it
 * (e says why). */
int coord_start(struct coord *c, uint32_t timeout_ms,
                char ret_id[ENGINE_ID_MAX + 1], struct errinfo *e);
/* Deletes the stored snapshot id: E_STATE while it runs, E_NOENT if
 * unknown, E_STORAGE while degraded. */
int coord_delete(struct coord *c, const char *id, struct errinfo *e);

/* What memory knows of a snapshot beyond its row. */
struct coord_snap_view {
	int known;          /* this node holds it in memory */
	int running;        /* not ended here */
	int ended;          /* ended, and its end is on disk or never will be
	                       (answer a Wait call now) */
	int initiator;      /* this node initiated it */
	uint32_t parts_received; /* initiator: parts in so far */
	uint32_t channels_recording;
	/* Wall clock ms after which it is aborted if not complete here. */
	int64_t deadline_wall_ms;
	/* Its end could not be written: the row in the database is older.
	 * row then holds what memory knows. */
	int unsaved;
	struct store_snapshot row;
};
void coord_snapshot_view(struct coord *c, const char *id,
                         struct coord_snap_view *ret);
/* Snapshots in flight (started here or elsewhere): calls fn for each. */
void coord_foreach_running(const struct coord *c,
                           void (*fn)(const char *id, void *arg), void *arg);
/* Snapshots this node started that have not ended. */
size_t coord_initiated_in_flight(const struct coord *c);
/* Why the database does not take writes, or "" when it does. */
const char *coord_degraded(const struct coord *c);

/* A channel and a peer, for status. */
struct coord_peer_stats {
	int alive;
	int64_t last_seen_ms; /* wall clock; 0 never */
	uint64_t refused_conns;
	int has_out; /* a channel self -> node */
	uint64_t sent, app_taken, window_used, stalls, resent;
	int has_in; /* a channel node -> self */
	uint64_t delivered, taken;
	uint64_t dups;
	/* The link to node: the seq its next item gets, and the last one
	 * node acknowledged. */
	uint64_t link_next, link_acked;
	/* Our PeerRenumber to node waits for its ack. */
	int renumbering;
	/* The channel from node: where its numbering stands is known (from
	 * libcut's resume, a PeerRenumber, or its first message). */
	int in_known;
};
void coord_peer_stats(struct coord *c, size_t node,
                      struct coord_peer_stats *ret);
/* What the coordinator's queues hold, read-only: the simulation (cutlab
 * sim) checks them against their bounds after every turn.  Per peer, the
 * largest over the peers. */
struct coord_queue_stats {
	/* The down stream: deliveries queued (sent or not) and their payload
	 * bytes; of those, payload bytes sent and not yet taken. */
	size_t down_items;
	uint64_t down_bytes, down_sent_bytes;
	size_t app_replies;    /* frames waiting to go at once */
	size_t state_requests; /* not yet answered */
	size_t snaps;          /* held in memory, running or ended */
	/* Outgoing links: unacknowledged items and their bytes; incoming
	 * links: early items held. */
	size_t link_items, held_items;
	uint64_t link_bytes;
	/* Outgoing channels: messages kept until the receiving application
	 * takes them, and their window charge. */
	size_t inflight_items;
	uint64_t inflight_bytes;
	/* Outcomes a participant waits to store again (a failed write,
	 * or its row not written yet). */
	size_t outcomes_waiting;
};
void coord_queue_stats(const struct coord *c, struct coord_queue_stats *ret);
/* Bad frames dropped, from peers and from the application. */
uint64_t coord_bad_peer(const struct coord *c);
uint64_t coord_bad_app(const struct coord *c);
/* Snapshots in progress as the engine counts them. */
size_t coord_in_progress(const struct coord *c);

/* Marks stored snapshot id kept (retention never deletes it) or not:
 * E_NOENT if unknown, E_STORAGE while degraded. */
int coord_keep(struct coord *c, const char *id, int keep, struct errinfo *e);
/* Deletions of this node's snapshots not yet confirmed by a node. */
uint64_t coord_forgets_pending(struct coord *c);

/* ---- The schedule ([schedule] in the cluster file) ---- */

struct coord_sched_view {
	int configured; /* the file has a [schedule]; the rest is 0 if not */
	unsigned interval_ms, timeout_ms;
	const char *initiator; /* a node name or "rotate"; borrowed */
	int paused;
	/* Ticks that were this node's; snapshots started, ticks skipped
	 * (the last one still ran), passed while paused, failed starts. */
	uint64_t ticks, started, skipped, paused_ticks, failed;
	const char *last_id; /* "" if none; borrowed until the next call */
	int64_t next_tick_ms; /* wall clock of the next tick of ours */
};
void coord_schedule_view(struct coord *c, struct coord_sched_view *ret);
/* Pauses (paused 1) or resumes this node's share of the schedule:
 * E_CONFIG without a [schedule] (no use trying again until the cluster
 * file has one). */
int coord_schedule_pause(struct coord *c, int paused, struct errinfo *e);

/* ---- Restore (coord_restore.c) ---- */

/* Starts restoring the complete, consistent snapshot id, which this node
 * initiated, into the whole cluster, waiting timeout_ms (0: the cluster's
 * deadline) for the votes and again for the confirmations.  0 when
 * started: coord_restore_view() says when it ends and how.  E_STATE (a
 * restore running, not this node's, not complete or consistent, this
 * node's application cannot restore), E_NOENT, E_UNAVAIL (a node not
 * reachable), E_INVAL; e says why. */
int coord_restore(struct coord *c, const char *id, uint32_t timeout_ms,
                  struct errinfo *e);
struct coord_restore_view {
	int running;
	const char *phase; /* "idle", "voting", "prepared", "confirming" */
	const char *id;    /* the last restore's snapshot, "" if none */
	/* The last restore run here: 0 while it runs (or none ran), 1 done
	 * on every node, else an E_* code, with why. */
	int result;
	const char *why;
	uint64_t generation; /* the generation applied here */
	uint32_t nodes;
	uint64_t replayed, state_bytes, message_bytes;
	uint64_t old_batches; /* batches dropped as from before a restore */
	int restorable;       /* the application can restore */
	/* Applied here, and no application has answered it (AppRestored)
	 * yet: the next one gets it (again). */
	int app_owed;
	/* Not 0: this node missed the restore of this generation (it moved
	 * its links to it without restoring its application); 0 once a
	 * restore is applied here again. */
	uint64_t adopted;
};
void coord_restore_view(const struct coord *c, struct coord_restore_view *ret);

/* ---- Events ----
 *
 * What happened that the caller reacts to, so that it need not ask every
 * turn: the daemon's shell answers Wait and Restore calls and judges the
 * conditions on them (turn.c takes every event after each commit).  An
 * event is told once, when what it says can be read: a snapshot's end
 * once it is on disk or never will be (coord_snap_view.ended), in the
 * order found.  Nothing is queued: the coordinator marks what it has not
 * told, so none is lost and a caller that takes none costs nothing. */
enum coord_event_kind {
	/* Snapshot id ended here, complete (this node's part, or at the
	 * initiator the whole snapshot) or aborted. */
	COORD_EV_SNAP_ENDED,
	/* The restore this node ran (of snapshot id) ended:
	 * coord_restore_view() says how. */
	COORD_EV_RESTORE_ENDED,
};
struct coord_event {
	enum coord_event_kind kind;
	char id[ENGINE_ID_MAX + 1];
	int initiator; /* this node initiated the snapshot, or ran the
	                  restore */
	int complete;  /* ended complete (a restore: done on every node) */
};
/* Takes the next event into ev: 1, or 0 when there is none. */
int coord_next_event(struct coord *c, struct coord_event *ev);

/* ---- Time and storage ---- */

/* Deadlines, resends and expiry. */
void coord_timers(struct coord *c);
/* Milliseconds until coord_timers() has something to do, at most max. */
int coord_next_timer(struct coord *c, int max);
/* Ends the turn's batch of database writes: commits it, or, when it does
 * not commit, rolls it back and aborts every snapshot it held (see
 * coord_snap.c); while degraded, retries once a second.  Returns 0 (the
 * turn's writes, if any, are on disk), E_STORAGE (they were lost, rolled
 * back) or E_BUSY (commit retried next turn). */
int coord_commit(struct coord *c);
/* 1 while the turn's batch is open (uncommitted writes). */
int coord_batch_open(const struct coord *c);

/* ---- Statistics for metrics (coord_stats.c) ----
 *
 * Counters since the coordinator was made, read-only for the caller;
 * the coordinator's own files feed them through the coord_stats_*()
 * calls below.  Durations come from the time the caller gives
 * (coord_set_time()), never from a clock. */

/* Why a snapshot this node initiated was aborted, judged from the first
 * (root-cause) clause of its reason. */
enum coord_abort_class {
	COORD_ABORT_DEADLINE, /* a part, a marker or a node missed it */
	COORD_ABORT_STORAGE,  /* a database did not take a write */
	COORD_ABORT_PEER,     /* a node restarted, went silent, renumbered */
	COORD_ABORT_APP,      /* an application did not answer or fit */
	COORD_ABORT_OTHER,
	COORD_ABORT_CLASSES
};
/* The class's name for a metric label: "deadline", "storage", ... */
const char *coord_abort_class_name(enum coord_abort_class k);
enum coord_abort_class coord_abort_classify(const char *reason);

/* Upper bounds, in ms, of the buckets of the snapshot duration
 * histogram; one more bucket holds what is beyond the last. */
#define COORD_DURATION_BUCKETS 13
extern const uint32_t coord_duration_le_ms[COORD_DURATION_BUCKETS];

struct coord_counters {
	/* Snapshots this node initiated: started, and how they ended. */
	uint64_t started, completed;
	uint64_t aborted[COORD_ABORT_CLASSES];
	/* Durations of the completed ones, start to complete: how many
	 * fell in each bucket (not cumulative) and their sum. */
	uint64_t duration_count[COORD_DURATION_BUCKETS + 1];
	uint64_t duration_sum_ms;
	/* Channel messages this node recorded, and their payload bytes. */
	uint64_t recorded_msgs, recorded_bytes;
	/* Turns whose batch of writes did not commit. */
	uint64_t commit_failures;
};
void coord_counters(const struct coord *c, struct coord_counters *ret);

/* The link between this node and node, beyond coord_peer_stats(). */
struct coord_link_stats {
	uint64_t sent_bytes;     /* payload of messages sent self -> node */
	uint64_t received_bytes; /* payload of messages node -> self that
	                            arrived here (duplicates not counted) */
	uint64_t reconnects;     /* connections to node after the first */
	/* Link items sent again after a reconnect, a hello or a resend
	 * timeout, and arrivals dropped as duplicates; both start again
	 * from 0 when node restarts (its links start afresh). */
	uint64_t items_resent, items_dup;
	size_t unacked_items;  /* sent to node, not acknowledged */
	size_t held_items;     /* from node, held for a gap before them */
	size_t inflight_items; /* sent to node, not taken by its app */
};
void coord_link_stats(const struct coord *c, size_t node,
                      struct coord_link_stats *ret);

/* For the coordinator's files only: this node initiated a snapshot; one
 * it initiated ended (complete, or aborted with reason) after starting at
 * started_ms (its monotonic time); it recorded a channel message of len
 * payload bytes. */
void coord_stats_started(struct coord *c);
void coord_stats_ended(struct coord *c, int complete, const char *reason,
                       int64_t started_ms);
void coord_stats_recorded(struct coord *c, size_t len);

#endif /* CUT_COORD_H */
