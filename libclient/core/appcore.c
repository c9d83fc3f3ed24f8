/*
 * appcore.c - libcut's side of the application protocol, pure (see
 * appcore.h).
 *
 * Credit.  Each channel has a window (AppHelloReply.window_bytes) of bytes
 * sent and not yet taken by the receiving application, a message counting
 * its payload plus AppHelloReply.message_cost.  The daemon says how far
 * the application may send with AppCredit.limit, in the same bytes since
 * the last hello.
 *
 * Keep and resume.  Each message carries its channel's next seq and is
 * kept until AppCredit.taken says the receiving application took it: a
 * daemon that dies loses nothing libcut accepted.  After a lost
 * connection, the resuming hello says where every channel stands
 * (AppHello.resume), and its reply says how far the daemon has each
 * channel (AppHelloReply.sent): the kept messages past that go again, in
 * order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appcore.h"
#include "cut/cut.h"

void
appcore_init(struct appcore *k)
{
	memset(k, 0, sizeof(*k));
	k->taken_at = APPCORE_NEVER;
}

static void
keep_free(struct appcore_keep *kp)
{
	free(kp->buf);
	memset(kp, 0, sizeof(*kp));
}

void
appcore_fini(struct appcore *k)
{
	for (size_t i = 0; k->ch != NULL && i < k->npeers; i++) {
		free(k->ch[i].peer);
		keep_free(&k->ch[i].keep);
	}
	free(k->ch);
	for (size_t i = 0; i < k->nsrc; i++)
		free(k->src[i].name);
	free(k->node);
	free(k->cluster);
	free(k->out);
	free(k->scratch);
	appcore_init(k);
}

/* ---- Kept messages ---- */

/* A kept message: its seq, its window charge and its packed AppItem
 * (as field 1 of an AppBatch), stored back to back in one buffer. */
struct kept_hdr {
	uint64_t seq, charge;
	size_t len;
};

static int
keep_push(struct appcore_keep *kp, uint64_t seq, uint64_t charge,
          const void *item, size_t len)
{
	struct kept_hdr h = {seq, charge, len};
	size_t need = sizeof(h) + len;

	if (kp->head > 0 && kp->tail + need > kp->cap) {
		/* Compact: what was released is at the front. */
		memmove(kp->buf, kp->buf + kp->head, kp->tail - kp->head);
		kp->tail -= kp->head;
		kp->head = 0;
	}
	if (kp->tail + need > kp->cap) {
		size_t cap = kp->cap ? kp->cap : 4096;
		uint8_t *b;
		while (cap < kp->tail + need)
			cap *= 2;
		if ((b = realloc(kp->buf, cap)) == NULL)
			return CUT_ENOMEM;
		kp->buf = b;
		kp->cap = cap;
	}
	memcpy(kp->buf + kp->tail, &h, sizeof(h));
	memcpy(kp->buf + kp->tail + sizeof(h), item, len);
	kp->tail += need;
	return 0;
}

/* The kept message at offset off, or 0 past the end. */
static int
kept_at(const struct appcore_keep *kp, size_t off, struct kept_hdr *ret_h,
        const uint8_t **ret_item)
{
	if (off >= kp->tail)
		return 0;
	memcpy(ret_h, kp->buf + off, sizeof(*ret_h));
	*ret_item = kp->buf + off + sizeof(*ret_h);
	return 1;
}

/* Drops the kept messages up to seq upto. */
static void
keep_release(struct appcore_keep *kp, uint64_t upto)
{
	struct kept_hdr h;
	const uint8_t *item;

	while (kept_at(kp, kp->head, &h, &item) && h.seq <= upto)
		kp->head += sizeof(h) + h.len;
	if (kp->head == kp->tail)
		kp->head = kp->tail = 0;
}

/* ---- The out buffer ---- */

static int
out_room(struct appcore *k, size_t need)
{
	need += k->out_len;
	if (need > k->out_cap) {
		size_t cap = k->out_cap ? k->out_cap : 4096;
		uint8_t *b;
		while (cap < need)
			cap *= 2;
		if ((b = realloc(k->out, cap)) == NULL)
			return CUT_ENOMEM;
		k->out = b;
		k->out_cap = cap;
	}
	return 0;
}

