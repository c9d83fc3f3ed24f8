/*
 * coord_app_in.c - the up stream from the application, from the top:
 * hellos (where libcut stands on each channel, renumbering), sends, taken
 * counts, state replies and restore answers, each handed to its layer
 * (the application streams below, coord_app.c; snapshots; restore).  The
 * down stream and the connection's state are coord_app.c's, which calls
 * none of the layers above it for what comes up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "cutproto.h"
#include "log.h"

/* Takes in where libcut stands on each channel (AppHello.resume): a daemon
 * that restarted resumes the numbering there, and what the application
 * already has is not sent to it again. */
static void
resume(struct coord *c, const Cut__V1__AppHello *h)
{
	for (size_t i = 0; i < h->n_resume; i++) {
		const Cut__V1__AppResume *r = h->resume[i];
		int node = config_node_index(c->cfg, r->node);
		struct peer *p;

		if (node < 0 || (size_t)node == c->self)
			continue;
		p = &c->peers[node];
		if (p->out_chan >= 0 && r->has_out_taken) {
			uint64_t sent =
			    engine_sent_count(c->eng, (size_t)p->out_chan);
			if (r->out_taken > sent)
				snap_resume_out(c, (size_t)node, r->out_taken);
		}
		if (p->in_chan >= 0 && r->has_in_numbering &&
		    p->in_numbering == 0)
			p->in_numbering = r->in_numbering;
		if (p->in_chan >= 0 && r->has_in_taken &&
		    (p->renum_next || p->renum_unseen) &&
		    !(r->has_in_numbering &&
		      r->in_numbering == p->renum_epoch)) {
			/* libcut was not handed the first delivery of the
			 * channel's new numbering (none may have come yet):
			 * in_taken counts an older one, of which only what
			 * is still queued matters. */
			app_drop_had(c, (size_t)node, r->in_taken, HAD_OLD);
			continue;
		}
		if (p->in_chan >= 0 && r->has_in_taken) {
			if (r->in_taken >
			    engine_delivered_count(c->eng, (size_t)p->in_chan))
				snap_resume_in(c, (size_t)node, r->in_taken);
			else
				p->in_known = 1;
			app_drop_had(c, (size_t)node, r->in_taken,
			         p->renum_unseen ? HAD_NEW : HAD_ANY);
			/* What a snapshot counts as taken (m), and what the
			 * sender may forget. */
			if (r->in_taken > p->taken) {
				p->taken = r->in_taken;
				if (p->ack_due_ms == 0)
					p->ack_due_ms = c->now;
			}
		}
	}
}

/* The first application of this run that knows nothing of a channel
 * (libcut resumed none) while this daemon sent nothing on it either:
 * nobody holds the old numbering, so it starts again from 1 (numbering
 * this run's epoch), and the receiver is told (PeerRenumber) before the
 * first message.  One that resumes a numbering of which none was reported
 * taken announces it again: the run that began it may have died before
 * the receiver heard it (a receiver that did ignores it). */
static void
renumber(struct coord *c, const Cut__V1__AppHello *h)
{
	for (size_t i = 0; i < c->n_out; i++) {
		size_t node = c->out_node[i];
		struct peer *p = &c->peers[node];
		const Cut__V1__AppResume *known = NULL;
		uint64_t numbering = c->epoch;

		if (p->out_numbered)
			continue;
		p->out_numbered = 1;
		for (size_t k = 0; k < h->n_resume; k++)
			if (h->resume[k]->has_out_taken &&
			    strcmp(h->resume[k]->node,
			           c->cfg->nodes[node].name) == 0)
				known = h->resume[k];
		if (known != NULL && known->has_out_numbering &&
		    known->out_numbering != 0)
			p->out_numbering = numbering = known->out_numbering;
		if (engine_sent_count(c->eng, (size_t)p->out_chan) > 0 ||
		    (known != NULL &&
		     (known->out_taken > 0 || !known->has_out_numbering)))
			continue;
		if (snap_renumber(c, node, numbering) != 0)
			log_err(
			    "cannot tell %s that the channel numbers from 1",
			    c->cfg->nodes[node].name);
	}
}

/* Whether the application has been handed a message that came after
 * request r (it took it unanswered, its callback having failed, or it
 * answered on a connection that closed before the reply came). */
static int
passed(const struct coord *c, const struct appreq *r)
{
	for (size_t i = 0; i < c->n_in; i++)
		if (c->peers[c->in_node[i]].taken > r->upto[i])
			return 1;
	return 0;
}

