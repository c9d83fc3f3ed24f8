/*
 * resume.c - what lets an application outlive a restart of its daemon.
 *
 * libcut numbers the messages of each outgoing channel (AppSend.seq) and
 * keeps every one until the daemon reports that the receiving application
 * has taken it (AppCredit.taken): a daemon that dies loses nothing that
 * cut_send() accepted.  It also notes, per sending node, the seq of the
 * last delivery it handed to the application.
 *
 * When the connection the hello went over closes, libcut resumes on the
 * next call that may wait (and in the background of cut_recv(…, 0) calls):
 * it forgets what that connection had queued both ways, says hello again
 * before anything else (AppHello.resume: where each channel stands), and
 * on the reply sends again, in order, every message it keeps that the
 * daemon does not have (AppHelloReply.sent).  The daemon drops deliveries
 * the application already had and sends again those it had not taken.
 * The application sees nothing but a pause; snapshots in flight during
 * the restart end aborted, with the reason, as they would anyway.
 *
 * A restore (recv.c) replaces the positions: the channels' numbering and
 * the last delivery taken from each node become the snapshot's, and the
 * kept messages are forgotten, so a hello after it resumes from there.
 *
 * Locks: re_mu serializes resumptions and is taken before taken_mu, q_mu
 * and send_mu, and after recv_mu (cut_int.h).
 */
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/util/platform.h>

#include "cut_int.h"

/* Forgets what the lost connection had queued both ways.  The out buffer
 * holds kept messages (sent again on the reply) and control items that
 * meant something only to the lost connection. */
static void
forget_connection(struct cut *c)
{
	pthread_mutex_lock(&c->taken_mu);
	pthread_mutex_lock(&c->q_mu);
	pthread_mutex_lock(&c->send_mu);
	appq_forget(&c->q, &c->k);
	atomic_store(&c->restore_arrived, 0);
	c->resume_done = 0;
	c->resuming = 1;
	c->send_err = 0;
	pthread_mutex_unlock(&c->send_mu);
	pthread_mutex_unlock(&c->q_mu);
	pthread_mutex_unlock(&c->taken_mu);
}

/* Whether no frame of ours is waiting in the socket, where it would go to
 * the next connection before the hello: one that was started as the link
 * was lost is called back. */
static int
nothing_in_flight(struct cut *c)
{
	int idle;

	pthread_mutex_lock(&c->send_mu);
	if (c->sending)
		nng_aio_cancel(c->send_aio);
	idle = !c->sending;
	pthread_mutex_unlock(&c->send_mu);
	return idle;
}

/* Sends the hello that resumes every channel.  It goes without waiting:
 * with no connection yet it is tried again on the next call. */
static int
send_resume_hello(struct cut *c, uint32_t pipe, int wait_ms)
{
	uint8_t *buf;
	size_t len;
	int rv;

	pthread_mutex_lock(&c->taken_mu);
	pthread_mutex_lock(&c->send_mu);
	rv = appcore_hello(&c->k, NULL, 1, &buf, &len);
	pthread_mutex_unlock(&c->send_mu);
	pthread_mutex_unlock(&c->taken_mu);
	if (rv != 0)
		return rv;
	if ((rv = cut_send_now(c, buf, len, wait_ms)) == 0)
		c->hello_pipe = pipe;
	free(buf);
	return rv;
}

/* Applies the answer to a resuming hello in frame msg (consumed,
 * appcore_hello_frame()), on the receiving thread before any frame after
 * it, so that the credit behind it counts.  Returns 1 if the frame held
 * it, with the result in resume_rv: 0, or the error of a refused hello or
 * a reply that does not fit this handle.  q_mu held. */
int
cut_resume_frame(struct cut *c, nng_msg *msg)
{
	struct appcore_answer a;
	int rv, restorable;

	pthread_mutex_lock(&c->send_mu);
	pthread_mutex_lock(&c->mu);
	restorable = c->restore_fn != NULL;
	pthread_mutex_unlock(&c->mu);
	if (appcore_hello_frame(&c->k, nng_msg_body(msg), nng_msg_len(msg),
	                        NULL, restorable, &a)) {
		if (a.what == APPCORE_ANSWER_REFUSED)
			rv = cut_hello_refused(c, &a);
		else if ((rv = a.rv) == CUT_EPROTO)
			cut_set_error(c, "the restarted daemon serves another "
			                 "node, cluster or set of peers");
	} else if (a.what == APPCORE_ANSWER_BAD) {
		cut_set_error(c, "the daemon sent a frame that does not "
		                 "decode");
		rv = CUT_EPROTO;
	} else { /* the lost connection's */
		pthread_mutex_unlock(&c->send_mu);
		nng_msg_free(msg);
		return 0;
	}
	if (rv == 0) {
		c->resuming = 0;
		atomic_store(&c->lost, 0);
		/* Lost again already?  Then set_live says so, and what
		 * the answer queued is forgotten with it. */
		cut_set_live(c, nng_msg_get_pipe(msg));
		cut_kick(c);
		pthread_cond_broadcast(&c->send_cv);
	}
	pthread_mutex_unlock(&c->send_mu);
	nng_msg_free(msg);
	c->resume_rv = rv;
	c->resume_done = 1;
	return 1;
}

