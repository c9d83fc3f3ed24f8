/*
 * lab.h - a deterministic, in-memory cluster that drives the real engine.
 *
 * The lab holds nodes that own conserved tokens and directed channels that
 * hold queues of frames (application messages and markers).  Nothing
 * happens on its own: the caller sends, initiates snapshots and picks which
 * frame to deliver next, so the scripted runs (cutlab run), the timed
 * simulation (cutlab audit) and the property tests are exact replays.
 *
 * Each node's application reads a down queue: a delivered message joins it,
 * and so does a state request -- behind the queued messages with the
 * aligned cut, ahead of them with the unaligned cut.  By default the
 * application takes every item at once, so the queue is always empty; with
 * queued applications (lab_set_queued_apps()) it takes one item at each
 * lab_take(), so the caller decides how far behind its deliveries it runs.
 * A message's tokens join the balance when the application takes it, and a
 * node's state is its balance when it takes (aligned) or answers
 * (unaligned) the request.
 *
 * Beside what the engines record, the lab keeps the ground truth: when every
 * message was sent, delivered and taken and when every node recorded, so
 * that a recorded snapshot can be judged against what really was in flight:
 * sent before the sender recorded, not taken before the receiver recorded.
 */
#ifndef CUT_LAB_H
#define CUT_LAB_H

#include "cuterr.h"

#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "engine.h"

/* Calls that can fail return 0 or an E_* code (cuterr.h). */

#define LAB_NAME_MAX 32

struct lab;

/* A frame waiting on a channel. */
struct lab_frame {
	int is_marker;
	uint64_t seq;   /* application message: sender's sequence number */
	int64_t amount; /* application message: tokens carried */
	size_t snap;    /* marker: snapshot index */
	uint64_t count; /* marker: the count it carries */
	uint64_t sent;  /* step at which it was queued */
	uint64_t due;   /* scheduler's delivery time, set by the due hook */
};

/* An item of a node's down queue, which its application takes in order. */
struct lab_item {
	int is_request; /* a state request, else an application message */
	size_t ch;      /* message: the lab channel it came on */
	uint64_t seq;   /* message: sender's sequence number */
	int64_t amount; /* message: tokens carried */
	size_t snap;    /* request: snapshot index */
};

/* Called when a frame joins channel ch, to give it a delivery time. */
typedef uint64_t (*lab_due_fn)(void *arg, size_t ch, const struct lab_frame *f);

/* What the lab knows of one snapshot once the run is over. */
struct lab_snapshot_result {
	size_t initiator;
	int complete;          /* every node's part complete */
	int64_t node_total;    /* sum of recorded balances */
	int64_t channel_total; /* sum of recorded in-transit amounts */
	uint64_t channel_messages;
	/* Ground truth, from the send and delivery steps. */
	uint64_t missing; /* in flight at the cut, not recorded */
	uint64_t extra;   /* recorded, not in flight at the cut */
	uint64_t receive_without_send;
	uint64_t overtakes; /* (marker, older message) pairs out of order */
	/* Unaligned cut: messages recorded from the down queues, which had
	 * been delivered but not taken when their node recorded. */
	uint64_t queued;
	struct audit_report audit;
};

/* Creates an empty lab; declarations follow.  The caller owns *ret_lab. */
int lab_new(enum engine_mode mode, struct lab **ret_lab);
void lab_free(struct lab *lab);

/* Declarations, before the first event. */
int lab_add_node(struct lab *lab, const char *name, int64_t tokens);
int lab_add_channel(struct lab *lab, const char *src, const char *dst);
/* Sets the hook that gives each queued frame its due time. */
void lab_set_due(struct lab *lab, lab_due_fn fn, void *arg);
/* Sets the engines' cut (default aligned), before the first event
 * (E_ORDER).  Unaligned needs counted markers (E_INVAL otherwise),
 * and then lab_deliver() refuses to let a message pass an older one
 * (E_SEQ), as the engine counts taken messages by seq. */
int lab_set_cut(struct lab *lab, enum engine_cut cut);
/* With queued = 1, applications take their down queues only at
 * lab_take(); with 0 (the default) at once.  Before the first event. */
int lab_set_queued_apps(struct lab *lab, int queued);

/* Checks the declarations (at least one node, strongly connected) and
 * starts the engines.  The first event does it too; later calls do
 * nothing. */
int lab_start(struct lab *lab);

