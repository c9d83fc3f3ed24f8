/*
 * test_appcore.c - libcut's protocol core (libclient/core/appcore.c) on
 * its own: what a lost connection forgets and what the resume sends
 * again; how a frame from the daemon is taken in (the hello's answer,
 * the items taken on arrival, what a queued item is); the restore's step.
 * The down stream's queue (appqueue.c): what a frame brings, what a
 * restore and a lost connection drop, the order items are taken in, and
 * that every frame goes back to its owner once.  The core is also driven
 * by test_libcut (through libcut's shell) and by every cutlab sim run;
 * these pin the rules both shells rely on.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appcore.h"
#include "appqueue.h"
#include "cut/cut.h"

/* The daemon's AppCredit for channel 0 (p1): up to limit bytes. */
static void
credit(struct appcore *k, uint64_t limit)
{
	Cut__V1__AppCredit c = CUT__V1__APP_CREDIT__INIT;

	c.peer = 0;
	c.limit = limit;
	appcore_credit(k, &c);
}

/* A hello reply from the daemon that serves p0, with one channel to p1
 * on which it holds messages up to held[0]. */
static void
reply_to(Cut__V1__AppHelloReply *r, char **peers, uint64_t *held)
{
	cut__v1__app_hello_reply__init(r);
	r->node = "p0";
	r->version = CUTPROTO_APP_VERSION;
	r->cluster = "test";
	r->n_peers = 1;
	r->peers = peers;
	r->max_message_size = 65536;
	r->has_window_bytes = 1;
	r->window_bytes = 65536;
	r->has_message_cost = 1;
	r->message_cost = 16;
	r->n_sent = 1;
	r->sent = held;
}

/* k opened by the daemon of reply_to(), holding nothing yet, with a
 * window's credit. */
static void
opened(struct appcore *k)
{
	Cut__V1__AppHelloReply r;
	char *peers[] = {"p1"};
	uint64_t held[] = {0};

	appcore_init(k);
	reply_to(&r, peers, held);
	cr_assert_eq(appcore_open(k, &r, NULL), 0);
	credit(k, 65536);
}

/* Numbers and queues a message of text to p1; returns its seq. */
static uint64_t
send_text(struct appcore *k, const char *text)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppSend snd = CUT__V1__APP_SEND__INIT;

	snd.to = "p1";
	snd.payload.data = (uint8_t *)text;
	snd.payload.len = strlen(text);
	it.item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	it.send = &snd;
	cr_assert(appcore_room(k, 0, appcore_charge(k, strlen(text))));
	cr_assert_eq(appcore_send(k, 0, &it, 0), 0);
	return snd.seq;
}

/* The seqs of the AppSends in the out buffer, in order; their count. */
static size_t
queued_seqs(const struct appcore *k, uint64_t *seqs, size_t max)
{
	size_t n = 0, len = appcore_frame_len(k, SIZE_MAX);
	Cut__V1__AppBatch *b;

	if (len == 0)
		return 0;
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, k->out);
	cr_assert_not_null(b, "the out buffer does not decode");
	for (size_t i = 0; i < b->n_items && n < max; i++)
		if (b->items[i]->item_case == CUT__V1__APP_ITEM__ITEM_SEND)
			seqs[n++] = b->items[i]->send->seq;
	cut__v1__app_batch__free_unpacked(b, NULL);
	return n;
}

/* A lost connection forgets what it had queued (it would go on the next
 * connection before its hello) and keeps every message until taken. */
Test(appcore, forget_drops_the_out_buffer_and_keeps_the_messages)
{
	struct appcore k;
	uint64_t token, bytes;

	opened(&k);
	send_text(&k, "{\"a\": 1}");
	cr_assert_eq(appcore_sync(&k, &token), 0);
	cr_assert_gt(appcore_frame_len(&k, SIZE_MAX), 0);
	appcore_forget(&k);
	cr_assert_eq(appcore_frame_len(&k, SIZE_MAX), 0, "queued items kept");
	cr_assert_eq(appcore_kept(&k, 0, &bytes), 1);
	cr_assert_eq(bytes, strlen("{\"a\": 1}") + 16);
	appcore_fini(&k);
}

/* The resume sends again exactly what the daemon lacks, in order. */
Test(appcore, resume_sends_again_what_the_daemon_lacks)
{
	struct appcore k;
	Cut__V1__AppHelloReply r;
	char *peers[] = {"p1"};
	uint64_t sent[] = {1}, seqs[8];
	size_t n;

	opened(&k);
	cr_assert_eq(send_text(&k, "{\"a\": 1}"), 1);
	cr_assert_eq(send_text(&k, "{\"a\": 2}"), 2);
	cr_assert_eq(send_text(&k, "{\"a\": 3}"), 3);
	appcore_forget(&k);
	reply_to(&r, peers, sent); /* the daemon holds message 1 */
	cr_assert_eq(appcore_resumed(&k, &r), 0);
	credit(&k, 65536);
	n = queued_seqs(&k, seqs, 8);
	cr_assert_eq(n, 2);
	cr_assert_eq(seqs[0], 2);
	cr_assert_eq(seqs[1], 3);
	appcore_fini(&k);
}

/* A resumed connection's credit counts from 0: the new daemon's limits
 * know nothing of the old connection's counts, so until it grants credit
 * there is no room (mutation 47 kept the old counts, and the application
 * could send past the new daemon's window). */
