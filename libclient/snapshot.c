/*
 * snapshot.c - the snapshot calls of libcut over the control connection,
 * and the accessors of the snapshot objects they return.
 *
 * The control connection is dialed on the first call and kept; calls on
 * one handle are serialized (req0 carries one request at a time).  A
 * struct cut_snapshot wraps the SnapshotInfo the daemon sent, checked
 * before it is handed out.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "cut_int.h"

/* The daemon's Wait is asked for at most this long per call, so a call is
 * never far from its RPC timeout. */
#define WAIT_SLICE_MS 10000
/* What a restore without a timeout may take at the daemon, for the
 * call's own timeout: the default deadline_ms of a cluster file. */
#define RESTORE_DEFAULT_WAIT_MS 10000

int
cut_set_control_timeout(struct cut *c, int timeout_ms)
{
	if (c == NULL || timeout_ms <= 0)
		return CUT_EINVAL;
	pthread_mutex_lock(&c->mu);
	c->ctl_timeout = timeout_ms;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static int
ctl_timeout(struct cut *c)
{
	int t;

	pthread_mutex_lock(&c->mu);
	t = c->ctl_timeout;
	pthread_mutex_unlock(&c->mu);
	return t;
}

/* Dials the control URL if not yet done.  Called with ctl_mu. */
static int
ctl_connect(struct cut *c)
{
	int rv;

	if (c->control_url == NULL)
		return CUT_ENOTSUP;
	if (c->rpc != NULL)
		return 0;
	if ((rv = rpc_open(c->control_url, &c->rpc)) != 0)
		cut_set_error(c, "cannot reach the daemon at %s: %s",
		              c->control_url, cut_strerror(rv));
	return rv;
}

/*
 * One control call with status handling: returns 0 with the body in
 * *ret_body (caller frees), or the error, whose text goes to the last
 * error.  With keep_deadline, a DEADLINE_EXCEEDED answer returns
 * CUT_ETIMEDOUT and its body, if any, in *ret_body (else NULL).
 */
static int
ctl_call(struct cut *c, const char *method, const ProtobufCMessage *req,
         const ProtobufCMessageDescriptor *desc, int timeout_ms,
         int keep_deadline, ProtobufCMessage **ret_body)
{
	struct rpc_answer a = {0};
	int rv, connected;

	*ret_body = NULL;
	pthread_mutex_lock(&c->ctl_mu);
	if ((connected = (rv = ctl_connect(c)) == 0))
		rv = rpc_call(c->rpc, method, req, desc, timeout_ms, &a);
	pthread_mutex_unlock(&c->ctl_mu);
	if (rv != 0) {
		/* ctl_connect() said why it could not connect (CUT_EPERM:
		 * the socket is closed to this user). */
		if (connected && rv != CUT_EUNAVAIL)
			cut_set_error(c, "%s: %s", method, cut_strerror(rv));
		return rv;
	}
	rv = rpc_status_error(a.status);
	if (rv != 0 && !(rv == CUT_ETIMEDOUT && keep_deadline)) {
		cut_set_error(c, "%s", a.message);
		rpc_answer_clear(&a);
		return rv;
	}
	if (a.body == NULL && rv == 0) {
		cut_set_error(c, "%s: the reply has no body", method);
		return CUT_EPROTO;
	}
	*ret_body = a.body;
	return rv;
}

/* Wraps info (owned) into a new snapshot. */
static int
wrap(Cut__V1__SnapshotInfo *info, struct cut_snapshot **ret)
{
	struct cut_snapshot *s;

	if ((s = malloc(sizeof(*s))) == NULL) {
		protobuf_c_message_free_unpacked(&info->base, NULL);
		return CUT_ENOMEM;
	}
	s->info = info;
	s->owned = 1;
	*ret = s;
	return 0;
}

int
cut_snapshot_start(struct cut *c, int deadline_ms, char *ret_id, size_t idlen)
{
	Cut__V1__StartRequest req = CUT__V1__START_REQUEST__INIT;
	Cut__V1__StartReply *rep;
	ProtobufCMessage *body;
	int rv;

	if (c == NULL || ret_id == NULL || deadline_ms < 0)
		return CUT_EINVAL;
	req.has_timeout_ms = deadline_ms > 0;
	req.timeout_ms = (uint32_t)deadline_ms;
	rv = ctl_call(c, CUTPROTO_METHOD_START, &req.base,
	              &cut__v1__start_reply__descriptor, ctl_timeout(c), 0,
	              &body);
	if (rv != 0)
		return rv;
	rep = (Cut__V1__StartReply *)body;
	if (rep->snapshot_id[0] == '\0' ||
	    strlen(rep->snapshot_id) >= CUT_SNAPSHOT_ID_MAX)
		rv = CUT_EPROTO;
	else if (strlen(rep->snapshot_id) >= idlen)
		rv = CUT_EINVAL;
	else
		strcpy(ret_id, rep->snapshot_id);
	if (rv != 0)
		cut_set_error(c, "snapshot id \"%.*s\" %s", CUT_SNAPSHOT_ID_MAX,
		              rep->snapshot_id,
		              rv == CUT_EINVAL ? "does not fit" : "is invalid");
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

int
cut_snapshot_get(struct cut *c, const char *id, int flags,
                 struct cut_snapshot **ret)
{
	Cut__V1__SnapshotInfo *info;
	char err[RPC_MSG_MAX] = "";
	int rv;

	if (c == NULL || id == NULL || ret == NULL)
		return CUT_EINVAL;
	pthread_mutex_lock(&c->ctl_mu);
	if ((rv = ctl_connect(c)) == 0)
		rv = rpc_get_snapshot(c->rpc, id, flags & CUT_SNAPSHOT_STATES,
		                      flags & CUT_SNAPSHOT_MESSAGES,
		                      ctl_timeout(c), &info, err, sizeof(err),
		                      NULL);
	pthread_mutex_unlock(&c->ctl_mu);
	if (rv != 0) {
		if (err[0] != '\0')
			cut_set_error(c, "%s", err);
		return rv;
	}
	return wrap(info, ret);
}

/*
 * One Wait of up to slice_ms.  Returns 0 with the finished snapshot in
 * *ret_info, CUT_ETIMEDOUT if it is still in progress, or an error.
 */
static int
wait_once(struct cut *c, const char *id, int slice_ms,
          Cut__V1__SnapshotInfo **ret_info)
{
	Cut__V1__WaitRequest req = CUT__V1__WAIT_REQUEST__INIT;
	Cut__V1__SnapshotInfo *info;
	ProtobufCMessage *body;
	int rv;

	req.snapshot_id = (char *)id;
	req.timeout_ms = (uint32_t)slice_ms;
	rv = ctl_call(c, CUTPROTO_METHOD_WAIT, &req.base,
	              &cut__v1__snapshot_info__descriptor,
	              slice_ms + ctl_timeout(c), 1, &body);
	if (body == NULL)
		return rv;
	info = (Cut__V1__SnapshotInfo *)body;
	if (rpc_check_snapshot(info) != 0) {
		protobuf_c_message_free_unpacked(body, NULL);
		cut_set_error(c, "bad Wait reply from the daemon");
		return CUT_EPROTO;
	}
	if (rv == 0 &&
	    info->status != CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS) {
		*ret_info = info;
		return 0;
	}
	protobuf_c_message_free_unpacked(body, NULL);
	return CUT_ETIMEDOUT;
}

int
cut_snapshot_wait(struct cut *c, const char *id, int timeout_ms, int flags,
                  struct cut_snapshot **ret)
{
	nng_time deadline = nng_clock() + (timeout_ms > 0 ? timeout_ms : 0);
	Cut__V1__SnapshotInfo *info = NULL;
	nng_time now;
	int slice, rv;

	if (c == NULL || id == NULL || ret == NULL)
		return CUT_EINVAL;
	do {
		now = nng_clock();
		slice = WAIT_SLICE_MS;
		if (timeout_ms >= 0 && deadline - now < (nng_time)slice)
			slice = now < deadline ? (int)(deadline - now) : 0;
		rv = wait_once(c, id, slice, &info);
		if (rv != CUT_ETIMEDOUT)
			break;
		/* Not finished, yet answered early: do not spin. */
		if (nng_clock() - now < (nng_time)slice / 2)
			nng_msleep(50);
	} while (timeout_ms < 0 || nng_clock() < deadline);
	if (rv != 0)
		return rv;
	if (flags == 0)
		return wrap(info, ret);
	protobuf_c_message_free_unpacked(&info->base, NULL);
	return cut_snapshot_get(c, id, flags, ret);
}

int
cut_snapshot_list(struct cut *c, unsigned limit, struct cut_snapshot_list **ret)
{
	Cut__V1__ListRequest req = CUT__V1__LIST_REQUEST__INIT;
	struct cut_snapshot_list *l;
	Cut__V1__ListReply *rep;
	ProtobufCMessage *body;
	size_t i;
	int rv;

	if (c == NULL || ret == NULL)
		return CUT_EINVAL;
	req.has_limit = limit > 0;
	req.limit = limit;
	rv = ctl_call(c, CUTPROTO_METHOD_LIST, &req.base,
	              &cut__v1__list_reply__descriptor, ctl_timeout(c), 0,
	              &body);
	if (rv != 0)
		return rv;
	rep = (Cut__V1__ListReply *)body;
	for (i = 0; i < rep->n_snapshots; i++)
		if (rpc_check_snapshot(rep->snapshots[i]) != 0) {
			protobuf_c_message_free_unpacked(body, NULL);
			cut_set_error(c, "bad List reply from the daemon");
			return CUT_EPROTO;
		}
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->items = calloc(rep->n_snapshots + 1, sizeof(*l->items))) ==
	        NULL) {
		free(l);
		protobuf_c_message_free_unpacked(body, NULL);
		return CUT_ENOMEM;
	}
	l->reply = rep;
	for (i = 0; i < rep->n_snapshots; i++)
		l->items[i].info = rep->snapshots[i];
	*ret = l;
	return 0;
}

