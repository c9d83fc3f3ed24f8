/*
 * coord_restore.c - restoring a recorded snapshot into the running
 * cluster, every node at once.
 *
 * Only the snapshot's initiator holds it whole, so it runs the restore
 * (the restorer).  It is a two-phase commit over the reliable links,
 * followed by a change of generation that discards everything from
 * before:
 *
 *   1. The restorer checks what it can alone (the snapshot is complete
 *      and consistent, every node is reachable, its own application can
 *      restore), holds its own deliveries and sends every node a
 *      PeerRestorePrepare with the snapshot's channel counts and the next
 *      generation (its own plus one).
 *   2. Each node checks what only it can (its application registered a
 *      restore callback and is connected, it holds its own part complete,
 *      the counts match that part), holds its deliveries and votes.
 *   3. One no, or a node silent past the timeout: the restorer sends
 *      PeerRestoreAbort and everybody resumes where it was; nothing
 *      changed.  Every yes: the restorer applies the restore (below) and
 *      its batches carry the new generation.
 *   4. A prepared node applies the restore when it first sees a batch of
 *      the new generation, from any node (only the restorer's commit can
 *      have made one), and then takes that batch as the first of the new
 *      generation.  Batches of an older generation are dropped: their
 *      items are from before the restore.  It tells the restorer
 *      (PeerRestoreDone), which answers the control call once every node
 *      has.
 *
 * Applying, at each node: snapshots in progress are aborted; both links
 * with every peer start afresh (numbering from 1, nothing unacknowledged,
 * nothing held), so nothing queued before the restore is delivered after
 * it; each outgoing channel's numbering resumes at the snapshot's n (what
 * the sender had sent when it recorded) and each incoming one at m (what
 * the receiver had taken); the application's down stream is emptied and
 * gets AppRestore (the recorded state) first, then the channel's recorded
 * messages m+1 .. n, which the node's own part holds, in order, before
 * anything new; the generation is stored (the restores table) so that a
 * daemon restarted later speaks it.
 *
 *   restorer:  IDLE --coord_restore()--> VOTING --all yes--> CONFIRMING
 *              VOTING --a no, or the timeout--> IDLE (aborted everywhere)
 *              CONFIRMING --every node done, or the timeout--> IDLE
 *   other:     IDLE --prepare, can--> PREPARED (votes yes)
 *              IDLE --prepare, cannot--> IDLE (votes no with the reason)
 *              PREPARED --a batch of the new generation--> IDLE, applied
 *              PREPARED --abort--> IDLE
 *              PREPARED --3 x timeout without news--> IDLE; the prepared
 *                  restore is kept, and a batch of its generation still
 *                  applies it (the restorer decided; this node was late)
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "cutproto.h"
#include "log.h"

/* How long a prepared node that resumed keeps the restore, should its
 * decision come late. */
#define KEEP_PREPARED_MS 60000

int
restore_init(struct coord *c, struct errinfo *e)
{
	struct coord_restore *rs = &c->rs;
	int rv;

	if ((rv = c->st.ops->restore_generation(c->st.db, &rs->gen)) != 0)
		return err_set(e, rv, "cannot read the restore generation: %s",
		               DB_ERR(c));
	rs->voted = calloc(c->cfg->nnodes, 1);
	rs->done = calloc(c->cfg->nnodes, 1);
	if (rs->voted == NULL || rs->done == NULL)
		return err_set(e, E_NOMEM, "out of memory");
	return 0;
}

void
restore_fini(struct coord *c)
{
	free(c->rs.chans);
	free(c->rs.voted);
	free(c->rs.done);
	free(c->rs.app_item);
}

static void
forget_prepared(struct coord_restore *rs)
{
	free(rs->chans);
	rs->chans = NULL;
	rs->nchans = 0;
}

/* ---- Messages ---- */

static void
push_vote(struct coord *c, size_t to, uint64_t gen, int ok, const char *why)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRestoreVote v = CUT__V1__PEER_RESTORE_VOTE__INIT;

	v.seq = peer_next_seq(c, to);
	v.generation = gen;
	v.ok = ok != 0;
	v.reason = ok ? NULL : (char *)why;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_VOTE;
	item.restore_vote = &v;
	if (peer_push_item(c, to, &item) != 0)
		log_warnx("restore: cannot answer %s: its link is full",
		          c->cfg->nodes[to].name);
}

static void
push_abort(struct coord *c, const char *why)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRestoreAbort a = CUT__V1__PEER_RESTORE_ABORT__INIT;

	a.generation = c->rs.pgen;
	a.reason = (char *)why;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_ABORT;
	item.restore_abort = &a;
	/* A node not told resumes at its own timeout. */
	peer_push_all(c, &item, &a.seq, "the restore is given up");
}

/* 1 when every node's flag is set. */
static int
all_set(const struct coord *c, const uint8_t *flag)
{
	for (size_t v = 0; v < c->cfg->nnodes; v++)
		if (!flag[v])
			return 0;
	return 1;
}

