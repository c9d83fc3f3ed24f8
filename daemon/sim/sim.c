/*
 * sim.c - cutlab sim: the whole cluster, deterministically.
 *
 *   cutlab sim [--nodes N|LO-HI] [--seed S] [--runs R] [--faults LIST]
 *              [--duration MS] [--rate R] [--cut aligned|unaligned]
 *              [--topology full|ring] [--self-check BUG]
 *              [--restore-kills N] [-v]...
 *
 * N coordinators (2 to 32, core/coord*.c, the daemon's own decisions) run
 * in one process on simulated time, each on the real store (store.c) over
 * an in-memory SQLite database, with a simulated network between them
 * (simnet.c) and a simulated application beside each (simapp.c, over
 * libcut's own protocol core, libclient/core/appcore.c).  Every random choice
 * comes from one PRNG seeded once from the seed; there is no wall clock (the
 * simulated one starts on 2100-01-01) and no other randomness, so a seed is a
 * replay.  A daemon starts, turns and stops as cutd does: turn_start(),
 * turn_run() and turn_stop() of core/turn.c, over simnet.c's port in place
 * of nng's.
 *
 * A run draws its cluster from the seed: the node count (in --nodes),
 * every pair or a ring plus chords, the cut, the deadline, the message
 * cost, latencies and balances.  Then three phases:
 *
 *   faults (--duration ms): token-bank traffic, snapshots started on
 *     random nodes at random times with random timeouts, and the faults
 *     of --faults, drawn and spread over the phase:
 *       crash      a daemon dies (coord_free, no coord_stop, its open
 *                  batch rolled back, its database kept), or a third of
 *                  the time stops (coord_stop), and starts again with a
 *                  new epoch; its application resumes as libcut does;
 *       partition  a group against the rest for a while, both ways or
 *                  one way; silent peers are closed and dialed again;
 *       drop       a connection reset, its frames in flight lost;
 *       storage    a node's writes fail for a while (simdb.c);
 *       slow       an application takes its deliveries late, stops
 *                  reading, or leaves state requests unanswered;
 *       applink    an application's connection to its daemon reset,
 *                  half the time again right after its next hello;
 *       appkill    an application dies (its libcut state, its balance and
 *                  what it wrote to its daemon's socket unread with it)
 *                  and starts again, empty (simapp_kill()); also while
 *                  a restore runs, and with --restore-kills N at each
 *                  step of the faulty phase while one runs one chance in
 *                  N more, at a random node;
 *       handshake  a connection to a peer, or the application's, resets
 *                  and the next one resets as it opens: before its first
 *                  frame arrives or just after (simnet_handshake());
 *       reboot     a daemon and its application die at once (a node
 *                  reboot: a crash and an appkill together), and both
 *                  start again; what the application had sent and the
 *                  daemon had not passed on is lost, and its channels
 *                  number from 1 again (simapp_reboot());
 *   healed: every fault ends, down daemons start; once every link is
 *     alive again and knows the other end's current run, one more
 *     snapshot, which must complete consistent;
 *   settle: traffic stops; the run ends when everything sent was taken,
 *     nothing is unacknowledged or running, and storage works.
 *
 * The checks, any of which fails the run (and prints the seed and the
 * command that replays it):
 *
 *   - every snapshot ends by its deadline plus SLACK_MS, at every node
 *     (checked after each turn: no snapshot runs at a node past the time
 *     it was first seen there plus its timeout, four fifths of it at a
 *     participant), and at its initiator either complete and consistent
 *     or aborted with a reason (the database row, at the end).  The
 *     slack: a daemon acts on a deadline in the first turn at or after
 *     it, and its next timer (coord_next_timer()) brings that turn at the
 *     deadline's millisecond; SLACK_MS allows for the turn itself.  An
 *     initiator that died before its snapshot's end was written may end
 *     it at its restart ("daemon restarted");
 *   - conservation: in every complete consistent snapshot, read back from
 *     the initiator's database (states and recorded messages through the
 *     store's iterators), the balances and the amounts in flight add up
 *     to the bank's total;
 *   - every application stream exactly once and in order: each delivery
 *     handed over is its channel's next seq and carries what the sender
 *     sent under it (simapp.c); in the end everything sent was handed,
 *     every balance adds up to the total, and libcut keeps nothing; the
 *     daemon never refuses an item of libcut's;
 *   - bounds, after each turn: what each coordinator's queues hold
 *     (coord_queue_stats()) and what each libcut keeps stay within the
 *     windows they are meant to be bounded by (see sim_note_running());
 *   - ids: no id is issued twice, none is below the wall clock when its
 *     snapshot started, and no participant that did not restart during
 *     the snapshot finds one it already holds;
 *   - liveness: once the faults heal, links come back and a snapshot
 *     completes; the cluster settles.
 *
 * --self-check BUG plants a bug that one of the checks must catch, and
 * succeeds only if it does: conservation (an application overstates its
 * balance), once (libcut forgets a source when it resumes), deadline (a
 * node runs no timers), ids (the store repeats an id counter), bounds (the
 * bounds are held to an eighth of the window).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sim.h"

#define EX_USAGE    64
#define EX_SOFTWARE 70

/* The condition every simulated cluster file has: 1, and the tokens the
 * snapshot's states and in-flight messages hold (the README's
 * conservation.sql without its expected total). */
#define SIM_CONDITION                                                          \
	"SELECT 1, (SELECT coalesce(sum(json_extract(state, '$.balance')), "   \
	"0) "                                                                  \
	"FROM recorded_states WHERE snapshot_id = :snapshot) + "               \
	"(SELECT coalesce(sum(json_extract(payload, '$.amount')), 0) "         \
	"FROM in_transit WHERE snapshot_id = :snapshot)"

/* See the top: how late past its deadline a snapshot may end. */
#define SLACK_MS 5
/* After the faults heal: how long links may take to come back, and how
 * long the cluster may take to settle once traffic stops. */
#define RECOVER_MS 20000
#define SETTLE_MS  30000
/* The final snapshot's timeout. */
#define FINAL_TIMEOUT_MS 10000
/* The bank. */
#define BALANCE_MIN 20
#define BALANCE_MAX 1000

enum ev_kind {
	EV_CRASH,
	EV_PARTITION,
	EV_PARTITION_ONE_WAY,
	EV_HEAL,
	EV_DROP,
	EV_STORAGE_ON,
	EV_STORAGE_OFF,
	EV_SLOW,
	EV_STOP,
	EV_MUTE,
	EV_APPLINK,
	EV_APPKILL,
	EV_CALL, /* a control call (pm: enum sim_call), simops.c */
	EV_HANDSHAKE,
	EV_REBOOT,
	EV_LOSE,
};

struct sim_event {
	int64_t at, dur;
	enum ev_kind kind;
	size_t node;
	unsigned pm;
};

static const struct {
	const char *name;
	unsigned bit;
} fault_names[] = {
    {"crash", SIM_F_CRASH},         {"partition", SIM_F_PARTITION},
    {"drop", SIM_F_DROP},           {"storage", SIM_F_STORAGE},
    {"slow", SIM_F_SLOW},           {"applink", SIM_F_APPLINK},
    {"appkill", SIM_F_APPKILL},     {"restore", SIM_F_RESTORE},
    {"delete", SIM_F_DELETE},       {"schedule", SIM_F_SCHEDULE},
    {"handshake", SIM_F_HANDSHAKE}, {"reboot", SIM_F_REBOOT},
    {"lose", SIM_F_LOSE},
};
#define NFAULTS (sizeof(fault_names) / sizeof(fault_names[0]))

/* The check each planted bug must trip. */
static const enum sim_check self_check_trips[] = {
    [SIM_SC_NONE] = SIM_C_SIM,     [SIM_SC_CONSERVATION] = SIM_C_CONSERVATION,
    [SIM_SC_ONCE] = SIM_C_ONCE,    [SIM_SC_DEADLINE] = SIM_C_DEADLINE,
    [SIM_SC_IDS] = SIM_C_IDS,      [SIM_SC_BOUNDS] = SIM_C_BOUNDS,
    [SIM_SC_RESTORE] = SIM_C_ONCE,
};

static const char *const self_checks[] = {
    [SIM_SC_NONE] = "none",       [SIM_SC_CONSERVATION] = "conservation",
    [SIM_SC_ONCE] = "once",       [SIM_SC_DEADLINE] = "deadline",
    [SIM_SC_IDS] = "ids",         [SIM_SC_BOUNDS] = "bounds",
    [SIM_SC_RESTORE] = "restore",
};
#define NSELF (sizeof(self_checks) / sizeof(self_checks[0]))

/* Abort reasons, as the statistics count them. */
static const char *const reason_kinds[] = {
    "restarted", "storage", "did not answer",    "no application",
    "no marker", "no part", "numbering resumed", "stopped",
    "restored",  "other",
};

/* ---- Small things ---- */

int64_t
sim_wall(const struct sim *s)
{
	return SIM_WALL_BASE + s->now;
}

uint64_t
sim_rand(struct sim *s, uint64_t n)
{
	return n == 0 ? 0 : lab_rng_below(&s->rng, n);
}

int64_t
sim_range(struct sim *s, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + (int64_t)sim_rand(s, (uint64_t)(hi - lo + 1));
}

void
sim_fail(struct sim *s, enum sim_check check, const char *fmt, ...)
{
	char msg[900];
	va_list ap;

	s->caught |= 1u << check;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->nfail++ == 0)
		snprintf(s->fail, sizeof(s->fail), "t=%" PRId64 " ms: %s",
		         s->now, msg);
	if (s->o->verbose)
		fprintf(s->o->verbose >= 2 ? stderr : stdout,
		        "  [%6" PRId64 "] CHECK FAILED: %s\n", s->now, msg);
}

