/*
 * cut.c - the libcut handle: connecting to the daemon (the hello
 * handshake), the up stream (cut_send), closing, and the accessors.
 *
 * The application link is one nng pair1 socket that libcut dials; every
 * nng message either way is one AppBatch.  The handle notices through a
 * pipe callback when the connection its hello went over is gone: a new
 * connection would reach a daemon that has not seen our hello, so nothing
 * more is sent until resume.c has said hello on it again.
 */
#include <poll.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/supplemental/util/platform.h>

#include "cut_int.h"
#include "where.h"

void
cut_set_error(struct cut *c, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&c->mu);
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&c->mu);
}

size_t
cut_last_error(struct cut *c, char *buf, size_t size)
{
	int n;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->mu);
	if (buf == NULL)
		size = 0;
	n = snprintf(buf, size, "%s", c->err);
	pthread_mutex_unlock(&c->mu);
	return n > 0 ? (size_t)n : 0;
}

/* 1 if s is a plausible node name: 1 to 255 printable ASCII bytes. */
static int
name_ok(const char *s)
{
	return s != NULL && s[0] != '\0' && appcore_text_ok(s);
}

/* Runs on an nng thread when a pipe of the application link comes or
 * goes; see the "live" and "last_removed" fields. */
static void
pipe_event(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct cut *c = arg;
	uint32_t id = (uint32_t)nng_pipe_id(p);

	/* (A stopped reaper reports no closed connection: the test hook
	 * of cut_open() plays it.) */
	if (ev == NNG_PIPE_EV_REM_POST && c->test_stopped_reaper)
		return;
	if (ev == NNG_PIPE_EV_ADD_POST) {
		atomic_store(&c->connected, 1);
		atomic_store(&c->cur_pipe, id);
	} else if (ev == NNG_PIPE_EV_REM_POST) {
		/* nng may report the removal of a connection whose
		 * addition it never reported: compare ids, not counts. */
		int was_open =
		    atomic_compare_exchange_strong(&c->cur_pipe, &id, 0);
		id = (uint32_t)nng_pipe_id(p);
		atomic_store(&c->last_removed, id);
		if (atomic_load(&c->live) == 0 && was_open)
			atomic_fetch_add(&c->dropped_early, 1);
		if (atomic_load(&c->live) == id) {
			atomic_store(&c->lost_at, (uint64_t)nng_clock());
			atomic_store(&c->lost, 1);
			/* A frame still waiting for a connection would go to
			 * the next one before our hello: call it back. */
			if (c->send_aio != NULL)
				nng_aio_cancel(c->send_aio);
			cut_wake_all(c);
		}
	}
}

