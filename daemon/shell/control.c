/*
 * control.c - the control service: gRPC-style calls over nng req/rep.
 *
 * Every request is an RpcRequest naming a method; every reply an RpcReply
 * with a gRPC status code and a message.  The socket is a raw rep0 socket,
 * so a Wait call can be answered later without holding up other calls.
 * Recent replies are kept by request id: a resent request gets the same
 * answer and is not executed twice.
 *
 * The methods are the rows of one table, proto/ctltab.h: run() decodes a
 * request with its row's message type, checks a required snapshot_id,
 * and calls the row's handler (do_*); the row says whether an OK answer
 * is held until the turn's commit, and which methods the HTTP API may
 * call (control_query()).
 *
 * Who may call what is perm.c's decision, made here from the credentials
 * of the request's connection before the method runs; Start calls are
 * also bounded (snapshots in flight, a token bucket).  Refusals answer
 * PERMISSION_DENIED or RESOURCE_EXHAUSTED with a sentence naming the
 * method and the reason, and change nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "cutd.h"
#include "control.h"
#include "cutproto.h"
#include "ipcprobe.h"
#include "log.h"
#include "perm.h"
#include "tls.h"

#define RECV_PER_TURN 64
#define MAX_WAIT_MS   (10 * 60 * 1000)
/* How long the control listener may take to accept the probe's
 * connection (ipcprobe.h) before it is started again: a local accept
 * takes well under a millisecond, but a daemon on a machine loaded 15
 * times over its cores was seen to take 400 ms to see it, and a restart
 * costs connected clients a resend. */
#define PROBE_WAIT_MS 1000

/* Allocations that live until a reply is packed. */
struct arena {
	void **v;
	size_t n, cap;
};

static void *
arena_alloc(struct arena *a, size_t len)
{
	void *p;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		void **v = realloc(a->v, cap * sizeof(*v));
		if (v == NULL)
			return NULL;
		a->v = v;
		a->cap = cap;
	}
	if ((p = calloc(1, len ? len : 1)) != NULL)
		a->v[a->n++] = p;
	return p;
}

static char *
arena_dup(struct arena *a, const void *s, size_t len)
{
	char *p = arena_alloc(a, len + 1);

	if (p != NULL)
		memcpy(p, s, len);
	return p;
}

static void
arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

/* A reply being built: status, message and packed body. */
struct reply {
	int32_t status;
	char message[256];
	uint8_t *body;
	size_t len;
	int has_body;
	int deferred; /* a Wait call kept the request for later */
};

/* The call a handler answers: its request, which a method answered LATER
 * may keep (it then sets the reply's deferred), the request's id, and for
 * the HTTP API the page of each channel's messages to return. */
struct call {
	nng_msg *req;
	uint64_t request_id;
	const struct control_query *page; /* NULL: every message */
};

/* A method's handler (ctltab.h): answers rq, the request decoded with the
 * row's descriptor (NULL for a request message without fields), in r.
 * rq is borrowed until it returns. */
typedef void handler_fn(struct cutd *d, const struct call *c,
                        const ProtobufCMessage *rq, struct reply *r);

/* Fails r with the gRPC status of err, an internal code (cuterr.h), as
 * the error table says (proto/errtab.h, through err_grpc()): the daemon
 * answers no status but through the table. */
static void
fail(struct reply *r, int err, const char *message)
{
	r->status = err_grpc(err);
	snprintf(r->message, sizeof(r->message), "%s", message);
}

/* Fails r with err's status and the words of e (or err_str(err)). */
static void
fail_err(struct reply *r, int err, const struct errinfo *e)
{
	fail(r, err, e != NULL && e->text[0] != '\0' ? e->text : err_str(err));
}

/* Fails r with the error rv of a call on the store: a damaged or
 * unreadable database answers UNAVAILABLE, "storage: " and SQLite's
 * words. */
static void
fail_store(struct cutd *d, struct reply *r, int rv)
{
	if (rv == E_CORRUPT || rv == E_IO)
		snprintf(r->message, sizeof(r->message), "storage: %.200s",
		         store_errmsg(d->store));
	else
		snprintf(r->message, sizeof(r->message), "%s",
		         store_errmsg(d->store));
	r->status = err_grpc(rv);
}

static void
set_body(struct reply *r, const ProtobufCMessage *m)
{
	r->len = protobuf_c_message_get_packed_size(m);
	if ((r->body = malloc(r->len ? r->len : 1)) == NULL) {
		fail(r, E_NOMEM, "out of memory");
		return;
	}
	protobuf_c_message_pack(m, r->body);
	r->has_body = 1;
}

/* Gives the socket at path (of an ipc:// URL) to the socket group.  A
 * socket that has it already (the group is the daemon's own) is left
 * alone: the systemd unit forbids chown() (@privileged), and a forbidden
 * system call kills the daemon. */
static int
chown_socket(struct cutd *d, const char *path)
{
	const struct config *cfg = d->cfg;
	struct stat sb;

	if (cfg->socket_gid < 0 ||
	    (stat(path, &sb) == 0 && (long)sb.st_gid == cfg->socket_gid) ||
	    chown(path, (uid_t)-1, (gid_t)cfg->socket_gid) == 0)
		return 0;
	log_err("cannot give %s to group %s: %s (the daemon's user must be "
	        "a member of the group, or root)",
	        path, cfg->socket_group, strerror(errno));
	return NNG_EPERM;
}

int
control_listen(struct cutd *d, nng_socket s, const char *url, nng_listener *ret)
{
	int ipc = strncmp(url, "ipc://", 6) == 0;
	nng_listener l;
	int rv;

	/* nng sets the mode after bind(), whatever the umask: no moment
	 * when the socket is open to others. */
	if ((rv = nng_listener_create(&l, s, url)) != 0 ||
	    (ipc && (rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS,
	                                       0660)) != 0) ||
	    (rv = nng_listener_start(l, 0)) != 0) {
		log_err("cannot listen on %s: %s", url, nng_strerror(rv));
		return rv;
	}
	*ret = l;
	return ipc ? chown_socket(d, url + 6) : 0;
}

/* Runs on nng's reaper thread as it lets go of a control connection. */
static void
ctl_pipe_removed(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	(void)ev;
	ipcprobe_removed(arg, (uint32_t)nng_pipe_id(pipe));
}

int
control_start(struct cutd *d)
{
	const char *url = d->cfg->nodes[d->self].control;
	nng_listener l;
	int rv;

	if ((rv = nng_rep0_open_raw(&d->ctl)) != 0)
		return rv;
	nng_socket_set_size(d->ctl, NNG_OPT_RECVMAXSZ, 64 * 1024);
	/* Replies are sent without blocking.  With nng's default send
	 * buffer of 0, such a send fails whenever nng's own thread has not
	 * yet come back for the previous reply, and the client waits out
	 * its timeout: seen as Wait calls taking 7.5 s under load. */
	nng_socket_set_int(d->ctl, NNG_OPT_SENDBUF, 64);
	if ((rv = control_listen(d, d->ctl, url, &l)) != 0 ||
	    (rv = ipcprobe_start(&d->ctl_probe, d->ctl, l, url, "control",
	                         PROBE_WAIT_MS)) != 0)
		return rv;
	/* This probe also watches nng's reaper (ipcprobe.h). */
	d->ctl_probe.reap_check = 1;
	return nng_pipe_notify(d->ctl, NNG_PIPE_EV_REM_POST, ctl_pipe_removed,
	                       &d->ctl_probe);
}

