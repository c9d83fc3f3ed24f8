/*
 * coord_asm.c - parts travel to the initiator, which stores them, audits
 * the whole cut and stores the verdict.
 *
 * A part is one PeerPart item (local state and, per incoming channel, m, n
 * and what was recorded) followed, when anything was recorded, by
 * PeerPartMessages chunks of at most CHUNK_BYTES read back from the
 * sender's database, the last one marked final.  The initiator does not
 * trust the sender's summary of the recorded messages: it recomputes it
 * from the messages that actually arrived, so the audit judges the data
 * stored, not a claim about it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "cutproto.h"
#include "log.h"

/* The local state, read back from this node's database. */
struct state_copy {
	const char *node;
	char *ctype;
	uint8_t *data;
	size_t len;
	int found;
};

static int
copy_state(const char *node, const char *ctype, const void *state, size_t len,
           void *arg)
{
	struct state_copy *sc = arg;

	if (strcmp(node, sc->node) != 0)
		return 0;
	sc->ctype = strdup(ctype ? ctype : "");
	sc->data = malloc(len ? len : 1);
	if (sc->ctype == NULL || sc->data == NULL)
		return E_NOMEM;
	memcpy(sc->data, state, len);
	sc->len = len;
	sc->found = 1;
	return 0;
}

/* A chunk of recorded messages being filled. */
struct chunk {
	struct coord *c;
	struct snap *s;
	const char *src;
	Cut__V1__ChannelMessage *msgs;
	Cut__V1__ChannelMessage **ptrs;
	size_t n, cap, bytes;
	int rv;
};

static void
chunk_clear(struct chunk *ck)
{
	for (size_t i = 0; i < ck->n; i++) {
		free(ck->msgs[i].content_type);
		free(ck->msgs[i].payload.data);
	}
	ck->n = 0;
	ck->bytes = 0;
}

static int
chunk_flush(struct chunk *ck, int final)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerPartMessages pm = CUT__V1__PEER_PART_MESSAGES__INIT;
	size_t node = ck->s->initiator;
	int rv;

	if (ck->n == 0 && !final)
		return 0;
	for (size_t i = 0; i < ck->n; i++)
		ck->ptrs[i] = &ck->msgs[i];
	pm.seq = peer_next_seq(ck->c, node);
	pm.snapshot_id = ck->s->id;
	pm.src = (char *)ck->src;
	pm.messages = ck->ptrs;
	pm.n_messages = ck->n;
	pm.final = final;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES;
	item.part_messages = &pm;
	rv = peer_push_item(ck->c, node, &item);
	chunk_clear(ck);
	return rv;
}

static int
chunk_add(uint64_t seq, const char *ctype, const void *payload, size_t len,
          void *arg)
{
	struct chunk *ck = arg;
	Cut__V1__ChannelMessage *m;

	if (ck->bytes > 0 && ck->bytes + len > CHUNK_BYTES &&
	    (ck->rv = chunk_flush(ck, 0)) != 0)
		return ck->rv;
	if (ck->n == ck->cap) {
		size_t cap = ck->cap ? ck->cap * 2 : 64;
		void *v = realloc(ck->msgs, cap * sizeof(*ck->msgs));
		void *p = v ? realloc(ck->ptrs, cap * sizeof(*ck->ptrs)) : NULL;
		if (v != NULL)
			ck->msgs = v;
		if (p == NULL)
			return ck->rv = E_NOMEM;
		ck->ptrs = p;
		ck->cap = cap;
	}
	m = &ck->msgs[ck->n];
	cut__v1__channel_message__init(m);
	m->seq = seq;
	m->content_type = ctype ? strdup(ctype) : NULL;
	m->payload.data = malloc(len ? len : 1);
	if (m->payload.data == NULL)
		return ck->rv = E_NOMEM;
	memcpy(m->payload.data, payload, len);
	m->payload.len = len;
	ck->n++;
	ck->bytes += len + 32;
	return 0;
}

/* Streams the recorded messages of s from the database, in chunks. */
static int
send_messages(struct coord *c, struct snap *s)
{
	struct chunk ck = {.c = c, .s = s};
	size_t last = SIZE_MAX;
	int rv = 0;

	for (size_t i = 0; i < c->n_in; i++)
		if (s->in[i].seqs.count > 0)
			last = i;
	for (size_t i = 0; last != SIZE_MAX && i <= last && rv == 0; i++) {
		if (s->in[i].seqs.count == 0)
			continue;
		ck.src = c->cfg->nodes[s->in[i].src].name;
		rv = DB(c, foreach_message, s->id, ck.src, c->name,
		                           chunk_add, &ck);
		if (rv == 0)
			rv = ck.rv;
		if (rv == 0)
			rv = chunk_flush(&ck, i == last);
	}
	chunk_clear(&ck);
	free(ck.msgs);
	free(ck.ptrs);
	return rv;
}

