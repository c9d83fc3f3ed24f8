/*
 * recv.c - the down stream: deliveries, state requests, credit and errors
 * from the daemon.
 *
 * An nng completion (recv_done) receives every frame as it comes, whatever
 * the application is doing: credit applies at once, so a cut_send()
 * waiting for room wakes even in a program that is not receiving; an
 * unaligned state request is put ahead of everything queued; the rest is
 * queued.  The application takes items off the queue in cut_recv() and
 * cut_dispatch(), on its own thread: a delivery is returned to it, an
 * aligned state request is answered in its place, and an unaligned one
 * before any further delivery.  Either way the state callback runs between
 * two deliveries, and the reply says how many deliveries were handed over
 * before it (AppStateReply.handed): the cut of the unaligned form, and a
 * check of the aligned one.  The reply leaves on the up stream when the
 * callback calls cut_buf_set(), while the application still holds the lock
 * that orders its sends, so the reply sits exactly between the sends its
 * state covers and the ones it does not.
 *
 * A restore (AppRestore) drops, as soon as its frame comes, every item
 * received before it and not yet taken, and holds back unaligned requests
 * that come after it until the application's thread has processed it:
 * called the restore callback, then taken the snapshot's positions and
 * answered AppRestored in one step under the send lock (restore()).
 *
 * libcut reports the handed count (AppTaken) CUT_TAKEN_DELAY_MS after
 * handing a delivery over (a timer does it, whatever the application is
 * doing then), at once when an eighth of a window is unreported, and
 * whenever the application stops receiving (cut_dispatch returns,
 * cut_recv(…, 0) finds nothing): the daemon then frees those deliveries
 * and their senders' windows reopen.
 *
 * What is taken in at once, the queue and the order it is taken in are
 * the pure core's (appq_ingest(), appq_take() in core/appqueue.c, which
 * the simulation runs too); this file is their shell: the locks, nng, the
 * eventfd, the taken timer, and the copies handed to the application.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "cut_int.h"

struct cut_msg {
	char *from;
	char *content_type;
	uint8_t *data;
	size_t len;
	uint64_t seq;
	uint64_t numbering; /* AppDeliver.numbering, or 0 */
};

struct cut_buf {
	struct cut *c;
	const char *snapshot_id;
	uint64_t handed;
	int used;
};

/* An AppRestore, copied out of its frame for the restore callback: one
 * allocation, the strings and the state after the channels. */
struct restore {
	char id[CUT_SNAPSHOT_ID_MAX];
	char *content_type; /* or NULL */
	uint8_t *state;
	size_t len;
	size_t nch;
	struct appcore_pos ch[]; /* the nodes' names are in the allocation */
};

/* What taking one item off the queue gave. */
struct item {
	enum {
		ITEM_DELIVER,
		ITEM_STATE,
		ITEM_RESTORE,
		ITEM_ERROR,
		ITEM_BAD,
		ITEM_SKIP
	} kind;
	struct cut_msg *msg;          /* ITEM_DELIVER */
	char id[CUT_SNAPSHOT_ID_MAX]; /* ITEM_STATE */
	struct restore *rs;           /* ITEM_RESTORE */
};

/* Copies a delivery into one allocation that the caller owns. */
static struct cut_msg *
new_msg(const Cut__V1__AppDeliver *d)
{
	size_t flen = strlen(d->from) + 1;
	size_t clen = d->content_type != NULL ? strlen(d->content_type) + 1 : 0;
	struct cut_msg *m;
	char *p;

	m = malloc(sizeof(*m) + flen + clen + d->payload.len + 1);
	if (m == NULL)
		return NULL;
	p = (char *)(m + 1);
	m->data = (uint8_t *)p;
	if (d->payload.len > 0)
		memcpy(p, d->payload.data, d->payload.len);
	p[d->payload.len] = '\0';
	p += d->payload.len + 1;
	m->from = memcpy(p, d->from, flen);
	p += flen;
	m->content_type = clen > 0 ? memcpy(p, d->content_type, clen) : NULL;
	m->len = d->payload.len;
	m->seq = d->has_seq ? d->seq : 0;
	m->numbering = d->has_numbering ? d->numbering : 0;
	return m;
}

/* Copies a restore (checked by appcore_judge()) into one allocation that
 * the caller frees, or returns NULL. */
