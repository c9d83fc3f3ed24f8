/*
 * tokenbank.c - the demo application of cutd: a bank branch that starts
 * with a balance of tokens, sends random amounts to random peers and adds
 * what it receives.  The total over all branches and the tokens in flight
 * never changes, so a consistent snapshot must add up to it.
 *
 *   tokenbank --app URL [--control URL] --node NAME --balance N
 *             [--rate MSGS_PER_SEC] [--duration SEC] [--seed S]
 *             [--ignore-state-requests K] [--log FILE] [--sent-log FILE]
 *
 * Messages are {"amount": k} (application/json); the state reported to
 * snapshots is {"balance": N}, and a restore (cutctl restore) sets the
 * balance back to the one recorded, with a line "tokenbank: restored NAME
 * to balance B from ID" on stderr.  The only line on stdout is the final one,
 * "tokenbank NAME: balance B sent S received R" (S and R count messages);
 * diagnostics go to stderr.  With --log, every received message is
 * appended to FILE as "FROM SEQ AMOUNT" ("FROM SEQ malformed" for a
 * payload that is not an amount), so a test can check the streams for
 * loss, duplicates and reordering; with --sent-log, every message sent is
 * appended as "TO AMOUNT".
 *
 * SIGTERM and SIGINT end it cleanly.  SIGUSR1 makes it stop sending for
 * good while it goes on receiving, so that a test can let the channels
 * drain before it stops the applications and compares the logs.
 *
 * One thread runs everything: a poll() loop on libcut's descriptor whose
 * timeout paces the sends.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <cut/cut.h>

/* How long one cut_open() may keep failing before we give up, in all. */
#define CONNECT_ATTEMPTS 6
/* The longest poll(), so that a signal is noticed promptly. */
#define MAX_POLL_MS 100

struct bank {
	struct cut *c;
	const char *node;
	long balance;
	unsigned long long sent, received, malformed;
	unsigned long ignore, requests; /* state requests to leave unanswered */
	uint64_t rng;
	FILE *log, *sent_log;
};

struct opts {
	const char *app, *control, *node, *log, *sent_log;
	long balance, rate, duration, ignore;
	unsigned long long seed;
	int has_seed;
};

static volatile sig_atomic_t stopping, quiet;

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		quiet = 1;
	else
		stopping = 1;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* xorshift64*: a small, seedable generator, good enough for a demo. */
static uint64_t
next_random(struct bank *b)
{
	b->rng ^= b->rng >> 12;
	b->rng ^= b->rng << 25;
	b->rng ^= b->rng >> 27;
	return b->rng * 2685821657736338717ULL;
}

/*
 * Parses a payload of exactly {KEY: K} (key a quoted JSON name; any JSON
 * whitespace between the tokens), K a decimal integer min..max (min 0 or
 * 1) without sign or leading zeros.  Returns K, or -1 if the payload is
 * anything else.
 */
static long
parse_field(const char *p, size_t len, const char *key, long min, long max)
{
	const char *end = p + len;
	size_t klen = strlen(key);
	long k = 0;

#define SKIP_WS()                                                              \
	while (p < end &&                                                      \
	       (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))          \
	p++
	SKIP_WS();
	if (p == end || *p++ != '{')
		return -1;
	SKIP_WS();
	if ((size_t)(end - p) < klen || memcmp(p, key, klen) != 0)
		return -1;
	p += klen;
	SKIP_WS();
	if (p == end || *p++ != ':')
		return -1;
	SKIP_WS();
	if (p == end || *p < '0' || *p > '9' || (*p == '0' && min > 0))
		return -1;
	if (*p == '0')
		p++; /* 0 stands alone: no leading zeros */
	else
		while (p < end && *p >= '0' && *p <= '9') {
			if (k > (max - (*p - '0')) / 10)
				return -1;
			k = k * 10 + (*p++ - '0');
		}
	SKIP_WS();
	if (p == end || *p++ != '}')
		return -1;
	SKIP_WS();
#undef SKIP_WS
	return p == end ? k : -1;
}