int
asm_send_part(struct coord *c, struct snap *s)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerPart part = CUT__V1__PEER_PART__INIT;
	Cut__V1__PartChannel *chans, **ptrs;
	struct state_copy sc = {.node = c->name};
	int rv = E_NOMEM;

	chans = calloc(c->n_in + 1, sizeof(*chans));
	ptrs = calloc(c->n_in + 1, sizeof(*ptrs));
	if (chans == NULL || ptrs == NULL)
		goto out;
	if ((rv = DB(c, foreach_state, s->id, copy_state, &sc)) != 0)
		goto out;
	if (!sc.found) {
		rv = E_NOENT; /* the local state never made it to disk */
		goto out;
	}
	for (size_t i = 0; i < c->n_in; i++) {
		const struct part_chan *pc = &s->in[i];
		cut__v1__part_channel__init(&chans[i]);
		chans[i].src = (char *)c->cfg->nodes[pc->src].name;
		chans[i].m = pc->m;
		chans[i].n = pc->n;
		chans[i].count = pc->seqs.count;
		chans[i].first_seq = pc->seqs.first;
		chans[i].last_seq = pc->seqs.last;
		chans[i].consecutive = pc->seqs.consecutive;
		ptrs[i] = &chans[i];
	}
	part.seq = peer_next_seq(c, s->initiator);
	part.snapshot_id = s->id;
	part.node = (char *)c->name;
	part.content_type = sc.ctype;
	part.state.data = sc.data;
	part.state.len = sc.len;
	part.channels = ptrs;
	part.n_channels = c->n_in;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_PART;
	item.part = &part;
	if ((rv = peer_push_item(c, s->initiator, &item)) == 0)
		rv = send_messages(c, s);
out:
	free(sc.ctype);
	free(sc.data);
	free(chans);
	free(ptrs);
	return rv;
}

/* Builds the audit's view of s from the initiator's database. */
struct collect {
	struct coord *c;
	struct audit_channel *rec;
	size_t n, cap;
	int bad;
	const char **parts;
	size_t *nparts, maxparts;
};

static int
collect_state(const char *node, const char *ctype, const void *state,
              size_t len, void *arg)
{
	struct collect *co = arg;
	int v = config_node_index(co->c->cfg, node);

	(void)ctype;
	(void)state;
	(void)len;
	if (v < 0 || *co->nparts == co->maxparts) {
		co->bad = 1;
		return 0;
	}
	co->parts[(*co->nparts)++] = co->c->cfg->nodes[v].name;
	return 0;
}

static int
collect_channel(const struct store_channel *ch, void *arg)
{
	struct collect *co = arg;
	int src = config_node_index(co->c->cfg, ch->src);
	int dst = config_node_index(co->c->cfg, ch->dst);
	struct audit_channel *a;

	if (src < 0 || dst < 0) {
		co->bad = 1;
		return 0;
	}
	if (co->n == co->cap) {
		size_t cap = co->cap ? co->cap * 2 : 16;
		void *v = realloc(co->rec, cap * sizeof(*co->rec));
		if (v == NULL)
			return E_NOMEM;
		co->rec = v;
		co->cap = cap;
	}
	a = &co->rec[co->n++];
	memset(a, 0, sizeof(*a));
	a->src = co->c->cfg->nodes[src].name;
	a->dst = co->c->cfg->nodes[dst].name;
	a->m = ch->m;
	a->n = ch->n;
	a->seqs.count = ch->recorded;
	a->seqs.first = ch->first_seq;
	a->seqs.last = ch->last_seq;
	a->seqs.consecutive = ch->consecutive;
	return 0;
}