/* A new application said hello on conn.  What the previous one was sent
 * and did not take goes again, positions count from 0, and each channel's
 * credit is told afresh.  A pending state request goes again, except one
 * whose place in the stream the application passed (the taken counts its
 * hello resumed say so), or an aligned one behind what the old one took:
 * that cut is gone (an answer now would hold messages after it, which
 * the engine refuses for the unaligned cut and cannot see for the
 * aligned one), so its snapshot is given up. */
static void
new_connection(struct coord *c, uint32_t conn)
{
	struct appreq *r, *next;

	c->app_hello = conn;
	c->app_gone = 0;
	/* A new libcut says whether it can restore after its hello; one
	 * that had not answered a restore gets it again. */
	c->rs.restorable = 0;
	if (c->rs.app_wait)
		c->rs.app_due = 1;
	c->down_sent = 0;
	c->down_base = 0;
	c->down_sent_bytes = 0;
	for (size_t i = 0; i < c->n_out; i++) {
		struct peer *p = &c->peers[c->out_node[i]];
		p->accepted = 0;
		p->credit_force = 1;
	}
	for (r = c->reqs; r != NULL; r = next) {
		next = r->next;
		if (!passed(c, r) && (r->overtake || r->at >= c->down_head_abs))
			r->sent = 0;
		else
			snap_abandon(c, r->id,
			             "the application reconnected before "
			             "answering the state request");
	}
}

static void
hello(struct coord *c, uint32_t conn, const Cut__V1__AppHello *h)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppHelloReply r = CUT__V1__APP_HELLO_REPLY__INIT;
	char *peers[CONFIG_MAX_NODES];
	uint64_t sent[CONFIG_MAX_NODES], numbering[CONFIG_MAX_NODES];
	size_t n = 0;

	if (h->version != CUTPROTO_APP_VERSION) {
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__VERSION,
		    "unsupported application protocol version");
		return;
	}
	if (h->node[0] != '\0' && strcmp(h->node, c->name) != 0) {
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__WRONG_NODE,
		    "this daemon serves another node");
		return;
	}
	/* Waiting on a restore, the positions libcut resumes may be from
	 * before it: the restore sets them (AppRestore). */
	if (!c->rs.app_wait) {
		resume(c, h);
		renumber(c, h);
	}
	for (size_t i = 0; i < c->n_out; i++) {
		struct peer *p = &c->peers[c->out_node[i]];
		peers[n] = c->cfg->nodes[c->out_node[i]].name;
		numbering[n] = p->out_numbering;
		sent[n++] = engine_sent_count(c->eng, (size_t)p->out_chan);
		p->resend_upto = 0;
	}
	/* What libcut sends again went within a window once; not so the
	 * positions of a libcut that has not taken a restore yet. */
	for (size_t i = 0; i < h->n_resume && !c->rs.app_wait; i++) {
		int node = config_node_index(c->cfg, h->resume[i]->node);
		if (node >= 0 && (size_t)node != c->self &&
		    h->resume[i]->has_out_sent)
			c->peers[node].resend_upto = h->resume[i]->out_sent;
	}
	r.node = (char *)c->name;
	r.version = CUTPROTO_APP_VERSION;
	r.cluster = c->cfg->cluster;
	r.peers = peers;
	r.n_peers = n;
	r.sent = sent;
	r.n_sent = n;
	r.numbering = numbering;
	r.n_numbering = n;
	r.max_message_size = (uint32_t)c->cfg->max_message;
	r.has_window_bytes = 1;
	r.window_bytes = c->cfg->window;
	r.has_message_cost = 1;
	r.message_cost = (uint32_t)c->cfg->message_cost;
	it.item_case = CUT__V1__APP_ITEM__ITEM_HELLO_REPLY;
	it.hello_reply = &r;
	app_send_now(c, conn, &it);
	new_connection(c, conn);
	log_info("application connected");
}