void
control_timers(struct cutd *d, int64_t now)
{
	const char *url = d->cfg->nodes[d->self].control;
	nng_listener l;

	if (!d->damaged_logged && control_damaged(d)[0] != '\0') {
		log_err(
		    "storage damaged: %s (found at run time); new snapshots "
		    "are refused, and so is every call that meets the "
		    "damage.  Stop cutd and move the database aside (see "
		    "Troubleshooting in the README)",
		    control_damaged(d));
		d->damaged_logged = 1;
	}
	switch (ipcprobe_check(&d->ctl_probe, now)) {
	case IPCPROBE_DEAF:
		break;
	case IPCPROBE_STUCK:
		d->restart = 1; /* the loop ends, main() starts cutd again */
		return;
	default:
		return;
	}
	/* Its clients' connections close with it: a reply to one is lost,
	 * and the client sends its request again with the same id, which
	 * gets the kept reply (or the same wait, for Wait). */
	nng_listener_close(d->ctl_probe.listener);
	/* If listening fails, the next try is the next periodic probe's. */
	ipcprobe_stop(&d->ctl_probe);
	if (control_listen(d, d->ctl, url, &l) == 0)
		ipcprobe_listening(&d->ctl_probe, l);
}

const char *
control_damaged(struct cutd *d)
{
	const char *why = store_damaged(d->store);

	return why[0] != '\0' ? why : d->cond_damaged;
}

void
control_storage_damaged(struct cutd *d, const char *why)
{
	if (d->cond_damaged[0] == '\0')
		snprintf(d->cond_damaged, sizeof(d->cond_damaged), "%s", why);
}

void
control_free(struct cutd *d)
{
	ipcprobe_stop(&d->ctl_probe);
	control_committed(d, 1);
	while (d->waiters != NULL) {
		struct waiter *w = d->waiters;
		d->waiters = w->next;
		nng_msg_free(w->req);
		free(w);
	}
	d->nwaiters = 0;
	if (d->restore_req != NULL)
		nng_msg_free(d->restore_req);
	d->restore_req = NULL;
	for (size_t i = 0; i < 64; i++) {
		if (d->replies[i].reply != NULL)
			nng_msg_free(d->replies[i].reply);
		d->replies[i].reply = NULL;
	}
}

/* Sends reply r to the request req (whose header routes it back). */
static void
send_reply(struct cutd *d, nng_msg *req, uint64_t request_id,
           const struct reply *r)
{
	Cut__V1__RpcReply rr = CUT__V1__RPC_REPLY__INIT;
	nng_msg *msg, *copy;
	size_t len;

	rr.request_id = request_id;
	rr.status = r->status;
	rr.message = (char *)r->message;
	rr.has_body = r->has_body;
	rr.body.data = r->body;
	rr.body.len = r->len;
	len = cut__v1__rpc_reply__get_packed_size(&rr);
	if (nng_msg_alloc(&msg, len) != 0)
		return;
	cut__v1__rpc_reply__pack(&rr, nng_msg_body(msg));
	if (request_id != 0 && nng_msg_dup(&copy, msg) == 0) {
		size_t k = d->next_reply++ % 64;
		if (d->replies[k].reply != NULL)
			nng_msg_free(d->replies[k].reply);
		d->replies[k].id = request_id;
		d->replies[k].reply = copy;
	}
	nng_msg_header_append(msg, nng_msg_header(req),
	                      nng_msg_header_len(req));
	if (nng_sendmsg(d->ctl, msg, NNG_FLAG_NONBLOCK) != 0) {
		log_warnx("control reply dropped: the send buffer is full; "
		          "the client will resend");
		nng_msg_free(msg);
	}
}

/* Resends the kept reply to a request id seen before; 1 if there was one. */
static int
resend(struct cutd *d, nng_msg *req, uint64_t request_id)
{
	nng_msg *msg;

	for (size_t i = 0; i < 64; i++) {
		if (d->replies[i].reply == NULL ||
		    d->replies[i].id != request_id)
			continue;
		if (nng_msg_dup(&msg, d->replies[i].reply) != 0)
			return 1;
		nng_msg_header_append(msg, nng_msg_header(req),
		                      nng_msg_header_len(req));
		if (nng_sendmsg(d->ctl, msg, NNG_FLAG_NONBLOCK) != 0)
			nng_msg_free(msg);
		return 1;
	}
	return 0;
}

struct info_ctx {
	struct cutd *d;
	struct arena *a;
	Cut__V1__SnapshotInfo *info;
	int states, messages;
	Cut__V1__ChannelState *chan; /* messages being collected */
	size_t cap;
	int rv;
	/* The page of each channel's messages to collect (the HTTP API's):
	 * from the offset-th, at most limit, while the payload bytes of the
	 * whole reply stay within budget (but at least one per channel);
	 * seen counts those passed. */
	uint64_t offset, limit, budget, seen;
};

/* What add_message() returns to stop a channel's messages at the end of
 * the page: no error code is 1. */
#define PAGE_FULL 1

static int
add_state(const char *node, const char *ctype, const void *state, size_t len,
          void *arg)
{
	struct info_ctx *c = arg;
	Cut__V1__SnapshotInfo *in = c->info;
	Cut__V1__NodeState *ns = arena_alloc(c->a, sizeof(*ns));

	if (ns == NULL)
		return E_NOMEM;
	cut__v1__node_state__init(ns);
	ns->node = arena_dup(c->a, node, strlen(node));
	ns->content_type = arena_dup(c->a, ctype, strlen(ctype));
	ns->state_size = len;
	if (c->states) {
		ns->has_state = 1;
		ns->state.data = (uint8_t *)arena_dup(c->a, state, len);
		ns->state.len = len;
	}
	in->nodes[in->n_nodes++] = ns;
	return 0;
}

static int
add_message(uint64_t seq, const char *ctype, const void *p, size_t len,
            void *arg)
{
	struct info_ctx *c = arg;
	Cut__V1__ChannelState *cs = c->chan;
	Cut__V1__ChannelMessage *m;

	if (c->seen++ < c->offset)
		return 0;
	if (cs->n_messages >= c->limit ||
	    (cs->n_messages > 0 && len > c->budget))
		return PAGE_FULL;
	c->budget -= len < c->budget ? len : c->budget;
	if (cs->n_messages == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		Cut__V1__ChannelMessage **v =
		    arena_alloc(c->a, cap * sizeof(*v));
		if (v == NULL)
			return E_NOMEM;
		if (cs->n_messages > 0)
			memcpy(v, cs->messages, cs->n_messages * sizeof(*v));
		cs->messages = v;
		c->cap = cap;
	}
	if ((m = arena_alloc(c->a, sizeof(*m))) == NULL)
		return E_NOMEM;
	cut__v1__channel_message__init(m);
	m->seq = seq;
	m->content_type = ctype ? arena_dup(c->a, ctype, strlen(ctype)) : NULL;
	m->payload.data = (uint8_t *)arena_dup(c->a, p, len);
	m->payload.len = len;
	cs->messages[cs->n_messages++] = m;
	return 0;
}

