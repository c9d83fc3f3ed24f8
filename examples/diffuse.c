/*
 * diffuse.c - an example whose distributed computation terminates: a
 * diffusing computation, for `cutctl watch` and the termination condition
 * (examples/conditions/termination.sql).
 *
 *   diffuse --app URL --node NAME [--jobs K] [--ttl T] [--step-ms MS]
 *           [--seed S] [--log FILE]
 *
 * A job is a message {"ttl": t} (application/json).  The node that is
 * given --jobs K starts with K jobs of ttl T; every node does one job per
 * --step-ms (50) and, for a job of ttl t > 1, sends one job of ttl t - 1
 * to a random peer.  Every job so makes T - 1 hops and is gone, so the
 * whole computation ends after K * T jobs of work, and nothing restarts
 * it: termination is a stable property.
 *
 * The state reported to snapshots is {"idle": B, "pending": N, "worked":
 * W}: idle is true when the node has no job left to do.  That is the
 * convention the termination condition reads; it holds on a snapshot
 * when every node is idle and no job is in flight on any channel.  No
 * single node can tell: a node that is idle now may be sent a job later.
 *
 * With --log, every event is appended to FILE as one line that starts
 * with the wall clock in milliseconds: "MS recv FROM TTL", "MS work TTL",
 * "MS send TO TTL", and for each state request answered "MS state ID
 * idle=0|1 pending=N".  The last recv or work line of every node is
 * when the computation really ended there: a test's ground truth.
 *
 * SIGTERM and SIGINT end it; it goes on answering state requests once
 * idle, until then.
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

#define CONNECT_ATTEMPTS 6
#define TTL_MAX          1000
#define JOBS_MAX         100000
#define MAX_POLL_MS      100

struct node {
	struct cut *c;
	const char *name;
	/* pending[t]: jobs of ttl t waiting.  Jobs are never created, only
	 * passed on, so the counts are bounded by the jobs started. */
	long pending[TTL_MAX + 1];
	long npending, worked, malformed;
	uint64_t rng;
	FILE *log;
};

static volatile sig_atomic_t stopping;

static void
on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static long long
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t
next_random(struct node *n)
{
	n->rng ^= n->rng >> 12;
	n->rng ^= n->rng << 25;
	n->rng ^= n->rng >> 27;
	return n->rng * 2685821657736338717ULL;
}

/* Parses exactly {"ttl": T}, T in 1..TTL_MAX; -1 for anything else. */
static long
parse_ttl(const char *p, size_t len)
{
	char buf[64], tail;
	long t;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	if (sscanf(buf, " { \"ttl\" : %ld } %c", &t, &tail) != 1)
		return -1;
	return t >= 1 && t <= TTL_MAX ? t : -1;
}

static void
on_message(void *arg, const struct cut_msg *m)
{
	struct node *n = arg;
	long t = parse_ttl(cut_msg_data(m), cut_msg_len(m));

	if (t < 0) {
		n->malformed++;
		return;
	}
	n->pending[t]++;
	n->npending++;
	if (n->log != NULL)
		fprintf(n->log, "%lld recv %s %ld\n", wall_ms(),
		        cut_msg_from(m), t);
}

/* Called between two deliveries: pending is exactly what this node has
 * received and not yet worked off. */
static int
on_state_request(void *arg, const char *snapshot_id, struct cut_buf *ret)
{
	struct node *n = arg;
	char state[128];
	int len, rv;

	len = snprintf(state, sizeof(state),
	               "{\"idle\": %s, \"pending\": %ld, \"worked\": %ld}",
	               n->npending == 0 ? "true" : "false", n->npending,
	               n->worked);
	if ((rv = cut_buf_set(ret, state, (size_t)len, "application/json")) !=
	    0)
		fprintf(stderr, "diffuse %s: cannot report state for %s: %s\n",
		        n->name, snapshot_id, cut_strerror(rv));
	if (n->log != NULL)
		fprintf(n->log, "%lld state %s idle=%d pending=%ld\n",
		        wall_ms(), snapshot_id, n->npending == 0, n->npending);
	return rv;
}

/* Does one job, the one with the highest ttl, and passes it on.  The
 * job stays pending until its successor is sent, so that a snapshot
 * never sees it in neither place. */
static int
work_one(struct node *n)
{
	size_t npeers = cut_npeers(n->c);
	char payload[32];
	long t;
	int len, rv;

	for (t = TTL_MAX; t > 0 && n->pending[t] == 0; t--)
		;
	if (t == 0)
		return 0;
	if (t > 1 && npeers > 0) {
		const char *to = cut_peer(n->c, next_random(n) % npeers);
		len =
		    snprintf(payload, sizeof(payload), "{\"ttl\": %ld}", t - 1);
		rv = cut_send(n->c, to, payload, (size_t)len,
		              "application/json");
		if (rv == CUT_ETIMEDOUT)
			return 0; /* no credit yet: the job waits */
		if (rv != 0)
			return rv;
		if (n->log != NULL)
			fprintf(n->log, "%lld send %s %ld\n", wall_ms(), to,
			        t - 1);
	}
	n->pending[t]--;
	n->npending--;
	n->worked++;
	if (n->log != NULL)
		fprintf(n->log, "%lld work %ld\n", wall_ms(), t);
	return 0;
}

