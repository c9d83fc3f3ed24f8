/*
 * recv.c - the down stream: deliveries, state requests and errors from the
 * daemon, processed strictly in order on the application's thread.
 *
 * Frames from the daemon are decoded into AppBatch messages and queued;
 * items are taken off the queue one by one.  A delivery is returned to the
 * application; a state request is answered on the spot by calling the
 * state callback, so the callback runs after every earlier delivery was
 * returned and before any later one is: the cut of DESIGN.md.  The reply
 * leaves on the up stream when the callback calls cut_buf_set(), while the
 * application still holds the lock that orders its sends, so the reply
 * sits exactly between the sends its state covers and the ones it does
 * not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "cut_int.h"

/* How long one wait on the socket lasts before checking for a lost link. */
#define RECV_SLICE_MS 200

/* How many frames one cut_dispatch() reads at most, so that a daemon
 * that never stops sending cannot keep it forever. */
#define DISPATCH_MAX_FRAMES 256

struct cut_msg {
	char *from;
	char *content_type;
	uint8_t *data;
	size_t len;
	uint64_t seq;
};

struct cut_buf {
	struct cut *c;
	const char *snapshot_id;
	int used;
};

/* What taking one item off the queue gave. */
struct item {
	enum { ITEM_DELIVER, ITEM_STATE, ITEM_ERROR, ITEM_BAD } kind;
	struct cut_msg *msg;          /* ITEM_DELIVER */
	char id[CUT_SNAPSHOT_ID_MAX]; /* ITEM_STATE */
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
	return m;
}

/* 1 if s is a snapshot id: 1 to CUT_SNAPSHOT_ID_MAX - 1 printable bytes. */
static int
id_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < CUT_SNAPSHOT_ID_MAX && cut_content_type_ok(s);
}

/* The one switch over items from the daemon: checks it and says what to do
 * with it in *ret.  Returns 0 or CUT_ENOMEM. */
static int
judge(struct cut *c, const Cut__V1__AppItem *it, struct item *ret)
{
	const ProtobufCEnumValue *v;

	ret->kind = ITEM_BAD;
	switch (it->item_case) {
	case CUT__V1__APP_ITEM__ITEM_DELIVER:
		if (it->deliver->from[0] == '\0' ||
		    !cut_content_type_ok(it->deliver->from) ||
		    !cut_content_type_ok(it->deliver->content_type))
			break;
		if ((ret->msg = new_msg(it->deliver)) == NULL)
			return CUT_ENOMEM;
		ret->kind = ITEM_DELIVER;
		return 0;
	case CUT__V1__APP_ITEM__ITEM_STATE_REQUEST:
		if (!id_ok(it->state_request->snapshot_id))
			break;
		strcpy(ret->id, it->state_request->snapshot_id);
		ret->kind = ITEM_STATE;
		return 0;
	case CUT__V1__APP_ITEM__ITEM_ERROR:
		v = protobuf_c_enum_descriptor_get_value(
		    &cut__v1__app_error__code__descriptor,
		    (int)it->error->code);
		cut_set_error(c, "the daemon refused an item (%s): %s",
		              v != NULL ? v->name : "?", it->error->message);
		ret->kind = ITEM_ERROR;
		return 0;
	default:
		break;
	}
	cut_set_error(c, "the daemon sent a bad item (kind %d)",
	              (int)it->item_case);
	return 0;
}

/* Takes the next queued item into *ret.  Returns 0, CUT_ETIMEDOUT when
 * the queue is empty, or CUT_ENOMEM. */
static int
take_item(struct cut *c, struct item *ret)
{
	struct batch *q = c->head;
	int rv;

	if (q == NULL)
		return CUT_ETIMEDOUT;
	rv = judge(c, q->b->items[q->next++], ret);
	if (q->next == q->b->n_items) {
		c->head = q->link;
		if (c->head == NULL)
			c->tail = NULL;
		protobuf_c_message_free_unpacked(&q->b->base, NULL);
		free(q);
	}
	return rv;
}

/* Decodes frame msg (consumed) and queues its items. */
static int
queue_frame(struct cut *c, nng_msg *msg)
{
	Cut__V1__AppBatch *b;

	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg));
	if (b == NULL) {
		cut_set_error(c,
		              "the daemon sent a frame that does not decode "
		              "(%zu bytes)",
		              nng_msg_len(msg));
		nng_msg_free(msg);
		return CUT_EPROTO;
	}
	nng_msg_free(msg);
	return cut_queue_push(c, b, 0);
}

/*
 * Reads one frame from the socket and queues it.  timeout_ms 0: only if
 * one is there; -1: wait as long as it takes; otherwise until deadline (an
 * nng_clock() time).  Returns 0, CUT_ETIMEDOUT, CUT_ECLOSED (nothing left
 * and the link is lost), CUT_EPROTO (the frame did not decode and was
 * dropped), CUT_ENOMEM or CUT_EIO.
 */