/* ---- Loading what the snapshot recorded ---- */

struct chan_load {
	struct coord *c;
	struct rchan *v;
	size_t n, cap;
	int bad;
};

static int
load_chan(const struct store_channel *ch, void *arg)
{
	struct chan_load *l = arg;
	int src = config_node_index(l->c->cfg, ch->src),
	    dst = config_node_index(l->c->cfg, ch->dst);

	if (src < 0 || dst < 0) {
		l->bad = 1;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct rchan *v = realloc(l->v, cap * sizeof(*v));
		if (v == NULL)
			return E_NOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct rchan){(size_t)src, (size_t)dst, ch->m, ch->n};
	return 0;
}

/* The channels of snapshot id as this node's database holds them. */
static int
load_channels(struct coord *c, const char *id, struct chan_load *l)
{
	memset(l, 0, sizeof(*l));
	l->c = c;
	return c->st.ops->foreach_channel(c->st.db, id, load_chan, l);
}

static const struct rchan *
find_chan(const struct coord_restore *rs, size_t src, size_t dst)
{
	for (size_t i = 0; i < rs->nchans; i++)
		if (rs->chans[i].src == src && rs->chans[i].dst == dst)
			return &rs->chans[i];
	return NULL;
}

/* Writes to why the names of the nodes whose flag is 0, comma-separated. */
static void
missing(const struct coord *c, const uint8_t *flag, char *why, size_t size)
{
	size_t n = 0;

	why[0] = '\0';
	for (size_t v = 0; v < c->cfg->nnodes && n + 1 < size; v++) {
		int k;
		if (flag[v])
			continue;
		k = snprintf(why + n, size - n, "%s%s", n ? ", " : "",
		             c->cfg->nodes[v].name);
		if (k < 0 || (size_t)k >= size - n)
			break;
		n += (size_t)k;
	}
}

static int
sum_state(const char *node, const char *ctype, const void *state, size_t len,
          void *arg)
{
	(void)node;
	(void)ctype;
	(void)state;
	*(uint64_t *)arg += len;
	return 0;
}

static int
sum_message(uint64_t seq, const char *ctype, const void *payload, size_t len,
            void *arg)
{
	(void)seq;
	(void)ctype;
	(void)payload;
	*(uint64_t *)arg += len;
	return 0;
}

/* Why this node cannot take part in restoring id (chans as prepared), in
 * why, or 0 when it can. */
static int
cannot(struct coord *c, const char *id, char *why, size_t size)
{
	struct store_snapshot row;
	struct chan_load own;
	int rv;

	if (!coord_app_connected(c))
		return snprintf(why, size, "%s: no application connected",
		                c->name) > 0;
	if (!c->rs.restorable)
		return snprintf(why, size,
		                "%s: its application registered no restore "
		                "callback",
		                c->name) > 0;
	if (c->degraded[0] != '\0')
		return snprintf(why, size, "%s: storage degraded: %s",
		                c->name, c->degraded) > 0;
	if ((rv = c->st.ops->get(c->st.db, id, &row)) != 0)
		return snprintf(why, size, "%s: does not hold %s: %s", c->name,
		                id, rv == E_NOENT ? "no such snapshot"
		                                  : DB_ERR(c)) > 0;
	/* A participant's status is the initiator's outcome once heard:
	 * its own part's end is then in part_status (the initiator can
	 * complete with a part whose batch the participant lost, and the
	 * participant then holds no state to restore). */
	if ((row.is_initiator || row.part_status == STORE_IN_PROGRESS
	         ? row.status
	         : row.part_status) != STORE_COMPLETE)
		return snprintf(why, size, "%s: its part of %s is not complete",
		                c->name, id) > 0;
	if ((rv = load_channels(c, id, &own)) != 0) {
		free(own.v);
		return snprintf(why, size, "%s: cannot read its part: %s",
		                c->name, DB_ERR(c)) > 0;
	}
	for (size_t i = 0; i < own.n && !own.bad; i++) {
		const struct rchan *r;
		if (own.v[i].dst != c->self)
			continue;
		r = find_chan(&c->rs, own.v[i].src, c->self);
		if (r == NULL || r->m != own.v[i].m || r->n != own.v[i].n)
			own.bad = 1;
	}
	free(own.v);
	if (own.bad)
		return snprintf(why, size,
		                "%s: its part of %s does not match the "
		                "initiator's",
		                c->name, id) > 0;
	return 0;
}

/* ---- Applying ---- */

/* What applying needs from the database, read before anything changes:
 * this node's recorded state and the recorded messages of its incoming
 * channels, copied. */
struct rmsg {
	size_t src;
	uint64_t seq;
	char *ctype; /* NULL: none */
	uint8_t *data;
	size_t len;
};

struct loaded {
	struct coord *c;
	const char *node;
	char ctype[STORE_CTYPE_MAX + 1];
	uint8_t *state;
	size_t len;
	int found;
	size_t src; /* the channel being read */
	struct rmsg *v;
	size_t n, cap;
	uint64_t bytes;
};