static int
run(struct node *n, long step_ms)
{
	struct pollfd pfd = {.events = POLLIN};
	uint64_t next = mono_ms() + (uint64_t)step_ms, now;
	int timeout, rv;

	if ((rv = cut_fd(n->c, &pfd.fd)) != 0)
		return rv;
	while (!stopping) {
		now = mono_ms();
		timeout = next > now ? (int)(next - now) : 0;
		if (timeout > MAX_POLL_MS)
			timeout = MAX_POLL_MS;
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			return CUT_EIO;
		rv = cut_dispatch(n->c, on_message, n);
		if (rv == CUT_EREFUSED || rv == CUT_EPROTO) {
			char err[256];
			cut_last_error(n->c, err, sizeof(err));
			fprintf(stderr, "diffuse %s: %s\n", n->name, err);
		} else if (rv != 0) {
			return rv;
		}
		if ((now = mono_ms()) >= next) {
			if ((rv = work_one(n)) != 0)
				return rv;
			next = now + (uint64_t)step_ms;
		}
	}
	return 0;
}

static void
usage(FILE *f)
{
	fputs("usage: diffuse --app URL --node NAME [--jobs K (0)] "
	      "[--ttl T (20)]\n"
	      "               [--step-ms MS (50)] [--seed S] [--log FILE]\n",
	      f);
}

static int
number(const char *name, const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v < min || v > max) {
		fprintf(stderr, "diffuse: bad %s value \"%s\"\n", name, s);
		return EX_USAGE;
	}
	*ret = v;
	return 0;
}

int
main(int argc, char **argv)
{
	static struct node n;
	const char *app = NULL, *log = NULL;
	long jobs = 0, ttl = 20, step = 50, seed = 1;
	struct sigaction sa = {.sa_handler = on_signal};
	int rv = 0, attempt;

	for (int i = 1; i < argc && rv == 0; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return EX_OK;
		}
		if (v == NULL) {
			fprintf(stderr, "diffuse: %s needs a value\n", a);
			return EX_USAGE;
		}
		i++;
		if (strcmp(a, "--app") == 0)
			app = v;
		else if (strcmp(a, "--node") == 0)
			n.name = v;
		else if (strcmp(a, "--log") == 0)
			log = v;
		else if (strcmp(a, "--jobs") == 0)
			rv = number(a, v, 0, JOBS_MAX, &jobs);
		else if (strcmp(a, "--ttl") == 0)
			rv = number(a, v, 1, TTL_MAX, &ttl);
		else if (strcmp(a, "--step-ms") == 0)
			rv = number(a, v, 1, 60000, &step);
		else if (strcmp(a, "--seed") == 0)
			rv = number(a, v, 0, LONG_MAX, &seed);
		else {
			fprintf(stderr, "diffuse: unknown option %s\n", a);
			rv = EX_USAGE;
		}
	}
	if (rv != 0)
		return rv;
	if (app == NULL || n.name == NULL) {
		usage(stderr);
		return EX_USAGE;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	n.rng = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 1;
	n.pending[ttl] = jobs;
	n.npending = jobs;
	if (log != NULL) {
		if ((n.log = fopen(log, "a")) == NULL) {
			fprintf(stderr, "diffuse: %s: %s\n", log,
			        strerror(errno));
			return EX_CANTCREAT;
		}
		setvbuf(n.log, NULL, _IOLBF, 0);
	}
	rv = CUT_EUNAVAIL;
	for (attempt = 0; attempt < CONNECT_ATTEMPTS && !stopping; attempt++) {
		rv = cut_open(app, NULL, n.name, &n.c);
		if (rv != CUT_EUNAVAIL && rv != CUT_ETIMEDOUT)
			break;
		sleep(1);
	}
	if (rv != 0) {
		fprintf(stderr, "diffuse %s: cannot connect to %s: %s\n",
		        n.name, app, cut_strerror(rv));
		return EX_UNAVAILABLE;
	}
	cut_set_state_callback(n.c, on_state_request, &n);
	if ((rv = run(&n, step)) != 0)
		fprintf(stderr, "diffuse %s: %s\n", n.name, cut_strerror(rv));
	printf("diffuse %s: worked %ld, pending %ld\n", n.name, n.worked,
	       n.npending);
	if (n.malformed > 0)
		fprintf(stderr, "diffuse %s: %ld malformed messages ignored\n",
		        n.name, n.malformed);
	cut_close(n.c);
	if (n.log != NULL)
		fclose(n.log);
	return rv == 0 ? EX_OK : EX_SOFTWARE;
}
