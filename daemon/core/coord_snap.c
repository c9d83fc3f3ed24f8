/*
 * coord_snap.c - what a node does with the engine's actions: state
 * requests into the down stream, markers onto links, recorded messages
 * into the store, parts to the initiator; and, at the initiator, the
 * deadlines (assembly and audit are coord_asm.c's).
 *
 * A snapshot's life at one node (struct snap):
 *
 *            first marker, or Start
 *                     |
 *                     v
 *   +------------- RUNNING ----part complete----> DONE (participant)
 *   |                 |
 *   |          part complete (initiator)
 *   |                 v
 *   +------------- WAITING ----every part in----> DONE (audited)
 *   |
 *   +--deadline, Abort from the initiator, a peer's restart, a resumed
 *      channel, a storage fault, the application gone--> ABORTED
 *
 * DONE and ABORTED are final; an ended snapshot is forgotten
 * KEEP_ENDED_MS after it ended (late markers of it are then ignored by
 * the engine's forgotten-id rule).  Every write goes into the store's
 * batch of the current turn, so a part is persisted before the caller
 * sends it on.
 *
 * Storage faults.  A batch that does not commit (a full disk, an I/O
 * error, a read-only file) is rolled back whole, so the database is as the
 * last good commit left it.  The rows it held cannot be told apart, so
 * snap_storage_failed() aborts every snapshot it may have touched: those
 * in progress and those that ended in it, with "NODE: storage: <SQLite's
 * words>" (one that ended aborted in it keeps its reason).  Then, in a new
 * batch, snap_storage_retry() writes those ends again (creating the rows
 * the lost batch had created), so that the database says what memory
 * says.  If that batch fails too, the daemon is degraded: memory holds
 * the ends not yet written (struct snap's unsaved, shown by Get, List and
 * Wait in place of the stale rows), Start is refused, markers of other
 * initiators' snapshots are answered with an abort ("storage degraded"),
 * and snap_storage_retry() runs again every second until a batch
 * commits.  A snapshot's completion is told to Wait calls only once its
 * batch has committed, so "consistent" is never said of data that did not
 * reach the disk.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "cutproto.h"
#include "log.h"

/* The message being delivered, which RECORD_MESSAGE actions refer to. */
struct delivery {
	const char *content_type;
	const void *payload;
	size_t len;
};

static int perform(struct coord *c, const struct delivery *dl);
static void store_deferred(struct coord *c, struct snap *s);
static void abort_snap(struct coord *c, struct snap *s, const char *reason);
static int refuse_degraded(struct coord *c, struct snap *s);
static void give_up(struct coord *c, struct snap *s, const char *reason,
                    int root_cause);

struct snap *
snap_find(struct coord *c, const char *id)
{
	for (struct snap *s = c->snaps; s != NULL; s = s->next)
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
snap_new(struct coord *c, const char *id, size_t initiator, uint32_t timeout_ms)
{
	size_t n_in = c->n_in;
	struct snap *s = calloc(1, sizeof(*s));

	if (s == NULL || (s->in = calloc(n_in + 1, sizeof(*s->in))) == NULL) {
		free(s);
		return NULL;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->initiator = initiator;
	s->started_ms = c->now;
	s->started_wall_ms = c->wall;
	s->timeout_ms = timeout_ms;
	/* Participants give up a little before the initiator, so the
	 * initiator hears why. */
	s->deadline_ms = s->started_ms + (initiator == c->self
	                                      ? (int64_t)timeout_ms
	                                      : (int64_t)timeout_ms * 4 / 5);
	for (size_t i = 0; i < n_in; i++) {
		s->in[i].src = c->in_node[i];
		audit_seqs_init(&s->in[i].seqs);
	}
	if (initiator == c->self) {
		s->nparts = c->cfg->nnodes;
		if ((s->parts = calloc(s->nparts, sizeof(*s->parts))) == NULL) {
			snap_free(s);
			return NULL;
		}
	}
	s->next = c->snaps;
	c->snaps = s;
	return s;
}

static void
snap_unlink(struct coord *c, struct snap *s)
{
	for (struct snap **p = &c->snaps; *p != NULL; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			return;
		}
}

int
snap_init(struct coord *c, struct errinfo *e)
{
	const struct config *cfg = c->cfg;
	size_t n_in = 0, n_out = 0;
	uint32_t aborted = 0;
	int rv;

	c->in_node = calloc(cfg->nchans + 1, sizeof(*c->in_node));
	c->out_node = calloc(cfg->nchans + 1, sizeof(*c->out_node));
	if (c->in_node == NULL || c->out_node == NULL)
		return err_set(e, E_NOMEM, "out of memory");
	for (size_t k = 0; k < cfg->nchans; k++) {
		const struct config_channel *ch = &cfg->chans[k];
		if (ch->dst == c->self) {
			c->peers[ch->src].in_chan = (long)n_in;
			c->in_node[n_in++] = ch->src;
		}
		if (ch->src == c->self) {
			c->peers[ch->dst].out_chan = (long)n_out;
			c->out_node[n_out++] = ch->dst;
		}
	}
	c->n_in = n_in;
	c->n_out = n_out;
	if ((rv = engine_new(ENGINE_COUNTED, n_in, n_out, &c->eng)) != 0 ||
	    (rv = engine_set_cut(c->eng, cfg->aligned
	                                     ? ENGINE_CUT_ALIGNED
	                                     : ENGINE_CUT_UNALIGNED)) != 0)
		return err_set(e, rv, "cannot make the engine: %s",
		               err_str(rv));
	/* Ids come from the store's counter (store_next_id()). */
	coord_db(c);
	if ((rv = DB(c, abort_unfinished, "daemon restarted", c->wall,
	             &aborted)) != 0)
		return err_set(e, E_STORAGE,
		               "cannot mark unfinished snapshots aborted: %s",
		               DB_ERR(c));
	if (aborted > 0)
		log_notice("marked %" PRIu32 " unfinished snapshots aborted: "
		           "daemon restarted",
		           aborted);
	c->unfinished = c->batch_gen; /* until this batch commits */
	c->tell_stopped = 1;
	return 0;
}

void
coord_stop(struct coord *c, const char *reason)
{
	restore_stop(c, reason);
	for (struct snap *s = c->snaps; s != NULL; s = s->next)
		if (s->state == SNAP_RUNNING || s->state == SNAP_WAITING) {
			coord_db(c);
			/* At exit: a row left in progress is marked aborted
			 * ("daemon restarted") by the next run anyway. */
			if (DB(c, finish, s->id, STORE_ABORTED, reason,
			       c->wall) != 0)
				log_warnx("snapshot %s: cannot store its "
				          "abort: %s",
				          s->id, DB_ERR(c));
			s->state = SNAP_ABORTED;
			s->ended_ms = c->now;
			snap_ended(c, s);
		}
}

void
snap_fini(struct coord *c)
{
	struct snap *s;

	while ((s = c->snaps) != NULL) {
		c->snaps = s->next;
		snap_free(s);
	}
	engine_free(c->eng);
	c->eng = NULL;
	free(c->in_node);
	free(c->out_node);
}

static int
send_marker(struct coord *c, size_t node, const struct snap *s, uint64_t count)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerMarker m = CUT__V1__PEER_MARKER__INIT;

	m.seq = peer_next_seq(c, node);
	m.snapshot_id = (char *)s->id;
	m.has_timeout_ms = 1;
	m.timeout_ms = s->timeout_ms;
	m.count = count;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_MARKER;
	item.marker = &m;
	return peer_push_item(c, node, &item);
}

static int
send_abort(struct coord *c, size_t node, const char *id, const char *reason,
           int root_cause)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerAbort a = CUT__V1__PEER_ABORT__INIT;

	a.seq = peer_next_seq(c, node);
	a.snapshot_id = (char *)id;
	a.reason = (char *)reason;
	a.has_root_cause = 1;
	a.root_cause = root_cause != 0;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_ABORT;
	item.abort = &a;
	return peer_push_item(c, node, &item);
}

