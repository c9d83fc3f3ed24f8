/*
 * app.c - the application link: one pair1 socket on IPC to libcut.
 *
 * The down stream (deliveries and state requests) is a queue of packed
 * AppItems in this daemon, sent in batches once the application has said
 * hello; its order is the cut boundary of DESIGN.md, so nothing is ever
 * sent out of turn.  The up stream (sends and state replies) is handled in
 * the order it arrives.
 */
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "cutd.h"
#include "cutproto.h"
#include "log.h"

#define RECV_PER_TURN 256

/* Runs on an nng thread: only atomics. */
static void
pipe_event(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct cutd *d = arg;
	unsigned id = nng_pipe_id(pipe);

	if (ev == NNG_PIPE_EV_ADD_POST) {
		atomic_fetch_add(&d->app_pipes, 1);
		atomic_store(&d->app_live, id);
	} else if (ev == NNG_PIPE_EV_REM_POST) {
		atomic_fetch_sub(&d->app_pipes, 1);
		atomic_compare_exchange_strong(&d->app_live, &id, 0);
	}
}

int
app_start(struct cutd *d)
{
	const char *url = d->cfg->nodes[d->self].app;
	int rv;

	if ((rv = nng_pair1_open(&d->app)) != 0)
		return rv;
	nng_socket_set_size(d->app, NNG_OPT_RECVMAXSZ,
	                    d->cfg->max_message + 64 * 1024);
	nng_socket_set_int(d->app, NNG_OPT_SENDBUF, 64);
	nng_pipe_notify(d->app, NNG_PIPE_EV_ADD_POST, pipe_event, d);
	nng_pipe_notify(d->app, NNG_PIPE_EV_REM_POST, pipe_event, d);
	if ((rv = nng_listen(d->app, url, NULL, 0)) != 0)
		log_err("cannot listen on %s: %s", url, nng_strerror(rv));
	return rv;
}

/* Appends a packed item to the down stream. */
static int
down(struct cutd *d, const Cut__V1__AppItem *it)
{
	size_t len = cut__v1__app_item__get_packed_size(it);
	void *buf;

	if (d->ndown == d->capdown) {
		size_t cap = d->capdown ? d->capdown * 2 : 256;
		void **v = realloc(d->down, cap * sizeof(*v));
		size_t *l;
		if (v == NULL)
			return LINK_ENOMEM;
		d->down = v;
		if ((l = realloc(d->down_len, cap * sizeof(*l))) == NULL)
			return LINK_ENOMEM;
		d->down_len = l;
		d->capdown = cap;
	}
	if ((buf = malloc(len ? len : 1)) == NULL)
		return LINK_ENOMEM;
	cut__v1__app_item__pack(it, buf);
	d->down[d->ndown] = buf;
	d->down_len[d->ndown] = len;
	d->ndown++;
	return 0;
}

int
app_deliver(struct cutd *d, size_t from, const char *content_type,
            const void *payload, size_t len, uint64_t seq)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppDeliver dl = CUT__V1__APP_DELIVER__INIT;

	dl.from = d->cfg->nodes[from].name;
	dl.content_type = (char *)content_type;
	dl.payload.data = (uint8_t *)payload;
	dl.payload.len = len;
	dl.has_seq = 1;
	dl.seq = seq;
	it.item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
	it.deliver = &dl;
	return down(d, &it);
}

int
app_request_state(struct cutd *d, const char *id)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppStateRequest rq = CUT__V1__APP_STATE_REQUEST__INIT;

	rq.snapshot_id = (char *)id;
	it.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REQUEST;
	it.state_request = &rq;
	return down(d, &it);
}

/* Sends one item to the application at once, outside the down stream. */
static void
send_now(struct cutd *d, const Cut__V1__AppItem *it)
{
	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppItem *items[1] = {(Cut__V1__AppItem *)it};
	size_t len;
	nng_msg *msg;

	b.items = items;
	b.n_items = 1;
	len = cut__v1__app_batch__get_packed_size(&b);
	if (nng_msg_alloc(&msg, len) != 0)
		return;
	cut__v1__app_batch__pack(&b, nng_msg_body(msg));
	if (nng_sendmsg(d->app, msg, NNG_FLAG_NONBLOCK) != 0)
		nng_msg_free(msg);
}

static void
app_error(struct cutd *d, uint32_t code, const char *text)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppError e = CUT__V1__APP_ERROR__INIT;

	e.code = code;
	e.message = (char *)text;
	it.item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
	it.error = &e;
	send_now(d, &it);
}

static void
bad(struct cutd *d, uint32_t code, const char *what)
{
	d->bad_app++;
	log_warnx("bad application frame: %s; dropped", what);
	app_error(d, code, what);
}

