/*
 * labaudit.c - the token-bank audit grid, on simulated time.
 *
 * Each scenario runs the lab with a scheduler: every frame gets a due time
 * when it is queued, and at each tick the lab delivers the due frames in
 * (due, channel, position) order.  FIFO channels never let a frame be due
 * before an older one; the non-FIFO scenario lets markers travel fast and
 * overtake older application messages, while application messages keep
 * their order among themselves and never pass a marker.
 *
 * With the unaligned cut the applications take their down queues slowly,
 * after the deliveries of each tick; aligned runs keep the applications
 * synchronous, as they always were, and draw the same random numbers.
 */
#include "labaudit.h"

#include <string.h>

#include "lab.h"

#define SEND_UNTIL   20
#define MAX_CHANNELS 6

struct sim {
	struct lab_rng rng;
	uint64_t now;
	int fifo;
	int lagging; /* applications take one item with probability 1/3 */
	uint64_t last_due[MAX_CHANNELS];
	uint64_t last_app_due[MAX_CHANNELS];
};

struct scenario {
	const char *name;
	int fifo;
	uint64_t start;
	int expect_pass; /* with classic markers */
	uint64_t seed;
};

static const struct scenario scenarios[LABAUDIT_CASES] = {
    {"default FIFO", 1, 8, 1, 0x5eed0001},
    {"late starter FIFO", 1, 14, 1, 0x5eed0002},
    {"early starter FIFO", 1, 2, 1, 0x5eed0003},
    {"non-FIFO marker overtake", 0, 8, 0, 0x5eed0006},
};

static uint64_t
below(struct sim *s, uint64_t n)
{
	return lab_rng_below(&s->rng, n);
}

static uint64_t
max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t
due(void *arg, size_t ch, const struct lab_frame *f)
{
	struct sim *s = arg;
	uint64_t d = s->now + 1 + below(s, 5);

	if (s->fifo) {
		d = max64(d, s->last_due[ch]);
		s->last_due[ch] = d;
		return d;
	}
	if (f->is_marker) {
		s->last_due[ch] = max64(s->last_due[ch], s->now + 1);
		return s->now + 1;
	}
	/* Slow messages, so that the fast marker overtakes several; never
	 * before an older message, nor a marker queued earlier. */
	d += below(s, 4);
	d = max64(d, max64(s->last_app_due[ch], s->last_due[ch]));
	s->last_app_due[ch] = d;
	return d;
}

/* Delivers every frame due by now, earliest first. */
static int
deliver_due(struct lab *lab, struct sim *s)
{
	for (;;) {
		size_t best_ch = 0, best_k = 0;
		uint64_t best = UINT64_MAX;
		int rv;

		for (size_t ch = 0; ch < lab_channels(lab); ch++)
			for (size_t k = 1; k <= lab_queue_len(lab, ch); k++) {
				uint64_t d = lab_queue_at(lab, ch, k)->due;
				if (d <= s->now && d < best) {
					best = d;
					best_ch = ch;
					best_k = k;
				}
			}
		if (best_k == 0)
			return 0;
		if ((rv = lab_deliver(lab, best_ch, best_k)) != 0)
			return rv;
	}
}

static int
trade(struct lab *lab, struct sim *s)
{
	size_t n = lab_nodes(lab);

	for (size_t v = 0; v < n; v++) {
		int64_t bal = lab_balance(lab, v), amount;
		size_t to;
		int rv;

		if (bal <= 0 || below(s, 2) == 0)
			continue;
		amount = 1 + (int64_t)below(s, (uint64_t)(bal < 5 ? bal : 5));
		to = (v + 1 + below(s, n - 1)) % n;
		if ((rv = lab_send(lab, lab_node_name(lab, v),
		                   lab_node_name(lab, to), amount)) != 0)
			return rv;
	}
	return 0;
}

/* Each lagging application takes the oldest item of its down queue with
 * probability 1/3. */
static int
take_some(struct lab *lab, struct sim *s)
{
	for (size_t v = 0; v < lab_nodes(lab); v++) {
		int rv;

		if (lab_down_len(lab, v) == 0 || below(s, 3) != 0)
			continue;
		if ((rv = lab_take(lab, v)) != 0)
			return rv;
	}
	return 0;
}

static int
queues_empty(const struct lab *lab)
{
	for (size_t ch = 0; ch < lab_channels(lab); ch++)
		if (lab_queue_len(lab, ch) > 0)
			return 0;
	for (size_t v = 0; v < lab_nodes(lab); v++)
		if (lab_down_len(lab, v) > 0)
			return 0;
	return 1;
}

