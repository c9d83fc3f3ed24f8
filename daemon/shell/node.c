/*
 * node.c - what the daemon does with the engine's actions: state requests
 * into the down stream, markers onto links, recorded messages into the
 * store, parts to the initiator; and, at the initiator, assembly, audit
 * and deadlines.
 *
 * A snapshot's life at one daemon (struct snap):
 *
 *   RUNNING --part complete--> DONE (participant) or WAITING (initiator)
 *   WAITING --every part in--> DONE (audited)
 *   RUNNING, WAITING --deadline or Abort--> ABORTED
 *
 * Every write goes into the store's batch of the current loop turn, so a
 * part is persisted before the loop sends it on.
 *
 * Storage faults.  A batch that does not commit (a full disk, an I/O
 * error, a read-only file) is rolled back whole, so the database is as the
 * last good commit left it.  The rows it held cannot be told apart, so
 * node_storage_failed() aborts every snapshot it may have touched: those
 * in progress and those that ended in it, with "NODE: storage: <SQLite's
 * words>" (one that ended aborted in it keeps its reason).  Then, in a new
 * batch, node_storage_retry() writes those ends again (creating the rows
 * the lost batch had created), so that the database says what memory
 * says.  If that batch fails too, the daemon is degraded: memory holds
 * the ends not yet written (struct snap's unsaved, shown by Get, List and
 * Wait in place of the stale rows), Start is refused, markers of other
 * initiators' snapshots are answered with an abort ("storage degraded"),
 * and node_storage_retry() runs again every second until a batch
 * commits.  A snapshot's completion is told to Wait calls only once its
 * batch has committed, so "consistent" is never said of data that did not
 * reach the disk.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutd.h"
#include "cutproto.h"
#include "log.h"

/* Keep ended snapshots this long, for late markers and Wait calls. */
#define KEEP_ENDED_MS (10 * 60 * 1000)

/* The message being delivered, which RECORD_MESSAGE actions refer to. */
struct delivery {
	const char *content_type;
	const void *payload;
	size_t len;
};

static int perform(struct cutd *d, const struct delivery *dl);
static void store_deferred(struct cutd *d, struct snap *s);
static void abort_snap(struct cutd *d, struct snap *s, const char *reason);
static int refuse_degraded(struct cutd *d, struct snap *s);
static void give_up(struct cutd *d, struct snap *s, const char *reason,
                    int root_cause);

