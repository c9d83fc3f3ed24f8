/*
 * rpc.c - the control connection: one RpcRequest, one RpcReply, a resend
 * with the same request id after a timeout or a lost connection, and gRPC
 * status codes mapped to CUT_E* codes.  See rpc.h.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>

#include "cut/cut.h"
#include "rpc.h"

struct rpc {
	nng_socket sock;
	uint64_t next_id;
	char *url;
};

static atomic_int reaper_stopped;

void
rpc_set_reaper_stopped(void)
{
	atomic_store(&reaper_stopped, 1);
}

int
rpc_reaper_stopped(void)
{
	return atomic_load(&reaper_stopped);
}

int64_t
rpc_stat_sum(const char *kind, int id, const char *const *names)
{
	nng_stat *all, *sc, *st;
	int64_t n = -1;

	if (nng_stats_get(&all) != 0)
		return -1;
	/* (nng 1.5.2's nng_stat_find_socket() finds the first socket's,
	 * whatever the socket: the scopes are walked here.) */
	for (sc = nng_stat_child(all); sc != NULL && n < 0;
	     sc = nng_stat_next(sc)) {
		if (nng_stat_type(sc) != NNG_STAT_SCOPE ||
		    strcmp(nng_stat_name(sc), kind) != 0 ||
		    (st = nng_stat_find(sc, "id")) == NULL ||
		    nng_stat_value(st) != (uint64_t)id)
			continue;
		n = 0;
		for (size_t i = 0; names[i] != NULL; i++)
			if ((st = nng_stat_find(sc, names[i])) != NULL)
				n += (int64_t)nng_stat_value(st);
	}
	nng_stats_free(all);
	return n;
}

/* Opens and dials r's socket. */
static int
open_sock(struct rpc *r)
{
	int rv;

	if ((rv = nng_req0_open(&r->sock)) != 0)
		return rv;
	/* We resend ourselves, once, with the same request id. */
	if ((rv = nng_socket_set_ms(r->sock, NNG_OPT_REQ_RESENDTIME,
	                            NNG_DURATION_INFINITE)) != 0 ||
	    /* A lost connection is dialed again within 50 ms, not nng's
	     * second (backing off to a second while the daemon is away). */
	    (rv = nng_socket_set_ms(r->sock, NNG_OPT_RECONNMINT, 50)) != 0 ||
	    (rv = nng_socket_set_ms(r->sock, NNG_OPT_RECONNMAXT, 1000)) != 0 ||
	    (rv = nng_socket_set_size(r->sock, NNG_OPT_RECVMAXSZ,
	                              RPC_MAX_REPLY)) != 0 ||
	    (rv = nng_dial(r->sock, r->url, NULL, 0)) != 0) {
		if (!rpc_reaper_stopped()) /* (rpc_close()) */
			nng_close(r->sock);
	}
	return rv;
}

int
rpc_open(const char *url, struct rpc **ret)
{
	struct rpc *r;
	int rv;

	if (url == NULL || ret == NULL)
		return CUT_EINVAL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return CUT_ENOMEM;
	if ((r->url = strdup(url)) == NULL) {
		free(r);
		return CUT_ENOMEM;
	}
	if ((rv = open_sock(r)) != 0) {
		free(r->url);
		free(r);
		return rpc_nng_error(rv);
	}
	r->next_id = ((uint64_t)nng_random() << 32) | nng_random();
	*ret = r;
	return 0;
}

void
rpc_close(struct rpc *r)
{
	if (r == NULL)
		return;
	/* See cut_close(): a pause works around a hang of nng 1.5.2. */
	nng_msleep(2);
	if (!rpc_reaper_stopped())
		nng_close(r->sock);
	free(r->url);
	free(r);
}

void
rpc_answer_clear(struct rpc_answer *a)
{
	if (a->body != NULL)
		protobuf_c_message_free_unpacked(a->body, NULL);
	a->body = NULL;
}

/* Packs m into a new nng message, stored in *ret_msg. */
static int
pack_msg(const ProtobufCMessage *m, nng_msg **ret_msg)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	nng_msg *msg;
	int rv;

	if ((rv = nng_msg_alloc(&msg, len)) != 0)
		return rpc_nng_error(rv);
	protobuf_c_message_pack(m, nng_msg_body(msg));
	*ret_msg = msg;
	return 0;
}