void
sim_trace(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	FILE *f = s->o->verbose >= 2 ? stderr : stdout;

	if (s->o->verbose == 0)
		return;
	/* With the coordinators' log (-vv), beside it on stderr. */
	fprintf(f, "  [%6" PRId64 "] ", s->now);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fprintf(f, "\n");
}

struct sim_snap *
sim_snap_by_id(struct sim *s, const char *id)
{
	for (size_t i = 0; i < s->nsnaps; i++)
		if (strcmp(s->snaps[i].id, id) == 0)
			return &s->snaps[i];
	return NULL;
}

#define snap_by_id sim_snap_by_id

struct sim_log *
sim_log_of(struct sim *s, size_t src, size_t dst, int era)
{
	/* Between a restore's decision and the last application taking
	 * it, the senders and receivers that took it see the next era's
	 * channels. */
	return era > s->log_era ? &s->nsent[src][dst] : &s->sent[src][dst];
}

void
sim_log_put(struct sim_log *log, int32_t amount)
{
	if (log->n == log->cap) {
		log->cap = log->cap ? 2 * log->cap : 256;
		if ((log->amount = realloc(log->amount,
		                           log->cap * sizeof(int32_t))) == NULL)
			abort();
	}
	log->amount[log->n++] = amount;
}

/* ---- The cluster ---- */

static char *
xstrdup(const char *p)
{
	char *d = strdup(p);

	if (d == NULL)
		abort();
	return d;
}

/* Builds the cluster file's contents for n nodes, as config_load() would
 * leave them: every pair, or a ring in a drawn order plus random
 * chords (strongly connected either way). */