struct snap *
node_find(struct cutd *d, const char *id)
{
	for (struct snap *s = d->snaps; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static void
snap_free(struct snap *s)
{
	if (s == NULL)
		return;
	if (s->parts != NULL)
		for (size_t i = 0; i < s->nparts; i++)
			free(s->parts[i].chans);
	free(s->parts);
	free(s->in);
	free(s);
}

static struct snap *
snap_new(struct cutd *d, const char *id, size_t initiator, uint32_t timeout_ms)
{
	size_t n_in = d->n_in;
	struct snap *s = calloc(1, sizeof(*s));

	if (s == NULL || (s->in = calloc(n_in + 1, sizeof(*s->in))) == NULL) {
		free(s);
		return NULL;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->initiator = initiator;
	s->started_ms = cutd_now_ms();
	s->started_wall_ms = cutd_wall_ms();
	s->timeout_ms = timeout_ms;
	/* Participants give up a little before the initiator, so the
	 * initiator hears why. */
	s->deadline_ms = s->started_ms + (initiator == d->self
	                                      ? (int64_t)timeout_ms
	                                      : (int64_t)timeout_ms * 4 / 5);
	for (size_t i = 0; i < n_in; i++) {
		s->in[i].src = d->in_node[i];
		audit_seqs_init(&s->in[i].seqs);
	}
	if (initiator == d->self) {
		s->nparts = d->cfg->nnodes;
		if ((s->parts = calloc(s->nparts, sizeof(*s->parts))) == NULL) {
			snap_free(s);
			return NULL;
		}
	}
	s->next = d->snaps;
	d->snaps = s;
	return s;
}

static void
snap_unlink(struct cutd *d, struct snap *s)
{
	for (struct snap **p = &d->snaps; *p != NULL; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			return;
		}
}

int
node_start(struct cutd *d)
{
	struct config *cfg = d->cfg;
	size_t n_in = 0, n_out = 0;
	uint32_t aborted = 0;
	int rv;

	d->in_node = calloc(cfg->nchans + 1, sizeof(*d->in_node));
	d->out_node = calloc(cfg->nchans + 1, sizeof(*d->out_node));
	if (d->in_node == NULL || d->out_node == NULL)
		return E_NOMEM;
	for (size_t c = 0; c < cfg->nchans; c++) {
		const struct config_channel *ch = &cfg->chans[c];
		if (ch->dst == d->self) {
			d->peers[ch->src].in_chan = (long)n_in;
			d->in_node[n_in++] = ch->src;
		}
		if (ch->src == d->self) {
			d->peers[ch->dst].out_chan = (long)n_out;
			d->out_node[n_out++] = ch->dst;
		}
	}
	d->n_in = n_in;
	d->n_out = n_out;
	if ((rv = engine_new(ENGINE_COUNTED, n_in, n_out, &d->eng)) != 0 ||
	    (rv = engine_set_cut(d->eng, cfg->aligned
	                                     ? ENGINE_CUT_ALIGNED
	                                     : ENGINE_CUT_UNALIGNED)) != 0)
		return rv;
	/* Ids come from the store's counter (store_next_id()). */
	cutd_db(d);
	if ((rv = store_abort_unfinished(d->store, "daemon restarted",
	                                 cutd_wall_ms(), &aborted)) != 0) {
		log_err("cannot mark unfinished snapshots aborted: %s",
		        store_errmsg(d->store));
		return E_STORAGE;
	}
	if (aborted > 0)
		log_notice("marked %" PRIu32 " unfinished snapshots aborted: "
		           "daemon restarted",
		           aborted);
	return 0;
}

void
node_stop(struct cutd *d, const char *reason)
{
	struct snap *s;

	for (s = d->snaps; s != NULL; s = s->next)
		if (s->state == SNAP_RUNNING || s->state == SNAP_WAITING) {
			cutd_db(d);
			store_finish(d->store, s->id, STORE_ABORTED, reason,
			             cutd_wall_ms());
			s->state = SNAP_ABORTED;
			control_wake(d, s, cutd_now_ms());
		}
	while ((s = d->snaps) != NULL) {
		d->snaps = s->next;
		snap_free(s);
	}
	engine_free(d->eng);
	d->eng = NULL;
	free(d->in_node);
	free(d->out_node);
}

int
node_push_item(struct cutd *d, size_t node, const Cut__V1__PeerItem *item)
{
	size_t len = cut__v1__peer_item__get_packed_size(item);
	void *buf;

	/* Every message passes here: packed once, straight into the link's
	 * queue, with no allocation of its own. */
	if ((buf = peer_push_space(d, node, len)) == NULL)
		return E_FULL;
	cut__v1__peer_item__pack(item, buf);
	return 0;
}

static int
send_marker(struct cutd *d, size_t node, const struct snap *s, uint64_t count)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerMarker m = CUT__V1__PEER_MARKER__INIT;

	m.seq = peer_next_seq(d, node);
	m.snapshot_id = (char *)s->id;
	m.has_timeout_ms = 1;
	m.timeout_ms = s->timeout_ms;
	m.count = count;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_MARKER;
	item.marker = &m;
	return node_push_item(d, node, &item);
}

static int
send_abort(struct cutd *d, size_t node, const char *id, const char *reason,
           int root_cause)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerAbort a = CUT__V1__PEER_ABORT__INIT;

	a.seq = peer_next_seq(d, node);
	a.snapshot_id = (char *)id;
	a.reason = (char *)reason;
	a.has_root_cause = 1;
	a.root_cause = root_cause != 0;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_ABORT;
	item.abort = &a;
	return node_push_item(d, node, &item);
}

int
node_app_send(struct cutd *d, const char *to, const char *content_type,
              const void *payload, size_t len, uint64_t seq)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerData data = CUT__V1__PEER_DATA__INIT;
	int node = config_node_index(d->cfg, to);
	struct peer *p;
	size_t out;
	int rv;

	if (node < 0 || d->peers[node].out_chan < 0)
		return E_NOCHAN;
	p = &d->peers[node];
	out = (size_t)p->out_chan;
	/* libcut numbers its messages and sends again, after a reconnect,
	 * those it cannot know arrived: drop what the channel has. */
	if (seq != 0 && seq <= engine_sent_count(d->eng, out)) {
		p->dups++;
		return E_DUP;
	}
	if (seq != 0 && seq != engine_sent_count(d->eng, out) + 1)
		return E_GAP;
	/* What libcut sends again was within a window once: it goes. */
	if ((seq == 0 || seq > p->resend_upto) &&
	    !peer_window_open(d, (size_t)node, len)) {
		p->stalls++;
		return E_FULL;
	}
	data.seq = peer_next_seq(d, (size_t)node);
	data.content_type = (char *)content_type;
	data.payload.data = (uint8_t *)payload;
	data.payload.len = len;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
	item.data = &data;
	/* Count the send only once the link took it (it refuses when its
	 * window is full): the count is what the next marker carries. */
	data.app_seq = engine_sent_count(d->eng, out) + 1;
	if ((rv = node_push_item(d, (size_t)node, &item)) != 0)
		return rv;
	/* The link has it now; only memory can fail from here on, and the
	 * window's count then only lags. */
	if (peer_note_data(d, (size_t)node, &data, len) != 0)
		log_err("out of memory keeping a message until it is taken");
	return engine_sent(d->eng, out, NULL);
}