static int
out_append(struct appcore *k, const void *p, size_t len)
{
	if (out_room(k, len) != 0)
		return CUT_ENOMEM;
	memcpy(k->out + k->out_len, p, len);
	k->out_len += len;
	return 0;
}

size_t
appcore_pack_field(uint8_t *dst, const Cut__V1__AppItem *item, size_t len)
{
	size_t n = 0;

	dst[n++] = (1 << 3) | 2;
	for (uint64_t v = len;; v >>= 7) {
		dst[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		if (v <= 0x7f)
			break;
	}
	return n + protobuf_c_message_pack(&item->base, dst + n);
}

int
appcore_queue(struct appcore *k, const Cut__V1__AppItem *item)
{
	size_t len = protobuf_c_message_get_packed_size(&item->base);

	if (out_room(k, len + 11) != 0)
		return CUT_ENOMEM;
	k->out_len += appcore_pack_field(k->out + k->out_len, item, len);
	return 0;
}

/* The length of the packed item (field header included) at p, within n
 * bytes. */
static size_t
item_size(const uint8_t *p, size_t n)
{
	uint64_t len = 0;
	size_t i = 1;

	for (int shift = 0; i < n && shift < 64; shift += 7) {
		len |= (uint64_t)(p[i] & 0x7f) << shift;
		if ((p[i++] & 0x80) == 0)
			break;
	}
	return i + (size_t)len;
}

size_t
appcore_frame_len(const struct appcore *k, size_t max)
{
	size_t n = 0;

	while (n < k->out_len) {
		size_t s = item_size(k->out + n, k->out_len - n);
		if (n > 0 && n + s > max)
			break;
		n += s;
	}
	return n < k->out_len ? n : k->out_len;
}

void
appcore_frame_taken(struct appcore *k, size_t n)
{
	if (n > k->out_len)
		n = k->out_len;
	memmove(k->out, k->out + n, k->out_len - n);
	k->out_len -= n;
}

/* ---- The hello ---- */

int
appcore_text_ok(const char *s)
{
	if (s == NULL)
		return 1;
	for (size_t i = 0; s[i] != '\0'; i++)
		if (s[i] < ' ' || s[i] > '~' || i >= APPCORE_TEXT_MAX)
			return 0;
	return 1;
}

/* A name from the daemon: 1 to 255 printable ASCII bytes. */
static int
name_ok(const char *s)
{
	return s != NULL && s[0] != '\0' && appcore_text_ok(s);
}

int
appcore_hello(const struct appcore *k, const char *node, int resume,
              uint8_t **ret, size_t *ret_len)
{
	Cut__V1__AppBatch batch = CUT__V1__APP_BATCH__INIT;
	Cut__V1__AppHello hello = CUT__V1__APP_HELLO__INIT;
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT, *items[1] = {&item};
	Cut__V1__AppResume *r = NULL, **rp = NULL;
	size_t n = 0, len;
	int rv = 0;

	hello.node = (char *)(resume ? k->node : node != NULL ? node : "");
	hello.version = CUTPROTO_APP_VERSION;
	if (resume) {
		size_t max = k->npeers + k->nsrc;
		if ((r = calloc(max + 1, sizeof(*r))) == NULL ||
		    (rp = calloc(max + 1, sizeof(*rp))) == NULL) {
			rv = CUT_ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < k->npeers; i++, n++) {
			cut__v1__app_resume__init(&r[n]);
			r[n].node = k->ch[i].peer;
			r[n].has_out_taken = r[n].has_out_sent = 1;
			r[n].out_taken = k->ch[i].taken;
			r[n].out_sent = k->ch[i].seq;
			r[n].has_out_numbering = k->ch[i].numbering != 0;
			r[n].out_numbering = k->ch[i].numbering;
			rp[n] = &r[n];
		}
		for (size_t i = 0; i < k->nsrc; i++, n++) {
			cut__v1__app_resume__init(&r[n]);
			r[n].node = k->src[i].name;
			r[n].has_in_taken = 1;
			r[n].in_taken = k->src[i].taken;
			r[n].has_in_numbering = k->src[i].numbering != 0;
			r[n].in_numbering = k->src[i].numbering;
			rp[n] = &r[n];
		}
		hello.n_resume = n;
		hello.resume = rp;
	}
	item.item_case = CUT__V1__APP_ITEM__ITEM_HELLO;
	item.hello = &hello;
	batch.n_items = 1;
	batch.items = items;
	len = protobuf_c_message_get_packed_size(&batch.base);
	if ((*ret = malloc(len ? len : 1)) == NULL) {
		rv = CUT_ENOMEM;
		goto out;
	}
	*ret_len = protobuf_c_message_pack(&batch.base, *ret);
out:
	free(r);
	free(rp);
	return rv;
}

int
appcore_open(struct appcore *k, const Cut__V1__AppHelloReply *r,
             const char *node)
{
	size_t i;

	if (!name_ok(r->node) || !name_ok(r->cluster) ||
	    r->max_message_size == 0)
		return CUT_EPROTO;
	if (node != NULL && node[0] != '\0' && strcmp(node, r->node) != 0)
		return CUT_ENOENT;
	if (r->version != CUTPROTO_APP_VERSION)
		return CUT_ENOTSUP;
	if (!r->has_window_bytes || r->window_bytes == 0)
		return CUT_EPROTO;
	for (i = 0; i < r->n_peers; i++)
		if (!name_ok(r->peers[i]))
			return CUT_EPROTO;
	if ((k->node = strdup(r->node)) == NULL ||
	    (k->cluster = strdup(r->cluster)) == NULL ||
	    (k->ch = calloc(r->n_peers + 1, sizeof(*k->ch))) == NULL)
		return CUT_ENOMEM;
	for (i = 0; i < r->n_peers; i++) {
		struct appcore_chan *ch = &k->ch[k->npeers];
		if ((ch->peer = strdup(r->peers[i])) == NULL)
			return CUT_ENOMEM;
		k->npeers++;
		/* An application before us may have sent on the
		 * channels: number on from where the daemon stands. */
		if (i < r->n_sent)
			ch->seq = ch->taken = r->sent[i];
		if (i < r->n_numbering)
			ch->numbering = r->numbering[i];
	}
	k->max_message = r->max_message_size;
	k->window = r->window_bytes;
	k->cost = r->has_message_cost ? r->message_cost : 0;
	k->opened = 1;
	return 0;
}

int
appcore_resumed(struct appcore *k, const Cut__V1__AppHelloReply *r)
{
	if (strcmp(r->node, k->node) != 0 ||
	    strcmp(r->cluster, k->cluster) != 0 || r->n_peers != k->npeers ||
	    r->n_sent != k->npeers)
		return CUT_EPROTO;
	for (size_t i = 0; i < r->n_peers; i++)
		if (strcmp(r->peers[i], k->ch[i].peer) != 0)
			return CUT_EPROTO;
	for (size_t i = 0; i < k->npeers; i++) {
		struct appcore_chan *ch = &k->ch[i];
		struct kept_hdr h;
		const uint8_t *item;
		ch->sent = ch->limit = 0;
		for (size_t off = ch->keep.head;
		     kept_at(&ch->keep, off, &h, &item);
		     off += sizeof(h) + h.len) {
			if (h.seq <= r->sent[i])
				continue;
			if (out_append(k, item, h.len) != 0)
				return CUT_ENOMEM;
			ch->sent += h.charge;
		}
	}
	return 0;
}

void
appcore_forget(struct appcore *k)
{
	k->out_len = 0;
	k->handed = k->reported = k->unreported = 0;
	k->taken_at = APPCORE_NEVER;
}

/* ---- The up stream ---- */

int
appcore_peer(const struct appcore *k, const char *to)
{
	for (size_t i = 0; i < k->npeers; i++)
		if (strcmp(k->ch[i].peer, to) == 0)
			return (int)i;
	return -1;
}

uint64_t
appcore_charge(const struct appcore *k, size_t len)
{
	return len + k->cost;
}

int
appcore_room(const struct appcore *k, size_t i, uint64_t charge)
{
	uint64_t sent = k->ch[i].sent, limit = k->ch[i].limit;

	return sent + charge <= limit ||
	       (limit >= sent && limit - sent >= k->window);
}

int
appcore_send(struct appcore *k, size_t i, Cut__V1__AppItem *item, int only_keep)
{
	struct appcore_chan *ch = &k->ch[i];
	uint64_t charge = appcore_charge(k, item->send->payload.len);
	size_t len, n;
	int rv;

	item->send->has_seq = 1;
	item->send->seq = ch->seq + 1;
	len = protobuf_c_message_get_packed_size(&item->base);
	if (k->scratch_cap < len + 11) {
		uint8_t *b = realloc(k->scratch, len + 11);
		if (b == NULL)
			return CUT_ENOMEM;
		k->scratch = b;
		k->scratch_cap = len + 11;
	}
	n = appcore_pack_field(k->scratch, item, len);
	if (!only_keep && out_room(k, n) != 0)
		return CUT_ENOMEM;
	if ((rv = keep_push(&ch->keep, item->send->seq, charge, k->scratch,
	                    n)) != 0)
		return rv;
	ch->seq++;
	ch->sent += charge;
	if (!only_keep)
		(void)out_append(k, k->scratch, n); /* room made above */
	return 0;
}

int
appcore_sync(struct appcore *k, uint64_t *ret_token)
{
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppSync sy = CUT__V1__APP_SYNC__INIT;
	int rv;

	sy.token = k->sync_sent + 1;
	item.item_case = CUT__V1__APP_ITEM__ITEM_SYNC;
	item.sync = &sy;
	if ((rv = appcore_queue(k, &item)) != 0)
		return rv;
	*ret_token = ++k->sync_sent;
	return 0;
}

void
appcore_synced(struct appcore *k, uint64_t token)
{
	/* Tokens are answered in order; one from a connection before
	 * (answered after a resume) is no larger than those sent. */
	if (token > k->sync_done && token <= k->sync_sent)
		k->sync_done = token;
}

int
appcore_is_synced(const struct appcore *k, uint64_t token)
{
	return k->sync_done >= token;
}

size_t
appcore_kept(const struct appcore *k, size_t i, uint64_t *ret_bytes)
{
	const struct appcore_keep *kp = &k->ch[i].keep;
	struct kept_hdr h;
	const uint8_t *item;
	size_t n = 0;

	*ret_bytes = 0;
	for (size_t off = kp->head; kept_at(kp, off, &h, &item);
	     off += sizeof(h) + h.len, n++)
		*ret_bytes += h.charge;
	return n;
}

int
appcore_credit(struct appcore *k, const Cut__V1__AppCredit *cr)
{
	struct appcore_chan *ch;

	if (cr->peer >= k->npeers || k->ch == NULL)
		return 0;
	ch = &k->ch[cr->peer];
	if (cr->has_taken && cr->taken > ch->taken && cr->taken <= ch->seq) {
		ch->taken = cr->taken;
		keep_release(&ch->keep, cr->taken);
	}
	if (cr->limit > ch->limit) {
		ch->limit = cr->limit;
		return 1;
	}
	return 0;
}

/* ---- The down stream ---- */

/* Sets the position of incoming channel `from` to seq (raise only, unless
 * set). */
static void
src_note(struct appcore *k, const char *from, uint64_t seq, uint64_t numbering)
{
	/* numbering: a new numbering begins at seq (AppDeliver.numbering). */
	size_t i;

	for (i = 0; i < k->nsrc; i++)
		if (strcmp(k->src[i].name, from) == 0)
			break;
	if (i == k->nsrc) {
		char *name;
		if (seq == 0 || k->nsrc == APPCORE_MAX_SOURCES ||
		    (name = strdup(from)) == NULL)
			return; /* the daemon then sends it again: a duplicate
			         */
		k->src[k->nsrc].name = name;
		k->src[k->nsrc++].taken = 0;
	}
	if (numbering != 0 || seq > k->src[i].taken)
		k->src[i].taken = seq;
	if (numbering != 0)
		k->src[i].numbering = numbering;
}

int
appcore_handed(struct appcore *k, const char *from, uint64_t seq,
               uint64_t numbering, size_t len, int64_t now)
{
	k->handed++;
	k->unreported += appcore_charge(k, len);
	if (seq > 0)
		src_note(k, from, seq, numbering);
	if (k->unreported >= k->window / 8)
		return 1;
	if (k->taken_at == APPCORE_NEVER)
		k->taken_at = now + APPCORE_TAKEN_DELAY_MS;
	return 0;
}

int
appcore_report(struct appcore *k)
{
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppTaken t = CUT__V1__APP_TAKEN__INIT;
	int rv;

	k->taken_at = APPCORE_NEVER;
	if (k->handed == k->reported)
		return 0;
	t.handed = k->handed;
	item.item_case = CUT__V1__APP_ITEM__ITEM_TAKEN;
	item.taken = &t;
	if ((rv = appcore_queue(k, &item)) == 0) {
		k->reported = k->handed;
		k->unreported = 0;
	}
	return rv;
}

int
appcore_state_reply(struct appcore *k, const char *id, uint64_t handed,
                    const void *state, size_t len, const char *content_type)
{
	Cut__V1__AppStateReply reply = CUT__V1__APP_STATE_REPLY__INIT;
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT;
	int rv;

	reply.snapshot_id = (char *)id;
	reply.content_type = (char *)content_type;
	reply.state.data = (uint8_t *)state;
	reply.state.len = len;
	reply.handed = handed;
	item.item_case = CUT__V1__APP_ITEM__ITEM_STATE_REPLY;
	item.state_reply = &reply;
	/* The reply reports the handed count too. */
	if ((rv = appcore_queue(k, &item)) == 0 && handed >= k->reported) {
		k->reported = handed;
		if (handed == k->handed)
			k->unreported = 0;
	}
	return rv;
}

void
appcore_restore(struct appcore *k, const struct appcore_pos *pos, size_t nch)
{
	k->handed = k->reported = k->unreported = 0;
	k->taken_at = APPCORE_NEVER;
	for (size_t i = 0; i < k->nsrc; i++)
		k->src[i].taken = 0;
	for (size_t j = 0; j < nch; j++)
		src_note(k, pos[j].node, pos[j].in_taken, 1);
	for (size_t i = 0; i < k->npeers; i++) {
		struct appcore_chan *ch = &k->ch[i];
		uint64_t seq = 0;
		for (size_t j = 0; j < nch; j++)
			if (strcmp(pos[j].node, ch->peer) == 0)
				seq = pos[j].out_sent;
		keep_release(&ch->keep, UINT64_MAX);
		ch->seq = ch->taken = seq;
		ch->sent = ch->limit = 0;
	}
}

int
appcore_restored(struct appcore *k, const char *id, int failed,
                 const char *reason)
{
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppRestored done = CUT__V1__APP_RESTORED__INIT;

	done.snapshot_id = (char *)id;
	if (failed != 0) {
		done.has_failed = 1;
		done.failed = (uint32_t)failed;
		done.reason = (char *)reason;
	}
	item.item_case = CUT__V1__APP_ITEM__ITEM_RESTORED;
	item.restored = &done;
	return appcore_queue(k, &item);
}

/* ---- Items and frames ---- */

/* Reads a varint at p[*i], within len; returns 0 or -1. */
static int
varint(const uint8_t *p, size_t len, size_t *i, uint64_t *ret)
{
	uint64_t v = 0;

	for (int shift = 0;; shift += 7) {
		if (*i == len || shift > 63)
			return -1;
		v |= (uint64_t)(p[*i] & 0x7f) << shift;
		if ((p[(*i)++] & 0x80) == 0)
			break;
	}
	*ret = v;
	return 0;
}

int
appcore_frame_item(const uint8_t *p, size_t len, size_t *off,
                   const uint8_t **ret_item, size_t *ret_len)
{
	size_t i = *off;
	uint64_t tag, n;

	/* Fields other than items (a later protocol's) are skipped. */
	while (i < len) {
		if (varint(p, len, &i, &tag) != 0)
			return -1;
		switch (tag & 7) {
		case 0:
			if (varint(p, len, &i, &n) != 0)
				return -1;
			continue;
		case 1:
		case 5:
			n = (tag & 7) == 1 ? 8 : 4;
			if (n > len - i)
				return -1;
			i += (size_t)n;
			continue;
		case 2:
			if (varint(p, len, &i, &n) != 0 || n > len - i)
				return -1;
			break;
		default:
			return -1;
		}
		if (tag >> 3 != 1) {
			i += (size_t)n;
			continue;
		}
		*ret_item = p + i;
		*ret_len = (size_t)n;
		*off = i + (size_t)n;
		return 1;
	}
	*off = i;
	return 0;
}

/* Where the items of a frame that still count begin: at its last
 * AppRestore, or 0; *ret_found says whether it holds one.  The framing
 * must have been checked. */
static size_t
restore_at(const uint8_t *p, size_t len, int *ret_found)
{
	const uint8_t *it;
	size_t off = 0, at = 0, n, restore_at = 0;

	*ret_found = 0;
	for (; appcore_frame_item(p, len, &off, &it, &n) == 1; at = off)
		if (n > 0 && it[0] ==
		                 APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_RESTORE)) {
			restore_at = at;
			*ret_found = 1;
		}
	return restore_at;
}