static int
audit_snap(struct coord *c, struct snap *s, struct audit_report *ret)
{
	const struct config *cfg = c->cfg;
	const char **names, **parts, **src, **dst;
	struct collect co = {.c = c};
	struct audit_input in;
	int rv = E_NOMEM;

	memset(&in, 0, sizeof(in));
	names = calloc(cfg->nnodes + 1, sizeof(*names));
	parts = calloc(cfg->nnodes + 1, sizeof(*parts));
	src = calloc(cfg->nchans + 1, sizeof(*src));
	dst = calloc(cfg->nchans + 1, sizeof(*dst));
	if (!names || !parts || !src || !dst)
		goto out;
	for (size_t v = 0; v < cfg->nnodes; v++)
		names[v] = cfg->nodes[v].name;
	co.parts = parts;
	co.nparts = &in.nparts;
	co.maxparts = cfg->nnodes;
	/* A part counts when its state is in the database, not because a
	 * message said so. */
	if ((rv = DB(c, foreach_state, s->id, collect_state, &co)) != 0)
		goto out;
	for (size_t i = 0; i < cfg->nchans; i++) {
		src[i] = cfg->nodes[cfg->chans[i].src].name;
		dst[i] = cfg->nodes[cfg->chans[i].dst].name;
	}
	if ((rv = DB(c, foreach_channel, s->id, collect_channel,
	                                &co)) != 0)
		goto out;
	in.nodes = names;
	in.nnodes = cfg->nnodes;
	in.chan_src = src;
	in.chan_dst = dst;
	in.nchans = cfg->nchans;
	in.parts = parts;
	in.recorded = co.rec;
	in.nrecorded = co.n;
	audit_run(&in, ret);
	if (co.bad) {
		ret->consistent = 0;
		snprintf(
		    ret->reason, sizeof(ret->reason),
		    "the database holds rows for nodes not in the cluster");
	}
out:
	free(names);
	free(parts);
	free(src);
	free(dst);
	free(co.rec);
	return rv;
}

static void
maybe_complete(struct coord *c, struct snap *s)
{
	struct audit_report r;

	if (s->state != SNAP_WAITING || s->parts_done < s->nparts)
		return;
	coord_db(c);
	if (DB(c, finish, s->id, STORE_COMPLETE, NULL, c->wall) != 0)
		coord_write_failed(c, "cannot store the snapshot's end");
	if (audit_snap(c, s, &r) != 0) {
		log_err("snapshot %s: cannot audit: %s", s->id,
		        DB_ERR(c));
		r.consistent = 0;
		snprintf(r.reason, sizeof(r.reason), "audit failed: %s",
		         DB_ERR(c));
	}
	if (DB(c, put_audit, s->id, r.consistent,
	       r.consistent ? NULL : r.reason) != 0)
		coord_write_failed(c, "cannot store the audit verdict");
	s->state = SNAP_DONE;
	s->ended_ms = c->now;
	s->ended_gen = c->batch_gen; /* Wait hears of it once committed */
	snap_ended(c, s);
	sched_tell_outcome(c, s, 1, NULL, r.consistent,
	                   r.consistent ? NULL : r.reason);
	if (r.consistent)
		log_info("snapshot %s: complete, audit consistent", s->id);
	else
		log_warnx("snapshot %s: complete, audit INCONSISTENT: %s",
		          s->id, r.reason);
}

void
asm_own_part(struct coord *c, struct snap *s)
{
	s->parts[c->self].done = 1;
	s->parts_done++;
	maybe_complete(c, s);
}

static void
finish_part(struct coord *c, struct snap *s, size_t from)
{
	struct incoming_part *ip = &s->parts[from];

	for (size_t i = 0; i < ip->nchans; i++) {
		const struct part_chan *pc = &ip->chans[i];
		struct store_channel sc = {
		    .src = c->cfg->nodes[pc->src].name,
		    .dst = c->cfg->nodes[from].name,
		    .m = pc->m,
		    .n = pc->n,
		    .recorded = pc->seqs.count,
		    .first_seq = pc->seqs.first,
		    .last_seq = pc->seqs.last,
		    .consecutive = pc->seqs.consecutive,
		};
		if (DB(c, put_channel, s->id, &sc) != 0) {
			snap_give_up(c, s, "cannot store a part's channel");
			return;
		}
	}
	ip->done = 1;
	s->parts_done++;
	log_debug("snapshot %s: part of %s in", s->id,
	          c->cfg->nodes[from].name);
	maybe_complete(c, s);
}

/* The snapshot a part or chunk from another node belongs to, if this node
 * initiated it and it is still being assembled. */
static struct snap *
assembling(struct coord *c, const char *id, int *ret_rv)
{
	struct snap *s = snap_find(c, id);

	*ret_rv = 0;
	if (s == NULL && snap_initiator_of(c, id) == (long)c->self) {
		/* Ours, ended before a restart of this daemon ("daemon
		 * restarted"), deleted, or already let go of: late, not
		 * bad (a participant sends its part once it is complete,
		 * whatever happened here meanwhile). */
		log_debug("snapshot %s: a late part, dropped", id);
		return NULL;
	}
	if (s == NULL || s->initiator != c->self) {
		*ret_rv = E_NOENT;
		return NULL;
	}
	if (s->state == SNAP_ABORTED)
		return NULL; /* late: the verdict is in */
	return s;
}

