/*
 * cutd.h - the daemon's state, shared by its modules.
 *
 * One struct cutd holds everything a daemon knows; it is passed
 * explicitly, never global.  The modules and their jobs:
 *
 *   cutd.c     main, options, signals and the poll loop
 *   peer.c     sockets to the other daemons, reliable links, peer frames
 *   app.c      the application link: the down and up streams
 *   control.c  the control service (req/rep, gRPC-style)
 *   node.c     the engine's actions, snapshots, parts, assembly, audit
 *   tls.c      TLS between daemons and the signed hello
 *
 * Everything runs on the main thread; nng's own threads only set the
 * atomic flags of pipe notifications.
 */
#ifndef CUT_CUTD_H
#define CUT_CUTD_H

#include <nng/nng.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "config.h"
#include "cutproto.h"
#include "engine.h"
#include "fifo.h"
#include "link.h"
#include "perm.h"
#include "store.h"

#define CUTD_VERSION "0.1.0"

/* Largest batch of items in one nng message, unless one item is larger. */
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
 * brought nothing for DEAD_MS is closed and dialed again: TCP alone can
 * take minutes to notice a partition. */
#define HEARTBEAT_MS 500
#define DEAD_MS      2500
/* A dialer that has not connected for this long is replaced. */
#define REDIAL_MS 1000

/* Another node, seen from this one. */
struct peer {
	size_t node;            /* index in cfg->nodes */
	nng_socket push;        /* dialed to its peer endpoint */
	nng_dialer dialer;      /* push's dialer, replaced when stuck */
	int64_t dialed_ms;      /* when it was made */
	struct link *out;       /* link self -> node */
	struct link *in;        /* link node -> self */
	atomic_int pipes;       /* connections of push, from notifications */
	atomic_int reconnected; /* set when push gains a connection */
	atomic_uint pipe_id;    /* push's latest connection */
	_Atomic int64_t pipe_since_ms; /* when it was made */
	uint64_t epoch;         /* its run id, from its hello; 0 unknown */
	int64_t last_seen_ms;   /* last batch from it (wall clock) */
	int64_t heard_ms;       /* last batch from it (monotonic) */
	int64_t sent_ms;        /* last batch to it (monotonic) */
	int64_t progress_ms;    /* last ack progress, or last resend */
	int64_t acked_ms;       /* last ack progress, or when items began
	                           waiting for one */
	int64_t ack_due_ms;     /* we owe it an ack since then; 0: none */
	int hello_due;          /* we owe it a hello */
	nng_msg *pending;       /* a batch nng would not take yet */
	long in_chan, out_chan; /* engine channel indexes, or -1 */
	/* The connection of ours that p's batches come on (a pipe of
	 * d->pull), 0 when none or closed (set to 0 by an nng thread). */
	atomic_uint in_pipe;
	uint64_t refused_conns; /* connections ignored for posing as p */
	unsigned refused_pipe;  /* the latest of them */

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
	uint64_t resent;      /* messages sent again after p restarted */

	/* Incoming channel: what our application has taken. */
	uint64_t taken;          /* app_seq of the last message handed */
	uint64_t taken_reported; /* as last told the peer */
	uint64_t taken_bytes;    /* payload bytes taken since last told */
	int in_known;            /* the channel's numbering is known */
	uint64_t dups;           /* messages dropped as already had */
};

/* A state request waiting to go to the application, or answered not
 * yet.  An unaligned request goes at the front of the next batch; an
 * aligned one when the deliveries before it (up to absolute index at)
 * have gone. */
struct appreq {
	char id[ENGINE_ID_MAX + 1];
	uint64_t at;
	int overtake, sent;
	struct appreq *next;
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

/* A control Wait call waiting for a snapshot to end. */
struct waiter {
	nng_msg *req; /* the request, kept for its header */
	uint64_t request_id;
	int64_t deadline_ms;
	int include_states, include_messages;
	struct waiter *next;
};

/* A snapshot this daemon takes part in. */
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
	struct waiter *waiters;
	struct snap *next;
	/* Storage faults (node.c): when it started by the wall clock, why it
	 * was aborted, the batch that ended it, and whether that end is
	 * still to be written again because its batch was rolled back. */
	int64_t started_wall_ms;
	char why[400];
	uint64_t ended_gen;
	int unsaved;
};

