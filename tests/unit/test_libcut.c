/*
 * test_libcut.c - libcut against a fake daemon in the test process: an
 * nng pair1 listener for the application link and a rep0 listener for the
 * control API, on IPC in a temporary directory.  The hello handshake, the
 * checks cut_send makes before sending, the order of the down stream
 * around the state callback (the cut), the control calls with their status
 * mapping, resend and timeout, and bad frames from the daemon.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>

#include "cut/cut.h"
#include "cutproto.h"

#define MAX_MSG 100

/* The fake daemon. */
static char dir[64], app_url[128], ctl_url[128];
static nng_socket app, ctl;
static char hello_node[64];   /* what the AppHello said */
static uint32_t refuse_hello; /* answer the hello with this AppError */
static int ignore_hello;      /* do not answer the hello at all */
static int stale_first;       /* send an old application's items first */
static pthread_t ctl_thread;
static volatile int ctl_stop, ctl_running;

/* The control script: how the fake answers each call. */
enum { REPLY, DROP, GARBAGE };
typedef int (*ctl_fn)(const Cut__V1__RpcRequest *req, int n, int32_t *status,
                      ProtobufCMessage **body);
static ctl_fn ctl_handler;
static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t req_ids[16];
static char req_methods[16][64];
static int nreqs;

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_libcut.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(app_url, sizeof(app_url), "ipc://%s/p0.app", dir);
	snprintf(ctl_url, sizeof(ctl_url), "ipc://%s/p0.ctl", dir);
	cr_assert_eq(nng_pair1_open(&app), 0);
	cr_assert_eq(nng_listen(app, app_url, NULL, 0), 0);
	nng_socket_set_ms(app, NNG_OPT_RECVTIMEO, 3000);
	cr_assert_eq(nng_rep0_open(&ctl), 0);
	cr_assert_eq(nng_listen(ctl, ctl_url, NULL, 0), 0);
	nng_socket_set_ms(ctl, NNG_OPT_RECVTIMEO, 50);
}

static void
teardown(void)
{
	char name[160];

	if (ctl_running) {
		ctl_stop = 1;
		pthread_join(ctl_thread, NULL);
	}
	nng_close(app);
	nng_close(ctl);
	snprintf(name, sizeof(name), "%s/p0.app", dir);
	unlink(name);
	snprintf(name, sizeof(name), "%s/p0.ctl", dir);
	unlink(name);
	rmdir(dir);
}

TestSuite(libcut, .init = setup, .fini = teardown, .timeout = 30);

/* Packs m into a new nng message. */
static nng_msg *
pack(const ProtobufCMessage *m)
{
	nng_msg *msg;
	size_t len = protobuf_c_message_get_packed_size(m);

	cr_assert_eq(nng_msg_alloc(&msg, len), 0);
	protobuf_c_message_pack(m, nng_msg_body(msg));
	return msg;
}

/* One item of the down stream, for fake_send(). */
struct down {
	enum { DELIVER, STATE, ERROR, NOTSET } kind;
	const char *a; /* DELIVER: from; STATE: snapshot id */
	const char *b; /* DELIVER: payload; ERROR: message */
};

/* Sends the items as one AppBatch. */
static void
fake_send(const struct down *d, size_t n)
{
	Cut__V1__AppBatch batch = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppItem items[8], *itemp[8];
	Cut__V1__AppDeliver dl[8];
	Cut__V1__AppStateRequest sr[8];
	Cut__V1__AppError er[8];
	size_t i;

	cr_assert_leq(n, 8);
	for (i = 0; i < n; i++) {
		cut__v1__app_item__init(&items[i]);
		itemp[i] = &items[i];
		switch (d[i].kind) {
		case DELIVER:
			cut__v1__app_deliver__init(&dl[i]);
			dl[i].from = (char *)d[i].a;
			dl[i].content_type = "text/plain";
			dl[i].payload.data = (uint8_t *)d[i].b;
			dl[i].payload.len = strlen(d[i].b);
			dl[i].has_seq = 1;
			dl[i].seq = i + 1;
			items[i].item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
			items[i].deliver = &dl[i];
			break;
		case STATE:
			cut__v1__app_state_request__init(&sr[i]);
			sr[i].snapshot_id = (char *)d[i].a;
			items[i].item_case =
			    CUT__V1__APP_ITEM__ITEM_STATE_REQUEST;
			items[i].state_request = &sr[i];
			break;
		case ERROR:
			cut__v1__app_error__init(&er[i]);
			er[i].code = CUT__V1__APP_ERROR__CODE__UNKNOWN_NODE;
			er[i].message = (char *)d[i].b;
			items[i].item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
			items[i].error = &er[i];
			break;
		case NOTSET:
			break;
		}
	}
	batch.n_items = n;
	batch.items = itemp;
	cr_assert_eq(nng_sendmsg(app, pack(&batch.base), 0), 0);
}

