/*
 * link.h - one reliable FIFO stream between two daemons, without sockets.
 *
 * nng may lose what it had queued when a TCP connection drops, so every
 * sequenced item on a link from -> to carries a sequence number from 1.
 * The sender keeps each item until the receiver acknowledges it
 * cumulatively and resends from the first unacknowledged item after a
 * reconnect or a silence.  The receiver delivers items strictly in order,
 * drops duplicates and holds early items until the gap before them fills.
 *
 * Items are opaque bytes (an encoded peer item); the link copies them
 * into one block of memory (fifo.h).
 */
#ifndef CUT_LINK_H
#define CUT_LINK_H

#include "cuterr.h"

#include <stddef.h>
#include <stdint.h>

/* Calls that can fail return 0 or an E_* code (cuterr.h). */

/* What the receiver should do with an arriving item. */
enum link_verdict {
	LINK_DELIVER, /* in order: process it now */
	LINK_DUP,     /* already delivered: drop it */
	LINK_HELD,    /* early: kept until the gap fills */
	LINK_DROPPED, /* early and the hold buffer is full: drop it */
};

struct link;

/* Creates a link whose sender keeps at most max_unacked items and whose
 * receiver holds at most max_held early items. */
int link_new(size_t max_unacked, size_t max_held, struct link **ret_link);
/* Frees the link and every item it holds.  Accepts NULL. */
void link_free(struct link *l);

/* Sender side. */

/* The sequence number the next pushed item gets. */
uint64_t link_next_seq(const struct link *l);
/* Appends an item (copied) with sequence number link_next_seq(). */
int link_push(struct link *l, const void *data, size_t len);
/* Appends an item of len bytes with sequence number link_next_seq() and
 * returns where the caller writes it (before any other link call), or
 * NULL when the window is full or memory ran out. */
void *link_push_space(struct link *l, size_t len);
/* Bytes held by the unacknowledged items. */
size_t link_unacked_bytes(const struct link *l);
/* Looks at the i-th unsent item without handing it out; returns 0 if
 * there is none.  Borrowed like link_next(). */
int link_peek(const struct link *l, size_t i, const void **ret_data,
              size_t *ret_len);
/* Items pushed but not yet handed out since the last rewind. */
size_t link_unsent(const struct link *l);
/* Items pushed and not yet acknowledged. */
size_t link_unacked(const struct link *l);
/* Hands out the next unsent item, borrowed until the next link_push() or
 * link_ack();
 * returns 0 if there is none. */
int link_next(struct link *l, const void **ret_data, size_t *ret_len,
              uint64_t *ret_seq);
/* The receiver has everything up to upto: frees those items. */
int link_ack(struct link *l, uint64_t upto);
/* Everything unacknowledged will be handed out again. */
void link_rewind(struct link *l);
/* Items handed out again after a rewind, so far. */
uint64_t link_resent(const struct link *l);
/* Highest sequence number acknowledged. */
uint64_t link_acked(const struct link *l);

/* Receiver side. */

/* Judges an arriving item with sequence number seq; LINK_HELD copies it. */
enum link_verdict link_accept(struct link *l, uint64_t seq, const void *data,
                              size_t len);
/* After a delivery, hands out the next held item if it is now in order
 * (the caller frees *ret_data with free()); returns 0 if none. */
int link_release(struct link *l, void **ret_data, size_t *ret_len);
/* The cumulative acknowledgement to send: every seq <= this arrived. */
uint64_t link_delivered(const struct link *l);
/* Arrivals dropped as duplicates, so far. */
uint64_t link_dups(const struct link *l);
/* Early items held until the gap before them fills. */
size_t link_held(const struct link *l);

#endif /* CUT_LINK_H */