/* Aborts the snapshots in progress, whose counts a resume would change. */
static void
abort_running(struct cutd *d, const char *reason)
{
	for (struct snap *s = d->snaps; s != NULL; s = s->next)
		if (s->state == SNAP_RUNNING || s->state == SNAP_WAITING)
			abort_snap(d, s, reason);
}

int
node_resume_out(struct cutd *d, size_t node, uint64_t count)
{
	long out = d->peers[node].out_chan;

	if (out < 0 || count == engine_sent_count(d->eng, (size_t)out))
		return 0;
	abort_running(d, "channel numbering resumed after a restart");
	log_notice("channel to %s resumes after message %" PRIu64,
	           d->cfg->nodes[node].name, count);
	return engine_resume_out(d->eng, (size_t)out, count);
}

int
node_renumber(struct cutd *d, size_t node)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRenumber r = CUT__V1__PEER_RENUMBER__INIT;

	r.seq = peer_next_seq(d, node);
	item.item_case = CUT__V1__PEER_ITEM__ITEM_RENUMBER;
	item.renumber = &r;
	return node_push_item(d, node, &item);
}

int
node_resume_in(struct cutd *d, size_t node, uint64_t count)
{
	long in = d->peers[node].in_chan;

	d->peers[node].in_known = 1;
	if (in < 0 || count == engine_delivered_count(d->eng, (size_t)in))
		return 0;
	abort_running(d, "channel numbering resumed after a restart");
	log_notice("channel from %s resumes after message %" PRIu64,
	           d->cfg->nodes[node].name, count);
	return engine_resume_in(d->eng, (size_t)in, count);
}

int
node_initiate(struct cutd *d, uint32_t timeout_ms, char *ret_id)
{
	char id[ENGINE_ID_MAX + 1];
	struct snap *s;
	uint64_t k;
	int rv;

	if (d->degraded[0] != '\0')
		return E_STORAGE;
	/* The id and its row first: a snapshot that cannot be stored is
	 * refused before any marker leaves. */
	cutd_db(d);
	if (store_next_id(d->store, d->name, cutd_wall_ms(), d->next_snap + 1,
	                  &k) != 0) {
		log_err("cannot issue a snapshot id: %s",
		        store_errmsg(d->store));
		return E_STORAGE;
	}
	d->next_snap = k; /* even if the batch is lost: never issued twice */
	snprintf(id, sizeof(id), "%s:%" PRIu64, d->name, k);
	if (node_find(d, id) != NULL)
		return E_EXIST;
	if (store_snapshot_create(d->store, id, d->name, 1, cutd_wall_ms(),
	                          (uint32_t)d->cfg->nnodes) != 0) {
		log_err("snapshot %s: cannot store it: %s", id,
		        store_errmsg(d->store));
		return E_STORAGE;
	}
	s = snap_new(d, id, d->self,
	             timeout_ms ? timeout_ms : d->cfg->deadline_ms);
	if (s == NULL || (rv = engine_initiate(d->eng, id)) != 0) {
		rv = s == NULL ? E_NOMEM : rv;
		if (s != NULL) {
			snap_unlink(d, s);
			snap_free(s);
		}
		store_finish(d->store, id, STORE_ABORTED,
		             "could not be started", cutd_wall_ms());
		return rv;
	}
	log_info("snapshot %s: initiated", id);
	memcpy(ret_id, id, strlen(id) + 1);
	return perform(d, NULL);
}

int
node_state_reply(struct cutd *d, const char *id, const char *ctype,
                 const void *state, size_t len)
{
	struct snap *s = node_find(d, id);
	int rv;

	if (s == NULL || s->state != SNAP_RUNNING || s->state_recorded)
		return E_STATE;
	cutd_db(d);
	if (store_put_state(d->store, id, d->name, ctype, state, len,
	                    cutd_wall_ms()) != 0) {
		node_give_up(d, s, "cannot store the local state");
		return 0;
	}
	if (engine_cut(d->eng) == ENGINE_CUT_UNALIGNED) {
		/* m for each channel is what the application had taken. */
		uint64_t taken[CONFIG_MAX_NODES];
		for (size_t i = 0; i < d->n_in; i++)
			taken[i] = d->peers[d->in_node[i]].taken;
		rv = engine_state_recorded_taken(d->eng, id, taken);
	} else {
		rv = engine_state_recorded(d->eng, id);
	}
	if (rv != 0)
		return rv;
	s->state_recorded = 1;
	app_forget_request(d, id);
	if (engine_cut(d->eng) == ENGINE_CUT_UNALIGNED)
		store_deferred(d, s);
	return perform(d, NULL);
}

