/*
 * http.h - the daemon's HTTP listener (http.c): Prometheus metrics at
 * /metrics, the read-only JSON API under /v1/ and the web view at /, on
 * nng's HTTP server, when the node's http key sets an address.
 */
#ifndef CUT_HTTP_H
#define CUT_HTTP_H

#include <stdint.h>

struct cutd;

/* Requests that wait for the loop at once; more are answered 503. */
#define HTTP_QUEUE_MAX 32
/* Longest request target (path and query) accepted; longer: 414. */
#define HTTP_URI_MAX 2048
/* Largest request body accepted: none of the endpoints takes one, so a
 * body is refused (413 beyond this, 405 otherwise) unread. */
#define HTTP_BODY_MAX 4096
/* GET /v1/snapshots: snapshots per page, default and at most; and the
 * furthest offset. */
#define HTTP_LIST_DEFAULT 100
#define HTTP_LIST_MAX     1000
#define HTTP_OFFSET_MAX   100000
/* GET /v1/snapshots/{id}: messages per channel per page, default and at
 * most, and the payload bytes of one page over all channels. */
#define HTTP_MSG_DEFAULT 100
#define HTTP_MSG_MAX     1000
#define HTTP_MSG_BUDGET  (8u * 1024 * 1024)

/* Answers, by status class (1xx .. 5xx). */
#define HTTP_CLASSES 5
struct http_counts {
	uint64_t answered[HTTP_CLASSES];
};

/* Starts the listener of the node's http key, if any: 0, or -1 (logged)
 * when it cannot listen. */
int http_start(struct cutd *d);
/* The descriptor the loop polls for requests waiting for it, or -1. */
int http_fd(const struct cutd *d);
/* Answers the requests waiting for the loop (loop thread only). */
void http_serve(struct cutd *d);
/* Answers what still waits with 503, stops the listener and lets go of
 * it; nng frees the rest once its threads are done with it.  Accepts a
 * daemon without a listener. */
void http_stop(struct cutd *d);
void http_counts(struct cutd *d, struct http_counts *ret);

#endif /* CUT_HTTP_H */
