/*
 * test_fifo.c - the record queue in one block (daemon/core/fifo.c): order and
 * contents through pushes and pops, empty records (also as the very first
 * push), records written in place, tags, compaction (the live bytes move
 * to the front without growing the block), growth of the block and of
 * the record ring across its wrap, and a long run against a model.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fifo.h"

/* Record i must hold the string s (with its NUL) and these tags. */
static void
assert_rec(const struct fifo *f, size_t i, const char *s, uint64_t tag,
           uint64_t tag2)
{
	const struct fifo_rec *r;

	cr_assert_lt(i, fifo_count(f));
	r = fifo_rec(f, i);
	cr_assert_eq(r->len, strlen(s) + 1, "record %zu: %zu bytes", i, r->len);
	cr_assert_str_eq(fifo_data(f, r), s, "record %zu", i);
	cr_assert_eq(r->tag, tag, "record %zu", i);
	cr_assert_eq(r->tag2, tag2, "record %zu", i);
}

static void
push_str(struct fifo *f, const char *s, uint64_t tag, uint64_t tag2)
{
	cr_assert_eq(fifo_push(f, s, strlen(s) + 1, tag, tag2), 0);
}

Test(fifo, empty)
{
	struct fifo f, zero;

	memset(&zero, 0, sizeof(zero));
	fifo_fini(&zero);
	fifo_init(&f);
	cr_assert_eq(fifo_count(&f), 0);
	cr_assert_eq(fifo_bytes(&f), 0);
	fifo_pop(&f, 0);
	fifo_clear(&f);
	cr_assert_eq(fifo_count(&f), 0);
	fifo_fini(&f);
	fifo_fini(&f);
}

Test(fifo, push_pop_in_order)
{
	struct fifo f;

	fifo_init(&f);
	push_str(&f, "a", 1, 10);
	push_str(&f, "bb", 2, 20);
	push_str(&f, "ccc", 3, 30);
	cr_assert_eq(fifo_count(&f), 3);
	cr_assert_eq(fifo_bytes(&f), 2 + 3 + 4);
	assert_rec(&f, 0, "a", 1, 10);
	assert_rec(&f, 1, "bb", 2, 20);
	assert_rec(&f, 2, "ccc", 3, 30);
	fifo_pop(&f, 0);
	cr_assert_eq(fifo_count(&f), 3);
	fifo_pop(&f, 1);
	cr_assert_eq(fifo_count(&f), 2);
	cr_assert_eq(fifo_bytes(&f), 7);
	assert_rec(&f, 0, "bb", 2, 20);
	assert_rec(&f, 1, "ccc", 3, 30);
	push_str(&f, "dddd", 4, 40);
	assert_rec(&f, 2, "dddd", 4, 40);
	fifo_pop(&f, 2);
	cr_assert_eq(fifo_count(&f), 1);
	cr_assert_eq(fifo_bytes(&f), 5);
	assert_rec(&f, 0, "dddd", 4, 40);
	fifo_pop(&f, 1);
	cr_assert_eq(fifo_count(&f), 0);
	cr_assert_eq(fifo_bytes(&f), 0);
	/* Usable again after it emptied. */
	push_str(&f, "e", 5, 50);
	assert_rec(&f, 0, "e", 5, 50);
	fifo_fini(&f);
}

/* Tags are the owner's: any 64-bit values, kept apart. */
Test(fifo, tags)
{
	struct fifo f;

	fifo_init(&f);
	cr_assert_eq(fifo_push(&f, "x", 1, UINT64_MAX, 0), 0);
	cr_assert_eq(fifo_push(&f, "y", 1, 0, UINT64_MAX), 0);
	cr_assert_eq(
	    fifo_push(&f, "z", 1, 0x8000000000000001ull, 0x7fffffffffffffffull),
	    0);
	cr_assert_eq(fifo_rec(&f, 0)->tag, UINT64_MAX);
	cr_assert_eq(fifo_rec(&f, 0)->tag2, 0);
	cr_assert_eq(fifo_rec(&f, 1)->tag, 0);
	cr_assert_eq(fifo_rec(&f, 1)->tag2, UINT64_MAX);
	cr_assert_eq(fifo_rec(&f, 2)->tag, 0x8000000000000001ull);
	cr_assert_eq(fifo_rec(&f, 2)->tag2, 0x7fffffffffffffffull);
	fifo_pop(&f, 1);
	cr_assert_eq(fifo_rec(&f, 0)->tag2, UINT64_MAX);
	fifo_fini(&f);
}