/* Events.  The first one checks the declarations and starts the engines. */
int lab_send(struct lab *lab, const char *src, const char *dst, int64_t amount);
/* Stores the new snapshot's index (0, 1, ...) in *ret_index. */
int lab_snapshot(struct lab *lab, const char *node, size_t *ret_index);
/* Delivers the k-th oldest frame (k >= 1) of channel ch: a message joins
 * its receiver's down queue, a marker goes to its engine. */
int lab_deliver(struct lab *lab, size_t ch, size_t k);
/* node's application takes the oldest item of its down queue, in a step
 * of its own: a message (its tokens join the balance) or a state request
 * (the node records).  E_EMPTY if there is none, E_INVAL for no such
 * node or before the lab started. */
int lab_take(struct lab *lab, size_t node);

/* Lookups. */
int lab_node(const struct lab *lab, const char *name, size_t *ret_index);
int lab_channel(const struct lab *lab, const char *src, const char *dst,
                size_t *ret_index);
size_t lab_nodes(const struct lab *lab);
size_t lab_channels(const struct lab *lab);
const char *lab_node_name(const struct lab *lab, size_t node);
void lab_channel_ends(const struct lab *lab, size_t ch, size_t *ret_src,
                      size_t *ret_dst);
int64_t lab_balance(const struct lab *lab, size_t node);
int64_t lab_total(const struct lab *lab); /* initial tokens, conserved */
size_t lab_queue_len(const struct lab *lab, size_t ch);
const struct lab_frame *lab_queue_at(const struct lab *lab, size_t ch,
                                     size_t k);
uint64_t lab_app_messages(const struct lab *lab); /* sent so far */
size_t lab_snapshots(const struct lab *lab);
enum engine_mode lab_mode(const struct lab *lab);
enum engine_cut lab_cut(const struct lab *lab);
int lab_queued_apps(const struct lab *lab);
/* node's down queue: its length, and its k-th oldest item (k >= 1). */
size_t lab_down_len(const struct lab *lab, size_t node);
const struct lab_item *lab_down_at(const struct lab *lab, size_t node,
                                   size_t k);

/* What node recorded for snapshot s, and whether it has recorded. */
int lab_recorded_tokens(const struct lab *lab, size_t s, size_t node,
                        int64_t *ret_tokens);
/* The amounts recorded on channel ch for snapshot s, in order. */
size_t lab_recorded_count(const struct lab *lab, size_t s, size_t ch);
int64_t lab_recorded_amount(const struct lab *lab, size_t s, size_t ch,
                            size_t i);

/* Whether channel ch's recording for s is finished. */
int lab_channel_done(const struct lab *lab, size_t s, size_t ch);
/* Whether node's part of snapshot s is complete. */
int lab_part_complete(const struct lab *lab, size_t s, size_t node);
/* The i-th seq recorded on channel ch for snapshot s, in recording order
 * (i < lab_recorded_count()); 0 if there is none. */
uint64_t lab_recorded_seq(const struct lab *lab, size_t s, size_t ch, size_t i);
/* Channel ch's record for s as the audit of lab_result() sees it: the
 * names of its ends (the lab's), m, m_high and n as its receiver's engine
 * closed it, and the summary of the recorded seqs.  E_INVAL unless the
 * recording is finished. */
int lab_recorded_channel(const struct lab *lab, size_t s, size_t ch,
                         struct audit_channel *ret);

/* The audit's input for a snapshot, exactly as lab_result() runs it:
 * every declared node and channel, the nodes whose part is complete and
 * the channels whose recording is finished (lab_recorded_channel()), each
 * in declaration order.  recorded is in.recorded, writable, so that a
 * caller can alter the input and run audit_run() itself. */
struct lab_audit_input {
	struct audit_input in;
	const char **nodes, **parts, **chan_src, **chan_dst; /* behind in */
	struct audit_channel *recorded;
};
/* Fills *ret for snapshot s; the caller frees it with
 * lab_audit_input_free().  The names stay the lab's. */
int lab_audit_input(const struct lab *lab, size_t s,
                    struct lab_audit_input *ret);
void lab_audit_input_free(struct lab_audit_input *a);

/* Judges snapshot s: the engine's records through the audit, and the
 * ground truth.  Fills *ret. */
int lab_result(const struct lab *lab, size_t s,
               struct lab_snapshot_result *ret);


/* splitmix64: a small PRNG that gives the same numbers on every platform,
 * so simulations replay exactly from their seed. */
struct lab_rng {
	uint64_t s;
};
uint64_t lab_rng_next(struct lab_rng *r);
/* A number in 0 .. n-1 (n > 0). */
uint64_t lab_rng_below(struct lab_rng *r, uint64_t n);

#endif /* CUT_LAB_H */