/* A message: {"amount": K}, K 1..INT_MAX. */
static long
parse_amount(const char *p, size_t len)
{
	return parse_field(p, len, "\"amount\"", 1, INT_MAX);
}

/* cut_dispatch() calls this for every message, in order. */
static void
on_message(void *arg, const struct cut_msg *m)
{
	struct bank *b = arg;
	long k = parse_amount(cut_msg_data(m), cut_msg_len(m));

	b->received++;
	if (k < 0 || k > LONG_MAX - b->balance) {
		b->malformed++;
		if (b->log != NULL)
			fprintf(b->log, "%s %llu malformed\n", cut_msg_from(m),
			        (unsigned long long)cut_msg_seq(m));
		return;
	}
	b->balance += k;
	if (b->log != NULL)
		fprintf(b->log, "%s %llu %ld\n", cut_msg_from(m),
		        (unsigned long long)cut_msg_seq(m), k);
}

/*
 * The state callback.  libcut calls it inside cut_dispatch(), after every
 * message received before the snapshot's cut was added to the balance and
 * before any later one is.  A multi-threaded bank would take, here, the
 * lock under which it changes the balance and calls cut_send(), and call
 * cut_buf_set() before releasing it, so that no send could slip between
 * the balance it reports and the reply's place among its messages.  This
 * bank has one thread: nothing else runs while the callback does.
 */
static int
on_state_request(void *arg, const char *snapshot_id, struct cut_buf *ret)
{
	struct bank *b = arg;
	char state[64];
	int n, rv;

	if (b->requests < b->ignore) {
		b->requests++;
		fprintf(stderr,
		        "tokenbank %s: leaving state request %s "
		        "unanswered\n",
		        b->node, snapshot_id);
		return 1;
	}
	n = snprintf(state, sizeof(state), "{\"balance\": %ld}", b->balance);
	if ((rv = cut_buf_set(ret, state, (size_t)n, "application/json")) != 0)
		fprintf(stderr,
		        "tokenbank %s: cannot report state for %s: %s\n",
		        b->node, snapshot_id, cut_strerror(rv));
	return rv;
}

/*
 * The restore callback: the cluster goes back to a snapshot, and this
 * branch to the balance it recorded there ({"balance": N}, as reported
 * by on_state_request()).  libcut calls it inside cut_dispatch(), after
 * dropping the messages that had arrived before the restore and before
 * handing over those the snapshot recorded in transit to this branch,
 * which on_message() then adds to the balance as usual: the total is the
 * snapshot's.  A multi-threaded bank would take its lock here, as in
 * on_state_request(), and call cut_restore_commit() before releasing it,
 * so that a send of another thread either comes before the restore (and
 * is discarded with the old balance) or after it (and is taken from the
 * restored one).  The counters of messages sent and received are this
 * run's and go on counting.
 */
static int
on_restore(void *arg, const char *snapshot_id, const void *state, size_t len,
           const char *content_type)
{
	struct bank *b = arg;
	long balance = parse_field(state, len, "\"balance\"", 0, LONG_MAX);
	int rv;

	(void)content_type;
	if (balance < 0) {
		fprintf(stderr,
		        "tokenbank %s: cannot restore from %s: the state is "
		        "not {\"balance\": N} (%zu bytes)\n",
		        b->node, snapshot_id, len);
		return 1;
	}
	b->balance = balance;
	if ((rv = cut_restore_commit(b->c)) != 0) {
		fprintf(stderr, "tokenbank %s: cannot restore from %s: %s\n",
		        b->node, snapshot_id, cut_strerror(rv));
		return rv;
	}
	fprintf(stderr, "tokenbank: restored %s to balance %ld from %s\n",
	        b->node, balance, snapshot_id);
	return 0;
}

/* Sends a random amount to a random peer; the balance drops only once the
 * message is on its way. */
