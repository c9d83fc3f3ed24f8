/*
 * test_proto.c - the cut.v1 wire formats: every frame kind survives a pack
 * and unpack with its fields intact, and bad bytes (garbage, truncated,
 * non-canonical) are refused the way the daemon relies on.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutproto.h"

/* Packs m into a new buffer that the caller frees; stores its size. */
static uint8_t *
pack(const ProtobufCMessage *m, size_t *ret_len)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len > 0 ? len : 1);

	cr_assert_not_null(buf);
	cr_assert_eq(protobuf_c_message_pack(m, buf), len);
	*ret_len = len;
	return buf;
}

/* Borrows the bytes of a string literal as protobuf bytes. */
static ProtobufCBinaryData
bin(const char *s)
{
	return (ProtobufCBinaryData){strlen(s), (uint8_t *)s};
}

static void
assert_bin(ProtobufCBinaryData b, const char *want)
{
	cr_assert_eq(b.len, strlen(want));
	cr_assert_eq(memcmp(b.data, want, b.len), 0);
}

/*
 * The peer batch used by several tests: p1 -> p0 in cluster "bank", one
 * item of each kind, in this order.
 */
static const Cut__V1__PeerItem__ItemCase peer_kinds[] = {
    CUT__V1__PEER_ITEM__ITEM_DATA,  CUT__V1__PEER_ITEM__ITEM_MARKER,
    CUT__V1__PEER_ITEM__ITEM_ACK,   CUT__V1__PEER_ITEM__ITEM_HELLO,
    CUT__V1__PEER_ITEM__ITEM_PART,  CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES,
    CUT__V1__PEER_ITEM__ITEM_ABORT,
};
#define N_PEER_KINDS (sizeof(peer_kinds) / sizeof(peer_kinds[0]))

static uint8_t *
packed_peer_batch(size_t *ret_len)
{
	Cut__V1__PeerData data = CUT__V1__PEER_DATA__INIT;
	Cut__V1__PeerMarker marker = CUT__V1__PEER_MARKER__INIT;
	Cut__V1__PeerAck ack = CUT__V1__PEER_ACK__INIT;
	Cut__V1__PeerHello hello = CUT__V1__PEER_HELLO__INIT;
	Cut__V1__PartChannel ch[2] = {CUT__V1__PART_CHANNEL__INIT,
	                              CUT__V1__PART_CHANNEL__INIT};
	Cut__V1__PartChannel *chp[2] = {&ch[0], &ch[1]};
	Cut__V1__PeerPart part = CUT__V1__PEER_PART__INIT;
	Cut__V1__ChannelMessage msg[2] = {CUT__V1__CHANNEL_MESSAGE__INIT,
	                                  CUT__V1__CHANNEL_MESSAGE__INIT};
	Cut__V1__ChannelMessage *msgp[2] = {&msg[0], &msg[1]};
	Cut__V1__PeerPartMessages pm = CUT__V1__PEER_PART_MESSAGES__INIT;
	Cut__V1__PeerAbort abort_ = CUT__V1__PEER_ABORT__INIT;
	Cut__V1__PeerItem items[N_PEER_KINDS];
	Cut__V1__PeerItem *itemp[N_PEER_KINDS];
	Cut__V1__PeerBatch batch = CUT__V1__PEER_BATCH__INIT;

	data.seq = 1;
	data.app_seq = 1;
	data.content_type = "application/json";
	data.payload = bin("{\"amount\": 3}");

	marker.seq = 2;
	marker.snapshot_id = "p0-1";
	marker.count = 1;

	ack.upto = 41;

	hello.next_expected = 42;
	hello.epoch = 1700000000000ULL;

	ch[0].src = "p1";
	ch[0].m = 3;
	ch[0].n = 5;
	ch[0].count = 2;
	ch[0].first_seq = 4;
	ch[0].last_seq = 5;
	ch[0].consecutive = 1;
	ch[1].src = "p2";
	ch[1].m = 7;
	ch[1].n = 7;
	ch[1].consecutive = 1;
	part.seq = 3;
	part.snapshot_id = "p0-1";
	part.node = "p1";
	part.content_type = "application/json";
	part.state = bin("{\"balance\": 18}");
	part.n_channels = 2;
	part.channels = chp;

	msg[0].seq = 4;
	msg[0].content_type = "application/json";
	msg[0].payload = bin("{\"amount\": 1}");
	msg[1].seq = 5;
	msg[1].payload = bin("");
	pm.seq = 4;
	pm.snapshot_id = "p0-1";
	pm.src = "p1";
	pm.n_messages = 2;
	pm.messages = msgp;
	pm.final = 1;

	abort_.seq = 5;
	abort_.snapshot_id = "p0-2";
	abort_.reason = "node p2: application did not answer";

	for (size_t i = 0; i < N_PEER_KINDS; i++) {
		cut__v1__peer_item__init(&items[i]);
		items[i].item_case = peer_kinds[i];
		itemp[i] = &items[i];
	}
	items[0].data = &data;
	items[1].marker = &marker;
	items[2].ack = &ack;
	items[3].hello = &hello;
	items[4].part = &part;
	items[5].part_messages = &pm;
	items[6].abort = &abort_;

	batch.cluster = "bank";
	batch.from = "p1";
	batch.to = "p0";
	batch.n_items = N_PEER_KINDS;
	batch.items = itemp;
	return pack(&batch.base, ret_len);
}