Test(appcore, resumed_credit_counts_from_zero)
{
	struct appcore k;
	Cut__V1__AppHelloReply r;
	char *peers[] = {"p1"};
	uint64_t sent[] = {0};

	opened(&k);
	send_text(&k, "{\"a\": 1}");
	send_text(&k, "{\"a\": 2}");
	cr_assert(appcore_room(&k, 0, appcore_charge(&k, 8)));
	appcore_forget(&k);
	reply_to(&r, peers, sent);
	cr_assert_eq(appcore_resumed(&k, &r), 0);
	cr_assert(!appcore_room(&k, 0, appcore_charge(&k, 8)),
	          "room from the old connection's credit");
	credit(&k, 65536);
	cr_assert(appcore_room(&k, 0, appcore_charge(&k, 8)));
	appcore_fini(&k);
}

/* ---- Taking the down stream in ---- */

/* Packs one AppItem (as appcore_frame_item() gives it) into buf; returns
 * its length. */
static size_t
pack_item(const Cut__V1__AppItem *it, uint8_t *buf, size_t cap)
{
	size_t n = protobuf_c_message_get_packed_size(&it->base);

	cr_assert_leq(n, cap);
	return protobuf_c_message_pack(&it->base, buf);
}

/* Packs a frame (an AppBatch) of n items into buf; returns its length. */
static size_t
pack_frame(Cut__V1__AppItem **items, size_t n, uint8_t *buf, size_t cap)
{
	Cut__V1__AppBatch b = CUT__V1__APP_BATCH__INIT;
	size_t len;

	b.n_items = n;
	b.items = items;
	len = protobuf_c_message_get_packed_size(&b.base);
	cr_assert_leq(len, cap);
	return protobuf_c_message_pack(&b.base, buf);
}

/* The items of the out buffer: their kinds, in order; their count. */
static size_t
queued_kinds(const struct appcore *k, int *kinds, size_t max)
{
	size_t n = 0, len = appcore_frame_len(k, SIZE_MAX);
	Cut__V1__AppBatch *b;

	if (len == 0)
		return 0;
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, k->out);
	cr_assert_not_null(b, "the out buffer does not decode");
	for (size_t i = 0; i < b->n_items && n < max; i++)
		kinds[n++] = (int)b->items[i]->item_case;
	cut__v1__app_batch__free_unpacked(b, NULL);
	return n;
}

/* A state request for id; overtake for the unaligned cut. */
static void
request(Cut__V1__AppItem *it, Cut__V1__AppStateRequest *rq, const char *id,
        int overtake)
{
	cut__v1__app_item__init(it);
	cut__v1__app_state_request__init(rq);
	rq->snapshot_id = (char *)id;
	rq->has_overtake = 1;
	rq->overtake = overtake != 0;
	it->item_case = CUT__V1__APP_ITEM__ITEM_STATE_REQUEST;
	it->state_request = rq;
}

/* A delivery of text from node from, the seq'th. */
static void
delivery(Cut__V1__AppItem *it, Cut__V1__AppDeliver *d, const char *from,
         const char *text, uint64_t seq)
{
	cut__v1__app_item__init(it);
	cut__v1__app_deliver__init(d);
	d->from = (char *)from;
	d->payload.data = (uint8_t *)text;
	d->payload.len = strlen(text);
	d->has_seq = 1;
	d->seq = seq;
	it->item_case = CUT__V1__APP_ITEM__ITEM_DELIVER;
	it->deliver = d;
}

/* Credit is applied as it comes: a sender without room has room after
 * it, and is told to wake; credit that grows nothing says so. */
Test(appcore, urgent_credit_raises_the_window)
{
	struct appcore k;
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppCredit cr = CUT__V1__APP_CREDIT__INIT;
	struct appcore_event ev;
	char big[40000];
	uint8_t buf[64];
	size_t n;

	opened(&k); /* a window's credit: 65536 */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	send_text(&k, big);
	cr_assert_not(appcore_room(&k, 0, appcore_charge(&k, sizeof(big))));
	cr.peer = 0;
	cr.limit = 65536 + 50000;
	it.item_case = CUT__V1__APP_ITEM__ITEM_CREDIT;
	it.credit = &cr;
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_CREDIT);
	cr_assert_eq(ev.what, APPCORE_CREDIT);
	cr_assert(ev.grew, "a larger limit must wake the senders");
	cr_assert_eq(k.ch[0].limit, 65536 + 50000);
	cr_assert(appcore_room(&k, 0, appcore_charge(&k, sizeof(big))));
	/* The same credit again: nothing grew. */
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_CREDIT);
	cr_assert_not(ev.grew);
	appcore_fini(&k);
}

/* A sync's answer is taken on arrival: cut_flush() may return. */
Test(appcore, urgent_synced_answers_the_sync)
{
	struct appcore k;
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppSync sy = CUT__V1__APP_SYNC__INIT;
	struct appcore_event ev;
	uint64_t token;
	uint8_t buf[32];
	size_t n;

	opened(&k);
	cr_assert_eq(appcore_sync(&k, &token), 0);
	cr_assert_not(appcore_is_synced(&k, token));
	sy.token = token;
	it.item_case = CUT__V1__APP_ITEM__ITEM_SYNCED;
	it.synced = &sy;
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_SYNCED);
	cr_assert(appcore_is_synced(&k, token));
	appcore_fini(&k);
}

/* An unaligned request goes ahead, with its id; an aligned one and a
 * delivery wait in the queue; one with a bad id, or an item that does
 * not decode, is bad. */
