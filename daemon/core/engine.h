/*
 * engine.h - the Chandy-Lamport snapshot engine of one node.
 *
 * The engine is pure: it owns no sockets, no clock and no threads.  Its
 * caller feeds it events in the order they happen at the node and, after
 * each event, reads the actions the engine wants performed.  The daemon, the
 * lab and the tests all drive this same code.
 *
 * Channels are named by local index: incoming channels 0 .. n_in-1 and
 * outgoing channels 0 .. n_out-1.  The caller maps them to node names.
 * Application messages on each channel are numbered from 1 by their sender
 * ("seq"); a marker's count is the number of application messages sent on
 * its channel before the sender recorded.
 */
#ifndef CUT_ENGINE_H
#define CUT_ENGINE_H

#include "cuterr.h"

#include <stddef.h>
#include <stdint.h>

/* Longest snapshot id, not counting the terminating NUL. */
#define ENGINE_ID_MAX 64

/* Calls that can fail return 0 or an E_* code (cuterr.h). */

enum engine_mode {
	/* The 1985 rules: a marker's position closes its channel. */
	ENGINE_CLASSIC,
	/* The marker's count closes its channel: messages m+1 .. n. */
	ENGINE_COUNTED,
};

/* Where a state request falls in the application's down stream. */
enum engine_cut {
	/* Behind every delivery already queued (the default): m is what had
	 * entered the down stream when the snapshot started here. */
	ENGINE_CUT_ALIGNED,
	/* Ahead of them: m is what the application took; what it had not
	 * taken is in transit (ENGINE_RECORD_QUEUED). */
	ENGINE_CUT_UNALIGNED,
};

enum engine_action_kind {
	/* Record the local state for snap: the caller inserts a state
	 * request into the application's down stream now -- behind the
	 * deliveries already queued with the aligned cut, ahead of them with
	 * the unaligned cut -- and reports the answer with
	 * engine_state_recorded() (aligned) or engine_state_recorded_taken()
	 * (either). */
	ENGINE_REQUEST_STATE,
	/* Send Marker(snap, count) on outgoing channel chan, after every
	 * application message already sent on it. */
	ENGINE_SEND_MARKER,
	/* The message just delivered on incoming channel chan, with sender
	 * sequence number seq, belongs to snap's state of that channel. */
	ENGINE_RECORD_MESSAGE,
	/* Recording of incoming channel chan for snap is finished: m
	 * messages were delivered before the node recorded, the marker
	 * counted n, and count messages were recorded. */
	ENGINE_CHANNEL_DONE,
	/* The node's part of snap is complete: local state recorded and
	 * every incoming channel done. */
	ENGINE_PART_COMPLETE,
	/* Unaligned cut only.  The messages with seqs seq .. seq + count - 1
	 * on incoming channel chan, which entered the down stream before the
	 * state request but were not taken by the application, belong to
	 * snap's state of that channel: the application had not received
	 * them when it recorded, so they were in transit.  The caller records
	 * them, in seq order, from its own queue, ahead of every message it
	 * was told to record for snap on chan so far (those were all
	 * delivered after the request, so their seqs are higher).  count is
	 * never 0. */
	ENGINE_RECORD_QUEUED,
};

struct engine_action {
	enum engine_action_kind kind;
	const char *snap; /* borrowed: valid until the next engine call */
	size_t chan;
	uint64_t seq;   /* RECORD_MESSAGE; RECORD_QUEUED: the first */
	uint64_t count; /* SEND_MARKER: n; CHANNEL_DONE: messages recorded */
	uint64_t m, n;  /* CHANNEL_DONE */
	/* CHANNEL_DONE: the highest seq delivered before the cut; equals m
	 * when the transport kept application messages in order, and always
	 * with the unaligned cut, whose deliveries come in seq order. */
	uint64_t m_high;
};

/* Where a snapshot stands at this node; see engine.c for the diagram. */
enum engine_snap_state {
	ENGINE_S_REQUESTED, /* state requested, not yet in */
	ENGINE_S_RECORDED,  /* state in, markers sent, channels recording */
	ENGINE_S_COMPLETE,  /* part complete */
	ENGINE_S_ABORTED,   /* given up by the caller */
};

struct engine;

/*
 * Creates an engine for a node with n_in incoming and n_out outgoing
 * channels.  On success stores the engine in *ret_engine, which the caller
 * owns and releases with engine_free().
 */
int engine_new(enum engine_mode mode, size_t n_in, size_t n_out,
               struct engine **ret_engine);

/* Releases the engine and everything it holds.  Accepts NULL. */
void engine_free(struct engine *e);

/* Returns 1 if id is an acceptable snapshot id: 1..ENGINE_ID_MAX bytes of
 * printable ASCII other than space. */
int engine_id_valid(const char *id);