static struct config *
make_config(struct sim *s, size_t n, int ring)
{
	struct config *cfg = calloc(1, sizeof(*cfg));
	static const size_t costs[] = {64, 1024, 4096, 16384};
	size_t order[SIM_MAX_NODES], k = 0;
	unsigned char has[SIM_MAX_NODES][SIM_MAX_NODES] = {{0}};
	char buf[64];

	if (cfg == NULL ||
	    (cfg->nodes = calloc(n, sizeof(*cfg->nodes))) == NULL ||
	    (cfg->chans = calloc(n * n, sizeof(*cfg->chans))) == NULL)
		abort();
	cfg->path = xstrdup("(simulated)");
	cfg->cluster = xstrdup("sim");
	cfg->deadline_ms = (unsigned)sim_range(s, 500, 5000);
	/* Below the window, so that the bounds checks are tight. */
	cfg->max_message = 16384;
	cfg->window = 65536;
	cfg->app_window = 65536;
	cfg->message_cost = costs[sim_rand(s, 4)];
	cfg->aligned = s->o->cut >= 0 ? s->o->cut : (int)sim_rand(s, 2);
	cfg->socket_gid = cfg->admin_gid = -1;
	cfg->max_inflight = 16;
	/* A condition on every complete snapshot a node initiates: the
	 * bank's total as the snapshot recorded it (check_condition()). */
	if ((cfg->conds = calloc(1, sizeof(*cfg->conds))) == NULL)
		abort();
	cfg->conds[0].name = xstrdup("total");
	cfg->conds[0].sql = xstrdup(SIM_CONDITION);
	cfg->nconds = 1;
	cfg->start_rate = 10;
	cfg->start_burst = 20;
	cfg->nnodes = n;
	for (size_t i = 0; i < n; i++) {
		struct config_node *nd = &cfg->nodes[i];
		snprintf(buf, sizeof(buf), "p%zu", i);
		nd->name = xstrdup(buf);
		snprintf(buf, sizeof(buf), "tcp://sim:%zu", 7100 + i);
		nd->peer = xstrdup(buf);
		snprintf(buf, sizeof(buf), "ipc:///sim/p%zu.app", i);
		nd->app = xstrdup(buf);
		snprintf(buf, sizeof(buf), "ipc:///sim/p%zu.ctl", i);
		nd->control = xstrdup(buf);
		nd->database = xstrdup(":memory:");
		order[i] = i;
	}
	if (!ring) {
		for (size_t a = 0; a < n; a++)
			for (size_t b = 0; b < n; b++)
				if (a != b)
					has[a][b] = 1;
	} else {
		unsigned chords = (unsigned)sim_range(s, 0, 40);
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = (size_t)sim_rand(s, i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (size_t i = 0; i < n; i++)
			has[order[i]][order[(i + 1) % n]] = 1;
		for (size_t a = 0; a < n; a++)
			for (size_t b = 0; b < n; b++)
				if (a != b && sim_rand(s, 100) < chords)
					has[a][b] = 1;
		cfg->chans_declared = 1;
	}
	for (size_t a = 0; a < n; a++)
		for (size_t b = 0; b < n; b++)
			if (has[a][b]) {
				cfg->chans[k].src = a;
				cfg->chans[k].dst = b;
				k++;
			}
	cfg->nchans = k;
	simops_config(s, cfg);
	return cfg;
}

/* Whether src has a channel to dst. */
static int
channel(const struct config *cfg, size_t src, size_t dst)
{
	for (size_t k = 0; k < cfg->nchans; k++)
		if (cfg->chans[k].src == src && cfg->chans[k].dst == dst)
			return 1;
	return 0;
}

/* ---- The faults ---- */

static void
add_event(struct sim *s, int64_t at, enum ev_kind kind, size_t node,
          int64_t dur, unsigned pm)
{
	struct sim_event *e;

	if (s->nevents % 64 == 0 &&
	    (s->events = realloc(s->events, (s->nevents + 64) *
	                                        sizeof(*s->events))) == NULL)
		abort();
	e = &s->events[s->nevents++];
	e->at = at;
	e->kind = kind;
	e->node = node;
	e->dur = dur;
	e->pm = pm;
}

/* How many of a fault in the phase: about per_10s every ten seconds. */
static unsigned
how_many(struct sim *s, unsigned per_10s)
{
	int64_t expect = (int64_t)per_10s * s->o->duration_ms / 10000;

	return (unsigned)sim_range(s, expect / 2, expect + 1);
}

/* Draws the phase's faults and sorts them by time (stably: the order
 * they were drawn breaks ties). */
static void
plan_faults(struct sim *s)
{
	int64_t d = s->o->duration_ms, lo = 200, hi = d - 300;
	unsigned f = s->o->faults, k;

	if (hi <= lo)
		hi = lo + 1;
	/* A third of them stops (cutd's SIGTERM: coord_stop()). */
	if (f & SIM_F_CRASH)
		for (k = how_many(s, 3 + (unsigned)s->n / 8); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_CRASH,
			          (size_t)sim_rand(s, s->n),
			          sim_range(s, 20, 3000), sim_rand(s, 3) == 0);
	if (f & SIM_F_PARTITION) {
		/* One at a time, each in its own slot of the phase; now and
		 * then the first one one way from the start, before any
		 * node has heard from the others. */
		unsigned np = how_many(s, 3);
		int64_t slot = np ? (hi - lo) / np : 0;
		int early = sim_rand(s, 4) == 0;
		for (k = 0; k < np && slot > 100; k++) {
			int64_t at =
			    lo + (int64_t)k * slot + sim_range(s, 0, slot / 3);
			int64_t dur = sim_range(s, 100, slot * 2 / 3);
			int one_way = sim_rand(s, 4) == 0;
			if (k == 0 && early) {
				dur += at;
				at = 0;
				one_way = 1;
			}
			add_event(s, at,
			          one_way ? EV_PARTITION_ONE_WAY : EV_PARTITION,
			          0, dur, 0);
			add_event(s, at + dur, EV_HEAL, 0, 0, 0);
		}
	}
	if (f & SIM_F_DROP)
		for (k = how_many(s, 8); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_DROP, 0, 0, 0);
	if (f & SIM_F_STORAGE)
		for (k = how_many(s, 3); k > 0; k--) {
			int64_t at = sim_range(s, lo, hi);
			int64_t dur = sim_range(s, 50, 3000);
			size_t node = (size_t)sim_rand(s, s->n);
			add_event(s, at, EV_STORAGE_ON, node, dur,
			          (unsigned)sim_range(s, 100, 1000));
			add_event(s, at + dur, EV_STORAGE_OFF, node, 0, 0);
		}
	if (f & SIM_F_SLOW)
		for (k = how_many(s, 2 + (unsigned)s->n / 2); k > 0; k--)
			add_event(s, sim_range(s, lo, hi),
			          EV_SLOW + (enum ev_kind)sim_rand(s, 3),
			          (size_t)sim_rand(s, s->n),
			          sim_range(s, 200, 3000), 0);
	/* Half of them twice: again as soon as the application's next
	 * hello has reached the daemon's socket, before the daemon reads
	 * it. */
	if (f & SIM_F_APPLINK)
		for (k = how_many(s, 3); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_APPLINK,
			          (size_t)sim_rand(s, s->n), 0,
			          sim_rand(s, 2) == 0);
	if (f & SIM_F_APPKILL)
		for (k = how_many(s, 2); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_APPKILL,
			          (size_t)sim_rand(s, s->n), 0, 0);
	/* The control calls beyond Start (simops.c). */
	if (f & SIM_F_RESTORE)
		for (k = how_many(s, 6); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_CALL,
			          (size_t)sim_rand(s, s->n), 0,
			          SIM_CALL_RESTORE);
	if (f & SIM_F_DELETE) {
		for (k = how_many(s, 8); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_CALL,
			          (size_t)sim_rand(s, s->n), 0,
			          SIM_CALL_DELETE);
		for (k = how_many(s, 3); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_CALL,
			          (size_t)sim_rand(s, s->n), 0, SIM_CALL_KEEP);
	}
	if (f & SIM_F_SCHEDULE)
		for (k = how_many(s, 1); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_CALL,
			          (size_t)sim_rand(s, s->n), 0, SIM_CALL_PAUSE);
	/* A node's connection to a peer, or its application's, closes and
	 * the next one closes as it opens: before or just after its first
	 * frame (the peer's hello, the application's). */
	if (f & SIM_F_HANDSHAKE)
		for (k = how_many(s, 3); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_HANDSHAKE,
			          (size_t)sim_rand(s, s->n), 0,
			          (unsigned)sim_rand(s, s->n + 1));
	/* Last, so that the runs without it draw what they drew before. */
	if (f & SIM_F_REBOOT)
		for (k = how_many(s, 2); k > 0; k--)
			add_event(s, sim_range(s, lo, hi), EV_REBOOT,
			          (size_t)sim_rand(s, s->n),
			          sim_range(s, 20, 3000), 0);
	/* After reboot, for the same reason. */
	if (f & SIM_F_LOSE)
		for (k = how_many(s, 6); k > 0; k--) {
			int spell = sim_rand(s, 3) == 0;
			add_event(s, sim_range(s, lo, hi), EV_LOSE, 0,
			          spell ? sim_range(s, 200, 2000) : 0,
			          spell ? (unsigned)sim_range(s, 50, 300) : 0);
		}
	/* Insertion sort: stable, and the lists are short. */
	for (size_t i = 1; i < s->nevents; i++) {
		struct sim_event e = s->events[i];
		size_t j = i;
		while (j > 0 && s->events[j - 1].at > e.at) {
			s->events[j] = s->events[j - 1];
			j--;
		}
		s->events[j] = e;
	}
}

/* Before a daemon dies: which of its snapshots may lose their end. */
static void
note_crash(struct sim *s, struct sim_node *n)
{
	for (size_t i = 0; i < s->nsnaps; i++) {
		struct sim_snap *sn = &s->snaps[i];
		struct coord_snap_view v;
		if (sn->initiator != n->idx)
			continue;
		coord_snapshot_view(n->c, sn->id, &v);
		/* Running: its row says in_progress until the restart marks
		 * it aborted.  Unsaved: its row may not exist at all. */
		if (v.running || v.unsaved)
			sn->crashed = 1;
		if (v.unsaved)
			sn->lost_ok = 1;
	}
	n->nlive = 0;
	n->ncalls = 0;
	simops_crash(s, n);
}

void
sim_crash(struct sim *s, struct sim_node *n, int64_t down, int stop)
{
	if (n->c == NULL)
		return;
	sim_trace(s, "%s %s; back in %" PRId64 " ms", n->name,
	          stop ? "stops" : "crashes", down);
	/* Before a stop too: if its batch does not commit, the next start
	 * marks what was running aborted, "daemon restarted". */
	note_crash(s, n);
	if (stop) {
		turn_stop(&n->turn, "daemon stopped");
		s->st->stops++;
	}
	simnet_crash(s, n);
	n->restart_at = s->now + down;
	s->st->crashes++;
}

static void
restart(struct sim *s, struct sim_node *n)
{
	if (simnet_start(s, n) == 0) {
		sim_trace(s, "%s starts", n->name);
		n->restart_at = SIM_NEVER;
		/* What its start wrote (ends of the last run), before its
		 * first turn's retention can delete it. */
		simops_after_turn(s, n->idx);
	} else {
		n->restart_at = s->now + 1000;
	}
}

static void
run_event(struct sim *s, const struct sim_event *e)
{
	struct sim_node *n = &s->nodes[e->node];
	struct sim_app *a = &n->app;

	/* What may hold a link's acks back for a while (simnet.c's
	 * silence check). */
	switch (e->kind) {
	case EV_CRASH:
	case EV_REBOOT:
	case EV_STORAGE_ON:
		simnet_disturb(s, e->node);
		break;
	case EV_STORAGE_OFF:
		/* A degraded daemon retries its commit once a second. */
		n->disturbed = s->now + 1000;
		break;
	case EV_PARTITION:
	case EV_PARTITION_ONE_WAY:
	case EV_HEAL:
		for (size_t i = 0; i < s->n; i++)
			simnet_disturb(s, i);
		break;
	case EV_SLOW:
	case EV_STOP:
		/* An application that reads slowly holds its daemon's
		 * down stream full, and so the acks of its incoming links,
		 * until it reads again. */
		simnet_disturb(s, e->node);
		if (n->disturbed < s->now + e->dur)
			n->disturbed = s->now + e->dur;
		break;
	default:
		break;
	}
	switch (e->kind) {
	case EV_CRASH:
		/* ... nor a daemon that dies before its application's new
		 * life has said hello, or while it alone holds what an
		 * earlier life sent: those messages die with it. */
		if ((a->life == a->life_base ||
		     (a->k.opened && !simapp_orphans(s, a))) &&
		    !simops_crash_unsafe(s, n) && !simapp_holds_old(s, a))
			sim_crash(s, n, e->dur, e->pm != 0);
		break;
	case EV_REBOOT:
		simapp_reboot(s, a, e->dur);
		break;
	case EV_PARTITION:
	case EV_PARTITION_ONE_WAY:
		simnet_partition(s, e->kind == EV_PARTITION_ONE_WAY);
		break;
	case EV_HEAL:
		simnet_heal(s);
		break;
	case EV_DROP:
		simnet_reset_random(s);
		break;
	case EV_LOSE:
		simnet_lose_random(s, e->dur, e->pm);
		break;
	case EV_STORAGE_ON:
		sim_trace(
		    s,
		    "%s: storage fails %u per mille of writes for %" PRId64
		    " ms",
		    n->name, e->pm, e->dur);
		n->db.active = 1;
		n->db.fail_pm = e->pm;
		s->st->storage++;
		break;
	case EV_STORAGE_OFF:
		sim_trace(s, "%s: storage works again", n->name);
		n->db.active = 0;
		break;
	case EV_SLOW:
		a->slow_until = s->now + e->dur;
		a->recv_every = sim_range(s, 20, 400);
		a->recv_max = (size_t)sim_range(s, 1, 5);
		sim_trace(s, "%s's application is slow for %" PRId64 " ms",
		          n->name, e->dur);
		s->st->slow++;
		break;
	case EV_STOP:
		a->stop_until = s->now + e->dur;
		sim_trace(s,
		          "%s's application stops reading for %" PRId64 " ms",
		          n->name, e->dur);
		s->st->slow++;
		break;
	case EV_MUTE:
		a->mute_until = s->now + e->dur;
		sim_trace(s,
		          "%s's application answers no state request for "
		          "%" PRId64 " ms",
		          n->name, e->dur);
		s->st->slow++;
		break;
	case EV_APPLINK:
		if (n->app_conn != 0) {
			sim_trace(s, "%s's application connection resets%s",
			          n->name,
			          e->pm ? ", and again after its hello" : "");
			simnet_app_close(s, n);
			n->flap = e->pm != 0;
			s->st->applinks++;
		}
		break;
	case EV_HANDSHAKE:
		/* pm: the peer (one past the last: the application). */
		if (n->c != NULL)
			simnet_handshake(s, n, e->pm);
		break;
	case EV_APPKILL:
		/* Not modelled: an application that dies while its daemon
		 * is down, or before it has told the restarted daemon where
		 * it stands (with its daemon: EV_REBOOT). */
		if (n->c != NULL && !a->lost) {
			if (s->rst.active)
				s->st->restore_kills++;
			simapp_kill(s, a);
		}
		break;
	case EV_CALL:
		if (n->c != NULL &&
		    n->ncalls < sizeof(n->calls) / sizeof(n->calls[0])) {
			n->calls[n->ncalls++] = (enum sim_call)e->pm;
			n->starts++;
		}
		break;
	}
}

/* ---- Snapshots ---- */

void
sim_start_snapshot(struct sim *s, struct sim_node *n)
{
	char id[ENGINE_ID_MAX + 1];
	struct errinfo e = {0};
	struct sim_snap *sn;
	uint32_t timeout;
	int final =
	    s->phase == 1 && n->idx == s->final_node && s->final_pending;
	int rv;

	/* The turn's control calls (counted in n->starts) come first. */
	if (n->ncalls > 0) {
		enum sim_call call = n->calls[0];
		memmove(n->calls, n->calls + 1,
		        --n->ncalls * sizeof(n->calls[0]));
		/* Not modelled: a restore after a reboot, whose replay
		 * would hold messages of a generation the channel has
		 * left (the reboots stop once a restore starts). */
		if (call != SIM_CALL_RESTORE || s->nreboots == 0)
			simops_call(s, n, call);
		return;
	}
	if (final) {
		timeout = FINAL_TIMEOUT_MS;
		s->final_pending = 0;
	} else if (s->phase != 0 && s->phase != 1) {
		return;
	} else if (coord_initiated_in_flight(n->c) >= s->cfg->max_inflight) {
		s->st->refused++; /* control.c: RESOURCE_EXHAUSTED */
		return;
	} else {
		timeout =
		    sim_rand(s, 4) == 0 ? 0 : (uint32_t)sim_range(s, 100, 4000);
	}
	if ((rv = coord_start(n->c, timeout, id, &e)) != 0) {
		/* E_STATE: a restore runs here (simops.c). */
		if (rv == E_STORAGE ||
		    (rv == E_STATE && (s->o->faults & SIM_F_RESTORE))) {
			s->st->refused++;
			sim_trace(s, "%s: start refused: %s", n->name, e.text);
			if (final)
				s->final_pending = 1; /* again, next turn */
			return;
		}
		sim_fail(s, SIM_C_IDS, "%s: coord_start: %s: %s", n->name,
		         err_str(rv), e.text);
		return;
	}
	if ((sn = sim_snap_add(s, n, id, timeout, final)) != NULL)
		sim_trace(
		    s, "%s: snapshot %s started%s, timeout %" PRIu32 " ms",
		    n->name, id, final ? " (the final one)" : "", sn->timeout);
}

struct sim_snap *
sim_snap_add(struct sim *s, struct sim_node *n, const char *id,
             uint32_t timeout, int final)
{
	struct sim_snap *sn;

	if (snap_by_id(s, id) != NULL) {
		sim_fail(s, SIM_C_IDS, "%s: snapshot id %s issued twice",
		         n->name, id);
		return NULL;
	}
	if (s->nsnaps == s->capsnaps) {
		s->capsnaps = s->capsnaps ? 2 * s->capsnaps : 64;
		if ((s->snaps = realloc(
		         s->snaps, s->capsnaps * sizeof(*s->snaps))) == NULL)
			abort();
	}
	sn = &s->snaps[s->nsnaps++];
	memset(sn, 0, sizeof(*sn));
	snprintf(sn->id, sizeof(sn->id), "%s", id);
	sn->initiator = n->idx;
	sn->started = s->now;
	sn->timeout = timeout ? timeout : s->cfg->deadline_ms;
	sn->deadline = s->now + sn->timeout;
	sn->final = final;
	if (final)
		s->final_id = s->nsnaps - 1;
	s->st->started++;
	return sn;
}

struct running {
	struct sim *s;
	struct sim_node *n;
};

static void
running_one(const char *id, void *arg)
{
	struct running *r = arg;
	struct sim_node *n = r->n;
	struct sim_snap *sn;

	for (size_t i = 0; i < n->nlive; i++)
		if (strcmp(n->live[i].id, id) == 0) {
			n->live[i].mark = 1;
			return;
		}
	if ((sn = snap_by_id(r->s, id)) == NULL) {
		sim_fail(r->s, SIM_C_IDS,
		         "%s runs snapshot %s, which nobody started", n->name,
		         id);
		return;
	}
	if (n->nlive == n->caplive) {
		n->caplive = n->caplive ? 2 * n->caplive : 16;
		if ((n->live = realloc(n->live,
		                       n->caplive * sizeof(*n->live))) == NULL)
			abort();
	}
	snprintf(n->live[n->nlive].id, sizeof(n->live[0].id), "%s", id);
	n->live[n->nlive].since = r->s->now;
	/* A participant gives up at four fifths of the timeout after its
	 * first marker (coord_snap.c), so that the initiator hears why; it
	 * is seen here in the turn that marker came in. */
	n->live[n->nlive].bound =
	    r->s->now +
	    (n->idx == sn->initiator ? sn->timeout : sn->timeout * 4 / 5) +
	    SLACK_MS;
	n->live[n->nlive].mark = 1;
	n->nlive++;
}

/* After a turn of node i: no snapshot runs past its bound, and the
 * queues are within theirs. */
void
sim_note_running(struct sim *s, size_t i)
{
	struct sim_node *n = &s->nodes[i];
	struct running r = {s, n};
	struct coord_queue_stats q;
	const struct config *cfg = s->cfg;
	uint64_t window = cfg->window, one, n_in = 0, replay = 0;
	size_t k = 0;

	/* First what the turn's control calls and schedule did. */
	simops_after_turn(s, i);
	for (size_t j = 0; j < n->nlive; j++)
		n->live[j].mark = 0;
	coord_foreach_running(n->c, running_one, &r);
	for (size_t j = 0; j < n->nlive; j++) {
		if (!n->live[j].mark)
			continue; /* ended */
		if (s->now > n->live[j].bound) {
			sim_fail(s, SIM_C_DEADLINE,
			         "%s: snapshot %s still runs %" PRId64
			         " ms after it began here, past its timeout",
			         n->name, n->live[j].id,
			         s->now - n->live[j].since);
			n->live[j].bound = SIM_NEVER; /* said once */
		}
		n->live[k++] = n->live[j];
	}
	n->nlive = k;

	/* The bounds: one window per channel, or one message when it is
	 * larger (it goes alone when nothing is out). */
	if (s->o->self_check == SIM_SC_BOUNDS)
		window /= 8;
	one = cfg->max_message + cfg->message_cost;
	if (one < window)
		one = window;
	for (size_t c = 0; c < cfg->nchans; c++)
		n_in += cfg->chans[c].dst == i;
	coord_queue_stats(n->c, &q);
	if (q.inflight_bytes > one)
		sim_fail(s, SIM_C_BOUNDS,
		         "%s: %" PRIu64 " bytes kept on a channel for a "
		         "window of %" PRIu64,
		         n->name, q.inflight_bytes, window);
	/* A restore queues its recorded messages for replay at once, as
	 * many as the snapshot recorded (not bounded by a window: the
	 * receiving application may have taken more while the marker
	 * came): allowed on top, one message each. */
	if (s->era > 0)
		for (size_t v = 0; v < s->n; v++)
			if (s->rst.has[v][i])
				replay +=
				    (s->rst.n[v][i] - s->rst.m[v][i]) *
				    (cfg->max_message + cfg->message_cost);
	/* Up to twice that for a while after a restart of the receiver:
	 * its senders send again, with a window of new messages, a window
	 * they had not heard was taken, which its application may have
	 * taken from its last run; the daemon holds those until its
	 * application's hello says so (drop_had() in core/coord_app.c). */
	if (q.down_bytes + q.down_items * cfg->message_cost >
	    2 * n_in * one + replay)
		sim_fail(s, SIM_C_BOUNDS,
		         "%s: %zu deliveries (%" PRIu64 " bytes) queued for "
		         "the application, over its %" PRIu64
		         " incoming windows",
		         n->name, q.down_items, q.down_bytes, n_in);
	if (q.down_sent_bytes > (cfg->app_window > cfg->max_message
	                             ? cfg->app_window
	                             : cfg->max_message))
		sim_fail(s, SIM_C_BOUNDS,
		         "%s: %" PRIu64 " bytes handed down and not taken, "
		         "over the application window",
		         n->name, q.down_sent_bytes);
	/* A link holds a window of messages (twice, as above: the sender
	 * forgets what the restarted receiver's application says it took,
	 * before the receiver acknowledges it), and markers, aborts and
	 * parts (each at most the incoming windows' recorded messages) of
	 * the snapshots held.  A message costs more on the window than it
	 * takes on the link (message_cost is at least 64 here). */
	if (q.link_bytes > 2 * one + q.snaps * (n_in * one + 8192))
		sim_fail(s, SIM_C_BOUNDS,
		         "%s: %" PRIu64 " bytes unacknowledged on a link",
		         n->name, q.link_bytes);
	if (q.held_items > LINK_HOLD || q.app_replies > 256 ||
	    q.state_requests > q.snaps)
		sim_fail(s, SIM_C_BOUNDS,
		         "%s: %zu items held, %zu replies, %zu requests",
		         n->name, q.held_items, q.app_replies,
		         q.state_requests);
	for (size_t p = 0; p < n->app.k.npeers; p++) {
		uint64_t kept;
		if (appcore_kept(&n->app.k, p, &kept) > 0 && kept > one)
			sim_fail(s, SIM_C_BOUNDS,
			         "%s: libcut keeps %" PRIu64 " bytes for %s",
			         n->name, kept, s->nodes[n->app.peer[p]].name);
	}
}

/* ---- Conservation ---- */

struct tally {
	struct sim *s;
	const char *id;
	int64_t sum, bank;
	size_t states, chans;
	uint64_t msgs;
	int bad;
	/* The bank's era the states are from (-1 before the first), and
	 * whether its change at every node is known. */
	int era, unknown;
};

static int
tally_state(const char *node, const char *ctype, const void *state, size_t len,
            void *arg)
{
	struct tally *t = arg;
	char buf[80];
	long long v;
	int life = 0, era = 0, idx, known;

	(void)ctype;
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, state, len);
	buf[len] = '\0';
	if (sscanf(buf, "{\"balance\": %lld, \"life\": %d, \"era\": %d", &v,
	           &life, &era) < 2 ||
	    (idx = config_node_index(t->s->cfg, node)) < 0 || era < 0 ||
	    era > t->s->era) {
		sim_fail(t->s, SIM_C_CONSERVATION,
		         "snapshot %s: %s's state is %s", t->id, node, buf);
		t->bad = 1;
		return 0;
	}
	/* Nothing from before a restore survives it (README, Guarantees):
	 * no snapshot holds states of two eras. */
	if (t->era >= 0 && era != t->era) {
		sim_fail(t->s, SIM_C_RESTORE,
		         "snapshot %s: %s's state is from the bank's era %d, "
		         "another's from era %d",
		         t->id, node, era, t->era);
		t->bad = 1;
		return 0;
	}
	t->era = era;
	t->sum += v;
	/* The total as it stood for the life recorded at that node. */
	t->bank +=
	    simapp_delta_era(t->s, &t->s->nodes[idx].app, era, life, &known);
	t->unknown |= !known;
	t->states++;
	return 0;
}

