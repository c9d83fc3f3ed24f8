/*
 * cutfuzz - sends malformed frames to a cutd socket, for the bad-input
 * integration test.
 *
 *   cutfuzz peer|app|control URL
 *
 * For each socket kind it sends random garbage, a truncated valid frame,
 * an oversized frame and well-formed frames with bad contents (unknown
 * cluster or node, item kinds the socket does not take, out-of-range
 * sequence numbers).  It prints how many frames it sent.
 */
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cutproto.h"

static int sent;

static void
send_bytes(nng_socket s, const void *data, size_t len)
{
	if (nng_send(s, (void *)data, len, 0) == 0)
		sent++;
}

static void
garbage(nng_socket s)
{
	uint8_t buf[512];

	srand(7);
	for (int k = 0; k < 20; k++) {
		size_t len = 1 + (size_t)(rand() % (int)sizeof(buf));
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rand();
		send_bytes(s, buf, len);
	}
	send_bytes(s, "", 0);
}

static void
oversized(nng_socket s, size_t len)
{
	uint8_t *buf = calloc(1, len);

	if (buf == NULL)
		return;
	memset(buf, 0x0a, len);
	send_bytes(s, buf, len);
	free(buf);
}

static void
packed(nng_socket s, const ProtobufCMessage *m, int truncate)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len);

	if (buf == NULL)
		return;
	protobuf_c_message_pack(m, buf);
	send_bytes(s, buf, truncate && len > 3 ? len - 3 : len);
	free(buf);
}

static void
fuzz_peer(nng_socket s)
{
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT;
	Cut__V1__PeerItem it = CUT__V1__PEER_ITEM__INIT, *items[1] = {&it};
	Cut__V1__PeerData data = CUT__V1__PEER_DATA__INIT;

	garbage(s);
	oversized(s, 8 * 1024 * 1024);
	data.seq = 1;
	data.app_seq = 1;
	data.payload.data = (uint8_t *)"{\"amount\": 1}";
	data.payload.len = 13;
	it.item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
	it.data = &data;
	b.items = items;
	b.n_items = 1;
	b.cluster = "no-such-cluster";
	b.from = "p1";
	b.to = "p0";
	packed(s, &b.base, 0); /* another cluster */
	packed(s, &b.base, 1); /* truncated */
	b.cluster = getenv("CUTFUZZ_CLUSTER") ? getenv("CUTFUZZ_CLUSTER") : "";
	b.from = "nobody";
	packed(s, &b.base, 0); /* unknown node */
	b.from = "p1";
	b.to = "p9";
	packed(s, &b.base, 0); /* not for this node */
	b.to = "p0";
	it.item_case = CUT__V1__PEER_ITEM__ITEM__NOT_SET;
	packed(s, &b.base, 0); /* item with no kind */
}

static void
fuzz_app(nng_socket s)
{
	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT, *items[1] = {&it};
	Cut__V1__AppSend snd = CUT__V1__APP_SEND__INIT;
	Cut__V1__AppDeliver dl = CUT__V1__APP_DELIVER__INIT;

	garbage(s);
	oversized(s, 8 * 1024 * 1024);
	snd.to = "p1";
	snd.payload.data = (uint8_t *)"x";
	snd.payload.len = 1;
	it.item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	it.send = &snd;
	b.items = items;
	b.n_items = 1;
	packed(s, &b.base, 0); /* send before hello */
	packed(s, &b.base, 1); /* truncated */
	dl.from = "p1";
	dl.payload.data = (uint8_t *)"x";
	dl.payload.len = 1;
	it.item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
	it.deliver = &dl;
	packed(s, &b.base, 0); /* a daemon's item */
}

static void
fuzz_control(nng_socket s)
{
	Cut__V1__RpcRequest rq = CUT__V1__RPC_REQUEST__INIT;
	nng_msg *reply;

	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 2000);
	garbage(s);
	oversized(s, 1024 * 1024);
	rq.request_id = 42;
	rq.method = "/cut.v1.Snapshots/NoSuchMethod";
	packed(s, &rq.base, 1); /* truncated */
	rq.method = "/cut.v1.Snapshots/Get";
	rq.body.data = (uint8_t *)"\xff\xff\xff";
	rq.body.len = 3;
	packed(s, &rq.base, 0); /* body does not decode */
	rq.request_id = 43;
	rq.method = "/cut.v1.Snapshots/NoSuchMethod";
	packed(s, &rq.base, 0);
	/* req0 allows one outstanding request: the last one's reply. */
	if (nng_recvmsg(s, &reply, 0) == 0)
		nng_msg_free(reply);
}

int
main(int argc, char **argv)
{
	nng_socket s;
	int rv;

	if (argc != 3) {
		fprintf(stderr, "usage: cutfuzz peer|app|control URL\n");
		return 64;
	}
	if (strcmp(argv[1], "peer") == 0)
		rv = nng_pair1_open(&s);
	else if (strcmp(argv[1], "app") == 0)
		rv = nng_pair1_open(&s);
	else if (strcmp(argv[1], "control") == 0)
		rv = nng_req0_open(&s);
	else
		return 64;
	if (rv == 0)
		rv = nng_dial(s, argv[2], NULL, 0);
	if (rv != 0) {
		fprintf(stderr, "cutfuzz: %s: %s\n", argv[2], nng_strerror(rv));
		return 69;
	}
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 2000);
	if (argv[1][0] == 'p')
		fuzz_peer(s);
	else if (argv[1][0] == 'a')
		fuzz_app(s);
	else
		fuzz_control(s);
	nng_msleep(300); /* let queued frames leave */
	printf("%d\n", sent);
	/* No nng_close(): nng 1.5.2 can hang closing a busy socket (nng
	 * issue #1219); the kernel closes the connection. */
	fflush(stdout);
	_exit(0);
}