/* Whether an item may have to be taken in at once, ahead of the queue:
 * credit, a sync's answer, or a state request (only an unaligned one is;
 * it must be decoded to see). */
static int
maybe_urgent(const uint8_t *p, size_t n)
{
	return n > 0 &&
	       (p[0] == APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_CREDIT) ||
	        p[0] == APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_STATE_REQUEST) ||
	        p[0] == APPCORE_KIND(CUT__V1__APP_ITEM__ITEM_SYNCED));
}

int
appcore_id_ok(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	return n > 0 && n < CUT_SNAPSHOT_ID_MAX && appcore_text_ok(s);
}

/* ---- Taking the down stream in ---- */

enum appcore_answer_kind
appcore_hello_answer(struct appcore *k, const uint8_t *p, size_t len,
                     const char *node, struct appcore_answer *ret)
{
	Cut__V1__AppBatch *b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, p);

	memset(ret, 0, sizeof(*ret));
	ret->what = b != NULL ? APPCORE_ANSWER_NONE : APPCORE_ANSWER_BAD;
	for (size_t i = 0; b != NULL && i < b->n_items; i++) {
		const Cut__V1__AppItem *it = b->items[i];
		if (it->item_case == CUT__V1__APP_ITEM__ITEM_HELLO_REPLY) {
			if (k->opened) {
				ret->what = APPCORE_ANSWER_RESUMED;
				ret->rv = appcore_resumed(k, it->hello_reply);
			} else {
				ret->what = APPCORE_ANSWER_OPENED;
				ret->rv = appcore_open(k, it->hello_reply, node);
			}
			break;
		}
		if (it->item_case == CUT__V1__APP_ITEM__ITEM_ERROR &&
		    (it->error->code == CUT__V1__APP_ERROR__CODE__WRONG_NODE ||
		     it->error->code == CUT__V1__APP_ERROR__CODE__VERSION)) {
			ret->what = APPCORE_ANSWER_REFUSED;
			ret->code = it->error->code;
			snprintf(ret->message, sizeof(ret->message), "%s",
			         it->error->message);
			break;
		}
	}
	if (b != NULL)
		protobuf_c_message_free_unpacked(&b->base, NULL);
	return ret->what;
}