static void
loaded_free(struct loaded *l)
{
	free(l->state);
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].ctype);
		free(l->v[i].data);
	}
	free(l->v);
}

static int
load_state(const char *node, const char *ctype, const void *state, size_t len,
           void *arg)
{
	struct loaded *l = arg;

	if (strcmp(node, l->node) != 0 || l->found)
		return 0;
	if ((l->state = malloc(len ? len : 1)) == NULL)
		return E_NOMEM;
	memcpy(l->state, state, len);
	l->len = len;
	snprintf(l->ctype, sizeof(l->ctype), "%s", ctype ? ctype : "");
	l->found = 1;
	return 0;
}

static int
load_message(uint64_t seq, const char *ctype, const void *payload, size_t len,
             void *arg)
{
	struct loaded *l = arg;
	struct rmsg *m;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct rmsg *v = realloc(l->v, cap * sizeof(*v));
		if (v == NULL)
			return E_NOMEM;
		l->v = v;
		l->cap = cap;
	}
	m = &l->v[l->n];
	memset(m, 0, sizeof(*m));
	m->src = l->src;
	m->seq = seq;
	m->len = len;
	if ((ctype != NULL && (m->ctype = strdup(ctype)) == NULL) ||
	    (m->data = malloc(len ? len : 1)) == NULL) {
		free(m->ctype);
		return E_NOMEM;
	}
	memcpy(m->data, payload, len);
	l->n++;
	l->bytes += len;
	return 0;
}

/* Reads what applying the prepared restore needs; 0, or -1 (logged)
 * with nothing changed. */
static int
load(struct coord *c, struct loaded *l)
{
	struct coord_restore *rs = &c->rs;
	int rv;

	memset(l, 0, sizeof(*l));
	l->c = c;
	l->node = c->name;
	rv = c->st.ops->foreach_state(c->st.db, rs->id, load_state, l);
	if (rv != 0 || !l->found) {
		log_err("restore of %s: cannot read this node's state: %s",
		        rs->id, rv != 0 ? DB_ERR(c) : "none recorded");
		return -1;
	}
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		const struct rchan *r = find_chan(rs, v, c->self);
		size_t first = l->n;
		if (v == c->self || c->peers[v].in_chan < 0)
			continue;
		l->src = v;
		rv = c->st.ops->foreach_message(c->st.db, rs->id,
		                                c->cfg->nodes[v].name, c->name,
		                                load_message, l);
		if (rv != 0) {
			log_err("restore of %s: cannot read the channel from "
			        "%s: %s",
			        rs->id, c->cfg->nodes[v].name, DB_ERR(c));
			return -1;
		}
		/* Exactly m+1 .. n, in order, or the replay would leave a
		 * gap the channel cannot take. */
		for (size_t i = first; i < l->n; i++)
			if (r == NULL || l->v[i].seq != r->m + 1 + (i - first)) {
				log_err("restore of %s: the channel from %s "
				        "does not hold m+1 .. n",
				        rs->id, c->cfg->nodes[v].name);
				return -1;
			}
		if (r != NULL && (r->m > r->n || l->n - first != r->n - r->m)) {
			log_err("restore of %s: the channel from %s holds %zu "
			        "recorded messages, not %" PRIu64,
			        rs->id, c->cfg->nodes[v].name, l->n - first,
			        r->n - r->m);
			return -1;
		}
	}
	return 0;
}

/* Packs the AppRestore for the application into *ret (malloc'd): its
 * state and where each of its channels stands. */
static int
pack_app_restore(struct coord *c, const struct loaded *l, uint8_t **ret,
                 size_t *ret_len)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppRestore r = CUT__V1__APP_RESTORE__INIT;
	Cut__V1__AppRestoreChannel ch[CONFIG_MAX_NODES],
	    *chp[CONFIG_MAX_NODES];
	size_t n = 0;

	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		const struct peer *p = &c->peers[v];
		const struct rchan *o, *i;
		if (v == c->self || (p->out_chan < 0 && p->in_chan < 0))
			continue;
		cut__v1__app_restore_channel__init(&ch[n]);
		ch[n].node = c->cfg->nodes[v].name;
		o = find_chan(&c->rs, c->self, v);
		i = find_chan(&c->rs, v, c->self);
		ch[n].has_out_sent = p->out_chan >= 0;
		ch[n].out_sent = o != NULL ? o->n : 0;
		ch[n].has_in_taken = p->in_chan >= 0;
		ch[n].in_taken = i != NULL ? i->m : 0;
		chp[n] = &ch[n];
		n++;
	}
	r.snapshot_id = c->rs.id;
	r.content_type = l->ctype[0] ? (char *)l->ctype : NULL;
	r.state.data = l->state;
	r.state.len = l->len;
	r.generation = c->rs.pgen;
	r.channels = chp;
	r.n_channels = n;
	it.item_case = CUT__V1__APP_ITEM__ITEM_RESTORE;
	it.restore = &r;
	*ret_len = cut__v1__app_item__get_packed_size(&it);
	if ((*ret = malloc(*ret_len)) == NULL)
		return E_NOMEM;
	cut__v1__app_item__pack(&it, *ret);
	return 0;
}