Test(appcore, urgent_overtake_tells_its_id_and_the_rest_waits)
{
	struct appcore k;
	Cut__V1__AppItem it;
	Cut__V1__AppStateRequest rq;
	Cut__V1__AppDeliver d;
	struct appcore_event ev;
	uint8_t buf[256];
	size_t n;

	opened(&k);
	request(&it, &rq, "p0-17", 1);
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_OVERTAKE);
	cr_assert_str_eq(ev.id, "p0-17");

	request(&it, &rq, "p0-18", 0);
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_LATER);

	delivery(&it, &d, "p1", "{\"a\": 1}", 1);
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_LATER);
	cr_assert_eq(k.handed, 0, "a delivery is not handed on arrival");

	request(&it, &rq, "bad\nid", 1);
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_BAD);
	request(&it, &rq, "", 1);
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n, &ev), APPCORE_BAD);

	/* A state request's kind, cut short: does not decode. */
	request(&it, &rq, "p0-19", 1);
	n = pack_item(&it, buf, sizeof(buf));
	cr_assert_eq(appcore_urgent(&k, buf, n - 3, &ev), APPCORE_BAD);
	appcore_fini(&k);
}

/* A frame's framing is checked whole; its items count from its last
 * restore, which drops what came before it. */
Test(appcore, frame_start_finds_the_last_restore)
{
	Cut__V1__AppItem a, b, r1, r2, *items[4];
	Cut__V1__AppDeliver da, db;
	Cut__V1__AppRestore rs1 = CUT__V1__APP_RESTORE__INIT,
	                    rs2 = CUT__V1__APP_RESTORE__INIT;
	uint8_t frame[512];
	const uint8_t *p;
	size_t len, start, off, n;

	delivery(&a, &da, "p1", "{\"a\": 1}", 1);
	delivery(&b, &db, "p1", "{\"a\": 2}", 2);
	items[0] = &a;
	items[1] = &b;
	len = pack_frame(items, 2, frame, sizeof(frame));
	cr_assert_eq(appcore_frame_start(frame, len, &start), 0);
	cr_assert_eq(start, 0);

	cut__v1__app_item__init(&r1);
	cut__v1__app_item__init(&r2);
	rs1.snapshot_id = "p0-1";
	rs2.snapshot_id = "p0-2";
	r1.item_case = r2.item_case = CUT__V1__APP_ITEM__ITEM_RESTORE;
	r1.restore = &rs1;
	r2.restore = &rs2;
	items[0] = &a;
	items[1] = &r1;
	items[2] = &r2;
	items[3] = &b;
	len = pack_frame(items, 4, frame, sizeof(frame));
	cr_assert_eq(appcore_frame_start(frame, len, &start), 1);
	off = start;
	cr_assert_eq(appcore_frame_item(frame, len, &off, &p, &n), 1);
	cr_assert_eq(p[0], APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_RESTORE));
	{
		Cut__V1__AppItem *it = (Cut__V1__AppItem *)cutproto_unpack(
		    &cut__v1__app_item__descriptor, n, p);
		cr_assert_not_null(it);
		cr_assert_str_eq(it->restore->snapshot_id, "p0-2",
		                 "the items count from the last restore");
		cut__v1__app_item__free_unpacked(it, NULL);
	}

	/* Cut short in its last item: none of it is taken. */
	cr_assert_eq(appcore_frame_start(frame, len - 2, &start), -1);
}

/* What a queued item is, checked: deliveries, aligned requests,
 * restores and refusals go on; bad ones are refused with the reason. */
Test(appcore, judge_classifies_and_checks_queued_items)
{
	Cut__V1__AppItem it;
	Cut__V1__AppDeliver d;
	Cut__V1__AppStateRequest rq;
	Cut__V1__AppRestore rs = CUT__V1__APP_RESTORE__INIT;
	Cut__V1__AppRestoreChannel ch = CUT__V1__APP_RESTORE_CHANNEL__INIT,
	                           *chs[1] = {&ch};
	Cut__V1__AppError e = CUT__V1__APP_ERROR__INIT;
	Cut__V1__AppHelloReply r;
	const char *why;

	delivery(&it, &d, "p1", "{\"a\": 1}", 1);
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_DELIVER);
	d.from = "";
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_BAD_ITEM);
	cr_assert_str_eq(why, "a bad item");
	d.from = "p1";
	d.content_type = "text/\x01";
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_BAD_ITEM);

	request(&it, &rq, "p0-3", 0);
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_STATE);
	request(&it, &rq, "p0-3", 1); /* queued ahead on arrival */
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_SKIP);
	request(&it, &rq, "", 0);
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_BAD_ITEM);

	cut__v1__app_item__init(&it);
	rs.snapshot_id = "p0-4";
	ch.node = "p1";
	rs.n_channels = 1;
	rs.channels = chs;
	it.item_case = CUT__V1__APP_ITEM__ITEM_RESTORE;
	it.restore = &rs;
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_RESTORE);
	ch.node = "";
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_BAD_ITEM);
	cr_assert_str_eq(why, "a bad restore");

	cut__v1__app_item__init(&it);
	e.code = CUT__V1__APP_ERROR__CODE__SEQ_GAP;
	e.message = "gap";
	it.item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
	it.error = &e;
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_REFUSED);

	/* A hello reply in mid-stream is bad. */
	cut__v1__app_item__init(&it);
	cut__v1__app_hello_reply__init(&r);
	it.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	it.hello_reply = &r;
	cr_assert_eq(appcore_judge(&it, &why), APPCORE_BAD_ITEM);
}

/* The first hello's answer: the reply opens the handle, even behind an
 * error meant for an application before us; a refusal is told with its
 * code and sentence; a frame without either is not the answer. */