static void
fake_send_raw(const void *data, size_t len)
{
	cr_assert_eq(nng_send(app, (void *)data, len, 0), 0);
}

/* The next up-stream batch, or NULL if none comes within timeout_ms. */
static Cut__V1__AppBatch *
fake_recv(int timeout_ms)
{
	Cut__V1__AppBatch *b;
	nng_msg *msg;

	nng_socket_set_ms(app, NNG_OPT_RECVTIMEO, timeout_ms);
	if (nng_recvmsg(app, &msg, 0) != 0)
		return NULL;
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg));
	nng_msg_free(msg);
	cr_assert_not_null(b, "libcut sent a frame that does not decode");
	cr_assert_eq(b->n_items, 1);
	return b;
}

/* The next up-stream item must be of this kind; returns its batch. */
static Cut__V1__AppBatch *
expect_up(Cut__V1__AppItem__ItemCase kind)
{
	Cut__V1__AppBatch *b = fake_recv(2000);

	cr_assert_not_null(b, "nothing arrived at the fake daemon");
	cr_assert_eq(b->items[0]->item_case, kind);
	return b;
}

static void
free_batch(Cut__V1__AppBatch *b)
{
	protobuf_c_message_free_unpacked(&b->base, NULL);
}

/* Answers the hello: p0 in cluster "bank" with peers p1 and p2. */
static void *
hello_main(void *arg)
{
	Cut__V1__AppHelloReply r = CUT__V1__APP_HELLO_REPLY__INIT;
	Cut__V1__AppError e = CUT__V1__APP_ERROR__INIT;
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT, *itemp = &item;
	Cut__V1__AppBatch batch = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppBatch *in;
	char *peers[] = {"p1", "p2"};

	(void)arg;
	if ((in = fake_recv(6000)) == NULL)
		return NULL;
	if (in->items[0]->item_case == CUT__V1__APP_ITEM__ITEM_HELLO)
		snprintf(hello_node, sizeof(hello_node), "%s/%u",
		         in->items[0]->hello->node,
		         in->items[0]->hello->version);
	free_batch(in);
	if (ignore_hello)
		return NULL;
	if (stale_first) {
		struct down d[] = {{DELIVER, "p1", "old"},
		                   {STATE, "p0-0", NULL}};

		fake_send(d, 2);
	}
	r.node = "p0";
	r.version = 1;
	r.cluster = "bank";
	r.n_peers = 2;
	r.peers = peers;
	r.max_message_size = MAX_MSG;
	item.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	item.hello_reply = &r;
	if (refuse_hello != 0) {
		e.code = refuse_hello;
		e.message = "no";
		item.item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
		item.error = &e;
	}
	batch.n_items = 1;
	batch.items = &itemp;
	nng_sendmsg(app, pack(&batch.base), 0);
	return NULL;
}

/* cut_open() against the fake, which answers the hello; returns the
 * result of cut_open. */
static int
try_open(const char *node, struct cut **ret)
{
	pthread_t t;
	int rv;

	cr_assert_eq(pthread_create(&t, NULL, hello_main, NULL), 0);
	rv = cut_open(app_url, ctl_url, node, ret);
	pthread_join(t, NULL);
	return rv;
}

static struct cut *
open_fake(void)
{
	struct cut *c = NULL;
	int rv = try_open("p0", &c);

	cr_assert_eq(rv, 0, "cut_open: %s", cut_strerror(rv));
	return c;
}

Test(libcut, hello)
{
	struct cut *c = open_fake();

	cr_assert_str_eq(hello_node, "p0/1");
	cr_assert_str_eq(cut_node(c), "p0");
	cr_assert_str_eq(cut_cluster(c), "bank");
	cr_assert_eq(cut_npeers(c), 2);
	cr_assert_str_eq(cut_peer(c, 0), "p1");
	cr_assert_str_eq(cut_peer(c, 1), "p2");
	cr_assert_null(cut_peer(c, 2));
	cr_assert_eq(cut_max_message_size(c), MAX_MSG);
	cut_close(c);
	cut_close(NULL);
}

static void expect_msg(struct cut *c, const char *from, const char *payload);