/* Writes the restores row of what was applied or adopted here (again,
 * after its batch was lost). */
static void
put_row(struct coord *c)
{
	struct coord_restore *rs = &c->rs;

	coord_db(c);
	if (DB(c, restore_put, rs->row_gen, rs->row_id,
	       c->cfg->nodes[rs->row_by].name, rs->row_ms,
	       rs->row_replayed) != 0)
		coord_write_failed(c, "cannot store the restore");
}

void
restore_rewrite(struct coord *c)
{
	if (c->rs.row_unsaved)
		put_row(c);
}

void
restore_committed(struct coord *c)
{
	c->rs.row_unsaved = 0;
}

static void
note_row(struct coord *c, const char *id, size_t by, uint64_t replayed)
{
	struct coord_restore *rs = &c->rs;

	rs->row_gen = rs->gen;
	snprintf(rs->row_id, sizeof(rs->row_id), "%s", id);
	rs->row_by = by;
	rs->row_ms = c->wall;
	rs->row_replayed = replayed;
	rs->row_unsaved = 1;
	put_row(c);
}

/* Applies the prepared restore here.  Everything it needs is read first:
 * if that fails, nothing has changed and it returns -1 (logged).
 * Otherwise returns the messages queued for replay. */
static int64_t
apply(struct coord *c)
{
	struct coord_restore *rs = &c->rs;
	char reason[ENGINE_ID_MAX + 64];
	struct loaded l;
	uint8_t *item;
	size_t item_len;

	if (load(c, &l) != 0 ||
	    pack_app_restore(c, &l, &item, &item_len) != 0) {
		loaded_free(&l);
		return -1;
	}
	/* From here on the restore happens. */
	snprintf(reason, sizeof(reason), "the cluster is restored to %s",
	         rs->id);
	snap_abort_all(c, reason);
	app_restore_reset(c);
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		const struct rchan *o, *i;
		if (v == c->self)
			continue;
		o = find_chan(rs, c->self, v);
		i = find_chan(rs, v, c->self);
		if (peer_restore_reset(c, v, o ? o->n : 0, i ? i->m : 0) != 0)
			log_err("restore of %s: cannot reset the links with %s",
			        rs->id, c->cfg->nodes[v].name);
	}
	free(rs->app_item);
	rs->app_item = item;
	rs->app_item_len = item_len;
	rs->app_due = rs->app_wait = 1;
	/* The recorded messages, in order, ahead of anything new. */
	for (size_t i = 0; i < l.n; i++) {
		int rv = snap_data(c, l.v[i].src, l.v[i].seq,
		                   coord_ctype(l.v[i].ctype), l.v[i].data,
		                   l.v[i].len);
		if (rv != 0)
			log_err("restore of %s: cannot queue message %" PRIu64
			        " from %s again: %s",
			        rs->id, l.v[i].seq,
			        c->cfg->nodes[l.v[i].src].name, err_str(rv));
	}
	rs->gen = rs->pgen;
	rs->adopted = 0;
	rs->paused = 0;
	if (rs->restorer != c->self)
		rs->message_bytes = l.bytes;
	rs->applied_replayed = l.n;
	rs->done_due = rs->restorer != c->self;
	rs->done_to = rs->restorer;
	note_row(c, rs->id, rs->restorer, l.n);
	log_notice("restored %s (generation %" PRIu64 "): state given to the "
	           "application, %zu in-flight messages queued",
	           rs->id, rs->gen, l.n);
	loaded_free(&l);
	return (int64_t)l.n;
}

static void
finish(struct coord *c, int result, const char *fmt, ...)
{
	struct coord_restore *rs = &c->rs;
	va_list ap;

	rs->result = result;
	rs->why[0] = '\0';
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(rs->why, sizeof(rs->why), fmt, ap);
		va_end(ap);
	}
	rs->phase = RS_IDLE;
	rs->paused = 0;
	forget_prepared(rs);
	if (result == 1)
		log_notice("restore of %s done on every node", rs->id);
	else
		log_warnx("restore of %s: %s", rs->id, rs->why);
}

/* The restorer gives up before anything changed. */
static void
give_up(struct coord *c, int err, const char *why)
{
	push_abort(c, why);
	finish(c, err, "%s", why);
}

static void
commit(struct coord *c)
{
	struct coord_restore *rs = &c->rs;
	int64_t replayed = apply(c);

	if (replayed < 0) {
		/* Nothing changed here, and nobody has heard the new
		 * generation: everybody resumes. */
		char why[200];
		snprintf(why, sizeof(why),
		         "%s could not apply the restore: it cannot read the "
		         "snapshot; see its log",
		         c->name);
		give_up(c, E_IO, why);
		return;
	}
	rs->replayed = (uint64_t)replayed;
	memset(rs->done, 0, c->cfg->nnodes);
	rs->failed_why[0] = '\0';
	rs->phase = RS_CONFIRMING;
	rs->deadline = c->now + rs->timeout_ms;
	/* Done here once this node's application took it (AppRestored). */
}