Test(peer, batch_round_trip)
{
	size_t len;
	uint8_t *buf = packed_peer_batch(&len);
	Cut__V1__PeerBatch *b = (Cut__V1__PeerBatch *)cutproto_unpack(
	    &cut__v1__peer_batch__descriptor, len, buf);
	Cut__V1__PeerItem **it;

	cr_assert_not_null(b);
	cr_assert_str_eq(b->cluster, "bank");
	cr_assert_str_eq(b->from, "p1");
	cr_assert_str_eq(b->to, "p0");
	cr_assert_eq(b->n_items, N_PEER_KINDS);
	it = b->items;
	for (size_t i = 0; i < N_PEER_KINDS; i++)
		cr_assert_eq(it[i]->item_case, peer_kinds[i], "item %zu", i);

	cr_assert_eq(it[0]->data->seq, 1);
	cr_assert_eq(it[0]->data->app_seq, 1);
	cr_assert_str_eq(it[0]->data->content_type, "application/json");
	assert_bin(it[0]->data->payload, "{\"amount\": 3}");

	cr_assert_eq(it[1]->marker->seq, 2);
	cr_assert_str_eq(it[1]->marker->snapshot_id, "p0-1");
	cr_assert_eq(it[1]->marker->count, 1);

	cr_assert_eq(it[2]->ack->upto, 41);

	cr_assert_eq(it[3]->hello->next_expected, 42);
	cr_assert_eq(it[3]->hello->epoch, 1700000000000ULL);

	Cut__V1__PeerPart *p = it[4]->part;
	cr_assert_eq(p->seq, 3);
	cr_assert_str_eq(p->snapshot_id, "p0-1");
	cr_assert_str_eq(p->node, "p1");
	cr_assert_str_eq(p->content_type, "application/json");
	assert_bin(p->state, "{\"balance\": 18}");
	cr_assert_eq(p->n_channels, 2);
	cr_assert_str_eq(p->channels[0]->src, "p1");
	cr_assert_eq(p->channels[0]->m, 3);
	cr_assert_eq(p->channels[0]->n, 5);
	cr_assert_eq(p->channels[0]->count, 2);
	cr_assert_eq(p->channels[0]->first_seq, 4);
	cr_assert_eq(p->channels[0]->last_seq, 5);
	cr_assert(p->channels[0]->consecutive);
	cr_assert_str_eq(p->channels[1]->src, "p2");
	cr_assert_eq(p->channels[1]->count, 0);
	cr_assert_eq(p->channels[1]->first_seq, 0);
	cr_assert(p->channels[1]->consecutive);

	Cut__V1__PeerPartMessages *pm = it[5]->part_messages;
	cr_assert_eq(pm->seq, 4);
	cr_assert_str_eq(pm->snapshot_id, "p0-1");
	cr_assert_str_eq(pm->src, "p1");
	cr_assert(pm->final);
	cr_assert_eq(pm->n_messages, 2);
	cr_assert_eq(pm->messages[0]->seq, 4);
	cr_assert_str_eq(pm->messages[0]->content_type, "application/json");
	assert_bin(pm->messages[0]->payload, "{\"amount\": 1}");
	cr_assert_eq(pm->messages[1]->seq, 5);
	cr_assert_null(pm->messages[1]->content_type, "absent stays NULL");
	cr_assert_eq(pm->messages[1]->payload.len, 0);

	cr_assert_eq(it[6]->abort->seq, 5);
	cr_assert_str_eq(it[6]->abort->snapshot_id, "p0-2");
	cr_assert_str_eq(it[6]->abort->reason,
	                 "node p2: application did not answer");

	cut__v1__peer_batch__free_unpacked(b, NULL);
	free(buf);
}

/*
 * nng delivers whole messages, but a broken or hostile sender can send a
 * cut-short batch.  Cut inside a field, it must not decode.  Cut exactly
 * between two items, it decodes as a shorter batch: the daemon cannot tell,
 * and the link sequence numbers are what catch the missing items.  Cut
 * inside the header, a required field is missing.
 */
Test(peer, truncated_batch)
{
	size_t len, decoded = 0;
	uint8_t *buf = packed_peer_batch(&len);

	for (size_t cut = 0; cut < len; cut++) {
		Cut__V1__PeerBatch *b =
		    cut__v1__peer_batch__unpack(NULL, cut, buf);
		if (b == NULL)
			continue;
		decoded++;
		cr_assert_lt(b->n_items, N_PEER_KINDS, "cut at %zu", cut);
		for (size_t i = 0; i < b->n_items; i++)
			cr_assert_eq(b->items[i]->item_case, peer_kinds[i]);
		cut__v1__peer_batch__free_unpacked(b, NULL);
	}
	/* After the header and after each of the first six items. */
	cr_assert_eq(decoded, N_PEER_KINDS);
	free(buf);
}