static int
add_channel(const struct store_channel *ch, void *arg)
{
	struct info_ctx *c = arg;
	Cut__V1__SnapshotInfo *in = c->info;
	Cut__V1__ChannelState *cs = arena_alloc(c->a, sizeof(*cs));

	if (cs == NULL)
		return E_NOMEM;
	cut__v1__channel_state__init(cs);
	cs->src = arena_dup(c->a, ch->src, strlen(ch->src));
	cs->dst = arena_dup(c->a, ch->dst, strlen(ch->dst));
	cs->m = ch->m;
	cs->n = ch->n;
	cs->count = ch->recorded;
	in->channels[in->n_channels++] = cs;
	return 0;
}

static int
add_condition(const char *name, int held, const char *detail, void *arg)
{
	struct info_ctx *c = arg;
	Cut__V1__SnapshotInfo *in = c->info;
	Cut__V1__ConditionResult *cr;

	if (in->n_conditions == CONFIG_MAX_CONDITIONS)
		return 0; /* more rows than the file has conditions: old ones */
	if ((cr = arena_alloc(c->a, sizeof(*cr))) == NULL)
		return E_NOMEM;
	cut__v1__condition_result__init(cr);
	cr->name = arena_dup(c->a, name, strlen(name));
	cr->has_held = held >= 0;
	cr->held = held == 1;
	cr->detail = arena_dup(c->a, detail, strlen(detail));
	in->conditions[in->n_conditions++] = cr;
	return 0;
}

static void
fill_summary(struct cutd *d, struct arena *a, const struct store_snapshot *ss,
             Cut__V1__SnapshotInfo *in)
{
	struct coord_snap_view v;

	coord_snapshot_view(d->coord, ss->id, &v);
	cut__v1__snapshot_info__init(in);
	in->id = arena_dup(a, ss->id, strlen(ss->id));
	in->initiator = arena_dup(a, ss->initiator, strlen(ss->initiator));
	in->status = ss->status == STORE_COMPLETE
	                 ? CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE
	             : ss->status == STORE_ABORTED
	                 ? CUT__V1__SNAPSHOT_INFO__STATUS__ABORTED
	                 : CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS;
	in->reason = arena_dup(a, ss->reason, strlen(ss->reason));
	in->started_ms = (uint64_t)ss->started_ms;
	in->finished_ms = (uint64_t)ss->finished_ms;
	in->parts_expected = ss->parts_expected;
	in->parts_received = ss->parts;
	if (v.known && v.initiator)
		in->parts_received = v.parts_received;
	in->channels_recording = v.channels_recording;
	/* Only memory knows the deadline: the database does not keep it. */
	in->has_deadline_ms = v.known && v.deadline_wall_ms > 0;
	in->deadline_ms = (uint64_t)v.deadline_wall_ms;
	in->has_holds_all = 1;
	in->holds_all = ss->is_initiator;
	in->has_keep = 1;
	in->keep = ss->keep != 0;
	if (!ss->is_initiator) {
		/* A participant says what the initiator said, once it has
		 * heard it; its own part's end stays beside it. */
		in->has_outcome_known = 1;
		in->outcome_known = ss->outcome_ms != 0;
		if (ss->outcome_ms != 0)
			in->parts_received = ss->outcome_parts;
		if (ss->part_status != STORE_IN_PROGRESS ||
		    ss->status != STORE_IN_PROGRESS)
			in->part_status =
			    (ss->outcome_ms != 0 ? ss->part_status
			                         : ss->status) == STORE_COMPLETE
			        ? "complete"
			        : "aborted";
	}
	if (ss->consistent >= 0) {
		Cut__V1__AuditVerdict *v = arena_alloc(a, sizeof(*v));
		if (v != NULL) {
			cut__v1__audit_verdict__init(v);
			v->consistent = ss->consistent == 1;
			v->reason = arena_dup(a, ss->audit_reason,
			                      strlen(ss->audit_reason));
			in->audit = v;
		}
	}
	/* The database's row is older than the end it could not store. */
	if (v.unsaved) {
		in->status = CUT__V1__SNAPSHOT_INFO__STATUS__ABORTED;
		in->reason = arena_dup(a, v.row.reason, strlen(v.row.reason));
		in->audit = NULL;
	}
}

/* Fills info for snapshot id from the store, with the page q asks of
 * each channel's messages: E_NOENT if unknown. */
static int
build_info(struct cutd *d, struct arena *a, const char *id, int states,
           int messages, const struct control_query *q,
           Cut__V1__SnapshotInfo *in)
{
	struct info_ctx c = {.d = d,
	                     .a = a,
	                     .info = in,
	                     .states = states,
	                     .messages = messages,
	                     .offset = q->msg_offset,
	                     .limit = q->msg_limit,
	                     .budget = q->msg_budget};
	struct store_snapshot ss;
	struct coord_snap_view v;
	size_t max = d->cfg->nnodes + d->cfg->nchans + 1;
	int rv;

	if ((rv = store_get(d->store, id, &ss)) == E_NOENT) {
		coord_snapshot_view(d->coord, id, &v);
		if (v.unsaved) {
			ss = v.row; /* its row was in a batch that was lost */
			rv = 0;
		}
	}
	if (rv != 0)
		return rv;
	fill_summary(d, a, &ss, in);
	in->nodes = arena_alloc(a, max * sizeof(*in->nodes));
	in->channels = arena_alloc(a, max * sizeof(*in->channels));
	if (in->nodes == NULL || in->channels == NULL)
		return E_NOMEM;
	in->conditions =
	    arena_alloc(a, CONFIG_MAX_CONDITIONS * sizeof(*in->conditions));
	if (in->conditions == NULL)
		return E_NOMEM;
	if ((rv = store_foreach_state(d->store, id, add_state, &c)) != 0 ||
	    (rv = store_foreach_channel(d->store, id, add_channel, &c)) != 0 ||
	    (rv = store_foreach_condition(d->store, id, add_condition, &c)) !=
	        0)
		return rv;
	for (size_t i = 0; messages && i < in->n_channels; i++) {
		c.chan = in->channels[i];
		c.cap = 0;
		c.seen = 0;
		rv = store_foreach_message(d->store, id, c.chan->src,
		                           c.chan->dst, add_message, &c);
		if (rv != 0 && rv != PAGE_FULL)
			return rv;
	}
	return 0;
}

static void
info_page_reply(struct cutd *d, struct reply *r, const char *id, int states,
                int messages, const struct control_query *q)
{
	Cut__V1__SnapshotInfo in;
	struct arena a = {0};
	int rv = build_info(d, &a, id, states, messages, q, &in);

	if (rv == E_NOENT)
		fail(r, E_NOENT, "no such snapshot");
	else if (rv != 0)
		fail_store(d, r, rv);
	else
		set_body(r, &in.base);
	arena_free(&a);
}

