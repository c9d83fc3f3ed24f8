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
 * (daemon/sim/simapp.c) drives the same functions for every simulated
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

#include "cut/cut.h"
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
	uint64_t numbering; /* AppHelloReply.numbering, or 0 */
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

/* The largest frame of the up stream, for appcore_frame_len(): the
 * daemon accepts max_message plus 64 KiB, and one item is at most
 * max_message plus its small fields; never more than APPCORE_FRAME_MAX. */
size_t appcore_frame_max(const struct appcore *k);

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
int appcore_frame_item(const uint8_t *p, size_t len, size_t *off,
                       const uint8_t **ret_item, size_t *ret_len);

/* 1 if s is valid text for a content type or name: at most
 * APPCORE_TEXT_MAX printable ASCII bytes.  NULL is valid (none). */
int appcore_text_ok(const char *s);

/* 1 if s is a snapshot id from the daemon: 1 to CUT_SNAPSHOT_ID_MAX - 1
 * printable ASCII bytes. */
int appcore_id_ok(const char *s);

/* Packs item as field 1 of an AppBatch at dst, which has room for its
 * packed size plus 11; returns the bytes written. */
size_t appcore_pack_field(uint8_t *dst, const Cut__V1__AppItem *item,
                          size_t len);

/* ---- Taking the down stream in ----
 *
 * A shell takes each frame from the daemon in as it comes: before the
 * answer to its hello with appcore_hello_answer(), after it with
 * appcore_frame_start() and, item by item from where that says, with
 * appcore_urgent(); the items it queues are taken later, in order, by the
 * application's thread, each classified by appcore_judge().  An overtaking
 * state request (appcore_urgent()) is answered before any queued item,
 * except while a restore is queued: it is about the restored state.
 */

/* What a frame held in answer to our hello (appcore_hello_answer()). */
enum appcore_answer_kind {
	APPCORE_ANSWER_NONE,    /* no answer: its items were for a connection
	                         * before ours, and are dropped */
	APPCORE_ANSWER_BAD,     /* the frame does not decode */
	APPCORE_ANSWER_OPENED,  /* the reply to the first hello, taken by
	                         * appcore_open() with result rv */
	APPCORE_ANSWER_RESUMED, /* the reply to a resuming hello, taken by
	                         * appcore_resumed() with result rv */
	APPCORE_ANSWER_REFUSED, /* the daemon refused the hello: code and
	                         * message are its AppError's */
};

struct appcore_answer {
	enum appcore_answer_kind what;
	int rv;
	uint32_t code;
	char message[APPCORE_TEXT_MAX + 1]; /* cut short if longer */
};

/*
 * Looks for the answer to our hello in frame p (len bytes from the
 * daemon) and takes it: a hello reply, by appcore_open() (with node, see
 * there) before k was opened and by appcore_resumed() after; or the
 * hello's refusal, an AppError of code WRONG_NODE or VERSION (the only
 * ones a hello earns).  The first answer in the frame counts.  The daemon
 * sends nothing on a connection before its answer, so any other item in
 * such a frame was for a connection before ours (an application before
 * us, or our lost connection) and is skipped.  Says what it found in *ret
 * and returns ret->what.
 */
enum appcore_answer_kind appcore_hello_answer(struct appcore *k,
                                              const uint8_t *p, size_t len,
                                              const char *node,
                                              struct appcore_answer *ret);

/*
 * Takes a frame that came while the shell waits for the answer to its
 * hello (appcore_hello_answer(), with node: see there) and says whether
 * the wait is over: 1 when the frame answered the hello, ret->what saying
 * how (APPCORE_ANSWER_OPENED or _RESUMED, taken with result ret->rv; or
 * _REFUSED); 0 when it holds no answer (_NONE: it was for a connection
 * before ours; _BAD: it does not decode), and the shell waits on.  A
 * resumed connection knows of no restore callback until told: then, if
 * restorable, AppRestorable is queued behind what the resume sends again
 * (appcore_restorable()).
 */
int appcore_hello_frame(struct appcore *k, const uint8_t *p, size_t len,
                        const char *node, int restorable,
                        struct appcore_answer *ret);