/* ---- The restorer ---- */

int
coord_restore(struct coord *c, const char *id, uint32_t timeout_ms,
              struct errinfo *e)
{
	struct coord_restore *rs = &c->rs;
	struct store_snapshot row;
	struct chan_load l;
	char why[400];
	int rv;

	if (rs->phase != RS_IDLE)
		return err_set(e, E_STATE, "a restore of %s is running",
		               rs->id);
	if (rs->chans != NULL && rs->restorer != c->self)
		return err_set(e, E_STATE,
		               "a restore of %s by %s was prepared here and "
		               "never decided; it is kept until %" PRId64
		               " s from now, in case it was",
		               rs->id, c->cfg->nodes[rs->restorer].name,
		               (rs->kept_until - c->now + 999) / 1000);
	if (!engine_id_valid(id))
		return err_set(e, E_INVAL, "not a snapshot id");
	if (snap_initiator_of(c, id) < 0)
		return err_set(e, E_NOENT, "no such snapshot");
	if (snap_initiator_of(c, id) != (long)c->self) {
		long at = snap_initiator_of(c, id);
		return err_set(e, E_STATE,
		               "%s is restored by its initiator, which holds "
		               "it whole: run the restore at %s",
		               id, at >= 0 ? c->cfg->nodes[at].name : "?");
	}
	/* The store's failures say "storage: " and SQLite's words, as every
	 * control call that meets them does (control.c's fail_store()). */
	if ((rv = c->st.ops->get(c->st.db, id, &row)) == E_NOENT)
		return err_set(e, rv, "no such snapshot");
	if (rv != 0)
		return err_set(e, rv, "storage: %.200s", DB_ERR(c));
	if (row.status != STORE_COMPLETE)
		return err_set(e, E_STATE, "%s is not complete: only a "
		                           "complete, consistent snapshot "
		                           "can be restored",
		               id);
	if (row.consistent != 1)
		return err_set(e, E_STATE,
		               "%s is not consistent by its audit (%s): it "
		               "cannot be restored",
		               id, row.consistent == 0 ? row.audit_reason
		                                       : "not audited");
	if (timeout_ms == 0)
		timeout_ms = c->cfg->deadline_ms;
	for (size_t v = 0; v < c->cfg->nnodes; v++)
		if (v != c->self && !coord_peer_alive(c, v))
			return err_set(e, E_UNAVAIL,
			               "%s is not reachable: a restore needs "
			               "every node",
			               c->cfg->nodes[v].name);
	if ((rv = load_channels(c, id, &l)) != 0 || l.bad ||
	    l.n != c->cfg->nchans) {
		free(l.v);
		return err_set(e, rv != 0 ? rv : E_STATE,
		               "%scannot read the channels of %s: %s",
		               rv != 0 ? "storage: " : "", id,
		               rv != 0 ? DB_ERR(c)
		                       : "they do not match the cluster file");
	}
	forget_prepared(rs);
	rs->chans = l.v;
	rs->nchans = l.n;
	if (cannot(c, id, why, sizeof(why))) {
		forget_prepared(rs);
		return err_set(e, E_STATE, "%s", why);
	}
	rs->state_bytes = rs->message_bytes = 0;
	rv = c->st.ops->foreach_state(c->st.db, id, sum_state,
	                              &rs->state_bytes);
	for (size_t i = 0; i < l.n && rv == 0; i++)
		rv = c->st.ops->foreach_message(
		    c->st.db, id, c->cfg->nodes[l.v[i].src].name,
		    c->cfg->nodes[l.v[i].dst].name, sum_message,
		    &rs->message_bytes);
	if (rv != 0) {
		forget_prepared(rs);
		return err_set(e, rv, "storage: cannot read %s: %s", id,
		               DB_ERR(c));
	}
	snprintf(rs->id, sizeof(rs->id), "%s", id);
	rs->pgen = rs->gen + 1;
	rs->restorer = c->self;
	rs->end_due = 1;
	rs->timeout_ms = timeout_ms;
	rs->deadline = c->now + timeout_ms;
	rs->result = 0;
	rs->why[0] = '\0';
	rs->replayed = 0;
	memset(rs->voted, 0, c->cfg->nnodes);
	rs->voted[c->self] = 1;
	rs->phase = RS_VOTING;
	rs->paused = 1;
	{
		Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
		Cut__V1__PeerRestorePrepare p =
		    CUT__V1__PEER_RESTORE_PREPARE__INIT;
		Cut__V1__RestoreChannel *chp =
		    calloc(l.n ? l.n : 1, sizeof(*chp));
		Cut__V1__RestoreChannel **chpp =
		    calloc(l.n ? l.n : 1, sizeof(*chpp));

		if (chp == NULL || chpp == NULL) {
			free(chp);
			free(chpp);
			finish(c, E_NOMEM, "out of memory");
			return err_set(e, E_NOMEM, "out of memory");
		}
		for (size_t i = 0; i < l.n; i++) {
			cut__v1__restore_channel__init(&chp[i]);
			chp[i].src = c->cfg->nodes[l.v[i].src].name;
			chp[i].dst = c->cfg->nodes[l.v[i].dst].name;
			chp[i].m = l.v[i].m;
			chp[i].n = l.v[i].n;
			chpp[i] = &chp[i];
		}
		p.generation = rs->pgen;
		p.snapshot_id = rs->id;
		p.timeout_ms = timeout_ms;
		p.channels = chpp;
		p.n_channels = l.n;
		item.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_PREPARE;
		item.restore_prepare = &p;
		if (peer_push_all(c, &item, &p.seq, "to prepare the "
		                                    "restore") != 0) {
			rv = E_FULL;
			snprintf(why, sizeof(why),
			         "a link to another node is full; try again");
		}
		free(chp);
		free(chpp);
	}
	if (rv != 0) {
		give_up(c, E_FULL, why);
		return err_set(e, E_FULL, "%s", why);
	}
	log_notice("restore of %s (generation %" PRIu64 "): asking every "
	           "node",
	           id, rs->pgen);
	if (c->cfg->nnodes == 1)
		commit(c);
	return 0;
}