static int
send_one(struct bank *b)
{
	size_t npeers = cut_npeers(b->c);
	const char *to;
	char payload[32];
	long k, most;
	int n, rv;

	if (npeers == 0 || b->balance <= 0)
		return 0;
	most = b->balance < 5 ? b->balance : 5;
	k = 1 + (long)(next_random(b) % (uint64_t)most);
	to = cut_peer(b->c, next_random(b) % npeers);
	n = snprintf(payload, sizeof(payload), "{\"amount\": %ld}", k);
	rv = cut_send(b->c, to, payload, (size_t)n, "application/json");
	if (rv == CUT_ETIMEDOUT || rv == CUT_EAGAIN)
		return 0; /* the daemon is busy, or a restore came: not sent */
	if (rv != 0)
		return rv;
	b->balance -= k;
	b->sent++;
	if (b->sent_log != NULL)
		fprintf(b->sent_log, "%s %ld\n", to, k);
	return 0;
}

/* The event loop: returns 0 when asked to stop or the duration is over. */
static int
run(struct bank *b, const struct opts *o)
{
	uint64_t interval = o->rate > 0 ? 1000000 / (uint64_t)o->rate : 0;
	uint64_t next = now_us(), end = 0, now;
	struct pollfd pfd = {.events = POLLIN};
	int timeout, rv;

	if (o->duration > 0)
		end = now_us() + (uint64_t)o->duration * 1000000;
	if ((rv = cut_fd(b->c, &pfd.fd)) != 0)
		return rv;
	while (!stopping) {
		now = now_us();
		if (end != 0 && now >= end)
			break;
		timeout = MAX_POLL_MS;
		if (interval > 0 && next > now && (next - now) / 1000 < 100)
			timeout = (int)((next - now) / 1000);
		else if (interval > 0 && next <= now)
			timeout = 0;
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			return CUT_EIO;
		rv = cut_dispatch(b->c, on_message, b);
		if (rv == CUT_EREFUSED || rv == CUT_EPROTO) {
			char err[256];

			cut_last_error(b->c, err, sizeof(err));
			fprintf(stderr, "tokenbank %s: %s\n", b->node, err);
		} else if (rv != 0) {
			return rv;
		}
		now = now_us();
		if (interval > 0 && now >= next && !quiet) {
			if ((rv = send_one(b)) != 0)
				return rv;
			/* After a stall, resume the pace instead of a burst. */
			next = now - next > 1000000 ? now + interval
			                            : next + interval;
		}
	}
	return 0;
}

static void
usage(FILE *f)
{
	fputs("usage: tokenbank --app URL [--control URL] --node NAME "
	      "--balance N\n"
	      "                 [--rate MSGS_PER_SEC (50)] [--duration SEC "
	      "(0: forever)]\n"
	      "                 [--seed S] [--ignore-state-requests K] "
	      "[--log FILE]\n"
	      "                 [--sent-log FILE]\n",
	      f);
}

/* Parses a number in min..max into *ret; returns 0 or EX_USAGE. */
static int
number(const char *name, const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = s != NULL ? strtol(s, &end, 10) : 0;
	if (s == NULL || *s == '\0' || *end != '\0' || errno != 0 || v < min ||
	    v > max) {
		fprintf(stderr, "tokenbank: bad %s value \"%s\"\n", name,
		        s != NULL ? s : "");
		return EX_USAGE;
	}
	*ret = v;
	return 0;
}

