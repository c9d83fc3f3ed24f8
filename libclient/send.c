/*
 * send.c - the up stream: cut_send() and everything else the application
 * sends to its daemon, and the credit that paces it.
 *
 * Calls pack their item into one out buffer, under send_mu, in the order
 * they are made, and return: no call waits for the daemon.  One frame is
 * in flight at a time; when it has left, its completion sends everything
 * packed meanwhile as the next frame.  At a low rate each item therefore
 * leaves at once, alone; at a high rate items coalesce into frames of up
 * to CUT_OUT_FRAME_MAX.
 *
 * Credit.  Each channel has a window (AppHelloReply.window_bytes) of
 * bytes sent and not yet taken by the receiving application, where a
 * message counts its payload plus AppHelloReply.message_cost.  The
 * daemon says how far the application may send with AppCredit, which
 * recv.c applies as soon as it arrives.  cut_send() waits for room up to
 * its timeout; cut_try_send() returns CUT_EAGAIN at once and arms
 * cut_send_fd().  Control items (state replies, taken counts) need no
 * credit.
 *
 * Each message carries its channel's next seq and is also kept (resume.c)
 * until the daemon reports it taken, so a message cut_send() accepted
 * reaches the receiving application even if either daemon restarts.
 * While the link is lost, sends within the credit left are kept and go
 * once the link is back; beyond it, cut_send() waits for the link.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "cut_int.h"

int
cut_send_now(struct cut *c, const void *buf, size_t len, int timeout_ms)
{
	nng_msg *msg;
	int rv;

	if ((rv = nng_msg_alloc(&msg, len)) != 0)
		return rpc_nng_error(rv);
	memcpy(nng_msg_body(msg), buf, len);
	nng_socket_set_ms(c->app, NNG_OPT_SENDTIMEO, timeout_ms);
	if ((rv = nng_sendmsg(c->app, msg, 0)) != 0) {
		nng_msg_free(msg);
		return rpc_nng_error(rv);
	}
	return 0;
}

/* Starts sending what the out buffer holds, whole items up to a frame,
 * unless a frame is in flight; its completion sends the next.  send_mu
 * held. */
void
cut_kick(struct cut *c)
{
	size_t n;
	nng_msg *msg;

	/* Closing: a frame given to the stopped aio would be dropped by
	 * nng without a callback, and leak. */
	if (c->sending || c->closing || c->k.out_len == 0 || c->send_err != 0 ||
	    atomic_load(&c->lost))
		return;
	n = appcore_frame_len(&c->k, appcore_frame_max(&c->k));
	if (nng_msg_alloc(&msg, n) != 0)
		return; /* kept; the next call or completion retries */
	memcpy(nng_msg_body(msg), c->k.out, n);
	appcore_frame_taken(&c->k, n);
	c->sending = 1;
	nng_aio_set_msg(c->send_aio, msg);
	nng_send_aio(c->app, c->send_aio);
}

void
cut_send_done(void *arg)
{
	struct cut *c = arg;
	int rv = nng_aio_result(c->send_aio);

	pthread_mutex_lock(&c->send_mu);
	c->sending = 0;
	if (rv != 0) {
		nng_msg_free(nng_aio_get_msg(c->send_aio));
		/* Called back because the link was lost: what it held is
		 * kept, or meant nothing to the next connection. */
		if (!atomic_load(&c->lost))
			c->send_err = rv == NNG_ECLOSED || rv == NNG_ECANCELED
			                  ? CUT_ECLOSED
			                  : rpc_nng_error(rv);
	} else {
		cut_kick(c);
	}
	/* Credit waiters learn of an error; cut_close() of an empty
	 * buffer. */
	pthread_cond_broadcast(&c->send_cv);
	pthread_mutex_unlock(&c->send_mu);
}

int
cut_queue_item_locked(struct cut *c, const Cut__V1__AppItem *item)
{
	if (atomic_load(&c->lost))
		return CUT_ECLOSED;
	if (c->send_err != 0)
		return c->send_err;
	if (appcore_queue(&c->k, item) != 0)
		return CUT_ENOMEM;
	cut_kick(c);
	return 0;
}

/* Numbers, keeps and queues the message in item (an AppSend) to peer i.
 * While the link is lost it is only kept: it goes when the link is back.
 * send_mu held. */
static int
queue_message(struct cut *c, size_t i, Cut__V1__AppItem *item)
{
	int rv;

	if (c->send_err != 0)
		return c->send_err;
	if ((rv = appcore_send(&c->k, i, item, atomic_load(&c->lost))) != 0)
		return rv;
	cut_kick(c);
	return 0;
}

int
cut_queue_item(struct cut *c, const Cut__V1__AppItem *item)
{
	int rv;

	pthread_mutex_lock(&c->send_mu);
	rv = cut_queue_item_locked(c, item);
	pthread_mutex_unlock(&c->send_mu);
	return rv;
}