int
sim_amount(const void *payload, size_t len, long *ret)
{
	char buf[48];

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, payload, len);
	buf[len] = '\0';
	return sscanf(buf, "{\"amount\": %ld", ret) == 1 ? 0 : -1;
}

static int
tally_message(uint64_t seq, const char *ctype, const void *payload, size_t len,
              void *arg)
{
	struct tally *t = arg;
	long v;

	(void)seq;
	(void)ctype;
	if (sim_amount(payload, len, &v) != 0) {
		t->bad = 1;
		return 0;
	}
	t->sum += v;
	t->msgs++;
	return 0;
}

struct tally_chan {
	struct tally *t;
	struct store *st;
};

static int
tally_channel(const struct store_channel *ch, void *arg)
{
	struct tally_chan *tc = arg;

	tc->t->chans++;
	return store_foreach_message(tc->st, tc->t->id, ch->src, ch->dst,
	                             tally_message, tc->t);
}

struct judged {
	int found, held;
	char detail[256];
};

static int
judged_one(const char *name, int held, const char *detail, void *arg)
{
	struct judged *j = arg;

	if (strcmp(name, "total") == 0) {
		j->found = 1;
		j->held = held;
		snprintf(j->detail, sizeof(j->detail), "%s", detail);
	}
	return 0;
}

