/*
 * simapp.c - the applications of the simulation: libcut's own protocol
 * core (libclient/core/appcore.c, appqueue.c) under a token bank.
 *
 * Everything libcut decides about the protocol is the core's, and runs
 * here as it runs in libcut: the hellos and the answers to them
 * (appcore_hello_frame()), numbering, credit, the kept messages and
 * their resend after a resume, what a lost connection forgets
 * (appq_forget()), which items of a frame are taken at once and which
 * are queued (appq_ingest()), the order the application takes them in
 * and what each is (appq_take()), the taken reports and their timer,
 * state replies, the restore's step.  What stays here is the simulated
 * side of libcut's threads and sockets, in one thread and simulated
 * time: frames cut from the out buffer onto the simulated connection,
 * the connection's ups and downs, resuming on the next receive after a
 * lost connection; what an application decides: what to send and when,
 * when to read, and when to die; and the simulation's own checks and
 * bookkeeping.
 *
 * The token bank: each application starts with a balance, sends random
 * amounts ({"amount": k}, sometimes padded) to random peers it has a
 * channel to, adds what it is handed, and answers a state request with
 * {"balance": N}.  Every delivery is checked as it is handed: the next
 * seq of its channel, with the amount its sender sent under that seq.
 *
 * Behaviour (the "slow" faults): an application may for a while take
 * only a few deliveries now and then, take none at all, or have its state
 * callback fail (libcut then leaves the request unanswered).
 *
 * Restores (with --faults restore): most lives register a restore
 * callback (AppRestorable after every hello reply, as libcut says it);
 * an AppRestore drops what came before it (appq_ingest()), and is
 * taken in its place in the stream: the callback sets the recorded
 * balance, then appcore_restore_step().  The state then says which era
 * of the bank it is from ({"balance": N, "life": L, "era": E}).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static struct sim_node *
node_of(struct sim *s, const struct sim_app *a)
{
	return &s->nodes[a->node];
}

static int restore_owed(struct sim *s, const struct sim_app *a);

static const char *
name_of(struct sim *s, const struct sim_app *a)
{
	return s->nodes[a->node].name;
}

void
simapp_init(struct sim *s, struct sim_app *a, size_t node, int64_t balance)
{
	memset(a, 0, sizeof(*a));
	a->s = s;
	a->node = node;
	appcore_init(&a->k);
	appq_init(&a->q, free);
	a->balance = balance;
	a->dial_at = s->now + sim_range(s, 0, 20);
	a->next_recv = s->now;
	a->next_send = s->now + sim_range(s, 1, 50);
	/* Now and then a life without a restore callback: restores are
	 * refused while it lives. */
	if (s->o->faults & SIM_F_RESTORE)
		a->restorable = sim_rand(s, 20) != 0;
}

/* Whether this life registered a restore callback. */
static int
has_restore_callback(const struct sim *s, const struct sim_app *a)
{
	return (s->o->faults & SIM_F_RESTORE) && a->restorable;
}

/* The application's cut_set_restore_callback() after cut_open(): the
 * daemon learns of the callback (appcore_restorable()); after a resume,
 * appcore_hello_frame() tells it again. */
static void
say_restorable(struct sim *s, struct sim_app *a)
{
	if (!has_restore_callback(s, a))
		return;
	if (appcore_restorable(&a->k, 1) != 0)
		abort();
}

void
simapp_fini(struct sim_app *a)
{
	appcore_fini(&a->k);
	appq_fini(&a->q);
}

/* Puts a frame on the connection to the daemon. */
static struct sim_frame *
up_frame(struct sim *s, struct sim_app *a, const void *p, size_t len)
{
	struct sim_node *n = node_of(s, a);
	struct sim_frame *f = simnet_frame_new(len);

	memcpy(f->data, p, len);
	f->at = s->now + 1;
	f->conn = a->conn;
	simnet_queue_push(&n->app_up, f);
	return f;
}

/* The simulated socket's side of cut_kick(): what the out buffer holds
 * goes, in frames of whole items of at most appcore_frame_max() bytes
 * (one larger item goes alone).  libcut sends one frame at a time; each
 * leaves as soon as the one before it has, so in simulated time they all
 * go now. */
static void
kick(struct sim *s, struct sim_app *a)
{
	size_t n;

	if (a->conn == 0 || a->lost)
		return;
	while ((n = appcore_frame_len(&a->k, appcore_frame_max(&a->k))) > 0) {
		up_frame(s, a, a->k.out, n);
		appcore_frame_taken(&a->k, n);
	}
}

/* The simulated socket's side of cut_send_now(): a hello in a frame of
 * its own, at once. */
static void
send_hello(struct sim *s, struct sim_app *a, int resume)
{
	uint8_t *buf;
	size_t len;

	if (appcore_hello(&a->k, name_of(s, a), resume, &buf, &len) != 0)
		abort();
	up_frame(s, a, buf, len)->hello = 1;
	free(buf);
	a->hello_sent = 1;
	a->hello_conn = a->conn;
}

