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
#include "engine.h"
#include "link.h"
#include "store.h"

#define CUTD_VERSION "0.1.0"

/* Largest batch of items in one nng message, unless one item is larger. */
#define BATCH_BYTES (256 * 1024)
/* Resend unacknowledged items after this long without progress. */
#define RESEND_MS 1000
/* Items a link keeps unacknowledged, and early items it holds. */
#define LINK_WINDOW (1024 * 1024)
#define LINK_HOLD   4096
/* Recorded messages per part chunk travel in at most this many bytes. */
#define CHUNK_BYTES (64 * 1024)

/* Another node, seen from this one. */
struct peer {
	size_t node;            /* index in cfg->nodes */
	nng_socket push;        /* dialed to its peer endpoint */
	struct link *out;       /* link self -> node */
	struct link *in;        /* link node -> self */
	atomic_int pipes;       /* connections of push, from notifications */
	atomic_int reconnected; /* set when push gains a connection */
	atomic_uint pipe_id;    /* push's latest connection */
	_Atomic int64_t pipe_since_ms; /* when it was made */
	uint64_t epoch;         /* its run id, from its hello; 0 unknown */
	int64_t last_seen_ms;   /* last batch from it */
	int64_t progress_ms;    /* last ack progress, or last resend */
	int ack_due;            /* we owe it an ack */
	int hello_due;          /* we owe it a hello */
	long in_chan, out_chan; /* engine channel indexes, or -1 */
	/* Application messages on the link not yet acknowledged, as (link
	 * seq, app seq) pairs in order, for the acked count in status. */
	struct {
		uint64_t seq, app_seq;
	} * unacked;
	size_t head, tail, cap;
	uint64_t app_acked;
};

/* A recorded incoming channel of this node's part. */
struct part_chan {
	size_t src; /* node index */
	uint64_t m, n;
	struct audit_seqs seqs;
	int done;
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
};

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
	atomic_int app_pipes;
	atomic_uint app_live; /* id of the application's connection, or 0 */
	uint32_t app_hello;   /* id of the connection that said hello */
	/* The down stream: encoded AppItems waiting for the application. */
	void **down;
	size_t *down_len;
	size_t ndown, capdown;
	struct store *store;
	int batch_open;
	uint8_t *scratch; /* where peer items are packed; see node.c */
	size_t scratch_cap;
	struct snap *snaps;
	uint64_t epoch, next_snap;
	int64_t start_ms;
	uint64_t bad_peer, bad_app, bad_control;
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

/* Appends len bytes at data to msg as length-delimited protobuf field
 * number field.  A batch is its packed header followed by its items this
 * way, so queued items, packed once, are never re-encoded.  Returns 0 or
 * an nng error. */
int cutd_append_field(nng_msg *msg, unsigned field, const void *data,
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
void peer_recv_all(struct cutd *d);
void peer_flush(struct cutd *d);
void peer_timers(struct cutd *d, int64_t now);
/* Queues a sequenced item (a packed PeerItem whose seq field is already
 * link_next_seq()) on the link to node.  Copies item. */
int peer_push(struct cutd *d, size_t node, const void *item, size_t len);
uint64_t peer_next_seq(struct cutd *d, size_t node);
/* Notes that link item seq to node carries application message app_seq. */
void peer_note_data(struct cutd *d, size_t node, uint64_t seq,
                    uint64_t app_seq);

/* app.c */
int app_start(struct cutd *d);
void app_recv_all(struct cutd *d);
void app_flush(struct cutd *d);
/* Appends a delivery or a state request to the down stream. */
int app_deliver(struct cutd *d, size_t from, const char *content_type,
                const void *payload, size_t len, uint64_t seq);
int app_request_state(struct cutd *d, const char *id);

/* control.c */
int control_start(struct cutd *d);
void control_recv_all(struct cutd *d);
/* Answers the Wait calls on s, which has ended, or those past their
 * deadline when s is still running. */
void control_wake(struct cutd *d, struct snap *s, int64_t now);

/* node.c */
int node_start(struct cutd *d);
void node_stop(struct cutd *d, const char *reason);
/* Events from the sockets. */
int node_initiate(struct cutd *d, uint32_t timeout_ms, char *ret_id);
int node_app_send(struct cutd *d, const char *to, const char *content_type,
                  const void *payload, size_t len);
int node_state_reply(struct cutd *d, const char *id, const char *ctype,
                     const void *state, size_t len);
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
struct snap *node_find(struct cutd *d, const char *id);

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