Test(appcore, hello_answer_opens_or_tells_the_refusal)
{
	struct appcore k;
	Cut__V1__AppItem rep = CUT__V1__APP_ITEM__INIT,
	                 err = CUT__V1__APP_ITEM__INIT, dl, *items[2];
	Cut__V1__AppHelloReply r;
	Cut__V1__AppError e = CUT__V1__APP_ERROR__INIT;
	Cut__V1__AppDeliver d;
	struct appcore_answer a;
	char *peers[] = {"p1"};
	uint64_t held[] = {4};
	uint8_t frame[512];
	size_t len;

	appcore_init(&k);
	delivery(&dl, &d, "p1", "{\"a\": 1}", 1);
	items[0] = &dl;
	len = pack_frame(items, 1, frame, sizeof(frame));
	cr_assert_eq(appcore_hello_answer(&k, frame, len, "p0", &a),
	             APPCORE_ANSWER_NONE);
	cr_assert_eq(appcore_hello_answer(&k, frame, len - 1, "p0", &a),
	             APPCORE_ANSWER_BAD);

	/* Not a hello's refusal: an error for an application before us. */
	e.code = CUT__V1__APP_ERROR__CODE__SEQ_GAP;
	e.message = "gap";
	err.item_case = CUT__V1__APP_ITEM__ITEM_ERROR;
	err.error = &e;
	reply_to(&r, peers, held);
	rep.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	rep.hello_reply = &r;
	items[0] = &err;
	items[1] = &rep;
	len = pack_frame(items, 2, frame, sizeof(frame));
	cr_assert_eq(appcore_hello_answer(&k, frame, len, "p0", &a),
	             APPCORE_ANSWER_OPENED);
	cr_assert_eq(a.rv, 0);
	cr_assert(k.opened);
	cr_assert_eq(k.ch[0].seq, 4, "numbers on from where the daemon is");
	appcore_fini(&k);

	/* Another node's daemon. */
	appcore_init(&k);
	cr_assert_eq(appcore_hello_answer(&k, frame, len, "p7", &a),
	             APPCORE_ANSWER_OPENED);
	cr_assert_eq(a.rv, CUT_ENOENT);
	appcore_fini(&k);

	appcore_init(&k);
	e.code = CUT__V1__APP_ERROR__CODE__WRONG_NODE;
	e.message = "this daemon serves another node";
	items[0] = &err;
	len = pack_frame(items, 1, frame, sizeof(frame));
	cr_assert_eq(appcore_hello_answer(&k, frame, len, "p0", &a),
	             APPCORE_ANSWER_REFUSED);
	cr_assert_eq(a.code, CUT__V1__APP_ERROR__CODE__WRONG_NODE);
	cr_assert_str_eq(a.message, "this daemon serves another node");
	cr_assert_not(k.opened);
	appcore_fini(&k);
}

/* A resuming hello's answer: the same node and peers resume, and the
 * kept messages the daemon lacks are queued; a reply with other peers is
 * refused and queues nothing. */
Test(appcore, hello_answer_resumes_only_the_same_peers)
{
	struct appcore k;
	Cut__V1__AppItem rep = CUT__V1__APP_ITEM__INIT, *items[1] = {&rep};
	Cut__V1__AppHelloReply r;
	struct appcore_answer a;
	char *peers[] = {"p1"}, *others[] = {"p2"};
	uint64_t sent[] = {1}, seqs[4];
	uint8_t frame[512];
	size_t len;

	opened(&k);
	send_text(&k, "{\"a\": 1}");
	send_text(&k, "{\"a\": 2}");
	appcore_forget(&k);
	reply_to(&r, others, sent);
	rep.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	rep.hello_reply = &r;
	len = pack_frame(items, 1, frame, sizeof(frame));
	cr_assert_eq(appcore_hello_answer(&k, frame, len, NULL, &a),
	             APPCORE_ANSWER_RESUMED);
	cr_assert_eq(a.rv, CUT_EPROTO);
	cr_assert_eq(appcore_frame_len(&k, SIZE_MAX), 0);

	reply_to(&r, peers, sent);
	len = pack_frame(items, 1, frame, sizeof(frame));
	cr_assert_eq(appcore_hello_answer(&k, frame, len, NULL, &a),
	             APPCORE_ANSWER_RESUMED);
	cr_assert_eq(a.rv, 0);
	cr_assert_eq(queued_seqs(&k, seqs, 4), 1);
	cr_assert_eq(seqs[0], 2);
	appcore_fini(&k);
}

/* The restore's step takes the snapshot's positions, and answers
 * AppRestored unless the link is lost (the daemon sends it again). */
Test(appcore, restore_step_answers_unless_lost)
{
	struct appcore k;
	struct appcore_pos pos[] = {{"p1", 7, 3}};
	uint64_t bytes;
	int kinds[4];

	opened(&k);
	send_text(&k, "{\"a\": 1}");
	appcore_frame_taken(&k, appcore_frame_len(&k, SIZE_MAX));
	cr_assert_eq(appcore_restore_step(&k, "p0-5", pos, 1, 0, NULL, 1), 0);
	cr_assert_eq(k.ch[0].seq, 7);
	cr_assert_eq(appcore_kept(&k, 0, &bytes), 0, "kept messages forgotten");
	cr_assert_eq(queued_kinds(&k, kinds, 4), 0, "answered on a lost link");

	cr_assert_eq(appcore_restore_step(&k, "p0-5", pos, 1, 0, NULL, 0), 0);
	cr_assert_eq(queued_kinds(&k, kinds, 4), 1);
	cr_assert_eq(kinds[0], CUT__V1__APP_ITEM__ITEM_RESTORED);
	cr_assert_eq(k.src[0].taken, 3, "resumes from the restored in_taken");
	appcore_fini(&k);
}

