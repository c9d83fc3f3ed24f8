/*
 * Tests of the reliable link (daemon/link.c): sequence numbers, cumulative
 * acks, resend after a rewind, duplicates and held gaps.
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
	cr_assert_eq(link_ack(l, 4), LINK_EINVAL, "beyond what was sent");
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

Test(link, unsend_puts_back_a_failed_batch)
{
	struct link *l = mk(8, 0);

	push_str(l, "a");
	push_str(l, "b");
	push_str(l, "c");
	next_seq(l, "a");
	next_seq(l, "b");
	next_seq(l, "c");
	link_unsend(l, 2);
	cr_assert_eq(link_unsent(l), 2);
	cr_assert_eq(next_seq(l, "b"), 2);
	link_free(l);
}

Test(link, window_full)
{
	struct link *l = mk(2, 0);

	push_str(l, "a");
	push_str(l, "b");
	cr_assert_eq(link_push(l, "c", 2), LINK_EFULL);
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