/* ---- The hello and its reply ---- */

/* The reply to the first hello, taken (appcore_hello_answer()): the
 * simulation's checks of the numbering the daemon gave. */
static void
opened(struct sim *s, struct sim_app *a, int rv)
{
	/* A daemon that applied a restore this application has not taken
	 * (its last life died after the vote) answers with the restored
	 * positions: the next era's numbering, in which the era's logs
	 * start at the recorded n (simops_app_restore()).  What the dead
	 * life sent is the ended era's, which the restore discarded, with
	 * what cut_flush() had promised of it (README, Restore). */
	const struct sim_restore *rs = &s->rst;
	int ahead = rs->active && rs->decided && a->frame_gen == rs->gen &&
	            a->era == s->era - 1;

	if (rv != 0 || a->k.npeers > SIM_MAX_NODES) {
		sim_fail(s, SIM_C_ONCE, "%s: a bad hello reply", name_of(s, a));
		return;
	}
	for (size_t i = 0; i < a->k.npeers; i++) {
		int v = config_node_index(s->cfg, a->k.ch[i].peer);
		if (v < 0) {
			sim_fail(s, SIM_C_ONCE, "%s: the hello reply names %s",
			         name_of(s, a), a->k.ch[i].peer);
			return;
		}
		a->peer[i] = (size_t)v;
		a->opened_at[v] = a->k.ch[i].seq;
		if (ahead) {
			if (rs->has[a->node][v] &&
			    a->k.ch[i].seq != rs->n[a->node][v])
				sim_fail(s, SIM_C_RESTORE,
				         "%s -> %s: restored, the daemon "
				         "answers a hello at %" PRIu64
				         ", the snapshot recorded %" PRIu64,
				         name_of(s, a), a->k.ch[i].peer,
				         a->k.ch[i].seq, rs->n[a->node][v]);
			continue;
		}
		/* An earlier life's messages the daemon never read are
		 * lost (the README's exception): the channel numbers on
		 * from where the daemon stands. */
		struct sim_log *log = sim_log_of(s, a->node, (size_t)v, a->era);
		if (a->k.ch[i].seq < a->flushed[v])
			sim_fail(s, SIM_C_ONCE,
			         "%s -> %s: message %" PRIu64 " lost with its "
			         "application, though cut_flush() had returned",
			         name_of(s, a), a->k.ch[i].peer, a->flushed[v]);
		while (log->n > a->k.ch[i].seq) {
			a->gone[a->life] += log->amount[log->n - 1];
			log->n--;
			s->st->kill_lost++;
		}
		if (log->n < a->k.ch[i].seq)
			sim_fail(s, SIM_C_ONCE,
			         "%s -> %s: the daemon has %" PRIu64
			         " messages, %zu were sent",
			         name_of(s, a), a->k.ch[i].peer, a->k.ch[i].seq,
			         log->n);
	}
	say_restorable(s, a);
}

/* A frame before the answer to our hello, taken as libcut's shell takes
 * it (appcore_hello_frame(): frames without the answer are dropped, and
 * a resumed connection is told of the restore callback); here the
 * simulated connection's state follows, and the simulation checks the
 * answer. */
static void
hello_answer(struct sim *s, struct sim_app *a, const uint8_t *buf, size_t len)
{
	struct appcore_answer ans;
	/* Before cut_open() returns no callback is registered. */
	int restorable = a->k.opened && has_restore_callback(s, a);

	if (!appcore_hello_frame(&a->k, buf, len, name_of(s, a), restorable,
	                         &ans))
		return;
	switch (ans.what) {
	case APPCORE_ANSWER_OPENED:
		opened(s, a, ans.rv);
		break;
	case APPCORE_ANSWER_RESUMED:
		if (ans.rv != 0) {
			sim_fail(s, SIM_C_ONCE,
			         "%s: the daemon answered the resume with "
			         "another node or set of peers",
			         name_of(s, a));
			break;
		}
		a->resuming = 0;
		a->lost = 0;
		kick(s, a);
		break;
	case APPCORE_ANSWER_REFUSED:
		sim_fail(s, SIM_C_ONCE, "%s: the daemon refused the hello: %s",
		         name_of(s, a), ans.message);
		break;
	case APPCORE_ANSWER_NONE:
	case APPCORE_ANSWER_BAD:
		break;
	}
}

/* A receive on a lost connection (cut_resume(…, 0)): both streams forget
 * the lost connection, once (appq_forget(), as libcut's shell does), and
 * a hello goes on each new simulated connection. */