void
cut_credit_grew(struct cut *c)
{
	uint64_t one = 1;

	pthread_cond_broadcast(&c->send_cv);
	if (c->want_credit) {
		c->want_credit = 0;
		/* Fails only at the counter's maximum: readable. */
		(void)!write(c->send_efd, &one, sizeof(one));
	}
}

int
cut_set_send_timeout(struct cut *c, int timeout_ms)
{
	if (c == NULL || timeout_ms < -1)
		return CUT_EINVAL;
	pthread_mutex_lock(&c->mu);
	c->send_timeout = timeout_ms;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* Waits for room for len bytes to peer i.  Returns 0, CUT_EAGAIN,
 * CUT_ETIMEDOUT or the link's error.  send_mu held. */
static int
await_room(struct cut *c, size_t i, size_t len, int timeout_ms)
{
	nng_time deadline = nng_clock() + (timeout_ms > 0 ? timeout_ms : 0);
	uint64_t v;

	while (!appcore_room(&c->k, i, len)) {
		cut_link_check(c);
		/* Credit comes back on the link, once it is back. */
		if (atomic_load(&c->lost) || c->send_err != 0)
			return c->send_err != 0 ? c->send_err : CUT_ECLOSED;
		/* A restore came: this send is from before it, and the
		 * credit it waits for comes only once the restore is taken,
		 * maybe by this very thread. */
		if (atomic_load(&c->restore_arrived))
			return CUT_EAGAIN;
		if (timeout_ms == 0) {
			while (read(c->send_efd, &v, sizeof(v)) > 0)
				;
			c->want_credit = 1;
			return CUT_EAGAIN;
		}
		if (timeout_ms > 0 && nng_clock() >= deadline)
			return CUT_ETIMEDOUT;
		cut_wait_slice(&c->send_cv, &c->send_mu, timeout_ms, deadline);
	}
	return 0;
}

int
cut_send_timed(struct cut *c, const char *to, const void *data, size_t len,
               const char *content_type, int timeout_ms)
{
	Cut__V1__AppSend send = CUT__V1__APP_SEND__INIT;
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT;
	nng_time deadline = timeout_ms > 0 ? nng_clock() + timeout_ms : 0;
	int i, rv;

	if (c == NULL || to == NULL || (data == NULL && len > 0) ||
	    !appcore_text_ok(content_type) || timeout_ms < -1)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	if ((i = appcore_peer(&c->k, to)) < 0) {
		cut_set_error(c, "\"%.64s\" is not a peer of %s", to,
		              c->k.node);
		return CUT_ENOENT;
	}
	if (len > c->k.max_message) {
		cut_set_error(c, "%zu bytes exceed the limit of %zu", len,
		              c->k.max_message);
		return CUT_E2BIG;
	}
	send.to = (char *)to;
	send.content_type = (char *)content_type;
	send.payload.data = (uint8_t *)data;
	send.payload.len = len;
	item.item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	item.send = &send;
	for (;;) {
		/* The clock is read only for a finite timeout. */
		nng_time now = timeout_ms > 0 ? nng_clock() : 0;
		int left = timeout_ms <= 0  ? timeout_ms
		           : deadline > now ? (int)(deadline - now)
		                            : 0;
		pthread_mutex_lock(&c->send_mu);
		rv = await_room(c, (size_t)i, appcore_charge(&c->k, len), left);
		if (rv == 0)
			rv = queue_message(c, (size_t)i, &item);
		pthread_mutex_unlock(&c->send_mu);
		/* No room while the link is lost: wait for it to come
		 * back, within the same timeout. */
		if (rv != CUT_ECLOSED || !atomic_load(&c->lost))
			break;
		if (left == 0 ||
		    (rv = cut_resume(c, left < 0 || left > CUT_RESUME_MS
		                            ? CUT_RESUME_MS
		                            : left)) != 0) {
			if (rv == CUT_ECLOSED || left == 0)
				rv = left == 0 ? CUT_EAGAIN : cut_lost_code(c);
			if (rv == CUT_ETIMEDOUT && left < 0)
				continue;
			break;
		}
	}
	if (rv == CUT_ETIMEDOUT)
		cut_set_error(c,
		              "no room on the channel to %.64s within %d ms: "
		              "its receiver is not taking messages",
		              to, timeout_ms);
	return rv;
}

int
cut_send_locked(struct cut *c, pthread_mutex_t *mu, const char *to,
                const void *data, size_t len, const char *content_type)
{
	nng_time deadline;
	int timeout, i, rv;

	if (c == NULL || mu == NULL || to == NULL)
		return CUT_EINVAL;
	pthread_mutex_lock(&c->mu);
	timeout = c->send_timeout;
	pthread_mutex_unlock(&c->mu);
	deadline = timeout > 0 ? nng_clock() + timeout : 0;
	for (;;) {
		nng_time now;
		int left;
		/* Within the credit there is: queued under mu. */
		rv = cut_send_timed(c, to, data, len, content_type, 0);
		if (rv != CUT_EAGAIN || atomic_load(&c->restore_arrived) ||
		    (i = appcore_peer(&c->k, to)) < 0)
			return rv;
		now = timeout > 0 ? nng_clock() : 0;
		left = timeout <= 0     ? timeout
		       : deadline > now ? (int)(deadline - now)
		                        : 0;
		if (left == 0) {
			cut_set_error(
			    c,
			    "no room on the channel to %.64s within "
			    "%d ms: its receiver is not taking messages",
			    to, timeout);
			return CUT_ETIMEDOUT;
		}
		/* No room: wait for it without the application's lock,
		 * then take the lock and try again (another thread may
		 * have used the room meanwhile). */
		pthread_mutex_unlock(mu);
		pthread_mutex_lock(&c->send_mu);
		rv = await_room(c, (size_t)i, appcore_charge(&c->k, len),
		                left < 0 || left > CUT_WAIT_SLICE_MS
		                    ? CUT_WAIT_SLICE_MS
		                    : left);
		pthread_mutex_unlock(&c->send_mu);
		if (rv == CUT_ECLOSED && atomic_load(&c->lost))
			(void)cut_resume(c, left < 0 || left > CUT_WAIT_SLICE_MS
			                        ? CUT_WAIT_SLICE_MS
			                        : left);
		pthread_mutex_lock(mu);
		if (rv != 0 && rv != CUT_ETIMEDOUT && rv != CUT_ECLOSED &&
		    rv != CUT_EAGAIN)
			return rv;
	}
}

int
cut_send(struct cut *c, const char *to, const void *data, size_t len,
         const char *content_type)
{
	int timeout;

	if (c == NULL)
		return CUT_EINVAL;
	pthread_mutex_lock(&c->mu);
	timeout = c->send_timeout;
	pthread_mutex_unlock(&c->mu);
	return cut_send_timed(c, to, data, len, content_type, timeout);
}

int
cut_try_send(struct cut *c, const char *to, const void *data, size_t len,
             const char *content_type)
{
	return cut_send_timed(c, to, data, len, content_type, 0);
}

int
cut_send_fd(struct cut *c, int *ret_fd)
{
	if (c == NULL || ret_fd == NULL)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	*ret_fd = c->send_efd;
	return 0;
}

int
cut_flush(struct cut *c, int timeout_ms)
{
	nng_time deadline = timeout_ms > 0 ? nng_clock() + timeout_ms : 0;
	uint64_t token = 0;
	uint32_t pipe = 0;
	int rv = 0;

	if (c == NULL || timeout_ms < -1)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	for (;;) {
		nng_time now = timeout_ms > 0 ? nng_clock() : 0;
		int left = timeout_ms <= 0  ? timeout_ms
		           : deadline > now ? (int)(deadline - now)
		                            : 0;
		if (atomic_load(&c->lost)) {
			/* The messages the sync stood for go again after
			 * the resume; a new sync follows them. */
			if (left == 0)
				return CUT_ETIMEDOUT;
			rv = cut_resume(c, left < 0 || left > CUT_RESUME_MS
			                       ? CUT_RESUME_MS
			                       : left);
			if (rv == CUT_ECLOSED)
				rv = cut_lost_code(c);
			if (rv == CUT_ETIMEDOUT && left < 0)
				continue;
			if (rv != 0)
				return rv;
		}
		pthread_mutex_lock(&c->send_mu);
		if (token == 0 || pipe != atomic_load(&c->live)) {
			if ((rv = c->send_err) == 0 &&
			    (rv = appcore_sync(&c->k, &token)) == 0) {
				pipe = atomic_load(&c->live);
				cut_kick(c);
			}
		}
		while (rv == 0 && !appcore_is_synced(&c->k, token) &&
		       !atomic_load(&c->lost) && c->send_err == 0 &&
		       pipe == atomic_load(&c->live)) {
			if (timeout_ms == 0 ||
			    (timeout_ms > 0 && nng_clock() >= deadline)) {
				rv = CUT_ETIMEDOUT;
				break;
			}
			cut_wait_slice(&c->send_cv, &c->send_mu, timeout_ms,
			               deadline);
			cut_link_check(c);
		}
		if (rv == 0 && c->send_err != 0)
			rv = c->send_err;
		if (rv == 0 && appcore_is_synced(&c->k, token)) {
			pthread_mutex_unlock(&c->send_mu);
			return 0;
		}
		pthread_mutex_unlock(&c->send_mu);
		if (rv != 0) {
			if (rv == CUT_ETIMEDOUT)
				cut_set_error(c,
				              "the daemon did not confirm "
				              "within %d ms that it holds "
				              "what was sent",
				              timeout_ms);
			return rv;
		}
	}
}

void
cut_linger(struct cut *c)
{
	nng_time deadline = nng_clock() + CUT_LINGER_MS;

	pthread_mutex_lock(&c->send_mu);
	while ((c->k.out_len > 0 || c->sending) && c->send_err == 0 &&
	       !atomic_load(&c->lost) && nng_clock() < deadline)
		cut_wait_slice(&c->send_cv, &c->send_mu, CUT_LINGER_MS,
		               deadline);
	pthread_mutex_unlock(&c->send_mu);
}
