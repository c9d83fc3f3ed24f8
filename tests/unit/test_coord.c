/*
 * test_coord.c - the coordinator (daemon/core/coord*.c) through its events
 * and actions only (coord.h): node p0 of a three-node cluster on a real
 * store, peers and the application played by the test (coord_harness.h).
 *
 * Suites, after the state machines they drive:
 *
 *   snap    a snapshot's life at one node (coord_snap.c's diagram):
 *           RUNNING -> DONE (participant), RUNNING -> WAITING -> DONE
 *           (initiator, audited), the aligned and unaligned cuts,
 *           expiry of ended snapshots, coord_stop();
 *   abort   every way to ABORTED, each with the reason it must give;
 *   link    the reliable links (coord_peer.c's diagram): order, held
 *           items, duplicates, acks and taken counts, resends, rewinds,
 *           heartbeats, restarts;
 *   conn    binding listener connections to peers, refusals, takeovers,
 *           silence;
 *   app     the application's streams (coord_app.c): hello, errors,
 *           windows and credit, state requests, resume, renumbering;
 *   batch   the turn's batch of writes (coord.c's diagram) and storage
 *           faults: commit, busy, begin failure, degraded mode and
 *           recovery.
 *
 * Time is simulated: nothing here sleeps.  What a test asserts is what
 * came out (frames decoded field by field), what the database holds
 * (rows, states, channels, messages) and what the queries say.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "coord_harness.h"

#define ITEM_DATA     CUT__V1__PEER_ITEM__ITEM_DATA
#define ITEM_MARKER   CUT__V1__PEER_ITEM__ITEM_MARKER
#define ITEM_ACK      CUT__V1__PEER_ITEM__ITEM_ACK
#define ITEM_HELLO    CUT__V1__PEER_ITEM__ITEM_HELLO
#define ITEM_PART     CUT__V1__PEER_ITEM__ITEM_PART
#define ITEM_MESSAGES CUT__V1__PEER_ITEM__ITEM_PART_MESSAGES
#define ITEM_ABORT    CUT__V1__PEER_ITEM__ITEM_ABORT
#define ITEM_RENUMBER CUT__V1__PEER_ITEM__ITEM_RENUMBER

#define APP_DELIVER CUT__V1__APP_ITEM__ITEM_DELIVER
#define APP_REQUEST CUT__V1__APP_ITEM__ITEM_STATE_REQUEST
#define APP_CREDIT  CUT__V1__APP_ITEM__ITEM_CREDIT

/* A snapshot of p1's, as p1 would name it. */
#define P1_SNAP "p1:5"

/* Asserts that s contains sub. */
#define HAS(s, sub)                                                            \
	cr_assert_not_null(strstr((s), (sub)), "\"%s\" lacks \"%s\"", (s),    \
	                   (sub))

static struct h *
linked(const char *extra)
{
	struct h *h = h_new(extra);

	h_link(h);
	return h;
}

/* An ack from `from` of p0's link items up to upto, with the taken count
 * of the channel p0 -> from. */
static void
ack(struct h *h, const char *from, uint64_t upto, uint64_t taken)
{
	struct pb b;

	pb_init(&b, from);
	pb_ack(&b, upto, 1, taken);
	h_peer(h, strcmp(from, "p1") == 0 ? H_C1 : H_C2, &b);
}

/* p0 with its links up and its application connected on H_APP, the
 * application's first frame (credit) taken, and the peers' (PeerRenumber,
 * item 1) taken and acknowledged. */
static struct h *
ready(const char *extra)
{
	struct h *h = linked(extra);
	struct h_app_items ai = {0};

	h_hello(h, H_APP);
	h_app_items(h, &ai);
	h_drain(h);
	ack(h, "p1", 1, 0);
	ack(h, "p2", 1, 0);
	return h;
}

/* The state request for id among items, or NULL. */
static const Cut__V1__AppStateRequest *
request_of(const struct h_app_items *ai, const char *id)
{
	for (size_t i = 0; i < ai->n; i++)
		if (ai->v[i]->item_case == APP_REQUEST &&
		    strcmp(ai->v[i]->state_request->snapshot_id, id) == 0)
			return ai->v[i]->state_request;
	return NULL;
}

/* The next frames to the application must hold a state request for id;
 * returns it. */
static const Cut__V1__AppStateRequest *
want_request(struct h *h, const char *id)
{
	struct h_app_items ai = {0};
	const Cut__V1__AppStateRequest *r;

	h_app_items(h, &ai);
	r = request_of(&ai, id);
	cr_assert_not_null(r, "no state request for %s", id);
	return r;
}

static void
want_row(struct h *h, const char *id, enum store_status status,
         struct store_snapshot *row)
{
	int rv = h_row(h, id, row);

	cr_assert_eq(rv, 0, "no row for %s: %s", id, err_str(rv));
	cr_assert_eq(row->status, status, "%s: status %d, want %d (%s)", id,
	             row->status, status, row->reason);
}

/* ---- snap: a snapshot's life ---- */

/* A participant: the first marker makes it RUNNING and asks the
 * application; its reply sends the markers on; the last channel's marker
 * completes the part, which goes to the initiator (DONE). */
Test(snap, participant_running_to_done)
{
	struct h *h = ready(NULL);
	const Cut__V1__AppStateRequest *rq;
	struct coord_snap_view v;
	struct store_snapshot row;
	struct store_channel ch;
	struct h_items it = {0};
	const Cut__V1__PeerPart *part;
	const Cut__V1__PeerMarker *mk;
	char state[64];

	h_marker(h, "p1", 1, P1_SNAP, 0);
	v = h_view(h, P1_SNAP);
	cr_assert(v.known && v.running && !v.ended && !v.initiator);
	want_row(h, P1_SNAP, STORE_IN_PROGRESS, &row);
	cr_assert_str_eq(row.initiator, "p1");
	cr_assert_eq(row.is_initiator, 0);
	cr_assert_eq(row.parts_expected, 3);
	rq = want_request(h, P1_SNAP);
	cr_assert(rq->has_overtake && rq->overtake, "unaligned by default");
	/* Nothing goes on before the state is in. */
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_MARKER), 0);

	h_reply(h, P1_SNAP, "{\"b\": 1}", 0);
	cr_assert(h_state(h, P1_SNAP, "p0", state, sizeof(state)));
	cr_assert_str_eq(state, "{\"b\": 1}");
	cr_assert(h_channel(h, P1_SNAP, "p1", "p0", &ch));
	cr_assert_eq(ch.m, 0);
	cr_assert_eq(ch.n, 0);
	v = h_view(h, P1_SNAP);
	cr_assert(v.running);
	cr_assert_eq(v.channels_recording, 1, "p2 -> p0 still open");

	h_marker(h, "p2", 1, P1_SNAP, 0);
	v = h_view(h, P1_SNAP);
	cr_assert(!v.running && !v.ended,
	          "complete, but not told before its batch commits");
	h_commit(h);
	v = h_view(h, P1_SNAP);
	cr_assert(v.ended);
	want_row(h, P1_SNAP, STORE_COMPLETE, &row);
	cr_assert_str_eq(h_disk_status(h, P1_SNAP), "complete");

	/* p1 gets the marker (after the renumbering, item 1) and the part;
	 * nothing was recorded, so no chunk follows. */
	h_pull_items(h, 1, &it);
	cr_assert_not_null(h_find(&it, ITEM_MARKER, 0));
	mk = h_find(&it, ITEM_MARKER, 0)->marker;
	cr_assert_eq(mk->seq, 2);
	cr_assert_str_eq(mk->snapshot_id, P1_SNAP);
	cr_assert_eq(mk->count, 0);
	cr_assert(mk->has_timeout_ms && mk->timeout_ms == 10000,
	          "the cluster's deadline, passed on");
	cr_assert_not_null(h_find(&it, ITEM_PART, 0));
	part = h_find(&it, ITEM_PART, 0)->part;
	cr_assert_eq(part->seq, 3);
	cr_assert_str_eq(part->snapshot_id, P1_SNAP);
	cr_assert_str_eq(part->node, "p0");
	cr_assert_str_eq(part->content_type, "application/json");
	cr_assert_eq(part->state.len, strlen("{\"b\": 1}"));
	cr_assert_eq(memcmp(part->state.data, "{\"b\": 1}", part->state.len),
	             0);
	cr_assert_eq(part->n_channels, 2);
	cr_assert_str_eq(part->channels[0]->src, "p1");
	cr_assert_str_eq(part->channels[1]->src, "p2");
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(part->channels[i]->m, 0);
		cr_assert_eq(part->channels[i]->n, 0);
		cr_assert_eq(part->channels[i]->count, 0);
		cr_assert(part->channels[i]->consecutive);
	}
	cr_assert_eq(h_count(&it, ITEM_MESSAGES), 0);
	/* p2 gets only the marker: parts go to the initiator. */
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 2, &it);
	cr_assert_eq(h_count(&it, ITEM_MARKER), 1);
	cr_assert_eq(h_count(&it, ITEM_PART), 0);
	h_free(h);
}

/* A message recorded on a channel travels after the part, in a
 * PeerPartMessages chunk marked final, read back from the database. */
Test(snap, participant_part_messages)
{
	struct h *h = ready(NULL);
	struct h_items it = {0};
	const Cut__V1__PeerPart *part;
	const Cut__V1__PeerPartMessages *pm;
	struct store_channel ch;
	uint64_t seqs[4];

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	/* Sent by p2 before its marker, delivered after p0 recorded. */
	h_data(h, "p2", 1, 1, "{\"amount\": 7}");
	h_marker(h, "p2", 2, P1_SNAP, 1);
	h_commit(h);
	cr_assert_eq(h_messages(h, P1_SNAP, "p2", "p0", seqs, 4), 1);
	cr_assert_eq(seqs[0], 1);
	cr_assert(h_channel(h, P1_SNAP, "p2", "p0", &ch));
	cr_assert_eq(ch.m, 0);
	cr_assert_eq(ch.n, 1);
	cr_assert_eq(ch.recorded, 1);
	cr_assert_eq(ch.first_seq, 1);
	cr_assert_eq(ch.last_seq, 1);

	h_pull_items(h, 1, &it);
	part = h_find(&it, ITEM_PART, 0)->part;
	cr_assert_str_eq(part->channels[1]->src, "p2");
	cr_assert_eq(part->channels[1]->count, 1);
	cr_assert_eq(part->channels[1]->first_seq, 1);
	cr_assert_eq(part->channels[1]->last_seq, 1);
	cr_assert_eq(part->channels[1]->n, 1);
	cr_assert_eq(h_count(&it, ITEM_MESSAGES), 1);
	pm = h_find(&it, ITEM_MESSAGES, 0)->part_messages;
	cr_assert_eq(pm->seq, part->seq + 1);
	cr_assert_str_eq(pm->snapshot_id, P1_SNAP);
	cr_assert_str_eq(pm->src, "p2");
	cr_assert(pm->final);
	cr_assert_eq(pm->n_messages, 1);
	cr_assert_eq(pm->messages[0]->seq, 1);
	cr_assert_str_eq(pm->messages[0]->content_type, "application/json");
	cr_assert_eq(memcmp(pm->messages[0]->payload.data, "{\"amount\": 7}",
	                    13),
	             0);
	h_free(h);
}

/* The parts p1 and p2 would send for a snapshot of p0's in which no
 * message was in transit; m and n of channel src -> from. */
static void
part_of(struct h *h, const char *from, uint64_t seq, const char *id,
        uint64_t n_from_other)
{
	struct pb b;
	const char *other = strcmp(from, "p1") == 0 ? "p2" : "p1";
	struct h_chan ch[2] = {
	    {"p0", 0, 0, 0, 0, 0, 1},
	    {other, 0, n_from_other, 0, 0, 0, 1},
	};

	pb_init(&b, from);
	pb_part(&b, seq, id, "{\"b\": 2}", 2, ch);
	h_peer(h, strcmp(from, "p1") == 0 ? H_C1 : H_C2, &b);
}

/* The initiator: Start makes it RUNNING; its own part complete makes it
 * WAITING; the last part in makes it DONE, audited consistent, told once
 * committed. */
Test(snap, initiator_running_waiting_done)
{
	struct h *h = ready(NULL);
	const char *id;
	char sid[ENGINE_ID_MAX + 1];
	struct coord_snap_view v;
	struct store_snapshot row;
	struct store_channel ch;
	struct h_items it = {0};
	const Cut__V1__PeerMarker *mk;
	char state[32];

	id = h_start(h, 0);
	snprintf(sid, sizeof(sid), "%s", id);
	cr_assert_str_eq(sid, "p0:4000000000000", "ids follow the wall clock");
	cr_assert_eq(coord_initiated_in_flight(h->c), 1);
	cr_assert_eq(coord_in_progress(h->c), 1);
	want_row(h, sid, STORE_IN_PROGRESS, &row);
	cr_assert_eq(row.is_initiator, 1);
	cr_assert_str_eq(row.initiator, "p0");
	h_commit(h);
	cr_assert_str_eq(h_disk_status(h, sid), "in_progress");
	v = h_view(h, sid);
	cr_assert(v.known && v.running && v.initiator && !v.ended);
	cr_assert_eq(v.parts_received, 0);

	want_request(h, sid);
	h_reply(h, sid, "{\"b\": 0}", 0);
	h_pull_items(h, 1, &it);
	mk = h_find(&it, ITEM_MARKER, 0)->marker;
	cr_assert_str_eq(mk->snapshot_id, sid);
	cr_assert_eq(mk->count, 0);
	cr_assert_eq(mk->timeout_ms, 10000);

	h_marker(h, "p1", 1, sid, 0);
	h_marker(h, "p2", 1, sid, 0);
	v = h_view(h, sid);
	cr_assert(v.running, "WAITING counts as running");
	cr_assert_eq(v.parts_received, 1, "its own");
	cr_assert_eq(v.channels_recording, 0);

	part_of(h, "p1", 2, sid, 0);
	v = h_view(h, sid);
	cr_assert_eq(v.parts_received, 2);
	cr_assert(v.running);
	part_of(h, "p2", 2, sid, 0);
	v = h_view(h, sid);
	cr_assert(!v.running);
	cr_assert(!v.ended, "not told before the commit");
	cr_assert_eq(v.parts_received, 3);
	cr_assert_str_eq(h_disk_status(h, sid), "in_progress");
	h_commit(h);
	cr_assert(h_view(h, sid).ended);
	cr_assert_str_eq(h_disk_status(h, sid), "complete");
	want_row(h, sid, STORE_COMPLETE, &row);
	cr_assert_eq(row.consistent, 1, "%s", row.audit_reason);
	cr_assert_eq(row.parts, 3);
	cr_assert_eq(row.channels, 6);
	cr_assert(h_state(h, sid, "p1", state, sizeof(state)));
	cr_assert_str_eq(state, "{\"b\": 2}");
	cr_assert(h_channel(h, sid, "p0", "p2", &ch));
	cr_assert_eq(coord_initiated_in_flight(h->c), 0);
	cr_assert_eq(coord_in_progress(h->c), 0);
	h_free(h);
}

/* A part whose channel does not add up: the audit says which, and the
 * snapshot is complete but inconsistent. */
Test(snap, initiator_inconsistent_audit)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	want_request(h, sid);
	h_reply(h, sid, "{}", 0);
	h_marker(h, "p1", 1, sid, 0);
	h_marker(h, "p2", 1, sid, 0);
	/* p1 says p2 sent it 2 messages before p2's cut, and recorded
	 * none of them. */
	part_of(h, "p1", 2, sid, 2);
	part_of(h, "p2", 2, sid, 0);
	h_commit(h);
	want_row(h, sid, STORE_COMPLETE, &row);
	cr_assert_eq(row.consistent, 0);
	HAS(row.audit_reason, "channel p2 -> p1: 2 in-transit messages not "
	                      "recorded (m=0, n=2, recorded 0)");
	cr_assert(h_view(h, sid).ended);
	h_free(h);
}

/*
 * The two cuts on the same history: p1's message 1 taken, 2 and 3 queued
 * and not yet sent to the application when p2's snapshot reaches p0,
 * message 4 arriving while the state request is pending, p1's marker
 * counting 4.  Unaligned, the request goes ahead of 2 and 3, the
 * application records after taking 1, and 2, 3 and 4 are in transit.
 * Aligned, the request waits behind 2 and 3, which the state holds, and
 * only 4 is in transit.
 */
static void
cut_history(struct h *h, struct h_app_items *ai)
{
	struct h_app_items first = {0};

	h_data(h, "p1", 1, 1, "{\"amount\": 1}");
	h_app_items(h, &first);
	cr_assert_eq(h_app_count(&first, APP_DELIVER), 1);
	h_taken(h, 1);
	h_data(h, "p1", 2, 2, "{\"amount\": 2}");
	h_data(h, "p1", 3, 3, "{\"amount\": 3}");
	h_marker(h, "p2", 1, "p2:9", 0);
	h_data(h, "p1", 4, 4, "{\"amount\": 4}");
	h_app_items(h, ai);
}

/* The kinds of the down stream's items in order, as a string: C credit,
 * D delivery, R state request. */
static void
kinds(const struct h_app_items *ai, char *buf)
{
	size_t k = 0;

	for (size_t i = 0; i < ai->n; i++)
		buf[k++] = ai->v[i]->item_case == APP_DELIVER   ? 'D'
		           : ai->v[i]->item_case == APP_REQUEST ? 'R'
		           : ai->v[i]->item_case == APP_CREDIT  ? 'C'
		                                                : '?';
	buf[k] = '\0';
}