static int
declared(const struct config *cfg, size_t src, size_t dst)
{
	for (size_t i = 0; i < cfg->nchans; i++)
		if (cfg->chans[i].src == src && cfg->chans[i].dst == dst)
			return 1;
	return 0;
}

static int
part_channels(struct coord *c, size_t from, const Cut__V1__PeerPart *p,
              struct incoming_part *ip, uint64_t *ret_total)
{
	uint64_t total = 0;
	size_t declared_in = 0;

	if ((ip->chans = calloc(p->n_channels + 1, sizeof(*ip->chans))) == NULL)
		return E_NOMEM;
	for (size_t i = 0; i < p->n_channels; i++) {
		int src = config_node_index(c->cfg, p->channels[i]->src);
		if (src < 0 || !declared(c->cfg, (size_t)src, from))
			return E_INVAL;
		for (size_t j = 0; j < ip->nchans; j++)
			if (ip->chans[j].src == (size_t)src)
				return E_INVAL;
		ip->chans[ip->nchans].src = (size_t)src;
		ip->chans[ip->nchans].m = p->channels[i]->m;
		ip->chans[ip->nchans].n = p->channels[i]->n;
		audit_seqs_init(&ip->chans[ip->nchans].seqs);
		ip->nchans++;
		if (total + p->channels[i]->count < total)
			return E_INVAL;
		total += p->channels[i]->count;
	}
	/* Every channel into the sender, no more and no fewer. */
	for (size_t k = 0; k < c->cfg->nchans; k++)
		declared_in += c->cfg->chans[k].dst == from;
	if (ip->nchans != declared_in)
		return E_INVAL;
	*ret_total = total;
	return 0;
}

int
asm_part(struct coord *c, size_t from, const Cut__V1__PeerPart *p)
{
	struct incoming_part *ip;
	struct snap *s;
	uint64_t total;
	int rv;

	if ((s = assembling(c, p->snapshot_id, &rv)) == NULL) {
		sched_forget_late(c, from, p->snapshot_id);
		return rv;
	}
	if (strcmp(p->node, c->cfg->nodes[from].name) != 0 ||
	    coord_ctype(p->content_type) == NULL ||
	    p->state.len > c->cfg->max_message)
		return E_INVAL;
	ip = &s->parts[from];
	if (ip->started)
		return E_DUP;
	if ((rv = part_channels(c, from, p, ip, &total)) != 0) {
		free(ip->chans);
		ip->chans = NULL;
		ip->nchans = 0;
		return rv;
	}
	ip->started = 1;
	coord_db(c);
	if (DB(c, put_state, s->id, p->node,
	                    coord_ctype(p->content_type), p->state.data,
	                    p->state.len, c->wall) != 0) {
		snap_give_up(c, s, "cannot store a part's state");
		return 0;
	}
	if (total == 0)
		finish_part(c, s, from);
	return 0;
}

int
asm_part_messages(struct coord *c, size_t from,
                  const Cut__V1__PeerPartMessages *pm)
{
	struct part_chan *pc = NULL;
	struct incoming_part *ip;
	struct snap *s;
	int src, rv;

	if ((s = assembling(c, pm->snapshot_id, &rv)) == NULL)
		return rv;
	ip = &s->parts[from];
	if (!ip->started || ip->done ||
	    (src = config_node_index(c->cfg, pm->src)) < 0)
		return E_INVAL;
	for (size_t i = 0; i < ip->nchans; i++)
		if (ip->chans[i].src == (size_t)src)
			pc = &ip->chans[i];
	if (pc == NULL)
		return E_INVAL;
	coord_db(c);
	for (size_t i = 0; i < pm->n_messages; i++) {
		const Cut__V1__ChannelMessage *m = pm->messages[i];
		/* A message that cannot be stored is left out, and the
		 * audit, which counts what was stored, says so. */
		if (coord_ctype(m->content_type) == NULL ||
		    DB(c, put_message, s->id, pm->src,
		                      c->cfg->nodes[from].name, m->seq,
		                      coord_ctype(m->content_type),
		                      m->payload.data, m->payload.len) != 0) {
			log_warnx("snapshot %s: message %llu of %s -> %s not "
			          "stored: %s",
			          s->id, (unsigned long long)m->seq, pm->src,
			          c->cfg->nodes[from].name,
			          DB_ERR(c));
			continue;
		}
		audit_seqs_add(&pc->seqs, m->seq);
	}
	if (pm->final)
		finish_part(c, s, from);
	return 0;
}