/* Items the daemon had queued for an application before us are not ours:
 * libcut skips what comes before its hello reply. */
Test(libcut, hello_skips_stale_frames)
{
	struct down d[] = {{DELIVER, "p2", "new"}};
	struct cut *c;

	stale_first = 1;
	c = open_fake();
	fake_send(d, 1);
	expect_msg(c, "p2", "new");
	cr_assert_null(fake_recv(100), "a stale state request was answered");
	cut_close(c);
}

/* One refusal per test: the fake daemon's pair1 socket takes one
 * connection, and a second open right after a refused one would race with
 * the first connection's teardown. */
Test(libcut, hello_refused_wrong_node)
{
	struct cut *c = (struct cut *)&c;

	refuse_hello = CUT__V1__APP_ERROR__CODE__WRONG_NODE;
	cr_assert_eq(try_open("p7", &c), CUT_ENOENT);
	cr_assert_eq(c, (struct cut *)&c, "ret written on failure");
}

Test(libcut, hello_refused_version)
{
	struct cut *c = (struct cut *)&c;

	refuse_hello = CUT__V1__APP_ERROR__CODE__VERSION;
	cr_assert_eq(try_open(NULL, &c), CUT_ENOTSUP);
	cr_assert_eq(c, (struct cut *)&c, "ret written on failure");
}

Test(libcut, hello_unanswered)
{
	struct cut *c = (struct cut *)&c;

	ignore_hello = 1;
	cr_assert_eq(try_open(NULL, &c), CUT_ETIMEDOUT);
	cr_assert_eq(c, (struct cut *)&c);
}

Test(libcut, no_daemon_is_unavailable)
{
	struct cut *c = NULL;
	char url[160];

	snprintf(url, sizeof(url), "ipc://%s/nobody.app", dir);
	cr_assert_eq(cut_open(url, NULL, NULL, &c), CUT_EUNAVAIL);
	cr_assert_eq(cut_open(NULL, NULL, NULL, &c), CUT_EINVAL);
	cr_assert_eq(cut_open("nope://x", NULL, NULL, &c), CUT_EINVAL);
	cr_assert_null(c);
}

Test(libcut, send_checks_before_sending)
{
	struct cut *c = open_fake();
	char big[MAX_MSG + 1];
	char err[128];
	Cut__V1__AppBatch *b;

	memset(big, 'x', sizeof(big));
	cr_assert_eq(cut_send(c, "p9", "hi", 2, NULL), CUT_ENOENT);
	cr_assert_gt(cut_last_error(c, err, sizeof(err)), 0);
	cr_assert_not_null(strstr(err, "p9"));
	cr_assert_eq(cut_send(c, "p1", big, MAX_MSG + 1, NULL), CUT_E2BIG);
	cr_assert_eq(cut_send(c, "p1", "hi", 2, "bad\ntype"), CUT_EINVAL);
	cr_assert_eq(cut_send(c, NULL, "hi", 2, NULL), CUT_EINVAL);
	cr_assert_null(fake_recv(200), "a refused send reached the daemon");

	cr_assert_eq(cut_send(c, "p2", big, MAX_MSG, "application/json"), 0);
	b = expect_up(CUT__V1__APP_ITEM__ITEM_SEND);
	cr_assert_str_eq(b->items[0]->send->to, "p2");
	cr_assert_str_eq(b->items[0]->send->content_type, "application/json");
	cr_assert_eq(b->items[0]->send->payload.len, MAX_MSG);
	free_batch(b);
	cut_close(c);
}

/* The state callback of the cut tests: records when it ran. */
static int returned; /* messages cut_recv returned so far */
static int calls, at_call = -1;
static char seen_id[64];
static int decline;

static int
state_cb(void *arg, const char *id, struct cut_buf *ret)
{
	struct cut *c = arg;
	char state[32];

	calls++;
	at_call = returned;
	snprintf(seen_id, sizeof(seen_id), "%s", id);
	if (decline)
		return 1;
	/* A send made inside the callback precedes the reply. */
	cr_assert_eq(cut_send(c, "p1", "in-cb", 5, NULL), 0);
	snprintf(state, sizeof(state), "{\"returned\": %d}", returned);
	cr_assert_eq(cut_buf_set(ret, state, strlen(state), "application/json"),
	             0);
	cr_assert_eq(cut_buf_set(ret, "x", 1, NULL), CUT_EINVAL);
	return 0;
}

