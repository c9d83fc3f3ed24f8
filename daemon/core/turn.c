/*
 * turn.c - one turn of a daemon's loop (turn.h says in what order and
 * by which rules).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "turn.h"
#include "log.h"

int
turn_init(struct turn *t, struct coord *c, size_t self, size_t nnodes,
          const struct turn_port *p, int64_t now)
{
	*t = (struct turn){.c = c, .p = p, .self = self, .nnodes = nnodes};
	if ((t->peer = calloc(nnodes, sizeof(*t->peer))) == NULL)
		return ENOMEM;
	for (size_t v = 0; v < nnodes; v++)
		t->peer[v].dialed = now;
	cutproto_arena_init(&t->arena);
	return 0;
}

int
turn_start(struct turn *t, const struct config *cfg, size_t self,
           uint64_t epoch, struct store_port sp, const struct turn_port *p,
           struct errinfo *e)
{
	int64_t now, wall;
	struct coord *c;
	int rv;

	p->clock(p->ctx, &now, &wall);
	if ((rv = coord_new(cfg, self, epoch, sp, now, wall, &c, e)) != 0)
		return rv;
	/* Nothing held yet to answer: the first turn's step follows. */
	(void)coord_commit(c);
	if (turn_init(t, c, self, cfg->nnodes, p, now) != 0) {
		coord_free(c);
		*t = (struct turn){0};
		return err_set(e, E_NOMEM, "out of memory starting the loop");
	}
	return 0;
}

/* After the commit: what happened, to the shell. */
static void
tell_events(struct turn *t)
{
	struct coord_event ev;

	while (coord_next_event(t->c, &ev))
		if (t->p->event != NULL)
			t->p->event(t->p->ctx, &ev);
}

void
turn_stop(struct turn *t, const char *reason)
{
	int64_t now, wall;
	int rv;

	t->p->clock(t->p->ctx, &now, &wall);
	coord_set_time(t->c, now, wall);
	coord_stop(t->c, reason);
	rv = coord_commit(t->c);
	if (t->p->committed != NULL)
		t->p->committed(t->p->ctx, rv, now);
	tell_events(t);
}

static void
drop(struct turn *t, void **frame)
{
	if (*frame != NULL) {
		t->p->frame_free(t->p->ctx, *frame);
		*frame = NULL;
	}
}

void
turn_fini(struct turn *t)
{
	for (size_t v = 0; t->peer != NULL && v < t->nnodes; v++)
		drop(t, &t->peer[v].pending);
	drop(t, &t->app_pending);
	free(t->peer);
	t->peer = NULL;
	cutproto_arena_fini(&t->arena);
}

int64_t
turn_peer_since(const struct turn *t, size_t node)
{
	return t->peer[node].since;
}

/* ---- 1. Connections ---- */

/* Tells the coordinator of the application connections that closed,
 * and remembers them for a hello read after its close (turn_app_frame()). */
static void
app_closed(struct turn *t)
{
	uint32_t ids[64];
	size_t n;

	while ((n = t->p->app_closed(t->p->ctx, ids, 64)) > 0) {
		for (size_t i = 0; i < n; i++) {
			t->app_gone[t->app_gone_next++ % TURN_APP_GONE_KEEP] =
			    ids[i];
			coord_app_closed(t->c, ids[i]);
		}
		if (n < 64)
			return;
	}
}

static void
events(struct turn *t, int64_t now)
{
	const struct turn_port *p = t->p;
	uint32_t ids[64];
	size_t n;

	while ((n = p->peer_closed(p->ctx, ids, 64)) > 0) {
		for (size_t i = 0; i < n; i++)
			coord_peer_conn_closed(t->c, ids[i]);
		if (n < 64)
			break;
	}
	for (size_t v = 0; v < t->nnodes; v++) {
		struct turn_peer *pr = &t->peer[v];
		if (v == t->self)
			continue;
		if (p->peer_added(p->ctx, v)) {
			/* The frame that waited was the old connection's;
			 * the coordinator sends its content again. */
			drop(t, &pr->pending);
			pr->since = now;
			coord_peer_up(t->c, v);
			pr->up = 1;
		} else if (pr->up && !p->peer_connected(p->ctx, v)) {
			coord_peer_down(t->c, v);
			pr->up = 0;
		}
	}
	app_closed(t);
}