Test(peer, missing_required_field)
{
	/* cluster "c", from "a", no to. */
	static const uint8_t no_to[] = {0x0a, 1, 'c', 0x12, 1, 'a'};
	/* cluster, from, to, then a Data item without its payload. */
	static const uint8_t no_payload[] = {0x0a, 1,    'c', 0x12, 1, 'a',
	                                     0x1a, 1,    'b', 0x22, 6, 0x0a,
	                                     4,    0x08, 1,   0x10, 1};

	cr_assert_null(cut__v1__peer_batch__unpack(NULL, sizeof(no_to), no_to));
	cr_assert_null(
	    cut__v1__peer_batch__unpack(NULL, sizeof(no_payload), no_payload));
}

/* An item with no kind, or of a kind a newer daemon added (field 15), still
 * decodes: the daemon must check item_case. */
Test(peer, item_without_known_kind)
{
	static const uint8_t empty[] = {0x0a, 1, 'c', 0x12, 1, 'a',
	                                0x1a, 1, 'b', 0x22, 0};
	/* An item of kind 31, which no daemon knows yet. */
	static const uint8_t future[] = {0x0a, 1,   'c',  0x12, 1,    'a',
	                                 0x1a, 1,   'b',  0x22, 3,    0xfa,
	                                 0x01, 0};
	Cut__V1__PeerBatch *b;

	b = (Cut__V1__PeerBatch *)cutproto_unpack(
	    &cut__v1__peer_batch__descriptor, sizeof(empty), empty);
	cr_assert_not_null(b);
	cr_assert_eq(b->n_items, 1);
	cr_assert_eq(b->items[0]->item_case, CUT__V1__PEER_ITEM__ITEM__NOT_SET);
	cut__v1__peer_batch__free_unpacked(b, NULL);

	b = (Cut__V1__PeerBatch *)cutproto_unpack(
	    &cut__v1__peer_batch__descriptor, sizeof(future), future);
	cr_assert_not_null(b);
	cr_assert_eq(b->items[0]->item_case, CUT__V1__PEER_ITEM__ITEM__NOT_SET);
	cut__v1__peer_batch__free_unpacked(b, NULL);
}