static void
info_reply(struct cutd *d, struct reply *r, const char *id, int states,
           int messages)
{
	static const struct control_query all = {.msg_limit = UINT64_MAX,
	                                         .msg_budget = UINT64_MAX};

	info_page_reply(d, r, id, states, messages, &all);
}

/* Refuses a Start beyond the limits, in r; returns 1 if it did.  The
 * in-flight bound is checked first, so that a call it refuses costs no
 * token. */
static int
start_limited(struct cutd *d, struct reply *r)
{
	const struct config *cfg = d->cfg;
	size_t n = coord_initiated_in_flight(d->coord);
	int64_t now = cutd_now_ms();

	if (n >= cfg->max_inflight) {
		snprintf(r->message, sizeof(r->message),
		         "%s refused: %zu snapshots started at %s are still in "
		         "flight (max_snapshots_in_flight = %u); wait for one "
		         "to end",
		         CUTPROTO_METHOD_START, n, d->name, cfg->max_inflight);
	} else if (!perm_bucket_take(&d->start_bucket, cfg->start_rate,
	                             cfg->start_burst, now)) {
		snprintf(r->message, sizeof(r->message),
		         "%s refused: over start_rate = %u per second "
		         "(start_burst = %u); try again in %" PRId64 " ms",
		         CUTPROTO_METHOD_START, cfg->start_rate,
		         cfg->start_burst,
		         perm_bucket_wait_ms(&d->start_bucket, cfg->start_rate,
		                             cfg->start_burst, now));
	} else {
		return 0;
	}
	r->status = err_grpc(E_LIMIT);
	d->starts_limited++;
	log_notice("control: %s", r->message);
	return 1;
}

/* While the database does not take writes, calls that write are refused:
 * E_STORAGE, UNAVAILABLE, since retrying later may succeed.  So are new
 * snapshots once the file was found damaged: they would be written into
 * it (E_CORRUPT, UNAVAILABLE too, as every call that meets the damage).
 * Returns 1 if refused. */
static int
storage_degraded(struct cutd *d, struct reply *r)
{
	const char *why = coord_degraded(d->coord);
	int err = E_STORAGE;

	if (why[0] == '\0' && (why = control_damaged(d))[0] != '\0') {
		snprintf(r->message, sizeof(r->message),
		         "storage damaged: %.160s; stop cutd and move the "
		         "database aside",
		         why);
		err = E_CORRUPT;
	} else if (why[0] != '\0') {
		snprintf(r->message, sizeof(r->message),
		         "storage degraded: %.200s", why);
	} else {
		return 0;
	}
	r->status = err_grpc(err);
	return 1;
}

static void
do_start(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
         struct reply *r)
{
	const Cut__V1__StartRequest *rq = (const Cut__V1__StartRequest *)msg;
	Cut__V1__StartReply rp = CUT__V1__START_REPLY__INIT;
	char id[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	uint32_t timeout = rq->has_timeout_ms ? rq->timeout_ms : 0;
	int rv;

	(void)c;
	if (timeout != 0 && (timeout < 100 || timeout > 3600000)) {
		fail(r, E_INVAL, "timeout_ms must be 100..3600000");
		return;
	}
	if (storage_degraded(d, r) || start_limited(d, r))
		return;
	if ((rv = coord_start(d->coord, timeout, id, &e)) != 0) {
		fail_err(r, rv, &e);
		return;
	}
	rp.snapshot_id = id;
	rp.started_ms = (uint64_t)cutd_wall_ms();
	set_body(r, &rp.base);
}

static void
do_get(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
       struct reply *r)
{
	const Cut__V1__GetRequest *rq = (const Cut__V1__GetRequest *)msg;

	if (c->page != NULL)
		info_page_reply(d, r, rq->snapshot_id, rq->include_states,
		                rq->include_messages, c->page);
	else
		info_reply(d, r, rq->snapshot_id, rq->include_states,
		           rq->include_messages);
}

struct list_ctx {
	struct cutd *d;
	struct arena *a;
	Cut__V1__ListReply *rp;
	size_t cap;
	uint32_t limit;
	int status; /* 0 any */
};

static int
list_one(const struct store_snapshot *ss, void *arg)
{
	struct list_ctx *c = arg;
	Cut__V1__SnapshotInfo *in;

	if (c->limit && c->rp->n_snapshots >= c->limit)
		return 1;
	if ((in = arena_alloc(c->a, sizeof(*in))) == NULL)
		return E_NOMEM;
	fill_summary(c->d, c->a, ss, in);
	if (c->status != 0 && (int)in->status != c->status)
		return 0;
	if (c->rp->n_snapshots == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		void *v = arena_alloc(c->a, cap * sizeof(in));
		if (v == NULL)
			return E_NOMEM;
		if (c->cap)
			memcpy(v, c->rp->snapshots, c->cap * sizeof(in));
		c->rp->snapshots = v;
		c->cap = cap;
	}
	c->rp->snapshots[c->rp->n_snapshots++] = in;
	return 0;
}

static void
do_list(struct cutd *d, const struct call *call, const ProtobufCMessage *msg,
        struct reply *r)
{
	const Cut__V1__ListRequest *rq = (const Cut__V1__ListRequest *)msg;
	Cut__V1__ListReply rp = CUT__V1__LIST_REPLY__INIT;
	struct arena a = {0};
	struct list_ctx c = {.d = d, .a = &a, .rp = &rp};
	int rv;

	(void)call;
	c.limit = rq->limit;
	c.status = rq->has_status ? (int)rq->status : 0;
	rv = store_list(d->store, list_one, &c);
	if (rv != 0 && rv != 1)
		fail_store(d, r, rv);
	else
		set_body(r, &rp.base);
	arena_free(&a);
}

static void
do_wait(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
        struct reply *r)
{
	const Cut__V1__WaitRequest *rq = (const Cut__V1__WaitRequest *)msg;
	struct coord_snap_view v;
	struct waiter *w;