/* ---- 2. Frames in ---- */

void
turn_peer_frame(struct turn *t, const struct turn_in *in)
{
	Cut__V1__PeerBatch *b;

	b = (Cut__V1__PeerBatch *)cutproto_unpack_arena(
	    &cut__v1__peer_batch__descriptor, in->len, in->data, &t->arena);
	if (b == NULL)
		coord_peer_bad(t->c, "?", "batch does not decode");
	else if (t->p->peer_admit == NULL ||
	         t->p->peer_admit(t->p->ctx, in->conn, b) == 0)
		coord_peer_input(t->c, in->conn, b);
	cutproto_arena_reset(&t->arena);
}

static int
gone_recently(const struct turn *t, uint32_t conn)
{
	for (size_t i = 0; i < TURN_APP_GONE_KEEP; i++)
		if (t->app_gone[i] == conn)
			return 1;
	return 0;
}

void
turn_app_frame(struct turn *t, const struct turn_in *in)
{
	uint32_t before = coord_app_conn(t->c);
	Cut__V1__AppBatch *b;

	b = (Cut__V1__AppBatch *)cutproto_unpack_arena(
	    &cut__v1__app_batch__descriptor, in->len, in->data, &t->arena);
	if (b == NULL)
		coord_app_bad(t->c, in->conn, "batch does not decode");
	else
		coord_app_input(t->c, in->conn, b);
	cutproto_arena_reset(&t->arena);
	if (coord_app_conn(t->c) == before)
		return;
	/* A new application: what was pending for the old one goes again
	 * from the coordinator's down stream. */
	drop(t, &t->app_pending);
	/* Its connection closed before its hello was read: it is gone. */
	app_closed(t);
	if (gone_recently(t, in->conn))
		coord_app_closed(t->c, in->conn);
}

static void
receive(struct turn *t)
{
	const struct turn_port *p = t->p;
	struct turn_in in;

	for (int i = 0; i < TURN_RECV_MAX && p->peer_recv(p->ctx, &in); i++) {
		turn_peer_frame(t, &in);
		p->in_done(p->ctx, &in);
	}
	for (int i = 0; i < TURN_RECV_MAX && p->app_recv(p->ctx, &in); i++) {
		turn_app_frame(t, &in);
		p->in_done(p->ctx, &in);
	}
}

/* ---- 3. Timers ---- */

static void
peer_timers(struct turn *t, int64_t now)
{
	const struct turn_port *p = t->p;

	for (size_t v = 0; v < t->nnodes; v++) {
		struct turn_peer *pr = &t->peer[v];
		int connected;
		if (v == t->self)
			continue;
		connected = p->peer_connected(p->ctx, v);
		/* A connection that carries nothing back (no ack, no
		 * heartbeat) may be dead without TCP knowing: a new one. */
		if (connected && now - pr->since >= DEAD_MS &&
		    coord_peer_silent(t->c, v)) {
			p->peer_hang_up(p->ctx, v);
			coord_peer_redialed(t->c, v);
			connected = p->peer_connected(p->ctx, v);
		}
		if (!connected && now - pr->dialed >= TURN_REDIAL_MS) {
			pr->dialed = now;
			p->peer_redial(p->ctx, v);
		}
	}
}

/* ---- 4. The application ---- */

static void
app_flush(struct turn *t)
{
	const struct turn_port *p = t->p;
	uint32_t conn;
	uint8_t *buf, *body;
	size_t len;

	while (coord_next_app_reply(t->c, &conn, &buf, &len)) {
		p->app_reply(p->ctx, conn, buf, len);
		free(buf);
	}
	/* Each frame built is offered in the same pass: one built after the
	 * last send would wait a turn although nothing refused it. */
	for (int i = 0; i < TURN_BATCHES_MAX; i++) {
		if (t->app_pending == NULL) {
			if ((len = coord_app_frame(t->c, NULL)) == 0 ||
			    (t->app_pending =
			         p->frame_new(p->ctx, len, &body)) == NULL)
				return;
			coord_app_frame(t->c, body);
		}
		if (p->app_send(p->ctx, t->app_pending) != 0)
			return; /* kept: it goes first next turn */
		t->app_pending = NULL;
	}
}

/* ---- 6. Peers ---- */