static void
resume(struct sim *s, struct sim_app *a)
{
	if (!a->resuming) {
		appq_forget(&a->q, &a->k);
		a->resuming = 1;
		a->hello_sent = 0;
		a->hello_conn = 0;
	}
	if (a->conn != 0 && (!a->hello_sent || a->hello_conn != a->conn)) {
		/* The planted bug: the first source is forgotten (left out
		 * of the resuming hello). */
		int plant = s->o->self_check == SIM_SC_ONCE && a->k.nsrc > 0;
		if (plant) {
			struct appcore *k = &a->k;
			char *name = k->src[0].name;
			uint64_t taken = k->src[0].taken;
			k->src[0] = k->src[k->nsrc - 1];
			k->src[k->nsrc - 1].name = name;
			k->src[k->nsrc - 1].taken = taken;
			k->nsrc--;
		}
		send_hello(s, a, 1);
		if (plant)
			a->k.nsrc++; /* the order changed; nothing else */
	}
}

/* ---- Credit, deliveries, state ---- */

/* A frame from the daemon, taken in as libcut's receiving thread takes
 * it (appq_ingest()); the simulated socket frees its frame, so the queue
 * holds a copy.  The simulation checks that the daemon sent nothing bad,
 * and notes when cut_flush() returns. */
void
simapp_ingest(struct sim *s, struct sim_app *a, const uint8_t *buf, size_t len)
{
	struct appq_news news;
	uint8_t *copy;

	if (!a->k.opened || a->resuming) {
		/* Frames before the answer to our hello belong to an
		 * application before us, or to the lost connection. */
		hello_answer(s, a, buf, len);
		return;
	}
	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, buf, len);
	if (appq_ingest(&a->q, &a->k, copy, copy, len, &news) != 0)
		abort();
	if (news.bad_frame)
		sim_fail(s, SIM_C_ONCE,
		         "%s: a frame from the daemon does not decode",
		         name_of(s, a));
	if (news.bad_items > 0)
		sim_fail(s, SIM_C_ONCE,
		         "%s: an item from the daemon does not decode",
		         name_of(s, a));
	/* cut_flush() returns: the daemon holds what was sent before the
	 * sync. */
	if (news.synced && a->sync_token != 0 &&
	    appcore_is_synced(&a->k, a->sync_token)) {
		for (size_t i = 0; i < a->k.npeers; i++)
			a->flushed[a->peer[i]] = a->sync_seq[i];
		a->sync_token = 0;
	}
}

/* AppTaken if the handed count moved (appcore_report()), as libcut
 * reports it; on a lost link the resuming hello says it. */
static void
report(struct sim_app *a)
{
	if (a->lost)
		return;
	if (appcore_report(&a->k) != 0)
		abort();
}

/* The bank's state callback, its reply set as cut_buf_set() sets it
 * (appcore_state_reply()): recorded after the deliveries handed so far;
 * on a lost link none goes (the daemon asks again after the hello). */
static void
answer(struct sim *s, struct sim_app *a, const char *id)
{
	char state[64];
	int64_t balance = a->balance;

	/* A callback that fails without setting the state leaves the
	 * request unanswered. */
	if (s->now < a->mute_until || a->lost)
		return;
	if (s->o->self_check == SIM_SC_CONSERVATION && a->node == 0)
		balance++; /* the planted bug */
	if (s->o->faults & SIM_F_RESTORE)
		snprintf(state, sizeof(state),
		         "{\"balance\": %" PRId64
		         ", \"life\": %d, \"era\": %d}",
		         balance, a->life, a->era);
	else
		snprintf(state, sizeof(state),
		         "{\"balance\": %" PRId64 ", \"life\": %d}", balance,
		         a->life);
	if (appcore_state_reply(&a->k, id, a->k.handed, state, strlen(state),
	                        "application/json") != 0)
		abort();
}

/* The amount in a payload {"amount": k, ...}; -1 if none. */
static long
amount_of(const void *p, size_t len)
{
	char buf[48];
	long v;

	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return sscanf(buf, "{\"amount\": %ld", &v) == 1 ? v : -1;
}

/* The generation a payload says it is of ("gen": g; none: 0). */
static int
gen_of(const void *p, size_t len)
{
	char buf[64];
	const char *g;

	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return (g = strstr(buf, "\"gen\": ")) != NULL ? atoi(g + 7) : 0;
}

/* The log of generation g of channel src -> dst. */
static struct sim_log *
gen_log(struct sim *s, size_t src, size_t dst, int g, int era)
{
	return g < s->gen[src] ? &s->glog[src][dst][g]
	                       : sim_log_of(s, src, dst, era);
}

/* A receiver's positions (first[], last[]) run through the generations
 * of a channel one after the other: seq in generation g is at the
 * messages of the generations before it plus seq. */
static uint64_t
gen_pos(const struct sim *s, size_t src, size_t dst, int g, uint64_t seq)
{
	for (int h = 0; h < g; h++)
		seq += s->glog[src][dst][h].n;
	return seq;
}

/* The amount at position pos of the channel, and whether it was handed
 * (not lost with its generation's end). */