/* An empty record as the very first push, with nothing else in the
 * queue, and many of them; then empty records between others. */
Test(fifo, zero_length_records)
{
	struct fifo f;
	void *p;

	fifo_init(&f);
	cr_assert_eq(fifo_push(&f, NULL, 0, 7, 8), 0);
	cr_assert_eq(fifo_count(&f), 1);
	cr_assert_eq(fifo_bytes(&f), 0);
	cr_assert_eq(fifo_rec(&f, 0)->len, 0);
	cr_assert_eq(fifo_rec(&f, 0)->tag, 7);
	cr_assert_eq(fifo_rec(&f, 0)->tag2, 8);
	fifo_pop(&f, 1);
	cr_assert_eq(fifo_count(&f), 0);
	fifo_fini(&f);

	fifo_init(&f);
	p = fifo_push_space(&f, 0, 1, 2);
	cr_assert_not_null(p, "an empty record as the first push");
	cr_assert_eq(fifo_count(&f), 1);
	fifo_fini(&f);

	/* Only empty records, past the first ring size. */
	fifo_init(&f);
	for (uint64_t i = 0; i < 1000; i++)
		cr_assert_eq(fifo_push(&f, NULL, 0, i, ~i), 0);
	cr_assert_eq(fifo_count(&f), 1000);
	cr_assert_eq(fifo_bytes(&f), 0);
	for (size_t i = 0; i < 1000; i++) {
		cr_assert_eq(fifo_rec(&f, i)->tag, i);
		cr_assert_eq(fifo_rec(&f, i)->tag2, ~(uint64_t)i);
		cr_assert_eq(fifo_rec(&f, i)->len, 0);
	}
	fifo_pop(&f, 999);
	cr_assert_eq(fifo_rec(&f, 0)->tag, 999);
	fifo_fini(&f);

	/* Mixed: an empty record at the head, in the middle, at the
	 * tail. */
	fifo_init(&f);
	cr_assert_eq(fifo_push(&f, "", 0, 1, 0), 0);
	push_str(&f, "ab", 2, 0);
	cr_assert_eq(fifo_push(&f, "zz", 0, 3, 0), 0);
	push_str(&f, "cd", 4, 0);
	cr_assert_eq(fifo_push(&f, NULL, 0, 5, 0), 0);
	cr_assert_eq(fifo_bytes(&f), 6);
	fifo_pop(&f, 1);
	assert_rec(&f, 0, "ab", 2, 0);
	fifo_pop(&f, 1);
	cr_assert_eq(fifo_rec(&f, 0)->len, 0);
	cr_assert_eq(fifo_rec(&f, 0)->tag, 3);
	assert_rec(&f, 1, "cd", 4, 0);
	fifo_pop(&f, 2);
	cr_assert_eq(fifo_count(&f), 1);
	cr_assert_eq(fifo_bytes(&f), 0);
	cr_assert_eq(fifo_rec(&f, 0)->tag, 5);
	fifo_fini(&f);
}

/* A record reserved with fifo_push_space() is written in place. */
Test(fifo, push_space_in_place)
{
	struct fifo f;
	char *p;

	fifo_init(&f);
	push_str(&f, "first", 1, 0);
	p = fifo_push_space(&f, 6, 2, 3);
	cr_assert_not_null(p);
	memcpy(p, "hello", 6);
	push_str(&f, "last", 4, 0);
	assert_rec(&f, 0, "first", 1, 0);
	assert_rec(&f, 1, "hello", 2, 3);
	assert_rec(&f, 2, "last", 4, 0);
	cr_assert_eq(fifo_bytes(&f), 6 + 6 + 5);
	fifo_fini(&f);
}

/* Fill most of the first block, pop most of it, push again: the live
 * records move to the front of the same block, intact. */