static int
read_frame(struct cut *c, int timeout_ms, nng_time deadline)
{
	nng_msg *msg;
	nng_time now;
	int rv;

	for (;;) {
		if (timeout_ms == 0) {
			rv = nng_recvmsg(c->app, &msg, NNG_FLAG_NONBLOCK);
		} else {
			now = nng_clock();
			if (timeout_ms > 0 && now >= deadline)
				return CUT_ETIMEDOUT;
			nng_socket_set_ms(c->app, NNG_OPT_RECVTIMEO,
			                  timeout_ms < 0 ||
			                          deadline - now > RECV_SLICE_MS
			                      ? RECV_SLICE_MS
			                      : (nng_duration)(deadline - now));
			rv = nng_recvmsg(c->app, &msg, 0);
		}
		if (rv == 0)
			return queue_frame(c, msg);
		if (rv != NNG_ETIMEDOUT && rv != NNG_EAGAIN)
			return rpc_nng_error(rv);
		if (atomic_load(&c->lost))
			return CUT_ECLOSED;
		if (timeout_ms == 0)
			return CUT_ETIMEDOUT;
	}
}

/* Sends AppStateReply for id. */
static int
send_reply(struct cut *c, const char *id, const void *data, size_t len,
           const char *content_type)
{
	Cut__V1__AppStateReply reply = CUT__V1__APP_STATE_REPLY__INIT;
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT;

	reply.snapshot_id = (char *)id;
	reply.content_type = (char *)content_type;
	reply.state.data = (uint8_t *)data;
	reply.state.len = len;
	item.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	item.state_reply = &reply;
	return cut_send_item(c, &item);
}

int
cut_buf_set(struct cut_buf *b, const void *data, size_t len,
            const char *content_type)
{
	if (b == NULL || b->used || (data == NULL && len > 0) ||
	    !cut_content_type_ok(content_type))
		return CUT_EINVAL;
	b->used = 1;
	if (len > b->c->max_message) {
		cut_set_error(b->c,
		              "state of %zu bytes exceeds the limit of %zu",
		              len, b->c->max_message);
		return CUT_E2BIG;
	}
	return send_reply(b->c, b->snapshot_id, data, len, content_type);
}

/* Answers the state request for id through the state callback. */
static int
answer(struct cut *c, const char *id)
{
	struct cut_buf b = {c, id, 0};
	cut_state_fn fn;
	void *arg;
	int rv;

	pthread_mutex_lock(&c->mu);
	fn = c->state_fn;
	arg = c->state_arg;
	pthread_mutex_unlock(&c->mu);
	if (fn == NULL)
		return send_reply(c, id, NULL, 0, CUT_CONTENT_TYPE_EMPTY);
	rv = fn(arg, id, &b);
	/* A failed cut_buf_set() was the callback's to handle: the
	 * snapshot goes unanswered rather than recording a wrong state. */
	if (b.used || rv != 0)
		return 0;
	return send_reply(c, id, NULL, 0, CUT_CONTENT_TYPE_EMPTY);
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
 * the queue runs dry, reads frames within the time allowed (see
 * read_frame()), or returns CUT_ETIMEDOUT at once if !may_read.  Called
 * with recv_mu.
 */
static int
next_message(struct cut *c, int may_read, int timeout_ms, nng_time deadline,
             struct cut_msg **ret_msg)
{
	struct item it;
	int rv;

	for (;;) {
		rv = take_item(c, &it);
		if (rv == CUT_ETIMEDOUT && may_read) {
			if ((rv = read_frame(c, timeout_ms, deadline)) != 0)
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
		case ITEM_ERROR:
			return CUT_EREFUSED;
		case ITEM_BAD:
			return CUT_EPROTO;
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
	rv = next_message(c, 1, timeout_ms < 0 ? -1 : timeout_ms, deadline, &m);
	pthread_mutex_unlock(&c->recv_mu);
	if (rv == 0)
		*ret = m;
	return rv;
}

int
cut_dispatch(struct cut *c, cut_msg_fn fn, void *arg)
{
	struct cut_msg *m = NULL;
	int frames = 0, soft = 0, rv;

	if (c == NULL || fn == NULL)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	if ((rv = lock_recv(c)) != 0)
		return rv;
	for (;;) {
		rv = next_message(c, 0, 0, 0, &m);
		if (rv == CUT_ETIMEDOUT) {
			/* The queue is empty: read what the socket has. */
			if (frames++ == DISPATCH_MAX_FRAMES) {
				rv = 0;
				break;
			}
			rv = read_frame(c, 0, 0);
			if (rv == CUT_ETIMEDOUT) {
				rv = 0;
				break;
			}
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
	pthread_mutex_unlock(&c->recv_mu);
	return rv != 0 ? rv : soft;
}

int
cut_fd(struct cut *c, int *ret_fd)
{
	int fd, rv;

	if (c == NULL || ret_fd == NULL)
		return CUT_EINVAL;
	if (!c->has_app)
		return CUT_ENOTSUP;
	if ((rv = nng_socket_get_int(c->app, NNG_OPT_RECVFD, &fd)) != 0)
		return rpc_nng_error(rv);
	*ret_fd = fd;
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
