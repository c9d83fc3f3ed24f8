/*
 * control.h - the control service (control.c).
 */
#ifndef CUT_CONTROL_H
#define CUT_CONTROL_H

#include <nng/nng.h>
#include <stddef.h>
#include <stdint.h>

struct cutd;
struct coord_event;

int control_start(struct cutd *d);
/* Listens on url with socket s, the listener in *ret; an ipc:// socket
 * gets mode 0660 and the cluster file's socket_group.  Returns 0 or an
 * NNG_E* code (logged). */
int control_listen(struct cutd *d, nng_socket s, const char *url,
                   nng_listener *ret);
/* Starts the control listener again when it stopped accepting
 * (ipcprobe.h); logs the database found damaged, once. */
void control_timers(struct cutd *d, int64_t now);
/* SQLite's words since a call found the database damaged or unreadable
 * (store_damaged(), or a condition's read), or "". */
const char *control_damaged(struct cutd *d);
/* A condition's read-only connection found the database damaged. */
void control_storage_damaged(struct cutd *d, const char *why);
/* Frees the kept replies and answers no Wait call any more. */
void control_free(struct cutd *d);
void control_recv_all(struct cutd *d);
/* Decodes, checks and answers (or keeps, for Wait) one RpcRequest; takes
 * ownership of req.  Exposed for the fuzz harnesses. */
void control_request(struct cutd *d, nng_msg *req);
/* After the commit: answers the Wait calls whose deadline passed. */
void control_wake(struct cutd *d, int64_t now);
/* An event of the coordinator: answers the Wait calls on a snapshot that
 * ended (its end committed) and the Restore call of a restore that
 * ended. */
void control_event(struct cutd *d, const struct coord_event *ev);
/* The turn's writes committed (lost = 0) or were lost with their batch
 * (lost = 1): answers the calls held for it (Delete), with their result
 * or with UNAVAILABLE. */
void control_committed(struct cutd *d, int lost);
/* Milliseconds until a Wait call's deadline or the listener's next
 * check, at most max. */
int control_next_timer(struct cutd *d, int64_t now, int max);

/* A read-only call of the HTTP API (http.c), on the loop's thread. */
struct control_query {
	const char *method; /* a method with a route (ctltab.h) */
	const uint8_t *req; /* its packed request (borrowed), or NULL */
	size_t req_len;
	/* Get: of each channel's messages, from the msg_offset-th, at most
	 * msg_limit, while the reply's payload bytes stay within msg_budget
	 * (but at least one message per channel that has more). */
	uint64_t msg_offset, msg_limit, msg_budget;
	/* Out: the gRPC status code and its words; on OK the packed reply,
	 * which the caller frees with free(). */
	int32_t status;
	char message[256];
	uint8_t *body;
	size_t len;
};
/* Answers q as the control service answers the same call (without the
 * permission check: the HTTP API is read-only). */
void control_query(struct cutd *d, struct control_query *q);

#endif /* CUT_CONTROL_H */
