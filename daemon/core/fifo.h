/*
 * fifo.h - a queue of variable-length records in one block of memory.
 *
 * The daemon's queues (a link's unacknowledged items, the deliveries
 * waiting for the application) hold thousands of small records that come
 * in at one end and leave at the other.  Keeping them in one growing block
 * with an index beside it costs no allocation per record once the queue
 * has reached its working size, and freeing a prefix is O(1) amortised.
 *
 * Records are numbered from 0 at the head; a pointer to a record stays
 * valid until the next fifo_push() or fifo_pop().  Each record carries two
 * 64-bit tags for its owner (a sequence number, a channel, ...).
 */
#ifndef CUT_FIFO_H
#define CUT_FIFO_H

#include <stddef.h>
#include <stdint.h>

struct fifo_rec {
	size_t off, len;
	uint64_t tag, tag2;
};

struct fifo {
	unsigned char *buf;
	size_t head, tail, cap; /* bytes [head, tail) are live */
	struct fifo_rec *rec;   /* ring of records */
	size_t rhead, rcount, rcap;
};

/* An empty queue; nothing is allocated until the first push. */
void fifo_init(struct fifo *f);
/* Frees every record and the queue's memory.  Accepts a zeroed queue. */
void fifo_fini(struct fifo *f);

/* Appends a copy of len bytes at data with its tags.  Returns 0, or -1
 * when out of memory (the queue is unchanged). */
int fifo_push(struct fifo *f, const void *data, size_t len, uint64_t tag,
              uint64_t tag2);
/* Reserves len bytes at the tail for a record the caller fills in place;
 * returns where to write, or NULL when out of memory. */
void *fifo_push_space(struct fifo *f, size_t len, uint64_t tag, uint64_t tag2);
/* Removes the first n records (n <= fifo_count()). */
void fifo_pop(struct fifo *f, size_t n);
/* Takes back the last record pushed (none: nothing happens), for a caller
 * whose next step failed. */
void fifo_unpush(struct fifo *f);
/* Removes every record. */
void fifo_clear(struct fifo *f);

/* The number of records, and the bytes they hold. */
size_t fifo_count(const struct fifo *f);
size_t fifo_bytes(const struct fifo *f);
/* Record i (0 = head); i < fifo_count(). */
const struct fifo_rec *fifo_rec(const struct fifo *f, size_t i);
/* The bytes of record r. */
const void *fifo_data(const struct fifo *f, const struct fifo_rec *r);

#endif /* CUT_FIFO_H */
