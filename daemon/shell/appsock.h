/*
 * appsock.h - the application's socket (appsock.c).
 */
#ifndef CUT_APPSOCK_H
#define CUT_APPSOCK_H

#include <nng/nng.h>
#include <stdint.h>

#include "turn.h"

struct cutd;

int app_start(struct cutd *d);
void app_free(struct cutd *d);
/* Starts the application listener again when it stopped accepting
 * (ipcprobe.h). */
void app_timers(struct cutd *d, int64_t now);
/* The descriptor to poll for frames, or -1 while nng holds no
 * connection for the application. */
int app_poll_fd(struct cutd *d);
int app_next_timer(struct cutd *d, int64_t now, int max);

/* The application half of the loop's port (turn.h); ctx is the struct
 * cutd. */
size_t app_port_closed(void *ctx, uint32_t *ids, size_t max);
int app_port_recv(void *ctx, struct turn_in *in);
int app_port_send(void *ctx, void *frame);
void app_port_reply(void *ctx, uint32_t conn, const uint8_t *data,
                    size_t len);

#endif /* CUT_APPSOCK_H */