int
snap_app_send(struct coord *c, const char *to, const char *content_type,
              const void *payload, size_t len, uint64_t seq)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerData data = CUT__V1__PEER_DATA__INIT;
	int node = config_node_index(c->cfg, to);
	struct peer *p;
	size_t out;
	int rv;

	if (node < 0 || c->peers[node].out_chan < 0)
		return E_NOCHAN;
	p = &c->peers[node];
	out = (size_t)p->out_chan;
	/* libcut numbers its messages and sends again, after a reconnect,
	 * those it cannot know arrived: drop what the channel has. */
	if (seq != 0 && seq <= engine_sent_count(c->eng, out)) {
		p->dups++;
		return E_DUP;
	}
	if (seq != 0 && seq != engine_sent_count(c->eng, out) + 1)
		return E_GAP;
	/* What libcut sends again was within a window once: it goes. */
	if ((seq == 0 || seq > p->resend_upto) &&
	    !peer_window_open(c, (size_t)node, len)) {
		p->stalls++;
		return E_FULL;
	}
	data.seq = peer_next_seq(c, (size_t)node);
	data.content_type = (char *)content_type;
	data.payload.data = (uint8_t *)payload;
	data.payload.len = len;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
	item.data = &data;
	/* Kept until taken first, then onto the link, and counted only
	 * once both took it: the count is what the next marker carries, so a
	 * message either went whole or not at all (the application is told
	 * and sends it again). */
	data.app_seq = engine_sent_count(c->eng, out) + 1;
	if ((rv = peer_note_data(c, (size_t)node, &data, len)) != 0)
		return rv;
	if ((rv = peer_push_item(c, (size_t)node, &item)) != 0) {
		peer_unnote_data(c, (size_t)node, len);
		return rv;
	}
	p->sent_bytes += len;
	return engine_sent(c->eng, out, NULL);
}

/* Aborts the snapshots in progress, whose counts a resume would change. */
static void
abort_running(struct coord *c, const char *reason)
{
	for (struct snap *s = c->snaps; s != NULL; s = s->next) {
		if (s->state != SNAP_RUNNING && s->state != SNAP_WAITING)
			continue;
		/* A participant tells the initiator why (which also lets an
		 * initiator that deleted the snapshot meanwhile delete this
		 * copy again: snap_abort_msg()). */
		if (s->initiator != c->self)
			give_up(c, s, reason, 0);
		else
			abort_snap(c, s, reason);
	}
}

void
snap_abort_all(struct coord *c, const char *reason)
{
	abort_running(c, reason);
}

int
snap_resume_out(struct coord *c, size_t node, uint64_t count)
{
	long out = c->peers[node].out_chan;

	if (out < 0 || count == engine_sent_count(c->eng, (size_t)out))
		return 0;
	abort_running(c, "channel numbering resumed after a restart");
	log_notice("channel to %s resumes after message %" PRIu64,
	           c->cfg->nodes[node].name, count);
	return engine_resume_out(c->eng, (size_t)out, count);
}