Test(app, batch_round_trip)
{
	Cut__V1__AppHello hello = CUT__V1__APP_HELLO__INIT;
	Cut__V1__AppHelloReply reply = CUT__V1__APP_HELLO_REPLY__INIT;
	char *peers[] = {"p1", "p2"};
	Cut__V1__AppSend send = CUT__V1__APP_SEND__INIT;
	Cut__V1__AppDeliver deliver = CUT__V1__APP_DELIVER__INIT;
	Cut__V1__AppStateRequest sreq = CUT__V1__APP_STATE_REQUEST__INIT;
	Cut__V1__AppStateReply srep = CUT__V1__APP_STATE_REPLY__INIT;
	Cut__V1__AppError err = CUT__V1__APP_ERROR__INIT;
	Cut__V1__AppTaken taken = CUT__V1__APP_TAKEN__INIT;
	Cut__V1__AppCredit credit = CUT__V1__APP_CREDIT__INIT;
	Cut__V1__AppItem items[9];
	Cut__V1__AppItem *itemp[9];
	Cut__V1__AppBatch batch = CUT__V1__APP_BATCH__INIT;
	size_t len;
	uint8_t *buf;

	hello.node = "p0";
	hello.version = CUTPROTO_APP_VERSION;
	reply.node = "p0";
	reply.version = CUTPROTO_APP_VERSION;
	reply.cluster = "bank";
	reply.n_peers = 2;
	reply.peers = peers;
	reply.max_message_size = 65536;
	reply.has_window_bytes = 1;
	reply.window_bytes = 1ULL << 30;
	send.to = "p1";
	send.content_type = "application/json";
	send.payload = bin("{\"amount\": 2}");
	deliver.from = "p2";
	deliver.payload = bin("raw");
	deliver.has_seq = 1;
	deliver.seq = 9;
	sreq.snapshot_id = "p0-1";
	sreq.has_overtake = 1;
	sreq.overtake = 1;
	srep.snapshot_id = "p0-1";
	srep.content_type = "application/json";
	srep.state = bin("{\"balance\": 14}");
	srep.handed = 5000000000ULL;
	taken.handed = 7;
	credit.peer = 1;
	credit.limit = (1ULL << 40) + 3;
	err.code = CUT__V1__APP_ERROR__CODE__UNKNOWN_NODE;
	err.message = "send to unknown node \"p9\"";

	for (size_t i = 0; i < 9; i++) {
		cut__v1__app_item__init(&items[i]);
		itemp[i] = &items[i];
	}
	items[0].item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	items[0].hello = &hello;
	items[1].item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	items[1].hello_reply = &reply;
	items[2].item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	items[2].send = &send;
	items[3].item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
	items[3].deliver = &deliver;
	items[4].item_case = CUT__V1__APP_ITEM__ITEM_STATE_REQUEST;
	items[4].state_request = &sreq;
	items[5].item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	items[5].state_reply = &srep;
	items[6].item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
	items[6].error = &err;
	items[7].item_case = CUT__V1__APP_ITEM__ITEM_TAKEN;
	items[7].taken = &taken;
	items[8].item_case = CUT__V1__APP_ITEM__ITEM_CREDIT;
	items[8].credit = &credit;
	batch.n_items = 9;
	batch.items = itemp;
	buf = pack(&batch.base, &len);

	Cut__V1__AppBatch *b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, buf);
	cr_assert_not_null(b);
	cr_assert_eq(b->n_items, 9);
	Cut__V1__AppItem **it = b->items;
	cr_assert_eq(it[0]->item_case, CUT__V1__APP_ITEM__ITEM_HELLO);
	cr_assert_str_eq(it[0]->hello->node, "p0");
	cr_assert_eq(it[0]->hello->version, CUTPROTO_APP_VERSION);
	cr_assert_eq(it[1]->item_case, CUT__V1__APP_ITEM__ITEM_HELLO_REPLY);
	cr_assert_str_eq(it[1]->hello_reply->cluster, "bank");
	cr_assert_eq(it[1]->hello_reply->n_peers, 2);
	cr_assert_str_eq(it[1]->hello_reply->peers[1], "p2");
	cr_assert_eq(it[1]->hello_reply->max_message_size, 65536);
	cr_assert(it[1]->hello_reply->has_window_bytes);
	cr_assert_eq(it[1]->hello_reply->window_bytes, 1ULL << 30);
	cr_assert_eq(it[2]->item_case, CUT__V1__APP_ITEM__ITEM_SEND);
	cr_assert_str_eq(it[2]->send->to, "p1");
	cr_assert_str_eq(it[2]->send->content_type, "application/json");
	assert_bin(it[2]->send->payload, "{\"amount\": 2}");
	cr_assert_eq(it[3]->item_case, CUT__V1__APP_ITEM__ITEM_DELIVER);
	cr_assert_str_eq(it[3]->deliver->from, "p2");
	cr_assert_null(it[3]->deliver->content_type);
	assert_bin(it[3]->deliver->payload, "raw");
	cr_assert(it[3]->deliver->has_seq);
	cr_assert_eq(it[3]->deliver->seq, 9);
	cr_assert_eq(it[4]->item_case, CUT__V1__APP_ITEM__ITEM_STATE_REQUEST);
	cr_assert_str_eq(it[4]->state_request->snapshot_id, "p0-1");
	cr_assert(it[4]->state_request->has_overtake);
	cr_assert_eq(it[4]->state_request->overtake, 1);
	cr_assert_eq(it[5]->item_case, CUT__V1__APP_ITEM__ITEM_STATE_REPLY);
	cr_assert_str_eq(it[5]->state_reply->snapshot_id, "p0-1");
	assert_bin(it[5]->state_reply->state, "{\"balance\": 14}");
	cr_assert_eq(it[5]->state_reply->handed, 5000000000ULL);
	cr_assert_eq(it[6]->item_case, CUT__V1__APP_ITEM__ITEM_ERROR);
	cr_assert_eq(it[6]->error->code, 2);
	cr_assert_str_eq(it[6]->error->message, "send to unknown node \"p9\"");
	cr_assert_eq(it[7]->item_case, CUT__V1__APP_ITEM__ITEM_TAKEN);
	cr_assert_eq(it[7]->taken->handed, 7);
	cr_assert_eq(it[8]->item_case, CUT__V1__APP_ITEM__ITEM_CREDIT);
	cr_assert_eq(it[8]->credit->peer, 1);
	cr_assert_eq(it[8]->credit->limit, (1ULL << 40) + 3);
	cut__v1__app_batch__free_unpacked(b, NULL);
	free(buf);
}

/*
 * Version 2's fields seen from both sides: an older daemon's request
 * (no overtake) is the aligned cut, an older reply has no window, and
 * the counts libcut and the daemon rely on are required.
 */