/* AppRestorable says whether there is a callback. */
Test(appcore, restorable_is_queued)
{
	struct appcore k;
	Cut__V1__AppBatch *b;
	size_t len;

	opened(&k);
	cr_assert_eq(appcore_restorable(&k, 1), 0);
	len = appcore_frame_len(&k, SIZE_MAX);
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, k.out);
	cr_assert_not_null(b);
	cr_assert_eq(b->n_items, 1);
	cr_assert_eq(b->items[0]->item_case,
	             CUT__V1__APP_ITEM__ITEM_RESTORABLE);
	cr_assert(b->items[0]->restorable->yes);
	cut__v1__app_batch__free_unpacked(b, NULL);
	appcore_fini(&k);
}

/* Frames up go within what the daemon accepts, and never past the cap. */
Test(appcore, frame_max_follows_the_message_limit)
{
	struct appcore k;

	opened(&k); /* max_message 65536 */
	cr_assert_eq(appcore_frame_max(&k), 65536 + (32u << 10));
	k.max_message = 64u << 20;
	cr_assert_eq(appcore_frame_max(&k), APPCORE_FRAME_MAX);
	appcore_fini(&k);
}

/* Snapshot ids from the daemon: printable, not empty, not too long. */
Test(appcore, id_ok)
{
	char long_id[CUT_SNAPSHOT_ID_MAX + 1];

	cr_assert(appcore_id_ok("p0-1"));
	cr_assert_not(appcore_id_ok(""));
	cr_assert_not(appcore_id_ok(NULL));
	cr_assert_not(appcore_id_ok("a\tb"));
	memset(long_id, 'a', CUT_SNAPSHOT_ID_MAX - 1);
	long_id[CUT_SNAPSHOT_ID_MAX - 1] = '\0';
	cr_assert(appcore_id_ok(long_id));
	long_id[CUT_SNAPSHOT_ID_MAX - 1] = 'a';
	long_id[CUT_SNAPSHOT_ID_MAX] = '\0';
	cr_assert_not(appcore_id_ok(long_id));
}

/* The resume's position on incoming channel from p1 (AppResume), and
 * the numbering it names (0: none). */
static uint64_t
resume_in(const struct appcore *k, uint64_t *ret_numbering)
{
	Cut__V1__AppBatch *b;
	uint8_t *buf;
	size_t len;
	uint64_t taken = 0;

	cr_assert_eq(appcore_hello(k, NULL, 1, &buf, &len), 0);
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, buf);
	cr_assert_not_null(b);
	*ret_numbering = 0;
	for (size_t i = 0; i < b->items[0]->hello->n_resume; i++) {
		const Cut__V1__AppResume *r = b->items[0]->hello->resume[i];
		if (strcmp(r->node, "p1") == 0 && r->has_in_taken) {
			taken = r->in_taken;
			*ret_numbering =
			    r->has_in_numbering ? r->in_numbering : 0;
		}
	}
	cut__v1__app_batch__free_unpacked(b, NULL);
	free(buf);
	return taken;
}

/* A delivery that names a new numbering sets the channel's position
 * (lower than the old numbering's), and every resume names it. */
Test(appcore, renumbered_delivery_sets_the_position)
{
	struct appcore k;
	Cut__V1__AppHelloReply r;
	char *peers[] = {"p1"};
	uint64_t held[] = {0}, numbering;

	opened(&k);
	appcore_handed(&k, "p1", 1, 0, 10, 0);
	appcore_handed(&k, "p1", 2, 0, 10, 0);
	appcore_handed(&k, "p1", 3, 0, 10, 0);
	cr_assert_eq(resume_in(&k, &numbering), 3);
	cr_assert_eq(numbering, 0);
	appcore_handed(&k, "p1", 1, 42, 10, 0);
	cr_assert_eq(resume_in(&k, &numbering), 1, "set, not raised");
	cr_assert_eq(numbering, 42);
	appcore_handed(&k, "p1", 2, 0, 10, 0);
	cr_assert_eq(resume_in(&k, &numbering), 2);
	cr_assert_eq(numbering, 42);
	appcore_forget(&k);
	reply_to(&r, peers, held);
	cr_assert_eq(appcore_resumed(&k, &r), 0);
	cr_assert_eq(resume_in(&k, &numbering), 2);
	cr_assert_eq(numbering, 42, "named until another begins");
	appcore_fini(&k);
}

/* ---- The down stream's queue (appqueue.c) ---- */

/* A frame as a shell owns it: the queue hands it back to owned_free()
 * when it is done, which counts the calls. */
struct owned {
	uint8_t buf[1024];
	size_t len;
	int freed;
};

static void
owned_free(void *owner)
{
	((struct owned *)owner)->freed++;
}

/* Packs items into f and takes it in; returns what it brought. */
static struct appq_news
ingest(struct appq *q, struct appcore *k, struct owned *f,
       Cut__V1__AppItem **items, size_t n)
{
	struct appq_news news;

	f->len = pack_frame(items, n, f->buf, sizeof(f->buf));
	f->freed = 0;
	cr_assert_eq(appq_ingest(q, k, f, f->buf, f->len, &news), 0);
	return news;
}

