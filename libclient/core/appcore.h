/*
 * appcore.h - libcut's side of the application protocol, pure: no I/O, no
 * threads, no clock.  What goes up to the daemon is packed into an out
 * buffer the caller cuts into frames; what comes down is handed in item by
 * item; time is passed in.
 *
 * libcut (cut.c, send.c, recv.c, resume.c) is the threaded nng shell
 * around one appcore, each part of it guarded by the shell's locks (see
 * cut_int.h): the up stream (channels, out buffer) by send_mu, the down
 * stream's counts (handed, sources) by taken_mu.  The simulation
 * (daemon/lab/simapp.c) drives the same functions for every simulated
 * application, so the code it checks is the code applications link.
 *
 * What it holds:
 *   - the node, its cluster and its peers, from the hello reply;
 *   - per outgoing channel: the seq of the last message numbered, the
 *     daemon's credit limit and the window bytes sent, the seq the
 *     receiving application took up to, and every message not yet known
 *     taken (kept, to send again after a lost connection);
 *   - the out buffer: packed AppItems (field 1 of an AppBatch), cut into
 *     frames of whole items by appcore_frame_len();
 *   - the down stream's counts: deliveries handed to the application, the
 *     count last reported (AppTaken), the window bytes handed since, and
 *     per sending node the seq of the last delivery handed;
 *   - the taken timer: when the handed count is next due to be reported.
 *
 * Every function returns 0 or a CUT_E* code unless it says otherwise.
 */
#ifndef CUT_APPCORE_H
#define CUT_APPCORE_H

#include <stddef.h>
#include <stdint.h>

#include "cutproto.h"

/* The sending nodes whose position is remembered for a resume. */
#define APPCORE_MAX_SOURCES 256
/* Deliveries handed are reported taken within this long, or at once
 * when they fill an eighth of a window. */
#define APPCORE_TAKEN_DELAY_MS 5
/* No frame of the up stream is larger than this (one larger item goes
 * alone). */
#define APPCORE_FRAME_MAX (256u << 10)
/* The longest content type (and name) accepted. */
#define APPCORE_TEXT_MAX 255
/* No timer armed. */
#define APPCORE_NEVER INT64_MAX

/* The first byte of a packed AppItem names its kind: the tag of its one
 * field, length-delimited (protobuf-c writes nothing before it). */
#define APPCORE_KIND(field) (uint8_t)(((field) << 3) | 2)

/* The messages of one outgoing channel not yet taken by the receiving
 * application, oldest first. */
struct appcore_keep {
	uint8_t *buf;
	size_t head, tail, cap;
};

/* One outgoing channel. */
struct appcore_chan {
	char *peer;
	uint64_t seq;   /* the last message numbered */
	uint64_t taken; /* the receiving application took up to */
	uint64_t sent;  /* window bytes charged since the last hello */
	uint64_t limit; /* the daemon's credit limit, in the same bytes */
	struct appcore_keep keep;
};

struct appcore {
	/* From the first hello reply. */
	char *node, *cluster;
	size_t npeers;
	struct appcore_chan *ch;
	uint64_t window, cost;
	size_t max_message;
	int opened;

	/* The up stream not yet cut into frames. */
	uint8_t *out;
	size_t out_len, out_cap;
	uint8_t *scratch;
	size_t scratch_cap;
	/* Syncs (cut_flush()): the last token sent, the last answered. */
	uint64_t sync_sent, sync_done;

	/* The down stream's counts. */
	uint64_t handed, reported, unreported;
	int64_t taken_at; /* the report is due then, or APPCORE_NEVER */
	struct {
		char *name;
		uint64_t taken;
		uint64_t numbering; /* AppDeliver.numbering of the last
		                       delivery that named one, or 0 */
	} src[APPCORE_MAX_SOURCES];
	size_t nsrc;
};

/* A restored snapshot's position on one channel (AppRestore). */
struct appcore_pos {
	const char *node;
	uint64_t out_sent, in_taken;
};

void appcore_init(struct appcore *k);
void appcore_fini(struct appcore *k);

/* ---- The hello ---- */

/*
 * Packs a hello into a frame of its own (an AppBatch of one item), in
 * *ret (malloc'd, the caller frees).  node may be NULL (the daemon's own
 * node).  With resume, the hello says where every channel stands: what
 * was numbered and taken on each outgoing one, and what was handed from
 * each sending node.
 */
int appcore_hello(const struct appcore *k, const char *node, int resume,
                  uint8_t **ret, size_t *ret_len);

/*
 * Takes the reply to the first hello: checks it (node, if not NULL and not
 * empty, must be the one the daemon serves; version; names) and learns
 * the node, its peers, the window and the numbering of every outgoing
 * channel.  CUT_EPROTO, CUT_ENOENT (another node), CUT_ENOTSUP (version),
 * CUT_ENOMEM.
 */
int appcore_open(struct appcore *k, const Cut__V1__AppHelloReply *r,
                 const char *node);

/*
 * Takes the reply to a resuming hello: checks that it serves the same
 * node, cluster and peers (CUT_EPROTO otherwise), restarts credit from
 * nothing, and queues again, in order, every kept message the daemon
 * does not have (AppHelloReply.sent).
 */
int appcore_resumed(struct appcore *k, const Cut__V1__AppHelloReply *r);