Test(app, v2_defaults_and_required_fields)
{
	/* AppStateRequest{snapshot_id "x"}. */
	static const uint8_t req[] = {0x0a, 1, 'x'};
	/* AppHelloReply{node "p0", version 1, cluster "c",
	 * max_message_size 9}. */
	static const uint8_t hello[] = {0x0a, 2, 'p', '0',  0x10, 1,
	                                0x1a, 1, 'c', 0x28, 9};
	/* AppStateReply{snapshot_id "x", state ""}: no handed. */
	static const uint8_t reply[] = {0x0a, 1, 'x', 0x1a, 0};
	/* AppCredit with only its peer, or only its limit. */
	static const uint8_t credit_peer[] = {0x08, 1};
	static const uint8_t credit_limit[] = {0x10, 5};
	static const uint8_t none[1];
	static const struct {
		const char *what;
		const ProtobufCMessageDescriptor *desc;
		size_t len;
		const uint8_t *data;
	} missing[] = {
	    {"a state reply without handed",
	     &cut__v1__app_state_reply__descriptor, sizeof(reply), reply},
	    {"a taken count without handed", &cut__v1__app_taken__descriptor, 0,
	     none},
	    {"credit without a limit", &cut__v1__app_credit__descriptor,
	     sizeof(credit_peer), credit_peer},
	    {"credit without a peer", &cut__v1__app_credit__descriptor,
	     sizeof(credit_limit), credit_limit},
	};
	Cut__V1__AppStateRequest *r;
	Cut__V1__AppHelloReply *h;

	r = (Cut__V1__AppStateRequest *)cutproto_unpack(
	    &cut__v1__app_state_request__descriptor, sizeof(req), req);
	cr_assert_not_null(r);
	cr_assert_eq(r->has_overtake, 0);
	cr_assert_eq(r->overtake, 0);
	protobuf_c_message_free_unpacked(&r->base, NULL);

	h = (Cut__V1__AppHelloReply *)cutproto_unpack(
	    &cut__v1__app_hello_reply__descriptor, sizeof(hello), hello);
	cr_assert_not_null(h);
	cr_assert_eq(h->has_window_bytes, 0);
	cr_assert_eq(h->max_message_size, 9);
	protobuf_c_message_free_unpacked(&h->base, NULL);

	/* Refused by protobuf-c itself (a required field is missing), so
	 * by cutproto_unpack() too. */
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		cr_assert_null(protobuf_c_message_unpack(missing[i].desc, NULL,
		                                         missing[i].len,
		                                         missing[i].data),
		               "%s", missing[i].what);
		cr_assert_null(cutproto_unpack(missing[i].desc, missing[i].len,
		                               missing[i].data),
		               "%s", missing[i].what);
	}
}

/* An AppBatch has no required field, so zero bytes are a valid, empty
 * batch: the daemon must not read one as a frame error (nor rely on it). */
Test(app, empty_batch)
{
	static const uint8_t none[1];
	Cut__V1__AppBatch *b = cut__v1__app_batch__unpack(NULL, 0, none);

	cr_assert_not_null(b);
	cr_assert_eq(b->n_items, 0);
	cut__v1__app_batch__free_unpacked(b, NULL);
}

/* A Start call: an envelope with an encoded StartRequest inside. */
Test(control, request_round_trip)
{
	Cut__V1__StartRequest start = CUT__V1__START_REQUEST__INIT;
	Cut__V1__RpcRequest req = CUT__V1__RPC_REQUEST__INIT;
	size_t blen, len;
	uint8_t *body, *buf;

	start.has_timeout_ms = 1;
	start.timeout_ms = 5000;
	body = pack(&start.base, &blen);
	req.request_id = 0x1234567890abcdefULL;
	req.method = CUTPROTO_METHOD_START;
	req.body.len = blen;
	req.body.data = body;
	buf = pack(&req.base, &len);

	Cut__V1__RpcRequest *r = (Cut__V1__RpcRequest *)cutproto_unpack(
	    &cut__v1__rpc_request__descriptor, len, buf);
	cr_assert_not_null(r);
	cr_assert_eq(r->request_id, 0x1234567890abcdefULL);
	cr_assert_str_eq(r->method, "/cut.v1.Snapshots/Start");
	Cut__V1__StartRequest *s =
	    cut__v1__start_request__unpack(NULL, r->body.len, r->body.data);
	cr_assert_not_null(s);
	cr_assert(s->has_timeout_ms);
	cr_assert_eq(s->timeout_ms, 5000);
	cut__v1__start_request__free_unpacked(s, NULL);
	cut__v1__rpc_request__free_unpacked(r, NULL);

	/* Every field of a request envelope is required: no prefix of it
	 * decodes. */
	for (size_t cut = 0; cut < len; cut++)
		cr_assert_null(cut__v1__rpc_request__unpack(NULL, cut, buf),
		               "cut at %zu", cut);
	free(buf);
	free(body);

	/* An empty body is a request with every field absent. */
	s = cut__v1__start_request__unpack(NULL, 0, (const uint8_t *)"");
	cr_assert_not_null(s);
	cr_assert_not(s->has_timeout_ms);
	cut__v1__start_request__free_unpacked(s, NULL);
}