Test(snap, unaligned_cut)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct h_items it = {0};
	struct store_channel ch;
	const Cut__V1__PeerPart *part;
	const Cut__V1__PeerPartMessages *pm;
	uint64_t seqs[8];
	char order[64];

	cut_history(h, &ai);
	kinds(&ai, order);
	cr_assert_str_eq(order, "RDDD", "the request overtakes 2, 3 and 4");
	cr_assert(ai.v[0]->state_request->overtake);
	cr_assert_eq(ai.v[1]->deliver->seq, 2);
	/* The application answers ahead of 2, 3 and 4: it had taken 1. */
	h_reply(h, "p2:9", "{\"b\": 9}", 1);
	cr_assert_eq(h_messages(h, "p2:9", "p1", "p0", seqs, 8), 3);
	cr_assert_eq(seqs[0], 2);
	cr_assert_eq(seqs[1], 3);
	cr_assert_eq(seqs[2], 4);
	h_marker(h, "p1", 5, "p2:9", 4);
	h_commit(h);
	cr_assert(h_channel(h, "p2:9", "p1", "p0", &ch));
	cr_assert_eq(ch.m, 1);
	cr_assert_eq(ch.n, 4);
	cr_assert_eq(ch.recorded, 3);
	cr_assert_eq(ch.first_seq, 2);
	cr_assert_eq(ch.last_seq, 4);
	cr_assert(ch.consecutive);
	h_pull_items(h, 2, &it);
	part = h_find(&it, ITEM_PART, 0)->part;
	cr_assert_str_eq(part->channels[0]->src, "p1");
	cr_assert_eq(part->channels[0]->m, 1);
	cr_assert_eq(part->channels[0]->count, 3);
	pm = h_find(&it, ITEM_MESSAGES, 0)->part_messages;
	cr_assert_eq(pm->n_messages, 3);
	cr_assert_eq(pm->messages[0]->seq, 2);
	cr_assert_eq(pm->messages[2]->seq, 4);
	cr_assert(pm->final);
	h_free(h);
}

Test(snap, aligned_cut)
{
	struct h *h = ready("cut = aligned\n");
	struct h_app_items ai = {0};
	struct store_channel ch;
	uint64_t seqs[8];
	char order[64];

	cut_history(h, &ai);
	kinds(&ai, order);
	cr_assert_str_eq(order, "DDRD",
	                 "the request keeps its place behind 2 and 3");
	cr_assert(!ai.v[2]->state_request->overtake);
	/* The application has been handed 1, 2 and 3 when it answers. */
	h_reply(h, "p2:9", "{\"b\": 9}", 3);
	h_marker(h, "p1", 5, "p2:9", 4);
	h_commit(h);
	cr_assert_eq(h_messages(h, "p2:9", "p1", "p0", seqs, 8), 1);
	cr_assert_eq(seqs[0], 4);
	cr_assert(h_channel(h, "p2:9", "p1", "p0", &ch));
	cr_assert_eq(ch.m, 3);
	cr_assert_eq(ch.n, 4);
	cr_assert_eq(ch.recorded, 1);
	cr_assert(h_view(h, "p2:9").ended);
	h_free(h);
}

/* p1's snapshot P1_SNAP at this participant: its marker from p1, the
 * state request answered, the marker from p2: the part is done (in the
 * open batch). */
static void
p1_part_done(struct h *h)
{
	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	h_marker(h, "p2", 1, P1_SNAP, 0);
}

/* An ended snapshot is kept KEEP_ENDED_MS for late markers and Wait
 * calls, then forgotten. */
Test(snap, ended_forgotten_after_keep)
{
	struct h *h = ready(NULL);
	struct coord_snap_view v;

	p1_part_done(h);
	h_commit(h);
	h_time(h, KEEP_ENDED_MS);
	coord_timers(h->c);
	cr_assert(h_view(h, P1_SNAP).known);
	h_time(h, 1);
	coord_timers(h->c);
	v = h_view(h, P1_SNAP);
	cr_assert(!v.known);
	cr_assert(v.ended, "nothing to wait for");
	h_free(h);
}

/* coord_stop() ends what is in flight with its reason, in the open
 * batch. */
Test(snap, stop_aborts_in_flight)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_commit(h);
	coord_stop(h->c, "daemon stopped");
	cr_assert(coord_batch_open(h->c));
	h_commit(h);
	want_row(h, P1_SNAP, STORE_ABORTED, &row);
	cr_assert_str_eq(row.reason, "daemon stopped");
	want_row(h, sid, STORE_ABORTED, &row);
	cr_assert_str_eq(row.reason, "daemon stopped");
	cr_assert_str_eq(h_disk_status(h, sid), "aborted");
	cr_assert(h_view(h, sid).ended);
	cr_assert(!h_view(h, P1_SNAP).running);
	cr_assert_eq(coord_initiated_in_flight(h->c), 0);
	h_free(h);
}

/* p1 rebooted: its channel numbers from 1 again while two deliveries of
 * its old numbering still wait for the application.  An unaligned
 * request that overtook them would leave them in no state and in no
 * channel (the channels count the new numbering): a snapshot that summed
 * up lost them (seed 1242 of reboot).  So it waits behind them, as an
 * aligned one does, and the state holds them; once they are taken,
 * requests overtake again. */
Test(snap, renumber_with_old_deliveries_queued)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;
	const Cut__V1__AppStateRequest *rq;
	struct pb b;

	h_data(h, "p1", 1, 1, "{\"old\": 1}");
	h_data(h, "p1", 2, 2, "{\"old\": 2}");
	pb_init(&b, "p1");
	pb_renumber(&b, 3);
	h_peer(h, H_C1, &b);
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 2);
	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_commit(h);
	rq = want_request(h, sid);
	cr_assert(rq->has_overtake && !rq->overtake,
	          "it overtook deliveries of the old numbering");
	h_reply(h, sid, "{\"balance\": 3}", 2);
	h_commit(h);
	want_row(h, sid, STORE_IN_PROGRESS, &row);
	cr_assert(h_view(h, sid).running);
	/* Taken: the next request overtakes. */
	h_time(h, 1);
	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_commit(h);
	rq = want_request(h, sid);
	cr_assert(rq->has_overtake && rq->overtake);
	h_free(h);
}

/* A daemon that restarted with a new application (a reboot: its hello
 * resumes nothing) learns a silent channel's numbering from a marker that
 * comes first: the sender sends again what our application had not taken
 * ahead of anything else on the new link, so the marker's count was all
 * taken.  Before, the marker waited for the 3 messages the last run's
 * application had, and every snapshot aborted "no marker on channel p1 ->
 * p0" until p1 sent something (seed 536 of reboot). */
Test(snap, restarted_learns_the_numbering_from_a_marker)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct ab a;

	h_data(h, "p1", 1, 1, "{}");
	h_data(h, "p1", 2, 2, "{}");
	h_data(h, "p1", 3, 3, "{}");
	h_app_items(h, &ai);
	h_taken(h, 3);
	h_commit(h);
	h_restart(h, H_EPOCH);
	h_link(h);
	h_hello(h, H_APP + 1);
	cr_assert(!h_stats(h, 1).in_known);
	h_marker(h, "p1", 1, P1_SNAP, 3);
	h_commit(h);
	cr_assert(h_stats(h, 1).in_known);
	cr_assert(h_view(h, P1_SNAP).running);
	want_request(h, P1_SNAP);
	ab_init(&a);
	ab_reply(&a, P1_SNAP, "{}", 0);
	h_app(h, H_APP + 1, &a);
	h_commit(h);
	cr_assert_eq(h_view(h, P1_SNAP).channels_recording, 1,
	             "only p2's channel records; p1's closed at its marker");
	h_free(h);
}

/* ---- abort: every way to ABORTED ---- */

/* The abort p0 sent to node for id, from the frames owed to it. */
static const Cut__V1__PeerAbort *
abort_to(struct h *h, size_t node, const char *id)
{
	struct h_items it = {0};

	h_pull_items(h, node, &it);
	for (size_t i = 0; i < it.n; i++)
		if (it.v[i]->item_case == ITEM_ABORT &&
		    strcmp(it.v[i]->abort->snapshot_id, id) == 0)
			return it.v[i]->abort;
	cr_assert_fail("no abort of %s to %s", id,
	               h->cfg->nodes[node].name);
	return NULL;
}

static void
want_aborted(struct h *h, const char *id, const char *reason)
{
	struct store_snapshot row;

	want_row(h, id, STORE_ABORTED, &row);
	cr_assert_str_eq(row.reason, reason);
	cr_assert(h_view(h, id).ended);
	cr_assert(!h_view(h, id).running);
}

/* A participant's deadline is 80 % of the initiator's timeout, so that
 * the initiator hears why; nobody connected to answer. */
Test(abort, participant_deadline_no_application)
{
	struct h *h = linked(NULL);
	const Cut__V1__PeerAbort *a;
	const char *why = "p0: no application connected to answer the state "
	                  "request";

	h_marker(h, "p1", 1, P1_SNAP, 0);
	h_commit(h);
	h_drain(h);
	cr_assert_leq(coord_next_timer(h->c, 100000), 8000);
	h_time(h, 7999);
	coord_timers(h->c);
	cr_assert(h_view(h, P1_SNAP).running);
	h_time(h, 1);
	coord_timers(h->c);
	h_commit(h);
	want_aborted(h, P1_SNAP, why);
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	h_free(h);
}

/* The initiator restarted before it had this participant's abort: the
 * abort went with the old link, and goes again on the new one.  (A
 * deleted snapshot recorded here again from a late marker is deleted
 * again only when the initiator hears of it: seed 8033 of reboot.) */
Test(abort, told_again_to_a_restarted_initiator)
{
	struct h *h = linked(NULL);
	const char *why = "p0: no application connected to answer the state "
	                  "request";
	const Cut__V1__PeerAbort *a;
	struct pb b;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	h_commit(h);
	h_drain(h);
	h_time(h, 8000);
	coord_timers(h->c);
	h_commit(h);
	want_aborted(h, P1_SNAP, why);
	/* Its frames never reached p1, which restarts. */
	pb_init(&b, "p1");
	b.epoch = H_E1 + 1;
	pb_hello(&b, 1, b.epoch);
	h_peer(h, H_C1, &b);
	h_commit(h);
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	h_free(h);
}

Test(abort, participant_deadline_application_silent)
{
	struct h *h = ready(NULL);
	const Cut__V1__PeerAbort *a;
	const char *why =
	    "p0: the application did not answer the state request";
	struct pb b;

	/* The initiator's timeout, carried by its marker. */
	pb_init(&b, "p1");
	pb_marker(&b, 1, P1_SNAP, 0, 2000);
	h_peer(h, H_C1, &b);
	want_request(h, P1_SNAP);
	h_time(h, 1599);
	coord_timers(h->c);
	cr_assert(h_view(h, P1_SNAP).running);
	h_time(h, 1);
	coord_timers(h->c);
	h_commit(h);
	want_aborted(h, P1_SNAP, why);
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	h_free(h);
}

Test(abort, participant_deadline_no_marker)
{
	struct h *h = ready(NULL);
	const Cut__V1__PeerAbort *a;
	const char *why = "p0: no marker on channel p2 -> p0";

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	h_time(h, 8000);
	coord_timers(h->c);
	h_commit(h);
	want_aborted(h, P1_SNAP, why);
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	cr_assert(!a->root_cause, "it only waited on p2");
	h_free(h);
}

/* The initiator's own part is done; nobody sends theirs or a word. */
Test(abort, initiator_silent_nodes)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	const Cut__V1__PeerAbort *a;
	const char *why = "p1, p2: no part and no word by the deadline";

	snprintf(sid, sizeof(sid), "%s", h_start(h, 1000));
	want_request(h, sid);
	h_reply(h, sid, "{}", 0);
	h_marker(h, "p1", 1, sid, 0);
	h_marker(h, "p2", 1, sid, 0);
	h_drain(h);
	h_time(h, 999);
	coord_timers(h->c);
	cr_assert(h_view(h, sid).running);
	h_time(h, 1);
	coord_timers(h->c);
	h_commit(h);
	want_aborted(h, sid, why);
	/* Every participant hears the verdict. */
	for (size_t v = 1; v <= 2; v++) {
		a = abort_to(h, v, sid);
		cr_assert_str_eq(a->reason, why);
		cr_assert(!a->root_cause);
	}
	h_free(h);
}

/* Silent nodes come first; then what this node lacks itself. */
Test(abort, initiator_silent_nodes_and_own_reason)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];

	snprintf(sid, sizeof(sid), "%s", h_start(h, 1000));
	want_request(h, sid);
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	want_aborted(h, sid,
	             "p1, p2: no part and no word by the deadline; p0: the "
	             "application did not answer the state request");
	h_free(h);
}

/* What participants report is kept for the verdict at the deadline, root
 * causes first, then the initiator's own. */
Test(abort, initiator_reasons_root_causes_first)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct pb b;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 1000));
	want_request(h, sid);
	h_reply(h, sid, "{}", 0);
	h_marker(h, "p1", 1, sid, 0);
	pb_init(&b, "p1");
	pb_abort(&b, 2, sid, "p1: no marker on channel p2 -> p1", 0);
	h_peer(h, H_C1, &b);
	pb_init(&b, "p2");
	pb_abort(&b, 1, sid,
	         "p2: the application did not answer the state request", 1);
	h_peer(h, H_C2, &b);
	cr_assert(h_view(h, sid).running, "the verdict waits for the deadline");
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	want_aborted(h, sid,
	             "p2: the application did not answer the state request; "
	             "p1: no marker on channel p2 -> p1; p0: no marker on "
	             "channel p2 -> p0");
	h_free(h);
}

/* A participant ends when its initiator says so, with its words; nobody
 * else may say so. */
Test(abort, from_the_initiator)
{
	struct h *h = ready(NULL);
	struct pb b;
	uint64_t bad;
	struct h_app_items ai = {0};

	h_marker(h, "p1", 1, P1_SNAP, 0);
	pb_init(&b, "p2");
	pb_abort(&b, 1, P1_SNAP, "p2: says so", 0);
	bad = coord_bad_peer(h->c);
	h_peer(h, H_C2, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad + 1, "only p1 may abort p1:5");
	cr_assert(h_view(h, P1_SNAP).running);
	pb_init(&b, "p1");
	pb_abort(&b, 2, P1_SNAP, "p1, p2: no part and no word by the deadline",
	         0);
	h_peer(h, H_C1, &b);
	h_commit(h);
	want_aborted(h, P1_SNAP, "p1, p2: no part and no word by the deadline");
	/* Its state request no longer goes to the application. */
	h_app_items(h, &ai);
	cr_assert_null(request_of(&ai, P1_SNAP));
	h_free(h);
}

/* The application answers after the snapshot ended: dropped, and it did
 * nothing wrong. */
Test(abort, late_state_reply_dropped)
{
	struct h *h = ready(NULL);
	struct pb b;
	uint32_t conn;
	char state[16];
	uint64_t bad = coord_bad_app(h->c);

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	pb_init(&b, "p1");
	pb_abort(&b, 2, P1_SNAP, "p1: gave up", 0);
	h_peer(h, H_C1, &b);
	h_reply(h, P1_SNAP, "{}", 0);
	cr_assert_null(h_app_reply(h, &conn), "no error for a late reply");
	cr_assert_eq(coord_bad_app(h->c), bad);
	cr_assert(!h_state(h, P1_SNAP, "p0", state, sizeof(state)));
	h_commit(h);
	want_aborted(h, P1_SNAP, "p1: gave up");
	h_free(h);
}

/* A peer's restart (its epoch changes on its bound connection) ends what
 * is in flight: the counts the snapshot relies on are gone. */
Test(abort, peer_restarted)
{
	struct h *h = ready(NULL);
	struct pb b;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	pb_init(&b, "p2");
	b.epoch = H_E2 + 1;
	pb_hello(&b, 1, b.epoch);
	h_peer(h, H_C2, &b);
	h_commit(h);
	want_aborted(h, P1_SNAP, "p2 restarted");
	cr_assert_eq(coord_peer_epoch(h->c, 2), H_E2 + 1);
	h_free(h);
}

/* The channel from p1 numbers from 1 again (PeerRenumber) while a
 * snapshot counts on it. */
Test(abort, channel_numbering_resumed)
{
	struct h *h = ready(NULL);
	struct pb b;

	h_data(h, "p1", 1, 1, "{}");
	h_marker(h, "p1", 2, P1_SNAP, 1);
	pb_init(&b, "p1");
	pb_renumber(&b, 3);
	h_peer(h, H_C1, &b);
	h_commit(h);
	want_aborted(h, P1_SNAP, "channel numbering resumed after a restart");
	cr_assert_eq(h_stats(h, 1).delivered, 0, "counts from 0 again");
	h_free(h);
}

/* A batch that does not commit takes every snapshot it held with it; the
 * ends are written again in a new batch. */
Test(abort, storage_fault_on_commit)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	const char *why = "p0: storage: injected: commit failed";
	const Cut__V1__PeerAbort *a;
	struct h_items it = {0};
	size_t n = 0;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_fail(h, STORE_OP_COMMIT, E_IO, 1);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "", "the second batch took");
	cr_assert_eq(h->calls[STORE_OP_ROLLBACK], 1);
	want_aborted(h, sid, why);
	want_aborted(h, P1_SNAP, why);
	cr_assert_str_eq(h_disk_status(h, sid), "aborted");
	cr_assert_str_eq(h_disk_status(h, P1_SNAP), "aborted");
	cr_assert(!h_view(h, sid).unsaved);
	/* The initiator tells everyone; the participant tells p1, as the
	 * cause. */
	a = abort_to(h, 2, sid);
	cr_assert_str_eq(a->reason, why);
	h_pull_items(h, 1, &it);
	for (size_t i = 0; i < it.n; i++) {
		const Cut__V1__PeerItem *x = it.v[i];
		if (x->item_case != ITEM_ABORT)
			continue;
		n++;
		cr_assert_str_eq(x->abort->reason, why);
		if (strcmp(x->abort->snapshot_id, P1_SNAP) == 0)
			cr_assert(x->abort->root_cause);
	}
	cr_assert_eq(n, 2, "p1 hears of both");
	h_free(h);
}