static int
build(struct lab *lab)
{
	static const char *names[] = {"P0", "P1", "P2"};
	static const int64_t tokens[] = {18, 14, 12};
	int rv;

	for (size_t i = 0; i < 3; i++)
		if ((rv = lab_add_node(lab, names[i], tokens[i])) != 0)
			return rv;
	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < 3; j++)
			if (i != j && (rv = lab_add_channel(lab, names[i],
			                                    names[j])) != 0)
				return rv;
	return 0;
}

static int
simulate(const struct scenario *sc, struct lab *lab)
{
	struct sim s;
	int rv;

	memset(&s, 0, sizeof(s));
	s.rng.s = sc->seed;
	s.fifo = sc->fifo;
	s.lagging = lab_queued_apps(lab);
	lab_set_due(lab, due, &s);
	if ((rv = build(lab)) != 0)
		return rv;
	for (s.now = 0; s.now < SEND_UNTIL || !queues_empty(lab); s.now++) {
		if ((rv = deliver_due(lab, &s)) != 0)
			return rv;
		if (s.lagging && (rv = take_some(lab, &s)) != 0)
			return rv;
		if (s.now == sc->start &&
		    (rv = lab_snapshot(lab, "P0", NULL)) != 0)
			return rv;
		if (s.now < SEND_UNTIL && (rv = trade(lab, &s)) != 0)
			return rv;
	}
	lab_set_due(lab, NULL, NULL);
	return 0;
}

static void
check(struct labaudit_row *row, const char *name, int passed)
{
	row->checks[row->nchecks].name = name;
	row->checks[row->nchecks].passed = passed;
	row->nchecks++;
	row->npassed += passed != 0;
}

/* Each check compares the engine's record with the simulation's ground
 * truth; none is assumed. */
static void
judge(struct labaudit_row *row, const struct lab_snapshot_result *r, int fifo,
      int64_t total)
{
	int consistent = r->audit.consistent;

	check(row, "snapshot completes", r->complete);
	check(row, "pass state matches expectation",
	      consistent == row->expect_pass);
	check(row, "token ledger matches pass state",
	      (row->snapshot_total == total) == consistent);
	check(row, "no receive without send",
	      r->receive_without_send == 0 &&
	          r->audit.receive_without_send == 0);
	check(row, "marker overtake matches expectation",
	      fifo ? r->overtakes == 0 : r->overtakes > 0);
	if (row->expect_pass) {
		check(row, "no missing channel messages",
		      r->missing == 0 && r->audit.missing_messages == 0);
		check(row, "no extra channel messages",
		      r->extra == 0 && r->audit.extra_messages == 0);
	} else {
		check(row, "missing channel messages expose FIFO violation",
		      r->missing > 0 &&
		          r->audit.missing_messages == r->missing);
	}
}

static int
run_case(enum engine_mode mode, enum engine_cut cut, const struct scenario *sc,
         struct labaudit_row *row)
{
	struct lab_snapshot_result r;
	struct lab *lab = NULL;
	int rv;

	memset(row, 0, sizeof(*row));
	row->scenario = sc->name;
	/* Counting markers repair the overtake, so every case should pass. */
	row->expect_pass = mode == ENGINE_COUNTED ? 1 : sc->expect_pass;
	if ((rv = lab_new(mode, &lab)) != 0)
		return rv;
	if (cut == ENGINE_CUT_UNALIGNED &&
	    ((rv = lab_set_cut(lab, cut)) != 0 ||
	     (rv = lab_set_queued_apps(lab, 1)) != 0))
		goto out;
	if ((rv = simulate(sc, lab)) != 0 || (rv = lab_result(lab, 0, &r)) != 0)
		goto out;
	row->node_total = r.node_total;
	row->channel_amount = r.channel_total;
	row->snapshot_total = r.node_total + r.channel_total;
	row->channel_messages = r.channel_messages;
	row->app_messages = lab_app_messages(lab);
	row->missing = r.missing;
	row->overtakes = r.overtakes;
	row->queued = r.queued;
	row->consistent = r.audit.consistent;
	judge(row, &r, sc->fifo, lab_total(lab));
out:
	lab_free(lab);
	return rv;
}

int
labaudit_run_cut(enum engine_mode mode, enum engine_cut cut,
                 struct labaudit_row rows[LABAUDIT_CASES])
{
	int rv;

	if (cut == ENGINE_CUT_UNALIGNED && mode != ENGINE_COUNTED)
		return E_INVAL;
	for (size_t i = 0; i < LABAUDIT_CASES; i++)
		if ((rv = run_case(mode, cut, &scenarios[i], &rows[i])) != 0)
			return rv;
	return 0;
}

int
labaudit_run(enum engine_mode mode, struct labaudit_row rows[LABAUDIT_CASES])
{
	return labaudit_run_cut(mode, ENGINE_CUT_ALIGNED, rows);
}