/* A Get answer: an envelope with a whole SnapshotInfo inside. */
Test(control, reply_round_trip)
{
	Cut__V1__AuditVerdict audit = CUT__V1__AUDIT_VERDICT__INIT;
	Cut__V1__NodeState node = CUT__V1__NODE_STATE__INIT;
	Cut__V1__NodeState *nodep = &node;
	Cut__V1__ChannelMessage msg = CUT__V1__CHANNEL_MESSAGE__INIT;
	Cut__V1__ChannelMessage *msgp = &msg;
	Cut__V1__ChannelState chan = CUT__V1__CHANNEL_STATE__INIT;
	Cut__V1__ChannelState *chanp = &chan;
	Cut__V1__SnapshotInfo info = CUT__V1__SNAPSHOT_INFO__INIT;
	Cut__V1__RpcReply rep = CUT__V1__RPC_REPLY__INIT;
	size_t blen, len, head, decoded = 0;
	uint8_t *body, *buf;

	audit.consistent = 1;
	audit.reason = "";
	node.node = "p0";
	node.content_type = "application/json";
	node.state_size = 15;
	node.has_state = 1;
	node.state = bin("{\"balance\": 18}");
	msg.seq = 6;
	msg.content_type = "application/json";
	msg.payload = bin("{\"amount\": 4}");
	chan.src = "p1";
	chan.dst = "p0";
	chan.m = 5;
	chan.n = 6;
	chan.count = 1;
	chan.n_messages = 1;
	chan.messages = &msgp;
	info.id = "p0-1";
	info.initiator = "p0";
	info.status = CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE;
	info.reason = "";
	info.started_ms = 1700000000000ULL;
	info.finished_ms = 1700000000042ULL;
	info.parts_received = 3;
	info.parts_expected = 3;
	info.audit = &audit;
	info.n_nodes = 1;
	info.nodes = &nodep;
	info.n_channels = 1;
	info.channels = &chanp;
	body = pack(&info.base, &blen);
	rep.request_id = 7;
	rep.status = CUT__V1__STATUS_CODE__OK;
	rep.message = "";
	head = protobuf_c_message_get_packed_size(&rep.base);
	rep.has_body = 1;
	rep.body.len = blen;
	rep.body.data = body;
	buf = pack(&rep.base, &len);

	Cut__V1__RpcReply *r = (Cut__V1__RpcReply *)cutproto_unpack(
	    &cut__v1__rpc_reply__descriptor, len, buf);
	cr_assert_not_null(r);
	cr_assert_eq(r->request_id, 7);
	cr_assert_eq(r->status, 0);
	cr_assert_str_eq(r->message, "");
	cr_assert(r->has_body);
	Cut__V1__SnapshotInfo *i =
	    cut__v1__snapshot_info__unpack(NULL, r->body.len, r->body.data);
	cr_assert_not_null(i);
	cr_assert_str_eq(i->id, "p0-1");
	cr_assert_str_eq(i->initiator, "p0");
	cr_assert_eq(i->status, CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE);
	cr_assert_eq(i->finished_ms - i->started_ms, 42);
	cr_assert_not(i->has_deadline_ms);
	cr_assert_eq(i->parts_received, 3);
	cr_assert_eq(i->parts_expected, 3);
	cr_assert_eq(i->channels_recording, 0);
	cr_assert_not_null(i->audit);
	cr_assert(i->audit->consistent);
	cr_assert_eq(i->n_nodes, 1);
	cr_assert_str_eq(i->nodes[0]->node, "p0");
	cr_assert_eq(i->nodes[0]->state_size, 15);
	cr_assert(i->nodes[0]->has_state);
	assert_bin(i->nodes[0]->state, "{\"balance\": 18}");
	cr_assert_eq(i->n_channels, 1);
	cr_assert_str_eq(i->channels[0]->src, "p1");
	cr_assert_str_eq(i->channels[0]->dst, "p0");
	cr_assert_eq(i->channels[0]->m, 5);
	cr_assert_eq(i->channels[0]->n, 6);
	cr_assert_eq(i->channels[0]->count, 1);
	cr_assert_not(i->channels[0]->more);
	cr_assert_eq(i->channels[0]->n_messages, 1);
	cr_assert_eq(i->channels[0]->messages[0]->seq, 6);
	assert_bin(i->channels[0]->messages[0]->payload, "{\"amount\": 4}");
	cut__v1__snapshot_info__free_unpacked(i, NULL);
	cut__v1__rpc_reply__free_unpacked(r, NULL);

	/* The body is optional: the one prefix that decodes is the one that
	 * stops right before it, where the envelope without a body ends. */
	for (size_t cut = 0; cut < len; cut++) {
		r = cut__v1__rpc_reply__unpack(NULL, cut, buf);
		if (r == NULL)
			continue;
		decoded++;
		cr_assert_not(r->has_body);
		cr_assert_eq(cut, head, "cut at %zu", cut);
		cut__v1__rpc_reply__free_unpacked(r, NULL);
	}
	cr_assert_eq(decoded, 1);
	free(buf);
	free(body);
}