/* Degraded: Start is refused, and a marker of another node's snapshot is
 * answered with an abort naming the reason. */
Test(abort, degraded_refuses_start_and_markers)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1], id[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	const Cut__V1__PeerAbort *a;
	struct coord_snap_view v;
	const char *why = "p0: storage degraded: injected: commit failed";

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_fail(h, STORE_OP_COMMIT, E_IO, -1);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "injected: commit failed");
	/* The end memory holds, in place of the row the lost batch had. */
	v = h_view(h, sid);
	cr_assert(v.unsaved && v.ended);
	cr_assert_str_eq(v.row.id, sid);
	cr_assert_eq(v.row.status, STORE_ABORTED);
	cr_assert_str_eq(v.row.reason, "p0: storage: injected: commit failed");
	cr_assert_eq(v.row.is_initiator, 1);
	cr_assert_str_eq(h_disk_status(h, sid), "");

	cr_assert_eq(coord_start(h->c, 0, id, &e), E_STORAGE);
	cr_assert_str_eq(e.text, "storage degraded: injected: commit failed");
	memset(&e, 0, sizeof(e));
	cr_assert_eq(coord_delete(h->c, sid, &e), E_STORAGE);

	h_drain(h);
	h_marker(h, "p2", 1, "p2:3", 0);
	cr_assert(!h_view(h, "p2:3").running);
	cr_assert_eq(h->calls[STORE_OP_SNAPSHOT_CREATE], 1, "nothing stored for p2:3");
	a = abort_to(h, 2, "p2:3");
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	h_free(h);
}

/* A snapshot refused while degraded leaves nothing on disk: its end is
 * not written (there is no row: the failed write lost the whole batch,
 * which the database would have taken), nor written again once the
 * database works (seed 63460: a copy deleted here came back that way). */
Test(abort, degraded_refusal_writes_nothing)
{
	struct h *h = ready(NULL);
	struct store_snapshot row;
	struct coord_queue_stats q;
	struct pb b;

	h_start(h, 0);
	h_fail(h, STORE_OP_COMMIT, E_IO, -1);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "injected: commit failed");
	h_fail(h, STORE_OP_COMMIT, 0, 0);
	h_drain(h);
	h_marker(h, "p2", 1, "p2:3", 0);
	cr_assert_str_eq(abort_to(h, 2, "p2:3")->reason,
	                 "p0: storage degraded: injected: commit failed");
	cr_assert_eq(coord_commit(h->c), 0, "the batch is not lost");
	cr_assert(!h_view(h, "p2:3").unsaved);
	/* Its outcome has no row to wait for. */
	pb_init(&b, "p2");
	pb_outcome(&b, 2, "p2:3", 0, "p0: storage degraded", -1, 2);
	h_peer(h, H_C2, &b);
	coord_queue_stats(h->c, &q);
	cr_assert_eq(q.outcomes_waiting, 0);
	h_time(h, 1000);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "");
	cr_assert_eq(h_row(h, "p2:3", &row), E_NOENT);
	h_free(h);
}

/* Aligned: the application took deliveries beyond the request's place in
 * the stream and reconnected without answering: that cut is gone. */
Test(abort, application_reconnected_before_answering)
{
	struct h *h = ready("cut = aligned\n");
	struct h_app_items ai = {0};
	const Cut__V1__PeerAbort *a;
	const char *why = "p0: the application reconnected before answering "
	                  "the state request";

	h_data(h, "p1", 1, 1, "{}");
	h_marker(h, "p1", 2, P1_SNAP, 1);
	h_data(h, "p1", 3, 2, "{}");
	h_app_items(h, &ai);
	cr_assert_eq(ai.n, 3, "D R D");
	h_taken(h, 2);
	coord_app_closed(h->c, H_APP);
	h_hello(h, H_APP + 1);
	h_commit(h);
	want_aborted(h, P1_SNAP, why);
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	h_free(h);
}

/* An aligned request the old application had not passed goes again to
 * the new one; so does an unaligned one. */
Test(abort, application_reconnected_request_sent_again)
{
	const char *cuts[] = {"cut = aligned\n", NULL};

	for (size_t k = 0; k < 2; k++) {
		struct h *h = ready(cuts[k]);
		struct h_app_items ai = {0};

		h_data(h, "p1", 1, 1, "{}");
		h_marker(h, "p1", 2, P1_SNAP, 1);
		h_app_items(h, &ai);
		cr_assert_not_null(request_of(&ai, P1_SNAP));
		coord_app_closed(h->c, H_APP);
		h_hello(h, H_APP + 1);
		memset(&ai, 0, sizeof(ai));
		h_app_items(h, &ai);
		cr_assert_not_null(request_of(&ai, P1_SNAP));
		cr_assert_eq(h_app_count(&ai, APP_DELIVER), 1,
		             "the untaken delivery goes again");
		cr_assert(h_view(h, P1_SNAP).running);
		h_free(h);
	}
}

/* An initiator that lost its database and reused an id: a node that has
 * the id already says so rather than mix two snapshots. */
Test(abort, already_holds_an_older_snapshot)
{
	struct h *h = ready(NULL);
	struct store_snapshot row;
	const Cut__V1__PeerAbort *a;
	const char *why = "p0: already holds an older snapshot p1:5";

	p1_part_done(h);
	h_commit(h);
	h_drain(h);
	h_time(h, KEEP_ENDED_MS + 1);
	coord_timers(h->c);
	cr_assert(!h_view(h, P1_SNAP).known);
	h_drain(h);
	h_marker(h, "p1", 2, P1_SNAP, 0);
	h_commit(h);
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	/* The older snapshot's row is left as it was. */
	want_row(h, P1_SNAP, STORE_COMPLETE, &row);
	h_free(h);
}

/* Parts for another node's snapshots are dropped and counted; a late
 * part of one of ours (aborted, deleted, from before a restart) is
 * dropped quietly. */
Test(abort, unknown_snapshot_parts_ignored)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;
	struct pb b;
	char state[16];
	uint64_t bad = coord_bad_peer(h->c);
	struct h_msg msg = {1, "{}"};

	/* One of ours this run does not hold (from before a restart, or
	 * deleted): late, not bad; and nothing is stored. */
	part_of(h, "p1", 1, "p0:123", 0);
	cr_assert_eq(coord_bad_peer(h->c), bad);
	cr_assert_eq(h_row(h, "p0:123", &row), E_NOENT);
	/* Another node's: not ours to assemble. */
	pb_init(&b, "p1");
	pb_part_messages(&b, 2, "p2:4", "p0", 1, 1, &msg);
	h_peer(h, H_C1, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad + 1);

	snprintf(sid, sizeof(sid), "%s", h_start(h, 1000));
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	part_of(h, "p1", 3, sid, 0);
	cr_assert_eq(coord_bad_peer(h->c), bad + 1, "late, not bad");
	cr_assert(!h_state(h, sid, "p1", state, sizeof(state)));
	want_row(h, sid, STORE_ABORTED, &row);
	h_free(h);
}

/* ---- link: the reliable links ---- */

/* The payload of an application delivery, as a string. */
static int
payload_is(const Cut__V1__AppDeliver *d, const char *want)
{
	return d->payload.len == strlen(want) &&
	       memcmp(d->payload.data, want, d->payload.len) == 0;
}

Test(link, in_order_delivery)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct coord_peer_stats st;
	struct pb b;
	char want[32];

	pb_init(&b, "p1");
	pb_data(&b, 1, 1, "{\"n\": 1}");
	pb_data(&b, 2, 2, "{\"n\": 2}");
	pb_data(&b, 3, 3, "{\"n\": 3}");
	h_peer(h, H_C1, &b);
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 3);
	for (size_t k = 0; k < 3; k++) {
		const Cut__V1__AppDeliver *d =
		    h_app_find(&ai, APP_DELIVER, k)->deliver;
		snprintf(want, sizeof(want), "{\"n\": %zu}", k + 1);
		cr_assert_str_eq(d->from, "p1");
		cr_assert_str_eq(d->content_type, "application/json");
		cr_assert(d->has_seq && d->seq == k + 1);
		cr_assert(payload_is(d, want));
	}
	st = h_stats(h, 1);
	cr_assert(st.has_in && st.has_out);
	cr_assert_eq(st.delivered, 3);
	cr_assert_eq(st.taken, 0);
	cr_assert_eq(st.last_seen_ms, h->wall);
	h_free(h);
}

/* Items after a gap wait until it is filled, then go in order. */
Test(link, held_items_released)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};

	h_data(h, "p1", 3, 3, "{\"n\": 3}");
	h_data(h, "p1", 2, 2, "{\"n\": 2}");
	cr_assert_null(h_app_frame(h));
	cr_assert_eq(h_stats(h, 1).delivered, 0);
	h_data(h, "p1", 1, 1, "{\"n\": 1}");
	cr_assert_eq(h_stats(h, 1).delivered, 3);
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 3);
	for (size_t k = 0; k < 3; k++)
		cr_assert_eq(h_app_find(&ai, APP_DELIVER, k)->deliver->seq,
		             k + 1);
	h_free(h);
}

/* An item the link already processed (a resend) is dropped. */
Test(link, duplicates_dropped)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct pb b;

	h_data(h, "p1", 1, 1, "{}");
	h_data(h, "p1", 2, 2, "{}");
	pb_init(&b, "p1");
	pb_data(&b, 1, 1, "{}");
	pb_data(&b, 2, 2, "{}");
	h_peer(h, H_C1, &b);
	h_marker(h, "p1", 2, P1_SNAP, 2); /* a resent marker, too */
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 2);
	cr_assert_eq(h_stats(h, 1).delivered, 2);
	cr_assert_eq(h_stats(h, 1).dups, 0, "the link drops them first");
	cr_assert(!h_view(h, P1_SNAP).known);
	h_free(h);
}

/* What the link delivered is acknowledged ACK_DELAY_MS later (or at once
 * on a batch going anyway), with what the application took. */
Test(link, ack_and_taken_counts)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct h_items it = {0};
	const Cut__V1__PeerAck *a;
	static char big[9001];
	struct pb b;

	h_data(h, "p1", 1, 1, "{}");
	h_data(h, "p1", 2, 2, "{}");
	h_data(h, "p1", 3, 3, "{}");
	cr_assert_null(h_pull(h, 1), "the ack waits a little");
	cr_assert_eq(coord_next_timer(h->c, 10000), ACK_DELAY_MS);
	h_time(h, ACK_DELAY_MS - 1);
	cr_assert_null(h_pull(h, 1));
	h_time(h, 1);
	h_pull_items(h, 1, &it);
	cr_assert_eq(it.n, 1);
	a = h_find(&it, ITEM_ACK, 0)->ack;
	cr_assert_eq(a->upto, 3);
	cr_assert(a->has_taken && a->taken == 0);

	h_app_items(h, &ai);
	h_taken(h, 2);
	cr_assert_eq(h_stats(h, 1).taken, 2);
	h_time(h, ACK_DELAY_MS);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	a = h_find(&it, ITEM_ACK, 0)->ack;
	cr_assert_eq(a->upto, 3);
	cr_assert_eq(a->taken, 2);

	/* Taking an eighth of the window's bytes reopens it at once. */
	memset(big, '1', sizeof(big) - 1);
	pb_init(&b, "p1");
	pb_data(&b, 4, 4, big);
	h_peer(h, H_C1, &b);
	h_time(h, ACK_DELAY_MS);
	h_drain(h);
	h_app_items(h, &ai);
	h_taken(h, 4);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_not_null(h_find(&it, ITEM_ACK, 0), "no delay");
	cr_assert_eq(h_find(&it, ITEM_ACK, 0)->ack->taken, 4);
	h_free(h);
}

/* The data items among it, as link seqs, into seqs; returns how many. */
static size_t
data_seqs(const struct h_items *it, uint64_t *seqs, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < it->n; i++)
		if (it->v[i]->item_case == ITEM_DATA && n < max)
			seqs[n++] = it->v[i]->data->seq;
	return n;
}

/* Unacknowledged items go again RESEND_MS after the last progress, not
 * before, and not once acknowledged. */
Test(link, resend_after_resend_ms)
{
	struct h *h = ready(NULL);
	struct h_items it = {0};
	uint64_t seqs[4];

	h_send(h, "p1", "{\"m\": 1}", 1);
	h_pull_items(h, 1, &it);
	cr_assert_eq(data_seqs(&it, seqs, 4), 1);
	cr_assert_eq(seqs[0], 2, "after the PeerRenumber");
	cr_assert_eq(it.v[0]->data->app_seq, 1);
	h_time(h, HEARTBEAT_MS);
	coord_timers(h->c);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(it.n, 1, "a heartbeat: the ack alone");
	cr_assert_eq(it.v[0]->item_case, ITEM_ACK);
	h_time(h, RESEND_MS - HEARTBEAT_MS - 1);
	coord_timers(h->c);
	cr_assert_null(h_pull(h, 1));
	h_time(h, 1);
	coord_timers(h->c);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(data_seqs(&it, seqs, 4), 1);
	cr_assert_eq(seqs[0], 2);

	ack(h, "p1", 2, 0);
	h_time(h, 2 * RESEND_MS);
	coord_timers(h->c);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(data_seqs(&it, seqs, 4), 0);
	h_free(h);
}

/* A new connection says hello and sends again from the first
 * unacknowledged item; so does the peer's hello. */
Test(link, rewind_on_up_and_hello)
{
	struct h *h = ready(NULL);
	struct h_items it = {0};
	const Cut__V1__PeerHello *hl;
	uint64_t seqs[4];

	h_data(h, "p1", 1, 1, "{}");
	h_send(h, "p1", "{\"m\": 1}", 1);
	h_drain(h);
	coord_peer_up(h->c, 1);
	cr_assert(coord_peer_hello_due(h->c, 1));
	h_pull_items(h, 1, &it);
	cr_assert_eq(it.v[0]->item_case, ITEM_HELLO, "the hello first");
	hl = it.v[0]->hello;
	cr_assert_eq(hl->next_expected, 2, "p1's item 1 is in");
	cr_assert_eq(hl->epoch, H_EPOCH);
	cr_assert_eq(data_seqs(&it, seqs, 4), 1);
	cr_assert_eq(seqs[0], 2);
	cr_assert(!coord_peer_hello_due(h->c, 1));

	/* p1 has item 1 but not 2. */
	h_peer_hello(h, H_C1, "p1", 2);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(data_seqs(&it, seqs, 4), 1);
	cr_assert_eq(seqs[0], 2);
	/* p1 has both: nothing to send again. */
	h_peer_hello(h, H_C1, "p1", 3);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(data_seqs(&it, seqs, 4), 0);
	h_free(h);
}

/* What went to a peer before its epoch was known named no run
 * (to_epoch 0), so the peer took none of it (coord_peer_input()): the
 * first batch that names the peer's epoch sends it all again at once,
 * naming it, even without a hello and long before RESEND_MS. */
Test(link, rewind_on_first_epoch)
{
	struct h *h = h_new(NULL);
	struct h_app_items ai = {0};
	struct h_items it = {0};
	Cut__V1__PeerBatch *b;
	uint64_t seqs[4];

	coord_peer_up(h->c, 1);
	coord_peer_up(h->c, 2);
	h_hello(h, H_APP);
	h_app_items(h, &ai);
	h_send(h, "p1", "{\"m\": 1}", 1);
	cr_assert_not_null(b = h_pull(h, 1));
	cr_assert(!b->has_to_epoch || b->to_epoch == 0,
	          "p1's epoch is not known yet");
	h_pull_items(h, 1, &it);
	h_drain(h);
	/* p1's first batch: an ack of nothing, no hello. */
	ack(h, "p1", 0, 0);
	cr_assert_eq(coord_peer_epoch(h->c, 1), H_E1);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(data_seqs(&it, seqs, 4), 1, "the message goes again");
	cr_assert_eq(seqs[0], 2, "after the PeerRenumber");
	cr_assert_not_null(h_find(&it, ITEM_RENUMBER, 0));
	h_free(h);
}

/* Every peer gets a batch at least every HEARTBEAT_MS; coord_next_timer()
 * says when. */
Test(link, heartbeat_timing)
{
	struct h *h = linked(NULL);
	struct h_items it = {0};

	cr_assert_eq(coord_next_timer(h->c, 10000), HEARTBEAT_MS);
	cr_assert_eq(coord_next_timer(h->c, 100), 100, "at most max");
	h_time(h, HEARTBEAT_MS - 1);
	cr_assert_null(h_pull(h, 1));
	cr_assert_eq(coord_next_timer(h->c, 10000), 1);
	h_time(h, 1);
	h_pull_items(h, 1, &it);
	cr_assert_eq(it.n, 1);
	cr_assert_eq(it.v[0]->ack->upto, 0);
	cr_assert_eq(coord_next_timer(h->c, 10000), 0, "p2's is due too");
	h_drain(h);
	cr_assert_eq(coord_next_timer(h->c, 10000), HEARTBEAT_MS);
	/* Down peers get nothing, so they set no timer. */
	coord_peer_down(h->c, 1);
	coord_peer_down(h->c, 2);
	cr_assert_eq(coord_next_timer(h->c, 10000), 10000);
	h_free(h);
}

/* A peer that restarted lost what our application sent and its
 * application did not take: that goes again on the new link; what it
 * sends again that we have is dropped. */