void
cut_wait_slice(pthread_cond_t *cv, pthread_mutex_t *mu, int timeout_ms,
               nng_time deadline)
{
	nng_time now = nng_clock();
	int64_t ms = CUT_WAIT_SLICE_MS;
	struct timespec ts;

	if (timeout_ms > 0 && (int64_t)(deadline - now) < ms)
		ms = deadline > now ? (int64_t)(deadline - now) : 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

void
cut_wake_all(struct cut *c)
{
	pthread_mutex_lock(&c->q_mu);
	pthread_cond_broadcast(&c->q_cv);
	pthread_mutex_unlock(&c->q_mu);
	pthread_mutex_lock(&c->send_mu);
	pthread_cond_broadcast(&c->send_cv);
	pthread_mutex_unlock(&c->send_mu);
}

/* Marks pipe p as the one our hello went over.  Either this sees its
 * removal in last_removed or pipe_event() sees it in live. */
void
cut_set_live(struct cut *c, nng_pipe p)
{
	uint32_t id = (uint32_t)nng_pipe_id(p);

	atomic_store(&c->live, id);
	if (atomic_load(&c->last_removed) == id) {
		atomic_store(&c->lost_at, (uint64_t)nng_clock());
		atomic_store(&c->lost, 1);
	}
}

/* Frees a frame the receive queue is done with (appq_init()). */
static void
frame_free(void *msg)
{
	nng_msg_free(msg);
}

/* Sends AppHello for node (NULL: any) with the given timeout. */
static int
send_hello(struct cut *c, const char *node, int timeout_ms)
{
	uint8_t *buf;
	size_t len;
	int rv;

	if ((rv = appcore_hello(&c->k, node, 0, &buf, &len)) != 0)
		return rv;
	rv = cut_send_now(c, buf, len, timeout_ms);
	free(buf);
	return rv;
}

int
cut_hello_refused(struct cut *c, const struct appcore_answer *a)
{
	cut_set_error(c, "the daemon refused the hello: %s", a->message);
	return rpc_app_error(a->code);
}

/* take_frame() found no hello reply in a frame: keep waiting. */
#define NOT_YET (-1)

/*
 * Looks for the answer to our hello in a frame from the daemon
 * (appcore_hello_frame(): frames it had queued for an application before
 * us may still come first, and are skipped).  Returns 0 when the reply was
 * taken, NOT_YET, or the error of a refused hello or a bad reply.
 */
static int
take_frame(struct cut *c, nng_msg *msg, const char *node, int *bad)
{
	struct appcore_answer a;

	/* No restore callback can be registered before cut_open()
	 * returns: the application tells the daemon of it after. */
	if (!appcore_hello_frame(&c->k, nng_msg_body(msg), nng_msg_len(msg),
	                         node, 0, &a)) {
		if (a.what == APPCORE_ANSWER_BAD)
			*bad = 1;
		return NOT_YET;
	}
	if (a.what == APPCORE_ANSWER_REFUSED)
		return cut_hello_refused(c, &a);
	return a.rv;
}

/* The code for a hello that got no answer in time. */
static int
no_answer(struct cut *c, int rv)
{
	if (rv == CUT_ETIMEDOUT && !atomic_load(&c->connected))
		return CUT_EUNAVAIL;
	return rv;
}

/* Opens a socket for the link in *sock, receiving messages up to max
 * bytes, and dials c->app_url without waiting: the dialer keeps trying if
 * the daemon is not up. */
static int
open_link(struct cut *c, nng_socket *sock, nng_dialer *dialer, size_t max)
{
	int rv;

	if ((rv = nng_pair1_open(sock)) != 0)
		return rv;
	if ((rv = nng_socket_set_size(*sock, NNG_OPT_RECVMAXSZ, max)) != 0 ||
	    (rv = nng_pipe_notify(*sock, NNG_PIPE_EV_ADD_POST, pipe_event,
	                          c)) != 0 ||
	    (rv = nng_pipe_notify(*sock, NNG_PIPE_EV_REM_POST, pipe_event,
	                          c)) != 0 ||
	    (rv = nng_dial(*sock, c->app_url, dialer, NNG_FLAG_NONBLOCK)) != 0) {
		nng_close(*sock); /* no connection yet: nothing to reap */
		return rv;
	}
	return 0;
}

int
cut_relink(struct cut *c)
{
	nng_socket s, old = c->app;
	nng_dialer d;
	size_t max = CUT_HELLO_MAX_MESSAGE + CUT_FRAME_SLACK;
	int rv;

	(void)nng_socket_get_size(old, NNG_OPT_RECVMAXSZ, &max);
	/* The old socket's connections say nothing more, and it dials no
	 * more: it would take the daemon's one application connection. */
	nng_pipe_notify(old, NNG_PIPE_EV_ADD_POST, NULL, NULL);
	nng_pipe_notify(old, NNG_PIPE_EV_REM_POST, NULL, NULL);
	(void)nng_dialer_close(c->dialer);
	/* Before the new socket's first connection, which may come at
	 * once. */
	atomic_store(&c->cur_pipe, 0);
	if ((rv = open_link(c, &s, &d, max)) != 0)
		return rpc_nng_error(rv);
	pthread_mutex_lock(&c->q_mu);
	pthread_mutex_lock(&c->send_mu);
	pthread_mutex_lock(&c->link_mu);
	c->app = s;
	c->dialer = d;
	c->dial_at = nng_clock(); /* a new dialer: its own wait */
	pthread_mutex_unlock(&c->link_mu);
	c->recv_moving = 1;
	atomic_fetch_add(&c->app_gen, 1);
	pthread_mutex_unlock(&c->send_mu);
	pthread_mutex_unlock(&c->q_mu);
	/* The receive waiting on the old socket comes back and goes on
	 * on the new one (recv.c); one in its callback now goes there
	 * anyway. */
	nng_aio_cancel(c->recv_aio);
	return 0;
}

int
cut_redial(struct cut *c)
{
	nng_dialer d;
	int rv;

	(void)nng_dialer_close(c->dialer);
	if ((rv = nng_dial(c->app, c->app_url, &d, NNG_FLAG_NONBLOCK)) != 0)
		return rpc_nng_error(rv); /* (tried again after a wait) */
	pthread_mutex_lock(&c->link_mu);
	c->dialer = d;
	c->dial_at = nng_clock(); /* a new dialer: its own wait */
	pthread_mutex_unlock(&c->link_mu);
	return 0;
}

/* Dialer statistics that count a lost connection (nng's
 * nni_dialer_bump_error(); "refused" counts only dialing). */
static const char *const link_errors[] = {
    "disconnect", "canceled", "timeout", "proto",
    "auth",       "oom",      "other",   NULL};
/* Every way a dial ends: connected, refused, rejected, failed. */
static const char *const dial_ends[] = {
    "connect", "refused", "reject", "disconnect", "canceled", "timeout",
    "proto",   "auth",    "oom",    "other",      NULL};
static const char *const pipes_stat[] = {"pipes", NULL};

void
cut_link_baseline(struct cut *c, uint32_t pipe)
{
	int64_t n;

	if (!rpc_reaper_stopped())
		return;
	n = rpc_stat_sum("dialer", nng_dialer_id(c->dialer), link_errors);
	pthread_mutex_lock(&c->link_mu);
	c->errs_pipe = pipe;
	c->link_errs = n;
	pthread_mutex_unlock(&c->link_mu);
}

void
cut_link_check(struct cut *c)
{
	nng_time now = nng_clock();
	int stopped = rpc_reaper_stopped();
	int lost = atomic_load(&c->lost);

	if (!c->has_app || (!lost && !stopped))
		return;
	pthread_mutex_lock(&c->link_mu);
	if (now - c->link_checked < CUT_LINK_CHECK_MS) {
		pthread_mutex_unlock(&c->link_mu);
		return;
	}
	c->link_checked = now;
	if (lost && atomic_load(&c->cur_pipe) == 0) {
		uint64_t lost_at = atomic_load(&c->lost_at), since;
		int64_t n =
		    rpc_stat_sum("dialer", nng_dialer_id(c->dialer), dial_ends);
		if (n != c->dial_ends) {
			c->dial_ends = n;
			c->dial_at = now;
		}
		/* (The later of the loss and the last dial that ended.) */
		since = c->dial_at > lost_at ? c->dial_at : lost_at;
		if (!stopped && now - lost_at >= CUT_REAPER_WAIT_MS &&
		    rpc_stat_sum("socket", nng_socket_id(c->app), pipes_stat) >
		        0) {
			rpc_set_reaper_stopped();
			cut_set_error(c, "nng stopped letting go of closed "
			                 "connections in this process (a bug of "
			                 "nng 1.5.2): libcut replaces its "
			                 "sockets from now on");
			/* Said to cut_resume(), whatever thread this is: a
			 * resume that began before knows only this. */
			atomic_store(&c->link_fix, CUT_LINK_RELINK);
		} else if (now - since >= CUT_REDIAL_WAIT_MS) {
			/*
			 * Nothing dialed, and nothing held: nng's dialer gave
			 * up.  nng 1.5.2's does for good when a dial fails
			 * with NNG_ECLOSED (dialer_connect_cb(): "no further
			 * action"), as when the daemon dies while our
			 * connection waits in its listener's queue: the
			 * handshake's header then meets EPIPE, which nng
			 * calls NNG_ECLOSED.  A new dialer; once the reaper
			 * stopped, a new socket (the old holds its dead
			 * connection, and pair1 takes one only).
			 */
			atomic_store(&c->link_fix, stopped ? CUT_LINK_RELINK
			                                   : CUT_LINK_REDIAL);
			c->dial_at = now; /* again only after as long */
		}
	} else if (!lost) {
		uint32_t live = atomic_load(&c->live);
		int64_t n = rpc_stat_sum("dialer", nng_dialer_id(c->dialer),
		                         link_errors);
		if (c->errs_pipe != live) {
			c->errs_pipe = live;
			c->link_errs = n;
		} else if (n > c->link_errs) {
			atomic_store(&c->lost_at, (uint64_t)now);
			atomic_store(&c->lost, 1);
			/* Nor would nng ever dial again: the test hook
			 * plays it. */
			if (c->test_stopped_reaper)
				(void)nng_dialer_close(c->dialer);
		}
	}
	pthread_mutex_unlock(&c->link_mu);
}

/* A daemon that closes our connections before answering has another
 * application connected: its pair1 socket refuses a second one. */
#define DROPPED_EARLY_BUSY 2

/* Dials app_url, says hello and waits for the reply. */
static int
open_app(struct cut *c, const char *app_url, const char *node)
{
	nng_time deadline = nng_clock() + CUT_OPEN_TIMEOUT_MS, now;
	nng_msg *msg;
	int rv, bad = 0;
	unsigned drops = 0;

	if ((c->app_url = strdup(app_url)) == NULL)
		return CUT_ENOMEM;
	/* For the tests: behave as once nng's reaper stopped (rpc.h),
	 * which nothing can make nng do on purpose: no closed connection
	 * is reported, no socket dials again. */
	if (getenv("CUT_TEST_STOPPED_REAPER") != NULL) {
		c->test_stopped_reaper = 1;
		rpc_set_reaper_stopped();
	}
	c->test_dead_dialer = getenv("CUT_TEST_DEAD_DIALER") != NULL;
	if ((rv = open_link(c, &c->app, &c->dialer,
	                    CUT_HELLO_MAX_MESSAGE + CUT_FRAME_SLACK)) != 0)
		return rpc_nng_error(rv);
	c->has_app = 1;
	if ((rv = send_hello(c, node, CUT_OPEN_TIMEOUT_MS)) != 0)
		return no_answer(c, rv);
	do {
		now = nng_clock();
		/* The daemon may still be noticing that an application
		 * before us is gone: it refuses us until then. */
		if (now >= deadline &&
		    atomic_load(&c->dropped_early) >= DROPPED_EARLY_BUSY) {
			cut_set_error(c,
			              "the daemon closed every connection at "
			              "once: another application is connected "
			              "as this node");
			rv = CUT_EBUSY;
			break;
		}
		if (now >= deadline) {
			rv = no_answer(c, CUT_ETIMEDOUT);
			break;
		}
		/* Our hello went on a connection the daemon closed before it
		 * answered (refusing us while it held a dead application's):
		 * say it again on the next, or the daemon, once it lets go,
		 * never hears it. */
		if (atomic_load(&c->dropped_early) != drops &&
		    atomic_load(&c->cur_pipe) != 0) {
			drops = atomic_load(&c->dropped_early);
			(void)send_hello(c, node, 100);
		}
		nng_socket_set_ms(c->app, NNG_OPT_RECVTIMEO,
		                  deadline - now < 100
		                      ? (nng_duration)(deadline - now)
		                      : 100);
		if ((rv = nng_recvmsg(c->app, &msg, 0)) != 0) {
			if (rv == NNG_ETIMEDOUT) {
				rv = NOT_YET;
				continue;
			}
			rv = no_answer(c, rpc_nng_error(rv));
			break;
		}
		cut_set_live(c, nng_msg_get_pipe(msg));
		rv = take_frame(c, msg, node, &bad);
		nng_msg_free(msg);
	} while (rv == NOT_YET);
	if (rv == CUT_ETIMEDOUT && bad) {
		cut_set_error(c, "the daemon sent frames that do not decode");
		rv = CUT_EPROTO;
	}
	if (rv != 0)
		return rv;
	if ((rv = nng_socket_set_size(c->app, NNG_OPT_RECVMAXSZ,
	                              c->k.max_message + CUT_FRAME_SLACK)) !=
	        0 ||
	    (rv = nng_aio_alloc(&c->send_aio, cut_send_done, c)) != 0)
		return rpc_nng_error(rv);
	nng_aio_set_timeout(c->send_aio, NNG_DURATION_INFINITE);
	return cut_recv_start(c);
}

/* Allocates a handle with its locks. */
static struct cut *
new_handle(void)
{
	pthread_mutexattr_t attr;
	pthread_condattr_t cattr;
	struct cut *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	appcore_init(&c->k);
	c->recv_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->send_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->recv_efd < 0 || c->send_efd < 0) {
		if (c->recv_efd >= 0)
			close(c->recv_efd);
		if (c->send_efd >= 0)
			close(c->send_efd);
		free(c);
		return NULL;
	}
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&c->recv_mu, &attr);
	pthread_mutexattr_destroy(&attr);
	pthread_mutex_init(&c->taken_mu, NULL);
	pthread_mutex_init(&c->re_mu, NULL);
	pthread_mutex_init(&c->link_mu, NULL);
	pthread_mutex_init(&c->q_mu, NULL);
	pthread_mutex_init(&c->send_mu, NULL);
	pthread_mutex_init(&c->ctl_mu, NULL);
	pthread_mutex_init(&c->mu, NULL);
	/* Waits are timed on the monotonic clock, like nng_clock(). */
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->q_cv, &cattr);
	pthread_cond_init(&c->send_cv, &cattr);
	pthread_condattr_destroy(&cattr);
	appq_init(&c->q, frame_free);
	c->ctl_timeout = CUT_CONTROL_TIMEOUT_MS;
	c->send_timeout = CUT_SEND_TIMEOUT_MS;
	return c;
}

