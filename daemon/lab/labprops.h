/*
 * labprops.h - random scenarios checked against the ground truth.
 *
 * Each scenario draws a strongly connected topology of 2-12 nodes (a ring
 * plus random chords), random balances and transfers, 1-5 snapshots from
 * random initiators at random moments (so some run concurrently), and a
 * random delivery order: FIFO; non-FIFO where a marker may overtake older
 * application messages; or any order at all.  Every snapshot is then judged
 * twice: by the audit, and by the ground truth.
 *
 * With queued applications the nodes' applications also take their down
 * queues at random steps, so that state requests meet queued messages:
 * aligned requests wait behind them, unaligned ones overtake them and the
 * ground truth judges by the steps the applications really took each
 * message.
 */
#ifndef CUT_LABPROPS_H
#define CUT_LABPROPS_H

#include <stdint.h>

#include "engine.h"

/* How the lab may reorder frames on a channel. */
enum labprops_order {
	LABPROPS_FIFO,     /* always the oldest frame */
	LABPROPS_OVERTAKE, /* a marker may pass older messages */
	LABPROPS_ANY,      /* any frame, messages included */
};

struct labprops_result {
	uint64_t scenarios, snapshots;
	uint64_t incomplete; /* snapshots that never completed */
	uint64_t not_conserved;
	uint64_t wrong;          /* ground truth: not a consistent cut */
	uint64_t flagged;        /* wrong, and the audit said so */
	uint64_t silent;         /* wrong, and the audit passed it */
	uint64_t false_alarms;   /* right, and the audit failed it */
	uint64_t overtakes;      /* marker overtakes that happened */
	uint64_t queued;         /* recorded from down queues */
	uint64_t first_bad_seed; /* scenario seed of the first problem */
	int have_bad;
};

/* Runs n scenarios seeded seed, seed+1, ...  Returns 0 or a LAB_E* code. */
int labprops_run(uint64_t seed, uint64_t n, enum engine_mode mode,
                 enum labprops_order order, struct labprops_result *ret);

struct labprops_options {
	enum engine_mode mode;
	enum labprops_order order;
	enum engine_cut cut;
	int queued_apps; /* applications take their down queues at random */
};

/* As labprops_run(), with a cut and application queues.  The unaligned
 * cut needs counted markers and application messages in order on each
 * channel, so it is refused (E_INVAL) with classic markers or
 * LABPROPS_ANY. */
int labprops_run_opts(uint64_t seed, uint64_t n,
                      const struct labprops_options *opts,
                      struct labprops_result *ret);

#endif /* CUT_LABPROPS_H */