int
node_data(struct cutd *d, size_t from, uint64_t app_seq,
          const char *content_type, const void *payload, size_t len)
{
	struct delivery dl = {content_type, payload, len};
	long in = d->peers[from].in_chan;
	int rv;

	if (in < 0)
		return E_NOCHAN;
	/* After a restart on either side the sender sends again what our
	 * application had not taken when it last heard: what we have is
	 * dropped.  A daemon that restarted learns the numbering from the
	 * first message, or from its application's hello if that came
	 * first. */
	if (app_seq <= engine_delivered_count(d->eng, (size_t)in)) {
		d->peers[from].dups++;
		return 0;
	}
	if (!d->peers[from].in_known &&
	    engine_delivered_count(d->eng, (size_t)in) == 0 &&
	    (rv = node_resume_in(d, from, app_seq - 1)) != 0)
		return rv;
	d->peers[from].in_known = 1;
	/* The link delivers in order, so the sender's numbering must go on
	 * exactly where ours stands. */
	if (app_seq != engine_delivered_count(d->eng, (size_t)in) + 1)
		return E_INVAL;
	if ((rv = engine_delivered(d->eng, (size_t)in, app_seq)) != 0)
		return rv;
	if ((rv = perform(d, &dl)) != 0)
		return rv;
	return app_deliver(d, from, content_type, payload, len, app_seq);
}

/* The initiator's name is the id up to its last ':'. */
static int
initiator_of(struct cutd *d, const char *id)
{
	char name[CONFIG_NAME_MAX + 1];
	const char *colon = strrchr(id, ':');
	size_t len;

	if (colon == NULL || (len = (size_t)(colon - id)) == 0 ||
	    len > CONFIG_NAME_MAX)
		return -1;
	memcpy(name, id, len);
	name[len] = '\0';
	return config_node_index(d->cfg, name);
}

int
node_marker(struct cutd *d, size_t from, const char *id, uint64_t n,
            uint32_t timeout_ms)
{
	long in = d->peers[from].in_chan;
	struct snap *s;
	int init, created = 0, rv;

	if (in < 0)
		return E_NOCHAN;
	if (!engine_id_valid(id) || (init = initiator_of(d, id)) < 0)
		return E_INVAL;
	if ((s = node_find(d, id)) == NULL) {
		if ((size_t)init == d->self)
			return E_STATE; /* ours, but long forgotten */
		s = snap_new(d, id, (size_t)init,
		             timeout_ms ? timeout_ms : d->cfg->deadline_ms);
		if (s == NULL)
			return E_NOMEM;
		created = 1;
	}
	if ((rv = engine_marker(d->eng, (size_t)in, id, n)) != 0) {
		if (created) {
			snap_unlink(d, s);
			snap_free(s);
		}
		return rv;
	}
	if (created) {
		log_info("snapshot %s: first marker, from %s", id,
		         d->cfg->nodes[from].name);
		if (refuse_degraded(d, s))
			return 0;
		cutd_db(d);
		rv = store_snapshot_create(
		    d->store, id, d->cfg->nodes[init].name, 0, cutd_wall_ms(),
		    (uint32_t)d->cfg->nnodes);
		if (rv == E_EXIST) {
			/* Its initiator reused an id (a lost database and a
			 * clock set back): say so rather than stay silent. */
			char reason[400];
			snprintf(reason, sizeof(reason),
			         "%s: already holds an older snapshot %s",
			         d->name, id);
			give_up(d, s, reason, 1);
			return 0;
		}
		if (rv != 0) {
			node_give_up(d, s, "cannot store the snapshot");
			return 0;
		}
	}
	return perform(d, NULL);
}