static struct restore *
new_restore(const Cut__V1__AppRestore *r)
{
	size_t clen = r->content_type != NULL ? strlen(r->content_type) + 1 : 0;
	size_t names = 0, size;
	struct restore *rs;
	char *p;

	for (size_t i = 0; i < r->n_channels; i++)
		names += strlen(r->channels[i]->node) + 1;
	size = sizeof(*rs) + r->n_channels * sizeof(rs->ch[0]) + names + clen +
	       r->state.len + 1;
	if ((rs = malloc(size)) == NULL)
		return NULL;
	strcpy(rs->id, r->snapshot_id);
	rs->nch = r->n_channels;
	p = (char *)&rs->ch[rs->nch];
	for (size_t i = 0; i < rs->nch; i++) {
		const Cut__V1__AppRestoreChannel *ch = r->channels[i];
		size_t n = strlen(ch->node) + 1;
		rs->ch[i].node = memcpy(p, ch->node, n);
		p += n;
		rs->ch[i].out_sent = ch->has_out_sent ? ch->out_sent : 0;
		rs->ch[i].in_taken = ch->has_in_taken ? ch->in_taken : 0;
	}
	rs->content_type = clen > 0 ? memcpy(p, r->content_type, clen) : NULL;
	p += clen;
	rs->state = (uint8_t *)p;
	if (r->state.len > 0)
		memcpy(p, r->state.data, r->state.len);
	p[r->state.len] = '\0';
	rs->len = r->state.len;
	return rs;
}

/* What the taken item qi is for the application, in *ret: deliveries and
 * restores are copied out of it (it lives only until the next take).
 * Returns 0 or CUT_ENOMEM. */
static int
judge(struct cut *c, const struct appq_item *qi, struct item *ret)
{
	const ProtobufCEnumValue *v;
	const Cut__V1__AppItem *it = qi->it;

	switch (qi->what) {
	case APPQ_NONE: /* take_item() answers these two */
	case APPQ_BAD_FRAME:
	case APPQ_SKIP:
		break;
	case APPQ_STATE:
		memcpy(ret->id, qi->id, sizeof(ret->id));
		ret->kind = ITEM_STATE;
		return 0;
	case APPQ_DELIVER:
		if ((ret->msg = new_msg(it->deliver)) == NULL)
			return CUT_ENOMEM;
		ret->kind = ITEM_DELIVER;
		return 0;
	case APPQ_RESTORE:
		if ((ret->rs = new_restore(it->restore)) == NULL)
			return CUT_ENOMEM;
		ret->kind = ITEM_RESTORE;
		return 0;
	case APPQ_REFUSED:
		v = protobuf_c_enum_descriptor_get_value(
		    &cut__v1__app_error__code__descriptor,
		    (int)it->error->code);
		cut_set_error(c, "the daemon refused an item (%s): %s",
		              v != NULL ? v->name : "?", it->error->message);
		ret->kind = ITEM_ERROR;
		return 0;
	case APPQ_BAD_ITEM:
		if (it == NULL)
			cut_set_error(c, "the daemon sent %s", qi->why);
		else
			cut_set_error(c, "the daemon sent %s (kind %d)",
			              qi->why, (int)it->item_case);
		ret->kind = ITEM_BAD;
		return 0;
	}
	ret->kind = ITEM_SKIP;
	return 0;
}

/* Sends AppTaken if the handed count changed.  taken_mu held. */
static void
report_locked(struct cut *c)
{
	pthread_mutex_lock(&c->send_mu);
	/* The link lost: the hello after it says where we stand. */
	if (!atomic_load(&c->lost) && c->send_err == 0 &&
	    appcore_report(&c->k) == 0)
		cut_kick(c);
	pthread_mutex_unlock(&c->send_mu);
}

void
cut_report_taken(struct cut *c)
{
	pthread_mutex_lock(&c->taken_mu);
	report_locked(c);
	pthread_mutex_unlock(&c->taken_mu);
}

/* The timer: what was handed CUT_TAKEN_DELAY_MS ago is reported, whatever
 * the application is doing now. */
static void
taken_due(void *arg)
{
	struct cut *c = arg;

	pthread_mutex_lock(&c->taken_mu);
	c->taken_armed = 0;
	if (nng_aio_result(c->taken_aio) == 0)
		report_locked(c);
	pthread_mutex_unlock(&c->taken_mu);
}

