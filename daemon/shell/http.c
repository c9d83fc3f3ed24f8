/*
 * http.c - the daemon's HTTP listener: Prometheus metrics (/metrics), the
 * read-only JSON API (/v1/status, /v1/snapshots, /v1/snapshots/{id}) and
 * the web view (/), on nng's HTTP server.  Off unless the node's http
 * key names an address.
 *
 * Threads.  nng calls handle() on its own threads; the loop owns the
 * coordinator and the database.  handle() answers alone only what needs
 * neither (the page, a bad method, an oversized request) and queues the
 * rest: at most HTTP_QUEUE_MAX requests, under a mutex, with an eventfd
 * the loop polls; a full queue is answered 503 at once.  The loop
 * (http_serve()) takes the queue each turn it is readable, answers every
 * request as the control service would answer the same call
 * (control_query()) and finishes its aio.  nng keeps the request alive
 * until then, and a connection that closed meanwhile waits for it.  That
 * is simpler than publishing a copy of the stats each turn, serves the
 * database's snapshots too, and costs the loop nothing while nobody asks.
 *
 * What nng's threads share with the loop (struct shared) belongs to the
 * handler: nng frees it with the handler, once no thread of its can call
 * handle() any more, so stopping never races a late request.
 *
 * Bounds: the request target (HTTP_URI_MAX), no request body (refused
 * unread, and the connection closed), the queue, pages of snapshots and
 * of messages (count and bytes), and nng's own limit on a request's head.
 * Every refusal is a JSON document {"status": N, "error": S}.
 *
 * The API's paths but /metrics are the route column of the control
 * methods' table (proto/ctltab.h), each answered by the function of its
 * row's http column.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "control.h"
#include "ctljson.h"
#include "cutd.h"
#include "http.h"
#include "log.h"
#include "metrics.h"

/* The web view (daemon/web/index.html), embedded at build time. */
extern const unsigned char cutd_web_index[];
extern const size_t cutd_web_index_len;

struct job {
	nng_aio *aio;
	char uri[HTTP_URI_MAX + 1];
};

/* Between nng's threads and the loop; freed by nng with the handler. */
struct shared {
	pthread_mutex_t mx;
	int closed; /* the daemon stops: answer 503 */
	struct job jobs[HTTP_QUEUE_MAX];
	size_t njobs;
	int efd; /* readable while jobs wait */
	struct http_counts counts;
};

struct http {
	nng_http_server *srv;
	struct shared *sh;
	struct job work[HTTP_QUEUE_MAX]; /* the loop's, taken from sh */
};

static void
shared_free(void *arg)
{
	struct shared *sh = arg;

	if (sh->efd >= 0)
		close(sh->efd);
	pthread_mutex_destroy(&sh->mx);
	free(sh);
}

/* Answers aio with status and body (copied), and counts it.  Any
 * thread. */