int
snap_renumber(struct coord *c, size_t node, uint64_t numbering)
{
	Cut__V1__PeerItem item = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerRenumber r = CUT__V1__PEER_RENUMBER__INIT;

	int rv;

	r.seq = peer_next_seq(c, node);
	r.has_numbering = 1;
	r.numbering = numbering;
	item.item_case = CUT__V1__PEER_ITEM__ITEM_RENUMBER;
	item.renumber = &r;
	if ((rv = peer_push_item(c, node, &item)) != 0)
		return rv;
	/* The receiver's acks count what its application took of the old
	 * numbering until it has this: taken as ours, they would free the
	 * window of messages not sent yet. */
	c->peers[node].app_taken = 0;
	c->peers[node].renumber_seq = r.seq;
	c->peers[node].out_numbering = numbering;
	return 0;
}

int
snap_resume_in(struct coord *c, size_t node, uint64_t count)
{
	struct peer *p = &c->peers[node];
	long in = p->in_chan;
	int rv;

	p->in_known = 1;
	if (in < 0 || count == engine_delivered_count(c->eng, (size_t)in))
		return 0;
	abort_running(c, "channel numbering resumed after a restart");
	log_notice("channel from %s resumes after message %" PRIu64,
	           c->cfg->nodes[node].name, count);
	if ((rv = engine_resume_in(c->eng, (size_t)in, count)) != 0)
		return rv;
	/* What the application took of an old numbering (PeerRenumber
	 * starts a new one at 0) is nothing taken of the new: reported as
	 * taken, it would let the sender forget messages our application
	 * never had, and as an unaligned cut's m it exceeds what was
	 * delivered, which the engine refuses. */
	if (p->taken > count)
		p->taken = count;
	return 0;
}

int
coord_start(struct coord *c, uint32_t timeout_ms,
            char ret_id[ENGINE_ID_MAX + 1], struct errinfo *e)
{
	char id[ENGINE_ID_MAX + 1];
	struct snap *s;
	uint64_t k;
	int rv;

	if (c->degraded[0] != '\0')
		return err_set(e, E_STORAGE, "storage degraded: %.200s",
		               c->degraded);
	if (c->rs.phase != RS_IDLE)
		return err_set(e, E_STATE, "a restore of %s is running",
		               c->rs.id);
	/* The id and its row first: a snapshot that cannot be stored is
	 * refused before any marker leaves. */
	coord_db(c);
	if (DB(c, next_id, c->name, c->wall, c->next_snap + 1, &k) != 0) {
		log_err("cannot issue a snapshot id: %s", DB_ERR(c));
		return err_set(e, E_STORAGE, "storage: %.200s", DB_ERR(c));
	}
	c->next_snap = k; /* even if the batch is lost: never issued twice */
	snprintf(id, sizeof(id), "%s:%" PRIu64, c->name, k);
	if (snap_find(c, id) != NULL)
		return err_set(e, E_EXIST, "snapshot %s is already known", id);
	if (DB(c, snapshot_create, id, c->name, 1, c->wall,
	       (uint32_t)c->cfg->nnodes) != 0) {
		log_err("snapshot %s: cannot store it: %s", id, DB_ERR(c));
		return err_set(e, E_STORAGE, "storage: %.200s", DB_ERR(c));
	}
	s = snap_new(c, id, c->self,
	             timeout_ms ? timeout_ms : c->cfg->deadline_ms);
	if (s == NULL || (rv = engine_initiate(c->eng, id)) != 0) {
		rv = s == NULL ? E_NOMEM : rv;
		if (s != NULL) {
			snap_unlink(c, s);
			snap_free(s);
		}
		if (DB(c, finish, id, STORE_ABORTED, "could not be started",
		       c->wall) != 0)
			coord_write_failed(c, "cannot store an abort");
		return err_set(e, rv, "cannot start a snapshot: %s",
		               err_str(rv));
	}
	log_info("snapshot %s: initiated", id);
	coord_stats_started(c);
	memcpy(ret_id, id, strlen(id) + 1);
	return perform(c, NULL);
}

int
snap_state_reply(struct coord *c, const char *id, const char *ctype,
                 const void *state, size_t len)
{
	struct snap *s = snap_find(c, id);
	int rv;

	if (s == NULL || s->state != SNAP_RUNNING || s->state_recorded)
		return E_STATE;
	coord_db(c);
	if (DB(c, put_state, id, c->name, ctype, state, len, c->wall) != 0) {
		snap_give_up(c, s, "cannot store the local state");
		return 0;
	}
	if (engine_cut(c->eng) == ENGINE_CUT_UNALIGNED) {
		/* m for each channel is what the application had taken. */
		uint64_t taken[CONFIG_MAX_NODES];
		for (size_t i = 0; i < c->n_in; i++)
			taken[i] = c->peers[c->in_node[i]].taken;
		rv = engine_state_recorded_taken(c->eng, id, taken);
	} else {
		rv = engine_state_recorded(c->eng, id);
	}
	if (rv != 0) {
		/* The handed counts go past what was delivered at the
		 * request (the application reconnected after taking them,
		 * say): no state it gives is of this cut any more. */
		char reason[400];
		snprintf(reason, sizeof(reason),
		         "%s: the application's state reply does not fit the "
		         "cut: it was handed messages delivered after the "
		         "state request",
		         c->name);
		give_up(c, s, reason, 1);
		return rv;
	}
	s->state_recorded = 1;
	app_forget_request(c, id);
	if (engine_cut(c->eng) == ENGINE_CUT_UNALIGNED)
		store_deferred(c, s);
	return perform(c, NULL);
}