static void
expect_msg(struct cut *c, const char *from, const char *payload)
{
	struct cut_msg *m = NULL;
	int rv = cut_recv(c, 2000, &m);

	cr_assert_eq(rv, 0, "cut_recv: %s", cut_strerror(rv));
	returned++;
	cr_assert_str_eq(cut_msg_from(m), from);
	cr_assert_eq(cut_msg_len(m), strlen(payload));
	cr_assert_str_eq(cut_msg_data(m), payload);
	cr_assert_str_eq(cut_msg_content_type(m), "text/plain");
	cut_msg_free(m);
}

/* Deliver A, StateRequest s1, Deliver B: the callback runs after A is
 * returned and before B is, and its reply follows the sends before it. */
static void
check_cut(int one_batch)
{
	struct down d[] = {
	    {DELIVER, "p1", "A"}, {STATE, "p0-1", NULL}, {DELIVER, "p2", "B"}};
	struct cut *c = open_fake();
	Cut__V1__AppBatch *b;

	cr_assert_eq(cut_set_state_callback(c, state_cb, c), 0);
	if (one_batch) {
		fake_send(d, 3);
	} else {
		fake_send(&d[0], 1);
		fake_send(&d[1], 1);
		fake_send(&d[2], 1);
	}
	expect_msg(c, "p1", "A");
	cr_assert_eq(calls, 0, "the callback ran before its turn");
	cr_assert_eq(cut_send(c, "p2", "before", 6, NULL), 0);
	expect_msg(c, "p2", "B");
	cr_assert_eq(calls, 1);
	cr_assert_eq(at_call, 1, "the callback saw %d messages", at_call);
	cr_assert_str_eq(seen_id, "p0-1");

	b = expect_up(CUT__V1__APP_ITEM__ITEM_SEND);
	cr_assert_eq(b->items[0]->send->payload.len, 6);
	cr_assert_eq(memcmp(b->items[0]->send->payload.data, "before", 6), 0);
	free_batch(b);
	b = expect_up(CUT__V1__APP_ITEM__ITEM_SEND);
	cr_assert_eq(b->items[0]->send->payload.len, 5);
	free_batch(b);
	b = expect_up(CUT__V1__APP_ITEM__ITEM_STATE_REPLY);
	cr_assert_str_eq(b->items[0]->state_reply->snapshot_id, "p0-1");
	cr_assert_str_eq(b->items[0]->state_reply->content_type,
	                 "application/json");
	cr_assert_eq(memcmp(b->items[0]->state_reply->state.data,
	                    "{\"returned\": 1}", 15),
	             0);
	free_batch(b);
	cut_close(c);
}

Test(libcut, cut_in_one_batch)
{
	check_cut(1);
}

Test(libcut, cut_across_batches)
{
	check_cut(0);
}

Test(libcut, no_callback_answers_empty)
{
	struct down d[] = {{STATE, "p0-2", NULL}, {DELIVER, "p1", "A"}};
	struct cut *c = open_fake();
	Cut__V1__AppBatch *b;

	fake_send(d, 2);
	expect_msg(c, "p1", "A");
	b = expect_up(CUT__V1__APP_ITEM__ITEM_STATE_REPLY);
	cr_assert_str_eq(b->items[0]->state_reply->snapshot_id, "p0-2");
	cr_assert_str_eq(b->items[0]->state_reply->content_type,
	                 CUT_CONTENT_TYPE_EMPTY);
	cr_assert_eq(b->items[0]->state_reply->state.len, 0);
	free_batch(b);
	cut_close(c);
}

Test(libcut, declining_callback_sends_no_reply)
{
	struct down d[] = {{STATE, "p0-3", NULL}, {DELIVER, "p1", "A"}};
	struct cut *c = open_fake();

	decline = 1;
	cut_set_state_callback(c, state_cb, c);
	fake_send(d, 2);
	expect_msg(c, "p1", "A");
	cr_assert_eq(calls, 1);
	cr_assert_null(fake_recv(200), "a declined request was answered");
	cut_close(c);
}

Test(libcut, error_item_then_next)
{
	struct down d[] = {{ERROR, NULL, "send to unknown node \"p9\""},
	                   {DELIVER, "p1", "A"}};
	struct cut *c = open_fake();
	struct cut_msg *m = (struct cut_msg *)&m;
	char err[128];

	fake_send(d, 2);
	cr_assert_eq(cut_recv(c, 2000, &m), CUT_EREFUSED);
	cr_assert_eq(m, (struct cut_msg *)&m);
	cut_last_error(c, err, sizeof(err));
	cr_assert_not_null(strstr(err, "UNKNOWN_NODE"), "%s", err);
	cr_assert_not_null(strstr(err, "\"p9\""), "%s", err);
	expect_msg(c, "p1", "A");
	cut_close(c);
}