static void
app_send(struct coord *c, uint32_t conn, const Cut__V1__AppSend *s)
{
	int rv;

	if (s->payload.len > c->cfg->max_message) {
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__TOO_LARGE,
		    "message larger than max_message");
		return;
	}
	if (coord_ctype(s->content_type) == NULL) {
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "bad content type");
		return;
	}
	if (s->has_seq && s->seq == 0) {
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "message sequence number 0");
		return;
	}
	rv = snap_app_send(c, s->to, coord_ctype(s->content_type),
	                   s->payload.data, s->payload.len,
	                   s->has_seq ? s->seq : 0);
	if (rv == E_DUP)
		return; /* sent again after a reconnect; we have it */
	if (rv == E_NOCHAN)
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__UNKNOWN_NODE,
		    "no channel to that node");
	else if (rv == E_GAP)
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__SEQ_GAP,
		    "message sequence number leaves a gap; message not sent");
	else if (rv == E_FULL)
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BACKPRESSURE,
		    "send beyond the channel's window; message not sent");
	else if (rv != 0)
		app_error(c, conn, CUT__V1__APP_ERROR__CODE__BACKPRESSURE,
		          "out of memory; message not sent");
}

static void
state_reply(struct coord *c, uint32_t conn, const Cut__V1__AppStateReply *r)
{
	int rv =
	    snap_state_reply(c, r->snapshot_id, coord_ctype(r->content_type),
	                     r->state.data, r->state.len);

	if (rv == 0)
		return;
	/* Late: the snapshot was aborted (a peer restarted, say) while the
	 * application was answering, or an earlier run of this daemon asked.
	 * The application did nothing wrong. */
	if (rv == E_STATE) {
		log_info("state reply for %s: not running here; dropped",
		         r->snapshot_id);
		return;
	}
	/* Refused by the engine (the handed counts do not fit the cut): the
	 * snapshot ends without this state, and the log says why. */
	log_warnx("state reply for %s refused: %s", r->snapshot_id,
	          err_str(rv));
	app_error(c, conn, CUT__V1__APP_ERROR__CODE__UNKNOWN_SNAPSHOT,
	          "no state request pending for that snapshot");
}

/* Handles one item that arrived on connection conn.  Only the connection
 * that said hello may send anything else. */
static void
item(struct coord *c, uint32_t conn, const Cut__V1__AppItem *it)
{
	if (it->item_case == CUT__V1__APP_ITEM__ITEM_HELLO) {
		hello(c, conn, it->hello);
		return;
	}
	if (conn == 0 || conn != c->app_hello) {
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__NO_HELLO,
		    "item before hello");
		return;
	}
	/* Until libcut has taken a restore, what it sends, takes or
	 * answers belongs to before the restore. */
	if (c->rs.app_wait &&
	    (it->item_case == CUT__V1__APP_ITEM__ITEM_SEND ||
	     it->item_case == CUT__V1__APP_ITEM__ITEM_TAKEN ||
	     it->item_case == CUT__V1__APP_ITEM__ITEM_STATE_REPLY))
		return;
	switch (it->item_case) {
	case CUT__V1__APP_ITEM__ITEM_RESTORABLE:
		restore_app_restorable(c, it->restorable->yes);
		break;
	case CUT__V1__APP_ITEM__ITEM_RESTORED:
		restore_app_restored(c, it->restored);
		break;
	case CUT__V1__APP_ITEM__ITEM_SEND:
		app_send(c, conn, it->send);
		break;
	case CUT__V1__APP_ITEM__ITEM_TAKEN:
		if (app_take_upto(c, it->taken->handed) != 0)
			app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "taken count out of range");
		break;
	case CUT__V1__APP_ITEM__ITEM_STATE_REPLY:
		if (app_take_upto(c, it->state_reply->handed) != 0)
			app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "state reply's handed count out of range");
		else if (it->state_reply->state.len > c->cfg->max_message)
			app_bad(c, conn, CUT__V1__APP_ERROR__CODE__TOO_LARGE,
			    "state larger than max_message");
		else if (coord_ctype(it->state_reply->content_type) == NULL)
			app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
			    "bad content type");
		else
			state_reply(c, conn, it->state_reply);
		break;
	case CUT__V1__APP_ITEM__ITEM_SYNC: {
		/* Everything the application sent before it has been read:
		 * say so at once (cut_flush()). */
		Cut__V1__AppItem r = CUT__V1__APP_ITEM__INIT;
		r.item_case = CUT__V1__APP_ITEM__ITEM_SYNCED;
		r.synced = it->sync;
		app_send_now(c, conn, &r);
		break;
	}
	default:
		app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
		    "item an application does not send");
	}
}

void
coord_app_bad(struct coord *c, uint32_t conn, const char *what)
{
	app_bad(c, conn, CUT__V1__APP_ERROR__CODE__BAD_ITEM, what);
}

void
coord_app_input(struct coord *c, uint32_t conn, const Cut__V1__AppBatch *b)
{
	for (size_t k = 0; k < b->n_items; k++)
		item(c, conn, b->items[k]);
}

