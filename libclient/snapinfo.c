/*
 * snapinfo.c - the accessors of struct cut_snapshot: read-only views of
 * the SnapshotInfo a daemon sent.  Every accessor accepts NULL and an
 * index out of range, and answers with NULL, 0 or CUT_EINVAL.
 */
#include "cut_int.h"

const char *
cut_snapshot_id(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->id : NULL;
}

const char *
cut_snapshot_initiator(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->initiator : NULL;
}

int
cut_snapshot_status(const struct cut_snapshot *s)
{
	/* rpc_check_snapshot() let only the three known values through,
	 * and CUT_SNAPSHOT_* have the same numbers. */
	return s != NULL ? (int)s->info->status : 0;
}

const char *
cut_snapshot_reason(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->reason : NULL;
}

uint64_t
cut_snapshot_started_ms(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->started_ms : 0;
}

uint64_t
cut_snapshot_finished_ms(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->finished_ms : 0;
}

unsigned
cut_snapshot_parts(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->parts_received : 0;
}

unsigned
cut_snapshot_parts_expected(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->parts_expected : 0;
}

unsigned
cut_snapshot_channels_recording(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->channels_recording : 0;
}

int
cut_snapshot_consistent(const struct cut_snapshot *s)
{
	if (s == NULL || s->info->audit == NULL)
		return -1;
	return s->info->audit->consistent ? 1 : 0;
}

const char *
cut_snapshot_audit_reason(const struct cut_snapshot *s)
{
	if (s == NULL)
		return NULL;
	return s->info->audit != NULL ? s->info->audit->reason : "";
}

size_t
cut_snapshot_nnodes(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->n_nodes : 0;
}

/* Node i of s, or NULL. */
static const Cut__V1__NodeState *
node(const struct cut_snapshot *s, size_t i)
{
	return s != NULL && i < s->info->n_nodes ? s->info->nodes[i] : NULL;
}

const char *
cut_snapshot_node(const struct cut_snapshot *s, size_t i)
{
	const Cut__V1__NodeState *n = node(s, i);

	return n != NULL ? n->node : NULL;
}

const char *
cut_snapshot_node_content_type(const struct cut_snapshot *s, size_t i)
{
	const Cut__V1__NodeState *n = node(s, i);

	return n != NULL ? n->content_type : NULL;
}

const void *
cut_snapshot_node_state(const struct cut_snapshot *s, size_t i, size_t *ret_len)
{
	const Cut__V1__NodeState *n = node(s, i);

	if (n == NULL || !n->has_state)
		return NULL;
	if (ret_len != NULL)
		*ret_len = n->state.len;
	/* An empty state is not absent: hand out a valid pointer. */
	return n->state.data != NULL ? (const void *)n->state.data : "";
}

size_t
cut_snapshot_nchannels(const struct cut_snapshot *s)
{
	return s != NULL ? s->info->n_channels : 0;
}

/* Channel i of s, or NULL. */
static const Cut__V1__ChannelState *
channel(const struct cut_snapshot *s, size_t i)
{
	return s != NULL && i < s->info->n_channels ? s->info->channels[i]
	                                            : NULL;
}

int
cut_snapshot_channel(const struct cut_snapshot *s, size_t i,
                     const char **ret_src, const char **ret_dst,
                     uint64_t *ret_m, uint64_t *ret_n, uint64_t *ret_count)
{
	const Cut__V1__ChannelState *ch = channel(s, i);

	if (ch == NULL)
		return CUT_EINVAL;
	if (ret_src != NULL)
		*ret_src = ch->src;
	if (ret_dst != NULL)
		*ret_dst = ch->dst;
	if (ret_m != NULL)
		*ret_m = ch->m;
	if (ret_n != NULL)
		*ret_n = ch->n;
	if (ret_count != NULL)
		*ret_count = ch->count;
	return 0;
}

size_t
cut_snapshot_channel_nmessages(const struct cut_snapshot *s, size_t i)
{
	const Cut__V1__ChannelState *ch = channel(s, i);

	return ch != NULL ? ch->n_messages : 0;
}

int
cut_snapshot_channel_message(const struct cut_snapshot *s, size_t i, size_t j,
                             uint64_t *ret_seq, const char **ret_content_type,
                             const void **ret_data, size_t *ret_len)
{
	const Cut__V1__ChannelState *ch = channel(s, i);
	const Cut__V1__ChannelMessage *m;

	if (ch == NULL || j >= ch->n_messages)
		return CUT_EINVAL;
	m = ch->messages[j];
	if (ret_seq != NULL)
		*ret_seq = m->seq;
	if (ret_content_type != NULL)
		*ret_content_type = m->content_type;
	if (ret_data != NULL)
		*ret_data = m->payload.data != NULL
		                ? (const void *)m->payload.data
		                : "";
	if (ret_len != NULL)
		*ret_len = m->payload.len;
	return 0;
}
