/*
 * Tests of the reliable link (daemon/core/link.c): sequence numbers, cumulative
 * acks, resend after a rewind, duplicates and held gaps; items written in
 * place, peeking, the bytes held, and a long run against a model.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "link.h"

static struct link *
mk(size_t window, size_t hold)
{
	struct link *l = NULL;

	cr_assert_eq(link_new(window, hold, &l), 0);
	return l;
}

static void
push_str(struct link *l, const char *s)
{
	cr_assert_eq(link_push(l, s, strlen(s) + 1), 0);
}

static uint64_t
next_seq(struct link *l, const char *want)
{
	const void *data;
	size_t len;
	uint64_t seq;

	cr_assert_eq(link_next(l, &data, &len, &seq), 1);
	cr_assert_str_eq(data, want);
	cr_assert_eq(len, strlen(want) + 1);
	return seq;
}

Test(link, numbers_from_one_and_acks_free_a_prefix)
{
	struct link *l = mk(8, 0);
	const void *data;
	size_t len;
	uint64_t seq;

	cr_assert_eq(link_next_seq(l), 1);
	push_str(l, "a");
	push_str(l, "b");
	push_str(l, "c");
	cr_assert_eq(link_next_seq(l), 4);
	cr_assert_eq(next_seq(l, "a"), 1);
	cr_assert_eq(next_seq(l, "b"), 2);
	cr_assert_eq(link_unsent(l), 1);
	cr_assert_eq(link_ack(l, 2), 0);
	cr_assert_eq(link_acked(l), 2);
	cr_assert_eq(link_unacked(l), 1);
	cr_assert_eq(next_seq(l, "c"), 3);
	cr_assert_eq(link_next(l, &data, &len, &seq), 0);
	cr_assert_eq(link_ack(l, 1), 0, "an old ack is harmless");
	cr_assert_eq(link_acked(l), 2);
	cr_assert_eq(link_ack(l, 4), E_INVAL, "beyond what was sent");
	cr_assert_eq(link_ack(l, 3), 0);
	cr_assert_eq(link_unacked(l), 0);
	link_free(l);
}

Test(link, rewind_resends_every_unacknowledged_item)
{
	struct link *l = mk(8, 0);

	push_str(l, "a");
	push_str(l, "b");
	push_str(l, "c");
	next_seq(l, "a");
	next_seq(l, "b");
	next_seq(l, "c");
	cr_assert_eq(link_ack(l, 1), 0);
	link_rewind(l);
	cr_assert_eq(link_unsent(l), 2);
	cr_assert_eq(next_seq(l, "b"), 2);
	cr_assert_eq(next_seq(l, "c"), 3);
	link_free(l);
}

Test(link, window_full)
{
	struct link *l = mk(2, 0);

	push_str(l, "a");
	push_str(l, "b");
	cr_assert_eq(link_push(l, "c", 2), E_FULL);
	cr_assert_eq(link_ack(l, 1), 0);
	push_str(l, "c");
	cr_assert_eq(link_next_seq(l), 4);
	link_free(l);
}

Test(link, receiver_drops_duplicates_and_holds_gaps)
{
	struct link *l = mk(1, 4);
	void *data;
	size_t len;

	cr_assert_eq(link_accept(l, 1, "1", 2), LINK_DELIVER);
	cr_assert_eq(link_accept(l, 1, "1", 2), LINK_DUP);
	cr_assert_eq(link_accept(l, 4, "4", 2), LINK_HELD);
	cr_assert_eq(link_accept(l, 3, "3", 2), LINK_HELD);
	cr_assert_eq(link_accept(l, 4, "4", 2), LINK_DUP);
	cr_assert_eq(link_release(l, &data, &len), 0, "2 is still missing");
	cr_assert_eq(link_delivered(l), 1);
	cr_assert_eq(link_accept(l, 2, "2", 2), LINK_DELIVER);
	cr_assert_eq(link_release(l, &data, &len), 1);
	cr_assert_str_eq(data, "3");
	free(data);
	cr_assert_eq(link_release(l, &data, &len), 1);
	cr_assert_str_eq(data, "4");
	free(data);
	cr_assert_eq(link_release(l, &data, &len), 0);
	cr_assert_eq(link_delivered(l), 4);
	link_free(l);
}

Test(link, early_items_beyond_the_hold_window_are_dropped)
{
	struct link *l = mk(1, 2);
	void *data;
	size_t len;

	cr_assert_eq(link_accept(l, 3, "3", 2), LINK_HELD);
	cr_assert_eq(link_accept(l, 4, "4", 2), LINK_DROPPED);
	cr_assert_eq(link_accept(l, 2, "2", 2), LINK_HELD);
	cr_assert_eq(link_delivered(l), 0);
	cr_assert_eq(link_accept(l, 1, "1", 2), LINK_DELIVER);
	cr_assert_eq(link_release(l, &data, &len), 1);
	cr_assert_str_eq(data, "2");
	free(data);
	cr_assert_eq(link_release(l, &data, &len), 1);
	free(data);
	cr_assert_eq(link_delivered(l), 3);
	cr_assert_eq(link_accept(l, 4, "4", 2), LINK_DELIVER, "resent");
	link_free(l);
}

/* An item written in place, and one copied: both are handed out with
 * their bytes, and peeking does not hand anything out. */
