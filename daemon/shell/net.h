/*
 * net.h - the sockets between daemons (net.c).
 */
#ifndef CUT_NET_H
#define CUT_NET_H

#include <nng/nng.h>
#include <stdint.h>

#include "turn.h"

struct cutd;

int net_start(struct cutd *d);
/* Closes this node's connections to its peers, losing whatever nng had
 * in flight on them: the links must recover.  SIGUSR1 does it, for
 * tests. */
void net_drop_connections(struct cutd *d);
/* Frees the peers.  The peer sockets must be closed first: their pipe
 * notifications write to d->net. */
void net_free(struct cutd *d);
/* TLS's timers, and a look at each dialer's connection now and then. */
void net_timers(struct cutd *d, int64_t now);

/* The peer half of the loop's port (turn.h); ctx is the struct cutd. */
size_t net_port_closed(void *ctx, uint32_t *ids, size_t max);
int net_port_added(void *ctx, size_t node);
int net_port_connected(void *ctx, size_t node);
void net_port_hang_up(void *ctx, size_t node);
void net_port_redial(void *ctx, size_t node);
int net_port_recv(void *ctx, struct turn_in *in);
int net_port_admit(void *ctx, uint32_t conn, const Cut__V1__PeerBatch *b);
int net_port_send(void *ctx, size_t node, void *frame);
int net_port_auth(void *ctx, size_t node, const Cut__V1__PeerAuth **auth);

#endif /* CUT_NET_H */
