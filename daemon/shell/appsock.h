/*
 * appsock.h - the application's socket (appsock.c).
 */
#ifndef CUT_APPSOCK_H
#define CUT_APPSOCK_H

#include <nng/nng.h>
#include <stdint.h>

struct cutd;

int app_start(struct cutd *d);
void app_free(struct cutd *d);
/* Tells the coordinator of closed application connections. */
void app_events(struct cutd *d);
/* Starts the application listener again when it stopped accepting
 * (ipcprobe.h). */
void app_timers(struct cutd *d, int64_t now);
/* The descriptor to poll for frames, or -1 while nng holds no
 * connection for the application. */
int app_poll_fd(struct cutd *d);
void app_recv_all(struct cutd *d);
/* Decodes one AppBatch as it came in msg (borrowed) and hands it to the
 * coordinator.  Exposed for the fuzz harnesses. */
void app_batch(struct cutd *d, nng_msg *msg);
/* Sends the replies the coordinator queued, and the down stream. */
void app_flush(struct cutd *d);
int app_next_timer(struct cutd *d, int64_t now, int max);

#endif /* CUT_APPSOCK_H */