/*
 * Sets the cut of e.  Unaligned needs ENGINE_COUNTED mode (E_INVAL
 * otherwise), because an unaligned channel can only be judged once m is
 * known, by counting m + recorded against the marker's n; and a caller whose
 * deliveries on each channel come in seq order (seq == delivered count + 1;
 * engine_delivered refuses others with E_INVAL in unaligned mode),
 * so that "the first taken[i] messages" are seqs 1 .. taken[i].  Refused
 * with E_STATE while a snapshot is in progress, whose m would change
 * meaning half-way.  Clears the previous actions.
 */
int engine_set_cut(struct engine *e, enum engine_cut cut);
enum engine_cut engine_cut(const struct engine *e);

/*
 * Events.  Each clears the previous actions and leaves the new ones to be
 * read with engine_actions().  On error no action is produced and the
 * engine is unchanged.
 */

/* This node initiates snapshot id (a copy is kept). */
int engine_initiate(struct engine *e, const char *id);

/* The application sent a message on outgoing channel out.  On success
 * stores its sequence number in *ret_seq (may be NULL). */
int engine_sent(struct engine *e, size_t out, uint64_t *ret_seq);

/* An application message with sender sequence number seq from incoming
 * channel in joined the down stream toward the application.  In unaligned
 * mode seq must be the channel's delivered count + 1 (E_INVAL
 * otherwise): the engine counts taken messages by seq. */
int engine_delivered(struct engine *e, size_t in, uint64_t seq);

/* Marker(id, n) arrived on incoming channel in.  In unaligned mode, while
 * id's state is requested but not recorded, m is unknown: the marker only
 * stores n, and the channel is judged when the state is recorded. */
int engine_marker(struct engine *e, size_t in, const char *id, uint64_t n);

/* The application answered the state request for id: its state now holds
 * every delivery before the request and every send before this call.
 * Aligned cut only: in unaligned mode the engine cannot know what the
 * application took, so this is E_INVAL. */
int engine_state_recorded(struct engine *e, const char *id);

/*
 * The application recorded its state for id after taking taken[i] messages
 * (seqs 1 .. taken[i]) of incoming channel i (n_in entries), and every send
 * before this call.
 *
 * In unaligned mode this replaces engine_state_recorded(): each taken[i]
 * must be <= the number delivered on channel i when the request was made
 * (E_INVAL otherwise, nothing changes; taken may be NULL only when
 * n_in is 0); m becomes taken[i].  The actions are, in order: one
 * RECORD_QUEUED per channel with a nonempty range taken[i]+1 .. (delivered
 * at the request, or the marker's n if that is known and smaller); a
 * SEND_MARKER per outgoing channel; a CHANNEL_DONE (m = m_high = taken[i])
 * for each channel whose marker came while the request was pending and
 * whose messages m+1 .. n are all recorded now; PART_COMPLETE if that
 * closed the last one.
 *
 * In aligned mode taken may be NULL or must equal the m fixed at the
 * request (E_INVAL otherwise), so a caller that counts what its
 * application took can have the engine check it; it then acts exactly as
 * engine_state_recorded().
 */
int engine_state_recorded_taken(struct engine *e, const char *id,
                                const uint64_t *taken);

/* Gives up on id (e.g. past its deadline).  Later events for it (markers,
 * state_recorded) are refused with E_STATE until engine_forget(). */
int engine_abort(struct engine *e, const char *id);

/* Drops every trace of a finished or aborted snapshot.  A marker for id
 * that arrives later starts it afresh, so forget only what is long done. */
int engine_forget(struct engine *e, const char *id);

/* The actions produced by the last event, borrowed until the next call.
 * Stores their number in *ret_n. */
const struct engine_action *engine_actions(const struct engine *e,
                                           size_t *ret_n);

/* Where snapshot id stands here; E_NOENT if unknown. */
int engine_state(const struct engine *e, const char *id,
                 enum engine_snap_state *ret_state);

/* Number of snapshots known and not complete or aborted. */
size_t engine_in_progress(const struct engine *e);

/* Incoming channels of id still recording; E_NOENT if unknown. */
int engine_channels_open(const struct engine *e, const char *id,
                         size_t *ret_open);

/* The peer across a channel restarted and numbers its messages from 1
 * again: forget the counts of incoming channel in / outgoing channel out.
 * Snapshots in progress should be aborted first; their counts are moot. */
int engine_reset_in(struct engine *e, size_t in);
int engine_reset_out(struct engine *e, size_t out);

/* A daemon that restarted learns where a channel's numbering stands from
 * the applications, which outlive it: count messages were sent on out /
 * delivered on in before.  The next is count + 1.  Touches no snapshot;
 * E_STATE while one is in progress, whose counts would change
 * meaning. */
int engine_resume_in(struct engine *e, size_t in, uint64_t count);
int engine_resume_out(struct engine *e, size_t out, uint64_t count);

/* Messages sent so far on out / delivered so far (entered the down
 * stream, taken or not) on in. */
uint64_t engine_sent_count(const struct engine *e, size_t out);
uint64_t engine_delivered_count(const struct engine *e, size_t in);

enum engine_mode engine_mode(const struct engine *e);


#endif /* CUT_ENGINE_H */
