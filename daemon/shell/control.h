/*
 * control.h - the control service (control.c).
 */
#ifndef CUT_CONTROL_H
#define CUT_CONTROL_H

#include <nng/nng.h>
#include <stdint.h>

struct cutd;

int control_start(struct cutd *d);
/* Listens on url with socket s; an ipc:// socket gets mode 0660 and the
 * cluster file's socket_group.  Returns 0 or an NNG_E* code (logged). */
int control_listen(struct cutd *d, nng_socket s, const char *url);
/* Frees the kept replies and answers no Wait call any more. */
void control_free(struct cutd *d);
void control_recv_all(struct cutd *d);
/* Decodes, checks and answers (or keeps, for Wait) one RpcRequest; takes
 * ownership of req.  Exposed for the fuzz harnesses. */
void control_request(struct cutd *d, nng_msg *req);
/* Answers the Wait calls whose snapshot ended (its end committed) or
 * whose deadline passed. */
void control_wake(struct cutd *d, int64_t now);
/* The turn's writes committed (lost = 0) or were lost with their batch
 * (lost = 1): answers the calls held for it (Delete), with their result
 * or with UNAVAILABLE. */
void control_committed(struct cutd *d, int lost);
/* Milliseconds until a Wait call's deadline, at most max. */
int control_next_timer(struct cutd *d, int64_t now, int max);

#endif /* CUT_CONTROL_H */