static int
pos_amount(const struct sim *s, size_t src, size_t dst, uint64_t pos, int era,
           int64_t *ret)
{
	const struct sim_log *log = NULL;
	int h;

	for (h = 0; h < s->gen[src]; h++) {
		log = &s->glog[src][dst][h];
		if (pos <= log->n)
			break;
		pos -= log->n;
	}
	if (h == s->gen[src])
		log = sim_log_of((struct sim *)s, src, dst, era);
	if (pos == 0 || pos > log->n ||
	    (h < s->rg[src][dst] && pos > s->gend[src][dst][h]))
		return 0;
	*ret = log->amount[pos - 1];
	return 1;
}

/* The receiving stream of src -> dst leaves its generation for g: the
 * generations before g end, each at the last seq handed of it; what
 * follows was lost with src's reboot, and leaves the bank from the life
 * that reboot began.  What the receiving daemon had when src rebooted
 * was passed on, and must have been handed. */
static void
end_gens(struct sim *s, size_t src, size_t dst, int g)
{
	struct sim_app *sa = &s->nodes[src].app;

	for (int h = s->rg[src][dst]; h < g; h++) {
		const struct sim_log *log = &s->glog[src][dst][h];
		uint64_t d = h == s->rg[src][dst] ? s->hpos[src][dst] : 0;
		int life = s->gen_life[src][h + 1];
		if (d < s->gfwd[src][dst][h])
			sim_fail(s, SIM_C_ONCE,
			         "%s -> %s: message %" PRIu64
			         " had reached %s's "
			         "daemon before %s rebooted, but only %" PRIu64
			         " were handed",
			         s->nodes[src].name, s->nodes[dst].name,
			         s->gfwd[src][dst][h], s->nodes[dst].name,
			         s->nodes[src].name, d);
		s->gend[src][dst][h] = d;
		for (uint64_t q = d + 1; q <= log->n; q++) {
			for (int l = life; l <= sa->life; l++)
				sa->gone[l] += log->amount[q - 1];
			s->st->reboot_lost++;
		}
	}
	s->rg[src][dst] = g;
	s->hpos[src][dst] = 0;
}

void
simapp_end_gens(struct sim *s)
{
	for (size_t a = 0; a < s->n; a++)
		for (size_t b = 0; b < s->n; b++)
			if (a != b && s->rg[a][b] < s->gen[a])
				end_gens(s, a, b, s->gen[a]);
}

uint64_t
simapp_stream_taken(const struct sim *s, size_t from, size_t to)
{
	return s->rg[from][to] == s->gen[from]
	           ? simapp_taken_from(&s->nodes[to].app, from)
	           : 0;
}

int
simapp_holds_old(const struct sim *s, const struct sim_app *a)
{
	for (size_t v = 0; v < s->n; v++)
		if (v != a->node && s->rg[v][a->node] < s->gen[v])
			return 1;
	return 0;
}

/* A delivery is handed to the application (appq_take() counted it):
 * checked against what its sender sent, and banked. */
static void
hand(struct sim *s, struct sim_app *a, const Cut__V1__AppDeliver *d)
{
	int from = config_node_index(s->cfg, d->from);
	uint64_t want, pos;
	long amount = amount_of(d->payload.data, d->payload.len);
	int g = gen_of(d->payload.data, d->payload.len);
	const struct sim_log *log;

	if (from < 0 || (size_t)from == a->node || !d->has_seq) {
		sim_fail(s, SIM_C_ONCE,
		         "%s: a delivery from %s without a channel or seq",
		         name_of(s, a), d->from);
		return;
	}
	if (g < s->rg[from][a->node] || g > s->gen[from]) {
		sim_fail(s, SIM_C_ONCE,
		         "%s -> %s: message %" PRIu64 " of the numbering "
		         "before reboot %d handed after reboot %d's",
		         d->from, name_of(s, a), d->seq, g + 1,
		         s->rg[from][a->node]);
		return;
	}
	if (g > s->rg[from][a->node]) {
		/* The sender rebooted: the channel numbers from 1 again
		 * (PeerRenumber), after what was left of the old
		 * numbering. */
		if (d->seq != 1)
			sim_fail(s, SIM_C_ONCE,
			         "%s -> %s: the numbering after a reboot "
			         "starts at %" PRIu64,
			         d->from, name_of(s, a), d->seq);
		end_gens(s, (size_t)from, a->node, g);
		a->src_taken[from] = 0;
		a->rewound[from] = 0;
	}
	log = gen_log(s, (size_t)from, a->node, g, a->era);
	pos = gen_pos(s, (size_t)from, a->node, g, d->seq);
	/* The first delivery from a node in a new life: the daemon hands
	 * again what the dead one had and had not reported taken. */
	if (a->rewound[from] && d->seq <= a->src_taken[from] + 1 &&
	    d->seq > 0) {
		a->src_taken[from] = d->seq - 1;
		a->rewound[from] = 0;
		if (a->life > 0 && pos <= a->last[a->life - 1][from])
			s->st->kill_again +=
			    a->last[a->life - 1][from] - pos + 1;
	}
	want = a->src_taken[from] + 1;
	if (d->seq != want)
		sim_fail(s, SIM_C_ONCE,
		         "%s -> %s: message %" PRIu64 " handed to the "
		         "application after %" PRIu64 " (%s)",
		         d->from, name_of(s, a), d->seq, want - 1,
		         d->seq < want ? "a duplicate or out of order"
		                       : "messages lost");
	else if (d->seq > log->n || log->amount[d->seq - 1] != amount)
		sim_fail(s, SIM_C_ONCE,
		         "%s -> %s: message %" PRIu64 " carries %ld, not what "
		         "was sent",
		         d->from, name_of(s, a), d->seq, amount);
	if (amount > 0)
		a->balance += amount;
	a->taken_total++;
	if (d->seq > a->src_taken[from])
		a->src_taken[from] = d->seq;
	if (d->seq > s->hpos[from][a->node])
		s->hpos[from][a->node] = d->seq;
	if (a->first[a->life][from] == 0)
		a->first[a->life][from] = pos;
	a->last[a->life][from] = pos;
}