	/* A resent Wait that is already waiting: answer once, later. */
	for (w = d->waiters; w != NULL; w = w->next)
		if (w->request_id == c->request_id && c->request_id != 0) {
			nng_msg_free(w->req);
			w->req = c->req;
			r->deferred = 1;
			return;
		}
	coord_snapshot_view(d->coord, rq->snapshot_id, &v);
	if (v.ended) {
		info_reply(d, r, rq->snapshot_id, rq->include_states,
		           rq->include_messages);
		return;
	}
	if (d->nwaiters >= MAX_WAITERS || (w = calloc(1, sizeof(*w))) == NULL) {
		fail(r, E_LIMIT,
		     "too many Wait calls waiting; try again later");
		return;
	}
	w->req = c->req;
	w->request_id = c->request_id;
	snprintf(w->id, sizeof(w->id), "%s", rq->snapshot_id);
	w->deadline_ms =
	    cutd_now_ms() +
	    (rq->timeout_ms > MAX_WAIT_MS ? MAX_WAIT_MS : rq->timeout_ms);
	w->include_states = rq->include_states;
	w->include_messages = rq->include_messages;
	w->next = d->waiters;
	d->waiters = w;
	d->nwaiters++;
	r->deferred = 1;
}

/* The reply to the Restore call that ran, from how it ended. */
static void
restore_reply(struct cutd *d, struct reply *r)
{
	Cut__V1__RestoreReply rp = CUT__V1__RESTORE_REPLY__INIT;
	struct coord_restore_view v;

	coord_restore_view(d->coord, &v);
	if (v.result != 1) {
		fail(r, v.result, v.why);
		return;
	}
	rp.snapshot_id = (char *)v.id;
	rp.generation = v.generation;
	rp.nodes = v.nodes;
	rp.replayed = v.replayed;
	rp.state_bytes = v.state_bytes;
	rp.message_bytes = v.message_bytes;
	set_body(r, &rp.base);
}

static void
do_restore(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
           struct reply *r)
{
	const Cut__V1__RestoreRequest *rq =
	    (const Cut__V1__RestoreRequest *)msg;
	struct errinfo e = {0};
	int rv;

	if (d->restore_req != NULL && d->restore_request_id == c->request_id &&
	    c->request_id != 0) {
		/* Resent while it runs: answered once, later. */
		nng_msg_free(d->restore_req);
		d->restore_req = c->req;
		r->deferred = 1;
	} else if (rq->has_timeout_ms &&
	           (rq->timeout_ms < 100 || rq->timeout_ms > 3600000)) {
		fail(r, E_INVAL, "timeout_ms must be 100 .. 3600000");
	} else if ((rv = coord_restore(d->coord, rq->snapshot_id,
	                               rq->has_timeout_ms ? rq->timeout_ms : 0,
	                               &e)) != 0) {
		fail_err(r, rv, &e);
	} else {
		struct coord_restore_view v;
		coord_restore_view(d->coord, &v);
		if (!v.running) {
			restore_reply(d, r); /* a single node: done at once */
		} else {
			d->restore_req = c->req;
			d->restore_request_id = c->request_id;
			r->deferred = 1;
		}
	}
}

/* Answers the Wait calls on id (NULL: those whose deadline passed by
 * now), with the snapshot as it stands. */
static void
answer_waiters(struct cutd *d, const char *id, int64_t now)
{
	struct waiter **pw = &d->waiters, *w;

	while ((w = *pw) != NULL) {
		struct coord_snap_view v;
		struct reply r = {0};

		if (id != NULL ? strcmp(w->id, id) != 0 : now < w->deadline_ms) {
			pw = &w->next;
			continue;
		}
		coord_snapshot_view(d->coord, w->id, &v);
		*pw = w->next;
		d->nwaiters--;
		info_reply(d, &r, w->id, w->include_states,
		           w->include_messages);
		if (!v.ended && r.status == 0)
			fail(&r, E_TIMEDOUT, "snapshot still in progress");
		send_reply(d, w->req, w->request_id, &r);
		free(r.body);
		nng_msg_free(w->req);
		free(w);
	}
}

void
control_wake(struct cutd *d, int64_t now)
{
	answer_waiters(d, NULL, now);
}

void
control_event(struct cutd *d, const struct coord_event *ev)
{
	struct reply r = {0};

	switch (ev->kind) {
	case COORD_EV_SNAP_ENDED:
		answer_waiters(d, ev->id, 0);
		break;
	case COORD_EV_RESTORE_ENDED:
		if (d->restore_req == NULL)
			break; /* answered at once, or its caller is gone */
		restore_reply(d, &r);
		send_reply(d, d->restore_req, d->restore_request_id, &r);
		free(r.body);
		nng_msg_free(d->restore_req);
		d->restore_req = NULL;
		break;
	}
}

int
control_next_timer(struct cutd *d, int64_t now, int max)
{
	int64_t ms = ipcprobe_next_timer(&d->ctl_probe, now, max);

	for (const struct waiter *w = d->waiters; w != NULL; w = w->next)
		if (w->deadline_ms - now < ms)
			ms = w->deadline_ms - now;
	return ms < 0 ? 0 : (int)ms;
}

static void
do_delete(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
          struct reply *r)
{
	const Cut__V1__DeleteRequest *rq = (const Cut__V1__DeleteRequest *)msg;
	Cut__V1__DeleteReply rp = CUT__V1__DELETE_REPLY__INIT;
	struct errinfo e = {0};
	int rv;

	(void)c;
	if ((rv = coord_delete(d->coord, rq->snapshot_id, &e)) != 0) {
		fail_err(r, rv, &e);
		return;
	}
	rp.snapshot_id = rq->snapshot_id;
	set_body(r, &rp.base);
}

/* Why a condition cannot be judged on snapshot ss here, in r; 0 if it
 * can: complete, audited consistent, and initiated here, so that every
 * part is in this database. */
static int
not_judgeable(const struct store_snapshot *ss, struct reply *r)
{
	if (ss->status != STORE_COMPLETE)
		snprintf(
		    r->message, sizeof(r->message),
		    "snapshot %.64s is %s%s%.100s; a condition is judged on "
		    "a complete snapshot",
		    ss->id,
		    ss->status == STORE_ABORTED ? "aborted" : "in progress",
		    ss->reason[0] != '\0' ? ": " : "", ss->reason);
	else if (!ss->is_initiator)
		snprintf(r->message, sizeof(r->message),
		         "this node holds only its own part of %.64s; "
		         "evaluate at its initiator, %.32s",
		         ss->id, ss->initiator);
	else if (ss->consistent != 1)
		snprintf(r->message, sizeof(r->message),
		         "snapshot %.64s did not pass its audit: %.100s",
		         ss->id,
		         ss->audit_reason[0] != '\0' ? ss->audit_reason
		                                     : "not audited");
	else
		return 0;
	r->status = err_grpc(E_STATE);
	return 1;
}

static void
do_evaluate(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
            struct reply *r)
{
	const Cut__V1__EvaluateRequest *rq =
	    (const Cut__V1__EvaluateRequest *)msg;
	Cut__V1__EvaluateReply rp = CUT__V1__EVALUATE_REPLY__INIT;
	struct cond_result res = {0};
	struct store_snapshot ss;
	struct errinfo e = {0};
	const char *id;
	int rv;