Test(libcut, garbage_from_daemon)
{
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
	static const uint8_t trunc[] = {0x0a, 0x10, 0x22, 0x03};
	struct down notset[] = {{NOTSET, NULL, NULL}};
	struct down bad[] = {{STATE, "", NULL}, {DELIVER, "", "x"}};
	struct down ok[] = {{DELIVER, "p1", "A"}};
	struct cut *c = open_fake();
	struct cut_msg *m = NULL;

	fake_send_raw(junk, sizeof(junk));
	fake_send_raw(trunc, sizeof(trunc));
	fake_send(notset, 1);
	fake_send(bad, 2);
	fake_send(ok, 1);
	cr_assert_eq(cut_recv(c, 2000, &m), CUT_EPROTO);
	cr_assert_eq(cut_recv(c, 2000, &m), CUT_EPROTO);
	cr_assert_eq(cut_recv(c, 2000, &m), CUT_EPROTO);
	cr_assert_eq(cut_recv(c, 2000, &m), CUT_EPROTO);
	cr_assert_eq(cut_recv(c, 2000, &m), CUT_EPROTO);
	cr_assert_null(m);
	expect_msg(c, "p1", "A");
	cut_close(c);
}

/* Senders on several threads: every message arrives, each thread's in
 * the order it sent them. */
#define SENDERS    4
#define PER_SENDER 200

static void *
sender_main(void *arg)
{
	struct cut *c = *(struct cut **)arg;
	char buf[32];
	int i, n;

	for (i = 0; i < PER_SENDER; i++) {
		n = snprintf(buf, sizeof(buf), "%p %d", arg, i);
		cr_assert_eq(cut_send(c, "p1", buf, (size_t)n, NULL), 0);
	}
	return NULL;
}

Test(libcut, concurrent_senders)
{
	struct cut *c = open_fake();
	struct cut *handles[SENDERS];
	pthread_t t[SENDERS];
	int next[SENDERS] = {0}, i, k, got;
	Cut__V1__AppBatch *b;
	char tag[32];

	for (k = 0; k < SENDERS; k++) {
		handles[k] = c;
		cr_assert_eq(
		    pthread_create(&t[k], NULL, sender_main, &handles[k]), 0);
	}
	for (i = 0; i < SENDERS * PER_SENDER; i++) {
		b = expect_up(CUT__V1__APP_ITEM__ITEM_SEND);
		snprintf(tag, sizeof(tag), "%.*s",
		         (int)b->items[0]->send->payload.len,
		         (char *)b->items[0]->send->payload.data);
		for (k = 0; k < SENDERS; k++) {
			char want[32];

			snprintf(want, sizeof(want), "%p %d",
			         (void *)&handles[k], next[k]);
			if (strcmp(tag, want) == 0)
				break;
		}
		cr_assert_lt(k, SENDERS, "unexpected or out of order: %s", tag);
		next[k]++;
		free_batch(b);
	}
	for (k = 0, got = 0; k < SENDERS; k++) {
		pthread_join(t[k], NULL);
		got += next[k];
	}
	cr_assert_eq(got, SENDERS * PER_SENDER);
	cut_close(c);
}

Test(libcut, recv_times_out)
{
	struct cut *c = open_fake();
	struct cut_msg *m = NULL;
	nng_time t0 = nng_clock();

	cr_assert_eq(cut_recv(c, 0, &m), CUT_ETIMEDOUT);
	cr_assert_eq(cut_recv(c, 300, &m), CUT_ETIMEDOUT);
	cr_assert_geq(nng_clock() - t0, 290);
	cr_assert_lt(nng_clock() - t0, 2000);
	cr_assert_null(m);
	cut_close(c);
}

static int dispatched;

static void
on_msg(void *arg, const struct cut_msg *m)
{
	struct cut *c = arg;
	struct cut_msg *m2;

	(void)m;
	dispatched++;
	returned++;
	cr_assert_eq(cut_recv(c, 0, &m2), CUT_EBUSY);
}