int
restore_vote(struct coord *c, size_t from, const Cut__V1__PeerRestoreVote *m)
{
	struct coord_restore *rs = &c->rs;

	if (rs->phase != RS_VOTING || m->generation != rs->pgen)
		return 0; /* late: the restore was given up already */
	if (!m->ok) {
		char why[400];
		snprintf(why, sizeof(why), "%.390s",
		         m->reason && m->reason[0] ? m->reason
		                                   : "a node refused");
		give_up(c, E_STATE, why);
		return 0;
	}
	rs->voted[from] = 1;
	if (all_set(c, rs->voted))
		commit(c);
	return 0;
}

/* Node `node` applied the restore and its application took it (failed:
 * why not, or ""). */
static void
confirmed(struct coord *c, size_t node, const char *failed)
{
	struct coord_restore *rs = &c->rs;
	size_t n = strlen(rs->failed_why);

	rs->done[node] = 1;
	if (failed != NULL && failed[0] != '\0' && n + 3 < sizeof(rs->failed_why))
		snprintf(rs->failed_why + n, sizeof(rs->failed_why) - n, "%s%s",
		         n ? "; " : "", failed);
	if (!all_set(c, rs->done))
		return;
	if (rs->failed_why[0] != '\0')
		finish(c, E_STATE,
		       "restored on every node, but not every application "
		       "took its state: %s",
		       rs->failed_why);
	else
		finish(c, 1, NULL);
}

int
restore_done(struct coord *c, size_t from, const Cut__V1__PeerRestoreDone *m)
{
	struct coord_restore *rs = &c->rs;

	if (rs->phase != RS_CONFIRMING || m->generation != rs->gen)
		return 0;
	rs->replayed += m->replayed;
	confirmed(c, from, m->failed);
	return 0;
}

/* ---- Every other node ---- */

int
restore_prepare(struct coord *c, size_t from,
                const Cut__V1__PeerRestorePrepare *m)
{
	struct coord_restore *rs = &c->rs;
	struct rchan *v;
	char why[400];

	if (!engine_id_valid(m->snapshot_id) ||
	    snap_initiator_of(c, m->snapshot_id) != (long)from ||
	    m->timeout_ms < 100 || m->timeout_ms > 3600000 ||
	    m->n_channels > CONFIG_MAX_NODES * CONFIG_MAX_NODES)
		return E_INVAL;
	if (rs->phase != RS_IDLE) {
		snprintf(why, sizeof(why), "%s: a restore of %s is running "
		                           "there",
		         c->name, rs->id);
		push_vote(c, from, m->generation, 0, why);
		return 0;
	}
	if (m->generation != rs->gen + 1) {
		snprintf(why, sizeof(why),
		         "%s: at restore generation %" PRIu64
		         ", not %" PRIu64,
		         c->name, rs->gen, m->generation - 1);
		push_vote(c, from, m->generation, 0, why);
		return 0;
	}
	if ((v = calloc(m->n_channels ? m->n_channels : 1, sizeof(*v))) ==
	    NULL)
		return E_NOMEM;
	for (size_t i = 0; i < m->n_channels; i++) {
		int src = config_node_index(c->cfg, m->channels[i]->src),
		    dst = config_node_index(c->cfg, m->channels[i]->dst);
		if (src < 0 || dst < 0 ||
		    m->channels[i]->m > m->channels[i]->n) {
			free(v);
			return E_INVAL;
		}
		v[i] = (struct rchan){(size_t)src, (size_t)dst,
		                      m->channels[i]->m, m->channels[i]->n};
	}
	forget_prepared(rs);
	rs->chans = v;
	rs->nchans = m->n_channels;
	if (cannot(c, m->snapshot_id, why, sizeof(why))) {
		forget_prepared(rs);
		push_vote(c, from, m->generation, 0, why);
		log_warnx("restore of %s refused: %s", m->snapshot_id, why);
		return 0;
	}
	snprintf(rs->id, sizeof(rs->id), "%s", m->snapshot_id);
	rs->pgen = m->generation;
	rs->restorer = from;
	rs->timeout_ms = m->timeout_ms;
	rs->deadline = c->now + 3 * (int64_t)m->timeout_ms;
	rs->phase = RS_PREPARED;
	rs->paused = 1;
	push_vote(c, from, m->generation, 1, NULL);
	log_info("restore of %s (generation %" PRIu64 ") prepared for %s",
	         rs->id, rs->pgen, c->cfg->nodes[from].name);
	return 0;
}