Test(link, push_space_peek_and_bytes)
{
	struct link *l = mk(3, 0);
	const void *data;
	size_t len;
	char *p;

	cr_assert_eq(link_unacked_bytes(l), 0);
	cr_assert_eq(link_peek(l, 0, &data, &len), 0);
	p = link_push_space(l, 3);
	cr_assert_not_null(p);
	memcpy(p, "ab", 3);
	push_str(l, "cdef");
	cr_assert_eq(link_unacked_bytes(l), 8);
	cr_assert_eq(link_peek(l, 0, &data, &len), 1);
	cr_assert_str_eq(data, "ab");
	cr_assert_eq(len, 3);
	cr_assert_eq(link_peek(l, 1, &data, &len), 1);
	cr_assert_str_eq(data, "cdef");
	cr_assert_eq(len, 5);
	cr_assert_eq(link_peek(l, 2, &data, &len), 0);
	cr_assert_eq(link_unsent(l), 2, "peeking handed an item out");
	cr_assert_eq(next_seq(l, "ab"), 1);
	/* Peeking is relative to the first unsent item. */
	cr_assert_eq(link_peek(l, 0, &data, &len), 1);
	cr_assert_str_eq(data, "cdef");
	cr_assert_eq(link_peek(l, 1, &data, &len), 0);
	cr_assert_eq(link_unacked_bytes(l), 8, "handing out frees nothing");

	/* A third item fills the window: no space for a fourth. */
	cr_assert_not_null(link_push_space(l, 0));
	cr_assert_eq(link_next_seq(l), 4);
	cr_assert_null(link_push_space(l, 1));
	cr_assert_eq(link_push(l, "x", 1), E_FULL);
	cr_assert_eq(link_next_seq(l), 4);
	cr_assert_eq(link_unacked_bytes(l), 8);

	cr_assert_eq(link_ack(l, 1), 0);
	cr_assert_eq(link_unacked_bytes(l), 5);
	cr_assert_eq(next_seq(l, "cdef"), 2);
	cr_assert_eq(link_next(l, &data, &len, &(uint64_t){0}), 1);
	cr_assert_eq(len, 0);
	cr_assert_eq(link_ack(l, 3), 0);
	cr_assert_eq(link_unacked_bytes(l), 0);
	cr_assert_eq(link_unacked(l), 0);
	cr_assert_eq(link_peek(l, 0, &data, &len), 0);
	link_free(l);
}

/* After a rewind, peeking starts again at the first unacknowledged
 * item. */
Test(link, peek_after_rewind)
{
	struct link *l = mk(8, 0);
	const void *data;
	size_t len;

	push_str(l, "a");
	push_str(l, "b");
	push_str(l, "c");
	next_seq(l, "a");
	next_seq(l, "b");
	cr_assert_eq(link_ack(l, 1), 0);
	cr_assert_eq(link_peek(l, 0, &data, &len), 1);
	cr_assert_str_eq(data, "c");
	link_rewind(l);
	cr_assert_eq(link_peek(l, 0, &data, &len), 1);
	cr_assert_str_eq(data, "b");
	cr_assert_eq(link_peek(l, 1, &data, &len), 1);
	cr_assert_str_eq(data, "c");
	cr_assert_eq(link_unacked_bytes(l), 4);
	link_free(l);
}

/* An item far larger than anything before it, written in place. */
Test(link, large_item)
{
	struct link *l = mk(8, 0);
	size_t big = 3u << 20;
	const void *data;
	unsigned char *p;
	size_t len;
	uint64_t seq;

	push_str(l, "small");
	p = link_push_space(l, big);
	cr_assert_not_null(p);
	for (size_t i = 0; i < big; i++)
		p[i] = (unsigned char)(i * 7);
	push_str(l, "after");
	cr_assert_eq(link_unacked_bytes(l), big + 12);
	next_seq(l, "small");
	cr_assert_eq(link_next(l, &data, &len, &seq), 1);
	cr_assert_eq(seq, 2);
	cr_assert_eq(len, big);
	for (size_t i = 0; i < big; i++)
		cr_assert_eq(((const unsigned char *)data)[i],
		             (unsigned char)(i * 7), "byte %zu", i);
	cr_assert_eq(next_seq(l, "after"), 3);
	link_free(l);
}