/*
 * Takes the next item into *ret, in appq_take()'s order.  A delivery
 * taken counts as handed, and is reported at once when a window's eighth
 * is unreported, else by the timer.  Returns 0, CUT_ETIMEDOUT when
 * nothing is queued, CUT_EPROTO for a frame that did not decode, or
 * CUT_ENOMEM.  Called with recv_mu.
 */
static int
take_item(struct cut *c, struct item *ret)
{
	struct appq_item qi;

	pthread_mutex_lock(&c->taken_mu);
	pthread_mutex_lock(&c->q_mu);
	appq_take(&c->q, &c->k, 0, &qi);
	pthread_mutex_unlock(&c->q_mu);
	if (qi.what == APPQ_DELIVER && qi.report) {
		report_locked(c);
	} else if (qi.what == APPQ_DELIVER && !c->taken_armed &&
	           c->taken_aio != NULL) {
		c->taken_armed = 1;
		nng_sleep_aio(CUT_TAKEN_DELAY_MS, c->taken_aio);
	}
	pthread_mutex_unlock(&c->taken_mu);
	if (qi.what == APPQ_NONE)
		return CUT_ETIMEDOUT;
	if (qi.what == APPQ_BAD_FRAME)
		return CUT_EPROTO;
	/* The item lives until the next take, which only this thread
	 * (recv_mu) makes: it is copied out without the locks. */
	return judge(c, &qi, ret);
}

/*
 * Waits until an item is queued.  timeout_ms 0: do not wait; -1: as long
 * as it takes; otherwise until deadline (an nng_clock() time).  Returns 0,
 * CUT_ETIMEDOUT, or CUT_ECLOSED (nothing queued and the link is lost).
 */
static int
wait_items(struct cut *c, int timeout_ms, nng_time deadline)
{
	int rv = 0;

	pthread_mutex_lock(&c->q_mu);
	while (!appq_ready(&c->q)) {
		cut_link_check(c);
		if (c->recv_err != 0) {
			rv = c->recv_err;
			break;
		}
		if (atomic_load(&c->lost)) {
			/* Wait for the link to come back, within the
			 * timeout; then for what it brings. */
			nng_time now = nng_clock();
			int left = timeout_ms <= 0  ? timeout_ms
			           : deadline > now ? (int)(deadline - now)
			                            : 0;
			pthread_mutex_unlock(&c->q_mu);
			rv = cut_resume(c, left < 0 || left > CUT_RESUME_MS
			                       ? CUT_RESUME_MS
			                       : left);
			pthread_mutex_lock(&c->q_mu);
			if (rv == CUT_ECLOSED && timeout_ms < 0)
				continue;
			if (rv == CUT_ECLOSED)
				rv = cut_lost_code(c);
			if (rv != 0)
				break;
			continue;
		}
		if (timeout_ms == 0 ||
		    (timeout_ms > 0 && nng_clock() >= deadline)) {
			rv = CUT_ETIMEDOUT;
			break;
		}
		cut_wait_slice(&c->q_cv, &c->q_mu, timeout_ms, deadline);
	}
	pthread_mutex_unlock(&c->q_mu);
	return rv;
}

/* Empties an eventfd. */
static void
drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
}

/* Makes an eventfd readable. */
static void
poke(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		return; /* already at its maximum: readable anyway */
}

/* Takes in frame msg (consumed, appq_ingest()): credit and syncs'
 * answers wake the senders, a restore stops those waiting for room.
 * Returns 1 if the application has something new to process.  Called
 * with q_mu. */
static int
ingest(struct cut *c, nng_msg *msg)
{
	size_t len = nng_msg_len(msg);
	struct appq_news news;
	int rv;

	if (c->resuming)
		return cut_resume_frame(c, msg);
	/* The frame's urgent items change the up stream (credit, syncs). */
	pthread_mutex_lock(&c->send_mu);
	rv = appq_ingest(&c->q, &c->k, msg, nng_msg_body(msg), len, &news);
	if (news.restore) {
		/* A send waiting for room is from before the restore. */
		atomic_store(&c->restore_arrived, 1);
		pthread_cond_broadcast(&c->send_cv);
	}
	if (news.grew)
		cut_credit_grew(c);
	if (news.synced)
		pthread_cond_broadcast(&c->send_cv);
	pthread_mutex_unlock(&c->send_mu);
	if (news.bad_frame)
		cut_set_error(c,
		              "the daemon sent a frame that does not decode "
		              "(%zu bytes)",
		              len);
	/* Its deliveries would be lost to this application; the link is
	 * no longer reliable, so say so. */
	if (rv != 0)
		c->recv_err = rv;
	return rv != 0 || news.bad_frame || news.queued || news.overtakes > 0;
}