Test(libcut, fd_and_dispatch)
{
	struct down d[] = {{DELIVER, "p1", "A"},
	                   {DELIVER, "p1", "B"},
	                   {STATE, "p0-4", NULL},
	                   {DELIVER, "p2", "C"}};
	struct cut *c = open_fake();
	struct pollfd pfd = {.events = POLLIN};
	Cut__V1__AppBatch *b;

	cut_set_state_callback(c, state_cb, c);
	cr_assert_eq(cut_fd(c, &pfd.fd), 0);
	cr_assert_eq(cut_dispatch(c, on_msg, c), 0);
	cr_assert_eq(dispatched, 0);
	fake_send(d, 4);
	cr_assert_eq(poll(&pfd, 1, 2000), 1);
	cr_assert_eq(cut_dispatch(c, on_msg, c), 0);
	cr_assert_eq(dispatched, 3);
	cr_assert_eq(at_call, 2);
	b = expect_up(CUT__V1__APP_ITEM__ITEM_SEND);
	free_batch(b);
	b = expect_up(CUT__V1__APP_ITEM__ITEM_STATE_REPLY);
	free_batch(b);
	cut_close(c);
}

Test(libcut, lost_link)
{
	struct cut *c = open_fake();
	struct cut_msg *m = NULL;

	nng_close(app);
	nng_pair1_open(&app); /* for teardown */
	cr_assert_eq(cut_recv(c, 3000, &m), CUT_ECLOSED);
	cr_assert_eq(cut_send(c, "p1", "x", 1, NULL), CUT_ECLOSED);
	cut_close(c);
}

/* The control side. */

static void *
ctl_main(void *arg)
{
	Cut__V1__RpcReply rep = CUT__V1__RPC_REPLY__INIT;
	Cut__V1__RpcRequest *req;
	ProtobufCMessage *body;
	nng_msg *msg;
	uint8_t *buf;
	int n, what;

	(void)arg;
	while (!ctl_stop) {
		if (nng_recvmsg(ctl, &msg, 0) != 0)
			continue;
		req = (Cut__V1__RpcRequest *)cutproto_unpack(
		    &cut__v1__rpc_request__descriptor, nng_msg_len(msg),
		    nng_msg_body(msg));
		nng_msg_free(msg);
		cr_assert_not_null(req);
		pthread_mutex_lock(&ctl_mu);
		n = nreqs++;
		req_ids[n % 16] = req->request_id;
		snprintf(req_methods[n % 16], 64, "%s", req->method);
		pthread_mutex_unlock(&ctl_mu);
		body = NULL;
		rep.request_id = req->request_id;
		rep.message = "";
		what = ctl_handler(req, n, &rep.status, &body);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		if (what == DROP)
			continue;
		if (what == GARBAGE) {
			nng_send(ctl, "\xff\xff\xff", 3, 0);
			continue;
		}
		if (rep.status != 0)
			rep.message = "it went wrong";
		rep.has_body = body != NULL;
		buf = NULL;
		if (body != NULL) {
			rep.body.len = protobuf_c_message_get_packed_size(body);
			buf = malloc(rep.body.len + 1);
			protobuf_c_message_pack(body, buf);
			rep.body.data = buf;
		}
		nng_sendmsg(ctl, pack(&rep.base), 0);
		free(buf);
	}
	return NULL;
}

static void
serve(ctl_fn fn)
{
	ctl_handler = fn;
	cr_assert_eq(pthread_create(&ctl_thread, NULL, ctl_main, NULL), 0);
	ctl_running = 1;
}

static struct cut *
open_ctl(void)
{
	struct cut *c = NULL;

	cr_assert_eq(cut_open(NULL, ctl_url, NULL, &c), 0);
	cr_assert_eq(cut_set_control_timeout(c, 300), 0);
	return c;
}

static int
start_ok(const Cut__V1__RpcRequest *req, int n, int32_t *status,
         ProtobufCMessage **body)
{
	static Cut__V1__StartReply r = CUT__V1__START_REPLY__INIT;

	(void)req;
	(void)n;
	r.snapshot_id = "p0-7";
	r.started_ms = 1;
	*status = 0;
	*body = &r.base;
	return REPLY;
}

Test(libcut, control_start)
{
	struct cut *c;
	char id[CUT_SNAPSHOT_ID_MAX], small[4];
	struct cut_msg *m;

	serve(start_ok);
	c = open_ctl();
	cr_assert_eq(cut_snapshot_start(c, 0, id, sizeof(id)), 0);
	cr_assert_str_eq(id, "p0-7");
	cr_assert_str_eq(req_methods[0], CUTPROTO_METHOD_START);
	cr_assert_eq(cut_snapshot_start(c, 0, small, sizeof(small)),
	             CUT_EINVAL);
	cr_assert_eq(req_ids[1], req_ids[0] + 1);
	cr_assert_eq(cut_send(c, "p1", "x", 1, NULL), CUT_ENOTSUP);
	cr_assert_eq(cut_recv(c, 0, &m), CUT_ENOTSUP);
	cut_close(c);
}