int
cut_open(const char *app_url, const char *control_url, const char *node,
         struct cut **ret)
{
	char app_def[1024], control_def[1024];
	struct cut *c;
	int rv;

	if (ret == NULL)
		return CUT_EINVAL;
	/* Neither URL: the environment's, or the systemd unit's sockets. */
	if (app_url == NULL && control_url == NULL) {
		if ((rv = where_defaults(node, app_def, control_def,
		                         sizeof(app_def))) != 0)
			return rv;
		app_url = app_def;
		control_url = control_def;
		if (node == NULL || node[0] == '\0')
			node = where_env(WHERE_ENV_NODE);
	}
	if (node != NULL && node[0] != '\0' && !name_ok(node))
		return CUT_EINVAL;
	if ((c = new_handle()) == NULL)
		return CUT_ENOMEM;
	if (control_url != NULL &&
	    (c->control_url = strdup(control_url)) == NULL) {
		rv = CUT_ENOMEM;
		goto fail;
	}
	if (app_url != NULL && (rv = open_app(c, app_url, node)) != 0)
		goto fail;
	*ret = c;
	return 0;
fail:
	cut_close(c);
	return rv;
}

/* Sends what the out buffer holds, synchronously (the send aio is
 * stopped); gives up at the first frame that cannot leave soon. */