Test(link, restart_resends_inflight)
{
	struct h *h = ready(NULL);
	struct coord_peer_stats st;
	struct h_items it = {0};
	Cut__V1__PeerBatch *f;
	struct pb b;

	h_data(h, "p1", 1, 1, "{\"from\": 1}");
	h_send(h, "p1", "{\"m\": 1}", 1);
	h_send(h, "p1", "{\"m\": 2}", 2);
	h_drain(h);
	ack(h, "p1", 3, 1);
	st = h_stats(h, 1);
	cr_assert_eq(st.sent, 2);
	cr_assert_eq(st.app_taken, 1);
	cr_assert_eq(st.window_used, strlen("{\"m\": 2}") + 16);

	/* The restarted p1 heard from us (our frames name its new run),
	 * so its batch names ours: its items count. */
	pb_init(&b, "p1");
	b.epoch = H_E1 + 1;
	pb_hello(&b, 1, b.epoch);
	pb_data(&b, 1, 1, "{\"from\": 1}");
	h_peer(h, H_C1, &b);
	st = h_stats(h, 1);
	cr_assert_eq(st.resent, 1);
	cr_assert_eq(st.dups, 1);
	cr_assert_eq(st.delivered, 1);
	cr_assert_eq(coord_peer_epoch(h->c, 1), H_E1 + 1);
	f = h_pull(h, 1);
	cr_assert_not_null(f);
	cr_assert(f->has_to_epoch && f->to_epoch == H_E1 + 1);
	for (size_t i = 0; i < f->n_items; i++)
		it.v[it.n++] = f->items[i];
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_DATA), 1);
	cr_assert_eq(h_find(&it, ITEM_DATA, 0)->data->seq, 1, "a new link");
	cr_assert_eq(h_find(&it, ITEM_DATA, 0)->data->app_seq, 2);
	h_free(h);
}

/* ---- conn: connections ---- */

/* A batch from p1 on conn, from a stranger who cannot know our epoch. */
static void
stranger(struct h *h, uint32_t conn, uint64_t seq)
{
	struct pb b;

	pb_init(&b, "p1");
	b.to_epoch = 0;
	pb_data(&b, seq, seq, "{}");
	h_peer(h, conn, &b);
}

Test(conn, second_connection_refused)
{
	struct h *h = ready(NULL);
	uint64_t bad = coord_bad_peer(h->c);

	stranger(h, 99, 1);
	cr_assert_eq(h_stats(h, 1).refused_conns, 1);
	cr_assert_eq(coord_bad_peer(h->c), bad, "refused, not bad");
	cr_assert_eq(h_stats(h, 1).delivered, 0);
	stranger(h, 99, 1);
	cr_assert_eq(h_stats(h, 1).refused_conns, 1, "once per connection");
	cr_assert_eq(coord_bad_peer(h->c), bad);
	stranger(h, 98, 1);
	cr_assert_eq(h_stats(h, 1).refused_conns, 2);
	/* The bound connection goes on. */
	h_data(h, "p1", 1, 1, "{}");
	cr_assert_eq(h_stats(h, 1).delivered, 1);
	h_free(h);
}

/* The bound connection silent for DEAD_MS: another may take over, and the
 * old one is then the stranger. */
Test(conn, takeover_when_bound_silent)
{
	struct h *h = ready(NULL);
	struct pb b;

	h_time(h, DEAD_MS - 1);
	stranger(h, 99, 1);
	cr_assert_eq(h_stats(h, 1).delivered, 0);
	h_time(h, 1);
	/* Takes the binding over; its item names no run of ours (to_epoch
	 * 0), so it is not taken: a poser learns nothing it can inject. */
	stranger(h, 99, 1);
	cr_assert_eq(h_stats(h, 1).delivered, 0);
	stranger(h, H_C1, 2);
	cr_assert_eq(h_stats(h, 1).refused_conns, 2);
	/* On the new binding, a batch that names our run is taken. */
	pb_init(&b, "p1");
	pb_data(&b, 1, 1, "{}");
	h_peer(h, 99, &b);
	cr_assert_eq(h_stats(h, 1).delivered, 1);
	h_free(h);
}

/* A new connection that carries our epoch hears us: p1 dialed again. */
Test(conn, takeover_with_our_epoch)
{
	struct h *h = ready(NULL);
	struct pb b;

	h_data(h, "p1", 1, 1, "{}");
	pb_init(&b, "p1");
	pb_data(&b, 2, 2, "{}");
	h_peer(h, 99, &b);
	cr_assert_eq(h_stats(h, 1).delivered, 2);
	cr_assert_eq(h_stats(h, 1).refused_conns, 0);
	stranger(h, H_C1, 3);
	cr_assert_eq(h_stats(h, 1).delivered, 2, "the old one is stale");
	h_free(h);
}

Test(conn, closed_connection_rebinds)
{
	struct h *h = ready(NULL);

	struct pb b;

	coord_peer_conn_closed(h->c, H_C1);
	stranger(h, 99, 1); /* bound; its item names no run: not taken */
	cr_assert_eq(h_stats(h, 1).delivered, 0);
	cr_assert_eq(h_stats(h, 1).refused_conns, 0);
	pb_init(&b, "p1");
	pb_data(&b, 1, 1, "{}");
	h_peer(h, 99, &b);
	cr_assert_eq(h_stats(h, 1).delivered, 1);
	h_free(h);
}

/* Heard from nothing for DEAD_MS: silent, not alive; redialing gives the
 * new connection DEAD_MS of its own. */
Test(conn, silent_peer)
{
	struct h *h = linked(NULL);

	cr_assert(coord_peer_alive(h->c, 1));
	cr_assert(h_stats(h, 1).alive);
	h_time(h, DEAD_MS - 1);
	cr_assert(!coord_peer_silent(h->c, 1));
	cr_assert(coord_peer_alive(h->c, 1));
	h_time(h, 1);
	cr_assert(coord_peer_silent(h->c, 1));
	cr_assert(!coord_peer_alive(h->c, 1));
	coord_peer_redialed(h->c, 1);
	cr_assert(!coord_peer_silent(h->c, 1));
	h_time(h, DEAD_MS);
	cr_assert(coord_peer_silent(h->c, 1));
	/* Down: not alive, whatever it said last. */
	h_peer_hello(h, H_C1, "p1", 1);
	cr_assert(coord_peer_alive(h->c, 1));
	coord_peer_down(h->c, 1);
	cr_assert(!coord_peer_alive(h->c, 1));
	h_free(h);
}

/* Heard from but not acknowledging what we send for DEAD_MS: a one-way
 * partition, as silent as none. */
Test(conn, stuck_peer)
{
	struct h *h = ready(NULL);

	h_send(h, "p1", "{}", 1);
	h_drain(h);
	for (int k = 0; k < 2; k++) {
		h_time(h, 1000);
		ack(h, "p1", 1, 0); /* heartbeats that never ack item 2 */
		cr_assert(!coord_peer_silent(h->c, 1));
	}
	h_time(h, DEAD_MS - 2000 - 1);
	cr_assert(!coord_peer_silent(h->c, 1));
	h_time(h, 1);
	cr_assert(coord_peer_silent(h->c, 1));
	cr_assert(!coord_peer_alive(h->c, 1));
	h_free(h);
}

/* A batch for an earlier run of this daemon is dropped quietly: its
 * numbering is lost. */
Test(conn, batch_for_an_earlier_run)
{
	struct h *h = ready(NULL);
	uint64_t bad = coord_bad_peer(h->c);
	struct pb b;

	pb_init(&b, "p1");
	b.to_epoch = H_EPOCH + 1;
	pb_data(&b, 1, 1, "{}");
	h_peer(h, H_C1, &b);
	cr_assert_eq(h_stats(h, 1).delivered, 0);
	cr_assert_eq(coord_bad_peer(h->c), bad);
	h_free(h);
}

/* Headers and items that are wrong are counted and dropped. */
Test(conn, bad_headers_and_items)
{
	struct h *h = ready(NULL);
	uint64_t bad = coord_bad_peer(h->c);
	struct pb b;
	const char *froms[] = {"p9", "p0"};

	pb_init(&b, "p1");
	b.cluster = "other";
	pb_data(&b, 1, 1, "{}");
	h_peer(h, H_C1, &b);
	pb_init(&b, "p1");
	b.to = "p2";
	pb_data(&b, 1, 1, "{}");
	h_peer(h, H_C1, &b);
	for (size_t i = 0; i < 2; i++) {
		pb_init(&b, froms[i]);
		pb_data(&b, 1, 1, "{}");
		h_peer(h, 40 + i, &b);
	}
	pb_init(&b, "p1");
	pb_data(&b, 1, 1, "{}");
	h_peer(h, 0, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad + 5);
	cr_assert_eq(h_stats(h, 1).delivered, 0);

	/* Items: seq 0; of no kind (an empty PeerItem, as a newer daemon's
	 * unknown kind decodes); an ack of what was never sent; a message
	 * whose app_seq leaves a gap after the first (which sets where the
	 * numbering stands). */
	pb_init(&b, "p1");
	pb_data(&b, 0, 1, "{}");
	h_peer(h, H_C1, &b);
	pb_init(&b, "p1");
	b.items = malloc(16);
	b.cap = 16;
	b.items[0] = 4 << 3 | 2;
	b.items[1] = 0;
	b.len = 2;
	h_peer(h, H_C1, &b);
	pb_init(&b, "p1");
	pb_ack(&b, 5, 0, 0);
	h_peer(h, H_C1, &b);
	pb_init(&b, "p1");
	pb_data(&b, 1, 7, "{}");
	pb_data(&b, 2, 9, "{}");
	h_peer(h, H_C1, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad + 9);
	cr_assert_eq(h_stats(h, 1).delivered, 7, "resumed after 6");
	coord_peer_bad(h->c, "p1", "does not decode");
	cr_assert_eq(coord_bad_peer(h->c), bad + 10);
	h_free(h);
}

/* ---- app: the application's streams ---- */

Test(app, hello_reply_fields)
{
	struct h *h = linked(NULL);
	const Cut__V1__AppHelloReply *r = h_hello(h, H_APP);
	struct h_app_items ai = {0};
	struct h_items it = {0};

	cr_assert_str_eq(r->node, "p0");
	cr_assert_eq(r->version, CUTPROTO_APP_VERSION);
	cr_assert_str_eq(r->cluster, "test");
	cr_assert_eq(r->n_peers, 2);
	cr_assert_str_eq(r->peers[0], "p1");
	cr_assert_str_eq(r->peers[1], "p2");
	cr_assert_eq(r->n_sent, 2);
	cr_assert_eq(r->sent[0], 0);
	cr_assert_eq(r->sent[1], 0);
	cr_assert_eq(r->max_message_size, 65536);
	cr_assert(r->has_window_bytes && r->window_bytes == 65536);
	cr_assert(r->has_message_cost && r->message_cost == 16);
	/* Then each channel's credit, afresh. */
	h_app_items(h, &ai);
	cr_assert_eq(ai.n, 2);
	for (uint32_t k = 0; k < 2; k++) {
		const Cut__V1__AppCredit *c = ai.v[k]->credit;
		cr_assert_eq(ai.v[k]->item_case, APP_CREDIT);
		cr_assert_eq(c->peer, k);
		cr_assert_eq(c->limit, 65536);
		cr_assert(c->has_taken && c->taken == 0);
	}
	/* Nobody holds the old numbering: the receivers are told. */
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_RENUMBER), 1);
	cr_assert_eq(h_find(&it, ITEM_RENUMBER, 0)->renumber->seq, 1);
	h_free(h);
}

/* A hello that cannot be served is answered with an error, and nothing
 * else changes. */
Test(app, hello_refused)
{
	struct h *h = linked(NULL);
	const Cut__V1__AppError *e;
	struct ab b;

	ab_init(&b);
	ab_hello(&b, "p0", CUTPROTO_APP_VERSION - 1, 0, NULL);
	h_app(h, H_APP, &b);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__VERSION);
	cr_assert(!coord_app_connected(h->c));
	ab_hello(&b, "p1", CUTPROTO_APP_VERSION, 0, NULL);
	h_app(h, H_APP, &b);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__WRONG_NODE);
	cr_assert_str_eq(e->message, "this daemon serves another node");
	cr_assert(!coord_app_connected(h->c));
	cr_assert_eq(coord_bad_app(h->c), 2);
	cr_assert_null(h_app_frame(h));
	h_free(h);
}

/* Only the connection that said hello may send anything else. */
Test(app, item_before_hello)
{
	struct h *h = linked(NULL);
	const Cut__V1__AppError *e;

	h_send(h, "p1", "{}", 1);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__NO_HELLO);
	h_hello(h, H_APP + 1);
	h_send(h, "p1", "{}", 1);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__NO_HELLO);
	cr_assert_eq(h_stats(h, 1).sent, 0);
	h_free(h);
}

/* The window counts each message's cost too (message_cost = 16 here): a
 * send whose payload still fits but whose cost does not is refused. */
Test(app, window_counts_the_cost)
{
	struct h *h = ready(NULL);
	static char first[40001], second[25521];
	const Cut__V1__AppError *e;

	memset(first, '1', sizeof(first) - 1);
	memset(second, '2', sizeof(second) - 1);
	h_send(h, "p1", first, 1);
	/* 40016 charged + 25520 is the window exactly; + 16 is not. */
	h_send(h, "p1", second, 2);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__BACKPRESSURE);
	cr_assert_eq(h_stats(h, 1).sent, 1);
	cr_assert_eq(h_stats(h, 1).window_used, 40000 + 16);
	h_free(h);
}

/* Beyond the channel's window a send is refused; a message larger than
 * the window goes when nothing is out. */
Test(app, send_beyond_window)
{
	struct h *h = ready(NULL);
	static char big[40001], huge[65537];
	const Cut__V1__AppError *e;
	struct ab b;

	memset(big, '1', sizeof(big) - 1);
	memset(huge, '1', sizeof(huge) - 1);
	h_send(h, "p1", big, 1);
	h_send(h, "p1", big, 2);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__BACKPRESSURE);
	cr_assert_eq(h_stats(h, 1).sent, 1);
	cr_assert_eq(h_stats(h, 1).stalls, 1);
	cr_assert_eq(h_stats(h, 1).window_used, 40000 + 16);
	h_send(h, "p2", huge, 1);
	cr_assert_eq(h_stats(h, 2).sent, 1, "alone, it goes");
	/* Over max_message: refused whatever the window. */
	ab_init(&b);
	ab_send(&b, "p2", huge, sizeof(huge), 2);
	h_app(h, H_APP, &b);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__TOO_LARGE);
	h_free(h);
}

Test(app, send_errors)
{
	struct h *h = ready(NULL);
	const Cut__V1__AppError *e;
	struct h_items it = {0};
	uint32_t conn;

	h_send(h, "p1", "{}", 2);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__SEQ_GAP);
	h_send(h, "p9", "{}", 1);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__UNKNOWN_NODE);
	cr_assert_eq(h_stats(h, 1).sent, 0);
	/* A resend of what the channel has is dropped, silently. */
	h_send(h, "p1", "{}", 1);
	h_send(h, "p1", "{}", 1);
	cr_assert_null(h_app_reply(h, &conn));
	cr_assert_eq(h_stats(h, 1).sent, 1);
	cr_assert_eq(h_stats(h, 1).dups, 1);
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_DATA), 1);
	cr_assert_eq(coord_bad_app(h->c), 2);
	h_free(h);
}

/* Taken counts must lie within what was sent on this connection. */
Test(app, taken_out_of_range)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	const Cut__V1__AppError *e;

	h_taken(h, 1);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__BAD_ITEM);
	cr_assert_str_eq(e->message, "taken count out of range");
	h_data(h, "p1", 1, 1, "{}");
	h_data(h, "p1", 2, 2, "{}");
	h_app_items(h, &ai);
	h_taken(h, 2);
	cr_assert_eq(h_stats(h, 1).taken, 2);
	h_taken(h, 1);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__BAD_ITEM,
	             "backwards");
	h_reply(h, "p1:1", "{}", 3);
	e = h_app_error(h, H_APP);
	cr_assert_str_eq(e->message,
	                 "state reply's handed count out of range");
	cr_assert_eq(h_stats(h, 1).taken, 2);
	h_free(h);
}

/* A message larger than the window goes alone, and leaves the channel's
 * inflight above its window: the credit then allows nothing more (it is
 * what was accepted, never less), until the receiver takes it. */
Test(app, credit_past_the_window)
{
	struct h *h = ready(NULL);
	static char huge[65537];
	struct h_app_items ai = {0};
	const Cut__V1__AppCredit *c;

	memset(huge, '1', sizeof(huge) - 1);
	h_send(h, "p1", huge, 1);
	cr_assert_eq(h_stats(h, 1).window_used, 65536 + 16);
	h_app_items(h, &ai);
	cr_assert_eq(ai.n, 1);
	c = ai.v[0]->credit;
	cr_assert_eq(ai.v[0]->item_case, APP_CREDIT);
	cr_assert_eq(c->limit, 65536 + 16, "no room, and no less than sent");
	h_free(h);
}

/* Credit: the limit grows by what the receiving application takes. */
Test(app, credit_frames)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	const Cut__V1__AppCredit *c;
	size_t len = strlen("{\"m\": 1}");

	h_send(h, "p1", "{\"m\": 1}", 1);
	cr_assert_null(h_app_frame(h), "the limit is unchanged");
	h_drain(h);
	ack(h, "p1", 2, 1);
	cr_assert_eq(h_stats(h, 1).window_used, 0);
	h_app_items(h, &ai);
	cr_assert_eq(ai.n, 1);
	c = ai.v[0]->credit;
	cr_assert_eq(c->peer, 0);
	cr_assert_eq(c->limit, 65536 + len + 16);
	cr_assert(c->has_taken && c->taken == 1);
	cr_assert_null(h_app_frame(h), "told once");
	h_free(h);
}

/* A closed application gets nothing more; a new one gets what the old
 * one was sent and did not take. */