/* Sends the request env and waits up to timeout_ms for the reply. */
static int
exchange(struct rpc *r, const Cut__V1__RpcRequest *env, int timeout_ms,
         nng_msg **ret_reply)
{
	nng_msg *msg = NULL;
	int rv;

	if ((rv = pack_msg(&env->base, &msg)) != 0)
		return rv;
	nng_socket_set_ms(r->sock, NNG_OPT_SENDTIMEO, timeout_ms);
	nng_socket_set_ms(r->sock, NNG_OPT_RECVTIMEO, timeout_ms);
	if ((rv = nng_sendmsg(r->sock, msg, 0)) != 0) {
		nng_msg_free(msg);
		return rpc_nng_error(rv);
	}
	if ((rv = nng_recvmsg(r->sock, ret_reply, 0)) != 0)
		return rpc_nng_error(rv);
	return 0;
}

/* Decodes and checks an RpcReply to request id into *ret. */
static int
decode_reply(nng_msg *msg, uint64_t id,
             const ProtobufCMessageDescriptor *reply_desc,
             struct rpc_answer *ret)
{
	Cut__V1__RpcReply *rep;
	ProtobufCMessage *body = NULL;

	rep = (Cut__V1__RpcReply *)cutproto_unpack(
	    &cut__v1__rpc_reply__descriptor, nng_msg_len(msg),
	    nng_msg_body(msg));
	if (rep == NULL)
		return CUT_EPROTO;
	if (rep->request_id != id) {
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return CUT_EPROTO;
	}
	if (rep->has_body && reply_desc != NULL) {
		body =
		    cutproto_unpack(reply_desc, rep->body.len, rep->body.data);
		if (body == NULL) {
			protobuf_c_message_free_unpacked(&rep->base, NULL);
			return CUT_EPROTO;
		}
	}
	ret->status = rep->status;
	snprintf(ret->message, sizeof(ret->message), "%s", rep->message);
	ret->body = body;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

int
rpc_call(struct rpc *r, const char *method, const ProtobufCMessage *req,
         const ProtobufCMessageDescriptor *reply_desc, int timeout_ms,
         struct rpc_answer *ret)
{
	Cut__V1__RpcRequest env = CUT__V1__RPC_REQUEST__INIT;
	nng_msg *reply = NULL;
	uint8_t *body;
	size_t len;
	int rv;

	if (r == NULL || method == NULL || req == NULL || ret == NULL ||
	    timeout_ms <= 0)
		return CUT_EINVAL;
	len = protobuf_c_message_get_packed_size(req);
	if ((body = malloc(len > 0 ? len : 1)) == NULL)
		return CUT_ENOMEM;
	protobuf_c_message_pack(req, body);
	if (r->next_id == 0) /* 0 would not be de-duplicated */
		r->next_id++;
	env.request_id = r->next_id++;
	env.method = (char *)method;
	env.body.data = body;
	env.body.len = len;
	rv = exchange(r, &env, timeout_ms, &reply);
	/* Once more, with the same id (the daemon answers a request it has
	 * seen with the same reply): after a timeout, and when the
	 * connection closed under the request, as when the daemon starts
	 * its control listener again (shell/ipcprobe.h); nng dials again. */
	if (rv == CUT_ETIMEDOUT || rv == CUT_ECLOSED)
		rv = exchange(r, &env, timeout_ms, &reply);
	/* nng no longer dials again (rpc_reaper_stopped()): a new socket
	 * in place of this one, left open, and the request once more. */
	if ((rv == CUT_ETIMEDOUT || rv == CUT_ECLOSED) &&
	    rpc_reaper_stopped()) {
		nng_socket old = r->sock;
		if (open_sock(r) == 0)
			rv = exchange(r, &env, timeout_ms, &reply);
		else
			r->sock = old;
	}
	free(body);
	if (rv != 0)
		return rv;
	rv = decode_reply(reply, env.request_id, reply_desc, ret);
	nng_msg_free(reply);
	return rv;
}

const char *
rpc_status_name(int32_t status)
{
	const ProtobufCEnumValue *v;

	v = protobuf_c_enum_descriptor_get_value(
	    &cut__v1__status_code__descriptor, status);
	return v != NULL ? v->name : "UNKNOWN_STATUS";
}

/* 1 if s is 1..max-1 printable ASCII bytes without spaces. */
static int
printable_id(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (s[i] <= ' ' || s[i] > '~' || i + 1 >= max)
			return 0;
	return i > 0;
}

int
rpc_check_snapshot(const Cut__V1__SnapshotInfo *s)
{
	size_t i;

	if (!printable_id(s->id, CUT_SNAPSHOT_ID_MAX) || s->initiator[0] == 0)
		return CUT_EPROTO;
	switch (s->status) {
	case CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS:
	case CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE:
	case CUT__V1__SNAPSHOT_INFO__STATUS__ABORTED:
		break;
	default:
		return CUT_EPROTO;
	}
	for (i = 0; i < s->n_nodes; i++)
		if (s->nodes[i]->has_state &&
		    s->nodes[i]->state.len != s->nodes[i]->state_size)
			return CUT_EPROTO;
	return 0;
}