Test(fifo, compaction_keeps_contents)
{
	char buf[100];
	struct fifo f;
	unsigned char *block;
	size_t cap, n = 0;

	fifo_init(&f);
	/* 40 records of 100 bytes: 4000 of the first 4096. */
	for (int i = 0; i < 40; i++) {
		memset(buf, 'a' + i % 26, sizeof(buf));
		snprintf(buf, sizeof(buf), "r%d", i);
		cr_assert_eq(fifo_push(&f, buf, sizeof(buf), (uint64_t)i, 0),
		             0);
	}
	block = f.buf;
	cap = f.cap;
	cr_assert_eq(cap, 4096);
	fifo_pop(&f, 35); /* 500 bytes live, 3500 dead in front */
	/* 200 bytes do not fit at the tail: compaction, not growth. */
	memset(buf, 'Z', sizeof(buf));
	snprintf(buf, sizeof(buf), "r%d", 40);
	cr_assert_eq(fifo_push(&f, buf, sizeof(buf), 40, 0), 0);
	snprintf(buf, sizeof(buf), "r%d", 41);
	cr_assert_eq(fifo_push(&f, buf, sizeof(buf), 41, 0), 0);
	cr_assert_eq(f.cap, cap, "the block grew instead of compacting");
	cr_assert_eq(f.buf, block);
	cr_assert_eq(f.head, 0, "the live bytes did not move to the front");
	cr_assert_eq(fifo_count(&f), 7);
	cr_assert_eq(fifo_bytes(&f), 700);
	for (size_t i = 0; i < fifo_count(&f); i++) {
		const struct fifo_rec *r = fifo_rec(&f, i);
		const char *d = fifo_data(&f, r);
		char want[16];
		int k = 35 + (int)i;

		snprintf(want, sizeof(want), "r%d", k);
		cr_assert_eq(r->tag, (uint64_t)k);
		cr_assert_eq(r->len, 100);
		cr_assert_str_eq(d, want);
		for (size_t j = strlen(want) + 1; j < 100; j++)
			cr_assert_eq(d[j], k < 40 ? 'a' + k % 26 : 'Z',
			             "record %d byte %zu", k, j);
		n++;
	}
	cr_assert_eq(n, 7);
	fifo_fini(&f);
}

/* Compaction is not used while more is live than dead: the block grows
 * instead, and nothing moves out of order. */
Test(fifo, growth_keeps_contents)
{
	static char big[10000];
	struct fifo f;

	fifo_init(&f);
	push_str(&f, "one", 1, 0);
	push_str(&f, "two", 2, 0);
	fifo_pop(&f, 1);
	memset(big, 'b', sizeof(big) - 1);
	cr_assert_eq(fifo_push(&f, big, sizeof(big), 3, 0), 0);
	cr_assert_geq(f.cap, sizeof(big) + 8);
	assert_rec(&f, 0, "two", 2, 0);
	assert_rec(&f, 1, big, 3, 0);
	/* A second large one. */
	big[0] = 'c';
	cr_assert_eq(fifo_push(&f, big, sizeof(big), 4, 0), 0);
	assert_rec(&f, 2, big, 4, 0);
	big[0] = 'b';
	assert_rec(&f, 1, big, 3, 0);
	cr_assert_eq(fifo_bytes(&f), 4 + 2 * sizeof(big));
	fifo_fini(&f);
}

/* The record ring wraps around and then doubles: the order survives. */
Test(fifo, ring_wraps_then_grows)
{
	char s[16];
	struct fifo f;
	int head = 0, tail = 0;

	fifo_init(&f);
	for (; tail < 64; tail++) {
		snprintf(s, sizeof(s), "%d", tail);
		push_str(&f, s, (uint64_t)tail, 0);
	}
	cr_assert_eq(f.rcap, 64);
	fifo_pop(&f, 40);
	head = 40;
	for (; tail < 100; tail++) { /* wraps, then doubles at 64 */
		snprintf(s, sizeof(s), "%d", tail);
		push_str(&f, s, (uint64_t)tail, 0);
	}
	cr_assert_eq(fifo_count(&f), (size_t)(tail - head));
	cr_assert_geq(f.rcap, 64);
	for (int i = head; i < tail; i++) {
		snprintf(s, sizeof(s), "%d", i);
		assert_rec(&f, (size_t)(i - head), s, (uint64_t)i, 0);
	}
	fifo_fini(&f);
}

Test(fifo, clear)
{
	struct fifo f;

	fifo_init(&f);
	push_str(&f, "a", 1, 0);
	push_str(&f, "b", 2, 0);
	fifo_clear(&f);
	cr_assert_eq(fifo_count(&f), 0);
	cr_assert_eq(fifo_bytes(&f), 0);
	push_str(&f, "c", 3, 0);
	assert_rec(&f, 0, "c", 3, 0);
	fifo_pop(&f, 5); /* more than there are: empties it */
	cr_assert_eq(fifo_count(&f), 0);
	fifo_fini(&f);
}

