/*
 * appqueue.c - the down stream's queue of a libcut shell, pure (see
 * appqueue.h).
 *
 * Frames are queued whole and decoded one item at a time as the
 * application takes them, so the receiving side only skims a frame for
 * what is urgent.  The ring of frames grows to the longest queue seen and
 * is then reused: a steady stream queues without allocating.
 */
#include <stdlib.h>
#include <string.h>

#include "appqueue.h"

void
appq_init(struct appq *q, appq_free_fn *free_fn)
{
	memset(q, 0, sizeof(*q));
	q->free_fn = free_fn;
	cutproto_arena_init(&q->arena);
}

/* Frees every frame queued. */
static void
drop_frames(struct appq *q)
{
	for (; q->n > 0; q->n--) {
		q->free_fn(q->f[q->head].owner);
		q->head = (q->head + 1) % q->cap;
	}
	q->head = 0;
}

void
appq_fini(struct appq *q)
{
	appq_free_fn *free_fn = q->free_fn;

	drop_frames(q);
	free(q->f);
	cutproto_arena_fini(&q->arena);
	appq_init(q, free_fn);
}

int
appq_ready(const struct appq *q)
{
	return q->n > 0 || q->novt > 0 || q->bad_frames > 0;
}

void
appq_forget(struct appq *q, struct appcore *k)
{
	drop_frames(q);
	q->novt = q->ovt_head = 0;
	q->bad_frames = 0;
	q->restore_pending = 0; /* sent again after the hello if untaken */
	appcore_forget(k);
}

/* Makes room for one more frame in the ring.  0 or CUT_ENOMEM. */
static int
frame_room(struct appq *q)
{
	size_t cap = q->cap ? q->cap * 2 : 16;
	struct appq_frame *f;

	if (q->n < q->cap)
		return 0;
	if ((f = malloc(cap * sizeof(*f))) == NULL)
		return CUT_ENOMEM;
	for (size_t i = 0; i < q->n; i++)
		f[i] = q->f[(q->head + i) % q->cap];
	free(q->f);
	q->f = f;
	q->cap = cap;
	q->head = 0;
	return 0;
}

/* Notes an unaligned request for id; 0 if there is no room for it. */
static int
ovt_push(struct appq *q, const char *id)
{
	if (q->novt == APPQ_MAX_OVERTAKES)
		return 0;
	strcpy(q->ovt[(q->ovt_head + q->novt) % APPQ_MAX_OVERTAKES], id);
	q->novt++;
	return 1;
}

int
appq_ingest(struct appq *q, struct appcore *k, void *owner, const uint8_t *body,
            size_t len, struct appq_news *ret)
{
	const uint8_t *p;
	size_t start, off, n, keep = 0;
	struct appcore_event ev;
	int restore;

	memset(ret, 0, sizeof(*ret));
	/* All of a frame or none of it. */
	if ((restore = appcore_frame_start(body, len, &start)) < 0) {
		ret->bad_frame = 1;
		q->bad_frames++;
		q->free_fn(owner);
		return 0;
	}
	/* A restore: everything received before it and not yet taken
	 * belongs to before the restore, and is dropped, here in its frame
	 * (it comes first; credit before it was for the old positions too)
	 * and in the queue.  The restore itself is taken in its turn. */
	if (restore) {
		drop_frames(q);
		q->novt = q->ovt_head = 0;
		q->restore_pending = 1;
		ret->restore = 1;
	}
	/* Credit, syncs' answers and unaligned requests now, the rest in
	 * its turn. */
	for (off = start; appcore_frame_item(body, len, &off, &p, &n) == 1;) {
		switch (appcore_urgent(k, p, n, &ev)) {
		case APPCORE_BAD: /* refused in its turn (appcore_judge()) */
			ret->bad_items++;
			/* fall through */
		case APPCORE_LATER:
			keep++;
			break;
		case APPCORE_CREDIT:
			ret->grew |= ev.grew;
			break;
		case APPCORE_SYNCED:
			ret->synced = 1;
			break;
		case APPCORE_OVERTAKE:
			if (ovt_push(q, ev.id))
				ret->overtakes++;
			else
				ret->overtakes_lost++;
			break;
		}
	}
	if (keep == 0) {
		q->free_fn(owner);
		return 0;
	}
	if (frame_room(q) != 0) {
		q->free_fn(owner);
		return CUT_ENOMEM;
	}
	q->f[(q->head + q->n) % q->cap] =
	    (struct appq_frame){owner, body, len, start};
	q->n++;
	ret->queued = 1;
	return 0;
}