struct tls;

struct cutd {
	struct config *cfg;
	char *cfg_path;
	size_t self;
	const char *name; /* cfg->nodes[self].name */
	struct engine *eng;
	size_t *in_node, *out_node; /* engine channel index -> node */
	size_t n_in, n_out;
	struct peer *peers; /* by node index; self's entry unused */
	nng_socket pull, app, ctl;
	int pull_fd, app_fd, ctl_fd;
	/* The application link: app_hello is the connection that said
	 * hello; an nng thread sets app_gone when it closes (app_removed
	 * catches a close before the hello is noted).  A second connection
	 * is refused by pair1 itself and changes nothing here. */
	atomic_uint app_hello_pipe, app_removed;
	atomic_int app_gone;
	uint32_t app_hello;
	/* The down stream: packed AppItem deliveries, oldest first, tagged
	 * (app_seq, down_tag()).  The first down_sent went to the current
	 * application and wait for its AppTaken; down_base is its handed
	 * count at the head, down_head_abs the head's index since start. */
	struct fifo down;
	size_t down_sent;
	uint64_t down_base, down_head_abs;
	uint64_t down_sent_bytes;    /* payload bytes sent, not taken */
	nng_msg *app_pending;        /* a batch nng would not take yet */
	struct appreq *reqs;         /* in the order made */
	struct cutproto_arena arena; /* for unpacking frames */
	struct store *store;
	struct tls *tls; /* TLS configurations and the signed hello */
	int batch_open;
	/* Storage faults: batches opened so far (the current one's number),
	 * whether this turn's store_begin() failed, whether a Wait call
	 * waits for the open batch to commit, and while the database
	 * does not take writes, SQLite's words ("" when it does) and when
	 * node_storage_retry() last tried. */
	uint64_t batch_gen;
	int begin_failed;
	int wake_due;
	char degraded[256];
	int64_t retry_ms;
	struct snap *snaps;
	/* This run's id; the last snapshot id counter issued (node.c). */
	uint64_t epoch, next_snap;
	int64_t start_ms;
	uint64_t bad_peer, bad_app, bad_control;
	/* Control calls refused by perm.c, and Start calls by the limits. */
	uint64_t calls_denied, starts_limited;
	struct perm_bucket start_bucket;
	/* Recent control replies by request id, so a resent request is
	 * answered, not executed twice. */
	struct {
		uint64_t id;
		nng_msg *reply;
	} replies[64];
	size_t next_reply;
};

/* Milliseconds since the epoch, and on the monotonic clock. */
int64_t cutd_wall_ms(void);
int64_t cutd_now_ms(void);

/* The bytes that len bytes take as a length-delimited protobuf field. */
size_t cutd_field_size(size_t len);
/* Writes the tag and length of a length-delimited protobuf field of len
 * bytes to dst (at most 11 bytes); returns the bytes written. */
size_t cutd_put_header(uint8_t *dst, unsigned field, size_t len);
/* Writes len bytes at data to dst as length-delimited protobuf field
 * number field and returns the bytes written (cutd_field_size(len)).  A
 * batch is its packed header followed by its items this way, so queued
 * items, packed once, are never re-encoded, and a batch is built in one
 * allocation of its final size. */
size_t cutd_put_field(uint8_t *dst, unsigned field, const void *data,
                      size_t len);

/* The content type to store for ctype as it came in: NULL or "" become
 * "application/octet-stream"; anything over 255 bytes or with bytes
 * outside printable ASCII is refused (NULL). */
const char *cutd_ctype(const char *ctype);

/* Opens the store's batch for this loop turn if it is not open yet. */
void cutd_db(struct cutd *d);