static void
flush_now(struct cut *c)
{
	uint8_t *frame;
	size_t n;
	int rv = 0;

	pthread_mutex_lock(&c->send_mu);
	while (rv == 0 && c->k.out_len > 0) {
		n = appcore_frame_len(&c->k, appcore_frame_max(&c->k));
		if ((frame = malloc(n)) == NULL)
			break;
		memcpy(frame, c->k.out, n);
		appcore_frame_taken(&c->k, n);
		rv = cut_send_now(c, frame, n, CUT_CLOSE_QUIET_MS / 4);
		free(frame);
	}
	pthread_mutex_unlock(&c->send_mu);
}

/*
 * Makes nng stop reading the application link before cut_close() closes
 * it.  nng 1.5.2's IPC transport loses a receive when its connection is
 * closed between reading a frame's header and asking for the frame's
 * body (ipc_pipe_recv_cb() resubmits the read on the closed aio, which
 * never completes): the reaper then waits in pair1_pipe_stop() forever,
 * and nng_close(), waiting for the connection to be removed, never
 * returns -- the application hangs on its way out whenever the daemon
 * sends as it closes (daemon/shell/ipcprobe.h tells the daemon's side).
 *
 * pair1 reads the connection only while a receive is waiting or its
 * receive buffer has room.  With the receive aio stopped and the buffer
 * at 0, the first frame that arrives is held (the socket becomes
 * readable) and nothing more is read: from then on closing cannot race
 * a read.  So libcut asks the daemon for a frame (AppSync, always
 * answered, behind whatever the out buffer still held) and waits up to
 * CUT_CLOSE_QUIET_MS for the socket to become readable.  A daemon that
 * does not answer (stopped) sends nothing either, and a lost link has no
 * connection to race.
 */