/*
 * A daemon that restarted learns where the channel from `from` stands
 * from its application's hello (coord_app.c's resume()) or else from the
 * first item of it that counts: a message (its seq less one) or a marker
 * (its count).  The sender sends again what our application had not
 * taken ahead of anything else on the new link, so `taken` messages were
 * all taken (m), to this run or an earlier one, even if no libcut resumed
 * them (an application that died took them, and the fresh one knows
 * nothing).  Without the marker's case a channel with nothing to send
 * kept every marker waiting for messages the last run's application had
 * (seed 536 of reboot).  Nothing once the numbering is known.
 */
static int
learn_numbering(struct coord *c, size_t from, uint64_t taken)
{
	struct peer *p = &c->peers[from];
	int rv;

	if (p->in_known ||
	    engine_delivered_count(c->eng, (size_t)p->in_chan) != 0)
		return 0;
	if ((rv = snap_resume_in(c, from, taken)) != 0)
		return rv;
	if (p->taken < taken)
		p->taken = taken;
	return 0;
}

int
snap_data(struct coord *c, size_t from, uint64_t app_seq,
          const char *content_type, const void *payload, size_t len)
{
	struct delivery dl = {content_type, payload, len};
	long in = c->peers[from].in_chan;
	int rv;

	if (in < 0)
		return E_NOCHAN;
	/* After a restart on either side the sender sends again what our
	 * application had not taken when it last heard: what we have is
	 * dropped.  A daemon that restarted learns the numbering from the
	 * first message, or from its application's hello if that came
	 * first. */
	if (app_seq <= engine_delivered_count(c->eng, (size_t)in)) {
		c->peers[from].dups++;
		return 0;
	}
	if ((rv = learn_numbering(c, from, app_seq - 1)) != 0)
		return rv;
	c->peers[from].in_known = 1;
	/* The link delivers in order, so the sender's numbering must go on
	 * exactly where ours stands. */
	if (app_seq != engine_delivered_count(c->eng, (size_t)in) + 1)
		return E_INVAL;
	if ((rv = engine_delivered(c->eng, (size_t)in, app_seq)) != 0)
		return rv;
	if ((rv = perform(c, &dl)) != 0)
		return rv;
	c->peers[from].recv_bytes += len;
	return app_deliver(c, from, content_type, payload, len, app_seq);
}

/* The initiator's name is the id up to its last ':'. */
long
snap_initiator_of(struct coord *c, const char *id)
{
	char name[CONFIG_NAME_MAX + 1];
	const char *colon = strrchr(id, ':');
	size_t len;

	if (colon == NULL || (len = (size_t)(colon - id)) == 0 ||
	    len > CONFIG_NAME_MAX)
		return -1;
	memcpy(name, id, len);
	name[len] = '\0';
	return config_node_index(c->cfg, name);
}

int
snap_marker(struct coord *c, size_t from, const char *id, uint64_t n,
            uint32_t timeout_ms)
{
	long in = c->peers[from].in_chan;
	struct snap *s;
	int init, created = 0, rv;

	if (in < 0)
		return E_NOCHAN;
	if (!engine_id_valid(id) || (init = (int)snap_initiator_of(c, id)) < 0)
		return E_INVAL;
	if ((rv = learn_numbering(c, from, n)) != 0)
		return rv;
	if ((s = snap_find(c, id)) == NULL) {
		if ((size_t)init == c->self)
			return E_STATE; /* ours, but long forgotten */
		if (sched_was_forgotten(c, id))
			return E_STATE; /* deleted here, or its outcome came first */
		s = snap_new(c, id, (size_t)init,
		             timeout_ms ? timeout_ms : c->cfg->deadline_ms);
		if (s == NULL)
			return E_NOMEM;
		created = 1;
	}
	if ((rv = engine_marker(c->eng, (size_t)in, id, n)) != 0) {
		if (created) {
			snap_unlink(c, s);
			snap_free(s);
		}
		return rv;
	}
	if (created) {
		log_info("snapshot %s: first marker, from %s", id,
		         c->cfg->nodes[from].name);
		if (refuse_degraded(c, s))
			return 0;
		coord_db(c);
		rv = DB(c, snapshot_create, id, c->cfg->nodes[init].name, 0,
		        c->wall, (uint32_t)c->cfg->nnodes);
		if (rv == E_EXIST) {
			/* Its initiator reused an id (a lost database and a
			 * clock set back): say so rather than stay silent. */
			char reason[400];
			snprintf(reason, sizeof(reason),
			         "%s: already holds an older snapshot %s",
			         c->name, id);
			give_up(c, s, reason, 1);
			return 0;
		}
		if (rv != 0) {
			snap_give_up(c, s, "cannot store the snapshot");
			return 0;
		}
	}
	return perform(c, NULL);
}