/* Answers call n with status n + 3: INVALID_ARGUMENT, DEADLINE_EXCEEDED,
 * NOT_FOUND, ALREADY_EXISTS, ... */
static int
status_by_number(const Cut__V1__RpcRequest *req, int n, int32_t *status,
                 ProtobufCMessage **body)
{
	(void)req;
	(void)body;
	*status = n + 3;
	return REPLY;
}

Test(libcut, control_status_mapping)
{
	static const int want[] = {CUT_EINVAL,   CUT_ETIMEDOUT, CUT_ENOENT,
	                           CUT_EREFUSED, CUT_EREFUSED,  CUT_EREFUSED,
	                           CUT_EREFUSED, CUT_EREFUSED,  CUT_EINVAL,
	                           CUT_ENOTSUP,  CUT_EPROTO,    CUT_EUNAVAIL,
	                           CUT_EPROTO,   CUT_EREFUSED};
	struct cut_snapshot *s = (struct cut_snapshot *)&s;
	struct cut *c;
	char err[64];
	size_t i;

	serve(status_by_number);
	c = open_ctl();
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_eq(cut_snapshot_get(c, "p0-1", 0, &s), want[i],
		             "status %zu", i + 3);
	cr_assert_eq(s, (struct cut_snapshot *)&s);
	cut_last_error(c, err, sizeof(err));
	cr_assert_not_null(strstr(err, "it went wrong"), "%s", err);
	cut_close(c);
}

/* Drops the first call; answers every other with a deletion. */
static int
drop_first(const Cut__V1__RpcRequest *req, int n, int32_t *status,
           ProtobufCMessage **body)
{
	static Cut__V1__DeleteReply r = CUT__V1__DELETE_REPLY__INIT;

	(void)req;
	r.snapshot_id = "p0-1";
	*status = 0;
	*body = &r.base;
	return n == 0 ? DROP : REPLY;
}

Test(libcut, control_resends_same_id)
{
	struct cut *c;

	serve(drop_first);
	c = open_ctl();
	cr_assert_eq(cut_snapshot_delete(c, "p0-1"), 0);
	cr_assert_eq(nreqs, 2);
	cr_assert_eq(req_ids[0], req_ids[1], "the resend has a new id");
	cut_close(c);
}

static int
drop_all(const Cut__V1__RpcRequest *req, int n, int32_t *status,
         ProtobufCMessage **body)
{
	(void)req;
	(void)n;
	(void)status;
	(void)body;
	return DROP;
}

Test(libcut, control_timeout)
{
	nng_time t0 = nng_clock();
	struct cut *c;

	serve(drop_all);
	c = open_ctl();
	cr_assert_eq(cut_snapshot_delete(c, "p0-1"), CUT_ETIMEDOUT);
	cr_assert_geq(nng_clock() - t0, 590);
	cr_assert_eq(nreqs, 2, "sent %d times, not twice", nreqs);
	cut_close(c);
}

static int
garbage(const Cut__V1__RpcRequest *req, int n, int32_t *status,
        ProtobufCMessage **body)
{
	(void)req;
	(void)n;
	(void)status;
	(void)body;
	return GARBAGE;
}

Test(libcut, control_garbage_reply)
{
	struct cut_snapshot_list *l = NULL;
	struct cut *c;

	serve(garbage);
	c = open_ctl();
	cr_assert_eq(cut_snapshot_list(c, 0, &l), CUT_EPROTO);
	cr_assert_null(l);
	cut_close(c);
}

Test(libcut, control_no_daemon)
{
	struct cut *c = NULL;
	char url[160], id[CUT_SNAPSHOT_ID_MAX];

	snprintf(url, sizeof(url), "ipc://%s/nobody.ctl", dir);
	cr_assert_eq(cut_open(NULL, url, NULL, &c), 0);
	cr_assert_eq(cut_snapshot_start(c, 0, id, sizeof(id)), CUT_EUNAVAIL);
	cut_close(c);
}

/*
 * Wait: in progress twice (DEADLINE_EXCEEDED with the snapshot as it
 * stands), then complete; then the Get with messages comes in two pages
 * for channel p1 -> p0.
 */