	(void)c;
	if (d->cond == NULL) { /* a harness with a store and no more */
		fail(r, E_UNAVAIL, "conditions are not available here");
		return;
	}
	id = rq->snapshot_id != NULL && rq->snapshot_id[0] != '\0'
	         ? rq->snapshot_id
	         : NULL;
	if (id != NULL && !engine_id_valid(id)) {
		fail(r, E_INVAL, "bad snapshot id");
		return;
	}
	if (id != NULL && (rv = store_get(d->store, id, &ss)) != 0) {
		if (rv == E_NOENT)
			fail(r, E_NOENT, "no such snapshot");
		else
			fail_store(d, r, rv);
		return;
	}
	if (id != NULL && not_judgeable(&ss, r))
		return;
	if ((rv = cond_eval(d->cond, rq->sql, id,
	                    rq->has_deadline_ms ? rq->deadline_ms : 0, &res,
	                    &e)) != 0) {
		fail_err(r, rv, &e);
		if (rv == E_CORRUPT)
			control_storage_damaged(d, e.text);
		log_info("control: condition on %s: %s", id ? id : "(check)",
		         e.text);
		return;
	}
	rp.held = res.held;
	rp.rows = res.rows;
	rp.has_more = res.more;
	rp.more = res.more;
	rp.value = res.value;
	rp.has_checked_only = rp.checked_only = id == NULL;
	rp.message = id == NULL ? "the condition is valid and reads only"
	             : res.held ? "the condition holds"
	                        : "the condition does not hold";
	set_body(r, &rp.base);
}

static void
do_keep(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
        struct reply *r)
{
	const Cut__V1__KeepRequest *rq = (const Cut__V1__KeepRequest *)msg;
	Cut__V1__KeepReply rp = CUT__V1__KEEP_REPLY__INIT;
	struct errinfo e = {0};
	int rv;

	(void)c;
	if ((rv = coord_keep(d->coord, rq->snapshot_id, rq->keep, &e)) != 0) {
		fail_err(r, rv, &e);
		return;
	}
	rp.snapshot_id = rq->snapshot_id;
	rp.keep = rq->keep;
	set_body(r, &rp.base);
}

/* Fills ss from the coordinator's view; strings are borrowed from it
 * until the reply is packed. */
static void
schedule_status(struct cutd *d, Cut__V1__ScheduleStatus *ss)
{
	struct coord_sched_view v;

	coord_schedule_view(d->coord, &v);
	cut__v1__schedule_status__init(ss);
	if ((ss->configured = v.configured) == 0)
		return;
	ss->has_interval_ms = ss->has_timeout_ms = ss->has_paused = 1;
	ss->has_ticks = ss->has_started = ss->has_skipped = 1;
	ss->has_paused_ticks = ss->has_failed = ss->has_next_tick_ms = 1;
	ss->interval_ms = v.interval_ms;
	ss->initiator = (char *)v.initiator;
	ss->timeout_ms = v.timeout_ms;
	ss->paused = v.paused;
	ss->ticks = v.ticks;
	ss->started = v.started;
	ss->skipped = v.skipped;
	ss->paused_ticks = v.paused_ticks;
	ss->failed = v.failed;
	if (v.last_id[0] != '\0')
		ss->last_snapshot_id = (char *)v.last_id;
	ss->next_tick_ms = (uint64_t)v.next_tick_ms;
}

/* Show (pause -1), Pause (pause 1) or Resume (pause 0). */
static void
schedule(struct cutd *d, int pause, struct reply *r)
{
	Cut__V1__ScheduleStatus ss;
	struct errinfo e = {0};
	int rv;

	if (pause >= 0 &&
	    (rv = coord_schedule_pause(d->coord, pause, &e)) != 0) {
		fail_err(r, rv, &e);
		return;
	}
	schedule_status(d, &ss);
	set_body(r, &ss.base);
}

static void
do_schedule_show(struct cutd *d, const struct call *c,
                 const ProtobufCMessage *msg, struct reply *r)
{
	(void)c, (void)msg;
	schedule(d, -1, r);
}

static void
do_schedule_pause(struct cutd *d, const struct call *c,
                  const ProtobufCMessage *msg, struct reply *r)
{
	(void)c, (void)msg;
	schedule(d, 1, r);
}

static void
do_schedule_resume(struct cutd *d, const struct call *c,
                   const ProtobufCMessage *msg, struct reply *r)
{
	(void)c, (void)msg;
	schedule(d, 0, r);
}

static void
status_channels(struct cutd *d, struct arena *a, Cut__V1__StatusReply *rp)
{
	rp->channels =
	    arena_alloc(a, (d->cfg->nchans + 1) * sizeof(*rp->channels));
	if (rp->channels == NULL)
		return;
	for (size_t i = 0; i < d->cfg->nchans; i++) {
		const struct config_channel *ch = &d->cfg->chans[i];
		struct coord_peer_stats st;
		Cut__V1__ChannelStatus *cs;

		if (ch->src != d->self && ch->dst != d->self)
			continue;
		if ((cs = arena_alloc(a, sizeof(*cs))) == NULL)
			return;
		cut__v1__channel_status__init(cs);
		cs->src = d->cfg->nodes[ch->src].name;
		cs->dst = d->cfg->nodes[ch->dst].name;
		if (ch->src == d->self) {
			coord_peer_stats(d->coord, ch->dst, &st);
			cs->sent = st.sent;
			cs->acked = st.app_taken;
			cs->queued = cs->sent - cs->acked;
			cs->has_window_used_bytes = 1;
			cs->window_used_bytes = st.window_used;
			cs->has_stalls = 1;
			cs->stalls = st.stalls;
			cs->has_resent = 1;
			cs->resent = st.resent;
			cs->has_duplicates = 1;
			cs->duplicates = st.dups;
		} else {
			coord_peer_stats(d->coord, ch->src, &st);
			cs->delivered = st.delivered;
			cs->has_duplicates = 1;
			cs->duplicates = st.dups;
			cs->has_taken = 1;
			cs->taken = st.taken;
		}
		rp->channels[rp->n_channels++] = cs;
	}
}
/* A peer's authentication, for TLS links; nothing for plaintext ones.  The
 * error text is borrowed from d->tls until the reply is packed. */
static void
status_tls(struct cutd *d, size_t v, Cut__V1__PeerStatus *ps)
{
	struct tls_peer_status t;

	tls_peer_status(d->tls, v, &t);
	if (!t.tls)
		return;
	ps->has_tls = ps->has_authenticated = ps->has_auth_failures = 1;
	ps->tls = 1;
	ps->authenticated = t.authenticated;
	ps->auth_failures = t.failures;
	if (t.last_error != NULL) {
		ps->last_auth_error = (char *)t.last_error;
		ps->has_last_auth_error_ms = 1;
		ps->last_auth_error_ms = (uint64_t)t.last_error_ms;
	}
}

/* Lists a snapshot in flight, up to 16 (the reply's ids are borrowed
 * from the coordinator until it is packed). */
static void
add_running(const char *id, void *arg)
{
	Cut__V1__StatusReply *rp = arg;

	if (rp->n_snapshots_in_progress < 16)
		rp->snapshots_in_progress[rp->n_snapshots_in_progress++] =
		    (char *)id;
}

/* Each condition of the cluster file: counts and the last result (the
 * strings are borrowed from d until the reply is packed). */
static void
status_conditions(struct cutd *d, struct arena *a, Cut__V1__StatusReply *rp)
{
	size_t n = d->cfg->nconds;

	if (n == 0 || (rp->conditions =
	                   arena_alloc(a, n * sizeof(*rp->conditions))) == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct cond_stat *st = &d->judge.stats[i];
		Cut__V1__ConditionStatus *cs = arena_alloc(a, sizeof(*cs));

		if (cs == NULL)
			return;
		cut__v1__condition_status__init(cs);
		cs->name = d->cfg->conds[i].name;
		cs->evaluated = st->evaluated;
		cs->held = st->held;
		cs->not_held = st->not_held;
		cs->failed = st->failed;
		if (st->last_id[0] != '\0') {
			cs->last_snapshot_id = (char *)st->last_id;
			cs->has_last_held = st->last_held >= 0;
			cs->last_held = st->last_held == 1;
			cs->last_detail = (char *)st->last_detail;
			cs->has_last_ms = 1;
			cs->last_ms = (uint64_t)st->last_ms;
		}
		rp->conditions[rp->n_conditions++] = cs;
	}
}

static void
do_status(struct cutd *d, const struct call *c, const ProtobufCMessage *msg,
          struct reply *r)
{
	Cut__V1__StatusReply rp = CUT__V1__STATUS_REPLY__INIT;
	struct arena a = {0};
	struct tls_status ts;
	Cut__V1__ScheduleStatus sched;
	struct coord_restore_view rv;
	size_t n = d->cfg->nnodes;

