/*
 * net.h - the sockets between daemons (net.c).
 */
#ifndef CUT_NET_H
#define CUT_NET_H

#include <nng/nng.h>
#include <stdint.h>

struct cutd;

int net_start(struct cutd *d);
/* Closes this node's connections to its peers, losing whatever nng had
 * in flight on them: the links must recover.  SIGUSR1 does it, for
 * tests. */
void net_drop_connections(struct cutd *d);
/* Frees the pending frames.  The peer sockets must be closed first:
 * their pipe notifications write to d->net. */
void net_free(struct cutd *d);
/* Tells the coordinator which connections opened and closed. */
void net_events(struct cutd *d);
void net_recv_all(struct cutd *d);
/* Decodes, admits (TLS) and hands one PeerBatch as it came in msg
 * (borrowed) to the coordinator: what net_recv_all() does with each
 * message.  Exposed for the fuzz harnesses (tests/fuzz). */
void net_batch(struct cutd *d, nng_msg *msg);
void net_flush(struct cutd *d);
void net_timers(struct cutd *d, int64_t now);
/* Milliseconds until net_timers() or net_flush() has something to do. */
int net_next_timer(struct cutd *d, int64_t now, int max);

#endif /* CUT_NET_H */