/* Ends s as aborted with reason; the initiator tells every other node. */
static void
abort_snap(struct cutd *d, struct snap *s, const char *reason)
{
	enum engine_snap_state es;

	if (s->state == SNAP_ABORTED)
		return;
	if (engine_state(d->eng, s->id, &es) == 0 &&
	    (es == ENGINE_S_REQUESTED || es == ENGINE_S_RECORDED))
		engine_abort(d->eng, s->id);
	cutd_db(d);
	if (store_finish(d->store, s->id, STORE_ABORTED, reason,
	                 cutd_wall_ms()) == E_STATE)
		log_info("snapshot %s: its part here had already completed",
		         s->id);
	s->state = SNAP_ABORTED;
	s->ended_ms = cutd_now_ms();
	s->ended_gen = d->batch_gen;
	snprintf(s->why, sizeof(s->why), "%s", reason);
	app_forget_request(d, s->id);
	log_warnx("snapshot %s: aborted: %s", s->id, reason);
	if (s->initiator == d->self)
		for (size_t v = 0; v < d->cfg->nnodes; v++)
			if (v != d->self &&
			    send_abort(d, v, s->id, reason, 0) != 0)
				log_err("snapshot %s: cannot tell %s it was "
				        "aborted",
				        s->id, d->cfg->nodes[v].name);
	control_wake(d, s, cutd_now_ms());
}

/* Keeps a node's reason for the initiator's verdict.  A root cause (an
 * application that did not answer, a part that could not be stored)
 * explains the others (missing markers follow from it), so it goes
 * first. */
static void
add_reason(struct snap *s, const char *reason, int root_cause)
{
	char both[2 * sizeof(s->reasons) + 4];
	const char *first = reason, *second = s->reasons;

	if (s->reasons[0] == '\0')
		second = "";
	else if (!root_cause) {
		first = s->reasons;
		second = reason;
	}
	snprintf(both, sizeof(both), "%.399s%s%.399s", first,
	         second[0] != '\0' ? "; " : "", second);
	memcpy(s->reasons, both, sizeof(s->reasons) - 1);
	s->reasons[sizeof(s->reasons) - 1] = '\0';
}

int
node_abort_msg(struct cutd *d, size_t from, const char *id, const char *reason,
               int root_cause)
{
	struct snap *s = node_find(d, id);

	if (s == NULL)
		return 0; /* we never saw it: nothing to undo */
	if (s->initiator != d->self) {
		if (from != s->initiator)
			return E_INVAL;
		abort_snap(d, s, reason);
		return 0;
	}
	if (s->state == SNAP_RUNNING || s->state == SNAP_WAITING) {
		s->parts[from].reported = 1;
		add_reason(s, reason, root_cause);
	}
	return 0;
}

/* Why this node's part of s is not complete, in one sentence.  Returns 1
 * when this node is the cause (no state), 0 when it waits on others. */
static int
local_reason(struct cutd *d, const struct snap *s, char *buf, size_t len)
{
	size_t off;

	if (!s->state_recorded) {
		snprintf(
		    buf, len, "%s: %s", d->name,
		    !app_connected(d)
		        ? "no application connected to answer the state "
		          "request"
		        : "the application did not answer the state request");
		return 1;
	}
	off = (size_t)snprintf(buf, len, "%s: no marker on channel", d->name);
	for (size_t i = 0; i < d->n_in && off < len; i++)
		if (!s->in[i].done)
			off += (size_t)snprintf(
			    buf + off, len - off, " %s -> %s",
			    d->cfg->nodes[s->in[i].src].name, d->name);
	return 0;
}

/* The nodes that sent neither their part nor a reason: down, cut off or
 * stuck.  They explain everything else, so they come first. */
static void
silent_nodes(struct cutd *d, const struct snap *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t v = 0; v < s->nparts && off < len; v++)
		if (v != d->self && !s->parts[v].done && !s->parts[v].reported)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
			                        off ? ", " : "",
			                        d->cfg->nodes[v].name);
	if (off > 0 && off < len)
		snprintf(buf + off, len - off,
		         ": no part and no word by the "
		         "deadline");
}

/* This node cannot finish its part of s, for reason: a participant tells
 * the initiator; either way s ends here. */
static void
give_up(struct cutd *d, struct snap *s, const char *reason, int root_cause)
{
	if (s->state == SNAP_ABORTED)
		return;
	if (s->initiator == d->self) {
		add_reason(s, reason, root_cause);
		abort_snap(d, s, s->reasons);
		return;
	}
	if (send_abort(d, s->initiator, s->id, reason, root_cause) != 0)
		log_err("snapshot %s: cannot tell the initiator why", s->id);
	abort_snap(d, s, reason);
}

void
node_abandon(struct cutd *d, const char *id, const char *why)
{
	struct snap *s = node_find(d, id);
	char reason[400];

	if (s == NULL)
		return;
	snprintf(reason, sizeof(reason), "%s: %s", d->name, why);
	give_up(d, s, reason, 1);
}

void
node_give_up(struct cutd *d, struct snap *s, const char *what)
{
	char reason[400];

	snprintf(reason, sizeof(reason), "%s: storage: %s: %s", d->name, what,
	         store_errmsg(d->store));
	give_up(d, s, reason, 1);
}