int
restore_abort_msg(struct coord *c, size_t from,
                  const Cut__V1__PeerRestoreAbort *m)
{
	struct coord_restore *rs = &c->rs;

	if (rs->chans == NULL || rs->restorer != from ||
	    m->generation != rs->pgen || rs->phase == RS_VOTING)
		return 0;
	log_info("restore of %s given up by %s: %s", rs->id,
	         c->cfg->nodes[from].name, m->reason);
	rs->phase = RS_IDLE;
	rs->paused = 0;
	forget_prepared(rs);
	return 0;
}

/*
 * p speaks a newer generation that this node did not prepare: it missed a
 * restore (it crashed after voting yes, say).  Its application was not
 * restored, so its channels' numbering no longer matches the others';
 * but a node that refused the new generation would stay cut off for good,
 * unable even to take part in the next restore.  So it moves its links to
 * that generation (numbering from 1 again, its channel counts as they
 * are), records it as adopted (an empty snapshot_id in restores), says so
 * loudly, and takes the batch: the next restore brings it back in line.
 */
static int
adopt(struct coord *c, struct peer *p, uint64_t gen)
{
	struct coord_restore *rs = &c->rs;
	char why[200];

	if (rs->phase == RS_VOTING) {
		/* Our own restore lost a race with one decided elsewhere. */
		snprintf(why, sizeof(why),
		         "another restore took %s to generation %" PRIu64
		         " meanwhile",
		         c->cfg->nodes[p->node].name, gen);
		give_up(c, E_STATE, why);
	}
	log_err("%s is at restore generation %" PRIu64 ", which this node "
	        "(at %" PRIu64 ") did not take part in: its application was "
	        "not restored and its channels no longer match; restore "
	        "again to bring the cluster together",
	        c->cfg->nodes[p->node].name, gen, rs->gen);
	snap_abort_all(c, "this node missed a restore");
	for (size_t v = 0; v < c->cfg->nnodes; v++) {
		const struct peer *q = &c->peers[v];
		if (v == c->self)
			continue;
		if (peer_restore_reset(
		        c, v,
		        q->out_chan >= 0
		            ? engine_sent_count(c->eng, (size_t)q->out_chan)
		            : 0,
		        q->in_chan >= 0 ? engine_delivered_count(
		                              c->eng, (size_t)q->in_chan)
		                        : 0) != 0)
			return -1;
	}
	rs->gen = gen;
	rs->adopted = gen;
	rs->phase = RS_IDLE;
	rs->paused = 0;
	forget_prepared(rs);
	note_row(c, "", p->node, 0);
	return 0;
}

int
restore_batch(struct coord *c, struct peer *p, uint64_t gen)
{
	struct coord_restore *rs = &c->rs;
	if (gen == rs->gen)
		return 0;
	if (gen < rs->gen) {
		rs->old_batches++;
		return -1;
	}
	if (rs->chans == NULL || gen != rs->pgen || rs->restorer == c->self)
		return adopt(c, p, gen);
	/* Nothing changed if it fails: still prepared, and the next batch
	 * of the generation tries again. */
	if (apply(c) < 0)
		return -1;
	rs->phase = RS_IDLE;
	forget_prepared(rs);
	/* PeerRestoreDone goes once the application took it. */
	return 0;
}

/* ---- The application ---- */

void
restore_app_restorable(struct coord *c, int yes)
{
	c->rs.restorable = yes != 0;
}