Test(app, closed_and_reconnected)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct ab b;

	h_data(h, "p1", 1, 1, "{}");
	h_data(h, "p1", 2, 2, "{}");
	h_app_items(h, &ai);
	h_taken(h, 1);
	coord_app_closed(h->c, H_APP);
	cr_assert(!coord_app_connected(h->c));
	cr_assert_eq(coord_app_conn(h->c), 0);
	h_data(h, "p1", 3, 3, "{}");
	cr_assert_null(h_app_frame(h));
	h_hello(h, H_APP + 1);
	memset(&ai, 0, sizeof(ai));
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 2);
	cr_assert_eq(h_app_find(&ai, APP_DELIVER, 0)->deliver->seq, 2);
	cr_assert_eq(h_app_find(&ai, APP_DELIVER, 1)->deliver->seq, 3);
	/* The old connection speaks for no one; positions count from 0 on
	 * the new one. */
	h_taken(h, 2);
	cr_assert_eq(h_app_error(h, H_APP)->code,
	             CUT__V1__APP_ERROR__CODE__NO_HELLO);
	cr_assert_eq(h_stats(h, 1).taken, 1);
	ab_init(&b);
	ab_taken(&b, 2);
	h_app(h, H_APP + 1, &b);
	cr_assert_eq(h_stats(h, 1).taken, 3);
	h_free(h);
}

/* A daemon that restarted (a fresh coordinator) learns where each channel
 * stands from its application's hello. */
Test(app, resume_after_restart)
{
	struct h *h = linked(NULL);
	struct h_resume rs = {.node = "p1",
	                      .has_out_taken = 1,
	                      .out_taken = 5,
	                      .has_in_taken = 1,
	                      .in_taken = 3,
	                      .has_out_sent = 1,
	                      .out_sent = 7};
	struct h_app_items ai = {0};
	struct h_items it = {0};
	const Cut__V1__AppHelloReply *r;
	const Cut__V1__AppError *e;
	static char big[40001];
	Cut__V1__AppBatch *rb;
	uint32_t conn;
	struct ab b;

	ab_init(&b);
	ab_hello(&b, "p0", CUTPROTO_APP_VERSION, 1, &rs);
	h_app(h, H_APP, &b);
	rb = h_app_reply(h, &conn);
	cr_assert_not_null(rb);
	r = rb->items[0]->hello_reply;
	cr_assert_eq(r->sent[0], 5, "p1's channel goes on after 5");
	cr_assert_eq(r->sent[1], 0);
	/* Only p2's channel numbers from 1 again. */
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_RENUMBER), 0);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 2, &it);
	cr_assert_eq(h_count(&it, ITEM_RENUMBER), 1);

	/* p1 sends again what our application had not taken. */
	h_data(h, "p1", 1, 3, "{}");
	h_data(h, "p1", 2, 4, "{}");
	cr_assert_eq(h_stats(h, 1).dups, 1);
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 1);
	cr_assert_eq(h_app_find(&ai, APP_DELIVER, 0)->deliver->seq, 4);

	/* Up to out_sent, the application's resends go beyond the window;
	 * after it, they wait. */
	memset(big, '1', sizeof(big) - 1);
	h_send(h, "p1", big, 6);
	h_send(h, "p1", big, 7);
	cr_assert_eq(h_stats(h, 1).sent, 7);
	h_send(h, "p1", big, 8);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__BACKPRESSURE);
	h_free(h);
}

/* An application that comes back to a daemon that kept running: what it
 * already had is not sent again, and counts as taken. */
Test(app, resume_drops_what_the_application_has)
{
	struct h *h = ready(NULL);
	struct h_resume rs = {.node = "p1", .has_in_taken = 1, .in_taken = 2};
	struct h_app_items ai = {0};
	struct h_items it = {0};
	uint32_t conn;
	struct ab b;

	h_data(h, "p1", 1, 1, "{}");
	h_data(h, "p1", 2, 2, "{}");
	h_data(h, "p1", 3, 3, "{}");
	h_app_items(h, &ai);
	h_time(h, ACK_DELAY_MS);
	h_drain(h);
	coord_app_closed(h->c, H_APP);
	ab_init(&b);
	ab_hello(&b, "p0", CUTPROTO_APP_VERSION, 1, &rs);
	h_app(h, H_APP + 1, &b);
	cr_assert_not_null(h_app_reply(h, &conn));
	cr_assert_eq(h_stats(h, 1).taken, 2);
	memset(&ai, 0, sizeof(ai));
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 1);
	cr_assert_eq(h_app_find(&ai, APP_DELIVER, 0)->deliver->seq, 3);
	/* p1 hears that its first two were taken. */
	h_time(h, ACK_DELAY_MS);
	h_pull_items(h, 1, &it);
	cr_assert_not_null(h_find(&it, ITEM_ACK, 0));
	cr_assert_eq(h_find(&it, ITEM_ACK, 0)->ack->taken, 2);
	h_free(h);
}

/* p1's daemon and application started afresh: the channel from p1
 * numbers from 1 again, and its new 1 is no duplicate. */
Test(app, renumber_from_peer)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct pb b;

	h_data(h, "p1", 1, 1, "{\"old\": 1}");
	h_data(h, "p1", 2, 2, "{\"old\": 2}");
	pb_init(&b, "p1");
	pb_renumber(&b, 3);
	pb_data(&b, 4, 1, "{\"new\": 1}");
	h_peer(h, H_C1, &b);
	cr_assert_eq(h_stats(h, 1).dups, 0);
	cr_assert_eq(h_stats(h, 1).delivered, 1);
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 3);
	cr_assert(payload_is(h_app_find(&ai, APP_DELIVER, 2)->deliver,
	                     "{\"new\": 1}"));
	h_free(h);
}

/* The first delivery of p1's new numbering names it (p1's epoch).  An
 * application that comes back before it was handed that one counts an
 * older numbering in its resume (none, or another: the one that began
 * with p1's first run): only the old deliveries up to it are dropped, and
 * the new ones all come (seeds 14 and 36 of reboot,applink lost them);
 * one that names the new numbering counts it. */
Test(app, resume_across_a_renumber)
{
	struct h_resume old = {.node = "p1", .has_in_taken = 1, .in_taken = 3,
	                       .in_numbering = 77};
	struct h_resume renum = {.node = "p1", .has_in_taken = 1, .in_taken = 1,
	                         .in_numbering = H_E1};
	for (int seen = 0; seen <= 1; seen++) {
		struct h *h = ready(NULL);
		struct h_app_items ai = {0};
		uint32_t conn;
		struct pb b;
		struct ab a;

		h_data(h, "p1", 1, 1, "{\"old\": 1}");
		h_data(h, "p1", 2, 2, "{\"old\": 2}");
		h_data(h, "p1", 3, 3, "{\"old\": 3}");
		pb_init(&b, "p1");
		pb_renumber(&b, 4);
		pb_data(&b, 5, 1, "{\"new\": 1}");
		pb_data(&b, 6, 2, "{\"new\": 2}");
		h_peer(h, H_C1, &b);
		h_app_items(h, &ai);
		cr_assert_eq(h_app_count(&ai, APP_DELIVER), 5);
		cr_assert(!h_app_find(&ai, APP_DELIVER, 2)->deliver->has_numbering);
		cr_assert(h_app_find(&ai, APP_DELIVER, 3)->deliver->has_numbering);
		cr_assert_eq(h_app_find(&ai, APP_DELIVER, 3)->deliver->numbering,
		             H_E1);
		cr_assert(!h_app_find(&ai, APP_DELIVER, 4)->deliver->has_numbering);
		/* The application was handed none of it as the daemon heard;
		 * it comes back. */
		coord_app_closed(h->c, H_APP);
		ab_init(&a);
		ab_hello(&a, "p0", CUTPROTO_APP_VERSION, 1, seen ? &renum : &old);
		h_app(h, H_APP + 1, &a);
		cr_assert_not_null(h_app_reply(h, &conn));
		memset(&ai, 0, sizeof(ai));
		h_app_items(h, &ai);
		cr_assert_eq(h_app_count(&ai, APP_DELIVER), seen ? 1 : 2);
		cr_assert_eq(h_app_find(&ai, APP_DELIVER, 0)->deliver->seq,
		             seen ? 2 : 1);
		cr_assert(payload_is(h_app_find(&ai, APP_DELIVER, 0)->deliver,
		                     seen ? "{\"new\": 2}" : "{\"new\": 1}"));
		h_free(h);
	}
}

/* A PeerRenumber of the numbering the channel has already (sent again by
 * a sender's next run) changes nothing: the next message is no gap. */
Test(app, renumber_again_is_ignored)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	uint64_t bad = coord_bad_peer(h->c);
	struct pb b;

	h_data(h, "p1", 1, 1, "{\"old\": 1}");
	pb_init(&b, "p1");
	pb_renumber(&b, 2);
	pb_data(&b, 3, 1, "{\"new\": 1}");
	pb_renumber(&b, 4);
	pb_data(&b, 5, 2, "{\"new\": 2}");
	h_peer(h, H_C1, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad);
	cr_assert_eq(h_stats(h, 1).delivered, 2);
	h_app_items(h, &ai);
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 3);
	cr_assert_eq(h_app_find(&ai, APP_DELIVER, 2)->deliver->seq, 2);
	h_free(h);
}

/* The hello reply names each channel's numbering (this run's epoch, which
 * began them).  A restarted daemon whose application resumes a numbering
 * of which nothing was reported taken announces it again; one with
 * messages taken does not. */
Test(app, numbering_announced_again_after_a_restart)
{
	struct h_resume none = {.node = "p1", .has_out_taken = 1,
	                        .out_taken = 0, .has_out_sent = 1,
	                        .out_sent = 3, .out_numbering = 77};
	struct h_resume some = none;
	some.out_taken = 2;
	for (int taken = 0; taken <= 1; taken++) {
		struct h *h = linked(NULL);
		const Cut__V1__AppHelloReply *r = h_hello(h, H_APP);
		struct h_items it = {0};
		uint32_t conn;
		struct ab a;

		cr_assert_eq(r->n_numbering, 2);
		cr_assert_eq(r->numbering[0], H_EPOCH);
		h_restart(h, H_EPOCH);
		h_link(h);
		ab_init(&a);
		ab_hello(&a, "p0", CUTPROTO_APP_VERSION, 1,
		         taken ? &some : &none);
		h_app(h, H_APP + 1, &a);
		cr_assert_not_null(h_app_reply(h, &conn));
		h_pull_items(h, 1, &it);
		if (taken) {
			cr_assert_eq(h_count(&it, ITEM_RENUMBER), 0);
		} else {
			cr_assert_eq(h_count(&it, ITEM_RENUMBER), 1);
			cr_assert_eq(h_find(&it, ITEM_RENUMBER, 0)
			                 ->renumber->numbering,
			             77);
		}
		memset(&it, 0, sizeof(it));
		h_pull_items(h, 2, &it);
		cr_assert_eq(h_count(&it, ITEM_RENUMBER), 1,
		             "p2's channel: nothing resumed, a new numbering");
		cr_assert_eq(h_find(&it, ITEM_RENUMBER, 0)->renumber->numbering,
		             H_EPOCH);
		h_free(h);
	}
}

/* Frames from the application that do not decode are answered. */
Test(app, bad_frame)
{
	struct h *h = ready(NULL);
	const Cut__V1__AppError *e;

	coord_app_bad(h->c, H_APP, "batch does not decode");
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__BAD_ITEM);
	cr_assert_str_eq(e->message, "batch does not decode");
	cr_assert_eq(coord_bad_app(h->c), 1);
	h_free(h);
}

/* ---- batch: the turn's batch of writes ---- */

Test(batch, commit)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	uint64_t commits = h->calls[STORE_OP_COMMIT];

	cr_assert(!coord_batch_open(h->c));
	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	cr_assert(coord_batch_open(h->c));
	cr_assert_str_eq(h_disk_status(h, sid), "");
	h_commit(h);
	cr_assert(!coord_batch_open(h->c));
	cr_assert_eq(h->calls[STORE_OP_COMMIT], commits + 1);
	cr_assert_str_eq(h_disk_status(h, sid), "in_progress");
	/* A turn that wrote nothing commits nothing. */
	h_commit(h);
	cr_assert_eq(h->calls[STORE_OP_COMMIT], commits + 1);
	h_free(h);
}

/* coord_commit() says whether the turn's writes reached the disk: 0 when
 * they did (or there were none), E_STORAGE when they were rolled back, so
 * that the shell can hold a Delete's reply until it knows. */
Test(batch, commit_says_whether_the_turn_was_lost)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];

	cr_assert_eq(coord_commit(h->c), 0, "nothing written: nothing lost");
	snprintf(sid, sizeof(sid), "%s", h_start(h, 1000));
	cr_assert_eq(coord_commit(h->c), 0);
	h_time(h, 1000);
	coord_timers(h->c); /* the deadline aborts it in a new batch */
	cr_assert(coord_batch_open(h->c));
	h_fail(h, STORE_OP_COMMIT, E_IO, 1);
	cr_assert_eq(coord_commit(h->c), E_STORAGE);
	/* The retry in the same call wrote the end again and committed. */
	cr_assert_str_eq(coord_degraded(h->c), "");
	cr_assert_str_eq(h_disk_status(h, sid), "aborted");
	cr_assert_eq(coord_delete(h->c, sid, NULL), 0);
	cr_assert_eq(coord_commit(h->c), 0);
	cr_assert_str_eq(h_disk_status(h, sid), "");
	h_free(h);
}

/* A busy database: the batch stays open and the commit is retried next
 * turn; an end in it is told only then. */
Test(batch, busy_retried)
{
	struct h *h = ready(NULL);

	p1_part_done(h);
	h_fail(h, STORE_OP_COMMIT, E_BUSY, 1);
	cr_assert_eq(coord_commit(h->c), E_BUSY);
	cr_assert(coord_batch_open(h->c));
	cr_assert(!h_view(h, P1_SNAP).ended);
	cr_assert_str_eq(h_disk_status(h, P1_SNAP), "");
	cr_assert_str_eq(coord_degraded(h->c), "");
	h_commit(h);
	cr_assert(h_view(h, P1_SNAP).ended);
	cr_assert_str_eq(h_disk_status(h, P1_SNAP), "complete");
	h_free(h);
}

/* A batch that cannot begin: the turn's writes fail, what they stood for
 * ends, and the next batch writes the ends. */
Test(batch, begin_failure)
{
	struct h *h = ready(NULL);
	char id[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	const Cut__V1__PeerAbort *a;
	const char *why = "p0: storage: cannot store the snapshot: the batch "
	                  "was rolled back: injected";

	h_fail(h, STORE_OP_BEGIN, E_IO, 1);
	cr_assert_eq(coord_start(h->c, 0, id, &e), E_STORAGE);
	cr_assert_str_eq(e.text,
	                 "storage: the batch was rolled back: injected");
	cr_assert(!coord_batch_open(h->c));
	h_marker(h, "p1", 1, P1_SNAP, 0);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "");
	want_aborted(h, P1_SNAP, why);
	cr_assert_str_eq(h_disk_status(h, P1_SNAP), "aborted");
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	/* Storage works again. */
	h_start(h, 0);
	h_free(h);
}

/* Degraded: the database takes no batch; retried once a second until one
 * commits, which writes the ends memory held. */
Test(batch, degraded_then_recovered)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	uint64_t commits;
	struct store_snapshot row;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_fail(h, STORE_OP_COMMIT, E_IO, -1);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "injected: commit failed");
	commits = h->calls[STORE_OP_COMMIT];
	h_time(h, 999);
	h_commit(h);
	cr_assert_eq(h->calls[STORE_OP_COMMIT], commits, "not yet");
	h_time(h, 1);
	h_commit(h);
	cr_assert_eq(h->calls[STORE_OP_COMMIT], commits + 1, "a second later");
	cr_assert_str_eq(coord_degraded(h->c), "injected: commit failed");
	cr_assert(h_view(h, sid).unsaved);

	h_fail(h, STORE_OP_COMMIT, 0, 0);
	h_time(h, 1000);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "");
	cr_assert(!h_view(h, sid).unsaved);
	cr_assert_str_eq(h_disk_status(h, sid), "aborted");
	want_row(h, sid, STORE_ABORTED, &row);
	cr_assert_str_eq(row.reason, "p0: storage: injected: commit failed");
	cr_assert_eq(row.is_initiator, 1);
	cr_assert_eq(row.started_ms, H_WALL0);
	h_start(h, 0);
	h_free(h);
}

/* A full disk: the batch is gone at the first failed write, every write
 * after it fails, and the snapshots it held end. */
Test(batch, full_disk)
{
	struct h *h = ready(NULL);
	const Cut__V1__PeerAbort *a;
	const char *why = "p0: storage: cannot store a recorded message: "
	                  "injected: put_message failed";

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	h_commit(h);
	h_fail_lost(h, STORE_OP_PUT_MESSAGE, E_IO, 1);
	h_data(h, "p2", 1, 1, "{}");
	a = abort_to(h, 1, P1_SNAP);
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "");
	want_aborted(h, P1_SNAP, why);
	cr_assert_str_eq(h_disk_status(h, P1_SNAP), "aborted");
	h_free(h);
}

Test(batch, state_not_stored)
{
	struct h *h = ready(NULL);
	const char *why = "p0: storage: cannot store the local state: "
	                  "injected: put_state failed";

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_fail(h, STORE_OP_PUT_STATE, E_IO, 1);
	h_reply(h, P1_SNAP, "{}", 0);
	h_commit(h);
	want_aborted(h, P1_SNAP, why);
	cr_assert_str_eq(abort_to(h, 1, P1_SNAP)->reason, why);
	h_free(h);
}

