/*
 * fifo.c - records in one block, index in a ring.
 *
 * The byte block only grows at its tail and is compacted (the live bytes
 * moved to the front) when the dead prefix is at least as large as what is
 * live, so each byte is moved O(1) times on average.  The record index is
 * a ring that doubles when full.
 */
#include "fifo.h"

#include <stdlib.h>
#include <string.h>

void
fifo_init(struct fifo *f)
{
	memset(f, 0, sizeof(*f));
}

void
fifo_fini(struct fifo *f)
{
	free(f->buf);
	free(f->rec);
	memset(f, 0, sizeof(*f));
}

/* Makes room for len more bytes at the tail. */
static int
room(struct fifo *f, size_t len)
{
	size_t live = f->tail - f->head, cap;
	unsigned char *b;

	if (f->buf != NULL && f->cap - f->tail >= len)
		return 0;
	if (f->head > 0 && f->head >= live && f->cap - live >= len) {
		memmove(f->buf, f->buf + f->head, live);
		for (size_t i = 0; i < f->rcount; i++)
			f->rec[(f->rhead + i) % f->rcap].off -= f->head;
		f->head = 0;
		f->tail = live;
		return 0;
	}
	cap = f->cap ? f->cap : 4096;
	while (cap - f->tail < len)
		cap *= 2;
	if ((b = realloc(f->buf, cap)) == NULL)
		return -1;
	f->buf = b;
	f->cap = cap;
	return 0;
}

static int
more_records(struct fifo *f)
{
	size_t cap = f->rcap ? f->rcap * 2 : 64;
	struct fifo_rec *r = malloc(cap * sizeof(*r));

	if (r == NULL)
		return -1;
	for (size_t i = 0; i < f->rcount; i++)
		r[i] = f->rec[(f->rhead + i) % f->rcap];
	free(f->rec);
	f->rec = r;
	f->rcap = cap;
	f->rhead = 0;
	return 0;
}

void *
fifo_push_space(struct fifo *f, size_t len, uint64_t tag, uint64_t tag2)
{
	struct fifo_rec *r;

	if ((f->rcount == f->rcap && more_records(f) != 0) || room(f, len) != 0)
		return NULL;
	r = &f->rec[(f->rhead + f->rcount) % f->rcap];
	r->off = f->tail;
	r->len = len;
	r->tag = tag;
	r->tag2 = tag2;
	f->rcount++;
	f->tail += len;
	return f->buf + r->off;
}

int
fifo_push(struct fifo *f, const void *data, size_t len, uint64_t tag,
          uint64_t tag2)
{
	void *p = fifo_push_space(f, len, tag, tag2);

	if (p == NULL)
		return -1;
	if (len > 0)
		memcpy(p, data, len);
	return 0;
}

void
fifo_pop(struct fifo *f, size_t n)
{
	if (n == 0)
		return;
	if (n >= f->rcount) {
		fifo_clear(f);
		return;
	}
	f->rhead = (f->rhead + n) % f->rcap;
	f->rcount -= n;
	f->head = f->rec[f->rhead].off;
}

void
fifo_unpush(struct fifo *f)
{
	if (f->rcount == 0)
		return;
	if (f->rcount == 1) {
		fifo_clear(f);
		return;
	}
	f->rcount--;
	f->tail = f->rec[(f->rhead + f->rcount) % f->rcap].off;
}

void
fifo_clear(struct fifo *f)
{
	f->rhead = f->rcount = 0;
	f->head = f->tail = 0;
}

size_t
fifo_count(const struct fifo *f)
{
	return f->rcount;
}

size_t
fifo_bytes(const struct fifo *f)
{
	return f->tail - f->head;
}

const struct fifo_rec *
fifo_rec(const struct fifo *f, size_t i)
{
	return &f->rec[(f->rhead + i) % f->rcap];
}

const void *
fifo_data(const struct fifo *f, const struct fifo_rec *r)
{
	return f->buf + r->off;
}