/* While degraded, this node takes no part in new snapshots: it tells the
 * initiator why, as node_give_up() would, and records nothing.  Returns 1
 * if it refused s. */
static int
refuse_degraded(struct cutd *d, struct snap *s)
{
	char reason[400];

	if (d->degraded[0] == '\0')
		return 0;
	snprintf(reason, sizeof(reason), "%s: storage degraded: %s", d->name,
	         d->degraded);
	give_up(d, s, reason, 1);
	return 1;
}

/* The wall-clock time of monotonic time t. */
static int64_t
wall_of(int64_t t)
{
	return cutd_wall_ms() - (cutd_now_ms() - t);
}

void
node_storage_failed(struct cutd *d)
{
	char err[256], reason[400];
	uint64_t gen = d->batch_gen;
	struct snap *s;

	snprintf(err, sizeof(err), "%s", store_errmsg(d->store));
	store_rollback(d->store);
	d->batch_open = 0;
	d->begin_failed = 0;
	log_err("database commit failed: %s; aborting the snapshots its "
	        "batch held",
	        err);
	/* The WAL of a lost batch may be what filled the disk. */
	if (store_checkpoint(d->store) != 0)
		log_info("cannot checkpoint the database: %s",
		         store_errmsg(d->store));
	snprintf(reason, sizeof(reason), "%s: storage: %s", d->name, err);
	for (s = d->snaps; s != NULL; s = s->next) {
		if (s->state != SNAP_RUNNING && s->state != SNAP_WAITING &&
		    s->ended_gen != gen)
			continue;
		s->unsaved = 1;
		give_up(d, s, reason, 1); /* keeps an aborted one's reason */
	}
	node_storage_retry(d);
}

/* Writes the unsaved ends and the probe row into the open batch. */
static int
rewrite_ends(struct cutd *d)
{
	int rv = 0;

	for (struct snap *s = d->snaps; s != NULL && rv == 0; s = s->next) {
		if (!s->unsaved)
			continue;
		rv = store_abort_snapshot(
		    d->store, s->id, d->cfg->nodes[s->initiator].name,
		    s->initiator == d->self, s->started_wall_ms,
		    (uint32_t)d->cfg->nnodes, s->why, wall_of(s->ended_ms));
		if (rv == E_STATE) /* aborted in this batch already */
			rv = 0;
	}
	return rv != 0 ? rv : store_probe(d->store, cutd_wall_ms());
}

int
node_storage_retry(struct cutd *d)
{
	char err[256];
	int rv = E_IO;

	d->retry_ms = cutd_now_ms();
	if (d->degraded[0] != '\0' && !d->batch_open)
		store_checkpoint(d->store); /* frees space if it can */
	cutd_db(d);
	if (d->batch_open && (rv = rewrite_ends(d)) == 0 &&
	    (rv = store_commit(d->store)) == 0) {
		d->batch_open = 0;
		for (struct snap *s = d->snaps; s != NULL; s = s->next)
			s->unsaved = 0;
		if (d->degraded[0] != '\0')
			log_notice("storage works again: snapshots accepted");
		d->degraded[0] = '\0';
		node_committed(d);
		return 0;
	}
	snprintf(err, sizeof(err), "%s", store_errmsg(d->store));
	store_rollback(d->store);
	d->batch_open = 0;
	d->begin_failed = 0;
	if (d->degraded[0] == '\0')
		log_err("storage degraded: %s; new snapshots are refused until "
		        "the database takes writes again",
		        err);
	snprintf(d->degraded, sizeof(d->degraded), "%s", err);
	node_committed(d);
	return rv;
}

void
node_committed(struct cutd *d)
{
	int64_t now = cutd_now_ms();

	if (!d->wake_due)
		return;
	d->wake_due = 0;
	for (struct snap *s = d->snaps; s != NULL; s = s->next)
		if (s->waiters != NULL)
			control_wake(d, s, now);
}

int
node_end_pending(const struct cutd *d, const struct snap *s)
{
	return s->state == SNAP_DONE && d->batch_open &&
	       s->ended_gen == d->batch_gen;
}

int
node_unsaved(struct cutd *d, const char *id, struct store_snapshot *ret)
{
	struct snap *s = node_find(d, id);

	if (s == NULL || !s->unsaved)
		return 0;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->id, sizeof(ret->id), "%s", s->id);
	snprintf(ret->initiator, sizeof(ret->initiator), "%s",
	         d->cfg->nodes[s->initiator].name);
	ret->is_initiator = s->initiator == d->self;
	ret->status = STORE_ABORTED;
	snprintf(ret->reason, sizeof(ret->reason), "%s", s->why);
	ret->started_ms = s->started_wall_ms;
	ret->finished_ms = wall_of(s->ended_ms);
	ret->parts_expected = (uint32_t)d->cfg->nnodes;
	ret->consistent = -1;
	return 1;
}