/* A restore item for snapshot id, with one channel to p1. */
static void
restore_item(Cut__V1__AppItem *it, Cut__V1__AppRestore *rs,
             Cut__V1__AppRestoreChannel *ch, Cut__V1__AppRestoreChannel **chs,
             const char *id)
{
	cut__v1__app_item__init(it);
	cut__v1__app_restore__init(rs);
	cut__v1__app_restore_channel__init(ch);
	ch->node = "p1";
	chs[0] = ch;
	rs->snapshot_id = (char *)id;
	rs->n_channels = 1;
	rs->channels = chs;
	it->item_case = CUT__V1__APP_ITEM__ITEM_RESTORE;
	it->restore = rs;
}

/* Takes the next item, which must be of kind what. */
static void
take_is(struct appq *q, struct appcore *k, enum appq_kind what,
        struct appq_item *qi)
{
	cr_assert_eq(appq_take(q, k, 0, qi), what, "took %d, not %d",
	             (int)qi->what, (int)what);
}

/* A restore drops every frame queued before it and every unaligned
 * request, in the queue and before it in its own frame; what follows it
 * in its frame is taken after it. */
Test(appq, restore_drops_queued_frames_and_overtakes)
{
	struct appcore k;
	struct appq q;
	struct owned f1, f2, f3;
	Cut__V1__AppItem d1, d2, d3, rq, r, *items[3];
	Cut__V1__AppDeliver dd1, dd2, dd3;
	Cut__V1__AppStateRequest srq;
	Cut__V1__AppRestore rs;
	Cut__V1__AppRestoreChannel ch, *chs[1];
	struct appq_news news;
	struct appq_item qi;

	opened(&k);
	appq_init(&q, owned_free);
	delivery(&d1, &dd1, "p1", "{\"a\": 1}", 1);
	items[0] = &d1;
	cr_assert(ingest(&q, &k, &f1, items, 1).queued);
	request(&rq, &srq, "p0-1", 1);
	items[0] = &rq;
	news = ingest(&q, &k, &f2, items, 1);
	cr_assert_eq(news.overtakes, 1);
	cr_assert_not(news.queued);
	cr_assert_eq(f2.freed, 1, "a frame of urgent items alone is freed");

	delivery(&d2, &dd2, "p1", "{\"a\": 2}", 2);
	restore_item(&r, &rs, &ch, chs, "p0-0");
	delivery(&d3, &dd3, "p1", "{\"a\": 3}", 1);
	items[0] = &d2;
	items[1] = &r;
	items[2] = &d3;
	news = ingest(&q, &k, &f3, items, 3);
	cr_assert(news.restore);
	cr_assert(news.queued);
	cr_assert_eq(f1.freed, 1, "the frame before the restore is dropped");
	cr_assert_eq(f3.freed, 0);

	take_is(&q, &k, APPQ_RESTORE, &qi);
	cr_assert_str_eq(qi.it->restore->snapshot_id, "p0-0");
	take_is(&q, &k, APPQ_DELIVER, &qi);
	cr_assert_eq(qi.it->deliver->seq, 1, "the delivery after the restore");
	cr_assert_eq(f3.freed, 1);
	take_is(&q, &k, APPQ_NONE, &qi);
	cr_assert_eq(k.handed, 1, "only what was taken is handed");
	appq_fini(&q);
	cr_assert_eq(f1.freed + f2.freed + f3.freed, 3);
	appcore_fini(&k);
}

/* An unaligned request goes ahead of the deliveries queued before it,
 * but not ahead of a restore queued: it is about the restored state. */
Test(appq, overtake_before_queued_items_but_after_a_pending_restore)
{
	struct appcore k;
	struct appq q;
	struct owned f1, f2, f3, f4;
	Cut__V1__AppItem d1, d2, rq, rq2, r, *items[1];
	Cut__V1__AppDeliver dd1, dd2;
	Cut__V1__AppStateRequest srq, srq2;
	Cut__V1__AppRestore rs;
	Cut__V1__AppRestoreChannel ch, *chs[1];
	struct appq_item qi;

	opened(&k);
	appq_init(&q, owned_free);
	delivery(&d1, &dd1, "p1", "{\"a\": 1}", 1);
	items[0] = &d1;
	ingest(&q, &k, &f1, items, 1);
	request(&rq, &srq, "p0-1", 1);
	items[0] = &rq;
	ingest(&q, &k, &f2, items, 1);
	take_is(&q, &k, APPQ_STATE, &qi);
	cr_assert_str_eq(qi.id, "p0-1");
	cr_assert(qi.unaligned);
	take_is(&q, &k, APPQ_DELIVER, &qi);
	take_is(&q, &k, APPQ_NONE, &qi);

	restore_item(&r, &rs, &ch, chs, "p0-0");
	items[0] = &r;
	ingest(&q, &k, &f3, items, 1);
	request(&rq2, &srq2, "p0-2", 1);
	delivery(&d2, &dd2, "p1", "{\"a\": 2}", 1);
	{
		Cut__V1__AppItem *two[2] = {&rq2, &d2};
		ingest(&q, &k, &f4, two, 2);
	}
	take_is(&q, &k, APPQ_RESTORE, &qi);
	take_is(&q, &k, APPQ_STATE, &qi);
	cr_assert_str_eq(qi.id, "p0-2", "answered once the restore is taken");
	cr_assert(qi.unaligned);
	/* The request's own place in its frame is passed over. */
	take_is(&q, &k, APPQ_SKIP, &qi);
	take_is(&q, &k, APPQ_DELIVER, &qi);
	take_is(&q, &k, APPQ_NONE, &qi);
	appq_fini(&q);
	appcore_fini(&k);
}

