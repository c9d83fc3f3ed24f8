/*
 * gen_corpus.c - writes the seed corpus of the fuzz harnesses: a few
 * valid inputs for each, in the format its harness reads.
 *
 *   gen_corpus DIR    writes DIR/<harness>/<name>
 *
 * The frames are those the daemon's peers, its application and cutctl
 * send to node p0 of the harnesses' cluster (tests/fuzz/fuzz_coord.h):
 * snapshot p0:1 in progress there, three messages from p1 delivered on
 * p1's link items 1 to 3, so p1's next item is P1_SEQ + 1.
 * The output is checked in as tests/fuzz/corpus; run this again after a
 * protocol change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cutproto.h"

/* An input being built: frames, each a 2-byte little-endian length. */
struct input {
	uint8_t buf[8192];
	size_t len;
};

static const char *outdir;

/* Where the frames of fuzz_daemon_mix come from (its first byte); the
 * other harnesses take no such byte (NONE). */
enum { FROM_PEER, FROM_APP, FROM_CONTROL, NONE };

/* Frames written by the helpers below go to a mix input instead when
 * mix_sel is not NONE.  In mix mode every input of the single-socket
 * harnesses is written for fuzz_daemon_mix too, its frames marked cur_sel
 * (the socket of the harness being written). */
static int mix_sel = NONE, mix_mode, cur_sel = NONE;

static void
add_frame(struct input *in, const ProtobufCMessage *m)
{
	int sel = mix_sel != NONE ? mix_sel : mix_mode ? cur_sel : NONE;
	size_t n = protobuf_c_message_get_packed_size(m) + (sel != NONE);

	if (in->len + 2 + n > sizeof(in->buf))
		abort();
	in->buf[in->len++] = (uint8_t)(n & 0xff);
	in->buf[in->len++] = (uint8_t)(n >> 8);
	if (sel != NONE)
		in->buf[in->len++] = (uint8_t)sel;
	in->len += protobuf_c_message_pack(m, in->buf + in->len);
}

/* fuzz_daemon_mix only: a frame that moves the clock on by tens of 10 ms
 * (its selector byte is 3). */
static void
clock_frame(struct input *in, unsigned tens)
{
	if (in->len + 5 > sizeof(in->buf))
		abort();
	in->buf[in->len++] = 3;
	in->buf[in->len++] = 0;
	in->buf[in->len++] = 3;
	in->buf[in->len++] = (uint8_t)(tens & 0xff);
	in->buf[in->len++] = (uint8_t)(tens >> 8);
}