int
appcore_frame_start(const uint8_t *p, size_t len, size_t *ret_start)
{
	const uint8_t *it;
	size_t off = 0, n;
	int rv, found;

	*ret_start = 0;
	while ((rv = appcore_frame_item(p, len, &off, &it, &n)) == 1)
		;
	if (rv < 0)
		return -1;
	*ret_start = restore_at(p, len, &found);
	return found;
}

enum appcore_urgency
appcore_urgent(struct appcore *k, const uint8_t *p, size_t n,
               struct appcore_event *ev)
{
	Cut__V1__AppItem *it;

	ev->what = APPCORE_LATER;
	ev->grew = 0;
	ev->id[0] = '\0';
	if (!maybe_urgent(p, n))
		return ev->what;
	it = (Cut__V1__AppItem *)cutproto_unpack(&cut__v1__app_item__descriptor,
	                                         n, p);
	if (it == NULL)
		return ev->what = APPCORE_BAD;
	switch (it->item_case) {
	case CUT__V1__APP_ITEM__ITEM_CREDIT:
		ev->what = APPCORE_CREDIT;
		ev->grew = appcore_credit(k, it->credit);
		break;
	case CUT__V1__APP_ITEM__ITEM_SYNCED:
		ev->what = APPCORE_SYNCED;
		appcore_synced(k, it->synced->token);
		break;
	case CUT__V1__APP_ITEM__ITEM_STATE_REQUEST:
		if (!it->state_request->overtake)
			break; /* aligned: in its place */
		if (!appcore_id_ok(it->state_request->snapshot_id)) {
			ev->what = APPCORE_BAD;
			break;
		}
		ev->what = APPCORE_OVERTAKE;
		strcpy(ev->id, it->state_request->snapshot_id);
		break;
	default:
		break;
	}
	protobuf_c_message_free_unpacked(&it->base, NULL);
	return ev->what;
}

