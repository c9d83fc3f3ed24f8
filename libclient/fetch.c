/*
 * fetch.c - fetching a whole snapshot over the control connection: one
 * Get, then further Gets for each channel whose recorded messages did not
 * fit in one reply, appended in seq order.  Shared by libcut and cutctl.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cut/cut.h"
#include "rpc.h"

/* One Get; an error status becomes its CUT_E* code, the daemon's message
 * in errbuf and the status itself in *status. */
static int
get(struct rpc *r, const Cut__V1__GetRequest *req, int timeout_ms,
    Cut__V1__SnapshotInfo **ret, char *errbuf, size_t errlen, int32_t *status)
{
	struct rpc_answer a = {0};
	int rv;

	rv = rpc_call(r, CUTPROTO_METHOD_GET, &req->base,
	              &cut__v1__snapshot_info__descriptor, timeout_ms, &a);
	if (rv != 0)
		return rv;
	if ((rv = rpc_status_error(a.status)) != 0) {
		snprintf(errbuf, errlen, "%s", a.message);
		*status = a.status;
		rpc_answer_clear(&a);
		return rv;
	}
	if (a.body == NULL ||
	    rpc_check_snapshot((Cut__V1__SnapshotInfo *)a.body) != 0) {
		snprintf(errbuf, errlen, "bad Get reply from the daemon");
		rpc_answer_clear(&a);
		return CUT_EPROTO;
	}
	*ret = (Cut__V1__SnapshotInfo *)a.body;
	return 0;
}

static Cut__V1__ChannelState *
find_channel(Cut__V1__SnapshotInfo *s, const char *src, const char *dst)
{
	size_t i;

	for (i = 0; i < s->n_channels; i++)
		if (strcmp(s->channels[i]->src, src) == 0 &&
		    strcmp(s->channels[i]->dst, dst) == 0)
			return s->channels[i];
	return NULL;
}

/* The seq of the last message of ch, or 0 if it has none. */
static uint64_t
last_seq(const Cut__V1__ChannelState *ch)
{
	return ch->n_messages > 0 ? ch->messages[ch->n_messages - 1]->seq : 0;
}

/*
 * Moves the messages of page (which must continue to) to the end of to.
 * Both were unpacked by protobuf-c with the default allocator, so the
 * moved messages are later freed with to like its own.
 */
static int
append(Cut__V1__ChannelState *to, Cut__V1__ChannelState *page)
{
	Cut__V1__ChannelMessage **m;
	uint64_t last = last_seq(to);
	size_t i;

	if (page->n_messages == 0)
		return CUT_EPROTO; /* "more", but no progress */
	for (i = 0; i < page->n_messages; i++) {
		if (page->messages[i]->seq <= last)
			return CUT_EPROTO;
		last = page->messages[i]->seq;
	}
	m = realloc(to->messages,
	            (to->n_messages + page->n_messages) * sizeof(*m));
	if (m == NULL)
		return CUT_ENOMEM;
	memcpy(m + to->n_messages, page->messages,
	       page->n_messages * sizeof(*m));
	to->messages = m;
	to->n_messages += page->n_messages;
	page->n_messages = 0;
	to->more = page->more;
	to->has_more = 1;
	return 0;
}

/* Fetches the rest of channel ch of snapshot id, page by page. */
static int
fetch_rest(struct rpc *r, const char *id, Cut__V1__ChannelState *ch,
           int timeout_ms, char *errbuf, size_t errlen, int32_t *status)
{
	Cut__V1__GetRequest req = CUT__V1__GET_REQUEST__INIT;
	Cut__V1__SnapshotInfo *page;
	Cut__V1__ChannelState *pc;
	int rv;

	req.snapshot_id = (char *)id;
	req.has_include_messages = req.include_messages = 1;
	req.channel_src = ch->src;
	req.channel_dst = ch->dst;
	req.has_after_seq = req.has_max_messages = 1;
	req.max_messages = RPC_PAGE_MESSAGES;
	while (ch->more) {
		req.after_seq = last_seq(ch);
		if ((rv = get(r, &req, timeout_ms, &page, errbuf, errlen,
		              status)) != 0)
			return rv;
		pc = find_channel(page, ch->src, ch->dst);
		rv = pc != NULL ? append(ch, pc) : CUT_EPROTO;
		protobuf_c_message_free_unpacked(&page->base, NULL);
		if (rv != 0) {
			snprintf(errbuf, errlen, "bad page of %s -> %s",
			         ch->src, ch->dst);
			return rv;
		}
	}
	return 0;
}

int
rpc_get_snapshot(struct rpc *r, const char *id, int states, int messages,
                 int timeout_ms, Cut__V1__SnapshotInfo **ret, char *errbuf,
                 size_t errlen, int32_t *ret_status)
{
	int32_t status = CUT__V1__STATUS_CODE__OK;
	Cut__V1__GetRequest req = CUT__V1__GET_REQUEST__INIT;
	Cut__V1__SnapshotInfo *s;
	size_t i;
	int rv;

	req.snapshot_id = (char *)id;
	req.has_include_states = req.include_states = states != 0;
	req.has_include_messages = req.include_messages = messages != 0;
	if (messages) {
		req.has_max_messages = 1;
		req.max_messages = RPC_PAGE_MESSAGES;
	}
	if ((rv = get(r, &req, timeout_ms, &s, errbuf, errlen, &status)) != 0)
		goto fail;
	for (i = 0; messages && i < s->n_channels; i++) {
		rv = fetch_rest(r, id, s->channels[i], timeout_ms, errbuf,
		                errlen, &status);
		if (rv != 0) {
			protobuf_c_message_free_unpacked(&s->base, NULL);
			goto fail;
		}
	}
	*ret = s;
	return 0;
fail:
	if (ret_status != NULL)
		*ret_status = status;
	return rv;
}