	(void)c, (void)msg;
	rp.node = (char *)d->name;
	rp.cluster = d->cfg->cluster;
	rp.version = CUTD_VERSION;
	rp.uptime_ms = (uint64_t)(cutd_now_ms() - d->start_ms);
	rp.app_connected = coord_app_connected(d->coord);
	rp.peers = arena_alloc(&a, n * sizeof(*rp.peers));
	rp.snapshots_in_progress = arena_alloc(&a, 16 * sizeof(char *));
	if (rp.peers == NULL || rp.snapshots_in_progress == NULL) {
		fail(r, E_NOMEM, "out of memory");
		arena_free(&a);
		return;
	}
	for (size_t v = 0; v < n; v++) {
		struct coord_peer_stats st;
		Cut__V1__PeerStatus *ps;
		if (v == d->self || (ps = arena_alloc(&a, sizeof(*ps))) == NULL)
			continue;
		coord_peer_stats(d->coord, v, &st);
		cut__v1__peer_status__init(ps);
		ps->node = d->cfg->nodes[v].name;
		ps->connected = st.alive;
		ps->last_seen_ms = (uint64_t)st.last_seen_ms;
		ps->has_refused_connections = 1;
		ps->refused_connections = st.refused_conns;
		status_tls(d, v, ps);
		rp.peers[rp.n_peers++] = ps;
	}
	status_channels(d, &a, &rp);
	status_conditions(d, &a, &rp);
	coord_foreach_running(d->coord, add_running, &rp);
	rp.bad_frames_peer = coord_bad_peer(d->coord);
	rp.bad_frames_app = coord_bad_app(d->coord);
	rp.bad_frames = rp.bad_frames_peer + rp.bad_frames_app + d->bad_control;
	rp.bad_frames_control = d->bad_control;
	rp.has_calls_denied = rp.has_starts_limited = 1;
	rp.calls_denied = d->calls_denied;
	rp.starts_limited = d->starts_limited;
	if (coord_degraded(d->coord)[0] != '\0')
		rp.storage_degraded = (char *)coord_degraded(d->coord);
	if (control_damaged(d)[0] != '\0')
		rp.storage_damaged = (char *)control_damaged(d);
	schedule_status(d, &sched);
	if (sched.configured)
		rp.schedule = &sched;
	rp.has_forgets_pending = 1;
	rp.forgets_pending = coord_forgets_pending(d->coord);
	coord_restore_view(d->coord, &rv);
	rp.has_restore_generation = rp.has_old_generation_batches =
	    rp.has_app_restorable = 1;
	rp.restore_generation = rv.generation;
	rp.old_generation_batches = rv.old_batches;
	rp.app_restorable = rv.restorable != 0;
	rp.has_restore_app_waits = 1;
	rp.restore_app_waits = rv.app_owed != 0;
	rp.has_restore_missed = rv.adopted != 0;
	rp.restore_missed = rv.adopted;
	rp.restore_phase = (char *)rv.phase;
	if (rv.id[0] != '\0' && (rv.result != 0 || rv.running)) {
		rp.last_restore = (char *)rv.id;
		rp.last_restore_result = rv.running       ? "running"
		                         : rv.result == 1 ? "done"
		                                          : (char *)rv.why;
	}
	tls_status(d->tls, &ts);
	rp.has_tls_listener_failures = rp.has_auth_failures_unknown =
	    rp.has_unauthenticated_batches = rp.has_tls_listener_restarts = 1;
	rp.tls_listener_failures = ts.listener_failures;
	rp.tls_listener_restarts = ts.listener_restarts;
	rp.has_control_listener_restarts = rp.has_app_listener_restarts = 1;
	rp.control_listener_restarts = d->ctl_probe.restarts;
	rp.app_listener_restarts = d->app_probe.restarts;
	rp.auth_failures_unknown = ts.unknown_failures;
	rp.unauthenticated_batches = ts.unauthenticated;
	set_body(r, &rp.base);
	arena_free(&a);
}

/* The handlers of the methods' table (ctltab.h), row for row. */
#define HANDLER(method, req, reply, handler, ...) handler,
static handler_fn *const handlers[CTLTAB_NROWS] = {CUT_CTLTAB(HANDLER)};
#undef HANDLER

/* The required snapshot_id of request type desc, or NULL if it has none:
 * every method that names a snapshot checks it first. */
static const ProtobufCFieldDescriptor *
required_id(const ProtobufCMessageDescriptor *desc)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field_by_name(desc,
	                                                    "snapshot_id");

	return f != NULL && f->label == PROTOBUF_C_LABEL_REQUIRED &&
	               f->type == PROTOBUF_C_TYPE_STRING
	           ? f
	           : NULL;
}

/* Decodes body as row's request, checks its snapshot_id and runs the
 * row's handler: the one dispatch of control methods, for the control
 * socket and the HTTP API. */
static void
run(struct cutd *d, const struct ctltab_row *row, const struct call *c,
    const ProtobufCBinaryData *body, struct reply *r)
{
	const ProtobufCFieldDescriptor *id = required_id(row->req);
	ProtobufCMessage *rq = NULL;

	/* A request without fields is not decoded: nothing in it could
	 * matter. */
	if (row->req->n_fields > 0 &&
	    ((rq = protobuf_c_message_unpack(row->req, NULL, body->len,
	                                     body->data)) == NULL ||
	     (id != NULL && !engine_id_valid(*(char *const *)((const char *)rq +
	                                                      id->offset)))))
		fail(r, E_INVAL,
		     id != NULL ? "bad request or snapshot id" : "bad request");
	else
		handlers[row - ctltab_rows](d, c, rq, r);
	if (rq != NULL)
		protobuf_c_message_free_unpacked(rq, NULL);
}

/* Answers rq, or fails it as an unknown method.  Returns 1 if the request
 * was kept to be answered later. */