/* The completion of a receive: takes the frame in and receives again. */
static void
recv_done(void *arg)
{
	struct cut *c = arg;
	int rv = nng_aio_result(c->recv_aio), news = 1, again = rv == 0;
	unsigned gen;
	nng_socket app;

	pthread_mutex_lock(&c->q_mu);
	if (rv != 0 && c->recv_moving) {
		/* Called back by cut_relink(): on to the new socket. */
		c->recv_moving = 0;
		again = 1;
		news = 0;
	} else if (rv != 0) {
		c->recv_err = rv == NNG_ECLOSED || rv == NNG_ECANCELED
		                  ? CUT_ECLOSED
		                  : rpc_nng_error(rv);
	} else {
		news = ingest(c, nng_aio_get_msg(c->recv_aio));
	}
	/* A frame of credit alone is nothing to dispatch. */
	if (news) {
		pthread_cond_broadcast(&c->q_cv);
		poke(c->recv_efd);
	}
	app = c->app;
	gen = atomic_load(&c->app_gen);
	pthread_mutex_unlock(&c->q_mu);
	if (!again)
		return;
	nng_recv_aio(app, c->recv_aio);
	/* Replaced as this went to the old socket, after cut_relink()
	 * called the receive back: called back again (recv_moving is
	 * still set), it goes to the new one. */
	if (atomic_load(&c->app_gen) != gen)
		nng_aio_cancel(c->recv_aio);
}

int
cut_recv_start(struct cut *c)
{
	int rv;

	if ((rv = nng_aio_alloc(&c->recv_aio, recv_done, c)) != 0 ||
	    (rv = nng_aio_alloc(&c->taken_aio, taken_due, c)) != 0)
		return rpc_nng_error(rv);
	nng_aio_set_timeout(c->recv_aio, NNG_DURATION_INFINITE);
	nng_recv_aio(c->app, c->recv_aio);
	return 0;
}

/* Sends AppStateReply for id, recorded after handed deliveries. */
static int
send_reply(struct cut *c, const char *id, uint64_t handed, const void *data,
           size_t len, const char *content_type)
{
	int rv;

	pthread_mutex_lock(&c->taken_mu);
	pthread_mutex_lock(&c->send_mu);
	if (atomic_load(&c->lost))
		rv = CUT_ECLOSED;
	else if (c->send_err != 0)
		rv = c->send_err;
	else if ((rv = appcore_state_reply(&c->k, id, handed, data, len,
	                                   content_type)) == 0)
		cut_kick(c);
	pthread_mutex_unlock(&c->send_mu);
	pthread_mutex_unlock(&c->taken_mu);
	return rv;
}

int
cut_buf_set(struct cut_buf *b, const void *data, size_t len,
            const char *content_type)
{
	if (b == NULL || b->used || (data == NULL && len > 0) ||
	    !appcore_text_ok(content_type))
		return CUT_EINVAL;
	b->used = 1;
	if (len > b->c->k.max_message) {
		cut_set_error(b->c,
		              "state of %zu bytes exceeds the limit of %zu",
		              len, b->c->k.max_message);
		return CUT_E2BIG;
	}
	return send_reply(b->c, b->snapshot_id, b->handed, data, len,
	                  content_type);
}

/* Answers the state request for id through the state callback. */
static int
answer(struct cut *c, const char *id)
{
	struct cut_buf b = {c, id, c->k.handed, 0};
	cut_state_fn fn;
	void *arg;
	int rv;

	pthread_mutex_lock(&c->mu);
	fn = c->state_fn;
	arg = c->state_arg;
	pthread_mutex_unlock(&c->mu);
	if (fn == NULL)
		return send_reply(c, id, c->k.handed, NULL, 0,
		                  CUT_CONTENT_TYPE_EMPTY);
	rv = fn(arg, id, &b);
	/* A failed cut_buf_set() was the callback's to handle: the
	 * snapshot goes unanswered rather than recording a wrong state. */
	if (b.used || rv != 0)
		return 0;
	return send_reply(c, id, c->k.handed, NULL, 0, CUT_CONTENT_TYPE_EMPTY);
}