/* The bank's restore callback (simops.c checks the restore and sets the
 * recorded balance), then the restore's step (appcore_restore_step()). */
static void
take_restore(struct sim *s, struct sim_app *a, const Cut__V1__AppRestore *r)
{
	struct appcore_pos pos[SIM_MAX_NODES];
	size_t n = 0;

	if (!a->restorable) {
		sim_fail(s, SIM_C_RESTORE,
		         "%s: an AppRestore reached a life without a restore "
		         "callback",
		         name_of(s, a));
		return;
	}
	simops_app_restore(s, a, r);
	for (size_t i = 0; i < r->n_channels && n < SIM_MAX_NODES; i++) {
		pos[n].node = r->channels[i]->node;
		pos[n].out_sent = r->channels[i]->out_sent;
		pos[n].in_taken = r->channels[i]->in_taken;
		n++;
	}
	if (appcore_restore_step(&a->k, r->snapshot_id, pos, n, 0, NULL,
	                         a->lost) != 0)
		abort();
	kick(s, a);
}

/* One item taken as cut_recv() takes it (appq_take(), in simulated time;
 * items taken on arrival are passed over), and what the bank's
 * application does with it.  Returns 0 when there was nothing. */
static int
take_item(struct sim *s, struct sim_app *a)
{
	struct appq_item qi;
	enum appq_kind what;

	while ((what = appq_take(&a->q, &a->k, s->now, &qi)) == APPQ_SKIP)
		;
	switch (what) {
	case APPQ_NONE:
		return 0;
	case APPQ_SKIP:
		break;
	case APPQ_STATE:
		answer(s, a, qi.id);
		break;
	case APPQ_DELIVER:
		hand(s, a, qi.it->deliver);
		/* Reported at once, or when the taken timer runs out. */
		if (qi.report)
			report(a);
		break;
	case APPQ_RESTORE:
		take_restore(s, a, qi.it->restore);
		break;
	case APPQ_REFUSED:
		/* libcut never earns one (it numbers without gaps, sends
		 * within credit, answers what was asked): cut_recv() would
		 * return CUT_EREFUSED. */
		sim_fail(s, SIM_C_ONCE,
		         "%s: the daemon refused an item (code %u): %s",
		         name_of(s, a), qi.it->error->code,
		         qi.it->error->message);
		break;
	case APPQ_BAD_ITEM:
		/* cut_recv() would return CUT_EPROTO. */
		if (qi.it == NULL)
			sim_fail(s, SIM_C_ONCE,
			         "%s: a queued item does not decode",
			         name_of(s, a));
		else if (qi.it->item_case ==
		         CUT__V1__APP_ITEM__ITEM_HELLO_REPLY)
			sim_fail(
			    s, SIM_C_ONCE,
			    "%s: a hello reply in the middle of the stream",
			    name_of(s, a));
		else
			sim_fail(s, SIM_C_ONCE,
			         "%s: %s (kind %d) in the down stream",
			         name_of(s, a), qi.why, (int)qi.it->item_case);
		break;
	case APPQ_BAD_FRAME:
		break; /* failed as it came (simapp_ingest()) */
	}
	return 1;
}

/* One receive pass: cut_dispatch() normally (everything queued, then the
 * handed count), cut_recv(…, 0) a few times while slow (the count goes
 * when nothing is left, or by the timer). */
static void
receive(struct sim *s, struct sim_app *a, int slow)
{
	size_t max = slow ? a->recv_max : APPQ_DISPATCH_MAX, k;

	if (a->lost) {
		resume(s, a);
		return;
	}
	for (k = 0; k < max; k++)
		if (!take_item(s, a))
			break;
	if (!slow || k < max)
		report(a);
}