static int
dispatch(struct cutd *d, nng_msg *req, const Cut__V1__RpcRequest *rq,
         struct reply *r)
{
	const struct ctltab_row *row = ctltab_find(rq->method);
	const struct call c = {.req = req, .request_id = rq->request_id};

	if (row == NULL)
		fail(r, E_NOMETHOD, "unknown method");
	else
		run(d, row, &c, &rq->body, r);
	return r->deferred;
}

/* The uid of the application connected to this daemon, or -1. */
static long
app_uid(struct cutd *d)
{
	nng_pipe p = NNG_PIPE_INITIALIZER;
	uint64_t uid;

	p.id = coord_app_conn(d->coord);
	if (p.id == 0 ||
	    nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) != 0)
		return -1;
	return (long)uid;
}

/* Decides whether the caller of req may call method; if not, fills r with
 * PERMISSION_DENIED and returns 1. */
static int
denied(struct cutd *d, nng_msg *req, const char *method, struct reply *r)
{
	struct perm_policy pol = {.self_uid = geteuid(),
	                          .admin_gid = d->cfg->admin_gid,
	                          .tcp_full = d->cfg->tcp_control_full,
	                          .app_uid = -1};
	struct perm_caller c = {0};
	gid_t groups[PERM_GROUPS_MAX];
	nng_pipe p = nng_msg_get_pipe(req);
	uint64_t uid, gid;
	enum perm_verdict v;

	if (perm_method_class(method) == PERM_READ)
		return 0;
	c.tcp = strncmp(d->cfg->nodes[d->self].control, "ipc://", 6) != 0;
	if (!c.tcp && nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) == 0 &&
	    nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_GID, &gid) == 0) {
		c.has_creds = 1;
		c.uid = (uid_t)uid;
		c.gid = (gid_t)gid;
	}
	/* The user and group databases are read only for callers that are
	 * neither the daemon's user nor root, and only when an admin group
	 * is set: a lookup can be slow (NSS over the network). */
	if (c.has_creds && c.uid != 0 && c.uid != pol.self_uid) {
		if (pol.admin_gid >= 0) {
			c.groups = groups;
			c.ngroups =
			    perm_groups(c.uid, c.gid, groups, PERM_GROUPS_MAX);
		}
		pol.app_uid = app_uid(d);
	}
	if ((v = perm_check(method, &pol, &c)) == PERM_ALLOW)
		return 0;
	perm_explain(r->message, sizeof(r->message), v, method, &pol,
	             d->cfg->admin_group, &c);
	r->status = err_grpc(E_PERM);
	d->calls_denied++;
	log_notice("control: permission denied: %s", r->message);
	return 1;
}

/* Holds r, the reply to a call whose writes are in the turn's batch,
 * until that batch commits: a Delete acknowledged and then lost would
 * come back.  Takes r's body and req. */
static void
hold(struct cutd *d, nng_msg *req, uint64_t request_id, struct reply *r,
     int as_made)
{
	struct held_reply *h = calloc(1, sizeof(*h));

	if (h == NULL) {
		fail(r, E_NOMEM, "out of memory");
		send_reply(d, req, request_id, r);
		nng_msg_free(req);
		return;
	}
	h->req = req;
	h->request_id = request_id;
	h->status = r->status;
	memcpy(h->message, r->message, sizeof(h->message));
	h->body = r->has_body ? r->body : NULL;
	h->len = r->len;
	h->as_made = as_made;
	r->body = NULL;
	h->next = d->held;
	d->held = h;
}

/* A resent request whose reply is held: it goes to the new request. */
static int
held_again(struct cutd *d, nng_msg *req, uint64_t request_id)
{
	for (struct held_reply *h = d->held; h != NULL; h = h->next)
		if (request_id != 0 && h->request_id == request_id) {
			nng_msg_free(h->req);
			h->req = req;
			return 1;
		}
	return 0;
}

void
control_committed(struct cutd *d, int lost)
{
	struct held_reply *h;

	while ((h = d->held) != NULL) {
		struct reply r = {0};
		d->held = h->next;
		if (lost && !h->as_made) {
			fail(&r, E_STORAGE,
			     "storage: the change was lost with its database "
			     "batch; nothing changed, try again");
		} else {
			r.status = h->status;
			memcpy(r.message, h->message, sizeof(r.message));
			r.has_body = h->body != NULL;
			r.body = h->body;
			r.len = h->len;
		}
		send_reply(d, h->req, h->request_id, &r);
		nng_msg_free(h->req);
		free(h->body);
		free(h);
	}
}

void
control_request(struct cutd *d, nng_msg *req)
{
	Cut__V1__RpcRequest *rq;
	struct reply r = {0};

	rq = (Cut__V1__RpcRequest *)cutproto_unpack(
	    &cut__v1__rpc_request__descriptor, nng_msg_len(req),
	    nng_msg_body(req));
	if (rq == NULL) {
		d->bad_control++;
		log_warnx("bad control request: does not decode; dropped");
		fail(&r, E_INVAL, "request does not decode");
		send_reply(d, req, 0, &r);
		nng_msg_free(req);
		return;
	}
	if (rq->request_id != 0 && resend(d, req, rq->request_id)) {
		nng_msg_free(req);
	} else if (held_again(d, req, rq->request_id)) {
		/* answered when its batch commits */
	} else if (denied(d, req, rq->method, &r)) {
		send_reply(d, req, rq->request_id, &r);
		nng_msg_free(req);
	} else if (!dispatch(d, req, rq, &r)) {
		const struct ctltab_row *row = ctltab_find(rq->method);
		if (row != NULL &&
		    (row->answer == CTLTAB_COMMIT ||
		     row->answer == CTLTAB_BATCH) &&
		    r.status == CUT__V1__STATUS_CODE__OK &&
		    coord_batch_open(d->coord)) {
			hold(d, req, rq->request_id, &r,
			     row->answer == CTLTAB_BATCH);
		} else {
			send_reply(d, req, rq->request_id, &r);
			nng_msg_free(req);
		}
	}
	free(r.body);
	cut__v1__rpc_request__free_unpacked(rq, NULL);
}

void
control_recv_all(struct cutd *d)
{
	for (int i = 0; i < RECV_PER_TURN; i++) {
		nng_msg *msg;
		if (nng_recvmsg(d->ctl, &msg, NNG_FLAG_NONBLOCK) != 0)
			return;
		control_request(d, msg);
	}
}

void
control_query(struct cutd *d, struct control_query *q)
{
	ProtobufCBinaryData body = {q->req_len, (uint8_t *)q->req};
	const struct ctltab_row *row = ctltab_find(q->method);
	const struct call c = {.page = q};
	struct reply r = {0};

	/* The methods of the HTTP API: those with a route, which the
	 * table's test keeps to READ methods answered NOW. */
	if (row == NULL || row->route == NULL)
		fail(&r, E_NOMETHOD, "not a read-only method");
	else
		run(d, row, &c, &body, &r);
	q->status = r.status;
	snprintf(q->message, sizeof(q->message), "%s", r.message);
	q->body = r.has_body ? r.body : NULL;
	q->len = r.has_body ? r.len : 0;
	if (!r.has_body)
		free(r.body);
}