/* Takes the next item of frame f into *ret. */
static void
take_packed(struct appq *q, struct appcore *k, struct appq_frame *f,
            int64_t now, struct appq_item *ret)
{
	const Cut__V1__AppDeliver *d;
	const Cut__V1__AppItem *it;
	const uint8_t *p;
	size_t n;

	ret->what = APPQ_SKIP;
	if (appcore_frame_item(f->body, f->len, &f->off, &p, &n) != 1) {
		f->off = f->len; /* checked on arrival */
		return;
	}
	/* Taken on arrival (appcore_urgent()); appcore_judge() would say
	 * so too: this only spares decoding them again. */
	if (n > 0 && (p[0] == APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_CREDIT) ||
	              p[0] == APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_SYNCED)))
		return;
	/* Taken off the queue now: unaligned requests that came after it
	 * may go (after it is processed, by this same taker). */
	if (n > 0 && p[0] == APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_RESTORE))
		q->restore_pending = 0;
	it = (const Cut__V1__AppItem *)cutproto_unpack_arena(
	    &cut__v1__app_item__descriptor, n, p, &q->arena);
	ret->it = it;
	if (it == NULL) {
		ret->what = APPQ_BAD_ITEM;
		ret->why = "an item that does not decode";
		return;
	}
	switch (appcore_judge(it, &ret->why)) {
	case APPCORE_SKIP:
		break;
	case APPCORE_DELIVER:
		ret->what = APPQ_DELIVER;
		d = it->deliver;
		ret->report = appcore_handed(
		    k, d->from, d->has_seq ? d->seq : 0,
		    d->has_numbering ? d->numbering : 0, d->payload.len, now);
		break;
	case APPCORE_STATE:
		ret->what = APPQ_STATE;
		strcpy(ret->id, it->state_request->snapshot_id);
		break;
	case APPCORE_RESTORE:
		ret->what = APPQ_RESTORE;
		break;
	case APPCORE_REFUSED:
		ret->what = APPQ_REFUSED;
		break;
	case APPCORE_BAD_ITEM:
		ret->what = APPQ_BAD_ITEM;
		break;
	}
}

enum appq_kind
appq_take(struct appq *q, struct appcore *k, int64_t now, struct appq_item *ret)
{
	struct appq_frame *f;

	/* What the last take decoded is gone now. */
	cutproto_arena_reset(&q->arena);
	memset(ret, 0, sizeof(*ret));
	/* An unaligned request that came after a restore still queued is
	 * answered after it: it is about the restored state. */
	if (q->novt > 0 && !q->restore_pending) {
		strcpy(ret->id, q->ovt[q->ovt_head]);
		q->ovt_head = (q->ovt_head + 1) % APPQ_MAX_OVERTAKES;
		q->novt--;
		ret->unaligned = 1;
		return ret->what = APPQ_STATE;
	}
	if (q->bad_frames > 0) {
		q->bad_frames--;
		return ret->what = APPQ_BAD_FRAME;
	}
	if (q->n == 0)
		return ret->what = APPQ_NONE;
	f = &q->f[q->head];
	take_packed(q, k, f, now, ret);
	/* Its items are decoded into the arena: the frame may go. */
	if (f->off == f->len) {
		q->free_fn(f->owner);
		q->head = (q->head + 1) % q->cap;
		q->n--;
	}
	return ret->what;
}