static void
expire(struct cutd *d, struct snap *s)
{
	char reason[400], silent[200], all[2 * 400 + 4];
	int root;

	if (s->initiator != d->self) {
		root = local_reason(d, s, reason, sizeof(reason));
		give_up(d, s, reason, root);
		return;
	}
	if (s->state == SNAP_RUNNING) {
		root = local_reason(d, s, reason, sizeof(reason));
		add_reason(s, reason, root);
	}
	silent_nodes(d, s, silent, sizeof(silent));
	snprintf(all, sizeof(all), "%s%s%.399s", silent,
	         silent[0] && s->reasons[0] ? "; " : "", s->reasons);
	snprintf(reason, sizeof(reason), "%.399s", all);
	if (reason[0] == '\0')
		snprintf(reason, sizeof(reason),
		         "parts not complete by the deadline");
	abort_snap(d, s, reason);
}

void
node_timers(struct cutd *d, int64_t now)
{
	struct snap *s, *next;

	for (s = d->snaps; s != NULL; s = next) {
		next = s->next;
		if ((s->state == SNAP_RUNNING || s->state == SNAP_WAITING) &&
		    now >= s->deadline_ms)
			expire(d, s);
		if (s->waiters != NULL)
			control_wake(d, s, now);
		/* An end not yet written stays until it is. */
		if ((s->state == SNAP_DONE || s->state == SNAP_ABORTED) &&
		    s->waiters == NULL && !s->unsaved &&
		    now - s->ended_ms > KEEP_ENDED_MS) {
			engine_forget(d->eng, s->id);
			snap_unlink(d, s);
			snap_free(s);
		}
	}
}

int
node_next_timer(struct cutd *d, int64_t now, int max)
{
	int64_t ms = max;

	for (const struct snap *s = d->snaps; s != NULL; s = s->next) {
		if ((s->state == SNAP_RUNNING || s->state == SNAP_WAITING) &&
		    s->deadline_ms - now < ms)
			ms = s->deadline_ms - now;
		for (const struct waiter *w = s->waiters; w != NULL;
		     w = w->next)
			if (w->deadline_ms - now < ms)
				ms = w->deadline_ms - now;
	}
	return ms < 0 ? 0 : (int)ms;
}

void
node_peer_restarted(struct cutd *d, size_t node)
{
	char reason[128];

	snprintf(reason, sizeof(reason), "%s restarted",
	         d->cfg->nodes[node].name);
	abort_running(d, reason);
}

static void
part_complete(struct cutd *d, struct snap *s)
{
	if (s->initiator == d->self) {
		s->state = SNAP_WAITING;
		assembly_own_part(d, s);
		return;
	}
	if (assembly_send_part(d, s) != 0) {
		char reason[400];
		snprintf(reason, sizeof(reason),
		         "%s: cannot send its part to the initiator", d->name);
		give_up(d, s, reason, 1);
		return;
	}
	cutd_db(d);
	store_finish(d->store, s->id, STORE_COMPLETE, NULL, cutd_wall_ms());
	s->state = SNAP_DONE;
	s->ended_ms = cutd_now_ms();
	s->ended_gen = d->batch_gen;
	log_info("snapshot %s: part complete, sent to %s", s->id,
	         d->cfg->nodes[s->initiator].name);
	control_wake(d, s, cutd_now_ms());
}

static void
channel_done(struct cutd *d, struct snap *s, const struct engine_action *a)
{
	struct part_chan *c = &s->in[a->chan];
	struct store_channel sc;

	c->m = a->m;
	c->n = a->n;
	c->done = 1;
	memset(&sc, 0, sizeof(sc));
	sc.src = d->cfg->nodes[c->src].name;
	sc.dst = d->name;
	sc.m = c->m;
	sc.n = c->n;
	sc.recorded = c->seqs.count;
	sc.first_seq = c->seqs.first;
	sc.last_seq = c->seqs.last;
	sc.consecutive = c->seqs.consecutive;
	cutd_db(d);
	if (store_put_channel(d->store, s->id, &sc) != 0)
		log_err("snapshot %s: cannot store channel %s -> %s: %s", s->id,
		        sc.src, sc.dst, store_errmsg(d->store));
}

