/*
 * test_appcore.c - libcut's protocol core (libclient/core/appcore.c) on
 * its own: what a lost connection forgets and what the resume sends
 * again.  The core is also driven by test_libcut (through libcut's shell)
 * and by every cutlab sim run; these pin the rules a shell relies on.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "appcore.h"
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