void
restore_app_restored(struct coord *c, const Cut__V1__AppRestored *m)
{
	struct coord_restore *rs = &c->rs;
	char failed[300];

	if (!rs->app_wait || rs->app_due)
		return; /* not asked, or asked again on a new connection */
	rs->app_wait = 0;
	for (size_t i = 0; i < c->n_out; i++)
		c->peers[c->out_node[i]].credit_force = 1;
	failed[0] = '\0';
	if (m->has_failed && m->failed != 0) {
		snprintf(failed, sizeof(failed),
		         "%s: the application's restore callback failed (%" PRIu32
		         "%s%.200s)",
		         c->name, m->failed, m->reason ? ": " : "",
		         m->reason ? m->reason : "");
		log_err("restore of %s: %s", m->snapshot_id, failed);
	} else {
		log_info("restore of %s: the application took its state",
		         m->snapshot_id);
	}
	if (rs->phase == RS_CONFIRMING && rs->restorer == c->self) {
		confirmed(c, c->self, failed);
	} else if (rs->done_due) {
		Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
		Cut__V1__PeerRestoreDone d = CUT__V1__PEER_RESTORE_DONE__INIT;
		rs->done_due = 0;
		d.seq = peer_next_seq(c, rs->done_to);
		d.generation = rs->gen;
		d.replayed = rs->applied_replayed;
		d.failed = failed[0] ? failed : NULL;
		item.item_case = CUT__V1__PEER_ITEM__ITEM_RESTORE_DONE;
		item.restore_done = &d;
		if (peer_push_item(c, rs->done_to, &item) != 0)
			log_warnx("restore: cannot tell %s it is applied",
			          c->cfg->nodes[rs->done_to].name);
	}
}

int
restore_uses(const struct coord *c, const char *id)
{
	const struct coord_restore *rs = &c->rs;

	return (rs->phase != RS_IDLE || rs->chans != NULL) &&
	       strcmp(rs->id, id) == 0;
}

void
restore_stop(struct coord *c, const char *reason)
{
	struct coord_restore *rs = &c->rs;
	char why[300];

	snprintf(why, sizeof(why), "the restorer %s stopped (%.200s)",
	         c->name, reason);
	if (rs->phase == RS_VOTING)
		give_up(c, E_UNAVAIL, why);
	else if (rs->phase == RS_CONFIRMING)
		finish(c, E_UNAVAIL, "%s before every node confirmed", why);
}

/* ---- Time ---- */

void
restore_timers(struct coord *c)
{
	struct coord_restore *rs = &c->rs;
	char why[400];

	if (rs->phase == RS_IDLE && rs->chans != NULL &&
	    rs->restorer != c->self && c->now >= rs->kept_until) {
		log_warnx("restore of %s by %s: never decided; forgotten", rs->id,
		          c->cfg->nodes[rs->restorer].name);
		forget_prepared(rs);
		return;
	}
	if (rs->phase == RS_IDLE || c->now < rs->deadline)
		return;
	switch (rs->phase) {
	case RS_VOTING: {
		char who[300], all[400];
		missing(c, rs->voted, who, sizeof(who));
		snprintf(all, sizeof(all),
		         "%s did not answer within %" PRIu32 " ms", who,
		         rs->timeout_ms);
		give_up(c, E_TIMEDOUT, all);
		break;
	}
	case RS_CONFIRMING: {
		missing(c, rs->done, why, 300);
		finish(c, E_TIMEDOUT,
		       "restored here and decided for every node, but %s "
		       "did not confirm within %" PRIu32
		       " ms; it applies the restore when it next hears "
		       "from this node",
		       why, rs->timeout_ms);
		break;
	}
	case RS_PREPARED:
		/* The chans stay: a batch of the new generation still
		 * applies the restore. */
		log_warnx("restore of %s: no decision from %s within %" PRIu32
		          " ms; resuming",
		          rs->id, c->cfg->nodes[rs->restorer].name,
		          3 * rs->timeout_ms);
		rs->phase = RS_IDLE;
		rs->paused = 0;
		rs->kept_until = c->now + KEEP_PREPARED_MS;
		break;
	default:
		break;
	}
}

int
restore_next_timer(struct coord *c, int max)
{
	int64_t ms = max;

	if (c->rs.phase != RS_IDLE && c->rs.deadline - c->now < ms)
		ms = c->rs.deadline - c->now;
	else if (c->rs.phase == RS_IDLE && c->rs.chans != NULL &&
	         c->rs.restorer != c->self && c->rs.kept_until - c->now < ms)
		ms = c->rs.kept_until - c->now;
	return ms < 0 ? 0 : (int)ms;
}

void
coord_restore_view(const struct coord *c, struct coord_restore_view *ret)
{
	const struct coord_restore *rs = &c->rs;

	memset(ret, 0, sizeof(*ret));
	ret->generation = rs->gen;
	ret->running = rs->phase != RS_IDLE;
	ret->phase = rs->phase == RS_VOTING      ? "voting"
	             : rs->phase == RS_PREPARED   ? "prepared"
	             : rs->phase == RS_CONFIRMING ? "confirming"
	                                          : "idle";
	ret->id = rs->id;
	ret->result = rs->result;
	ret->why = rs->why;
	ret->nodes = (uint32_t)c->cfg->nnodes;
	ret->replayed = rs->replayed;
	ret->message_bytes = rs->message_bytes;
	ret->state_bytes = rs->state_bytes;
	ret->old_batches = rs->old_batches;
	ret->restorable = rs->restorable;
	ret->app_owed = rs->app_wait;
	ret->adopted = rs->adopted;
}