/* Whether restore r is one libcut can take: a snapshot id, a content type
 * and the nodes of its channels. */
static int
restore_ok(const Cut__V1__AppRestore *r)
{
	if (!appcore_id_ok(r->snapshot_id) ||
	    !appcore_text_ok(r->content_type))
		return 0;
	for (size_t i = 0; i < r->n_channels; i++)
		if (r->channels[i]->node[0] == '\0' ||
		    !appcore_text_ok(r->channels[i]->node))
			return 0;
	return 1;
}

enum appcore_take
appcore_judge(const Cut__V1__AppItem *it, const char **ret_why)
{
	*ret_why = "a bad item";
	switch (it->item_case) {
	case CUT__V1__APP_ITEM__ITEM_DELIVER:
		if (it->deliver->from[0] == '\0' ||
		    !appcore_text_ok(it->deliver->from) ||
		    !appcore_text_ok(it->deliver->content_type))
			break;
		return APPCORE_DELIVER;
	case CUT__V1__APP_ITEM__ITEM_CREDIT:
	case CUT__V1__APP_ITEM__ITEM_SYNCED:
		return APPCORE_SKIP; /* taken on arrival */
	case CUT__V1__APP_ITEM__ITEM_STATE_REQUEST:
		if (!appcore_id_ok(it->state_request->snapshot_id))
			break;
		/* An unaligned one was queued ahead on arrival. */
		return it->state_request->overtake ? APPCORE_SKIP
		                                   : APPCORE_STATE;
	case CUT__V1__APP_ITEM__ITEM_RESTORE:
		if (restore_ok(it->restore))
			return APPCORE_RESTORE;
		*ret_why = "a bad restore";
		break;
	case CUT__V1__APP_ITEM__ITEM_ERROR:
		return APPCORE_REFUSED;
	default:
		break;
	}
	return APPCORE_BAD_ITEM;
}