/* Delete: refused while the snapshot runs, unknown ids, then gone. */
Test(batch, delete)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;
	struct errinfo e = {0};

	snprintf(sid, sizeof(sid), "%s", h_start(h, 1000));
	cr_assert_eq(coord_delete(h->c, sid, &e), E_STATE);
	cr_assert_eq(coord_delete(h->c, "p0:1", &e), E_NOENT);
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	cr_assert_eq(coord_delete(h->c, sid, &e), 0);
	h_commit(h);
	cr_assert_eq(h_row(h, sid, &row), E_NOENT);
	cr_assert_str_eq(h_disk_status(h, sid), "");
	h_free(h);
}

/*
 * p1 rebooted (its daemon and application both started afresh): after
 * its PeerRenumber, p0's application has taken nothing of the new
 * numbering, whatever it took of the old.  The taken count p0 reports
 * (which lets p1 forget messages and reopens its window) and the m of an
 * unaligned cut must count from 0 again.
 */
Test(app, renumber_resets_taken)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	struct h_items it = {0};
	const Cut__V1__PeerAck *a;
	struct store_channel ch;
	struct pb b;

	h_data(h, "p1", 1, 1, "{\"old\": 1}");
	h_data(h, "p1", 2, 2, "{\"old\": 2}");
	h_data(h, "p1", 3, 3, "{\"old\": 3}");
	h_app_items(h, &ai);
	h_taken(h, 3);
	cr_assert_eq(h_stats(h, 1).taken, 3);
	h_time(h, ACK_DELAY_MS);
	h_drain(h);

	pb_init(&b, "p1");
	b.epoch = H_E1 + 1;
	pb_hello(&b, 1, b.epoch);
	pb_renumber(&b, 1);
	pb_data(&b, 2, 1, "{\"new\": 1}");
	h_peer(h, H_C1, &b);
	cr_assert_eq(h_stats(h, 1).delivered, 1);
	cr_assert_eq(h_stats(h, 1).taken, 0, "nothing of the new numbering");
	h_time(h, ACK_DELAY_MS);
	h_pull_items(h, 1, &it);
	a = h_find(&it, ITEM_ACK, 0)->ack;
	cr_assert_eq(a->upto, 2);
	cr_assert(a->has_taken);
	cr_assert_eq(a->taken, 0, "p1 must not forget its new message 1");

	/* An unaligned snapshot now: the application took nothing new. */
	h_marker(h, "p2", 1, "p2:9", 0);
	memset(&ai, 0, sizeof(ai));
	h_app_items(h, &ai);
	cr_assert_not_null(request_of(&ai, "p2:9"));
	h_reply(h, "p2:9", "{}", 3);
	cr_assert(h_view(h, "p2:9").running);
	cr_assert_eq(h_view(h, "p2:9").channels_recording, 1,
	             "the state is in: p2 -> p0 closed, p1 -> p0 recording");
	pb_init(&b, "p1");
	b.epoch = H_E1 + 1;
	pb_marker(&b, 3, "p2:9", 1, 0);
	h_peer(h, H_C1, &b);
	h_commit(h);
	cr_assert(h_channel(h, "p2:9", "p1", "p0", &ch));
	cr_assert_eq(ch.m, 0);
	cr_assert_eq(ch.n, 1);
	cr_assert_eq(ch.recorded, 1, "the new 1 was in transit");
	h_free(h);
}

/* A snapshot that ends in a turn whose batch could not begin is no more
 * on disk than a completion in an open batch: its end is not told (a Wait
 * call in that turn would be answered with the stale row) before
 * coord_commit() settles the turn and writes the abort. */
Test(batch, begin_failure_end_not_told)
{
	struct h *h = ready(NULL);
	struct coord_snap_view v;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	h_commit(h);
	h_fail(h, STORE_OP_BEGIN, E_IO, 1);
	h_marker(h, "p2", 1, P1_SNAP, 0);
	cr_assert(!coord_batch_open(h->c));
	v = h_view(h, P1_SNAP);
	cr_assert(!v.running);
	cr_assert(!v.ended, "its end is in a batch that never began");
	h_commit(h);
	/* The channel's row was the write that failed: the reason says
	 * so. */
	want_aborted(h, P1_SNAP,
	             "p0: storage: cannot store a recorded channel: the batch "
	             "was rolled back: injected");
	cr_assert_str_eq(h_disk_status(h, P1_SNAP), "aborted");
	h_free(h);
}

/* ---- more of a snapshot's life ---- */

/* Parts may come before the initiator's own part is complete: it is DONE
 * once its own is, too. */
Test(snap, initiator_parts_before_its_own)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	want_request(h, sid);
	h_reply(h, sid, "{}", 0);
	h_marker(h, "p1", 1, sid, 0);
	part_of(h, "p1", 2, sid, 0);
	part_of(h, "p2", 1, sid, 0);
	cr_assert(h_view(h, sid).running, "p2 -> p0 has no marker yet");
	cr_assert_eq(h_view(h, sid).parts_received, 2);
	h_marker(h, "p2", 2, sid, 0);
	h_commit(h);
	want_row(h, sid, STORE_COMPLETE, &row);
	cr_assert_eq(row.consistent, 1, "%s", row.audit_reason);
	h_free(h);
}

/* An initiator's completion in a batch that does not commit: the parts
 * and the verdict are gone, so the snapshot ends aborted, and every
 * participant hears so. */
Test(snap, initiator_done_in_a_lost_batch)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1], state[16];
	const char *why = "p0: storage: injected: commit failed";
	struct store_snapshot row;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	want_request(h, sid);
	h_reply(h, sid, "{}", 0);
	h_commit(h);
	h_drain(h);
	h_marker(h, "p1", 1, sid, 0);
	h_marker(h, "p2", 1, sid, 0);
	part_of(h, "p1", 2, sid, 0);
	part_of(h, "p2", 2, sid, 0);
	h_fail(h, STORE_OP_COMMIT, E_IO, 1);
	h_commit(h);
	want_aborted(h, sid, why);
	want_row(h, sid, STORE_ABORTED, &row);
	cr_assert_eq(row.consistent, -1, "no verdict on data that is gone");
	cr_assert(!h_state(h, sid, "p1", state, sizeof(state)));
	cr_assert(h_state(h, sid, "p0", state, sizeof(state)),
	          "committed before");
	cr_assert_str_eq(abort_to(h, 1, sid)->reason, why);
	cr_assert_str_eq(abort_to(h, 2, sid)->reason, why);
	h_free(h);
}

/* Recorded messages go to the initiator in chunks of at most CHUNK_BYTES,
 * after the part, final only on the last. */
Test(snap, part_messages_in_chunks)
{
	struct h *h = ready(NULL);
	static char big[3][30001];
	struct h_items it = {0};
	const Cut__V1__PeerPartMessages *pm[2];
	const Cut__V1__PeerPart *part;

	for (int k = 0; k < 3; k++) {
		memset(big[k], '1' + k, 30000);
		big[k][30000] = '\0';
	}
	/* p2 passes p1's snapshot on first: p2 -> p0 records nothing. */
	h_marker(h, "p2", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	h_data(h, "p1", 1, 1, big[0]);
	h_data(h, "p1", 2, 2, big[1]);
	h_data(h, "p1", 3, 3, big[2]);
	h_marker(h, "p1", 4, P1_SNAP, 3);
	h_commit(h);
	h_pull_items(h, 1, &it);
	part = h_find(&it, ITEM_PART, 0)->part;
	cr_assert_eq(part->channels[0]->count, 3);
	cr_assert_eq(h_count(&it, ITEM_MESSAGES), 2);
	for (size_t k = 0; k < 2; k++)
		pm[k] = h_find(&it, ITEM_MESSAGES, k)->part_messages;
	cr_assert_eq(pm[0]->seq, part->seq + 1);
	cr_assert_str_eq(pm[0]->src, "p1");
	cr_assert_eq(pm[0]->n_messages, 2);
	cr_assert_eq(pm[0]->messages[0]->seq, 1);
	cr_assert_eq(pm[0]->messages[0]->payload.len, 30000);
	cr_assert_eq(pm[0]->messages[1]->seq, 2);
	cr_assert(!pm[0]->final);
	cr_assert_eq(pm[1]->seq, pm[0]->seq + 1);
	cr_assert_str_eq(pm[1]->src, "p1");
	cr_assert_eq(pm[1]->n_messages, 1);
	cr_assert_eq(pm[1]->messages[0]->seq, 3);
	cr_assert(pm[1]->final);
	h_free(h);
}

/* The initiator takes a part's messages in chunks and audits what
 * arrived, not what the part claimed. */
Test(snap, initiator_takes_chunks)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct store_snapshot row;
	struct store_channel ch;
	struct h_msg m12[2] = {{1, "{\"a\": 1}"}, {2, "{\"a\": 2}"}};
	struct h_msg m3 = {3, "{\"a\": 3}"};
	struct h_chan c1[2] = {{"p0", 0, 3, 3, 1, 3, 1}, {"p2", 0, 0, 0, 0, 0, 1}};
	uint64_t seqs[4];
	struct pb b;
	int k;

	for (k = 0; k < 2; k++) {
		if (k == 1) {
			h_free(h);
			h = ready(NULL);
		}
		/* p0 sends p1 three messages before it records. */
		h_send(h, "p1", "{\"a\": 1}", 1);
		h_send(h, "p1", "{\"a\": 2}", 2);
		h_send(h, "p1", "{\"a\": 3}", 3);
		snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
		want_request(h, sid);
		h_reply(h, sid, "{}", 0);
		h_marker(h, "p1", 1, sid, 0);
		h_marker(h, "p2", 1, sid, 0);
		part_of(h, "p2", 2, sid, 0);
		pb_init(&b, "p1");
		pb_part(&b, 2, sid, "{}", 2, c1);
		pb_part_messages(&b, 3, sid, "p0", 0, 2, m12);
		h_peer(h, H_C1, &b);
		cr_assert(h_view(h, sid).running, "waits for the final chunk");
		pb_init(&b, "p1");
		/* The second time, the chunk with message 3 is lost: the part
		 * still says 3. */
		pb_part_messages(&b, 4, sid, "p0", 1, k == 0 ? 1 : 0, &m3);
		h_peer(h, H_C1, &b);
		h_commit(h);
		want_row(h, sid, STORE_COMPLETE, &row);
		cr_assert(h_channel(h, sid, "p0", "p1", &ch));
		cr_assert_eq(ch.m, 0);
		cr_assert_eq(ch.n, 3);
		if (k == 0) {
			cr_assert_eq(row.consistent, 1, "%s", row.audit_reason);
			cr_assert_eq(h_messages(h, sid, "p0", "p1", seqs, 4), 3);
			cr_assert_eq(seqs[2], 3);
		} else {
			cr_assert_eq(row.consistent, 0);
			cr_assert_eq(ch.recorded, 2);
			HAS(row.audit_reason, "channel p0 -> p1: 1 in-transit "
			                      "messages not recorded");
		}
	}
	h_free(h);
}

/* An end memory holds because the database took none is not forgotten
 * while it is not written. */
Test(snap, unsaved_end_kept)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_fail(h, STORE_OP_COMMIT, E_IO, -1);
	h_commit(h);
	h_time(h, KEEP_ENDED_MS + 1);
	coord_timers(h->c);
	h_commit(h);
	cr_assert(h_view(h, sid).known);
	cr_assert(h_view(h, sid).unsaved);
	h_fail(h, STORE_OP_COMMIT, 0, 0);
	h_time(h, 1000);
	h_commit(h);
	cr_assert_str_eq(h_disk_status(h, sid), "aborted");
	coord_timers(h->c);
	cr_assert(!h_view(h, sid).known, "written: forgotten now");
	h_free(h);
}

/* Late and repeated things are dropped quietly: a marker of this node's
 * own snapshot long forgotten, a second state reply. */
Test(snap, late_and_repeated)
{
	struct h *h = ready(NULL);
	uint64_t bad_peer = coord_bad_peer(h->c), bad_app = coord_bad_app(h->c);
	uint32_t conn;
	struct pb b;

	h_marker(h, "p1", 1, "p0:17", 0);
	cr_assert(!h_view(h, "p0:17").known);
	h_marker(h, "p1", 2, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{\"first\": 1}", 0);
	h_reply(h, P1_SNAP, "{\"second\": 1}", 0);
	cr_assert_null(h_app_reply(h, &conn));
	cr_assert_eq(coord_bad_peer(h->c), bad_peer);
	cr_assert_eq(coord_bad_app(h->c), bad_app);
	/* A marker's timeout out of bounds, an id of no known initiator. */
	pb_init(&b, "p2");
	pb_marker(&b, 1, "p2:1", 0, 50);
	h_peer(h, H_C2, &b);
	pb_init(&b, "p2");
	pb_marker(&b, 2, "p7:1", 0, 0);
	h_peer(h, H_C2, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad_peer + 2);
	cr_assert(!h_view(h, "p2:1").known);
	h_free(h);
}

/* ---- more of the streams ---- */

/* An aligned request waits behind deliveries the application window
 * holds back; an unaligned one does not. */
Test(app, request_behind_the_application_window)
{
	const char *cuts[] = {"cut = aligned\n", NULL};
	static char big[40001];

	memset(big, '1', sizeof(big) - 1);
	for (size_t k = 0; k < 2; k++) {
		struct h *h = ready(cuts[k]);
		struct h_app_items ai = {0};
		struct pb b;

		pb_init(&b, "p1");
		pb_data(&b, 1, 1, big);
		pb_data(&b, 2, 2, big);
		pb_marker(&b, 3, P1_SNAP, 2, 0);
		h_peer(h, H_C1, &b);
		h_app_items(h, &ai);
		cr_assert_eq(h_app_count(&ai, APP_DELIVER), 1,
		             "the second waits for the first to be taken");
		cr_assert_eq(request_of(&ai, P1_SNAP) != NULL, k == 1);
		h_taken(h, 1);
		memset(&ai, 0, sizeof(ai));
		h_app_items(h, &ai);
		cr_assert_eq(h_app_count(&ai, APP_DELIVER), 1);
		/* Aligned, it comes now, behind the second delivery;
		 * unaligned, it came first. */
		cr_assert_eq(request_of(&ai, P1_SNAP) != NULL, k == 0);
		if (k == 0)
			cr_assert_eq(ai.v[ai.n - 1]->item_case, APP_REQUEST);
		h_free(h);
	}
}

/* A peer frame carries the signed hello only when a hello is due. */
Test(link, auth_with_the_hello)
{
	struct h *h = linked(NULL);
	Cut__V1__PeerAuth auth = CUT__V1__PEER_AUTH__INIT;
	uint8_t buf[4096];
	size_t len, built;
	Cut__V1__PeerBatch *b;

	auth.cert.data = (uint8_t *)"cert";
	auth.cert.len = 4;
	auth.signature.data = (uint8_t *)"sig";
	auth.signature.len = 3;
	auth.time_ms = 42;
	auth.nonce.data = (uint8_t *)"0123456789abcdef";
	auth.nonce.len = 16;
	coord_peer_up(h->c, 1);
	len = coord_peer_frame(h->c, 1, &auth, NULL);
	cr_assert_lt(len, sizeof(buf));
	built = coord_peer_frame(h->c, 1, &auth, buf);
	cr_assert_eq(built, len);
	b = cut__v1__peer_batch__unpack(NULL, built, buf);
	cr_assert_not_null(b);
	cr_assert_not_null(b->auth);
	cr_assert_eq(b->auth->time_ms, 42);
	cr_assert_eq(b->n_items, 1);
	cr_assert_eq(b->items[0]->item_case, ITEM_HELLO);
	cut__v1__peer_batch__free_unpacked(b, NULL);
	h_time(h, HEARTBEAT_MS);
	built = coord_peer_frame(h->c, 1, &auth, buf);
	b = cut__v1__peer_batch__unpack(NULL, built, buf);
	cr_assert_not_null(b);
	cr_assert_null(b->auth, "no hello due");
	cut__v1__peer_batch__free_unpacked(b, NULL);
	h_free(h);
}

/* An id issued in a batch that was lost is not issued again, though the
 * database's counter went back with the batch. */
Test(batch, ids_never_issued_twice)
{
	struct h *h = ready(NULL);
	char first[ENGINE_ID_MAX + 1], second[ENGINE_ID_MAX + 1];

	snprintf(first, sizeof(first), "%s", h_start(h, 0));
	h_fail(h, STORE_OP_COMMIT, E_IO, 1);
	h_commit(h);
	cr_assert_str_eq(coord_degraded(h->c), "");
	snprintf(second, sizeof(second), "%s", h_start(h, 0));
	cr_assert_str_neq(first, second);
	cr_assert_str_eq(second, "p0:4000000000001");
	h_free(h);
}

static void
count_running(const char *id, void *arg)
{
	(void)id;
	(*(size_t *)arg)++;
}

/* What is in flight, as status lists it. */
Test(snap, in_flight_lists)
{
	struct h *h = ready(NULL);
	size_t n = 0;

	h_start(h, 0);
	h_marker(h, "p1", 1, P1_SNAP, 0);
	coord_foreach_running(h->c, count_running, &n);
	cr_assert_eq(n, 2);
	cr_assert_eq(coord_initiated_in_flight(h->c), 1);
	cr_assert_eq(coord_in_progress(h->c), 2);
	h_time(h, 10000);
	coord_timers(h->c);
	n = 0;
	coord_foreach_running(h->c, count_running, &n);
	cr_assert_eq(n, 0);
	cr_assert_eq(coord_in_progress(h->c), 0);
	h_free(h);
}

/*
 * Unaligned: an application that took a message delivered after the
 * state request and then answers it (a broken one: libcut answers first)
 * cannot give a state of that cut: the reply is refused, and the
 * snapshot ends at once with the reason, not at its deadline for an
 * application that "did not answer".
 */
Test(abort, unaligned_reply_past_the_cut)
{
	struct h *h = ready(NULL);
	struct h_app_items ai = {0};
	const Cut__V1__PeerAbort *a;
	const Cut__V1__AppError *e;
	const char *why = "p0: the application's state reply does not fit "
	                  "the cut: it was handed messages delivered after "
	                  "the state request";
	struct ab b;

	h_data(h, "p1", 1, 1, "{}");
	h_app_items(h, &ai);
	h_taken(h, 1);
	h_marker(h, "p2", 1, "p2:9", 0);
	h_data(h, "p1", 2, 2, "{}");
	memset(&ai, 0, sizeof(ai));
	h_app_items(h, &ai);
	cr_assert_not_null(request_of(&ai, "p2:9"));
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 1);
	ab_init(&b);
	ab_taken(&b, 2);
	ab_reply(&b, "p2:9", "{}", 2);
	h_app(h, H_APP, &b);
	e = h_app_error(h, H_APP);
	cr_assert_eq(e->code, CUT__V1__APP_ERROR__CODE__UNKNOWN_SNAPSHOT);
	h_commit(h);
	want_aborted(h, "p2:9", why);
	a = abort_to(h, 2, "p2:9");
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	h_free(h);
}