/* peer.c */
int peer_start(struct cutd *d);
/* Closes this node's connections to its peers, losing whatever nng had
 * in flight on them: the links must recover.  SIGUSR1 does it, for
 * tests. */
void peer_drop_connections(struct cutd *d);
/* Frees what the peer links hold.  The peer sockets must be closed
 * first: their pipe notifications write to d->peers. */
void peer_free(struct cutd *d);
void peer_recv_all(struct cutd *d);
/* Decodes, checks and handles one PeerBatch as it came in msg (borrowed):
 * what peer_recv_all() does with each message.  Exposed for the fuzz
 * harnesses (tests/fuzz). */
void peer_batch(struct cutd *d, nng_msg *msg);
void peer_flush(struct cutd *d);
void peer_timers(struct cutd *d, int64_t now);
/* Milliseconds until peer_timers() has something to do, at most max. */
int peer_next_timer(struct cutd *d, int64_t now, int max);
/* Returns where to pack a sequenced item of len bytes (a PeerItem whose
 * seq field is already peer_next_seq()) on the link to node, to be
 * written before any other peer call; NULL when the link is full. */
void *peer_push_space(struct cutd *d, size_t node, size_t len);
uint64_t peer_next_seq(struct cutd *d, size_t node);
/* Keeps application message data (a PeerData, seq ignored) of len
 * payload bytes, sent on the channel to node, until the receiving
 * application has taken it: it counts against the window, and goes again
 * if the peer restarts. */
struct Cut__V1__PeerData;
int peer_note_data(struct cutd *d, size_t node,
                   const struct Cut__V1__PeerData *data, size_t len);
/* 1 if a message of len bytes fits the window of the channel to node. */
int peer_window_open(struct cutd *d, size_t node, size_t len);
/* Our application took messages of the channel from node, up to app_seq,
 * with len payload bytes among them. */
void peer_taken(struct cutd *d, size_t node, uint64_t app_seq, size_t len);
/* 1 if the peer is connected and was heard from lately. */
int peer_connected(struct cutd *d, size_t node, int64_t now);

/* app.c */
int app_start(struct cutd *d);
/* 1 if an application said hello and its connection is open. */
int app_connected(struct cutd *d);
/* Frees the down stream, the pending batch and the state requests; the
 * application socket must be closed first. */
void app_free(struct cutd *d);
void app_recv_all(struct cutd *d);
/* Decodes, checks and handles one AppBatch as it came in msg (borrowed),
 * from the connection nng_msg_get_pipe(msg): what app_recv_all() does
 * with each message.  Exposed for the fuzz harnesses. */
void app_batch(struct cutd *d, nng_msg *msg);
void app_flush(struct cutd *d);
/* Appends a delivery or a state request to the down stream. */
int app_deliver(struct cutd *d, size_t from, const char *content_type,
                const void *payload, size_t len, uint64_t seq);
int app_request_state(struct cutd *d, const char *id);
/* The snapshot id no longer needs its state request. */
void app_forget_request(struct cutd *d, const char *id);
/* Calls fn for each queued delivery from node `from` that the application
 * has not taken, with app_seq in [first, first + count), oldest first.
 * Returns the first non-zero fn result, or 0. */
int app_queued(struct cutd *d, size_t from, uint64_t first, uint64_t count,
               int (*fn)(void *arg, uint64_t app_seq, const char *ctype,
                         const void *payload, size_t len),
               void *arg);
/* Milliseconds until app_flush() should run again, at most max. */
int app_next_timer(struct cutd *d, int max);

/* control.c */
int control_start(struct cutd *d);
/* Listens on url with socket s; an ipc:// socket gets mode 0660 and the
 * cluster file's socket_group.  Returns 0 or an NNG_E* code (logged). */
int control_listen(struct cutd *d, nng_socket s, const char *url);
/* Frees the kept replies. */
void control_free(struct cutd *d);
void control_recv_all(struct cutd *d);
/* Decodes, checks and answers (or keeps, for Wait) one RpcRequest; takes
 * ownership of req.  What control_recv_all() does with each message;
 * exposed for the fuzz harnesses. */