/* Ends s as aborted with reason; the initiator tells every other node. */
static void
abort_snap(struct coord *c, struct snap *s, const char *reason)
{
	enum engine_snap_state es;
	int rv;

	if (s->state == SNAP_ABORTED)
		return;
	if (engine_state(c->eng, s->id, &es) == 0 &&
	    (es == ENGINE_S_REQUESTED || es == ENGINE_S_RECORDED))
		engine_abort(c->eng, s->id);
	/* One refused while degraded has no row here: a write of its end
	 * would fail and lose the whole batch, and its retry, once the
	 * database works, would write a row for a snapshot this node never
	 * recorded (a copy deleted here came back that way: seed 63460). */
	rv = 0;
	if (!s->no_row) {
		coord_db(c);
		rv = DB(c, finish, s->id, STORE_ABORTED, reason, c->wall);
	}
	if (rv == E_STATE)
		log_info("snapshot %s: its part here had already completed",
		         s->id);
	else if (rv == E_NOENT && sched_was_forgotten(c, s->id))
		/* Its copy here was deleted (a Delete at this participant
		 * after its part completed): nothing to write, and a failed
		 * write would lose the whole batch. */
		log_info("snapshot %s: deleted here already", s->id);
	else if (rv != 0 && !s->unsaved)
		/* (An unsaved end's row went with a lost batch: the retry
		 * writes it, snap_storage_retry().) */
		coord_write_failed(c, "cannot store an abort");
	s->state = SNAP_ABORTED;
	s->ended_ms = c->now;
	s->ended_gen = c->batch_gen;
	snap_ended(c, s);
	snprintf(s->why, sizeof(s->why), "%s", reason);
	app_forget_request(c, s->id);
	log_warnx("snapshot %s: aborted: %s", s->id, reason);
	if (s->initiator == c->self)
		for (size_t v = 0; v < c->cfg->nnodes; v++)
			/* A link too full to take the abort leaves that
			 * node to its own deadline, which ends its part with
			 * its own reason: nothing waits forever. */
			if (v != c->self &&
			    send_abort(c, v, s->id, reason, 0) != 0)
				log_err("snapshot %s: cannot tell %s it was "
				        "aborted; it ends at its deadline",
				        s->id, c->cfg->nodes[v].name);
	/* After the aborts, so that a participant has stopped recording
	 * when it stores the outcome. */
	if (s->initiator == c->self)
		sched_tell_outcome(c, s, 0, reason, -1, NULL);
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
snap_abort_msg(struct coord *c, size_t from, const char *id, const char *reason,
               int root_cause)
{
	struct snap *s = snap_find(c, id);

	/* A participant's report on one of ours that ended: if it was
	 * deleted here, that participant recorded it after its deletion
	 * reached it, and deletes it again. */
	if (s == NULL || (s->initiator == c->self && s->state != SNAP_RUNNING &&
	                  s->state != SNAP_WAITING))
		sched_forget_late(c, from, id);
	if (s == NULL)
		return 0; /* we never saw it: nothing to undo */
	if (s->initiator != c->self) {
		if (from != s->initiator)
			return E_INVAL;
		abort_snap(c, s, reason);
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
local_reason(struct coord *c, const struct snap *s, char *buf, size_t len)
{
	size_t off;

	if (!s->state_recorded) {
		snprintf(
		    buf, len, "%s: %s", c->name,
		    !coord_app_connected(c)
		        ? "no application connected to answer the state "
		          "request"
		        : "the application did not answer the state request");
		return 1;
	}
	off = (size_t)snprintf(buf, len, "%s: no marker on channel", c->name);
	for (size_t i = 0; i < c->n_in && off < len; i++)
		if (!s->in[i].done)
			off += (size_t)snprintf(
			    buf + off, len - off, " %s -> %s",
			    c->cfg->nodes[s->in[i].src].name, c->name);
	return 0;
}

/* The nodes that sent neither their part nor a reason: down, cut off or
 * stuck.  They explain everything else, so they come first. */
static void
silent_nodes(struct coord *c, const struct snap *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t v = 0; v < s->nparts && off < len; v++)
		if (v != c->self && !s->parts[v].done && !s->parts[v].reported)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
			                        off ? ", " : "",
			                        c->cfg->nodes[v].name);
	if (off > 0 && off < len)
		snprintf(buf + off, len - off,
		         ": no part and no word by the "
		         "deadline");
}

/* This node cannot finish its part of s, for reason: a participant tells
 * the initiator; either way s ends here. */
static void
give_up(struct coord *c, struct snap *s, const char *reason, int root_cause)
{
	if (s->state == SNAP_ABORTED)
		return;
	if (s->initiator == c->self) {
		add_reason(s, reason, root_cause);
		abort_snap(c, s, s->reasons);
		return;
	}
	/* Untold, the initiator names this node among the silent ones at
	 * its deadline: the verdict is the same, with fewer words. */
	if (send_abort(c, s->initiator, s->id, reason, root_cause) != 0)
		log_err("snapshot %s: cannot tell the initiator why; it names "
		        "%s silent at its deadline",
		        s->id, c->name);
	s->told_abort = 1;
	abort_snap(c, s, reason);
}

void
snap_abandon(struct coord *c, const char *id, const char *why)
{
	struct snap *s = snap_find(c, id);
	char reason[400];

	if (s == NULL)
		return;
	snprintf(reason, sizeof(reason), "%s: %s", c->name, why);
	give_up(c, s, reason, 1);
}

void
snap_give_up(struct coord *c, struct snap *s, const char *what)
{
	char reason[400];

	snprintf(reason, sizeof(reason), "%s: storage: %s: %s", c->name, what,
	         DB_ERR(c));
	give_up(c, s, reason, 1);
}

/* While degraded, this node takes no part in new snapshots: it tells the
 * initiator why, as snap_give_up() would, and records nothing.  Returns 1
 * if it refused s. */
static int
refuse_degraded(struct coord *c, struct snap *s)
{
	char reason[400];

	if (c->degraded[0] == '\0')
		return 0;
	snprintf(reason, sizeof(reason), "%s: storage degraded: %s", c->name,
	         c->degraded);
	s->no_row = 1;
	give_up(c, s, reason, 1);
	return 1;
}

void
snap_storage_failed(struct coord *c)
{
	char err[256], reason[400];
	uint64_t gen = c->batch_gen;
	struct snap *s;

	snprintf(err, sizeof(err), "%s",
	         c->write_failed ? c->lost_why : DB_ERR(c));
	DB0(c, rollback);
	c->batch_open = 0;
	c->begin_failed = 0;
	sched_storage_failed(c);
	c->write_failed = 0;
	c->lost_why[0] = '\0';
	log_err("database batch lost: %s; aborting the snapshots it held", err);
	/* The WAL of a lost batch may be what filled the disk. */
	if (DB0(c, checkpoint) != 0)
		log_info("cannot checkpoint the database: %s", DB_ERR(c));
	snprintf(reason, sizeof(reason), "%s: storage: %s", c->name, err);
	for (s = c->snaps; s != NULL; s = s->next) {
		if ((s->state != SNAP_RUNNING && s->state != SNAP_WAITING &&
		     s->ended_gen != gen) ||
		    s->no_row)
			continue;
		s->unsaved = 1;
		s->part_due = 0;          /* its part is lost with the batch */
		give_up(c, s, reason, 1); /* keeps an aborted one's reason */
	}
	snap_storage_retry(c);
}

/* Writes the unsaved ends and the probe row into the open batch, and,
 * when the start's batch was lost, the aborts of what an earlier run
 * left unfinished (no snapshot of this run is in progress on disk while
 * this runs: the failed batch's were aborted, and new ones are refused
 * while degraded). */
static int
rewrite_ends(struct coord *c)
{
	int rv = 0;

	if (c->unfinished != 0) {
		if ((rv = DB(c, abort_unfinished, "daemon restarted",
		             coord_wall_of(c, c->start_ms), NULL)) != 0)
			return rv;
		c->unfinished = c->batch_gen;
	}

	for (struct snap *s = c->snaps; s != NULL && rv == 0; s = s->next) {
		/* (One deleted here since stays deleted.) */
		if (!s->unsaved || sched_was_forgotten(c, s->id))
			continue;
		rv = DB(c, abort_snapshot, s->id,
		        c->cfg->nodes[s->initiator].name,
		        s->initiator == c->self, s->started_wall_ms,
		        (uint32_t)c->cfg->nnodes, s->why,
		        coord_wall_of(c, s->ended_ms));
		if (rv == E_STATE) /* aborted in this batch already */
			rv = 0;
	}
	restore_rewrite(c);
	return rv != 0 ? rv : DB(c, probe, c->wall);
}

int
snap_storage_retry(struct coord *c)
{
	char err[256];
	int rv = E_IO;

	c->retry_ms = c->now;
	if (c->degraded[0] != '\0' && !c->batch_open)
		DB0(c, checkpoint); /* frees space if it can */
	coord_db(c);
	if (c->batch_open && (rv = rewrite_ends(c)) == 0 &&
	    (rv = DB0(c, commit)) == 0) {
		c->batch_open = 0;
		c->write_failed = 0;
		c->unfinished = 0;
		for (struct snap *s = c->snaps; s != NULL; s = s->next)
			s->unsaved = 0;
		restore_committed(c);
		if (c->degraded[0] != '\0')
			log_notice("storage works again: snapshots accepted");
		c->degraded[0] = '\0';
		return 0;
	}
	snprintf(err, sizeof(err), "%s", DB_ERR(c));
	DB0(c, rollback);
	c->batch_open = 0;
	c->begin_failed = 0;
	sched_storage_failed(c);
	c->write_failed = 0;
	if (c->degraded[0] == '\0')
		log_err("storage degraded: %s; new snapshots are refused until "
		        "the database takes writes again",
		        err);
	snprintf(c->degraded, sizeof(c->degraded), "%s", err);
	return rv;
}

void
snap_ended(struct coord *c, struct snap *s)
{
	if (s->end_told == 0) {
		s->end_told = 1;
		c->ends_untold++;
	}
}

int
snap_next_end(struct coord *c, struct coord_event *ev)
{
	if (c->ends_untold == 0)
		return 0;
	for (struct snap *s = c->snaps; s != NULL; s = s->next) {
		if (s->end_told != 1 || snap_end_pending(c, s))
			continue;
		s->end_told = 2;
		c->ends_untold--;
		ev->kind = COORD_EV_SNAP_ENDED;
		snprintf(ev->id, sizeof(ev->id), "%s", s->id);
		ev->initiator = s->initiator == c->self;
		ev->complete = s->state == SNAP_DONE;
		return 1;
	}
	return 0;
}

int
snap_end_pending(const struct coord *c, const struct snap *s)
{
	if (s->ended_gen != c->batch_gen ||
	    (s->state != SNAP_DONE && s->state != SNAP_ABORTED))
		return 0;
	/* A turn whose begin failed, or one of whose writes failed, is
	 * lost, not committed: its ends, complete or aborted, are settled
	 * (aborted, unsaved) by coord_commit().  In an open, sound batch an
	 * abort is readable at once (reads see the batch's own writes); a
	 * completion is told only once committed. */
	if (c->begin_failed || c->write_failed)
		return 1;
	return s->state == SNAP_DONE && c->batch_open;
}

static void
expire(struct coord *c, struct snap *s)
{
	char reason[400], silent[200], all[2 * 400 + 4];
	int root;

	if (s->initiator != c->self) {
		root = local_reason(c, s, reason, sizeof(reason));
		give_up(c, s, reason, root);
		return;
	}
	if (s->state == SNAP_RUNNING) {
		root = local_reason(c, s, reason, sizeof(reason));
		add_reason(s, reason, root);
	}
	silent_nodes(c, s, silent, sizeof(silent));
	snprintf(all, sizeof(all), "%s%s%.399s", silent,
	         silent[0] && s->reasons[0] ? "; " : "", s->reasons);
	snprintf(reason, sizeof(reason), "%.399s", all);
	if (reason[0] == '\0')
		snprintf(reason, sizeof(reason),
		         "parts not complete by the deadline");
	abort_snap(c, s, reason);
}

/* Parts told to their initiators at a start: the newest this many rows. */
#define STOPPED_TELL 64

struct stopped {
	struct coord *c;
	size_t seen, told;
};

static int
tell_one(const struct store_snapshot *row, void *arg)
{
	struct stopped *st = arg;
	struct coord *c = st->c;
	char reason[400];
	long init;

	if (st->seen++ == STOPPED_TELL)
		return 1;
	if (row->is_initiator || row->status != STORE_ABORTED ||
	    row->outcome_ms != 0 ||
	    (init = snap_initiator_of(c, row->id)) < 0 ||
	    (size_t)init == c->self || snap_find(c, row->id) != NULL)
		return 0;
	snprintf(reason, sizeof(reason), "%s: %.300s", c->name, row->reason);
	if (send_abort(c, (size_t)init, row->id, reason, 1) == 0)
		st->told++;
	return 0;
}

/* The parts an earlier run of this daemon ended by stopping or crashing
 * (aborted, their outcome not heard) are told to their initiators, as a
 * part given up while running is: a running snapshot ends sooner, and an
 * initiator that deleted the snapshot meanwhile (a marker held back by a
 * partition recorded it here again) deletes this copy again
 * (sched_forget_late()).  Once, when the start's batch has committed. */
static void
tell_stopped(struct coord *c)
{
	struct stopped st = {.c = c};
	int rv;

	if (!c->tell_stopped || c->unfinished != 0 || c->degraded[0] != '\0')
		return;
	c->tell_stopped = 0;
	rv = DB(c, list, tell_one, &st);
	if (rv != 0 && rv != 1)
		log_warnx("cannot read the parts the last run ended: %s",
		          DB_ERR(c));
	else if (st.told > 0)
		log_info("%zu parts the last run ended told to their initiators",
		         st.told);
}

void
snap_timers(struct coord *c)
{
	struct snap *s, *next;

	tell_stopped(c);
	for (s = c->snaps; s != NULL; s = next) {
		next = s->next;
		if ((s->state == SNAP_RUNNING || s->state == SNAP_WAITING) &&
		    c->now >= s->deadline_ms)
			expire(c, s);
		/* An end not yet written stays until it is. */
		if ((s->state == SNAP_DONE || s->state == SNAP_ABORTED) &&
		    !s->unsaved && c->now - s->ended_ms > KEEP_ENDED_MS) {
			if (s->end_told == 1)
				c->ends_untold--; /* no one took events */
			engine_forget(c->eng, s->id);
			snap_unlink(c, s);
			snap_free(s);
		}
	}
}

int
snap_next_timer(struct coord *c, int max)
{
	int64_t ms = max;

	for (const struct snap *s = c->snaps; s != NULL; s = s->next)
		if ((s->state == SNAP_RUNNING || s->state == SNAP_WAITING) &&
		    s->deadline_ms - c->now < ms)
			ms = s->deadline_ms - c->now;
	return ms < 0 ? 0 : (int)ms;
}

void
snap_peer_restarted(struct coord *c, size_t node)
{
	char reason[128];

	snprintf(reason, sizeof(reason), "%s restarted",
	         c->cfg->nodes[node].name);
	abort_running(c, reason);
}

void
snap_tell_aborts_again(struct coord *c, size_t node)
{
	size_t n = 0;

	/* The aborts this node sent node's last run went with its link.
	 * Most are moot (its restart ended what it ran), but one may be
	 * how node learns that this node holds a snapshot node deleted
	 * (recorded here from a late marker after the deletion had come:
	 * snap_abort_msg() deletes it here again).  Only the initiator's
	 * ids, so told twice it ignores them. */
	for (struct snap *s = c->snaps; s != NULL; s = s->next)
		if (s->initiator == node && s->told_abort &&
		    s->state == SNAP_ABORTED &&
		    send_abort(c, node, s->id, s->why, 0) == 0)
			n++;
	if (n > 0)
		log_info("%zu aborts told again to %s, which restarted", n,
		         c->cfg->nodes[node].name);
}

static void
part_complete(struct coord *c, struct snap *s)
{
	if (s->initiator == c->self) {
		s->state = SNAP_WAITING;
		asm_own_part(c, s);
		return;
	}
	/* The part is read back from the database: once a write of this
	 * batch failed, SQLite may have rolled back the recorded messages
	 * it holds, and the initiator would complete the snapshot with them
	 * missing.  The batch is lost anyway (coord_commit()). */
	if (c->write_failed) {
		snap_give_up(c, s, "cannot store its part");
		return;
	}
	coord_db(c);
	if (DB(c, finish, s->id, STORE_COMPLETE, NULL, c->wall) != 0)
		coord_write_failed(c, "cannot store the part's end");
	s->state = SNAP_DONE;
	s->ended_ms = c->now;
	s->ended_gen = c->batch_gen;
	snap_ended(c, s);
	/* It goes once this batch commits: sent now, a commit that then
	 * failed would leave the initiator completing the snapshot with a
	 * part this node does not hold. */
	s->part_due = 1;
	log_info("snapshot %s: part complete", s->id);
}

void
snap_committed(struct coord *c)
{
	for (struct snap *s = c->snaps; s != NULL; s = s->next) {
		if (!s->part_due)
			continue;
		s->part_due = 0;
		if (asm_send_part(c, s) != 0) {
			char reason[400];
			snprintf(reason, sizeof(reason),
			         "%s: cannot send its part to the initiator",
			         c->name);
			give_up(c, s, reason, 1);
			continue;
		}
		log_info("snapshot %s: part sent to %s", s->id,
		         c->cfg->nodes[s->initiator].name);
	}
}

static void
channel_done(struct coord *c, struct snap *s, const struct engine_action *a)
{
	struct part_chan *pc = &s->in[a->chan];
	struct store_channel sc;

	pc->m = a->m;
	pc->n = a->n;
	pc->done = 1;
	memset(&sc, 0, sizeof(sc));
	sc.src = c->cfg->nodes[pc->src].name;
	sc.dst = c->name;
	sc.m = pc->m;
	sc.n = pc->n;
	sc.recorded = pc->seqs.count;
	sc.first_seq = pc->seqs.first;
	sc.last_seq = pc->seqs.last;
	sc.consecutive = pc->seqs.consecutive;
	coord_db(c);
	if (DB(c, put_channel, s->id, &sc) != 0)
		snap_give_up(c, s, "cannot store a recorded channel");
}

static void
record(struct coord *c, struct snap *s, const struct engine_action *a,
       const struct delivery *dl)
{
	struct part_chan *pc = &s->in[a->chan];

	if (engine_cut(c->eng) == ENGINE_CUT_UNALIGNED && !s->state_recorded) {
		/* Stored once the reply says where the queued range ends. */
		if (pc->def_lo == 0)
			pc->def_lo = a->seq;
		pc->def_hi = a->seq;
		return;
	}
	coord_db(c);
	if (DB(c, put_message, s->id, c->cfg->nodes[pc->src].name, c->name,
	       a->seq, dl->content_type, dl->payload, dl->len) != 0) {
		snap_give_up(c, s, "cannot store a recorded message");
		return;
	}
	coord_stats_recorded(c, dl->len);
	audit_seqs_add(&pc->seqs, a->seq);
}

/* Records one queued message of a RECORD_QUEUED range. */
struct queued {
	struct coord *c;
	struct snap *s;
	struct part_chan *pc;
};

static int
record_queued(void *arg, uint64_t app_seq, const char *ctype,
              const void *payload, size_t len)
{
	struct queued *q = arg;
	struct coord *c = q->c;

	if (DB(c, put_message, q->s->id, c->cfg->nodes[q->pc->src].name,
	       c->name, app_seq, coord_ctype(ctype), payload, len) != 0)
		return -1;
	coord_stats_recorded(c, len);
	audit_seqs_add(&q->pc->seqs, app_seq);
	return 0;
}

/* Stores the recorded messages first .. last of channel chan of s from
 * the down stream, where they wait untaken. */
static void
store_queued(struct coord *c, struct snap *s, size_t chan, uint64_t first,
             uint64_t last)
{
	struct queued q = {c, s, &s->in[chan]};

	coord_db(c);
	if (app_queued(c, q.pc->src, first, last - first + 1, record_queued,
	               &q) != 0)
		snap_give_up(c, s, "cannot store a recorded message");
}

/* The messages a->seq .. a->seq + a->count - 1 of channel a->chan were
 * queued for the application, not taken, when it recorded: they are
 * channel state, recorded from the down stream, and so are the ones the
 * engine recorded while the request was pending, which follow them. */
static void
record_range(struct coord *c, struct snap *s, const struct engine_action *a)
{
	struct part_chan *pc = &s->in[a->chan];
	uint64_t last = a->seq + a->count - 1;

	if (pc->def_lo != 0 && pc->def_hi > last)
		last = pc->def_hi;
	pc->def_lo = pc->def_hi = 0;
	store_queued(c, s, a->chan, a->seq, last);
}

/* After an unaligned reply, before its actions: stores what was recorded
 * while the request was pending on the channels that have no queued range
 * (record_range() stores it for the others, after their range). */
static void
store_deferred(struct coord *c, struct snap *s)
{
	const struct engine_action *acts;
	size_t n;

	acts = engine_actions(c->eng, &n);
	for (size_t i = 0; i < c->n_in && s->state != SNAP_ABORTED; i++) {
		struct part_chan *pc = &s->in[i];
		int ranged = 0;
		for (size_t k = 0; k < n; k++)
			ranged |= acts[k].kind == ENGINE_RECORD_QUEUED &&
			          acts[k].chan == i;
		if (pc->def_lo != 0 && !ranged) {
			uint64_t lo = pc->def_lo, hi = pc->def_hi;
			pc->def_lo = pc->def_hi = 0;
			store_queued(c, s, i, lo, hi);
		}
	}
}

/* Carries out the actions of the last engine event.  dl is the message
 * being delivered, if the event was a delivery. */
static int
perform(struct coord *c, const struct delivery *dl)
{
	const struct engine_action *acts;
	size_t n;
	int rv = 0;

	acts = engine_actions(c->eng, &n);
	for (size_t i = 0; i < n; i++) {
		const struct engine_action *a = &acts[i];
		struct snap *s = snap_find(c, a->snap);

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
			rv = app_request_state(c, s->id);
			break;
		case ENGINE_SEND_MARKER:
			rv = send_marker(c, c->out_node[a->chan], s, a->count);
			break;
		case ENGINE_RECORD_MESSAGE:
			if (dl != NULL)
				record(c, s, a, dl);
			break;
		case ENGINE_RECORD_QUEUED:
			record_range(c, s, a);
			break;
		case ENGINE_CHANNEL_DONE:
			channel_done(c, s, a);
			break;
		case ENGINE_PART_COMPLETE:
			part_complete(c, s);
			break;
		}
		if (rv != 0) {
			/* A state request or a marker could not be queued
			 * (memory, a full link): the snapshot cannot finish. */
			char why[128];
			snprintf(why, sizeof(why), "cannot %s: %s",
			         a->kind == ENGINE_REQUEST_STATE
			             ? "request the local state"
			             : "send a marker",
			         err_str(rv));
			snap_abandon(c, s->id, why);
			rv = 0;
		}
	}
	return 0;
}