Test(control, error_reply_without_body)
{
	Cut__V1__RpcReply rep = CUT__V1__RPC_REPLY__INIT;
	size_t len;
	uint8_t *buf;

	rep.request_id = 8;
	rep.status = CUT__V1__STATUS_CODE__NOT_FOUND;
	rep.message = "snapshot \"p0-9\" not found";
	buf = pack(&rep.base, &len);
	Cut__V1__RpcReply *r = cut__v1__rpc_reply__unpack(NULL, len, buf);
	cr_assert_not_null(r);
	cr_assert_eq(r->status, 5);
	cr_assert_str_eq(r->message, "snapshot \"p0-9\" not found");
	cr_assert_not(r->has_body);
	cut__v1__rpc_reply__free_unpacked(r, NULL);
	free(buf);
}

/* The method paths the daemon dispatches on match the services that
 * protoc-c generated, with the request and reply types of each. */
Test(control, method_table)
{
	static const struct {
		const ProtobufCServiceDescriptor *svc;
		const char *path;
		const ProtobufCMessageDescriptor *in, *out;
	} want[] = {
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_START,
	     &cut__v1__start_request__descriptor,
	     &cut__v1__start_reply__descriptor},
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_GET,
	     &cut__v1__get_request__descriptor,
	     &cut__v1__snapshot_info__descriptor},
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_LIST,
	     &cut__v1__list_request__descriptor,
	     &cut__v1__list_reply__descriptor},
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_WAIT,
	     &cut__v1__wait_request__descriptor,
	     &cut__v1__snapshot_info__descriptor},
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_DELETE,
	     &cut__v1__delete_request__descriptor,
	     &cut__v1__delete_reply__descriptor},
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_EVALUATE,
	     &cut__v1__evaluate_request__descriptor,
	     &cut__v1__evaluate_reply__descriptor},
	    {&cut__v1__node__descriptor, CUTPROTO_METHOD_STATUS,
	     &cut__v1__status_request__descriptor,
	     &cut__v1__status_reply__descriptor},
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_KEEP,
	     &cut__v1__keep_request__descriptor,
	     &cut__v1__keep_reply__descriptor},
	    {&cut__v1__snapshots__descriptor, CUTPROTO_METHOD_RESTORE,
	     &cut__v1__restore_request__descriptor,
	     &cut__v1__restore_reply__descriptor},
	    {&cut__v1__schedule__descriptor, CUTPROTO_METHOD_SCHEDULE_SHOW,
	     &cut__v1__schedule_request__descriptor,
	     &cut__v1__schedule_status__descriptor},
	    {&cut__v1__schedule__descriptor, CUTPROTO_METHOD_SCHEDULE_PAUSE,
	     &cut__v1__schedule_request__descriptor,
	     &cut__v1__schedule_status__descriptor},
	    {&cut__v1__schedule__descriptor, CUTPROTO_METHOD_SCHEDULE_RESUME,
	     &cut__v1__schedule_request__descriptor,
	     &cut__v1__schedule_status__descriptor},
	};
	size_t found = 0;

	cr_assert_str_eq(cut__v1__snapshots__descriptor.name,
	                 "cut.v1.Snapshots");
	cr_assert_eq(cut__v1__snapshots__descriptor.n_methods, 8);
	cr_assert_eq(cut__v1__schedule__descriptor.n_methods, 3);
	cr_assert_str_eq(cut__v1__node__descriptor.name, "cut.v1.Node");
	cr_assert_eq(cut__v1__node__descriptor.n_methods, 1);
	for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
		const ProtobufCServiceDescriptor *svc = want[w].svc;
		for (unsigned m = 0; m < svc->n_methods; m++) {
			char path[128];
			snprintf(path, sizeof(path), "/%s/%s", svc->name,
			         svc->methods[m].name);
			if (strcmp(path, want[w].path) != 0)
				continue;
			found++;
			cr_assert_eq(svc->methods[m].input, want[w].in, "%s",
			             path);
			cr_assert_eq(svc->methods[m].output, want[w].out, "%s",
			             path);
		}
	}
	cr_assert_eq(found, 12);
}