/*
 * Checks the framing of frame p (len bytes from the daemon: all of a frame
 * or none of it) and finds where its items that still count begin, in
 * *ret_start: at its last AppRestore, which drops everything before it
 * (in the frame, and what the caller queued from earlier frames and has
 * not taken, overtaking requests included), or at 0.  Returns -1 if the
 * framing is bad (nothing of it may be taken), 1 if it holds an
 * AppRestore (the caller drops its queue; overtaking requests that come
 * after it wait until the restore is taken), 0 otherwise.
 */
int appcore_frame_start(const uint8_t *p, size_t len, size_t *ret_start);

/* What appcore_urgent() made of an item as its frame came. */
enum appcore_urgency {
	APPCORE_LATER,    /* not urgent: queue it, for appcore_judge() in
	                   * its turn */
	APPCORE_CREDIT,   /* an AppCredit, applied (appcore_credit()); grew
	                   * says the limit grew: senders waiting may go */
	APPCORE_SYNCED,   /* an AppSynced, applied (appcore_synced()) */
	APPCORE_OVERTAKE, /* an unaligned state request for snapshot id: the
	                   * caller answers it before any item queued */
	APPCORE_BAD,      /* an item of those kinds that does not decode, or
	                   * an unaligned request with a bad id: the caller
	                   * refuses it now, or queues it for appcore_judge()
	                   * to refuse in its turn */
};

struct appcore_event {
	enum appcore_urgency what;
	int grew;                    /* APPCORE_CREDIT */
	char id[CUT_SNAPSHOT_ID_MAX]; /* APPCORE_OVERTAKE */
};

/*
 * Takes in an item (n bytes at p, as appcore_frame_item() gives it) that
 * cannot wait for the application: credit, so that a sender waiting for
 * room wakes even in a program that is not receiving; a sync's answer;
 * and an unaligned state request, which goes ahead of every queued
 * delivery.  Everything else waits in the caller's queue.  Says what it
 * was in *ev and returns ev->what.  The up stream's part of k changes
 * (credit, syncs): the caller holds what guards it.
 */
enum appcore_urgency appcore_urgent(struct appcore *k, const uint8_t *p,
                                    size_t n, struct appcore_event *ev);

/* What a queued item is for the application (appcore_judge()). */
enum appcore_take {
	APPCORE_SKIP,    /* taken on arrival (appcore_urgent()): nothing */
	APPCORE_DELIVER, /* it->deliver, checked: hand it over, then
	                  * appcore_handed() */
	APPCORE_STATE,   /* an aligned state request, its id checked: answer
	                  * it here, between two deliveries */
	APPCORE_RESTORE, /* it->restore, its id, content type and nodes
	                  * checked: take it here (appcore_restore_step()) */
	APPCORE_REFUSED, /* it->error: the daemon refused an item of ours */
	APPCORE_BAD_ITEM, /* a bad item; *ret_why says what, for the error */
};

/*
 * Checks an item the caller queued, decoded, and says what to do with it
 * as the application's thread takes it, in order; for APPCORE_BAD_ITEM,
 * *ret_why is "a bad restore" or "a bad item".
 */
enum appcore_take appcore_judge(const Cut__V1__AppItem *it,
                                const char **ret_why);

/*
 * A restore's step for both streams, taken once the application's
 * restore callback has run (or failed, with code failed and reason):
 * appcore_restore() to the snapshot's positions (pos: nch of them), then
 * AppRestored for id (appcore_restored()) unless the link is lost: the
 * daemon then sends the restore again after the hello, and it is taken
 * again.  0 or CUT_ENOMEM (the positions are taken even then).
 */
int appcore_restore_step(struct appcore *k, const char *id,
                         const struct appcore_pos *pos, size_t nch,
                         int failed, const char *reason, int lost);

/* Queues AppRestorable: whether the application has a restore callback.
 * The daemon learns it after every hello reply, and at every change. */
int appcore_restorable(struct appcore *k, int yes);

#endif /* CUT_APPCORE_H */