/*
 * Unaligned: the application answered the request (the answer was lost
 * with its connection), took a message delivered after the request, and
 * reconnected saying so (AppHello.resume).  No state it can give now is
 * of that cut, so the request is not sent again: the snapshot is given up
 * at once (found by cutlab sim, seeds 18 and 29).
 */
Test(abort, unaligned_request_passed_before_reconnect)
{
	struct h *h = ready(NULL);
	struct h_resume rs = {.node = "p1", .has_in_taken = 1, .in_taken = 2};
	struct h_app_items ai = {0};
	const Cut__V1__PeerAbort *a;
	const char *why = "p0: the application reconnected before answering "
	                  "the state request";
	uint32_t conn;
	struct ab b;

	h_data(h, "p1", 1, 1, "{}");
	h_app_items(h, &ai);
	h_taken(h, 1);
	h_marker(h, "p2", 1, "p2:9", 0);
	h_data(h, "p1", 2, 2, "{}");
	memset(&ai, 0, sizeof(ai));
	h_app_items(h, &ai);
	cr_assert_not_null(request_of(&ai, "p2:9"));
	coord_app_closed(h->c, H_APP);
	ab_init(&b);
	ab_hello(&b, "p0", CUTPROTO_APP_VERSION, 1, &rs);
	h_app(h, H_APP + 1, &b);
	cr_assert_not_null(h_app_reply(h, &conn));
	memset(&ai, 0, sizeof(ai));
	h_app_items(h, &ai);
	cr_assert_null(request_of(&ai, "p2:9"), "not sent again");
	cr_assert_eq(h_app_count(&ai, APP_DELIVER), 0, "it has message 2");
	h_commit(h);
	want_aborted(h, "p2:9", why);
	a = abort_to(h, 2, "p2:9");
	cr_assert_str_eq(a->reason, why);
	cr_assert(a->root_cause);
	h_free(h);
}

/* An I/O error on one write loses the whole batch: SQLite may have rolled
 * back more than that statement, so nothing of the batch is trusted. */
Test(batch, io_error_loses_the_batch)
{
	struct h *h = ready(NULL);
	uint64_t rollbacks;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_fail(h, STORE_OP_PUT_STATE, E_IO, 1);
	h_reply(h, P1_SNAP, "{}", 0);
	rollbacks = h->calls[STORE_OP_ROLLBACK];
	cr_assert_eq(coord_commit(h->c), E_STORAGE);
	cr_assert_eq(h->calls[STORE_OP_ROLLBACK], rollbacks + 1);
	h_free(h);
}

/* Reading the part back (once its batch committed) fails: the
 * participant cannot send it and says so. */
Test(batch, part_not_read_back)
{
	struct h *h = ready(NULL);
	const char *why = "p0: cannot send its part to the initiator";
	struct store_snapshot row;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	h_fail(h, STORE_OP_FOREACH_STATE, E_IO, 1);
	h_marker(h, "p2", 1, P1_SNAP, 0);
	cr_assert_eq(h->calls[STORE_OP_FOREACH_STATE], 0,
	             "the part is read back only once its batch commits");
	h_commit(h);
	h_commit(h);
	/* Read back after that commit: the part's row here stays complete
	 * (what it stands for is on disk), the initiator hears why it will
	 * not come, and the snapshot is over here. */
	cr_assert_str_eq(abort_to(h, 1, P1_SNAP)->reason, why);
	want_row(h, P1_SNAP, STORE_COMPLETE, &row);
	cr_assert(h_view(h, P1_SNAP).ended);
	cr_assert(!h_view(h, P1_SNAP).running);
	h_free(h);
}

/* A part completed in a batch whose commit then fails never goes: the
 * initiator would complete the snapshot with a part this node does not
 * hold.  The initiator hears the abort instead. */
Test(batch, part_not_sent_before_its_commit)
{
	struct h *h = ready(NULL);
	const char *why = "p0: storage: injected: commit failed";
	struct h_items it = {0};

	p1_part_done(h);
	h_fail(h, STORE_OP_COMMIT, E_IO, 1);
	cr_assert_eq(coord_commit(h->c), E_STORAGE);
	h_commit(h);
	h_pull_items(h, 1, &it);
	cr_assert_null(h_find(&it, ITEM_PART, 0), "the lost part went");
	cr_assert_not_null(h_find(&it, ITEM_ABORT, 0));
	cr_assert_str_eq(h_find(&it, ITEM_ABORT, 0)->abort->reason, why);
	want_aborted(h, P1_SNAP, why);
	h_free(h);
}

/* The initiator cannot store a part: it gives up, and tells everyone. */
Test(batch, initiator_part_not_stored)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	const char *why = "p0: storage: cannot store a part's state: "
	                  "injected: put_state failed";

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	want_request(h, sid);
	h_reply(h, sid, "{}", 0);
	h_marker(h, "p1", 1, sid, 0);
	h_marker(h, "p2", 1, sid, 0);
	h_fail(h, STORE_OP_PUT_STATE, E_IO, 1);
	part_of(h, "p1", 2, sid, 0);
	h_commit(h);
	want_aborted(h, sid, why);
	cr_assert_str_eq(abort_to(h, 1, sid)->reason, why);
	cr_assert_str_eq(abort_to(h, 2, sid)->reason, why);
	h_free(h);
}

/* ---- sched: schedules, outcomes, deletions, retention (coord_sched.c) ---- */

#define ITEM_OUTCOME   CUT__V1__PEER_ITEM__ITEM_OUTCOME
#define ITEM_OUTCOME_ASK CUT__V1__PEER_ITEM__ITEM_OUTCOME_ASK
#define ITEM_FORGET    CUT__V1__PEER_ITEM__ITEM_FORGET
#define ITEM_FORGOTTEN CUT__V1__PEER_ITEM__ITEM_FORGOTTEN

/* Runs p0's own snapshot id to completion: its state, the peers'
 * markers (link items mseq) and parts (mseq + 1), committed. */
static void
complete_own(struct h *h, const char *id, uint64_t mseq)
{
	want_request(h, id);
	h_reply(h, id, "{\"b\": 0}", 0);
	h_marker(h, "p1", mseq, id, 0);
	h_marker(h, "p2", mseq, id, 0);
	part_of(h, "p1", mseq + 1, id, 0);
	part_of(h, "p2", mseq + 1, id, 0);
	h_commit(h);
}

/* Ticks of a schedule come from the wall clock alone: with initiator p0
 * every 1 s, one start per boundary, none at start-up, none for a tick
 * while the last scheduled snapshot still runs (skipped, counted), none
 * while paused (counted). */
Test(sched, ticks_skip_and_pause)
{
	struct h *h = ready("[schedule]\ninterval = 1s\ninitiator = p0\n"
	                    "timeout = 5s\n");
	struct coord_sched_view v;
	struct errinfo e = {0};
	char first[ENGINE_ID_MAX + 1];

	coord_schedule_view(h->c, &v);
	cr_assert(v.configured && !v.paused);
	cr_assert_str_eq(v.initiator, "p0");
	cr_assert_eq(v.interval_ms, 1000);
	cr_assert_eq(v.timeout_ms, 5000);
	cr_assert_eq(v.next_tick_ms, H_WALL0 + 1000, "the next boundary");
	cr_assert_eq(coord_next_timer(h->c, 100000) <= 1000, 1);
	coord_timers(h->c);
	cr_assert_eq(coord_initiated_in_flight(h->c), 0, "not at start-up");
	h_time(h, 1000);
	coord_timers(h->c);
	cr_assert_eq(coord_initiated_in_flight(h->c), 1);
	coord_schedule_view(h->c, &v);
	cr_assert_eq(v.started, 1);
	snprintf(first, sizeof(first), "%s", v.last_id);
	cr_assert_str_eq(first, "p0:4000000001000");
	coord_timers(h->c); /* the same tick again: nothing */
	h_time(h, 999);
	coord_timers(h->c);
	coord_schedule_view(h->c, &v);
	cr_assert_eq(v.ticks, 1);
	/* Two more ticks while it runs: skipped, never stacked. */
	h_time(h, 1);
	coord_timers(h->c);
	h_time(h, 1000);
	coord_timers(h->c);
	coord_schedule_view(h->c, &v);
	cr_assert_eq(v.ticks, 3);
	cr_assert_eq(v.skipped, 2);
	cr_assert_eq(coord_initiated_in_flight(h->c), 1);
	complete_own(h, first, 1);
	cr_assert_eq(coord_initiated_in_flight(h->c), 0);
	/* A clock that jumps by ten ticks starts one snapshot, not ten. */
	h_time(h, 10000);
	coord_timers(h->c);
	coord_schedule_view(h->c, &v);
	cr_assert_eq(v.started, 2);
	cr_assert_eq(coord_initiated_in_flight(h->c), 1);
	/* Paused: the ticks pass, counted, and nothing starts. */
	cr_assert_eq(coord_schedule_pause(h->c, 1, &e), 0);
	h_time(h, 6000); /* the second one times out meanwhile */
	coord_timers(h->c);
	h_commit(h);
	h_time(h, 1000);
	coord_timers(h->c);
	coord_schedule_view(h->c, &v);
	cr_assert(v.paused);
	cr_assert_eq(v.started, 2);
	cr_assert_eq(v.paused_ticks, 2);
	cr_assert_eq(coord_initiated_in_flight(h->c), 0);
	cr_assert_eq(coord_schedule_pause(h->c, 0, &e), 0);
	h_time(h, 1000);
	coord_timers(h->c);
	coord_schedule_view(h->c, &v);
	cr_assert_eq(v.started, 3);
	h_free(h);
}

/* Rotation: tick k is nodes[k mod 3]'s.  At H_WALL0 (tick 4e9, which is
 * 1 mod 3) p0's ticks are 4e9 + 2, + 5, ...: p0 starts one of every three. */
Test(sched, rotate_takes_every_third_tick)
{
	struct h *h = ready("[schedule]\ninterval = 1s\ninitiator = rotate\n"
	                    "timeout = 500ms\n");
	struct coord_sched_view v;

	coord_schedule_view(h->c, &v);
	cr_assert_eq(v.next_tick_ms, H_WALL0 + 2000);
	for (int i = 0; i < 9; i++) {
		h_time(h, 1000);
		coord_timers(h->c);
		h_commit(h);
	}
	coord_schedule_view(h->c, &v);
	cr_assert_eq(v.ticks, 3);
	cr_assert_eq(v.started, 3, "each one timed out before the next");
	cr_assert_eq(v.skipped, 0);
	h_free(h);
}

Test(sched, no_schedule)
{
	struct h *h = ready(NULL);
	struct coord_sched_view v;
	struct errinfo e = {0};

	coord_schedule_view(h->c, &v);
	cr_assert(!v.configured);
	/* Permanent: the cluster file's, not a state that passes. */
	cr_assert_eq(coord_schedule_pause(h->c, 1, &e), E_CONFIG);
	HAS(e.text, "[schedule]");
	h_time(h, 100000);
	coord_timers(h->c);
	cr_assert_eq(coord_initiated_in_flight(h->c), 0);
	h_free(h);
}

/* The initiator tells both participants the outcome: complete with the
 * verdict; aborted with the reason, after the PeerAbort. */
Test(sched, initiator_tells_the_outcome)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct h_items it = {0};
	const Cut__V1__PeerOutcome *o;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	complete_own(h, sid, 1);
	for (size_t node = 1; node <= 2; node++) {
		memset(&it, 0, sizeof(it));
		h_pull_items(h, node, &it);
		cr_assert_eq(h_count(&it, ITEM_OUTCOME), 1);
		o = h_find(&it, ITEM_OUTCOME, 0)->outcome;
		cr_assert_str_eq(o->snapshot_id, sid);
		cr_assert(o->complete);
		cr_assert(o->has_consistent && o->consistent);
		cr_assert_eq(o->parts, 3);
	}
	snprintf(sid, sizeof(sid), "%s", h_start(h, 1000));
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_ABORT), 1);
	o = h_find(&it, ITEM_OUTCOME, 0)->outcome;
	cr_assert_str_eq(o->snapshot_id, sid);
	cr_assert(!o->complete && !o->has_consistent);
	HAS(o->reason, "no part and no word by the deadline");
	cr_assert_lt(h_find(&it, ITEM_ABORT, 0)->abort->seq, o->seq,
	             "the abort first");
	h_free(h);
}

/* A participant stores the initiator's outcome; from anyone else it is
 * refused; for a snapshot it does not hold it is ignored. */
Test(sched, participant_stores_the_outcome)
{
	struct h *h = ready(NULL);
	struct store_snapshot row;
	uint64_t bad;
	struct pb b;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	h_reply(h, P1_SNAP, "{\"b\": 1}", 0);
	h_marker(h, "p2", 1, P1_SNAP, 0);
	h_commit(h);
	want_row(h, P1_SNAP, STORE_COMPLETE, &row);
	cr_assert_eq(row.outcome_ms, 0);
	cr_assert_eq(row.consistent, -1);
	/* From p2, which did not initiate it: refused. */
	bad = coord_bad_peer(h->c);
	pb_init(&b, "p2");
	pb_outcome(&b, 2, P1_SNAP, 0, "forged", -1, 1);
	h_peer(h, H_C2, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad + 1);
	pb_init(&b, "p1");
	pb_outcome(&b, 2, P1_SNAP, 1, NULL, 1, 3);
	pb_outcome(&b, 3, "p1:77", 0, "unknown here", -1, 1);
	h_peer(h, H_C1, &b);
	h_commit(h);
	cr_assert_eq(coord_bad_peer(h->c), bad + 1, "unknown ids are no fault");
	want_row(h, P1_SNAP, STORE_COMPLETE, &row);
	cr_assert_eq(row.consistent, 1);
	cr_assert_eq(row.outcome_parts, 3);
	cr_assert_neq(row.outcome_ms, 0);
	cr_assert_eq(row.part_status, STORE_COMPLETE);
	/* An abort that comes after (a batch the initiator lost). */
	pb_outcome(&b, 4, P1_SNAP, 0, "p1: storage: disk full", -1, 3);
	h_peer(h, H_C1, &b);
	h_commit(h);
	want_row(h, P1_SNAP, STORE_ABORTED, &row);
	cr_assert_str_eq(row.reason, "p1: storage: disk full");
	cr_assert_eq(row.part_status, STORE_COMPLETE);
	h_free(h);
}

/* An outcome that comes while this node's part still runs (its PeerAbort
 * went with a link the initiator dropped when it learnt of this node's
 * restart) ends the part: completed later, its end would go to a row the
 * outcome has ended, and that failed write would lose the whole batch
 * (seed 63518). */
Test(sched, outcome_ends_a_part_still_running)
{
	struct h *h = ready(NULL);
	struct store_snapshot row;
	struct pb b;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_request(h, P1_SNAP);
	h_commit(h);
	pb_init(&b, "p1");
	pb_outcome(&b, 2, P1_SNAP, 0, "p0 restarted", -1, 2);
	h_peer(h, H_C1, &b);
	cr_assert(!h_view(h, P1_SNAP).running);
	h_reply(h, P1_SNAP, "{}", 0);
	h_marker(h, "p2", 1, P1_SNAP, 0);
	cr_assert_eq(coord_commit(h->c), 0, "the batch is not lost");
	want_row(h, P1_SNAP, STORE_ABORTED, &row);
	cr_assert_str_eq(row.reason, "p0 restarted");
	cr_assert_neq(row.outcome_ms, 0);
	h_free(h);
}

/* A participant whose write of an outcome fails keeps it to store again,
 * up to a bound; one past the bound is lost, and once the database stores
 * again the participant asks the initiator for its outcomes (seed 362). */
Test(sched, participant_asks_for_lost_outcomes)
{
	struct h *h = ready(NULL);
	struct store_snapshot row;
	struct h_items it = {0};
	struct pb b;
	uint64_t seq = 2;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	h_reply(h, P1_SNAP, "{\"b\": 1}", 0);
	h_marker(h, "p2", 1, P1_SNAP, 0);
	h_commit(h);
	h_drain(h);
	h_fail(h, STORE_OP_SET_OUTCOME, E_IO, -1);
	for (int i = 0; i < 33; i++) {
		pb_init(&b, "p1");
		pb_outcome(&b, seq++, P1_SNAP, 1, NULL, 1, 3);
		h_peer(h, H_C1, &b);
		h_commit(h);
	}
	h_fail(h, STORE_OP_SET_OUTCOME, 0, 0);
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_OUTCOME_ASK), 0,
	             "not while the database fails");
	/* The 32 kept are stored again first; the ask comes after. */
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	want_row(h, P1_SNAP, STORE_COMPLETE, &row);
	cr_assert_eq(row.consistent, 1);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_OUTCOME_ASK), 0);
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_OUTCOME_ASK), 1);
	seq = h_find(&it, ITEM_OUTCOME_ASK, 0)->outcome_ask->seq;
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 2, &it);
	cr_assert_eq(h_count(&it, ITEM_OUTCOME_ASK), 0, "p2 lost nothing");
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	for (size_t i = 0; i < h_count(&it, ITEM_OUTCOME_ASK); i++)
		cr_assert_eq(h_find(&it, ITEM_OUTCOME_ASK, i)->outcome_ask->seq,
		             seq, "asked once (the link may send it again)");
	h_free(h);
}