/* cut_try_send() of a random amount to a random peer. */
static void
send_one(struct sim *s, struct sim_app *a)
{
	Cut__V1__AppItem it = CUT__V1__APP_ITEM__INIT;
	Cut__V1__AppSend snd = CUT__V1__APP_SEND__INIT;
	char payload[4200];
	size_t i, len;
	uint64_t charge;
	long amount;

	if (!a->k.opened || a->k.npeers == 0 || a->balance <= 0)
		return;
	i = (size_t)sim_rand(s, a->k.npeers);
	amount =
	    1 + (long)sim_rand(s, a->balance < 9 ? (uint64_t)a->balance : 9);
	len = (size_t)snprintf(payload, sizeof(payload), "{\"amount\": %ld",
	                       amount);
	/* After a reboot the channel's numbering is another generation:
	 * the receiver's checks tell them apart by this. */
	if (s->gen[a->node] > 0)
		len += (size_t)snprintf(payload + len, sizeof(payload) - len,
		                        ", \"gen\": %d", s->gen[a->node]);
	/* Now and then a larger message: the windows and batches fill
	 * sooner, parts go in several chunks. */
	if (sim_rand(s, 8) == 0) {
		size_t pad = (size_t)sim_range(s, 0, 4000);
		len += (size_t)snprintf(payload + len, sizeof(payload) - len,
		                        ", \"pad\": \"");
		memset(payload + len, 'x', pad);
		len += pad;
		payload[len++] = '"';
	}
	payload[len++] = '}';
	charge = appcore_charge(&a->k, len);
	/* cut_try_send(): CUT_EAGAIN without room; try later. */
	if (!appcore_room(&a->k, i, charge))
		return;
	snd.to = a->k.ch[i].peer;
	snd.content_type = "application/json";
	snd.payload.data = (uint8_t *)payload;
	snd.payload.len = len;
	it.item_case = CUT__V1__APP_ITEM__ITEM_SEND;
	it.send = &snd;
	/* While the link is lost, the message is only kept: it goes after
	 * the resume. */
	if (appcore_send(&a->k, i, &it, a->lost) != 0)
		abort();
	a->balance -= amount;
	a->sent_total++;
	s->st->messages++;
	{
		/* The channel's log, for the receiver's check. */
		struct sim_log *log =
		    sim_log_of(s, a->node, a->peer[i], a->era);
		sim_log_put(log, (int32_t)amount);
		if (log->n != snd.seq)
			sim_fail(s, SIM_C_SIM,
			         "%s -> %s: libcut numbered %" PRIu64
			         " after %zu messages",
			         name_of(s, a), snd.to, snd.seq, log->n - 1);
	}
}

/* ---- Time ---- */

int64_t
simapp_next_event(const struct sim_app *a)
{
	int64_t t = a->k.taken_at;

	if (a->restart_at != 0 && a->restart_at < t)
		t = a->restart_at;
	if (a->conn == 0 && a->dial_at < t)
		t = a->dial_at;
	if (a->next_recv < t)
		t = a->next_recv;
	if (a->next_send < t)
		t = a->next_send;
	return t;
}

void
simapp_conn_closed(struct sim *s, struct sim_app *a)
{
	a->conn = 0;
	a->dial_at = s->now + sim_range(s, 1, 100);
	if (a->k.opened)
		a->lost = 1; /* the connection our hello went over */
	else
		a->hello_sent = 0;
}