/*
 * Many items of varied sizes (empty ones, and now and then a large one),
 * pushed copied or in place, handed out, peeked at, acknowledged, rewound
 * and refused, against a model: every item handed out has the right seq
 * and bytes, and the counts agree after every step.
 */
#define STRESS_ITEMS  100000
#define STRESS_WINDOW 700

static size_t
stress_len(uint64_t seq)
{
	uint64_t h = seq * 0x9e3779b97f4a7c15ull;

	if (seq % 97 == 0)
		return 0;
	if (seq % 1009 == 0)
		return 5000 + (size_t)(h >> 40) % 20000;
	return (size_t)(h >> 50) % 300;
}

static unsigned char
stress_byte(uint64_t seq, size_t k)
{
	return (unsigned char)(seq * 7 + k * 13 + (seq >> 8));
}

static void
stress_check(uint64_t seq, const void *data, size_t len)
{
	const unsigned char *p = data;

	cr_assert_eq(len, stress_len(seq), "seq %llu: %zu bytes",
	             (unsigned long long)seq, len);
	for (size_t k = 0; k < len; k++)
		if (p[k] != stress_byte(seq, k))
			cr_assert_fail("seq %llu: byte %zu is wrong",
			               (unsigned long long)seq, k);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t
rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

Test(link, many_items_against_a_model)
{
	struct link *l = mk(STRESS_WINDOW, 0);
	/* Pushed up to `pushed`, acknowledged up to `acked`, next handed out
	 * `next`; `bytes` held by (acked, pushed]. */
	uint64_t pushed = 0, acked = 0, next = 1, seq, upto, hi;
	size_t bytes = 0, handed = 0, rewinds = 0, len, i;
	unsigned char buf[32768];
	const void *data;
	unsigned char *p;

	while (acked < STRESS_ITEMS) {
		unsigned r = (unsigned)rnd(100);

		if (r < 45 && pushed < STRESS_ITEMS) {
			seq = pushed + 1;
			len = stress_len(seq);
			if (pushed - acked == STRESS_WINDOW) {
				cr_assert_null(link_push_space(l, len));
				cr_assert_eq(link_push(l, buf, len),
				             E_FULL);
			} else if (seq % 2) {
				p = link_push_space(l, len);
				cr_assert_not_null(p);
				for (size_t k = 0; k < len; k++)
					p[k] = stress_byte(seq, k);
				pushed++;
				bytes += len;
			} else {
				for (size_t k = 0; k < len; k++)
					buf[k] = stress_byte(seq, k);
				cr_assert_eq(link_push(l, buf, len), 0);
				pushed++;
				bytes += len;
			}
		} else if (r < 80) {
			if (next > pushed) {
				cr_assert_eq(link_next(l, &data, &len, &seq),
				             0);
			} else {
				cr_assert_eq(link_next(l, &data, &len, &seq),
				             1);
				cr_assert_eq(seq, next);
				stress_check(seq, data, len);
				next++;
				handed++;
			}
		} else if (r < 90) {
			/* Mostly what was handed out; now and then an old
			 * ack, or one for items not handed out yet. */
			hi = next - 1;
			if (rnd(10) == 0)
				hi = next + 4 < pushed ? next + 4 : pushed;
			upto = acked > 3 ? acked - 3 : 0;
			upto += rnd(hi - upto + 1);
			cr_assert_eq(link_ack(l, upto), 0);
			for (seq = acked + 1; seq <= upto; seq++)
				bytes -= stress_len(seq);
			if (upto > acked)
				acked = upto;
			if (next <= acked)
				next = acked + 1;
		} else if (r < 93) {
			link_rewind(l);
			next = acked + 1;
			rewinds++;
		} else if (r < 98) {
			i = (size_t)rnd(8);
			if (next + i > pushed) {
				cr_assert_eq(link_peek(l, i, &data, &len), 0);
			} else {
				cr_assert_eq(link_peek(l, i, &data, &len), 1);
				stress_check(next + i, data, len);
			}
		} else {
			cr_assert_eq(link_ack(l, pushed + 1 + rnd(3)),
			             E_INVAL);
		}
		cr_assert_eq(link_next_seq(l), pushed + 1);
		cr_assert_eq(link_acked(l), acked);
		cr_assert_eq(link_unacked(l), pushed - acked);
		cr_assert_eq(link_unsent(l), pushed + 1 - next);
		cr_assert_eq(link_unacked_bytes(l), bytes);
	}
	cr_assert_eq(bytes, 0);
	cr_assert_gt(handed, STRESS_ITEMS, "rewinds resent nothing (%zu)",
	             handed);
	cr_assert_gt(rewinds, 100);
	link_free(l);
}