/* A frame that does not decode is dropped whole and told once, after the
 * unaligned requests and before the queued items; a bad item of an
 * urgent kind is counted and refused in its turn. */
Test(appq, bad_frame_told_once_in_order)
{
	struct appcore k;
	struct appq q;
	struct owned f1, f2, f3;
	Cut__V1__AppItem d1, rq, bad, *items[1];
	Cut__V1__AppDeliver dd1;
	Cut__V1__AppStateRequest srq, sbad;
	struct appq_news news;
	struct appq_item qi;

	opened(&k);
	appq_init(&q, owned_free);
	delivery(&d1, &dd1, "p1", "{\"a\": 1}", 1);
	items[0] = &d1;
	ingest(&q, &k, &f1, items, 1);
	f2.len = pack_frame(items, 1, f2.buf, sizeof(f2.buf));
	f2.freed = 0;
	cr_assert_eq(appq_ingest(&q, &k, &f2, f2.buf, f2.len - 1, &news), 0);
	cr_assert(news.bad_frame);
	cr_assert_not(news.queued);
	cr_assert_eq(f2.freed, 1);
	request(&rq, &srq, "p0-1", 1);
	items[0] = &rq;
	ingest(&q, &k, &f3, items, 1);

	take_is(&q, &k, APPQ_STATE, &qi);
	take_is(&q, &k, APPQ_BAD_FRAME, &qi);
	take_is(&q, &k, APPQ_DELIVER, &qi);
	take_is(&q, &k, APPQ_NONE, &qi);
	cr_assert_not(appq_ready(&q));

	request(&bad, &sbad, "bad\nid", 1);
	items[0] = &bad;
	news = ingest(&q, &k, &f1, items, 1);
	cr_assert_eq(news.bad_items, 1);
	cr_assert(news.queued);
	take_is(&q, &k, APPQ_BAD_ITEM, &qi);
	cr_assert_str_eq(qi.why, "a bad item");
	take_is(&q, &k, APPQ_NONE, &qi);
	appq_fini(&q);
	appcore_fini(&k);
}

/* Unaligned requests wait up to APPQ_MAX_OVERTAKES; one past it is
 * dropped (the daemon's deadline aborts its snapshot), the rest are
 * taken in order. */
Test(appq, overtakes_are_bounded)
{
	struct appcore k;
	struct appq q;
	struct owned f;
	Cut__V1__AppItem rq, *items[1] = {&rq};
	Cut__V1__AppStateRequest srq;
	struct appq_news news;
	struct appq_item qi;
	char id[32];

	opened(&k);
	appq_init(&q, owned_free);
	for (int i = 0; i <= APPQ_MAX_OVERTAKES; i++) {
		snprintf(id, sizeof(id), "p0-%d", i);
		request(&rq, &srq, id, 1);
		news = ingest(&q, &k, &f, items, 1);
		cr_assert_eq(news.overtakes, i < APPQ_MAX_OVERTAKES);
		cr_assert_eq(news.overtakes_lost, i == APPQ_MAX_OVERTAKES);
	}
	for (int i = 0; i < APPQ_MAX_OVERTAKES; i++) {
		snprintf(id, sizeof(id), "p0-%d", i);
		take_is(&q, &k, APPQ_STATE, &qi);
		cr_assert_str_eq(qi.id, id);
	}
	take_is(&q, &k, APPQ_NONE, &qi);
	appq_fini(&q);
	appcore_fini(&k);
}

/* Every frame is given back to the free callback exactly once: at once
 * when nothing in it waits, when its last item is taken, or when a
 * restore, a lost connection or the end drops it. */
Test(appq, frames_freed_exactly_once)
{
	struct appcore k;
	struct appq q;
	struct owned f[40];
	Cut__V1__AppItem d, c, r, *items[2];
	Cut__V1__AppDeliver dd;
	Cut__V1__AppCredit cr = CUT__V1__APP_CREDIT__INIT;
	Cut__V1__AppRestore rs;
	Cut__V1__AppRestoreChannel ch, *chs[1];
	struct appq_item qi;
	size_t i;

	opened(&k);
	appq_init(&q, owned_free);
	delivery(&d, &dd, "p1", "{\"a\": 1}", 1);
	cut__v1__app_item__init(&c);
	c.item_case = CUT__V1__APP_ITEM__ITEM_CREDIT;
	c.credit = &cr;
	restore_item(&r, &rs, &ch, chs, "p0-0");
	/* More frames than the ring starts with, some credit alone. */
	for (i = 0; i < 30; i++) {
		items[0] = i % 3 == 0 ? &c : &d;
		items[1] = &c;
		ingest(&q, &k, &f[i], items, 2);
	}
	for (i = 0; i < 5; i++) /* taken, a frame at a time */
		while (f[i].freed == 0)
			cr_assert_neq(appq_take(&q, &k, 0, &qi), APPQ_NONE);
	items[0] = &r;
	ingest(&q, &k, &f[30], items, 1); /* drops the rest */
	items[0] = &d;
	ingest(&q, &k, &f[31], items, 1);
	appq_forget(&q, &k);
	ingest(&q, &k, &f[32], items, 1);
	appq_fini(&q);
	for (i = 0; i < 33; i++)
		cr_assert_eq(f[i].freed, 1, "frame %zu freed %d times", i,
		             f[i].freed);
	appq_fini(&q); /* twice: nothing more */
	cr_assert_eq(f[32].freed, 1);
	appcore_fini(&k);
}

