/*
 * coord_route.c - a batch from a peer, from the top: the link layer
 * (coord_peer.c) checks its header, binds its connection and puts its
 * items in order; this file hands each in-order item to the layer it is
 * for (snapshots, assembly, outcomes and deletions, restore), and tells
 * those layers when the peer restarted.  The layers below never call up
 * into the ones above them: what they learn from a batch comes back here
 * as a return value.
 */
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "log.h"

/* Hands one in-order item of the link from p to the layer it is for. */
static void
route(struct coord *c, struct peer *p, const Cut__V1__PeerItem *it)
{
	const char *from = c->cfg->nodes[p->node].name;
	int rv = 0;

	switch (it->item_case) {
	case CUT__V1__PEER_ITEM__ITEM_DATA:
		if (it->data->payload.len > c->cfg->max_message ||
		    coord_ctype(it->data->content_type) == NULL) {
			rv = E_INVAL;
			break;
		}
		rv = snap_data(c, p->node, it->data->app_seq,
		               coord_ctype(it->data->content_type),
		               it->data->payload.data, it->data->payload.len);
		break;
	case CUT__V1__PEER_ITEM__ITEM_MARKER:
		/* The same bounds as a Start request's timeout. */
		if (it->marker->has_timeout_ms &&
		    (it->marker->timeout_ms < 100 ||
		     it->marker->timeout_ms > 3600000)) {
			rv = E_INVAL;
			break;
		}
		rv = snap_marker(
		    c, p->node, it->marker->snapshot_id, it->marker->count,
		    it->marker->has_timeout_ms ? it->marker->timeout_ms : 0);
		if (rv == E_DUP || rv == E_STATE) {
			log_debug("late or duplicate marker %s from %s",
			          it->marker->snapshot_id, from);
			rv = 0;
		}
		break;
	case CUT__V1__PEER_ITEM__ITEM_PART:
		rv = asm_part(c, p->node, it->part);
		break;
	case CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES:
		rv = asm_part_messages(c, p->node, it->part_messages);
		break;
	case CUT__V1__PEER_ITEM__ITEM_ABORT:
		rv = snap_abort_msg(c, p->node, it->abort->snapshot_id,
		                    it->abort->reason, it->abort->root_cause);
		break;
	case CUT__V1__PEER_ITEM__ITEM_OUTCOME:
		rv = sched_outcome(c, p->node, it->outcome);
		break;
	case CUT__V1__PEER_ITEM__ITEM_OUTCOME_ASK:
		sched_outcome_ask(c, p->node);
		break;
	case CUT__V1__PEER_ITEM__ITEM_FORGET:
		rv = sched_forget(c, p->node, it->forget);
		break;
	case CUT__V1__PEER_ITEM__ITEM_FORGOTTEN:
		rv = sched_forgotten(c, p->node, it->forgotten);
		break;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_PREPARE:
		rv = restore_prepare(c, p->node, it->restore_prepare);
		break;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_VOTE:
		rv = restore_vote(c, p->node, it->restore_vote);
		break;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_ABORT:
		rv = restore_abort_msg(c, p->node, it->restore_abort);
		break;
	case CUT__V1__PEER_ITEM__ITEM_RESTORE_DONE:
		rv = restore_done(c, p->node, it->restore_done);
		break;
	case CUT__V1__PEER_ITEM__ITEM_RENUMBER: {
		uint64_t numbering = it->renumber->has_numbering
		                         ? it->renumber->numbering
		                         : p->epoch;
		if (numbering != 0 && numbering == p->in_numbering) {
			log_debug("the channel from %s numbers so already",
			          from);
			break;
		}
		log_notice("the channel from %s numbers from 1 again: its "
		           "daemon and application both started afresh",
		           from);
		rv = snap_resume_in(c, p->node, 0);
		p->old_items = app_queued_from(c, p->node);
		p->renum_next = 1;
		p->renum_epoch = p->in_numbering = numbering != 0 ? numbering : 1;
		break;
	}
	default:
		rv = E_INVAL;
	}
	if (rv != 0)
		coord_peer_bad(c, from, err_str(rv));
}

/* A new epoch from p, on its bound connection (so the peer's restart,
 * not a stranger's say-so): both links start afresh, what its
 * application had not taken goes again, and every layer hears of it. */
static void
new_epoch(struct coord *c, struct peer *p, uint64_t epoch)
{
	if (p->epoch != 0) {
		snap_peer_restarted(c, p->node);
		if (peer_restarted(c, p) == 0)
			snap_tell_aborts_again(c, p->node);
	} else {
		peer_first_epoch(c, p);
	}
	p->epoch = epoch;
	sched_peer_epoch(c, p->node);
}

void
coord_peer_input(struct coord *c, uint32_t conn, const Cut__V1__PeerBatch *b)
{
	struct peer *p;
	uint64_t gen;
	int for_us;

	if ((p = peer_bound(c, b, conn)) == NULL)
		return;
	if (b->has_epoch && b->epoch != 0 && b->epoch != p->epoch)
		new_epoch(c, p, b->epoch);
	p->last_seen_ms = c->wall;
	p->heard_ms = c->now;
	if (restore_batch(c, p, b->has_generation ? b->generation : 0) != 0)
		return;
	for_us = b->has_to_epoch && b->to_epoch == c->epoch;
	gen = c->rs.gen;
	/* A restore committed by an item of this batch ends it: the rest
	 * belongs to the old links. */
	for (size_t i = 0; i < b->n_items && c->rs.gen == gen; i++) {
		Cut__V1__PeerItem *h;
		if (!peer_item(c, p, b->items[i], for_us))
			continue;
		route(c, p, b->items[i]);
		while ((h = peer_release(c, p)) != NULL) {
			route(c, p, h);
			cut__v1__peer_item__free_unpacked(h, NULL);
		}
	}
}