int
cut_restorable_locked(struct cut *c)
{
	int yes;

	pthread_mutex_lock(&c->mu);
	yes = c->restore_fn != NULL;
	pthread_mutex_unlock(&c->mu);
	if (atomic_load(&c->lost))
		return CUT_ECLOSED;
	if (c->send_err != 0)
		return c->send_err;
	if (appcore_restorable(&c->k, yes) != 0)
		return CUT_ENOMEM;
	cut_kick(c);
	return 0;
}

int
cut_set_restore_callback(struct cut *c, cut_restore_fn fn, void *arg)
{
	if (c == NULL)
		return CUT_EINVAL;
	/* Under send_mu, so that the daemon hears of each change in the
	 * order they were made. */
	if (c->has_app)
		pthread_mutex_lock(&c->send_mu);
	pthread_mutex_lock(&c->mu);
	c->restore_fn = fn;
	c->restore_arg = arg;
	pthread_mutex_unlock(&c->mu);
	/* A lost link says it again after its hello (resume.c). */
	if (c->has_app) {
		(void)cut_restorable_locked(c);
		pthread_mutex_unlock(&c->send_mu);
	}
	return 0;
}

/*
 * The restore's step for the up stream, in one go under taken_mu and
 * send_mu (appcore_restore()): takes the snapshot's channel positions,
 * forgets what was kept for sending again, starts credit and the handed
 * count from 0 and queues AppRestored (failed with rv and reason unless rv
 * is 0).  Sends before it are numbered the old way and discarded by the
 * daemon, which ignores sends until AppRestored; sends after it are
 * numbered from the snapshot's out_sent.  Returns 0 or CUT_ENOMEM.
 */
static int
restore_step(struct cut *c, const struct restore *rs, int rv,
             const char *reason)
{
	int lost, qrv;

	pthread_mutex_lock(&c->taken_mu);
	pthread_mutex_lock(&c->send_mu);
	atomic_store(&c->restore_arrived, 0);
	lost = atomic_load(&c->lost) || c->send_err != 0;
	qrv = appcore_restore_step(&c->k, rs->id, rs->ch, rs->nch, rv, reason,
	                           lost);
	if (qrv == 0 && !lost)
		cut_kick(c);
	pthread_mutex_unlock(&c->send_mu);
	pthread_mutex_unlock(&c->taken_mu);
	return qrv == CUT_ENOMEM ? CUT_ENOMEM : 0;
}

int
cut_restore_commit(struct cut *c)
{
	if (c == NULL || c->rs_cur == NULL || c->rs_done ||
	    !pthread_equal(c->rs_thread, pthread_self()))
		return CUT_EINVAL;
	c->rs_done = 1;
	return restore_step(c, c->rs_cur, 0, NULL);
}

/*
 * Processes a restore (consumed) at its place in the down stream: calls
 * the restore callback, then takes the restore's step for the up stream
 * (restore_step()) unless the callback did (cut_restore_commit()).
 * Called with recv_mu.
 */
static int
restore(struct cut *c, struct restore *rs)
{
	char reason[RPC_MSG_MAX] = "";
	cut_restore_fn fn;
	void *arg;
	int rv = CUT_ENOTSUP, qrv = 0;

	pthread_mutex_lock(&c->mu);
	fn = c->restore_fn;
	arg = c->restore_arg;
	pthread_mutex_unlock(&c->mu);
	if (fn != NULL) {
		c->rs_cur = rs;
		c->rs_done = 0;
		c->rs_thread = pthread_self();
		rv = fn(arg, rs->id, rs->state, rs->len, rs->content_type);
		c->rs_cur = NULL;
	}
	if (fn == NULL)
		snprintf(reason, sizeof(reason),
		         "the application has no restore callback");
	else if (rv != 0)
		snprintf(reason, sizeof(reason),
		         "the application's restore callback failed (%d)", rv);
	if (fn != NULL && c->rs_done) {
		/* Committed: the daemon was told it was taken. */
		if (rv != 0)
			cut_set_error(c,
			              "restore to %s: the callback failed (%d) "
			              "after cut_restore_commit(): reported "
			              "taken",
			              rs->id, rv);
	} else {
		qrv = restore_step(c, rs, rv, reason);
		if (rv != 0)
			cut_set_error(c, "restore to %s: %s", rs->id, reason);
	}
	c->rs_done = 0;
	free(rs);
	return qrv;
}