/* The initiator judged the condition on its complete, consistent
 * snapshot id (store/judge.c, after the turn that wrote its end), and
 * found the total the simulation counted from the same rows. */
static void
check_condition(struct sim *s, struct sim_node *n, const char *id, int64_t sum)
{
	struct judged j = {0};
	long long total;

	if (store_foreach_condition(n->st, id, judged_one, &j) != 0) {
		sim_fail(s, SIM_C_SIM,
		         "snapshot %s: cannot read its "
		         "conditions: %s",
		         id, store_errmsg(n->st));
		return;
	}
	s->st->judged += j.found;
	if (!j.found)
		sim_fail(s, SIM_C_SIM,
		         "snapshot %s: its condition was never judged", id);
	else if (j.held != 1 || sscanf(j.detail, "1|%lld", &total) != 1 ||
	         total != sum)
		sim_fail(s, SIM_C_SIM,
		         "snapshot %s: its condition found %s (held %d), the "
		         "snapshot holds %" PRId64 " tokens",
		         id, j.detail, j.held, sum);
}

/* The bank's total in snapshot id, from the initiator's database. */
static void
conservation(struct sim *s, struct sim_node *n, const char *id)
{
	struct tally t = {.s = s, .id = id, .era = -1};
	struct tally_chan tc = {&t, n->st};
	int rv;

	if ((rv = store_foreach_state(n->st, id, tally_state, &t)) != 0 ||
	    (rv = store_foreach_channel(n->st, id, tally_channel, &tc)) != 0) {
		sim_fail(s, SIM_C_CONSERVATION,
		         "snapshot %s: cannot read it back: %s", id,
		         store_errmsg(n->st));
		return;
	}
	s->st->recorded += t.msgs;
	if (t.bad)
		return;
	check_condition(s, n, id, t.sum);
	if (t.unknown) {
		s->st->unverified++;
		return;
	}
	t.bank += s->bank[t.era < 0 ? 0 : t.era];
	if (t.states != s->n || t.chans != s->cfg->nchans)
		sim_fail(s, SIM_C_CONSERVATION,
		         "snapshot %s: complete and consistent with %zu of "
		         "%zu states and %zu of %zu channels",
		         id, t.states, s->n, t.chans, s->cfg->nchans);
	else if (t.sum != t.bank)
		sim_fail(s, SIM_C_CONSERVATION,
		         "snapshot %s: conservation violated: balances and "
		         "%" PRIu64 " messages in flight hold %" PRId64
		         " tokens, the bank %" PRId64,
		         id, t.msgs, t.sum, t.bank);
}

static void
count_reason(struct sim *s, const char *r)
{
	size_t k;

	if (strstr(r, "restarted") != NULL)
		k = 0;
	else if (strstr(r, "storage") != NULL)
		k = 1;
	else if (strstr(r, "did not answer") != NULL ||
	         strstr(r, "reconnected before answering") != NULL)
		k = 2;
	else if (strstr(r, "no application") != NULL)
		k = 3;
	else if (strstr(r, "no marker") != NULL)
		k = 4;
	else if (strstr(r, "no part") != NULL)
		k = 5;
	else if (strstr(r, "numbering resumed") != NULL)
		k = 6;
	else if (strstr(r, "daemon stopped") != NULL)
		k = 7;
	else if (strstr(r, "the cluster is restored to") != NULL ||
	         strstr(r, "missed a restore") != NULL)
		k = 8;
	else
		k = 9;
	if (k == 9)
		sim_trace(s, "abort reason of another kind: %s", r);
	s->st->reasons[k]++;
}

/* Whether reason says that a node held the snapshot's id already
 * ("p2: already holds an older snapshot ..."), and that node has not
 * started again since the snapshot began: a marker can reach a restarted
 * participant's new run, whose database holds what its last run recorded
 * of that same snapshot, when the marker's sender never knew that run. */
static int
held_already(struct sim *s, const struct sim_snap *sn, const char *reason)
{
	const char *p = reason, *hit;

	while ((hit = strstr(p, ": already holds an older snapshot")) != NULL) {
		const char *name = hit;
		char buf[CONFIG_NAME_MAX + 1];
		int v;
		while (name > reason && name[-1] != ' ')
			name--;
		snprintf(buf, sizeof(buf), "%.*s", (int)(hit - name), name);
		if ((v = config_node_index(s->cfg, buf)) < 0 ||
		    s->nodes[v].started <= sn->started)
			return 1;
		p = hit + 1;
	}
	return 0;
}

static int
own_state(const char *node, const char *content_type, const void *state,
          size_t len, void *arg)
{
	(void)content_type;
	(void)state;
	(void)len;
	return strcmp(node, arg) == 0;
}

/* Whether node j's database holds j's own state of snapshot id. */
static int
holds_state(struct sim *s, size_t j, const char *id)
{
	return store_foreach_state(s->nodes[j].st, id, own_state,
	                           (void *)s->nodes[j].name) == 1;
}

/* Every participant that holds a part of snapshot sn heard its outcome
 * (the initiator tells it, and tells it again to a node whose link
 * started afresh; a participant stores again what a failed write lost)
 * and stores the initiator's verdict: nothing stays in progress, and no
 * node says complete where the initiator says aborted, or the other way
 * round. */
static void
outcomes(struct sim *s, const struct sim_snap *sn,
         const struct store_snapshot *init)
{
	for (size_t j = 0; j < s->n; j++) {
		struct store_snapshot row;
		/* The README's exception: a restart of either, after the
		 * snapshot started, may drop the outcome on its way. */
		if (j == sn->initiator || s->nodes[j].started > sn->started ||
		    s->nodes[sn->initiator].started > sn->started ||
		    /* ... and so may a restore, which drops what the links
		     * held of the generation before it. */
		    s->nodes[j].gen_at >= sn->started ||
		    s->nodes[sn->initiator].gen_at >= sn->started ||
		    store_get(s->nodes[j].st, sn->id, &row) != 0)
			continue;
		if (row.status == STORE_IN_PROGRESS || row.outcome_ms == 0)
			sim_fail(s, SIM_C_DEADLINE,
			         "snapshot %s: %s never heard its outcome "
			         "(%s at %s)",
			         sn->id, s->nodes[j].name,
			         init->status == STORE_COMPLETE ? "complete"
			                                        : "aborted",
			         s->nodes[sn->initiator].name);
		else if (init->status == STORE_COMPLETE &&
		         !holds_state(s, j, sn->id))
			/* Its part went to the initiator before it was on
			 * disk here, and then its write failed: nothing may
			 * go to a peer before what it stands for is stored.
			 * (Its part may still say aborted: a failed commit
			 * aborts every snapshot it may have held.) */
			sim_fail(s, SIM_C_DEADLINE,
			         "snapshot %s: complete at %s, though %s "
			         "does not hold its own state",
			         sn->id, s->nodes[sn->initiator].name,
			         s->nodes[j].name);
		else if (row.status != init->status)
			sim_fail(s, SIM_C_DEADLINE,
			         "snapshot %s: %s says %s, its initiator %s",
			         sn->id, s->nodes[j].name,
			         row.status == STORE_COMPLETE ? "complete"
			                                      : "aborted",
			         init->status == STORE_COMPLETE ? "complete"
			                                        : "aborted");
	}
}

/* Every snapshot's end, as its initiator's database holds it. */
static void
check_snapshots(struct sim *s)
{
	for (size_t i = 0; i < s->nsnaps; i++) {
		struct sim_snap *sn = &s->snaps[i];
		struct sim_node *n = &s->nodes[sn->initiator];
		struct store_snapshot row;
		int rv = store_get(n->st, sn->id, &row);
		int64_t took;

		if (rv == E_NOENT && sn->lost_ok)
			continue;
		/* Deleted, by a Delete or by retention: simops_final(). */
		if (rv == E_NOENT && (sn->deleted || sn->end_seen))
			continue;
		if (rv != 0) {
			sim_fail(s, SIM_C_DEADLINE,
			         "snapshot %s: no row at its initiator: %s",
			         sn->id, store_errmsg(n->st));
			continue;
		}
		/* An id's counter is at least the wall clock when it was
		 * issued (README, Concepts), its row's start. */
		if (strtoull(strrchr(sn->id, ':') + 1, NULL, 10) <
		    (uint64_t)row.started_ms)
			sim_fail(s, SIM_C_IDS,
			         "snapshot %s: its id is below the wall clock "
			         "when it started, %" PRId64,
			         sn->id, row.started_ms);
		took = row.finished_ms - row.started_ms;
		if (row.status == STORE_IN_PROGRESS) {
			sim_fail(s, SIM_C_DEADLINE,
			         "snapshot %s: still in progress at the end",
			         sn->id);
			continue;
		}
		if (took > (int64_t)sn->timeout + SLACK_MS && !sn->crashed)
			sim_fail(s, SIM_C_DEADLINE,
			         "snapshot %s: ended %" PRId64 " ms after it "
			         "started, timeout %" PRIu32 " (%s)",
			         sn->id, took, sn->timeout,
			         row.status == STORE_COMPLETE ? "complete"
			                                      : row.reason);
		outcomes(s, sn, &row);
		if (row.status == STORE_COMPLETE) {
			if (row.consistent != 1) {
				sim_fail(s, SIM_C_DEADLINE,
				         "snapshot %s: complete but not "
				         "consistent: %s",
				         sn->id, row.audit_reason);
				continue;
			}
			s->st->complete++;
			conservation(s, n, sn->id);
			if (sn->final)
				s->st->final_ok++;
			continue;
		}
		s->st->aborted++;
		if (row.reason[0] == '\0')
			sim_fail(s, SIM_C_DEADLINE,
			         "snapshot %s: aborted without a reason",
			         sn->id);
		else if (held_already(s, sn, row.reason))
			sim_fail(s, SIM_C_IDS,
			         "snapshot %s: a participant held its id "
			         "already: %s",
			         sn->id, row.reason);
		count_reason(s, row.reason);
		if (sn->final)
			sim_fail(s, SIM_C_LIVENESS,
			         "the snapshot after the faults healed, %s, "
			         "aborted: %s",
			         sn->id, row.reason);
	}
}