static void
quiesce(struct cut *c)
{
	struct pollfd pfd = {.events = POLLIN};
	uint64_t token;
	int rv;

	if (atomic_load(&c->cur_pipe) == 0)
		return;
	if (nng_socket_set_int(c->app, NNG_OPT_RECVBUF, 0) != 0 ||
	    nng_socket_get_int(c->app, NNG_OPT_RECVFD, &pfd.fd) != 0)
		return;
	if (poll(&pfd, 1, 0) == 1)
		return; /* a frame is held already */
	pthread_mutex_lock(&c->send_mu);
	rv = c->send_err == 0 && !atomic_load(&c->lost)
	         ? appcore_sync(&c->k, &token)
	         : -1;
	pthread_mutex_unlock(&c->send_mu);
	if (rv == 0)
		flush_now(c);
	(void)poll(&pfd, 1, CUT_CLOSE_QUIET_MS);
}

void
cut_close(struct cut *c)
{
	if (c == NULL)
		return;
	if (c->has_app) {
		/* What cut_send() accepted leaves first, for a while. */
		if (c->send_aio != NULL)
			cut_linger(c);
		/* No callback may run on c once it is freed. */
		nng_pipe_notify(c->app, NNG_PIPE_EV_ADD_POST, NULL, NULL);
		nng_pipe_notify(c->app, NNG_PIPE_EV_REM_POST, NULL, NULL);
		if (c->recv_aio != NULL)
			nng_aio_stop(c->recv_aio);
		if (c->taken_aio != NULL)
			nng_aio_stop(c->taken_aio);
		if (c->send_aio != NULL) {
			/* A send that completes as it stops must not start
			 * the next (cut_kick()). */
			pthread_mutex_lock(&c->send_mu);
			c->closing = 1;
			pthread_mutex_unlock(&c->send_mu);
			nng_aio_stop(c->send_aio);
		}
		quiesce(c);
		/* Closing would wait for a stopped reaper forever (rpc.h):
		 * the socket is left open then. */
		if (!rpc_reaper_stopped())
			nng_close(c->app);
		nng_aio_free(c->recv_aio);
		nng_aio_free(c->taken_aio);
		nng_aio_free(c->send_aio);
	}
	rpc_close(c->rpc);
	appq_fini(&c->q);
	appcore_fini(&c->k);
	close(c->recv_efd);
	close(c->send_efd);
	free(c->control_url);
	free(c->app_url);
	pthread_mutex_destroy(&c->recv_mu);
	pthread_mutex_destroy(&c->taken_mu);
	pthread_mutex_destroy(&c->re_mu);
	pthread_mutex_destroy(&c->link_mu);
	pthread_mutex_destroy(&c->q_mu);
	pthread_cond_destroy(&c->q_cv);
	pthread_cond_destroy(&c->send_cv);
	pthread_mutex_destroy(&c->send_mu);
	pthread_mutex_destroy(&c->ctl_mu);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

const char *
cut_node(const struct cut *c)
{
	return c != NULL ? c->k.node : NULL;
}

const char *
cut_cluster(const struct cut *c)
{
	return c != NULL ? c->k.cluster : NULL;
}

size_t
cut_npeers(const struct cut *c)
{
	return c != NULL ? c->k.npeers : 0;
}

const char *
cut_peer(const struct cut *c, size_t i)
{
	return c != NULL && i < c->k.npeers ? c->k.ch[i].peer : NULL;
}

size_t
cut_max_message_size(const struct cut *c)
{
	return c != NULL ? c->k.max_message : 0;
}