static int
wait_then_pages(const Cut__V1__RpcRequest *req, int n, int32_t *status,
                ProtobufCMessage **body)
{
	static Cut__V1__SnapshotInfo s;
	static Cut__V1__AuditVerdict v = CUT__V1__AUDIT_VERDICT__INIT;
	static Cut__V1__ChannelState ch;
	static Cut__V1__ChannelState *chp = &ch;
	static Cut__V1__ChannelMessage msgs[3], *mp[3];
	Cut__V1__GetRequest *get;
	size_t i;

	cut__v1__snapshot_info__init(&s);
	cut__v1__channel_state__init(&ch);
	s.id = "p0-1";
	s.initiator = "p0";
	s.reason = "";
	s.parts_expected = 2;
	s.status = n < 2 ? CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS
	                 : CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE;
	s.parts_received = n < 2 ? 1 : 2;
	*status = n < 2 ? CUT__V1__STATUS_CODE__DEADLINE_EXCEEDED : 0;
	*body = &s.base;
	if (n < 3)
		return REPLY;
	cr_assert_str_eq(req->method, CUTPROTO_METHOD_GET);
	get = (Cut__V1__GetRequest *)cutproto_unpack(
	    &cut__v1__get_request__descriptor, req->body.len, req->body.data);
	cr_assert_not_null(get);
	cr_assert(get->include_messages);
	v.consistent = 1;
	v.reason = "";
	s.audit = &v;
	ch.src = "p1";
	ch.dst = "p0";
	ch.m = 4;
	ch.n = 7;
	ch.count = 3;
	for (i = 0; i < 3; i++) {
		cut__v1__channel_message__init(&msgs[i]);
		msgs[i].seq = 5 + i;
		msgs[i].payload.data = (uint8_t *)"abc" + i;
		msgs[i].payload.len = 1;
		mp[i] = &msgs[i];
	}
	/* First page: seq 5 and 6, more; second: after 6, seq 7. */
	ch.has_more = 1;
	ch.more = n == 3;
	ch.messages = n == 3 ? mp : mp + 2;
	ch.n_messages = n == 3 ? 2 : 1;
	if (n == 4)
		cr_assert_eq(get->after_seq, 6);
	s.n_channels = 1;
	s.channels = &chp;
	protobuf_c_message_free_unpacked(&get->base, NULL);
	return REPLY;
}

Test(libcut, wait_and_pages)
{
	struct cut_snapshot *s = NULL;
	const char *src, *dst;
	const void *data;
	uint64_t m, n, count, seq;
	size_t len, j;
	struct cut *c;

	serve(wait_then_pages);
	c = open_ctl();
	cr_assert_eq(
	    cut_snapshot_wait(c, "p0-1", -1, CUT_SNAPSHOT_MESSAGES, &s), 0);
	cr_assert_eq(nreqs, 5);
	cr_assert_str_eq(req_methods[0], CUTPROTO_METHOD_WAIT);
	cr_assert_str_eq(cut_snapshot_id(s), "p0-1");
	cr_assert_eq(cut_snapshot_status(s), CUT_SNAPSHOT_COMPLETE);
	cr_assert_eq(cut_snapshot_consistent(s), 1);
	cr_assert_eq(cut_snapshot_parts(s), 2);
	cr_assert_eq(cut_snapshot_nchannels(s), 1);
	cr_assert_eq(cut_snapshot_channel(s, 0, &src, &dst, &m, &n, &count), 0);
	cr_assert_str_eq(src, "p1");
	cr_assert_eq(m + count, n);
	cr_assert_eq(cut_snapshot_channel_nmessages(s, 0), 3);
	for (j = 0; j < 3; j++) {
		cr_assert_eq(cut_snapshot_channel_message(s, 0, j, &seq, NULL,
		                                          &data, &len),
		             0);
		cr_assert_eq(seq, 5 + j);
		cr_assert_eq(len, 1);
		cr_assert_eq(*(const char *)data, "abc"[j]);
	}
	cr_assert_eq(
	    cut_snapshot_channel_message(s, 0, 3, &seq, NULL, NULL, NULL),
	    CUT_EINVAL);
	cut_snapshot_free(s);
	cut_close(c);
}

Test(libcut, wait_times_out)
{
	struct cut_snapshot *s = NULL;
	struct cut *c;

	serve(wait_then_pages);
	c = open_ctl();
	cr_assert_eq(cut_snapshot_wait(c, "p0-1", 0, 0, &s), CUT_ETIMEDOUT);
	cr_assert_null(s);
	cut_close(c);
}
