/*
 * link.c - sequence numbers, cumulative acks, resend and gap holding for
 * one daemon-to-daemon stream.
 *
 * The send queue is a fifo of items in sequence order (one block of
 * memory, no allocation per item); [0, sent) have been handed out, the
 * rest have not.  Item i has seq base + i.  An ack removes a prefix; a
 * rewind sets sent back to 0.  The receiver keeps the
 * next expected seq and a small sorted array of early items.
 *
 * Each queued item, on the sender's side:
 *
 *   QUEUED --link_next()--> SENT --link_ack() covers it--> freed
 *   SENT --link_rewind()--> QUEUED (sent again, in order)
 *
 * and each arriving seq, on the receiver's (link_accept()):
 *
 *   seq == expected              --> DELIVER, expected + 1; held items
 *                                    that now follow are released in order
 *                                    (link_release())
 *   seq < expected, or held      --> DUP (dropped)
 *   expected < seq, within
 *     max_held and room          --> HELD until the gap fills
 *   beyond max_held, or no room  --> DROPPED: the sender resends it
 */
#include "link.h"

#include "fifo.h"

#include <stdlib.h>
#include <string.h>

struct item {
	uint64_t seq;
	size_t len;
	void *data;
};

struct link {
	/* Sender: the items in seq order, the first with seq base; records
	 * [0, sent) have been handed out. */
	struct fifo q;
	size_t sent, max_unacked;
	uint64_t base; /* seq of the first record; acked = base - 1 */
	/* Receiver. */
	uint64_t expected;
	struct item *held; /* sorted by seq */
	size_t nheld, max_held;
	/* For metrics: items handed out again, and arrivals dropped. */
	uint64_t resent, dups;
};

int
link_new(size_t max_unacked, size_t max_held, struct link **ret_link)
{
	struct link *l;

	if (max_unacked == 0)
		return E_INVAL;
	if ((l = calloc(1, sizeof(*l))) == NULL)
		return E_NOMEM;
	if (max_held > 0 &&
	    (l->held = calloc(max_held, sizeof(*l->held))) == NULL) {
		free(l);
		return E_NOMEM;
	}
	fifo_init(&l->q);
	l->max_unacked = max_unacked;
	l->max_held = max_held;
	l->base = 1;
	l->expected = 1;
	*ret_link = l;
	return 0;
}

void
link_free(struct link *l)
{
	if (l == NULL)
		return;
	fifo_fini(&l->q);
	for (size_t i = 0; i < l->nheld; i++)
		free(l->held[i].data);
	free(l->held);
	free(l);
}

uint64_t
link_next_seq(const struct link *l)
{
	return l->base + fifo_count(&l->q);
}

void *
link_push_space(struct link *l, size_t len)
{
	if (fifo_count(&l->q) >= l->max_unacked)
		return NULL;
	return fifo_push_space(&l->q, len, link_next_seq(l), 0);
}

int
link_push(struct link *l, const void *data, size_t len)
{
	void *p;

	if (fifo_count(&l->q) >= l->max_unacked)
		return E_FULL;
	if ((p = link_push_space(l, len)) == NULL)
		return E_NOMEM;
	if (len > 0)
		memcpy(p, data, len);
	return 0;
}

size_t
link_unsent(const struct link *l)
{
	return fifo_count(&l->q) - l->sent;
}

size_t
link_unacked(const struct link *l)
{
	return fifo_count(&l->q);
}

size_t
link_unacked_bytes(const struct link *l)
{
	return fifo_bytes(&l->q);
}

int
link_next(struct link *l, const void **ret_data, size_t *ret_len,
          uint64_t *ret_seq)
{
	const struct fifo_rec *r;

	if (l->sent == fifo_count(&l->q))
		return 0;
	r = fifo_rec(&l->q, l->sent++);
	*ret_data = fifo_data(&l->q, r);
	*ret_len = r->len;
	*ret_seq = r->tag;
	return 1;
}

int
link_peek(const struct link *l, size_t i, const void **ret_data,
          size_t *ret_len)
{
	const struct fifo_rec *r;

	if (l->sent + i >= fifo_count(&l->q))
		return 0;
	r = fifo_rec(&l->q, l->sent + i);
	*ret_data = fifo_data(&l->q, r);
	*ret_len = r->len;
	return 1;
}

int
link_ack(struct link *l, uint64_t upto)
{
	size_t k;

	if (upto >= link_next_seq(l))
		return E_INVAL;
	if (upto < l->base)
		return 0; /* old news */
	k = (size_t)(upto - l->base + 1);
	fifo_pop(&l->q, k);
	l->sent = l->sent > k ? l->sent - k : 0;
	l->base = upto + 1;
	return 0;
}

void
link_rewind(struct link *l)
{
	l->resent += l->sent;
	l->sent = 0;
}

uint64_t
link_resent(const struct link *l)
{
	return l->resent;
}

uint64_t
link_dups(const struct link *l)
{
	return l->dups;
}

uint64_t
link_acked(const struct link *l)
{
	return l->base - 1;
}

/* Where seq belongs in the sorted hold buffer, and whether it is there. */
static size_t
held_pos(const struct link *l, uint64_t seq, int *ret_found)
{
	size_t lo = 0, hi = l->nheld;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->held[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = lo < l->nheld && l->held[lo].seq == seq;
	return lo;
}

enum link_verdict
link_accept(struct link *l, uint64_t seq, const void *data, size_t len)
{
	size_t pos;
	int found;
	void *copy;

	if (seq < l->expected) {
		l->dups++;
		return LINK_DUP;
	}
	if (seq == l->expected) {
		l->expected++;
		return LINK_DELIVER;
	}
	/* Further ahead than the buffer could ever fill: not worth holding. */
	if (seq - l->expected > l->max_held)
		return LINK_DROPPED;
	pos = held_pos(l, seq, &found);
	if (found) {
		l->dups++;
		return LINK_DUP;
	}
	if (l->nheld == l->max_held || (copy = malloc(len ? len : 1)) == NULL)
		return LINK_DROPPED;
	memcpy(copy, data, len);
	memmove(&l->held[pos + 1], &l->held[pos],
	        (l->nheld - pos) * sizeof(*l->held));
	l->held[pos].seq = seq;
	l->held[pos].data = copy;
	l->held[pos].len = len;
	l->nheld++;
	return LINK_HELD;
}

int
link_release(struct link *l, void **ret_data, size_t *ret_len)
{
	if (l->nheld == 0 || l->held[0].seq != l->expected)
		return 0;
	*ret_data = l->held[0].data;
	*ret_len = l->held[0].len;
	memmove(&l->held[0], &l->held[1], (l->nheld - 1) * sizeof(*l->held));
	l->nheld--;
	l->expected++;
	return 1;
}

uint64_t
link_delivered(const struct link *l)
{
	return l->expected - 1;
}

size_t
link_held(const struct link *l)
{
	return l->nheld;
}
