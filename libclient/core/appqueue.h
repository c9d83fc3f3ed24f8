/*
 * appqueue.h - the down stream's queue of a libcut shell, pure: no I/O, no
 * threads, no clock.
 *
 * Frames from the daemon are taken in as they come (appq_ingest()): what
 * cannot wait for the application (credit, syncs' answers, unaligned state
 * requests) is applied or noted at once, and a frame that holds anything
 * else is queued whole, still packed, to be taken item by item, in order,
 * by the application's thread (appq_take()).  An unaligned state request
 * goes ahead of every queued item, except while a restore is queued: it is
 * about the restored state.  A restore drops everything received before
 * it and not yet taken.
 *
 * libcut (recv.c) keeps one under q_mu and receives into it on nng's
 * thread; the simulation (daemon/sim/simapp.c) keeps one per simulated
 * application.  Frames stay where their owner put them: the queue holds
 * an opaque owner pointer beside the body and gives it back to the free
 * callback once the frame is taken or dropped, so libcut queues nng
 * messages without copying them and the simulation its own buffers.
 *
 * The order appq_take() takes things in:
 *
 *   1. an unaligned state request, oldest first, unless a restore is
 *      queued (it waits until the restore is taken);
 *   2. a frame that did not decode, once each (the shell reports it);
 *   3. the next item of the oldest queued frame: credit and syncs'
 *      answers (applied on arrival) and unaligned requests in their place
 *      are skipped, the rest classified by appcore_judge().
 *
 * Every function returns 0 or a CUT_E* code unless it says otherwise.
 */
#ifndef CUT_APPQUEUE_H
#define CUT_APPQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "appcore.h"
#include "cut/cut.h"
#include "cutproto.h"

/*
 * The unaligned state requests waiting at most.  The daemon sends one per
 * snapshot in progress, and the application answers them before anything
 * else it takes, so only an application that stops taking for long while
 * snapshots keep starting reaches this.  A request beyond it is dropped:
 * it goes unanswered and the daemon's deadline aborts that snapshot.
 */
#define APPQ_MAX_OVERTAKES 64

/* How many items one dispatch takes at most, so that a daemon that never
 * stops sending cannot keep it forever (cut_dispatch()). */
#define APPQ_DISPATCH_MAX 4096

/* Frees a frame's owner once the queue is done with it. */
typedef void appq_free_fn(void *owner);

/* A queued frame: body (len bytes, owned by owner) and the offset of its
 * next item not yet taken. */
struct appq_frame {
	void *owner;
	const uint8_t *body;
	size_t len, off;
};

struct appq {
	appq_free_fn *free_fn;
	/* The frames queued, oldest first: a ring of cap, n from head. */
	struct appq_frame *f;
	size_t head, n, cap;
	/* The unaligned requests waiting: a ring, novt from ovt_head. */
	char ovt[APPQ_MAX_OVERTAKES][CUT_SNAPSHOT_ID_MAX];
	size_t ovt_head, novt;
	size_t bad_frames;   /* frames that did not decode, not yet taken */
	int restore_pending; /* an AppRestore is queued, not yet taken */
	struct cutproto_arena arena; /* decodes the item being taken */
};

/* Prepares an empty queue whose frames free_fn frees. */
void appq_init(struct appq *q, appq_free_fn *free_fn);

/* Frees every frame queued and the queue's memory; q is empty after. */
void appq_fini(struct appq *q);

/* Whether appq_take() has something to take. */
int appq_ready(const struct appq *q);

/*
 * Forgets what a lost connection had queued both ways: the frames (freed),
 * the unaligned requests, the bad frames not yet told and a restore not
 * yet taken (the daemon sends it again after the hello), and k's out
 * buffer and handed count (appcore_forget()).
 */
void appq_forget(struct appq *q, struct appcore *k);

/* What a frame brought (appq_ingest()). */
struct appq_news {
	int bad_frame;         /* its framing is bad: none of it taken, and
	                        * appq_take() tells it once */
	int restore;           /* it holds an AppRestore: everything queued
	                        * before was dropped */
	int grew;              /* credit raised a limit: senders may go */
	int synced;            /* a sync's answer was applied */
	int queued;            /* it holds items for the application */
	size_t overtakes;      /* unaligned requests noted */
	size_t overtakes_lost; /* ... and dropped, past APPQ_MAX_OVERTAKES */
	size_t bad_items;      /* urgent kinds that are bad: queued, for
	                        * appq_take() to refuse in their turn */
};

/*
 * Takes in frame body (len bytes from the daemon, after the answer to our
 * hello), and takes ownership of owner in every case: queued, or freed
 * with the free callback before it returns.  Checks its framing
 * (appcore_frame_start()); a restore drops every frame queued and every
 * unaligned request, and holds later ones back until it is taken; credit
 * and syncs' answers are applied to k and unaligned requests noted
 * (appcore_urgent()); the frame is queued if anything else is in it.  k's
 * up stream changes (credit, syncs): the caller holds what guards it.
 * Says what happened in *ret.  0, or CUT_ENOMEM: the frame could not be
 * queued and its items for the application are lost (what was urgent was
 * applied).
 */
int appq_ingest(struct appq *q, struct appcore *k, void *owner,
                const uint8_t *body, size_t len, struct appq_news *ret);

/* What appq_take() took. */
enum appq_kind {
	APPQ_NONE,      /* nothing is queued */
	APPQ_SKIP,      /* an item taken on arrival: nothing to do */
	APPQ_STATE,     /* a state request for id: answer it now, between
	                 * two deliveries (unaligned: ahead of the queue) */
	APPQ_DELIVER,   /* it->deliver, checked and noted handed */
	APPQ_RESTORE,   /* it->restore, checked: take it here */
	APPQ_REFUSED,   /* it->error: the daemon refused an item of ours */
	APPQ_BAD_ITEM,  /* a bad item (it NULL: it does not decode); why */
	APPQ_BAD_FRAME, /* a frame that did not decode */
};

struct appq_item {
	enum appq_kind what;
	/* Decoded, valid until the next appq_take() or appq_fini(). */
	const Cut__V1__AppItem *it;
	char id[CUT_SNAPSHOT_ID_MAX]; /* APPQ_STATE */
	int unaligned;                /* APPQ_STATE */
	int report;      /* APPQ_DELIVER: the handed count is due to be reported
	                  * now (appcore_handed()); else its timer runs */
	const char *why; /* APPQ_BAD_ITEM: "a bad item", "a bad restore",
	                  * "an item that does not decode" */
};

/*
 * Takes the next thing in the order above into *ret and returns
 * ret->what.  A delivery counts as handed to the application as it is
 * taken (appcore_handed() with now): k's down stream counts change, and
 * the caller holds what guards them.  A frame fully taken is freed.
 */
enum appq_kind appq_take(struct appq *q, struct appcore *k, int64_t now,
                         struct appq_item *ret);

#endif /* CUT_APPQUEUE_H */