int
appcore_restore_step(struct appcore *k, const char *id,
                     const struct appcore_pos *pos, size_t nch, int failed,
                     const char *reason, int lost)
{
	appcore_restore(k, pos, nch);
	return lost ? 0 : appcore_restored(k, id, failed, reason);
}

int
appcore_restorable(struct appcore *k, int yes)
{
	Cut__V1__AppItem item = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppRestorable r = CUT__V1__APP_RESTORABLE__INIT;

	r.yes = yes != 0;
	item.item_case = CUT__V1__APP_ITEM__ITEM_RESTORABLE;
	item.restorable = &r;
	return appcore_queue(k, &item);
}

size_t
appcore_frame_max(const struct appcore *k)
{
	size_t m = k->max_message + (32u << 10);

	return m < APPCORE_FRAME_MAX ? m : APPCORE_FRAME_MAX;
}

int
appcore_hello_frame(struct appcore *k, const uint8_t *p, size_t len,
                    const char *node, int restorable,
                    struct appcore_answer *ret)
{
	switch (appcore_hello_answer(k, p, len, node, ret)) {
	case APPCORE_ANSWER_NONE:
	case APPCORE_ANSWER_BAD:
		return 0;
	case APPCORE_ANSWER_RESUMED:
		/* Without memory the daemon is not told, and takes the
		 * application for one without a restore callback; the
		 * resume goes on. */
		if (ret->rv == 0 && restorable)
			(void)appcore_restorable(k, 1);
		break;
	case APPCORE_ANSWER_OPENED:
	case APPCORE_ANSWER_REFUSED:
		break;
	}
	return 1;
}