/* Sends node's pending frame; 1 if it left (or there was none). */
static int
send_pending(struct turn *t, size_t node)
{
	struct turn_peer *pr = &t->peer[node];

	if (pr->pending == NULL)
		return 1;
	if (t->p->peer_send(t->p->ctx, node, pr->pending) != 0)
		return 0;
	pr->pending = NULL;
	return 1;
}

static int
flush_one(struct turn *t, size_t node)
{
	const struct turn_port *p = t->p;
	const Cut__V1__PeerAuth *auth = NULL;
	uint8_t *body;
	size_t len;

	if (!send_pending(t, node))
		return 0;
	/* A new connection's first frame proves who we are (TLS links). */
	if (p->peer_auth != NULL && coord_peer_hello_due(t->c, node) &&
	    p->peer_auth(p->ctx, node, &auth) != 0)
		return 0;
	if ((len = coord_peer_frame(t->c, node, auth, NULL)) == 0 ||
	    (t->peer[node].pending = p->frame_new(p->ctx, len, &body)) == NULL)
		return 0;
	len = coord_peer_frame(t->c, node, auth, body);
	p->frame_trim(p->ctx, t->peer[node].pending, len);
	return send_pending(t, node);
}

static void
peer_flush(struct turn *t)
{
	for (size_t v = 0; v < t->nnodes; v++) {
		/* A dead connection's frame would only wait in a queue. */
		if (v == t->self || !t->p->peer_connected(t->p->ctx, v))
			continue;
		for (int i = 0; i < TURN_BATCHES_MAX && flush_one(t, v); i++)
			;
	}
}

/* Logs a turn that began at start, whose commit began at commit, if it
 * took TURN_SLOW_MS or more. */
static void
slow_turn(struct turn *t, int64_t start, int64_t commit)
{
	int64_t end, wall;

	t->p->clock(t->p->ctx, &end, &wall);
	if (end - start < TURN_SLOW_MS)
		return;
	t->slow_turns++;
	if (t->slow_logged != 0 && end - t->slow_logged < TURN_SLOW_LOG_MS)
		return;
	t->slow_logged = end;
	log_warnx("one turn of the loop took %" PRId64 " ms (%" PRId64
	          " ms of it committing to the database): a slow or busy "
	          "disk, or a machine out of CPU; peers may have seen this "
	          "node silent (%" PRIu64 " such turns so far)",
	          end - start, end - commit, t->slow_turns);
}

void
turn_run(struct turn *t)
{
	const struct turn_port *p = t->p;
	int64_t start, now, wall;
	int rv;

	p->clock(p->ctx, &now, &wall);
	start = now;
	coord_set_time(t->c, now, wall);
	events(t, now);
	receive(t);
	if (p->calls != NULL)
		p->calls(p->ctx);
	if (!t->no_timers)
		coord_timers(t->c);
	peer_timers(t, now);
	if (p->timers != NULL)
		p->timers(p->ctx, now);
	/* Deliveries and state requests stand for nothing stored, so the
	 * application gets them while the turn commits. */
	app_flush(t);
	/* The commit is stamped with the time it happens at. */
	p->clock(p->ctx, &now, &wall);
	coord_set_time(t->c, now, wall);
	rv = coord_commit(t->c);
	if (p->committed != NULL)
		p->committed(p->ctx, rv, now);
	tell_events(t);
	slow_turn(t, start, now);
	/* Nothing goes to a peer before what it stands for (a part, an ack
	 * of what was recorded) is on disk. */
	if (!coord_batch_open(t->c))
		peer_flush(t);
}

int
turn_next_timer(struct turn *t, int max)
{
	int64_t now, wall, ms;

	t->p->clock(t->p->ctx, &now, &wall);
	coord_set_time(t->c, now, wall);
	ms = coord_next_timer(t->c, max);
	for (size_t v = 0; v < t->nnodes; v++) {
		const struct turn_peer *pr = &t->peer[v];
		if (v == t->self)
			continue;
		if (!t->p->peer_connected(t->p->ctx, v)) {
			if (pr->dialed + TURN_REDIAL_MS - now < ms)
				ms = pr->dialed + TURN_REDIAL_MS - now;
		} else if (pr->pending != NULL && ms > 1) {
			ms = 1;
		}
	}
	if (t->app_pending != NULL && ms > 1)
		ms = 1;
	return ms < 0 ? 0 : (int)ms;
}