/*
 * A long run of pushes (empty, small, now and then large; copied or in
 * place) and pops of varied counts against a model, checking every
 * record's bytes and tags after each step that changes the head.
 */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

static size_t
model_len(uint64_t id)
{
	if (id % 11 == 0)
		return 0;
	if (id % 503 == 0)
		return 4000 + (size_t)(id * 2654435761u) % 12000;
	return (size_t)(id * 2654435761u) % 200;
}

static unsigned char
model_byte(uint64_t id, size_t k)
{
	return (unsigned char)(id * 31 + k * 7 + (k >> 8));
}

static void
check_all(const struct fifo *f, uint64_t first, uint64_t end)
{
	size_t bytes = 0;

	cr_assert_eq(fifo_count(f), end - first);
	for (uint64_t id = first; id < end; id++) {
		const struct fifo_rec *r = fifo_rec(f, (size_t)(id - first));
		const unsigned char *d = fifo_data(f, r);

		cr_assert_eq(r->tag, id);
		cr_assert_eq(r->tag2, ~id);
		cr_assert_eq(r->len, model_len(id), "record %llu",
		             (unsigned long long)id);
		for (size_t k = 0; k < r->len; k++)
			if (d[k] != model_byte(id, k))
				cr_assert_fail("record %llu byte %zu",
				               (unsigned long long)id, k);
		bytes += r->len;
	}
	cr_assert_eq(fifo_bytes(f), bytes);
}

Test(fifo, long_run_against_a_model)
{
	static unsigned char buf[16384];
	uint64_t first = 0, end = 0; /* records [first, end) are queued */
	struct fifo f;

	fifo_init(&f);
	for (int step = 0; step < 200000; step++) {
		if (rnd(100) < 55) {
			size_t len = model_len(end);
			unsigned char *p;

			if (end % 2) {
				p = fifo_push_space(&f, len, end, ~end);
				cr_assert_not_null(p);
			} else {
				p = buf;
			}
			for (size_t k = 0; k < len; k++)
				p[k] = model_byte(end, k);
			if (p == buf)
				cr_assert_eq(fifo_push(&f, buf, len, end, ~end),
				             0);
			end++;
		} else if (end > first) {
			uint64_t n = rnd(end - first + 1);

			if (rnd(8) == 0)
				n = rnd(3); /* small pops too */
			if (n > end - first)
				n = end - first;
			fifo_pop(&f, (size_t)n);
			first += n;
		}
		if (step % 97 == 0 || fifo_count(&f) < 4)
			check_all(&f, first, end);
	}
	check_all(&f, first, end);
	cr_assert_gt(end, 100000);
	/* The block stays near the largest live content, not the total
	 * pushed. */
	cr_assert_lt(f.cap, 4u << 20, "cap %zu", f.cap);
	fifo_fini(&f);
}

Test(fifo, unpush_takes_back_the_last_record)
{
	struct fifo f;

	fifo_init(&f);
	fifo_unpush(&f); /* empty: nothing happens */
	cr_assert_eq(fifo_count(&f), 0);
	cr_assert_eq(fifo_push(&f, "abc", 3, 1, 0), 0);
	cr_assert_eq(fifo_push(&f, "defgh", 5, 2, 0), 0);
	fifo_unpush(&f);
	cr_assert_eq(fifo_count(&f), 1);
	cr_assert_eq(fifo_bytes(&f), 3);
	cr_assert_eq(fifo_rec(&f, 0)->tag, 1);
	/* The space is reused by the next push. */
	cr_assert_eq(fifo_push(&f, "xy", 2, 3, 0), 0);
	cr_assert_eq(fifo_count(&f), 2);
	cr_assert_eq(fifo_bytes(&f), 5);
	cr_assert_eq(memcmp(fifo_data(&f, fifo_rec(&f, 1)), "xy", 2), 0);
	fifo_unpush(&f);
	fifo_unpush(&f);
	cr_assert_eq(fifo_count(&f), 0);
	cr_assert_eq(fifo_bytes(&f), 0);
	fifo_fini(&f);
}