/* ---- Phases ---- */

/* Every link (parts and aborts go to the initiator on links without a
 * channel) is alive both ways and knows the other end's current run,
 * every application connected, every database writable. */
static int
recovered(struct sim *s, char *why, size_t len)
{
	/* The final snapshot would be aborted by a restore still to be
	 * applied somewhere. */
	if (s->rst.active) {
		snprintf(why, len, "a restore is still being applied");
		return 0;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		struct coord_restore_view rv;
		if (n->c != NULL) {
			/* Prepared for a restore whose restorer died while
			 * voting: it holds its deliveries until 3 x the
			 * restore's timeout (README, Restore, Limits). */
			coord_restore_view(n->c, &rv);
			if (rv.running) {
				snprintf(why, len,
				         "%s is prepared for a restore",
				         n->name);
				return 0;
			}
		}
		if (n->c == NULL || !coord_app_connected(n->c) ||
		    coord_degraded(n->c)[0] != '\0' || n->app.lost ||
		    !n->app.k.opened) {
			snprintf(why, len, "%s: daemon %s, application %s%s%s",
			         n->name,
			         n->c == NULL                      ? "down"
			         : coord_degraded(n->c)[0] != '\0' ? "degraded"
			                                           : "up",
			         n->c != NULL && coord_app_connected(n->c)
			             ? "connected"
			             : "not connected",
			         n->app.lost ? ", its link lost" : "",
			         n->app.k.opened ? "" : ", not opened");
			return 0;
		}
		for (size_t v = 0; v < s->n; v++) {
			struct coord_peer_stats ps;
			if (v == i)
				continue;
			/* A channel's new numbering reaching its receiver,
			 * or a restarted receiver learning it from the first
			 * message, aborts what that receiver records
			 * (README). */
			coord_peer_stats(n->c, v, &ps);
			if (!coord_peer_alive(n->c, v) ||
			    coord_peer_epoch(n->c, v) != s->nodes[v].epoch ||
			    ps.renumbering || (ps.has_in && !ps.in_known)) {
				snprintf(
				    why, len, "%s -> %s: %s", n->name,
				    s->nodes[v].name,
				    !coord_peer_alive(n->c, v) ? "not alive"
				    : coord_peer_epoch(n->c, v) !=
				            s->nodes[v].epoch
				        ? "its run not known"
				    : ps.renumbering
				        ? "a renumbering not acked"
				        : "the incoming numbering not known");
				return 0;
			}
		}
	}
	return 1;
}

/* Whether nothing is left to do; if not, what (for the failure). */
static int
settled(struct sim *s, char *why, size_t len)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		struct coord_queue_stats q;
		if (n->c == NULL) {
			snprintf(why, len, "%s is down", n->name);
			return 0;
		}
		if (coord_degraded(n->c)[0] != '\0') {
			snprintf(why, len, "%s is degraded", n->name);
			return 0;
		}
		coord_queue_stats(n->c, &q);
		if (q.link_items > 0 || q.inflight_items > 0 ||
		    q.down_items > 0) {
			snprintf(why, len,
			         "%s holds %zu unacknowledged items, %zu "
			         "untaken messages, %zu deliveries",
			         n->name, q.link_items, q.inflight_items,
			         q.down_items);
			return 0;
		}
		if (coord_in_progress(n->c) > 0 || n->nlive > 0) {
			snprintf(why, len, "%s has snapshots running", n->name);
			return 0;
		}
		if (q.outcomes_waiting > 0) {
			snprintf(why, len, "%s has %zu outcomes to store again",
			         n->name, q.outcomes_waiting);
			return 0;
		}
		for (size_t v = 0; v < s->n; v++)
			if (v != i &&
			    s->sent[v][i].n != simapp_stream_taken(s, v, i)) {
				snprintf(
				    why, len,
				    "%s -> %s: %zu sent, %" PRIu64 " taken",
				    s->nodes[v].name, n->name, s->sent[v][i].n,
				    simapp_stream_taken(s, v, i));
				return 0;
			}
		for (size_t p = 0; p < n->app.k.npeers; p++)
			if (appcore_kept(&n->app.k, p, &(uint64_t){0}) > 0) {
				snprintf(
				    why, len, "%s's libcut keeps %zu for %s",
				    n->name,
				    appcore_kept(&n->app.k, p, &(uint64_t){0}),
				    s->nodes[n->app.peer[p]].name);
				return 0;
			}
	}
	return !simops_busy(s, why, len);
}

/* With -v, where every channel stands (for a run that did not
 * settle). */
static void
dump(struct sim *s)
{
	if (s->o->verbose == 0)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		for (size_t v = 0; v < s->n; v++) {
			struct coord_peer_stats ps;
			size_t p;
			if (!channel(s->cfg, i, v) || n->c == NULL)
				continue;
			coord_peer_stats(n->c, v, &ps);
			for (p = 0; p < n->app.k.npeers; p++)
				if (n->app.peer[p] == v)
					break;
			sim_trace(
			    s,
			    "%s -> %s: app sent %zu (kept %zu, out_taken "
			    "%" PRIu64 "), daemon sent %" PRIu64
			    " app_taken %" PRIu64 " window %" PRIu64
			    "; receiver took %" PRIu64 " alive %d",
			    n->name, s->nodes[v].name, s->sent[i][v].n,
			    p < n->app.k.npeers
			        ? appcore_kept(&n->app.k, p, &(uint64_t){0})
			        : 0,
			    p < n->app.k.npeers ? n->app.k.ch[p].taken : 0,
			    ps.sent, ps.app_taken, ps.window_used,
			    simapp_taken_from(&s->nodes[v].app, i), ps.alive);
		}
	}
}

static void
heal(struct sim *s)
{
	sim_trace(s, "the faults end");
	s->phase = 1;
	simnet_heal(s);
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		n->db.active = 0;
		n->app.slow_until = n->app.stop_until = n->app.mute_until = 0;
		n->app.next_recv = s->now;
		if (n->c == NULL)
			n->restart_at = s->now;
	}
}

static int64_t
next_time(struct sim *s)
{
	int64_t t = simnet_next_event(s);

	for (size_t i = 0; i < s->n; i++) {
		int64_t a = simapp_next_event(&s->nodes[i].app);
		if (a < t)
			t = a;
	}
	if (s->next_event < s->nevents && s->events[s->next_event].at < t)
		t = s->events[s->next_event].at;
	if (s->phase < 2 && s->next_start < t)
		t = s->next_start;
	if (s->phase == 0 && s->heal_at < t)
		t = s->heal_at;
	if (s->check_at < t)
		t = s->check_at;
	return t;
}

/* The work of time s->now outside the nodes' turns: faults, restarts,
 * phases, snapshot starts. */
static int
schedule(struct sim *s)
{
	char why[256];

	while (s->next_event < s->nevents &&
	       s->events[s->next_event].at <= s->now)
		run_event(s, &s->events[s->next_event++]);
	/* --restore-kills N: more appkills while a restore runs (its
	 * windows are short: a few in a hundred runs see one otherwise). */
	if (s->o->restore_kills != 0 && (s->o->faults & SIM_F_APPKILL) &&
	    s->rst.active && s->phase == 0 &&
	    sim_rand(s, s->o->restore_kills) == 0) {
		struct sim_event e = {0};
		e.kind = EV_APPKILL;
		e.node = sim_rand(s, s->n);
		e.at = s->now;
		run_event(s, &e);
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->nodes[i].c == NULL && s->nodes[i].restart_at <= s->now)
			restart(s, &s->nodes[i]);
	if (s->phase == 0 && s->now >= s->heal_at)
		heal(s);
	if (s->phase < 2 && s->now >= s->next_start) {
		struct sim_node *n = &s->nodes[sim_rand(s, s->n)];
		if (n->c != NULL && !(s->phase == 1 && s->final_id != SIZE_MAX))
			n->starts++;
		s->next_start = s->now + sim_range(s, 50, 700);
	}
	if (s->now < s->check_at)
		return 0;
	s->check_at = s->now + 50;
	if (s->phase == 1 && s->final_id == SIZE_MAX && !s->final_pending) {
		char why[160];
		if (recovered(s, why, sizeof(why))) {
			s->final_node = (size_t)sim_rand(s, s->n);
			s->final_pending = 1;
			s->nodes[s->final_node].starts++;
		} else if (s->now > s->heal_at + RECOVER_MS) {
			sim_fail(s, SIM_C_LIVENESS,
			         "links did not come back within %d ms of "
			         "the faults' end (%s)",
			         RECOVER_MS, why);
			return -1;
		}
	}
	if (s->phase == 1 && s->final_id != SIZE_MAX) {
		struct sim_snap *sn = &s->snaps[s->final_id];
		struct coord_snap_view v;
		struct sim_node *n = &s->nodes[sn->initiator];
		if (n->c != NULL)
			coord_snapshot_view(n->c, sn->id, &v);
		if (n->c == NULL || v.ended ||
		    s->now > sn->deadline + SLACK_MS) {
			sim_trace(s, "traffic stops");
			s->phase = 2;
			s->settle_at = s->now;
		}
	}
	if (s->phase == 2) {
		if (settled(s, why, sizeof(why)))
			return 1;
		if (s->now > s->settle_at + SETTLE_MS) {
			sim_fail(s, SIM_C_LIVENESS,
			         "the cluster did not settle within %d ms: %s",
			         SETTLE_MS, why);
			dump(s);
			return -1;
		}
	}
	return 0;
}