static void
respond(struct shared *sh, nng_aio *aio, uint16_t status, const char *ctype,
        const void *body, size_t len, int close_conn)
{
	nng_http_res *res;
	int rv;

	if ((rv = nng_http_res_alloc(&res)) != 0) {
		nng_aio_finish(aio, rv); /* nng closes the connection */
		return;
	}
	if ((rv = nng_http_res_set_status(res, status)) != 0 ||
	    (rv = nng_http_res_set_header(res, "Content-Type", ctype)) != 0 ||
	    (rv = nng_http_res_set_header(res, "Cache-Control", "no-store")) !=
	        0 ||
	    (rv = nng_http_res_set_header(res, "X-Content-Type-Options",
	                                  "nosniff")) != 0 ||
	    (close_conn &&
	     (rv = nng_http_res_set_header(res, "Connection", "close")) != 0) ||
	    (status == 405 &&
	     (rv = nng_http_res_set_header(res, "Allow", "GET")) != 0) ||
	    (rv = nng_http_res_copy_data(res, body, len)) != 0) {
		nng_http_res_free(res);
		nng_aio_finish(aio, rv);
		return;
	}
	pthread_mutex_lock(&sh->mx);
	if (status >= 100 && status < 600)
		sh->counts.answered[status / 100 - 1]++;
	pthread_mutex_unlock(&sh->mx);
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

/* Answers aio with a JSON document, which it releases; NULL (out of
 * memory) is a 500. */
static void
respond_json(struct shared *sh, nng_aio *aio, uint16_t status, json_t *doc,
             int close_conn)
{
	char *text = doc != NULL ? json_dumps(doc, CJ_DUMP_FLAGS) : NULL, *nl;
	static const char oom[] =
	    "{\"status\": 500, \"error\": \"out of memory\"}\n";
	size_t len;

	json_decref(doc);
	if (text == NULL) {
		respond(sh, aio, 500, "application/json", oom, sizeof(oom) - 1,
		        1);
		return;
	}
	len = strlen(text);
	/* jansson writes no final newline; a terminal wants one. */
	if ((nl = realloc(text, len + 2)) != NULL) {
		text = nl;
		text[len++] = '\n';
		text[len] = '\0';
	}
	respond(sh, aio, status, "application/json", text, len, close_conn);
	free(text);
}

/* {"status": N, "error": "why"} */
static void
fail(struct shared *sh, nng_aio *aio, uint16_t status, const char *why,
     int close_conn)
{
	respond_json(sh, aio, status,
	             json_pack("{s:i, s:o}", "status", (int)status, "error",
	                       cj_string(why)),
	             close_conn);
}

/* On an nng thread: answers what needs no daemon state, queues the
 * rest for the loop. */
static void
handle(nng_aio *aio)
{
	nng_http_req *req = nng_aio_get_input(aio, 0);
	nng_http_handler *h = nng_aio_get_input(aio, 1);
	struct shared *sh = nng_http_handler_get_data(h);
	const char *method = nng_http_req_get_method(req);
	const char *uri = nng_http_req_get_uri(req);
	const char *cl = nng_http_req_get_header(req, "Content-Length");
	const char *te = nng_http_req_get_header(req, "Transfer-Encoding");
	size_t plen = strcspn(uri, "?");
	uint64_t one = 1;
	int body = te != NULL || (cl != NULL && strtoull(cl, NULL, 10) != 0);

	/* A body is never read: the connection goes with the answer. */
	if (te != NULL ||
	    (cl != NULL && strtoull(cl, NULL, 10) > HTTP_BODY_MAX)) {
		fail(sh, aio, 413, "request body too large", 1);
		return;
	}
	if (strcmp(method, "GET") != 0) {
		fail(sh, aio, 405, "only GET is served: the API is read-only",
		     body);
		return;
	}
	if (body) {
		fail(sh, aio, 400, "a GET request has no body", 1);
		return;
	}
	if (strlen(uri) > HTTP_URI_MAX) {
		fail(sh, aio, 414, "request target too long", 0);
		return;
	}
	if ((plen == 1 && uri[0] == '/') ||
	    (plen == 11 && strncmp(uri, "/index.html", 11) == 0)) {
		respond(sh, aio, 200, "text/html; charset=utf-8",
		        cutd_web_index, cutd_web_index_len, 0);
		return;
	}
	pthread_mutex_lock(&sh->mx);
	if (sh->closed || sh->njobs == HTTP_QUEUE_MAX) {
		int closed = sh->closed;
		pthread_mutex_unlock(&sh->mx);
		fail(sh, aio, 503,
		     closed ? "the daemon is stopping"
		            : "too many requests waiting; try again",
		     1);
		return;
	}
	sh->jobs[sh->njobs].aio = aio;
	memcpy(sh->jobs[sh->njobs].uri, uri, strlen(uri) + 1);
	sh->njobs++;
	pthread_mutex_unlock(&sh->mx);
	/* Fails only when the counter is full, and then it is readable. */
	if (write(sh->efd, &one, sizeof(one)) < 0)
		return;
}

int
http_start(struct cutd *d)
{
	const char *addr = d->cfg->nodes[d->self].http;
	nng_http_handler *h = NULL;
	struct shared *sh;
	nng_url *url = NULL;
	int rv;

	if (addr == NULL)
		return 0;
	if ((d->http = calloc(1, sizeof(*d->http))) == NULL) {
		log_err("http: out of memory");
		return -1;
	}
	if ((sh = calloc(1, sizeof(*sh))) == NULL) {
		log_err("http: out of memory");
		goto fail;
	}
	pthread_mutex_init(&sh->mx, NULL);
	if ((sh->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		log_err("http: eventfd: %s", strerror(errno));
		shared_free(sh);
		goto fail;
	}
	if ((rv = nng_http_handler_alloc(&h, "/", handle)) != 0) {
		shared_free(sh);
		goto nng_fail;
	}
	/* The handler owns sh from here: nng frees it with the handler. */
	if ((rv = nng_http_handler_set_data(h, sh, shared_free)) != 0) {
		shared_free(sh);
		nng_http_handler_free(h);
		goto nng_fail;
	}
	d->http->sh = sh;
	if ((rv = nng_http_handler_set_tree(h)) != 0 ||
	    (rv = nng_http_handler_set_method(h, NULL)) != 0 ||
	    (rv = nng_http_handler_collect_body(h, false, 0)) != 0 ||
	    (rv = nng_url_parse(&url, addr)) != 0) {
		nng_http_handler_free(h);
		goto nng_fail;
	}
	if ((rv = nng_http_server_hold(&d->http->srv, url)) != 0) {
		nng_http_handler_free(h);
		goto nng_fail;
	}
	if ((rv = nng_http_server_add_handler(d->http->srv, h)) != 0) {
		nng_http_handler_free(h);
		goto nng_fail;
	}
	if ((rv = nng_http_server_start(d->http->srv)) != 0)
		goto nng_fail;
	nng_url_free(url);
	log_info("http: metrics, API and web view on %s", addr);
	return 0;
nng_fail:
	log_err("http: cannot listen on %s: %s", addr, nng_strerror(rv));
	nng_url_free(url);
fail:
	if (d->http->srv != NULL)
		nng_http_server_release(d->http->srv);
	free(d->http);
	d->http = NULL;
	return -1;
}

int
http_fd(const struct cutd *d)
{
	return d->http != NULL ? d->http->sh->efd : -1;
}

/* Takes the next NAME=VALUE of the query string at *p: 1 with its
 * name and value (not NUL-ended), 0 at the end. */
static int
next_param(const char **p, const char **ret_name, size_t *ret_nlen,
           const char **ret_value, size_t *ret_vlen)
{
	size_t k, e;

	while (**p == '&')
		(*p)++;
	if (**p == '\0')
		return 0;
	k = strcspn(*p, "&");
	e = strcspn(*p, "=&");
	*ret_name = *p;
	*ret_nlen = e;
	*ret_value = *p + (e < k ? e + 1 : e);
	*ret_vlen = e < k ? k - e - 1 : 0;
	*p += k;
	return 1;
}

/* Reads the page of query qs, offset (0 .. off_max, default 0) and limit
 * (lim_min .. lim_max, default lim_def), the only parameters there may
 * be.  Returns 0, or -1 having answered 400 with the reason. */
static int
page_params(struct cutd *d, nng_aio *aio, const char *qs, uint64_t off_max,
            uint64_t lim_min, uint64_t lim_max, uint64_t lim_def,
            uint64_t *ret_offset, uint64_t *ret_limit)
{
	const char *name, *value;
	size_t nlen, vlen;
	char why[160], buf[24], *end;

	*ret_offset = 0;
	*ret_limit = lim_def;
	while (next_param(&qs, &name, &nlen, &value, &vlen)) {
		int off = nlen == 6 && strncmp(name, "offset", 6) == 0;
		uint64_t lo = off ? 0 : lim_min, hi = off ? off_max : lim_max;
		unsigned long long v;
		if (!off && !(nlen == 5 && strncmp(name, "limit", 5) == 0)) {
			snprintf(why, sizeof(why),
			         "unknown query parameter '%.*s'",
			         (int)(nlen < 64 ? nlen : 64), name);
			goto bad;
		}
		snprintf(buf, sizeof(buf), "%.*s",
		         (int)(vlen < sizeof(buf) - 1 ? vlen : sizeof(buf) - 1),
		         value);
		errno = 0;
		v = strtoull(buf, &end, 10);
		if (vlen >= sizeof(buf) - 1 || buf[0] < '0' || buf[0] > '9' ||
		    *end != '\0' || errno != 0 || v < lo || v > hi) {
			snprintf(why, sizeof(why),
			         "%s must be a whole number from %" PRIu64
			         " to %" PRIu64,
			         off ? "offset" : "limit", lo, hi);
			goto bad;
		}
		*(off ? ret_offset : ret_limit) = v;
	}
	return 0;
bad:
	fail(d->http->sh, aio, 400, why, 0);
	return -1;
}

/* Runs q; on failure answers with its words and returns -1. */
static int
query(struct cutd *d, nng_aio *aio, struct control_query *q)
{
	control_query(d, q);
	if (q->status == CUT__V1__STATUS_CODE__OK && q->body != NULL)
		return 0;
	/* The HTTP status of the gRPC status: the error table's
	 * (proto/errtab.h). */
	fail(d->http->sh, aio,
	     q->status == 0 ? 500 : (uint16_t)err_http_status(q->status),
	     q->message[0] != '\0' ? q->message : "the call failed", 0);
	free(q->body);
	return -1;
}

static void
get_metrics(struct cutd *d, nng_aio *aio)
{
	struct mbuf b = {0};

	metrics_collect(d, &b);
	if (b.oom)
		fail(d->http->sh, aio, 500, "out of memory", 0);
	else
		respond(d->http->sh, aio, 200,
		        "text/plain; version=0.0.4; charset=utf-8", b.p, b.len,
		        0);
	free(b.p);
}

/* The API's answer to a method's route (ctltab.h's http column): method
 * is the row's, id the snapshot id in place of the route's "{id}" (or
 * NULL) and qs the query string. */
typedef void route_fn(struct cutd *d, nng_aio *aio, const char *method,
                      const char *id, const char *qs);

static void
http_status(struct cutd *d, nng_aio *aio, const char *method, const char *id,
            const char *qs)
{
	struct control_query q = {.method = method};
	Cut__V1__StatusReply *rp;

	(void)id, (void)qs;
	if (query(d, aio, &q) != 0)
		return;
	rp = cut__v1__status_reply__unpack(NULL, q.len, q.body);
	free(q.body);
	if (rp == NULL) {
		fail(d->http->sh, aio, 500, "cannot read the status", 0);
		return;
	}
	respond_json(d->http->sh, aio, 200, status_json(rp), 0);
	cut__v1__status_reply__free_unpacked(rp, NULL);
}

static void
http_list(struct cutd *d, nng_aio *aio, const char *method, const char *id,
          const char *qs)
{
	Cut__V1__ListRequest rq = CUT__V1__LIST_REQUEST__INIT;
	struct control_query q = {.method = method};
	Cut__V1__ListReply *rp, page;
	uint64_t offset, limit;
	uint8_t buf[32];
	json_t *doc;
	size_t more;

	(void)id;
	if (page_params(d, aio, qs, HTTP_OFFSET_MAX, 1, HTTP_LIST_MAX,
	                HTTP_LIST_DEFAULT, &offset, &limit) != 0)
		return;
	/* One more than the page, to tell whether there are more. */
	rq.limit = (uint32_t)(offset + limit + 1);
	q.req = buf;
	q.req_len = cut__v1__list_request__pack(&rq, buf);
	if (query(d, aio, &q) != 0)
		return;
	rp = cut__v1__list_reply__unpack(NULL, q.len, q.body);
	free(q.body);
	if (rp == NULL) {
		fail(d->http->sh, aio, 500, "cannot read the list", 0);
		return;
	}
	page = *rp;
	page.n_snapshots =
	    rp->n_snapshots > offset ? rp->n_snapshots - (size_t)offset : 0;
	more = page.n_snapshots > limit;
	if (more)
		page.n_snapshots = (size_t)limit;
	page.snapshots = rp->snapshots + (page.n_snapshots ? offset : 0);
	doc = list_json(&page);
	doc = cj_set(doc, "offset", json_integer((json_int_t)offset));
	doc = cj_set(doc, "limit", json_integer((json_int_t)limit));
	doc = cj_set(doc, "more", json_boolean(more));
	respond_json(d->http->sh, aio, 200, doc, 0);
	cut__v1__list_reply__free_unpacked(rp, NULL);
}

static void
http_snapshot(struct cutd *d, nng_aio *aio, const char *method, const char *id,
              const char *qs)
{
	Cut__V1__GetRequest rq = CUT__V1__GET_REQUEST__INIT;
	struct control_query q = {.method = method,
	                          .msg_budget = HTTP_MSG_BUDGET};
	Cut__V1__SnapshotInfo *in;
	uint8_t buf[ENGINE_ID_MAX + 32];
	json_t *doc;

	if (!engine_id_valid(id)) {
		fail(d->http->sh, aio, 400, "not a snapshot id", 0);
		return;
	}
	if (page_params(d, aio, qs, UINT32_MAX, 0, HTTP_MSG_MAX,
	                HTTP_MSG_DEFAULT, &q.msg_offset, &q.msg_limit) != 0)
		return;
	rq.snapshot_id = (char *)id;
	rq.has_include_states = rq.has_include_messages = 1;
	rq.include_states = 1;
	rq.include_messages = q.msg_limit > 0;
	q.req = buf;
	q.req_len = cut__v1__get_request__pack(&rq, buf);
	if (query(d, aio, &q) != 0)
		return;
	in = cut__v1__snapshot_info__unpack(NULL, q.len, q.body);
	free(q.body);
	if (in == NULL) {
		fail(d->http->sh, aio, 500, "cannot read the snapshot", 0);
		return;
	}
	doc = snapshot_json(in, q.msg_limit > 0 ? DETAIL_EXPORT : DETAIL_SHOW);
	doc = cj_set(doc, "messages_offset",
	             json_integer((json_int_t)q.msg_offset));
	doc = cj_set(doc, "messages_limit",
	             json_integer((json_int_t)q.msg_limit));
	respond_json(d->http->sh, aio, 200, doc, 0);
	cut__v1__snapshot_info__free_unpacked(in, NULL);
}

/* Decodes %XX in s (at most len bytes) into buf: 0, or -1 if malformed
 * or it would hold a NUL. */
static int
unescape(const char *s, size_t len, char *buf, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned v;
		if (n + 1 >= cap)
			return -1;
		if (s[i] != '%') {
			buf[n++] = s[i];
			continue;
		}
		if (i + 2 >= len)
			return -1;
		if (sscanf(s + i + 1, "%2x", &v) != 1 || v == 0)
			return -1;
		buf[n++] = (char)v;
		i += 2;
	}
	buf[n] = '\0';
	return 0;
}

/* The API's routes: the route and http columns of the methods' table
 * (ctltab.h), row for row; a row without a route has none. */
#define ROUTE(method, req, reply, handler, perm, answer, route, http, ...)     \
	{route, method, http},
static const struct {
	const char *route, *method;
	route_fn *fn;
} routes[CTLTAB_NROWS] = {CUT_CTLTAB(ROUTE)};
#undef ROUTE

/* Whether another route names the items of route's collection: route
 * followed by "/{id}". */
static int
has_items(const char *route)
{
	size_t n = strlen(route);

	for (size_t i = 0; i < CTLTAB_NROWS; i++)
		if (routes[i].route != NULL &&
		    strncmp(routes[i].route, route, n) == 0 &&
		    strcmp(routes[i].route + n, "/{id}") == 0)
			return 1;
	return 0;
}

/* Whether path (decoded, without the query) is route's: the same path;
 * for a route ending in "{id}", the part before it and then a snapshot
 * id, not empty (*ret_id, in path); or a collection's path (has_items())
 * and a "/".  *ret_id is NULL for a route without "{id}", and untouched
 * when path is not route's. */
static int
route_match(const char *route, const char *path, const char **ret_id)
{
	size_t n = strlen(route);

	if (n >= 4 && strcmp(route + n - 4, "{id}") == 0) {
		if (strncmp(path, route, n - 4) != 0 || path[n - 4] == '\0')
			return 0;
		*ret_id = path + n - 4;
		return 1;
	}
	if (strncmp(path, route, n) != 0 ||
	    (path[n] != '\0' &&
	     !(strcmp(path + n, "/") == 0 && has_items(route))))
		return 0;
	*ret_id = NULL;
	return 1;
}

/* 404, naming the paths there are: /metrics and the table's routes, in
 * its order, "{id}" written ID. */
static void
not_found(struct shared *sh, nng_aio *aio)
{
	char msg[512];
	size_t n = 0, k = 0, left = 1;

	for (size_t i = 0; i < CTLTAB_NROWS; i++)
		left += routes[i].route != NULL;
	n = (size_t)snprintf(msg, sizeof(msg), "no such resource: try /metrics");
	for (size_t i = 0; i < CTLTAB_NROWS && n < sizeof(msg); i++) {
		const char *r = routes[i].route;
		size_t len;
		if (r == NULL)
			continue;
		k++;
		len = strlen(r);
		if (len >= 4 && strcmp(r + len - 4, "{id}") == 0)
			len -= 4;
		n += (size_t)snprintf(msg + n, sizeof(msg) - n, "%s%.*s%s",
		                      k + 1 == left ? " or " : ", ", (int)len,
		                      r, len < strlen(r) ? "ID" : "");
	}
	fail(sh, aio, 404, msg, 0);
}

/* One request, on the loop thread. */
static void
route(struct cutd *d, nng_aio *aio, const char *uri)
{
	size_t plen = strcspn(uri, "?");
	const char *qs = uri[plen] == '?' ? uri + plen + 1 : "", *id;
	char path[HTTP_URI_MAX + 1];

	if (unescape(uri, plen, path, sizeof(path)) != 0) {
		fail(d->http->sh, aio, 400, "malformed path", 0);
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		get_metrics(d, aio);
		return;
	}
	for (size_t i = 0; i < CTLTAB_NROWS; i++)
		if (routes[i].route != NULL &&
		    route_match(routes[i].route, path, &id)) {
			routes[i].fn(d, aio, routes[i].method, id, qs);
			return;
		}
	not_found(d->http->sh, aio);
}

void
http_serve(struct cutd *d)
{
	struct http *h = d->http;
	uint64_t v;
	size_t n;

	if (h == NULL)
		return;
	if (read(h->sh->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warnx("http: cannot read the wake-up: %s", strerror(errno));
	pthread_mutex_lock(&h->sh->mx);
	n = h->sh->njobs;
	memcpy(h->work, h->sh->jobs, n * sizeof(*h->work));
	h->sh->njobs = 0;
	pthread_mutex_unlock(&h->sh->mx);
	for (size_t i = 0; i < n; i++)
		route(d, h->work[i].aio, h->work[i].uri);
}

void
http_stop(struct cutd *d)
{
	struct http *h = d->http;
	size_t n;

	if (h == NULL)
		return;
	pthread_mutex_lock(&h->sh->mx);
	h->sh->closed = 1;
	n = h->sh->njobs;
	memcpy(h->work, h->sh->jobs, n * sizeof(*h->work));
	h->sh->njobs = 0;
	pthread_mutex_unlock(&h->sh->mx);
	for (size_t i = 0; i < n; i++)
		fail(h->sh, h->work[i].aio, 503, "the daemon is stopping", 1);
	nng_http_server_stop(h->srv);
	nng_http_server_release(h->srv);
	free(h);
	d->http = NULL;
}

void
http_counts(struct cutd *d, struct http_counts *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (d->http == NULL)
		return;
	pthread_mutex_lock(&d->http->sh->mx);
	*ret = d->http->sh->counts;
	pthread_mutex_unlock(&d->http->sh->mx);
}