int
cut_set_state_callback(struct cut *c, cut_state_fn fn, void *arg)
{
	if (c == NULL)
		return CUT_EINVAL;
	pthread_mutex_lock(&c->mu);
	c->state_fn = fn;
	c->state_arg = arg;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* Takes recv_mu, or says why not. */
static int
lock_recv(struct cut *c)
{
	int rv = pthread_mutex_lock(&c->recv_mu);

	if (rv == EDEADLK)
		return CUT_EBUSY;
	return rv == 0 ? 0 : CUT_EIO;
}

/*
 * Processes items until one is for the application: a delivery (stored in
 * *ret_msg), an error item (CUT_EREFUSED) or a bad one (CUT_EPROTO).  If
 * the queue runs dry, waits within the time allowed (see wait_items()).
 * Called with recv_mu.
 */
static int
next_message(struct cut *c, int timeout_ms, nng_time deadline,
             struct cut_msg **ret_msg)
{
	struct item it;
	int rv;

	for (;;) {
		rv = take_item(c, &it);
		/* Nothing to hand over and no wait: the application goes
		 * elsewhere, so what it took is reported now. */
		if (rv == CUT_ETIMEDOUT && timeout_ms == 0)
			cut_report_taken(c);
		if (rv == CUT_ETIMEDOUT) {
			if ((rv = wait_items(c, timeout_ms, deadline)) != 0)
				return rv;
			continue;
		}
		if (rv != 0)
			return rv;
		switch (it.kind) {
		case ITEM_DELIVER:
			*ret_msg = it.msg;
			return 0;
		case ITEM_STATE:
			if ((rv = answer(c, it.id)) != 0)
				return rv;
			break;
		case ITEM_RESTORE:
			if ((rv = restore(c, it.rs)) != 0)
				return rv;
			break;
		case ITEM_ERROR:
			return CUT_EREFUSED;
		case ITEM_BAD:
			return CUT_EPROTO;
		case ITEM_SKIP:
			break;
		}
	}
}

int
cut_recv(struct cut *c, int timeout_ms, struct cut_msg **ret)
{
	struct cut_msg *m = NULL;
	nng_time deadline;
	int rv;

	if (c == NULL || ret == NULL)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	if ((rv = lock_recv(c)) != 0)
		return rv;
	deadline = nng_clock() + (timeout_ms > 0 ? (nng_time)timeout_ms : 0);
	rv = next_message(c, timeout_ms < 0 ? -1 : timeout_ms, deadline, &m);
	pthread_mutex_unlock(&c->recv_mu);
	if (rv == 0)
		*ret = m;
	return rv;
}

int
cut_dispatch(struct cut *c, cut_msg_fn fn, void *arg)
{
	struct cut_msg *m = NULL;
	int soft = 0, rv = 0;

	if (c == NULL || fn == NULL)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	if ((rv = lock_recv(c)) != 0)
		return rv;
	drain(c->recv_efd);
	for (int n = 0;; n++) {
		if (n == APPQ_DISPATCH_MAX) {
			poke(c->recv_efd); /* more may wait: come back */
			rv = 0;
			break;
		}
		rv = next_message(c, 0, 0, &m);
		if (rv == CUT_ETIMEDOUT) {
			rv = 0;
			break;
		}
		if (rv == 0 && m != NULL) {
			fn(arg, m);
			cut_msg_free(m);
		} else if (rv == CUT_EREFUSED || rv == CUT_EPROTO) {
			soft = rv;
		} else if (rv != 0) {
			break;
		}
		m = NULL;
	}
	/* The application goes back to its own loop: what it took must not
	 * hold its senders back meanwhile. */
	cut_report_taken(c);
	pthread_mutex_unlock(&c->recv_mu);
	return rv != 0 ? rv : soft;
}

int
cut_fd(struct cut *c, int *ret_fd)
{
	if (c == NULL || ret_fd == NULL)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	*ret_fd = c->recv_efd;
	return 0;
}

const char *
cut_msg_from(const struct cut_msg *m)
{
	return m != NULL ? m->from : NULL;
}

const void *
cut_msg_data(const struct cut_msg *m)
{
	return m != NULL ? m->data : NULL;
}

size_t
cut_msg_len(const struct cut_msg *m)
{
	return m != NULL ? m->len : 0;
}

const char *
cut_msg_content_type(const struct cut_msg *m)
{
	return m != NULL ? m->content_type : NULL;
}

uint64_t
cut_msg_seq(const struct cut_msg *m)
{
	return m != NULL ? m->seq : 0;
}

void
cut_msg_free(struct cut_msg *m)
{
	free(m);
}