static void
hello(struct cutd *d, uint32_t pipe, const Cut__V1__AppHello *h)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppHelloReply r = CUT__V1__APP_HELLO_REPLY__INIT;
	char *peers[CONFIG_MAX_NODES];
	size_t n = 0;

	if (h->version != CUTPROTO_APP_VERSION) {
		bad(d, CUT__V1__APP_ERROR__CODE__VERSION,
		    "unsupported application protocol version");
		return;
	}
	if (h->node[0] != '\0' && strcmp(h->node, d->name) != 0) {
		bad(d, CUT__V1__APP_ERROR__CODE__WRONG_NODE,
		    "this daemon serves another node");
		return;
	}
	for (size_t i = 0; i < d->n_out; i++)
		peers[n++] = d->cfg->nodes[d->out_node[i]].name;
	r.node = (char *)d->name;
	r.version = CUTPROTO_APP_VERSION;
	r.cluster = d->cfg->cluster;
	r.peers = peers;
	r.n_peers = n;
	r.max_message_size = (uint32_t)d->cfg->max_message;
	it.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	it.hello_reply = &r;
	send_now(d, &it);
	d->app_hello = pipe;
	log_info("application connected");
}

static void
app_send(struct cutd *d, const Cut__V1__AppSend *s)
{
	int rv;

	if (s->payload.len > d->cfg->max_message) {
		bad(d, CUT__V1__APP_ERROR__CODE__TOO_LARGE,
		    "message larger than max_message");
		return;
	}
	if (cutd_ctype(s->content_type) == NULL) {
		bad(d, CUT__V1__APP_ERROR__CODE__BAD_ITEM, "bad content type");
		return;
	}
	rv = node_app_send(d, s->to, cutd_ctype(s->content_type),
	                   s->payload.data, s->payload.len);
	if (rv == ENGINE_ENOCHAN)
		bad(d, CUT__V1__APP_ERROR__CODE__UNKNOWN_NODE,
		    "no channel to that node");
	else if (rv == LINK_EFULL)
		app_error(d, CUT__V1__APP_ERROR__CODE__BACKPRESSURE,
		          "too many messages unacknowledged on that channel; "
		          "message not sent");
	else if (rv != 0)
		app_error(d, CUT__V1__APP_ERROR__CODE__BACKPRESSURE,
		          "out of memory; message not sent");
}

/* Handles one item that arrived on connection pipe.  Only the connection
 * that said hello may send anything else. */
static void
item(struct cutd *d, uint32_t pipe, const Cut__V1__AppItem *it)
{
	if (it->item_case == CUT__V1__APP_ITEM__ITEM_HELLO) {
		hello(d, pipe, it->hello);
		return;
	}
	if (pipe == 0 || pipe != d->app_hello) {
		bad(d, CUT__V1__APP_ERROR__CODE__NO_HELLO, "item before hello");
		return;
	}
	switch (it->item_case) {
	case CUT__V1__APP_ITEM__ITEM_SEND:
		app_send(d, it->send);
		break;
	case CUT__V1__APP_ITEM__ITEM_STATE_REPLY:
		if (it->state_reply->state.len > d->cfg->max_message)
			bad(d, CUT__V1__APP_ERROR__CODE__TOO_LARGE,
			    "state larger than max_message");
		else if (cutd_ctype(it->state_reply->content_type) == NULL)
			bad(d, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "bad content type");
		else if (node_state_reply(
		             d, it->state_reply->snapshot_id,
		             cutd_ctype(it->state_reply->content_type),
		             it->state_reply->state.data,
		             it->state_reply->state.len) != 0)
			app_error(d, CUT__V1__APP_ERROR__CODE__UNKNOWN_SNAPSHOT,
			          "no state request pending for that snapshot");
		break;
	default:
		bad(d, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "item an application does not send");
	}
}

void
app_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		Cut__V1__AppBatch *b;
		nng_msg *msg;
		uint32_t pipe;

		if (nng_recvmsg(d->app, &msg, NNG_FLAG_NONBLOCK) != 0)
			return;
		pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(msg));
		b = (Cut__V1__AppBatch *)cutproto_unpack(
		    &cut__v1__app_batch__descriptor, nng_msg_len(msg),
		    nng_msg_body(msg));
		nng_msg_free(msg);
		if (b == NULL) {
			bad(d, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "batch does not decode");
			continue;
		}
		for (size_t k = 0; k < b->n_items; k++)
			item(d, pipe, b->items[k]);
		cut__v1__app_batch__free_unpacked(b, NULL);
	}
}

void
app_flush(struct cutd *d)
{
	size_t sent = 0;

	/* Only to the connection that said hello, while it lasts; a new
	 * application gets nothing before its own hello. */
	if (d->app_hello == 0 || atomic_load(&d->app_live) != d->app_hello)
		return;
	while (sent < d->ndown) {
		size_t k = sent, bytes = 0;
		nng_msg *msg;

		if (nng_msg_alloc(&msg, 0) != 0)
			break;
		while (k < d->ndown && (bytes == 0 || bytes < BATCH_BYTES)) {
			if (cutd_append_field(msg, 1, d->down[k],
			                      d->down_len[k]) != 0)
				break;
			bytes += d->down_len[k++];
		}
		if (nng_sendmsg(d->app, msg, NNG_FLAG_NONBLOCK) != 0) {
			nng_msg_free(msg);
			break;
		}
		for (; sent < k; sent++)
			free(d->down[sent]);
	}
	if (sent > 0) {
		memmove(d->down, d->down + sent,
		        (d->ndown - sent) * sizeof(*d->down));
		memmove(d->down_len, d->down_len + sent,
		        (d->ndown - sent) * sizeof(*d->down_len));
		d->ndown -= sent;
	}
}