/* ---- One run ---- */

static void
run_init(struct sim *s)
{
	size_t n;
	int ring;

	n = s->o->nodes_lo +
	    (size_t)sim_rand(s, s->o->nodes_hi - s->o->nodes_lo + 1);
	ring =
	    s->o->topology >= 0 ? s->o->topology : n > 3 && sim_rand(s, 2) == 0;
	s->n = n;
	s->cfg = make_config(s, n, ring);
	cutproto_arena_init(&s->arena);
	s->final_id = SIZE_MAX;
	s->heal_at = s->o->duration_ms;
	s->check_at = 0;
	s->next_start = sim_range(s, 100, 600);
	for (size_t a = 0; a < n; a++)
		for (size_t b = 0; b < n; b++)
			s->lat[a][b] = (unsigned char)sim_range(s, s->o->lat_lo,
			                                        s->o->lat_hi);
	for (size_t i = 0; i < n; i++) {
		struct sim_node *nd = &s->nodes[i];
		char err[512];
		int64_t balance = sim_range(s, BALANCE_MIN, BALANCE_MAX);
		nd->idx = i;
		nd->name = s->cfg->nodes[i].name;
		nd->restart_at = SIM_NEVER;
		struct errinfo e = {0};
		static unsigned long dbs;
		/* Named, so that the conditions' read-only connection opens
		 * the same database in memory. */
		snprintf(nd->dbpath, sizeof(nd->dbpath),
		         "file:cutsim-%ld-%lu?mode=memory&cache=shared",
		         (long)getpid(), dbs++);
		if (store_open(nd->dbpath, &nd->st, err, sizeof(err)) != 0) {
			fprintf(stderr, "cutlab: %s\n", err);
			exit(EX_SOFTWARE);
		}
		if (cond_open(nd->dbpath, 2 * s->cfg->max_message + 65536,
		              &nd->cond, &e) != 0) {
			fprintf(stderr, "cutlab: %s\n", e.text);
			exit(EX_SOFTWARE);
		}
		simdb_init(&nd->db, s, nd->st);
		if (simnet_start(s, nd) != 0) {
			fprintf(stderr, "cutlab: cannot start %s\n", nd->name);
			exit(EX_SOFTWARE);
		}
		simapp_init(s, &nd->app, i, balance);
		s->total += balance;
	}
	s->bank[0] = s->total;
	plan_faults(s);
}

static void
run_free(struct sim *s)
{
	simnet_free(s);
	for (size_t i = 0; i < s->n; i++) {
		struct sim_node *n = &s->nodes[i];
		coord_free(n->c);
		cond_close(n->cond);
		store_close(n->st);
		simapp_fini(&n->app);
		free(n->live);
	}
	for (size_t a = 0; a < s->n; a++)
		for (size_t b = 0; b < s->n; b++) {
			free(s->sent[a][b].amount);
			for (int g = 0; g < SIM_MAX_LIVES; g++)
				free(s->glog[a][b][g].amount);
		}
	simops_free(s);
	cutproto_arena_fini(&s->arena);
	config_free(s->cfg);
	free(s->events);
	free(s->snaps);
}

/* The end of a run: what only the whole history can tell. */
static void
final_checks(struct sim *s)
{
	int64_t sum = 0, bank = s->bank[s->era];

	/* What the reboots lost is known once the streams are drained. */
	simapp_end_gens(s);
	for (size_t i = 0; i < s->n; i++) {
		const struct sim_app *a = &s->nodes[i].app;
		sum += a->balance;
		bank += simapp_delta(s, a, a->life);
	}
	if (sum != bank)
		sim_fail(s, SIM_C_ONCE,
		         "the balances hold %" PRId64 " tokens at the end, "
		         "the bank %" PRId64,
		         sum, bank);
	check_snapshots(s);
	simops_final(s);
	if (s->final_id == SIZE_MAX)
		sim_fail(s, SIM_C_LIVENESS,
		         "no snapshot was started after the faults healed");
	for (size_t i = 0; i < s->n; i++)
		s->st->db_failures += s->nodes[i].db.fault.failures;
}

static void
faults_arg(unsigned faults, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (faults == 0) {
		snprintf(buf, len, "none");
		return;
	}
	for (size_t k = 0; k < NFAULTS; k++)
		if (faults & fault_names[k].bit)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
			                        off ? "," : "",
			                        fault_names[k].name);
}

/* LO-HI milliseconds of one-way latency (1-4 by default; long links up
 * to 200), drawn per ordered pair of nodes. */
static int
parse_latency(const char *p, struct sim_options *o)
{
	unsigned lo, hi;
	char end;

	if (sscanf(p, "%u-%u%c", &lo, &hi, &end) != 2 || lo < 1 || hi < lo ||
	    hi > 200)
		return -1;
	o->lat_lo = lo;
	o->lat_hi = hi;
	return 0;
}

static void
replay_line(const struct sim_options *o, uint64_t seed, FILE *f)
{
	char faults[128];

	faults_arg(o->faults, faults, sizeof(faults));
	fprintf(f, "cutlab sim --nodes %s --seed %" PRIu64 " --faults %s",
	        o->nodes_arg, seed, faults);
	if (o->duration_ms != 8000)
		fprintf(f, " --duration %" PRId64, o->duration_ms);
	if (o->rate != 100)
		fprintf(f, " --rate %u", o->rate);
	if (o->lat_lo != 1 || o->lat_hi != 4)
		fprintf(f, " --latency %u-%u", o->lat_lo, o->lat_hi);
	if (o->cut >= 0)
		fprintf(f, " --cut %s", o->cut ? "aligned" : "unaligned");
	if (o->topology >= 0)
		fprintf(f, " --topology %s", o->topology ? "ring" : "full");
	if (o->self_check != SIM_SC_NONE)
		fprintf(f, " --self-check %s", self_checks[o->self_check]);
	if (o->restore_kills != 0)
		fprintf(f, " --restore-kills %" PRIu64, o->restore_kills);
}

/* Runs seed; returns 0 if every check held. */
static int
run_one(const struct sim_options *o, uint64_t seed, struct sim_stats *st)
{
	struct sim *s = calloc(1, sizeof(*s));
	int64_t last = -1, same = 0;
	int rv = 0;

	if (s == NULL)
		abort();
	s->o = o;
	s->st = st;
	s->seed = seed;
	s->rng.s = seed;
	run_init(s);
	if (o->verbose)
		printf(
		    "seed %" PRIu64 ": %zu nodes, %zu channels (%s), %s cut, "
		    "deadline %u ms, message cost %zu, bank %" PRId64 "\n",
		    seed, s->n, s->cfg->nchans,
		    s->cfg->chans_declared ? "ring and chords" : "every pair",
		    s->cfg->aligned ? "aligned" : "unaligned",
		    s->cfg->deadline_ms, s->cfg->message_cost, s->total);
	for (;;) {
		int64_t t = next_time(s);
		if (t == SIM_NEVER) {
			sim_fail(s, SIM_C_SIM, "nothing left to happen");
			break;
		}
		if (t < s->now)
			t = s->now;
		/* Every step moves time on or ends something; a thousand
		 * at one instant means the simulation itself is stuck. */
		if (t == last && ++same > 1000) {
			sim_fail(s, SIM_C_SIM,
			         "the simulation is stuck at one instant");
			break;
		}
		if (t != last)
			same = 0;
		last = s->now = t;
		if ((rv = schedule(s)) != 0)
			break;
		simnet_deliver(s);
		for (size_t i = 0; i < s->n; i++)
			if (simnet_due(s, &s->nodes[i]))
				simnet_turn(s, &s->nodes[i]);
		simnet_recovered(s);
		for (size_t i = 0; i < s->n; i++)
			if (simapp_next_event(&s->nodes[i].app) <= s->now)
				simapp_step(s, &s->nodes[i].app);
		if (o->self_check != SIM_SC_NONE &&
		    (s->caught & (1u << self_check_trips[o->self_check])))
			break; /* caught: enough */
	}
	if (rv >= 0)
		final_checks(s);
	st->sim_ms += s->now;
	st->runs++;
	rv = s->nfail > 0;
	if (o->self_check != SIM_SC_NONE &&
	    (s->caught & (1u << self_check_trips[o->self_check])))
		st->caught++;
	if (rv) {
		st->failed++;
		if (o->self_check == SIM_SC_NONE) {
			printf("FAIL seed %" PRIu64 ": %s", seed, s->fail);
			if (s->nfail > 1)
				printf(" (and %" PRIu64 " more)", s->nfail - 1);
			printf("\n  replay: ");
			replay_line(o, seed, stdout);
			printf(" -v\n");
		} else if (o->verbose) {
			printf("seed %" PRIu64 ": caught: %s\n", seed, s->fail);
		}
	} else if (o->verbose) {
		printf("seed %" PRIu64 ": ok (%" PRId64 " ms simulated)\n",
		       seed, s->now);
	}
	fflush(stdout);
	run_free(s);
	free(s);
	return rv;
}

/* ---- Options ---- */

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: cutlab sim [--nodes N|LO-HI] [--seed S] [--runs R] "
	        "[--faults LIST]\n"
	        "                  [--duration MS] [--rate MSGS] "
	        "[--latency LO-HI] [--cut aligned|unaligned]\n"
	        "                  [--topology full|ring] [--self-check BUG] "
	        "[--restore-kills N] [-v]...\n"
	        "LIST: all, none, or "
	        "crash,partition,drop,storage,slow,applink,appkill,\n"
	        "      restore,delete,schedule,handshake,reboot,lose\n"
	        "      (all: every one)\n"
	        "BUG: conservation, once, deadline, ids, bounds, restore\n");
}