void control_request(struct cutd *d, nng_msg *req);
/* Answers the Wait calls on s, which has ended, or those past their
 * deadline when s is still running. */
void control_wake(struct cutd *d, struct snap *s, int64_t now);

/* node.c */
int node_start(struct cutd *d);
void node_stop(struct cutd *d, const char *reason);
/* Events from the sockets. */
int node_initiate(struct cutd *d, uint32_t timeout_ms, char *ret_id);
/* Sends application message seq (0: the next) to node `to`; a seq the
 * channel already has is E_DUP (dropped), a gap E_INVAL. */
int node_app_send(struct cutd *d, const char *to, const char *content_type,
                  const void *payload, size_t len, uint64_t seq);
/* A daemon that restarted learns from its application where a channel's
 * numbering stands; snapshots in progress are aborted first. */
int node_resume_out(struct cutd *d, size_t node, uint64_t count);
int node_resume_in(struct cutd *d, size_t node, uint64_t count);
/* Tells node that the channel to it numbers from 1 again (PeerRenumber). */
int node_renumber(struct cutd *d, size_t node);
int node_state_reply(struct cutd *d, const char *id, const char *ctype,
                     const void *state, size_t len);
/* Milliseconds until node_timers() has something to do, at most max. */
int node_next_timer(struct cutd *d, int64_t now, int max);
int node_data(struct cutd *d, size_t from, uint64_t app_seq,
              const char *content_type, const void *payload, size_t len);
int node_marker(struct cutd *d, size_t from, const char *id, uint64_t n,
                uint32_t timeout_ms);
int node_part(struct cutd *d, size_t from, const void *part);
int node_part_messages(struct cutd *d, size_t from, const void *chunk);
int node_abort_msg(struct cutd *d, size_t from, const char *id,
                   const char *reason, int root_cause);
void node_peer_restarted(struct cutd *d, size_t node);
void node_timers(struct cutd *d, int64_t now);
/* This node cannot finish s because what failed ("cannot store ..."); the
 * store's last error completes the reason. */
void node_give_up(struct cutd *d, struct snap *s, const char *what);
/* This node gives up snapshot id, because of why (a sentence): its
 * application cannot answer for it. */
void node_abandon(struct cutd *d, const char *id, const char *why);
struct snap *node_find(struct cutd *d, const char *id);
/* node_initiate()'s result when the database cannot take the snapshot;
 * d->degraded or store_errmsg() says why. */
#define E_STORAGE 100
/* The turn's batch did not commit (or never began): rolls it back and
 * aborts every snapshot it may have held, then node_storage_retry(). */
void node_storage_failed(struct cutd *d);
/* Writes again the ends of snapshots a lost batch held, with a probe row,
 * in one batch: on success the daemon is no longer degraded, on failure
 * it is (d->degraded).  Returns 0 or the STORE_E* code. */
int node_storage_retry(struct cutd *d);
/* A batch committed: answers the Wait calls of snapshots it completed. */
void node_committed(struct cutd *d);
/* 1 if s completed in the batch still open: its verdict is not on disk. */
int node_end_pending(const struct cutd *d, const struct snap *s);
/* Fills *ret from memory for snapshot id if its end could not be written
 * (the database holds an older row, or none); returns 1 if so. */
int node_unsaved(struct cutd *d, const char *id, struct store_snapshot *ret);

/* Packs a peer item (a Cut__V1__PeerItem whose seq is already
 * peer_next_seq()) and queues it on the link to node. */
struct Cut__V1__PeerItem;
int node_push_item(struct cutd *d, size_t node,
                   const struct Cut__V1__PeerItem *item);

/* assembly.c */
/* Sends this node's complete part of s to its initiator. */
int assembly_send_part(struct cutd *d, struct snap *s);
/* The initiator's own part of s is complete. */
void assembly_own_part(struct cutd *d, struct snap *s);

#endif /* CUT_CUTD_H */