static void
record(struct cutd *d, struct snap *s, const struct engine_action *a,
       const struct delivery *dl)
{
	struct part_chan *c = &s->in[a->chan];

	if (engine_cut(d->eng) == ENGINE_CUT_UNALIGNED && !s->state_recorded) {
		/* Stored once the reply says where the queued range ends. */
		if (c->def_lo == 0)
			c->def_lo = a->seq;
		c->def_hi = a->seq;
		return;
	}
	cutd_db(d);
	if (store_put_message(d->store, s->id, d->cfg->nodes[c->src].name,
	                      d->name, a->seq, dl->content_type, dl->payload,
	                      dl->len) != 0) {
		node_give_up(d, s, "cannot store a recorded message");
		return;
	}
	audit_seqs_add(&c->seqs, a->seq);
}

/* Records one queued message of a RECORD_QUEUED range. */
struct queued {
	struct cutd *d;
	struct snap *s;
	struct part_chan *c;
};

static int
record_queued(void *arg, uint64_t app_seq, const char *ctype,
              const void *payload, size_t len)
{
	struct queued *q = arg;
	struct cutd *d = q->d;

	if (store_put_message(d->store, q->s->id, d->cfg->nodes[q->c->src].name,
	                      d->name, app_seq, cutd_ctype(ctype), payload,
	                      len) != 0)
		return -1;
	audit_seqs_add(&q->c->seqs, app_seq);
	return 0;
}

/* Stores the recorded messages first .. last of channel chan of s from
 * the down stream, where they wait untaken. */
static void
store_queued(struct cutd *d, struct snap *s, size_t chan, uint64_t first,
             uint64_t last)
{
	struct queued q = {d, s, &s->in[chan]};

	cutd_db(d);
	if (app_queued(d, q.c->src, first, last - first + 1, record_queued,
	               &q) != 0)
		node_give_up(d, s, "cannot store a recorded message");
}

/* The messages a->seq .. a->seq + a->count - 1 of channel a->chan were
 * queued for the application, not taken, when it recorded: they are
 * channel state, recorded from the down stream, and so are the ones the
 * engine recorded while the request was pending, which follow them. */
static void
record_range(struct cutd *d, struct snap *s, const struct engine_action *a)
{
	struct part_chan *c = &s->in[a->chan];
	uint64_t last = a->seq + a->count - 1;

	if (c->def_lo != 0 && c->def_hi > last)
		last = c->def_hi;
	c->def_lo = c->def_hi = 0;
	store_queued(d, s, a->chan, a->seq, last);
}

/* After an unaligned reply, before its actions: stores what was recorded
 * while the request was pending on the channels that have no queued range
 * (record_range() stores it for the others, after their range). */
static void
store_deferred(struct cutd *d, struct snap *s)
{
	const struct engine_action *acts;
	size_t n;

	acts = engine_actions(d->eng, &n);
	for (size_t i = 0; i < d->n_in && s->state != SNAP_ABORTED; i++) {
		struct part_chan *c = &s->in[i];
		int ranged = 0;
		for (size_t k = 0; k < n; k++)
			ranged |= acts[k].kind == ENGINE_RECORD_QUEUED &&
			          acts[k].chan == i;
		if (c->def_lo != 0 && !ranged) {
			uint64_t lo = c->def_lo, hi = c->def_hi;
			c->def_lo = c->def_hi = 0;
			store_queued(d, s, i, lo, hi);
		}
	}
}

/* Carries out the actions of the last engine event.  dl is the message
 * being delivered, if the event was a delivery. */
static int
perform(struct cutd *d, const struct delivery *dl)
{
	const struct engine_action *acts;
	size_t n;
	int rv = 0;

	acts = engine_actions(d->eng, &n);
	for (size_t i = 0; i < n; i++) {
		const struct engine_action *a = &acts[i];
		struct snap *s = node_find(d, a->snap);

		if (s == NULL) {
			log_err("engine action for unknown snapshot %s",
			        a->snap);
			continue;
		}
		/* An earlier action of this event may have given up on s. */
		if (s->state == SNAP_ABORTED)
			continue;
		switch (a->kind) {
		case ENGINE_REQUEST_STATE:
			rv = app_request_state(d, s->id);
			break;
		case ENGINE_SEND_MARKER:
			rv = send_marker(d, d->out_node[a->chan], s, a->count);
			break;
		case ENGINE_RECORD_MESSAGE:
			if (dl != NULL)
				record(d, s, a, dl);
			break;
		case ENGINE_RECORD_QUEUED:
			record_range(d, s, a);
			break;
		case ENGINE_CHANNEL_DONE:
			channel_done(d, s, a);
			break;
		case ENGINE_PART_COMPLETE:
			part_complete(d, s);
			break;
		}
		if (rv != 0)
			log_err("snapshot %s: action failed: %d", s->id, rv);
	}
	return 0;
}