int
cut_lost_code(struct cut *c)
{
	return nng_clock() - atomic_load(&c->lost_at) < CUT_RESUME_MS
	           ? CUT_ETIMEDOUT
	           : CUT_ECLOSED;
}

int
cut_resume(struct cut *c, int timeout_ms)
{
	nng_time deadline = nng_clock() + (timeout_ms > 0 ? timeout_ms : 0);
	int rv = CUT_ECLOSED, done, fix;

	if (!atomic_load(&c->lost))
		return 0;
	pthread_mutex_lock(&c->re_mu);
	if (!atomic_load(&c->lost)) {
		pthread_mutex_unlock(&c->re_mu);
		return 0;
	}
	if (!c->resuming) {
		forget_connection(c);
		c->hello_pipe = 0;
		c->hello_sent = 0;
		/* nng dials no connection again once its reaper stopped
		 * (rpc.h): a new socket, at once. */
		c->need_relink = rpc_reaper_stopped();
		/* For the tests: nng's dialer gives up as the daemon dies,
		 * which nothing can make nng do on purpose
		 * (cut_link_check()). */
		if (c->test_dead_dialer)
			(void)nng_dialer_close(c->dialer);
	}
	for (;;) {
		/* A hello goes on each new connection, once, and only
		 * when one is up and nothing else can go before it. */
		uint32_t pipe = atomic_load(&c->cur_pipe);
		/* Lost, and nng holds on to the closed connection instead
		 * of dialing again: its reaper stopped just now (found by
		 * this look or any thread's before). */
		if (pipe == 0)
			cut_link_check(c);
		fix = atomic_exchange(&c->link_fix, 0);
		if (fix == CUT_LINK_RELINK)
			c->need_relink = 1;
		/* Or nng's dialer gave up on dialing. */
		if (fix == CUT_LINK_REDIAL && !c->need_relink &&
		    atomic_load(&c->cur_pipe) == 0)
			(void)cut_redial(c);
		if (c->need_relink && nothing_in_flight(c) &&
		    cut_relink(c) == 0) {
			c->need_relink = 0;
			pipe = 0;
		}
		/* A hello unanswered on its connection for a while went
		 * nowhere (a connection that was dying as it went): that
		 * connection is closed, and the next gets a hello. */
		if (pipe != 0 && c->hello_sent && c->hello_pipe == pipe &&
		    nng_clock() - c->hello_at > CUT_HELLO_RETRY_MS) {
			nng_pipe p = NNG_PIPE_INITIALIZER;
			p.id = pipe;
			/* (Once the reaper stopped, nng would never say
			 * that connection closed, nor dial again.) */
			if (rpc_reaper_stopped())
				c->need_relink = 1;
			else
				nng_pipe_close(p);
			c->hello_sent = 0;
			pipe = 0;
		}
		if (pipe != 0 && (!c->hello_sent || c->hello_pipe != pipe) &&
		    nothing_in_flight(c)) {
			cut_link_baseline(c, pipe);
			c->hello_sent =
			    send_resume_hello(c, pipe,
			                      timeout_ms == 0 ? 0 : 50) == 0;
			c->hello_at = nng_clock();
		}
		pthread_mutex_lock(&c->q_mu);
		if (!c->resume_done && timeout_ms != 0 &&
		    (timeout_ms < 0 || nng_clock() < deadline))
			cut_wait_slice(&c->q_cv, &c->q_mu,
			               timeout_ms < 0 ? 100 : timeout_ms,
			               timeout_ms < 0 ? nng_clock() + 100
			                              : deadline);
		done = c->resume_done;
		rv = c->resume_rv;
		c->resume_done = 0;
		pthread_mutex_unlock(&c->q_mu);
		if (done) {
			/* The daemon still holds our lost connection: say
			 * hello again in a moment. */
			if (rv == CUT_EBUSY && timeout_ms != 0 &&
			    (timeout_ms < 0 || nng_clock() < deadline)) {
				c->hello_sent = 0;
				nng_msleep(100);
				continue;
			}
			if (rv == CUT_EBUSY)
				c->hello_sent = 0;
			break;
		}
		if (timeout_ms == 0 ||
		    (timeout_ms > 0 && nng_clock() >= deadline)) {
			cut_set_error(c,
			              "the link to the daemon is lost and it "
			              "has not answered again yet");
			rv = CUT_ECLOSED;
			break;
		}
	}
	pthread_mutex_unlock(&c->re_mu);
	return rv;
}
