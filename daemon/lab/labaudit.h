/*
 * labaudit.h - the token-bank audit grid of cutlab (cutlab audit).
 *
 * Three processes P0, P1, P2 start with 18, 14 and 12 tokens and trade at
 * random under a seeded PRNG and simulated time; one snapshot is taken per
 * scenario and judged against the simulation's ground truth.
 *
 * With the unaligned cut the applications lag behind their deliveries
 * (each takes one item of its down queue with probability 1/3 a tick), so
 * that state requests overtake queued messages.
 */
#ifndef CUT_LABAUDIT_H
#define CUT_LABAUDIT_H

#include <stdint.h>

#include "engine.h"

#define LABAUDIT_CASES      4
#define LABAUDIT_MAX_CHECKS 7

struct labaudit_check {
	const char *name;
	int passed;
};

struct labaudit_row {
	const char *scenario;
	int expect_pass;
	int64_t snapshot_total, channel_amount, node_total;
	uint64_t channel_messages, app_messages, missing, overtakes;
	uint64_t queued; /* recorded from down queues (unaligned cut) */
	int consistent;  /* the audit's verdict */
	struct labaudit_check checks[LABAUDIT_MAX_CHECKS];
	int nchecks, npassed;
};

/* Runs the four scenarios with markers of the given mode and fills rows.
 * Returns 0, or a LAB_E* code if the simulation itself failed. */
int labaudit_run(enum engine_mode mode,
                 struct labaudit_row rows[LABAUDIT_CASES]);

/* The same with a cut.  The unaligned cut needs counted markers
 * (E_INVAL otherwise). */
int labaudit_run_cut(enum engine_mode mode, enum engine_cut cut,
                     struct labaudit_row rows[LABAUDIT_CASES]);

#endif /* CUT_LABAUDIT_H */