/* A part a restart ended (aborted, "daemon restarted", no outcome heard)
 * is told to its initiator once the new run's first batch commits: one
 * that deleted the snapshot meanwhile deletes this copy again (seed
 * 40008). */
Test(sched, restart_tells_the_initiator_of_ended_parts)
{
	struct h *h = ready(NULL);
	struct store_snapshot row;
	struct h_items it = {0};
	const Cut__V1__PeerAbort *a;
	uint64_t seq;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	h_commit(h);
	want_row(h, P1_SNAP, STORE_IN_PROGRESS, &row);
	h_restart(h, H_EPOCH);
	want_row(h, P1_SNAP, STORE_ABORTED, &row);
	h_link(h);
	coord_timers(h->c);
	h_commit(h);
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_ABORT), 1);
	a = h_find(&it, ITEM_ABORT, 0)->abort;
	cr_assert_str_eq(a->snapshot_id, P1_SNAP);
	cr_assert_str_eq(a->reason, "p0: daemon restarted");
	seq = a->seq;
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 2, &it);
	cr_assert_eq(h_count(&it, ITEM_ABORT), 0, "only to its initiator");
	/* Once: a second turn tells nothing new. */
	h_time(h, 100);
	coord_timers(h->c);
	h_commit(h);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	for (size_t i = 0; i < h_count(&it, ITEM_ABORT); i++)
		cr_assert_eq(h_find(&it, ITEM_ABORT, i)->abort->seq, seq,
		             "told once (the link may send it again): %s %s",
		             h_find(&it, ITEM_ABORT, i)->abort->snapshot_id,
		             h_find(&it, ITEM_ABORT, i)->abort->reason);
	h_free(h);
}

/* An initiator asked for its outcomes tells them again to that node. */
Test(sched, initiator_tells_outcomes_when_asked)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct h_items it = {0};
	struct pb b;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	complete_own(h, sid, 1);
	h_drain(h);
	pb_init(&b, "p1");
	pb_outcome_ask(&b, 3);
	h_peer(h, H_C1, &b);
	h_commit(h);
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_OUTCOME), 1);
	cr_assert_str_eq(h_find(&it, ITEM_OUTCOME, 0)->outcome->snapshot_id,
	                 sid);
	cr_assert(h_find(&it, ITEM_OUTCOME, 0)->outcome->complete);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 2, &it);
	cr_assert_eq(h_count(&it, ITEM_OUTCOME), 0, "only to who asked");
	h_free(h);
}

/* A restart of p2 that aborts p0's own snapshot in a batch whose writes
 * fail: the abort's outcome first went on p2's old link, which the
 * restart drops, and the row it would be told again from is not on disk.
 * It still goes to p2's new run, which may hold the snapshot from a
 * marker another node passed on (seeds 61590, 62179). */
Test(sched, outcome_of_an_abort_by_a_restart_in_a_lost_batch)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct h_items it = {0};
	const Cut__V1__PeerOutcome *o = NULL;
	struct pb b;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_commit(h);
	h_drain(h);
	h_fail_lost(h, STORE_OP_FINISH, E_IO, -1);
	pb_init(&b, "p2");
	b.epoch = H_E2 + 1;
	pb_hello(&b, 1, b.epoch);
	h_peer(h, H_C2, &b);
	cr_assert_eq(coord_commit(h->c), E_STORAGE);
	h_pull_items(h, 2, &it);
	for (size_t i = 0; i < h_count(&it, ITEM_OUTCOME); i++)
		if (strcmp(h_find(&it, ITEM_OUTCOME, i)->outcome->snapshot_id,
		           sid) == 0)
			o = h_find(&it, ITEM_OUTCOME, i)->outcome;
	cr_assert_not_null(o, "the outcome goes on p2's new link");
	cr_assert(!o->complete);
	HAS(o->reason, "p2 restarted");
	h_free(h);
}

/* Deleting p0's own snapshot: its row, a pending deletion per peer, a
 * PeerForget to each; PeerForgotten clears one; a restart of p2 sends
 * p2's again; another node's snapshot is deleted here only. */
Test(sched, forget_everywhere_and_again_after_a_restart)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	struct h_items it = {0};
	struct store_snapshot row;
	struct pb b;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	complete_own(h, sid, 1);
	h_drain(h);
	cr_assert_eq(coord_delete(h->c, sid, &e), 0);
	h_commit(h);
	cr_assert_eq(h_row(h, sid, &row), E_NOENT);
	cr_assert_eq(coord_forgets_pending(h->c), 2);
	h_pull_items(h, 1, &it);
	cr_assert_str_eq(h_find(&it, ITEM_FORGET, 0)->forget->snapshot_id, sid);
	pb_init(&b, "p1");
	pb_forget(&b, 3, sid, 1);
	h_peer(h, H_C1, &b);
	h_commit(h);
	cr_assert_eq(coord_forgets_pending(h->c), 1, "p2's is left");
	/* p2 restarts: its link starts afresh, and the deletion goes again. */
	pb_init(&b, "p2");
	b.epoch = H_E2 + 1;
	pb_hello(&b, 1, b.epoch);
	h_peer(h, H_C2, &b);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 2, &it);
	cr_assert_eq(h_count(&it, ITEM_FORGET), 1);
	cr_assert_eq(h_find(&it, ITEM_FORGET, 0)->forget->seq, 1,
	             "first on the new link");
	pb_init(&b, "p2");
	b.epoch = H_E2 + 1;
	pb_forget(&b, 1, sid, 1);
	h_peer(h, H_C2, &b);
	h_commit(h);
	cr_assert_eq(coord_forgets_pending(h->c), 0);
	/* p1's snapshot held here: deleted here, nobody told. */
	h_marker(h, "p1", 4, P1_SNAP, 0);
	h_reply(h, P1_SNAP, "{\"b\": 1}", 0);
	pb_init(&b, "p2");
	b.epoch = H_E2 + 1;
	pb_marker(&b, 2, P1_SNAP, 0, 0);
	h_peer(h, H_C2, &b);
	h_commit(h);
	h_drain(h);
	cr_assert_eq(coord_delete(h->c, P1_SNAP, &e), 0);
	h_commit(h);
	memset(&it, 0, sizeof(it));
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_FORGET), 0);
	cr_assert_eq(coord_forgets_pending(h->c), 0);
	h_free(h);
}

/* A participant that recorded a deleted snapshot again tells its
 * initiator (its abort); the pending deletion the initiator writes for
 * that copy is lost with its batch.  The abort does not come again, so
 * the initiator writes the deletion again once its database works, and
 * the copy goes (seed 62365: it stayed for good). */
Test(sched, late_copy_deleted_again_after_a_lost_batch)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	struct h_items it = {0};
	struct pb b;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	complete_own(h, sid, 1);
	cr_assert_eq(coord_delete(h->c, sid, &e), 0);
	h_commit(h);
	h_drain(h);
	pb_init(&b, "p1");
	pb_forget(&b, 3, sid, 1);
	h_peer(h, H_C1, &b);
	pb_init(&b, "p2");
	pb_forget(&b, 3, sid, 1);
	h_peer(h, H_C2, &b);
	h_commit(h);
	cr_assert_eq(coord_forgets_pending(h->c), 0);
	/* p1 recorded it again (a late marker after a restart) and tells. */
	h_fail_lost(h, STORE_OP_FORGET_ADD, E_IO, 1);
	pb_init(&b, "p1");
	pb_abort(&b, 4, sid, "p1: channel numbering resumed after a restart",
	         0);
	h_peer(h, H_C1, &b);
	cr_assert_eq(coord_commit(h->c), E_STORAGE);
	cr_assert_eq(coord_forgets_pending(h->c), 0, "lost with the batch");
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	cr_assert_eq(coord_forgets_pending(h->c), 1, "written again");
	h_pull_items(h, 1, &it);
	cr_assert_geq(h_count(&it, ITEM_FORGET), 1);
	cr_assert_str_eq(h_find(&it, ITEM_FORGET, 0)->forget->snapshot_id, sid);
	h_free(h);
}

/* A participant told to forget: deletes its copy and answers, also for
 * one it never held; a PeerForget from a node that did not initiate the
 * snapshot is refused. */
Test(sched, participant_forgets)
{
	struct h *h = ready(NULL);
	struct store_snapshot row;
	struct h_items it = {0};
	uint64_t bad;
	struct pb b;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	h_reply(h, P1_SNAP, "{\"b\": 1}", 0);
	h_marker(h, "p2", 1, P1_SNAP, 0);
	h_commit(h);
	h_drain(h);
	bad = coord_bad_peer(h->c);
	pb_init(&b, "p2");
	pb_forget(&b, 2, P1_SNAP, 0);
	h_peer(h, H_C2, &b);
	cr_assert_eq(coord_bad_peer(h->c), bad + 1);
	want_row(h, P1_SNAP, STORE_COMPLETE, &row);
	pb_init(&b, "p1");
	pb_forget(&b, 2, P1_SNAP, 0);
	pb_forget(&b, 3, "p1:9", 0);
	h_peer(h, H_C1, &b);
	h_commit(h);
	cr_assert_eq(h_row(h, P1_SNAP, &row), E_NOENT);
	h_pull_items(h, 1, &it);
	cr_assert_eq(h_count(&it, ITEM_FORGOTTEN), 2);
	cr_assert_str_eq(h_find(&it, ITEM_FORGOTTEN, 0)->forgotten->snapshot_id,
	                 P1_SNAP);
	cr_assert_str_eq(h_find(&it, ITEM_FORGOTTEN, 1)->forgotten->snapshot_id,
	                 "p1:9");
	h_free(h);
}

/* Retention keep_last = 2: after each own snapshot ends, the older
 * complete ones beyond 2 go (everywhere), kept ones stay and do not
 * count; aborted ones go after keep_aborted. */
Test(sched, retention_keeps_the_newest_and_the_kept)
{
	struct h *h = ready("[retention]\nkeep_last = 2\nkeep_aborted = 5s\n");
	char ids[4][ENGINE_ID_MAX + 1], ab[ENGINE_ID_MAX + 1];
	struct store_snapshot row;
	struct errinfo e = {0};
	uint64_t seq = 1;

	for (int i = 0; i < 4; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%s", h_start(h, 0));
		complete_own(h, ids[i], seq);
		seq += 2;
		if (i == 0)
			cr_assert_eq(coord_keep(h->c, ids[0], 1, &e), 0);
		h_time(h, 10);
		coord_timers(h->c);
		h_commit(h);
	}
	cr_assert_eq(h_row(h, ids[0], &row), 0, "kept");
	cr_assert_eq(row.keep, 1);
	cr_assert_eq(h_row(h, ids[1], &row), E_NOENT, "third newest");
	cr_assert_eq(h_row(h, ids[2], &row), 0);
	cr_assert_eq(h_row(h, ids[3], &row), 0);
	cr_assert_eq(coord_forgets_pending(h->c), 2, "ids[1] at p1 and p2");
	/* An aborted one stays keep_aborted, then goes. */
	snprintf(ab, sizeof(ab), "%s", h_start(h, 1000));
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	want_row(h, ab, STORE_ABORTED, &row);
	h_time(h, 5001);
	cr_assert_eq(coord_keep(h->c, ids[0], 0, &e), 0);
	h_time(h, 60000); /* the periodic pass */
	coord_timers(h->c);
	h_commit(h);
	cr_assert_eq(h_row(h, ab, &row), E_NOENT);
	cr_assert_eq(h_row(h, ids[0], &row), E_NOENT, "no longer kept");
	cr_assert_eq(h_row(h, ids[3], &row), 0);
	cr_assert_eq(coord_keep(h->c, "p0:1", 1, &e), E_NOENT);
	h_free(h);
}

/* The counters for metrics (coord_stats.c): a snapshot completed 30 ms
 * after its start lands in the 50 ms bucket of the duration histogram;
 * one that ends at its deadline counts as aborted in its reason's class;
 * neither is counted twice. */
Test(stats, snapshots_counted)
{
	struct h *h = ready(NULL);
	struct coord_counters n;
	struct store_snapshot row;
	char sid[ENGINE_ID_MAX + 1], ab[ENGINE_ID_MAX + 1];
	uint64_t aborted = 0;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	coord_counters(h->c, &n);
	cr_assert_eq(n.started, 1);
	cr_assert_eq(n.completed, 0);
	want_request(h, sid);
	h_reply(h, sid, "{\"b\": 0}", 0);
	h_marker(h, "p1", 1, sid, 0);
	h_marker(h, "p2", 1, sid, 0);
	h_time(h, 30);
	part_of(h, "p1", 2, sid, 0);
	part_of(h, "p2", 2, sid, 0);
	h_commit(h);
	coord_counters(h->c, &n);
	cr_assert_eq(n.completed, 1);
	cr_assert_eq(coord_duration_le_ms[3], 50);
	cr_assert_eq(n.duration_count[3], 1);
	cr_assert_eq(n.duration_sum_ms, 30);
	h_drain(h);

	snprintf(ab, sizeof(ab), "%s", h_start(h, 1000));
	h_time(h, 1000);
	coord_timers(h->c);
	h_commit(h);
	want_row(h, ab, STORE_ABORTED, &row);
	coord_counters(h->c, &n);
	cr_assert_eq(n.started, 2);
	cr_assert_eq(n.completed, 1);
	cr_assert_eq(n.aborted[coord_abort_classify(row.reason)], 1, "%s",
	             row.reason);
	for (int k = 0; k < COORD_ABORT_CLASSES; k++)
		aborted += n.aborted[k];
	cr_assert_eq(aborted, 1);
	cr_assert_eq(n.duration_count[3], 1, "an abort has no duration");
	h_free(h);
}

/* ---- Events (coord_next_event()) ---- */

/* The next event, which must be a snapshot's end. */
static struct coord_event
want_end(struct h *h)
{
	struct coord_event ev;

	cr_assert_eq(coord_next_event(h->c, &ev), 1, "an event");
	cr_assert_eq(ev.kind, COORD_EV_SNAP_ENDED);
	return ev;
}

static void
want_no_event(struct h *h)
{
	struct coord_event ev;

	cr_assert_eq(coord_next_event(h->c, &ev), 0, "no event, got %d on %s",
	             ev.kind, ev.id);
}

/* A participant's part completes: told once, and only after the commit
 * made it durable; nothing is told twice. */
Test(event, part_done_told_once_after_commit)
{
	struct h *h = ready(NULL);
	struct coord_event ev;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	want_no_event(h);
	want_request(h, P1_SNAP);
	h_reply(h, P1_SNAP, "{}", 0);
	h_marker(h, "p2", 1, P1_SNAP, 0);
	cr_assert(!h_view(h, P1_SNAP).running);
	want_no_event(h); /* not committed yet */
	h_commit(h);
	ev = want_end(h);
	cr_assert_str_eq(ev.id, P1_SNAP);
	cr_assert_eq(ev.initiator, 0);
	cr_assert_eq(ev.complete, 1);
	want_no_event(h);
	h_commit(h);
	want_no_event(h);
	h_free(h);
}

/* An abort is readable at once (in the open batch): told before the
 * commit, as not complete. */
Test(event, abort_told_at_once)
{
	struct h *h = ready(NULL);
	struct pb b;
	struct coord_event ev;

	h_marker(h, "p1", 1, P1_SNAP, 0);
	pb_init(&b, "p1");
	pb_abort(&b, 2, P1_SNAP, "p1: says so", 0);
	h_peer(h, H_C1, &b);
	ev = want_end(h);
	cr_assert_str_eq(ev.id, P1_SNAP);
	cr_assert_eq(ev.complete, 0);
	want_no_event(h);
	h_free(h);
}

/* The initiator's snapshot completes: told as this node's, complete;
 * ended in the view exactly when told. */
Test(event, initiator_complete_told)
{
	struct h *h = ready(NULL);
	char sid[ENGINE_ID_MAX + 1];
	struct coord_event ev;

	snprintf(sid, sizeof(sid), "%s", h_start(h, 0));
	h_commit(h);
	want_request(h, sid);
	h_reply(h, sid, "{\"b\": 0}", 0);
	h_marker(h, "p1", 1, sid, 0);
	h_marker(h, "p2", 1, sid, 0);
	part_of(h, "p1", 2, sid, 0);
	part_of(h, "p2", 2, sid, 0);
	cr_assert(!h_view(h, sid).ended);
	want_no_event(h);
	h_commit(h);
	cr_assert(h_view(h, sid).ended);
	ev = want_end(h);
	cr_assert_str_eq(ev.id, sid);
	cr_assert_eq(ev.initiator, 1);
	cr_assert_eq(ev.complete, 1);
	want_no_event(h);
	h_free(h);
}

/* Ends no one took are forgotten with their snapshot: nothing is told
 * of a snapshot no longer known. */
Test(event, untold_end_forgotten_with_its_snapshot)
{
	struct h *h = ready(NULL);

	p1_part_done(h);
	h_commit(h);
	/* Taken neither now nor later: */
	h_time(h, KEEP_ENDED_MS + 1);
	coord_timers(h->c);
	cr_assert(!h_view(h, P1_SNAP).known);
	want_no_event(h);
	h_free(h);
}