static int
parse_u64(const char *p, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (p[0] < '0' || p[0] > '9')
		return -1;
	v = strtoull(p, &end, 10);
	if (*end != '\0')
		return -1;
	*ret = v;
	return 0;
}

static int
parse_faults(const char *p, unsigned *ret)
{
	char buf[256], *tok, *save = NULL;

	if (strcmp(p, "all") == 0) {
		*ret = SIM_F_ALL;
		return 0;
	}
	*ret = 0;
	if (strcmp(p, "none") == 0)
		return 0;
	snprintf(buf, sizeof(buf), "%s", p);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t k;
		for (k = 0; k < NFAULTS; k++)
			if (strcmp(tok, fault_names[k].name) == 0)
				break;
		if (k == NFAULTS)
			return -1;
		*ret |= fault_names[k].bit;
	}
	return 0;
}

static int
parse_nodes(const char *p, struct sim_options *o)
{
	unsigned long lo, hi;
	char c;

	if (sscanf(p, "%lu-%lu%c", &lo, &hi, &c) == 2) {
		/* a range */
	} else if (sscanf(p, "%lu%c", &lo, &c) == 1) {
		hi = lo;
	} else {
		return -1;
	}
	if (lo < SIM_MIN_NODES || hi > SIM_MAX_NODES || lo > hi)
		return -1;
	o->nodes_lo = lo;
	o->nodes_hi = hi;
	snprintf(o->nodes_arg, sizeof(o->nodes_arg), "%s", p);
	return 0;
}

/* Fewer runs when CUT_SIM_SCALE says so (the ASan build's tests set it:
 * a run there costs several times as much). */
static uint64_t
scaled(uint64_t runs)
{
	const char *e = getenv("CUT_SIM_SCALE");
	uint64_t pct;

	if (e == NULL || parse_u64(e, &pct) != 0 || pct == 0 || pct >= 100)
		return runs;
	runs = runs * pct / 100;
	return runs > 0 ? runs : 1;
}

static void
report(const struct sim_options *o, const struct sim_stats *st)
{
	char faults[128];

	faults_arg(o->faults, faults, sizeof(faults));
	printf("sim: %" PRIu64 " runs (seeds %" PRIu64 "..%" PRIu64
	       ", %s nodes, faults %s): %" PRIu64 " passed, %" PRIu64
	       " failed\n",
	       st->runs, o->seed, o->seed + st->runs - 1, o->nodes_arg, faults,
	       st->runs - st->failed, st->failed);
	printf("  snapshots: %" PRIu64 " started (%" PRIu64
	       " refused), %" PRIu64 " complete and consistent (%" PRIu64
	       " conditions judged), %" PRIu64
	       " aborted with a reason; %" PRIu64 " after healing complete\n",
	       st->started, st->refused, st->complete, st->judged, st->aborted,
	       st->final_ok);
	printf("  aborts: ");
	for (size_t k = 0; k < sizeof(reason_kinds) / sizeof(reason_kinds[0]);
	     k++)
		printf("%s%s %" PRIu64, k ? ", " : "", reason_kinds[k],
		       st->reasons[k]);
	printf("\n  %" PRIu64 " messages, %" PRIu64 " recorded in transit; "
	       "%" PRIu64 " crashes (%" PRIu64 " of them stops), %" PRIu64
	       " partitions, %" PRIu64 " resets, %" PRIu64
	       " storage faults (%" PRIu64 " writes failed), %" PRIu64
	       " slow spells, %" PRIu64 " application links reset, %" PRIu64
	       " applications killed (%" PRIu64
	       " messages lost unread, %" PRIu64 " deliveries handed again)\n",
	       st->messages, st->recorded, st->crashes, st->stops,
	       st->partitions, st->drops, st->storage, st->db_failures,
	       st->slow, st->applinks, st->appkills, st->kill_lost,
	       st->kill_again);
	if (o->faults & SIM_F_LOSE)
		printf("  %" PRIu64 " frames lost on live connections\n",
		       st->losses);
	if (o->faults & SIM_F_REBOOT)
		printf("  %" PRIu64 " reboots (%" PRIu64
		       " messages lost with them, never passed on)\n",
		       st->reboots, st->reboot_lost);
	if (o->faults & (SIM_F_RESTORE | SIM_F_DELETE | SIM_F_SCHEDULE))
		printf("  restores: %" PRIu64 " started (%" PRIu64
		       " refused), %" PRIu64 " done on every node, %" PRIu64
		       " decided and confirmed late, %" PRIu64
		       " given up; %" PRIu64 " messages replayed; %" PRIu64
		       " applications killed during one (%" PRIu64
		       " lives without a callback restarted)\n"
		       "  deletes: %" PRIu64 " (%" PRIu64 " refused, %" PRIu64
		       " undone by storage, %" PRIu64
		       " of a participant's copy), %" PRIu64
		       " by retention, %" PRIu64 " keeps\n"
		       "  schedule: %" PRIu64 " ticks, %" PRIu64
		       " started, %" PRIu64 " skipped, %" PRIu64
		       " paused or failed; %" PRIu64
		       " snapshots of an era whose bank was not known\n",
		       st->restores, st->restores_refused, st->restores_done,
		       st->restores_late, st->restores_given_up, st->replayed,
		       st->restore_kills, st->restore_restarts,
		       st->deletes, st->deletes_refused, st->deletes_undone,
		       st->local_deletes, st->retained_away, st->keeps,
		       st->sched_ticks, st->sched_started, st->sched_skipped,
		       st->sched_other, st->unverified);
	printf("  %" PRIu64 " daemon turns, %" PRIu64 " peer frames, %.1f s "
	       "simulated\n",
	       st->turns, st->frames, (double)st->sim_ms / 1000);
}

int
sim_main(int argc, char **argv)
{
	struct sim_options o;
	struct sim_stats st;
	uint64_t v;

	memset(&o, 0, sizeof(o));
	memset(&st, 0, sizeof(st));
	o.nodes_lo = o.nodes_hi = 5;
	snprintf(o.nodes_arg, sizeof(o.nodes_arg), "5");
	o.seed = 1;
	o.runs = 1;
	o.faults = SIM_F_ALL;
	o.cut = -1;
	o.topology = -1;
	o.duration_ms = 8000;
	o.rate = 100;
	o.lat_lo = 1;
	o.lat_hi = 4;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i],
		           *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(arg, "--verbose") == 0 ||
		    (arg[0] == '-' && arg[1] == 'v' &&
		     strspn(arg + 1, "v") == strlen(arg + 1))) {
			o.verbose += arg[1] == 'v' ? (int)strlen(arg + 1) : 1;
			continue;
		}
		if (val == NULL) {
			usage(stderr);
			return EX_USAGE;
		}
		i++;
		if (strcmp(arg, "--nodes") == 0 && parse_nodes(val, &o) == 0)
			continue;
		if (strcmp(arg, "--seed") == 0 && parse_u64(val, &o.seed) == 0)
			continue;
		if (strcmp(arg, "--runs") == 0 &&
		    parse_u64(val, &o.runs) == 0 && o.runs > 0)
			continue;
		if (strcmp(arg, "--faults") == 0 &&
		    parse_faults(val, &o.faults) == 0)
			continue;
		if (strcmp(arg, "--restore-kills") == 0 &&
		    parse_u64(val, &o.restore_kills) == 0)
			continue;
		if (strcmp(arg, "--duration") == 0 && parse_u64(val, &v) == 0 &&
		    v >= 1000 && v <= 600000) {
			o.duration_ms = (int64_t)v;
			continue;
		}
		if (strcmp(arg, "--rate") == 0 && parse_u64(val, &v) == 0 &&
		    v >= 1 && v <= 1000) {
			o.rate = (unsigned)v;
			continue;
		}
		if (strcmp(arg, "--latency") == 0 &&
		    parse_latency(val, &o) == 0)
			continue;
		if (strcmp(arg, "--cut") == 0 &&
		    (strcmp(val, "aligned") == 0 ||
		     strcmp(val, "unaligned") == 0)) {
			o.cut = strcmp(val, "aligned") == 0;
			continue;
		}
		if (strcmp(arg, "--topology") == 0 &&
		    (strcmp(val, "full") == 0 || strcmp(val, "ring") == 0)) {
			o.topology = strcmp(val, "ring") == 0;
			continue;
		}
		if (strcmp(arg, "--self-check") == 0) {
			size_t k;
			for (k = 1; k < NSELF; k++)
				if (strcmp(val, self_checks[k]) == 0)
					break;
			if (k < NSELF) {
				o.self_check = (enum sim_self_check)k;
				continue;
			}
		}
		usage(stderr);
		return EX_USAGE;
	}
	/* The coordinators' own log only with -vv: the checks speak. */
	log_init(o.verbose >= 2 ? LOG_DEBUG : -1);
	/* A planted bug must be caught in the runs asked for, whatever the
	 * build. */
	if (o.self_check == SIM_SC_NONE)
		o.runs = scaled(o.runs);
	for (uint64_t k = 0; k < o.runs; k++)
		run_one(&o, o.seed + k, &st);
	if (o.self_check != SIM_SC_NONE) {
		/* Planted: the run must fail, and did in so many seeds. */
		printf("self-check %s: the planted bug was caught by its check "
		       "in %" PRIu64 " of %" PRIu64 " runs\n",
		       self_checks[o.self_check], st.caught, st.runs);
		return st.caught > 0 ? 0 : 1;
	}
	report(&o, &st);
	return st.failed > 0 ? 1 : 0;
}