static int
parse(struct opts *o, int argc, char **argv)
{
	long seed;
	int i, rv = 0;

	o->rate = 50;
	for (i = 1; i < argc && rv == 0; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			exit(EX_OK);
		}
		if (v == NULL) {
			fprintf(stderr, "tokenbank: %s needs a value\n", a);
			return EX_USAGE;
		}
		i++;
		if (strcmp(a, "--app") == 0)
			o->app = v;
		else if (strcmp(a, "--control") == 0)
			o->control = v;
		else if (strcmp(a, "--node") == 0)
			o->node = v;
		else if (strcmp(a, "--log") == 0)
			o->log = v;
		else if (strcmp(a, "--sent-log") == 0)
			o->sent_log = v;
		else if (strcmp(a, "--balance") == 0)
			rv = number(a, v, 0, INT_MAX, &o->balance);
		else if (strcmp(a, "--rate") == 0)
			rv = number(a, v, 0, 1000000, &o->rate);
		else if (strcmp(a, "--duration") == 0)
			rv = number(a, v, 0, INT_MAX, &o->duration);
		else if (strcmp(a, "--ignore-state-requests") == 0)
			rv = number(a, v, 0, INT_MAX, &o->ignore);
		else if (strcmp(a, "--seed") == 0 &&
		         (rv = number(a, v, 0, LONG_MAX, &seed)) == 0)
			o->seed = (unsigned long long)seed, o->has_seed = 1;
		else if (rv == 0) {
			fprintf(stderr, "tokenbank: unknown option %s\n", a);
			rv = EX_USAGE;
		}
	}
	if (rv == 0 && (o->app == NULL || o->node == NULL)) {
		usage(stderr);
		rv = EX_USAGE;
	}
	return rv;
}

/* Connects, retrying for a while if the daemon is not up yet. */
static int
connect_daemon(struct bank *b, const struct opts *o)
{
	int attempt, rv = CUT_EUNAVAIL;

	for (attempt = 0; attempt < CONNECT_ATTEMPTS && !stopping; attempt++) {
		rv = cut_open(o->app, o->control, o->node, &b->c);
		if (rv != CUT_EUNAVAIL && rv != CUT_ETIMEDOUT)
			break;
		if (rv == CUT_EUNAVAIL) /* refused at once: wait a little */
			sleep(1);
	}
	if (rv != 0)
		fprintf(stderr, "tokenbank %s: cannot connect to %s: %s\n",
		        o->node, o->app, cut_strerror(rv));
	return rv;
}

/* Opens a log for appending, a line at a time, so that a test can read it
 * while the bank runs. */
static FILE *
open_log(const char *path)
{
	FILE *f = fopen(path, "a");

	if (f == NULL)
		fprintf(stderr, "tokenbank: %s: %s\n", path, strerror(errno));
	else
		setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

int
main(int argc, char **argv)
{
	struct opts o = {0};
	struct bank b = {0};
	struct sigaction sa = {0};
	int rv, status = EX_OK;

	if ((rv = parse(&o, argc, argv)) != 0)
		return rv;
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	b.node = o.node;
	b.balance = o.balance;
	b.ignore = (unsigned long)o.ignore;
	b.rng = o.has_seed ? o.seed : (uint64_t)time(NULL) ^ (uint64_t)getpid();
	b.rng = b.rng * 0x9e3779b97f4a7c15ULL + 1; /* never 0 */
	if ((o.log != NULL && (b.log = open_log(o.log)) == NULL) ||
	    (o.sent_log != NULL && (b.sent_log = open_log(o.sent_log)) == NULL))
		return EX_CANTCREAT;
	if (connect_daemon(&b, &o) != 0) {
		status = EX_UNAVAILABLE;
	} else {
		cut_set_state_callback(b.c, on_state_request, &b);
		cut_set_restore_callback(b.c, on_restore, &b);
		if ((rv = run(&b, &o)) != 0) {
			fprintf(stderr, "tokenbank %s: %s\n", o.node,
			        cut_strerror(rv));
			status =
			    rv == CUT_ECLOSED ? EX_UNAVAILABLE : EX_SOFTWARE;
		}
	}
	if (b.malformed > 0)
		fprintf(stderr,
		        "tokenbank %s: %llu malformed messages ignored\n",
		        o.node, b.malformed);
	printf("tokenbank %s: balance %ld sent %llu received %llu\n", o.node,
	       b.balance, b.sent, b.received);
	cut_close(b.c);
	if (b.log != NULL)
		fclose(b.log);
	if (b.sent_log != NULL)
		fclose(b.sent_log);
	return status;
}