Test(control, status_reply_round_trip)
{
	Cut__V1__PeerStatus peer = CUT__V1__PEER_STATUS__INIT;
	Cut__V1__PeerStatus *peerp = &peer;
	Cut__V1__ChannelStatus chan = CUT__V1__CHANNEL_STATUS__INIT;
	Cut__V1__ChannelStatus *chanp = &chan;
	char *ids[] = {"p0-3"};
	Cut__V1__StatusReply st = CUT__V1__STATUS_REPLY__INIT;
	size_t len;
	uint8_t *buf;

	peer.node = "p1";
	peer.connected = 1;
	peer.last_seen_ms = 1700000000001ULL;
	chan.src = "p0";
	chan.dst = "p1";
	chan.sent = 100;
	chan.acked = 97;
	chan.queued = 4;
	st.node = "p0";
	st.cluster = "bank";
	st.version = "0.1.0";
	st.uptime_ms = 60000;
	st.app_connected = 1;
	st.n_peers = 1;
	st.peers = &peerp;
	st.n_channels = 1;
	st.channels = &chanp;
	st.n_snapshots_in_progress = 1;
	st.snapshots_in_progress = ids;
	st.bad_frames = 3;
	st.bad_frames_peer = 1;
	st.bad_frames_app = 0;
	st.bad_frames_control = 2;
	buf = pack(&st.base, &len);

	Cut__V1__StatusReply *s = cut__v1__status_reply__unpack(NULL, len, buf);
	cr_assert_not_null(s);
	cr_assert_str_eq(s->cluster, "bank");
	cr_assert(s->app_connected);
	cr_assert_eq(s->n_peers, 1);
	cr_assert(s->peers[0]->connected);
	cr_assert_eq(s->peers[0]->last_seen_ms, 1700000000001ULL);
	cr_assert_eq(s->channels[0]->sent, 100);
	cr_assert_eq(s->channels[0]->acked, 97);
	cr_assert_eq(s->channels[0]->delivered, 0);
	cr_assert_eq(s->channels[0]->queued, 4);
	cr_assert_str_eq(s->snapshots_in_progress[0], "p0-3");
	cr_assert_eq(s->bad_frames, 3);
	cr_assert_eq(s->bad_frames_control, 2);
	cut__v1__status_reply__free_unpacked(s, NULL);
	free(buf);
}

/* Bytes that are no protobuf at all: every frame type refuses them. */
Test(garbage, refused_by_every_frame_type)
{
	static const struct {
		const char *what;
		size_t len;
		const uint8_t *data;
	} bad[] = {
	    {"over-long varint tag", 11,
	     (const uint8_t *)"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"},
	    {"length past the end", 5,
	     (const uint8_t *)"\x0a\x7f"
	                      "abc"},
	    {"group wire type", 2, (const uint8_t *)"\x0b\x0c"},
	    {"field number 0", 2, (const uint8_t *)"\x00\x01"},
	    {"text", 11, (const uint8_t *)"hello world"},
	};
	const ProtobufCMessageDescriptor *types[] = {
	    &cut__v1__peer_batch__descriptor,
	    &cut__v1__app_batch__descriptor,
	    &cut__v1__rpc_request__descriptor,
	    &cut__v1__rpc_reply__descriptor,
	};

	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
			cr_assert_null(protobuf_c_message_unpack(types[t], NULL,
			                                         bad[b].len,
			                                         bad[b].data),
			               "%s as %s", bad[b].what, types[t]->name);
}

/* Encodings protobuf-c accepts but that are not what they seem:
 * cutproto_unpack() refuses them, and still accepts unknown fields. */
Test(strict, unpack)
{
	static const uint8_t nul_in_string[] = {0x0a, 3, 'a', 0, 'b'};
	static const uint8_t twice[] = {0x0a, 1, 'x', 0x0a, 1, 'y'};
	static const uint8_t two_kinds[] = {0x1a, 2,    0x08, 5,    0x22,
	                                    4,    0x08, 1,    0x10, 1};
	static const uint8_t long_varint[] = {0x08, 0x85, 0x00};
	static const uint8_t unknown_field[] = {0x08, 5, 0x78, 1};
	ProtobufCMessage *m;

	/* "a\0b" would read as "a". */
	m = protobuf_c_message_unpack(&cut__v1__delete_request__descriptor,
	                              NULL, sizeof(nul_in_string),
	                              nul_in_string);
	cr_assert_not_null(m);
	cr_assert_str_eq(((Cut__V1__DeleteRequest *)m)->snapshot_id, "a");
	protobuf_c_message_free_unpacked(m, NULL);
	cr_assert_null(cutproto_unpack(&cut__v1__delete_request__descriptor,
	                               sizeof(nul_in_string), nul_in_string));

	/* A non-repeated field twice: the last would win. */
	cr_assert_null(cutproto_unpack(&cut__v1__delete_request__descriptor,
	                               sizeof(twice), twice));

	/* An item that is both an ack and a hello. */
	m = protobuf_c_message_unpack(&cut__v1__peer_item__descriptor, NULL,
	                              sizeof(two_kinds), two_kinds);
	cr_assert_not_null(m);
	protobuf_c_message_free_unpacked(m, NULL);
	cr_assert_null(cutproto_unpack(&cut__v1__peer_item__descriptor,
	                               sizeof(two_kinds), two_kinds));

	cr_assert_null(cutproto_unpack(&cut__v1__peer_ack__descriptor,
	                               sizeof(long_varint), long_varint));

	m = cutproto_unpack(&cut__v1__peer_ack__descriptor,
	                    sizeof(unknown_field), unknown_field);
	cr_assert_not_null(m, "a field from a newer version is kept");
	cr_assert_eq(((Cut__V1__PeerAck *)m)->upto, 5);
	protobuf_c_message_free_unpacked(m, NULL);
}