/* A delivery counts as handed as it is taken, noting its source; the
 * report is due at once when an eighth of a window is unreported. */
Test(appq, take_hands_deliveries_and_says_when_to_report)
{
	struct appcore k;
	struct appq q;
	struct owned f;
	Cut__V1__AppItem d, *items[1] = {&d};
	Cut__V1__AppDeliver dd;
	struct appq_item qi;
	char big[9000];

	opened(&k); /* window 65536: an eighth is 8192 */
	appq_init(&q, owned_free);
	delivery(&d, &dd, "p1", "{\"a\": 1}", 4);
	ingest(&q, &k, &f, items, 1);
	cr_assert_eq(appq_take(&q, &k, 100, &qi), APPQ_DELIVER);
	cr_assert_not(qi.report);
	cr_assert_eq(k.handed, 1);
	cr_assert_eq(k.taken_at, 100 + APPCORE_TAKEN_DELAY_MS);
	cr_assert_eq(k.nsrc, 1);
	cr_assert_eq(k.src[0].taken, 4);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	delivery(&d, &dd, "p1", big, 5);
	{
		/* Too large for struct owned: the body is elsewhere. */
		uint8_t *buf = malloc(sizeof(big) + 64);
		struct appq_news news;
		size_t len = pack_frame(items, 1, buf, sizeof(big) + 64);
		f.freed = 0;
		cr_assert_eq(appq_ingest(&q, &k, &f, buf, len, &news), 0);
		cr_assert_eq(appq_take(&q, &k, 101, &qi), APPQ_DELIVER);
		cr_assert(qi.report, "an eighth of a window unreported");
		cr_assert_eq(qi.it->deliver->payload.len, sizeof(big) - 1);
		cr_assert_eq(f.freed, 1);
		free(buf);
	}
	appq_fini(&q);
	appcore_fini(&k);
}

/* A lost connection forgets both streams' queues, and a restore pending
 * with them (the daemon sends it again after the hello). */
Test(appq, forget_drops_both_ways)
{
	struct appcore k;
	struct appq q;
	struct owned f1, f2;
	Cut__V1__AppItem r, rq, *items[1];
	Cut__V1__AppRestore rs;
	Cut__V1__AppRestoreChannel ch, *chs[1];
	Cut__V1__AppStateRequest srq;
	struct appq_item qi;

	opened(&k);
	appq_init(&q, owned_free);
	send_text(&k, "{\"a\": 1}");
	restore_item(&r, &rs, &ch, chs, "p0-0");
	items[0] = &r;
	ingest(&q, &k, &f1, items, 1);
	request(&rq, &srq, "p0-1", 1);
	items[0] = &rq;
	ingest(&q, &k, &f2, items, 1);
	cr_assert(q.restore_pending);
	appq_forget(&q, &k);
	cr_assert_eq(f1.freed, 1);
	cr_assert_not(q.restore_pending);
	cr_assert_not(appq_ready(&q));
	cr_assert_eq(appcore_frame_len(&k, SIZE_MAX), 0, "out buffer kept");
	take_is(&q, &k, APPQ_NONE, &qi);
	appq_fini(&q);
	appcore_fini(&k);
}

/* The answer to a resuming hello: the daemon is told of the restore
 * callback behind what the resume sends again; frames without the
 * answer leave the wait going. */
Test(appcore, hello_frame_tells_a_resumed_daemon_of_the_callback)
{
	struct appcore k;
	Cut__V1__AppItem rep = CUT__V1__APP_ITEM__INIT, dl, *items[1];
	Cut__V1__AppHelloReply r;
	Cut__V1__AppDeliver d;
	struct appcore_answer a;
	char *peers[] = {"p1"};
	uint64_t sent[] = {0};
	uint8_t frame[512];
	size_t len;
	int kinds[4];

	opened(&k);
	send_text(&k, "{\"a\": 1}");
	appcore_forget(&k);
	delivery(&dl, &d, "p1", "{\"a\": 1}", 1);
	items[0] = &dl;
	len = pack_frame(items, 1, frame, sizeof(frame));
	cr_assert_eq(appcore_hello_frame(&k, frame, len, NULL, 1, &a), 0);
	cr_assert_eq(a.what, APPCORE_ANSWER_NONE);
	cr_assert_eq(appcore_hello_frame(&k, frame, len - 1, NULL, 1, &a), 0);
	cr_assert_eq(a.what, APPCORE_ANSWER_BAD);

	reply_to(&r, peers, sent);
	rep.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	rep.hello_reply = &r;
	items[0] = &rep;
	len = pack_frame(items, 1, frame, sizeof(frame));
	cr_assert_eq(appcore_hello_frame(&k, frame, len, NULL, 1, &a), 1);
	cr_assert_eq(a.what, APPCORE_ANSWER_RESUMED);
	cr_assert_eq(a.rv, 0);
	cr_assert_eq(queued_kinds(&k, kinds, 4), 2);
	cr_assert_eq(kinds[0], CUT__V1__APP_ITEM__ITEM_SEND);
	cr_assert_eq(kinds[1], CUT__V1__APP_ITEM__ITEM_RESTORABLE);

	/* Without a callback, nothing more is said. */
	appcore_forget(&k);
	cr_assert_eq(appcore_hello_frame(&k, frame, len, NULL, 0, &a), 1);
	cr_assert_eq(queued_kinds(&k, kinds, 4), 1);
	cr_assert_eq(kinds[0], CUT__V1__APP_ITEM__ITEM_SEND);
	appcore_fini(&k);
}