void
simapp_step(struct sim *s, struct sim_app *a)
{
	struct sim_node *n = node_of(s, a);
	int slow = s->now < a->slow_until;

	/* A life without a restore callback cannot take the restore its
	 * node owes it, and the daemon waits for one that can: the
	 * operator restarts it, as status says, 0.2-1 s after it opened.
	 * (Killed as appkill kills.) */
	if (!has_restore_callback(s, a) && (s->o->faults & SIM_F_RESTORE) &&
	    a->k.opened && restore_owed(s, a)) {
		if (a->restart_at == 0) {
			a->restart_at = s->now + sim_range(s, 200, 1000);
			sim_trace(s,
			          "%s's application has no restore callback, "
			          "and its node owes it a restore",
			          n->name);
		} else if (s->now >= a->restart_at) {
			if (n->c != NULL && !a->lost &&
			    a->life + 1 < SIM_MAX_LIVES) {
				s->st->restore_restarts++;
				simapp_kill(s, a);
				return;
			}
			a->restart_at = s->now + 50;
		}
	} else {
		a->restart_at = 0;
	}

	if (a->conn == 0 && s->now >= a->dial_at) {
		if (n->c == NULL) {
			a->dial_at = s->now + sim_range(s, 50, 150);
		} else {
			simnet_app_connect(s, n);
			/* Unless it closed as it opened (handshake). */
			if (!a->k.opened && a->conn != 0)
				send_hello(s, a, 0);
		}
	}
	/* The taken timer appcore_handed() armed, in simulated time (libcut
	 * arms an nng timer for CUT_TAKEN_DELAY_MS). */
	if (a->k.taken_at <= s->now) {
		a->k.taken_at = APPCORE_NEVER;
		report(a);
	}
	if (a->next_recv <= s->now) {
		if (s->now < a->stop_until) {
			a->next_recv = a->stop_until;
		} else {
			if (a->k.opened)
				receive(s, a, slow);
			a->next_recv = s->now + (slow ? a->recv_every
			                              : sim_range(s, 1, 3));
		}
	}
	/* Now and then cut_flush(): a sync, answered once the daemon has
	 * read everything before it; one on a lost connection is sent
	 * again after the resume. */
	if (a->k.opened && !a->lost && s->now >= a->next_flush) {
		if (a->sync_token == 0 || a->hello_conn != a->sync_conn) {
			if (appcore_sync(&a->k, &a->sync_token) != 0)
				abort();
			a->sync_conn = a->hello_conn;
			for (size_t i = 0; i < a->k.npeers; i++)
				a->sync_seq[i] = a->k.ch[i].seq;
		}
		a->next_flush = s->now + sim_range(s, 50, 500);
	}
	if (a->next_send <= s->now) {
		if (s->phase < 2)
			send_one(s, a);
		a->next_send = s->phase < 2
		                   ? s->now + sim_range(s, 1, 2000 / s->o->rate)
		                   : SIM_NEVER;
	}
	kick(s, a);
}

/* Whether a's node owes its application a restore: the restore was
 * decided and a has not taken it, or a's daemon voted yes (prepared) or
 * restores (voting) and may yet apply it.  The daemon hands it only to
 * an application that says it can take it, and waits for one. */
static int
restore_owed(struct sim *s, const struct sim_app *a)
{
	const struct sim_node *n = node_of(s, a);
	struct coord_restore_view v;

	if (!s->rst.active)
		return 0;
	if (s->rst.decided && a->era < s->era)
		return 1;
	if (n->c == NULL)
		return 0;
	coord_restore_view(n->c, &v);
	return v.app_owed ||
	       (v.running && (strcmp(v.phase, "prepared") == 0 ||
	                      strcmp(v.phase, "voting") == 0));
}

/* The application dies: its balance leaves the bank, its libcut state
 * is gone, and its next life starts empty. */
static void
die(struct sim *s, struct sim_app *a)
{
	struct sim_node *n = node_of(s, a);
	/* A life without a restore callback where the node owes its
	 * application a restore is restarted (simapp_step()); the last life
	 * there can be has one. */
	int owed = restore_owed(s, a) && a->life + 2 >= SIM_MAX_LIVES;

	if (n->app_conn != 0)
		simnet_app_close(s, n); /* what it wrote and was not read */
	a->life++;
	a->gone[a->life] = a->gone[a->life - 1] + a->balance;
	for (size_t v = 0; v < SIM_MAX_NODES; v++)
		a->rewound[v] = 1;
	a->balance = 0;
	/* Everything libcut held dies with it. */
	appcore_fini(&a->k);
	appcore_init(&a->k);
	appq_fini(&a->q);
	a->conn = 0;
	a->lost = a->resuming = a->hello_sent = 0;
	a->hello_conn = 0;
	a->slow_until = a->stop_until = a->mute_until = 0;
	a->sync_token = 0;
	if (s->o->faults & SIM_F_RESTORE)
		a->restorable = sim_rand(s, 20) != 0 || owed;
	a->restart_at = 0;
	a->dial_at = s->now + sim_range(s, 20, 800);
	a->next_recv = a->dial_at;
}

void
simapp_kill(struct sim *s, struct sim_app *a)
{
	if (a->life + 1 >= SIM_MAX_LIVES)
		return;
	sim_trace(s, "%s's application is killed (balance %" PRId64 ")",
	          name_of(s, a), a->balance);
	die(s, a);
	s->st->appkills++;
}