/* Forgets what a lost connection had queued (the out buffer) and the
 * handed count it knew; the positions and kept messages stay. */
void appcore_forget(struct appcore *k);

/* ---- The up stream ---- */

/* The index of peer `to`, or -1. */
int appcore_peer(const struct appcore *k, const char *to);

/* Whether charge more window bytes fit channel i's credit: within the
 * limit, or alone when the whole window is free. */
int appcore_room(const struct appcore *k, size_t i, uint64_t charge);

/* The window bytes a message of len payload bytes is charged. */
uint64_t appcore_charge(const struct appcore *k, size_t len);

/*
 * Numbers the message in item (an AppSend, to channel i), keeps it until
 * it is known taken, charges it to the channel's credit, and, unless
 * only_keep, queues it.  The caller checked appcore_room().  Sets
 * item->send->seq.  CUT_ENOMEM leaves nothing changed.
 */
int appcore_send(struct appcore *k, size_t i, Cut__V1__AppItem *item,
                 int only_keep);

/* Queues a control item (it needs no credit). */
int appcore_queue(struct appcore *k, const Cut__V1__AppItem *item);

/* The messages kept for channel i (sent, not known taken): how many, and
 * their window bytes in *ret_bytes. */
size_t appcore_kept(const struct appcore *k, size_t i, uint64_t *ret_bytes);

/* Queues AppSync with the next token, and returns the token in *ret: the
 * daemon answers AppSynced with it once it has read everything before.
 * 0 or CUT_ENOMEM. */
int appcore_sync(struct appcore *k, uint64_t *ret_token);

/* Takes AppSynced's token: the daemon holds what was sent before it. */
void appcore_synced(struct appcore *k, uint64_t token);

/* Whether the sync of token was answered. */
int appcore_is_synced(const struct appcore *k, uint64_t token);

/* Applies an AppCredit: releases kept messages it says were taken and
 * raises the limit.  Returns 1 if the limit grew (senders may wake). */
int appcore_credit(struct appcore *k, const Cut__V1__AppCredit *cr);

/* The length of the next frame: whole items from the start of the out
 * buffer, up to max bytes (one larger item alone); 0 if it is empty. */
size_t appcore_frame_len(const struct appcore *k, size_t max);

/* Removes the first n bytes (a frame the caller took) of the out buffer. */
void appcore_frame_taken(struct appcore *k, size_t n);

/* ---- The down stream ---- */

/*
 * Notes that a delivery (len payload bytes, the seq'th from node from;
 * numbering: its AppDeliver.numbering, or 0: the channel numbers from 1
 * again there) was handed to the application at time now.  Returns 1 if the
 * handed count should be reported at once (an eighth of a window
 * unreported); otherwise the taken timer runs (taken_at), armed if it was
 * not.
 */
int appcore_handed(struct appcore *k, const char *from, uint64_t seq,
                   uint64_t numbering, size_t len, int64_t now);

/* Queues AppTaken if the handed count changed since it was last
 * reported, and stops the taken timer.  0, or CUT_ENOMEM. */
int appcore_report(struct appcore *k);

/*
 * Queues the state reply for snapshot id, recorded after `handed`
 * deliveries, with its state (content_type may be NULL).  The reply
 * reports the handed count too.
 */
int appcore_state_reply(struct appcore *k, const char *id, uint64_t handed,
                        const void *state, size_t len,
                        const char *content_type);

/*
 * A restore's step for both streams: the channels' positions become the
 * snapshot's (pos: nch of them), kept messages are forgotten, and credit
 * and the handed count start from nothing.
 */
void appcore_restore(struct appcore *k, const struct appcore_pos *pos,
                     size_t nch);

/* Queues AppRestored for id (failed with code failed and reason unless
 * failed is 0): the restore was taken. */
int appcore_restored(struct appcore *k, const char *id, int failed,
                     const char *reason);

/* ---- Items and frames ---- */

/*
 * Reads the item of AppBatch framing at *off in len bytes at p: stores
 * where it starts and its length, and advances *off.  Returns 1, 0 at the
 * end, or -1 if the framing is bad.
 */
/* Where the items of a frame that still count begin: at its last
 * AppRestore, which drops everything before it (in the frame and in what
 * is queued), or 0; *ret_found says whether it holds one.  The framing
 * must have been checked. */
size_t appcore_restore_at(const uint8_t *p, size_t len, int *ret_found);
/* Whether an item (as appcore_frame_item() gives it) may have to be taken
 * in at once, ahead of the queue: credit, a sync's answer, or a state
 * request (only an unaligned one is; the caller decodes it to see). */
int appcore_maybe_urgent(const uint8_t *p, size_t n);

int appcore_frame_item(const uint8_t *p, size_t len, size_t *off,
                       const uint8_t **ret_item, size_t *ret_len);

/* Whether frame p (len bytes) holds the answer to a hello: a hello reply
 * or an error. */
int appcore_is_answer(const uint8_t *p, size_t len);

/* 1 if s is valid text for a content type or name: at most
 * APPCORE_TEXT_MAX printable ASCII bytes.  NULL is valid (none). */
int appcore_text_ok(const char *s);

/* Packs item as field 1 of an AppBatch at dst, which has room for its
 * packed size plus 11; returns the bytes written. */
size_t appcore_pack_field(uint8_t *dst, const Cut__V1__AppItem *item,
                          size_t len);

#endif /* CUT_APPCORE_H */