static void
write_file(const char *harness, const char *name, const void *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, harness);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, harness, name);
	if ((f = fopen(path, "wb")) == NULL || fwrite(data, 1, len, f) != len ||
	    fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void
write_input(const char *harness, const char *name, struct input *in)
{
	char mixed[128];

	if (mix_mode) {
		snprintf(mixed, sizeof(mixed), "%s-%s", harness + 5, name);
		write_file("fuzz_daemon_mix", mixed, in->buf, in->len);
	} else {
		write_file(harness, name, in->buf, in->len);
	}
	in->len = 0;
}

/* Link items p1 has sent p0 before an input, and application messages. */
#define P1_SEQ 3

/* Peer frames: a batch from p1 (epoch 2000) to p0 holding items. */
static const char *peer_from = "p1";

static void
peer_frame(struct input *in, Cut__V1__PeerItem **items, size_t n,
           const char *cluster)
{
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT;

	b.cluster = (char *)cluster;
	b.from = (char *)peer_from;
	b.to = "p0";
	b.has_epoch = b.has_to_epoch = 1;
	b.epoch = 2000;
	b.to_epoch = 1000;
	b.items = items;
	b.n_items = n;
	add_frame(in, &b.base);
}

static void
peer_corpus(void)
{
	struct input in = {0};
	Cut__V1__PeerItem it[6], *items[6];
	Cut__V1__PeerHello h = CUT__V1__PEER_HELLO__INIT;
	Cut__V1__PeerAck a = CUT__V1__PEER_ACK__INIT;
	Cut__V1__PeerData dt = CUT__V1__PEER_DATA__INIT,
	                  d2 = CUT__V1__PEER_DATA__INIT;
	Cut__V1__PeerMarker mk = CUT__V1__PEER_MARKER__INIT;
	Cut__V1__PeerPart pt = CUT__V1__PEER_PART__INIT;
	Cut__V1__PartChannel pc[2] = {CUT__V1__PART_CHANNEL__INIT,
	                              CUT__V1__PART_CHANNEL__INIT},
	                     *pcs[2] = {&pc[0], &pc[1]};
	Cut__V1__PeerPartMessages pm = CUT__V1__PEER_PART_MESSAGES__INIT;
	Cut__V1__ChannelMessage cm = CUT__V1__CHANNEL_MESSAGE__INIT, *cms[1];
	Cut__V1__PeerAbort ab = CUT__V1__PEER_ABORT__INIT;

	for (int i = 0; i < 6; i++) {
		cut__v1__peer_item__init(&it[i]);
		items[i] = &it[i];
	}
	h.next_expected = 1;
	h.epoch = 2000;
	it[0].item_case = CUT__V1__PEER_ITEM__ITEM_HELLO;
	it[0].hello = &h;
	a.upto = 0;
	a.has_taken = 1;
	a.taken = 0;
	it[1].item_case = CUT__V1__PEER_ITEM__ITEM_ACK;
	it[1].ack = &a;
	dt.seq = P1_SEQ + 1;
	dt.app_seq = P1_SEQ + 1;
	dt.content_type = "application/json";
	dt.payload.data = (uint8_t *)"{\"amount\": 2}";
	dt.payload.len = 13;
	it[2].item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
	it[2].data = &dt;
	mk.seq = P1_SEQ + 2;
	mk.snapshot_id = "p1:1";
	mk.count = P1_SEQ + 1;
	mk.has_timeout_ms = 1;
	mk.timeout_ms = 5000;
	it[3].item_case = CUT__V1__PEER_ITEM__ITEM_MARKER;
	it[3].marker = &mk;
	peer_frame(&in, items, 4, "fuzz");
	write_input("fuzz_peer_batch", "hello-data-marker", &in);

	/* Out of order: the second item is held until the first comes, in
	 * the next batch. */
	d2 = dt;
	d2.seq = P1_SEQ + 2;
	d2.app_seq = P1_SEQ + 2;
	it[0].item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
	it[0].data = &d2;
	peer_frame(&in, items, 1, "fuzz");
	it[0].data = &dt;
	peer_frame(&in, items, 1, "fuzz");
	write_input("fuzz_peer_batch", "held-then-released", &in);

	/* p1's part of p0:1, its recorded messages, and a marker for p0:1
	 * on p1 -> p0. */
	mk.seq = P1_SEQ + 1;
	mk.snapshot_id = "p0:1";
	mk.count = 3;
	it[0].item_case = CUT__V1__PEER_ITEM__ITEM_MARKER;
	it[0].marker = &mk;
	pt.seq = P1_SEQ + 2;
	pt.snapshot_id = "p0:1";
	pt.node = "p1";
	pt.content_type = "application/json";
	pt.state.data = (uint8_t *)"{\"balance\": 14}";
	pt.state.len = 15;
	pc[0].src = "p0";
	pc[0].m = 0;
	pc[0].n = 1;
	pc[0].count = 1;
	pc[0].first_seq = pc[0].last_seq = 1;
	pc[0].consecutive = 1;
	pc[1].src = "p2";
	pt.channels = pcs;
	pt.n_channels = 2;
	it[1].item_case = CUT__V1__PEER_ITEM__ITEM_PART;
	it[1].part = &pt;
	cm.seq = 1;
	cm.content_type = "application/json";
	cm.payload.data = (uint8_t *)"{\"amount\": 3}";
	cm.payload.len = 13;
	cms[0] = &cm;
	pm.seq = P1_SEQ + 3;
	pm.snapshot_id = "p0:1";
	pm.src = "p0";
	pm.messages = cms;
	pm.n_messages = 1;
	pm.final = 1;
	it[2].item_case = CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES;
	it[2].part_messages = &pm;
	ab.seq = P1_SEQ + 4;
	ab.snapshot_id = "p0:1";
	ab.reason = "p1: the application did not answer";
	ab.has_root_cause = 1;
	ab.root_cause = 1;
	it[3].item_case = CUT__V1__PEER_ITEM__ITEM_ABORT;
	it[3].abort = &ab;
	peer_frame(&in, items, 3, "fuzz");
	write_input("fuzz_peer_batch", "part-of-p0-1", &in);
	ab.seq = P1_SEQ + 1;
	peer_frame(&in, items + 3, 1, "fuzz");
	write_input("fuzz_peer_batch", "abort-reason", &in);
	peer_frame(&in, items, 1, "another");
	write_input("fuzz_peer_batch", "other-cluster", &in);
}

static void
app_frame(struct input *in, Cut__V1__AppItem **items, size_t n)
{
	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;

	b.items = items;
	b.n_items = n;
	add_frame(in, &b.base);
}

static void
app_corpus(void)
{
	struct input in = {0};
	Cut__V1__AppItem it[4], *items[4];
	Cut__V1__AppHello h = CUT__V1__APP_HELLO__INIT;
	Cut__V1__AppTaken tk = CUT__V1__APP_TAKEN__INIT;
	Cut__V1__AppSend sd = CUT__V1__APP_SEND__INIT;
	Cut__V1__AppStateReply sr = CUT__V1__APP_STATE_REPLY__INIT;

	for (int i = 0; i < 4; i++) {
		cut__v1__app_item__init(&it[i]);
		items[i] = &it[i];
	}
	h.node = "p0";
	h.version = CUTPROTO_APP_VERSION;
	it[0].item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	it[0].hello = &h;
	tk.handed = 2;
	it[1].item_case = CUT__V1__APP_ITEM__ITEM_TAKEN;
	it[1].taken = &tk;
	sd.to = "p1";
	sd.content_type = "application/json";
	sd.payload.data = (uint8_t *)"{\"amount\": 5}";
	sd.payload.len = 13;
	it[2].item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	it[2].send = &sd;
	sr.snapshot_id = "p0:1";
	sr.content_type = "application/json";
	sr.state.data = (uint8_t *)"{\"balance\": 18}";
	sr.state.len = 15;
	sr.handed = 2;
	it[3].item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	it[3].state_reply = &sr;

	/* Hello first; the deliveries go out between frames. */
	app_frame(&in, items, 1);
	app_frame(&in, items + 1, 3);
	write_input("fuzz_app_batch", "hello-taken-send-reply", &in);
	app_frame(&in, items, 1);
	sr.handed = 0;
	app_frame(&in, items + 3, 1);
	write_input("fuzz_app_batch", "reply-nothing-taken", &in);
	app_frame(&in, items + 2, 1);
	write_input("fuzz_app_batch", "send-before-hello", &in);
	app_frame(&in, items, 1);
	sd.to = "p9";
	app_frame(&in, items + 2, 1);
	write_input("fuzz_app_batch", "send-unknown-node", &in);
}

static void
rpc(struct input *in, uint64_t id, const char *method,
    const ProtobufCMessage *body)
{
	Cut__V1__RpcRequest r = CUT__V1__RPC_REQUEST__INIT;
	uint8_t buf[512];

	r.request_id = id;
	r.method = (char *)method;
	r.body.data = buf;
	r.body.len = body ? protobuf_c_message_pack(body, buf) : 0;
	add_frame(in, &r.base);
}

static void
control_corpus(void)
{
	struct input in = {0};
	Cut__V1__StartRequest st = CUT__V1__START_REQUEST__INIT;
	Cut__V1__GetRequest gt = CUT__V1__GET_REQUEST__INIT;
	Cut__V1__ListRequest ls = CUT__V1__LIST_REQUEST__INIT;
	Cut__V1__WaitRequest wt = CUT__V1__WAIT_REQUEST__INIT;
	Cut__V1__DeleteRequest dl = CUT__V1__DELETE_REQUEST__INIT;

	st.has_timeout_ms = 1;
	st.timeout_ms = 1000;
	rpc(&in, 1, CUTPROTO_METHOD_START, &st.base);
	rpc(&in, 1, CUTPROTO_METHOD_START, &st.base); /* resent */
	write_input("fuzz_control", "start-resent", &in);
	gt.snapshot_id = "p0:1";
	gt.has_include_states = gt.has_include_messages = 1;
	gt.include_states = gt.include_messages = 1;
	rpc(&in, 2, CUTPROTO_METHOD_GET, &gt.base);
	write_input("fuzz_control", "get", &in);
	ls.has_limit = 1;
	ls.limit = 5;
	rpc(&in, 3, CUTPROTO_METHOD_LIST, &ls.base);
	write_input("fuzz_control", "list", &in);
	wt.snapshot_id = "p0:1";
	wt.timeout_ms = 0;
	rpc(&in, 4, CUTPROTO_METHOD_WAIT, &wt.base);
	rpc(&in, 4, CUTPROTO_METHOD_WAIT, &wt.base);
	write_input("fuzz_control", "wait-resent", &in);
	dl.snapshot_id = "p0:1";
	rpc(&in, 5, CUTPROTO_METHOD_DELETE, &dl.base);
	write_input("fuzz_control", "delete-running", &in);
	rpc(&in, 6, CUTPROTO_METHOD_STATUS, NULL);
	write_input("fuzz_control", "status", &in);
	rpc(&in, 7, "/cut.v1.Snapshots/Nothing", NULL);
	write_input("fuzz_control", "unknown-method", &in);
}

static void
config_corpus(void)
{
	static const char full[] =
	    "[cluster]\nname = bank\ndeadline_ms = 10000\n"
	    "run_dir = /run/cutd\nstate_dir = /var/lib/cutd\n"
	    "max_message = 1048576\nwindow = 1048576\nmessage_cost = 1024\n"
	    "app_window = 1048576\ncut = aligned\n"
	    "[node p0]\npeer = tcp://10.0.0.10:7100\n"
	    "app = ipc:///run/cutd/p0.app\ncontrol = ipc:///run/cutd/p0.ctl\n"
	    "database = /var/lib/cutd/p0.db\n"
	    "[node p1]\npeer = tcp://[::1]:7101\n"
	    "[node p2]\npeer = tls+tcp://host.example:7102\n"
	    "[channels]\nchannel = p0 -> p1\nchannel = p1 -> p2\n"
	    "channel = p2 -> p0\n";
	static const char small[] =
	    "; one node\n[cluster]\nname = solo\n[node a]\n"
	    "  peer = tcp://127.0.0.1:7000 ; inline comment\n";
	static const char bad[] =
	    "[cluster]\nname = two words\n[node p0]\npeer = udp://x\n"
	    "[node p0]\n[channels]\nchannel = p0 -> p9\nbroken line\n";

	write_file("fuzz_config", "full.ini", full, sizeof(full) - 1);
	write_file("fuzz_config", "small.ini", small, sizeof(small) - 1);
	write_file("fuzz_config", "bad.ini", bad, sizeof(bad) - 1);
}

static void
engine_corpus(void)
{
	/* Byte 0: bit 0 counted, bit 1 unaligned; byte 1: n_in | n_out << 4;
	 * then 4-byte events: kind % 10, id, channel, argument. */
	static const uint8_t aligned[] = {
	    1, 0x22, 0, 0, 0, 0, /* initiate p0:1 */
	    1, 0,    0, 0,       /* sent on out 0 */
	    2, 0,    0, 0,       /* delivered on in 0 */
	    4, 0,    0, 0,       /* state recorded */
	    2, 0,    1, 0,       /* delivered on in 1 */
	    3, 0,    0, 1,       /* marker on in 0, n = 1 */
	    3, 0,    1, 0,       /* marker on in 1, n = 0 */
	    7, 0,    0, 0,       /* forget */
	};
	static const uint8_t unaligned[] = {
	    3, 0x12, 2, 0,    0, 0, /* delivered on in 0 */
	    2, 0,    0, 0,          /* delivered on in 0 */
	    3, 2,    1, 2,          /* marker p1:1 on in 1, n = 2 */
	    5, 2,    0, 0x01,       /* state recorded, taken 1 on in 0 */
	    2, 0,    1, 0,          /* delivered on in 1 */
	    2, 0,    1, 0,          /* delivered on in 1 */
	    3, 2,    0, 2,          /* marker p1:1 on in 0, n = 2 */
	    6, 2,    0, 0,          /* abort (refused: complete) */
	};
	static const uint8_t classic[] = {
	    0, 0x11, 3, 1, 0, 0, /* marker p0:2 on in 0 */
	    4, 1,    0, 0,       /* state recorded */
	    0, 3,    0, 0,       /* initiate p1:2 */
	    6, 3,    0, 0,       /* abort it */
	    8, 0,    0, 0,       /* reset in 0 */
	    9, 0,    0, 0,       /* reset out 0 */
	};

	write_file("fuzz_engine", "aligned", aligned, sizeof(aligned));
	write_file("fuzz_engine", "unaligned", unaligned, sizeof(unaligned));
	write_file("fuzz_engine", "classic", classic, sizeof(classic));
}

/* fuzz_daemon_mix: the three sockets together. */
static void
mix_corpus(void)
{
	struct input in = {0};
	Cut__V1__PeerItem pi = CUT__V1__PEER_ITEM__INIT, *pis[1] = {&pi};
	Cut__V1__PeerMarker mk = CUT__V1__PEER_MARKER__INIT;
	Cut__V1__AppItem ai = CUT__V1__APP_ITEM__INIT, *ais[1] = {&ai};
	Cut__V1__AppHello h = CUT__V1__APP_HELLO__INIT;
	Cut__V1__AppStateReply sr = CUT__V1__APP_STATE_REPLY__INIT;
	Cut__V1__WaitRequest wt = CUT__V1__WAIT_REQUEST__INIT;
	Cut__V1__GetRequest gt = CUT__V1__GET_REQUEST__INIT;

	mk.has_timeout_ms = 1;
	mk.timeout_ms = 5000;
	pi.item_case = CUT__V1__PEER_ITEM__ITEM_MARKER;
	pi.marker = &mk;
	h.node = "p0";
	h.version = CUTPROTO_APP_VERSION;
	sr.content_type = "application/json";
	sr.state.data = (uint8_t *)"{\"balance\": 18}";
	sr.state.len = 15;
	sr.handed = 3;

	/* p1 starts p1:1: p0 records (the application answers), closes
	 * both channels on their markers and sends its part to p1. */
	mix_sel = FROM_PEER;
	mk.snapshot_id = "p1:1";
	mk.seq = P1_SEQ + 1;
	mk.count = P1_SEQ; /* p1 sent its three messages first */
	peer_from = "p1";
	peer_frame(&in, pis, 1, "fuzz");
	mix_sel = FROM_APP;
	ai.item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	ai.hello = &h;
	app_frame(&in, ais, 1);
	sr.snapshot_id = "p1:1";
	ai.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	ai.state_reply = &sr;
	app_frame(&in, ais, 1);
	mix_sel = FROM_PEER;
	mk.seq = 1;
	mk.count = 0;
	peer_from = "p2";
	peer_frame(&in, pis, 1, "fuzz");
	write_input("fuzz_daemon_mix", "marker-reply-part", &in);

	/* A Wait on p0:1, which p0 initiated: its state, both markers,
	 * then a Get. */
	mix_sel = FROM_CONTROL;
	wt.snapshot_id = "p0:1";
	wt.timeout_ms = 60000;
	rpc(&in, 9, CUTPROTO_METHOD_WAIT, &wt.base);
	mix_sel = FROM_APP;
	ai.item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	ai.hello = &h; /* a oneof: the state reply took its place */
	app_frame(&in, ais, 1);
	sr.snapshot_id = "p0:1";
	sr.handed = 1;
	ai.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	ai.state_reply = &sr;
	app_frame(&in, ais, 1);
	mix_sel = FROM_PEER;
	mk.snapshot_id = "p0:1";
	mk.seq = P1_SEQ + 1;
	mk.count = P1_SEQ;
	peer_from = "p1";
	peer_frame(&in, pis, 1, "fuzz");
	mk.seq = 1;
	mk.count = 0;
	peer_from = "p2";
	peer_frame(&in, pis, 1, "fuzz");
	mix_sel = FROM_CONTROL;
	gt.snapshot_id = "p0:1";
	rpc(&in, 10, CUTPROTO_METHOD_GET, &gt.base);
	write_input("fuzz_daemon_mix", "wait-own-snapshot", &in);

	/* A Wait on p0:1, then the clock passes its deadline (10 s): the
	 * Wait is answered with its abort. */
	mix_sel = FROM_CONTROL;
	rpc(&in, 11, CUTPROTO_METHOD_WAIT, &wt.base);
	clock_frame(&in, 1100);
	write_input("fuzz_daemon_mix", "wait-deadline", &in);
	mix_sel = NONE;
	peer_from = "p1";
}

/* Frames as the daemon sends them to libcut: one AppBatch, no prefix. */
static void
libcut_corpus(void)
{
	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppItem it[4], *items[4];
	Cut__V1__AppHelloReply hr = CUT__V1__APP_HELLO_REPLY__INIT;
	Cut__V1__AppCredit cr = CUT__V1__APP_CREDIT__INIT;
	Cut__V1__AppStateRequest rq = CUT__V1__APP_STATE_REQUEST__INIT;
	Cut__V1__AppDeliver dl = CUT__V1__APP_DELIVER__INIT;
	Cut__V1__AppError er = CUT__V1__APP_ERROR__INIT;
	char *peers[2] = {"p1", "p2"};
	uint8_t buf[1024];
	size_t n;

	for (int i = 0; i < 4; i++) {
		cut__v1__app_item__init(&it[i]);
		items[i] = &it[i];
	}
	b.items = items;
	hr.node = "p0";
	hr.version = CUTPROTO_APP_VERSION;
	hr.cluster = "fuzz";
	hr.peers = peers;
	hr.n_peers = 2;
	hr.max_message_size = 4096;
	hr.has_window_bytes = hr.has_message_cost = 1;
	hr.window_bytes = 65536;
	hr.message_cost = 16;
	it[0].item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	it[0].hello_reply = &hr;
	b.n_items = 1;
	n = cut__v1__app_batch__pack(&b, buf);
	write_file("fuzz_libcut_frame", "hello-reply", buf, n);

	cr.peer = 0;
	cr.limit = 65536;
	it[0].item_case = CUT__V1__APP_ITEM__ITEM_CREDIT;
	it[0].credit = &cr;
	rq.snapshot_id = "p0:1";
	rq.has_overtake = 1;
	rq.overtake = 1;
	it[1].item_case = CUT__V1__APP_ITEM__ITEM_STATE_REQUEST;
	it[1].state_request = &rq;
	dl.from = "p1";
	dl.content_type = "application/json";
	dl.payload.data = (uint8_t *)"{\"amount\": 2}";
	dl.payload.len = 13;
	dl.has_seq = 1;
	dl.seq = 7;
	it[2].item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
	it[2].deliver = &dl;
	er.code = CUT__V1__APP_ERROR__CODE__BACKPRESSURE;
	er.message = "send beyond the channel's window";
	it[3].item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
	it[3].error = &er;
	b.n_items = 4;
	n = cut__v1__app_batch__pack(&b, buf);
	write_file("fuzz_libcut_frame", "credit-request-deliver-error", buf, n);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 64;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) != 0 && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	for (mix_mode = 0; mix_mode < 2; mix_mode++) {
		cur_sel = FROM_PEER;
		peer_corpus();
		cur_sel = FROM_APP;
		app_corpus();
		cur_sel = FROM_CONTROL;
		control_corpus();
	}
	mix_mode = 0;
	cur_sel = NONE;
	config_corpus();
	engine_corpus();
	libcut_corpus();
	mix_corpus();
	return 0;
}