size_t
cut_snapshot_list_len(const struct cut_snapshot_list *l)
{
	return l != NULL ? l->reply->n_snapshots : 0;
}

const struct cut_snapshot *
cut_snapshot_list_at(const struct cut_snapshot_list *l, size_t i)
{
	return l != NULL && i < l->reply->n_snapshots ? &l->items[i] : NULL;
}

void
cut_snapshot_list_free(struct cut_snapshot_list *l)
{
	if (l == NULL)
		return;
	protobuf_c_message_free_unpacked(&l->reply->base, NULL);
	free(l->items);
	free(l);
}

int
cut_snapshot_delete(struct cut *c, const char *id)
{
	Cut__V1__DeleteRequest req = CUT__V1__DELETE_REQUEST__INIT;
	ProtobufCMessage *body;
	int rv;

	if (c == NULL || id == NULL)
		return CUT_EINVAL;
	req.snapshot_id = (char *)id;
	rv = ctl_call(c, CUTPROTO_METHOD_DELETE, &req.base,
	              &cut__v1__delete_reply__descriptor, ctl_timeout(c), 0,
	              &body);
	if (rv == 0)
		protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

int
cut_restore(struct cut *c, const char *snapshot_id, uint32_t timeout_ms,
            struct cut_restore_result *ret)
{
	Cut__V1__RestoreRequest req = CUT__V1__RESTORE_REQUEST__INIT;
	Cut__V1__RestoreReply *rep;
	ProtobufCMessage *body;
	uint64_t wait;
	int rv;

	if (c == NULL || snapshot_id == NULL || snapshot_id[0] == '\0')
		return CUT_EINVAL;
	req.snapshot_id = (char *)snapshot_id;
	req.has_timeout_ms = timeout_ms > 0;
	req.timeout_ms = timeout_ms;
	/* The daemon waits for the votes and then for the confirmations,
	 * each up to the timeout (its deadline_ms when none is given); the
	 * answer may take that long, and rpc_call() waits twice. */
	wait = 2 * (uint64_t)(timeout_ms > 0 ? timeout_ms
	                                     : RESTORE_DEFAULT_WAIT_MS) +
	       (uint64_t)ctl_timeout(c);
	rv = ctl_call(c, CUTPROTO_METHOD_RESTORE, &req.base,
	              &cut__v1__restore_reply__descriptor,
	              wait > INT_MAX ? INT_MAX : (int)wait, 0, &body);
	if (rv != 0)
		return rv;
	rep = (Cut__V1__RestoreReply *)body;
	if (ret != NULL) {
		ret->generation = rep->generation;
		ret->nodes = rep->nodes;
		ret->replayed = rep->replayed;
		ret->state_bytes = rep->state_bytes;
		ret->message_bytes = rep->message_bytes;
	}
	protobuf_c_message_free_unpacked(body, NULL);
	return 0;
}

void
cut_snapshot_free(struct cut_snapshot *s)
{
	if (s == NULL || !s->owned)
		return;
	protobuf_c_message_free_unpacked(&s->info->base, NULL);
	free(s);
}