int
simapp_reboot(struct sim *s, struct sim_app *a, int64_t down)
{
	struct sim_node *n = node_of(s, a);
	size_t x = a->node;
	int g = s->gen[x];

	/* Left out: a daemon down already (its application dies alone,
	 * not modelled), the restore windows (simops_crash_unsafe()), a
	 * restore started or taken (the replay would hold messages of a
	 * generation the channel has left), and a daemon that may hold
	 * what another rebooted node's old generation passed on (its
	 * death loses them: the README's limit). */
	if (n->c == NULL || a->life + 1 >= SIM_MAX_LIVES || s->rst.active ||
	    s->era > 0 || simops_crash_unsafe(s, n) || simapp_holds_old(s, a))
		return 0;
	sim_trace(s,
	          "%s reboots: daemon and application (balance %" PRId64
	          ") die; back in %" PRId64 " ms",
	          n->name, a->balance, down);
	/* Every outgoing channel's log so far is a generation that ends
	 * here; what the receiving daemon has of it was passed on. */
	for (size_t v = 0; v < s->n; v++) {
		struct coord_peer_stats ps;
		if (v == x)
			continue;
		s->glog[x][v][g] = s->sent[x][v];
		memset(&s->sent[x][v], 0, sizeof(s->sent[x][v]));
		s->gfwd[x][v][g] = 0;
		if (s->nodes[v].c != NULL && s->rg[x][v] == g) {
			coord_peer_stats(s->nodes[v].c, x, &ps);
			if (ps.has_in)
				s->gfwd[x][v][g] = ps.delivered;
		}
	}
	s->gen[x] = g + 1;
	simnet_disturb(s, x);
	sim_crash(s, n, down, 0);
	die(s, a);
	/* cut_flush() promised what the daemon had read, which died with
	 * it too. */
	memset(a->flushed, 0, sizeof(a->flushed));
	s->gen_life[x][g + 1] = a->life;
	s->nreboots++;
	s->st->reboots++;
	return 1;
}

/* simapp_delta() in a's current era; *known 0 if a dead life had
 * deliveries from a node and no later life of the era was handed one
 * from it: whether the daemon hands them again is not known yet. */
static int64_t
delta(const struct sim *s, const struct sim_app *a, int life, int *known)
{
	int64_t d = 0;

	*known = 1;
	if (life <= a->life_base || life > a->life)
		return 0;
	d -= a->gone[life] - a->gone[a->life_base];
	/* Deliveries a dead life had banked, which a later life was handed
	 * again: they are counted again (handed, or in flight), so they
	 * are not gone.  A daemon hands again from where it stood, and one
	 * that restarted from where the sender last heard the application
	 * took, which can be further back than a later life began (seed
	 * 31550: an application killed, then its node rebooted): so each
	 * position counts if any later life was handed it. */
	for (int b = a->life_base + 1; b <= life; b++)
		for (size_t v = 0; v < s->n; v++) {
			uint64_t lo = a->first[b - 1][v],
			         hi = a->last[b - 1][v];
			int later = 0;
			for (int l = b; l <= a->life; l++)
				later |= a->first[l][v] != 0;
			if (lo != 0 && !later)
				*known = 0;
			if (lo == 0 || !later)
				continue;
			for (uint64_t q = lo; q <= hi; q++) {
				int64_t amt;
				int again = 0;
				for (int l = b; l <= a->life && !again; l++)
					again = a->first[l][v] != 0 &&
					        a->first[l][v] <= q &&
					        q <= a->last[l][v];
				if (again &&
				    pos_amount(s, v, a->node, q, a->era, &amt))
					d += amt;
			}
		}
	return d;
}

int64_t
simapp_delta(const struct sim *s, const struct sim_app *a, int life)
{
	int known;

	return delta(s, a, life, &known);
}

int64_t
simapp_delta_era(const struct sim *s, const struct sim_app *a, int era,
                 int life, int *known)
{
	if (era == a->era) {
		/* At the end of the run from == 0 means nothing was handed
		 * again: the cluster settled. */
		*known = 1;
		return simapp_delta(s, a, life);
	}
	if (era < 0 || era > a->era || era >= SIM_MAX_ERAS || life < 0 ||
	    life >= SIM_MAX_LIVES) {
		*known = 0;
		return 0;
	}
	*known = a->era_known[era][life];
	return a->era_delta[era][life];
}

void
simapp_new_era(struct sim *s, struct sim_app *a)
{
	if (a->era < SIM_MAX_ERAS)
		for (int l = a->life_base; l <= a->life; l++) {
			int known;
			a->era_delta[a->era][l] = delta(s, a, l, &known);
			a->era_known[a->era][l] = (unsigned char)known;
		}
	a->era++;
	simapp_era_again(s, a);
}

void
simapp_era_again(struct sim *s, struct sim_app *a)
{
	(void)s;
	a->life_base = a->life;
	for (size_t v = 0; v < SIM_MAX_NODES; v++) {
		a->first[a->life][v] = a->last[a->life][v] = 0;
		a->rewound[v] = 0;
		a->opened_at[v] = 0;
		a->flushed[v] = 0;
	}
	a->sync_token = 0;
}

int
simapp_orphans(const struct sim *s, const struct sim_app *a)
{
	if (a->life == a->life_base)
		return 0;
	for (size_t v = 0; v < s->n; v++)
		if (v != a->node &&
		    simapp_stream_taken(s, a->node, v) < a->opened_at[v])
			return 1;
	return 0;
}

uint64_t
simapp_taken_from(const struct sim_app *a, size_t from)
{
	return a->src_taken[from];
}
