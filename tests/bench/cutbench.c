/*
 * cutbench - the cutd side of the benchmark (tests/bench/run.sh), written
 * against libcut's public API only.
 *
 *   cutbench app --app URL --node NAME
 *                [--to P[,P...]] [--count N] [--duration-ms MS] [--size B]
 *                [--rate MSGS_PER_SEC] [--expect P[,P...]] [--latency]
 *                [--pause-ms MS] [--recv-delay-us US] [--linger]
 *                [--ready-file F]
 *                [--start-file F] [--done-file F] [--deadline-ms MS]
 *
 *     One application.  With --to it sends, on a thread of its own, B-byte
 *     messages to the peers in turn (cut_send), N to each (--count) or for
 *     MS (--duration-ms) or until SIGUSR1, paced at --rate over all peers
 *     (default: as fast as cut_send goes), then one END message to each;
 *     it starts once --start-file exists.  Its main thread receives
 *     (cut_recv), which also answers the daemon's state requests for
 *     snapshots: every message of a stream must carry the next number in
 *     its payload and the next cut_msg_seq().  With --expect it is done
 *     when each of those peers' streams has ended; --pause-ms first stops
 *     reading for that long; --recv-delay-us sleeps that long after each
 *     message (a slow receiver that still answers state requests); --latency
 * keeps each message's one-way latency (receive time minus the send time in the
 * payload; one host, one monotonic clock).  --linger keeps it running
 * (receiving, answering state requests) after that until SIGTERM.  --ready-file
 * is created once connected to the daemon, --done-file once it is done.
 *     cut_send's CUT_ETIMEDOUT (daemon queue full) is retried and counted;
 *     any other failure is fatal.  Its state callback reports an empty
 *     state and times cut_buf_set() (state_reply_max_ms).
 *
 *   cutbench now
 *
 *     Prints the monotonic clock the reports' *_ns fields use, in ms.
 *
 *   cutbench snap --control URL [--count N] [--interval-ms MS]
 *                 [--duration-ms MS] [--snap-timeout-ms MS]
 *                 [--deadline-ms MS]
 *
 *     Takes snapshots one after the other (cut_snapshot_start, then
 *     cut_snapshot_wait until complete), N of them or for MS or until
 *     SIGUSR1, at most one each --interval-ms, deleting each once done,
 *     and reports the latency from start to complete as the client sees
 *     it (cut_snapshot_start called to cut_snapshot_wait returned) and as
 *     the daemon recorded it (cut_snapshot_finished_ms - started_ms, in
 *     whole ms); each snapshot's is also written to stderr.
 *
 * Each prints one line of key=value fields on stdout, error="..." last,
 * and exits 0 when everything went as it should, 1 when not (lost,
 * duplicated or reordered messages, refused sends, aborted snapshots,
 * errors), 2 when its deadline (default 120 s) passed, 64 on bad usage.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cut/cut.h>

#include "bench_util.h"

struct app {
	const char *app_url, *node, *ready_file, *start_file, *done_file;
	char *to[BENCH_MAX_SRC];
	size_t nto;
	uint64_t deadline_ns, pause_ms, recv_delay_us;
	int linger;
	struct cut *c;
	struct bench_tx tx;
	atomic_int tx_done;
	struct bench_rx rx;
	uint64_t refused, proto;
	uint64_t states, state_max_ns; /* state requests, slowest reply */
	char error[512];
};

static void
usage(void)
{
	fputs("usage: cutbench app --app URL --node NAME [--to P,...] "
	      "[--count N]\n"
	      "                    [--duration-ms MS] [--size B] [--rate R] "
	      "[--expect P,...]\n"
	      "                    [--latency] [--pause-ms MS] "
	      "[--recv-delay-us US] [--linger] "
	      "[--ready-file F]\n"
	      "                    [--start-file F] [--done-file F] "
	      "[--deadline-ms MS]\n"
	      "       cutbench snap --control URL [--count N] "
	      "[--interval-ms MS]\n"
	      "                    [--duration-ms MS] [--snap-timeout-ms MS] "
	      "[--deadline-ms MS]\n"
	      "       cutbench now\n",
	      stderr);
	exit(64);
}

/* Prints s as a double-quoted value. */
static void
print_quoted(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++)
		putchar(*s == '"' || *s == '\n' ? '\'' : *s);
	putchar('"');
}

static void
set_error(char *buf, size_t size, const char *what, struct cut *c, int rv)
{
	char detail[256] = "";

	if (buf[0] != '\0')
		return;
	if (c != NULL)
		cut_last_error(c, detail, sizeof(detail));
	snprintf(buf, size, "%s: %s%s%s", what, cut_strerror(rv),
	         detail[0] ? ": " : "", detail);
}

/* Connects, retrying while no daemon answers, until the deadline. */
static int
open_retry(const char *app, const char *ctl, const char *node,
           uint64_t deadline_ns, struct cut **c, char *err, size_t errlen)
{
	int rv;

	for (;;) {
		rv = cut_open(app, ctl, node, c);
		if (rv == 0)
			return 0;
		if ((rv != CUT_EUNAVAIL && rv != CUT_ETIMEDOUT) || bench_quit ||
		    bench_now_ns() > deadline_ns) {
			set_error(err, errlen, "cut_open", NULL, rv);
			return rv;
		}
		usleep(50000);
	}
}

/* The state callback: an empty state; times cut_buf_set(), which waits
 * for the sender thread's lock inside libcut. */
static int
on_state(void *arg, const char *snapshot_id, struct cut_buf *ret)
{
	struct app *a = arg;
	uint64_t t0 = bench_now_ns(), dt;
	int rv;

	(void)snapshot_id;
	rv = cut_buf_set(ret, "", 0, NULL);
	dt = bench_now_ns() - t0;
	a->states++;
	if (dt > a->state_max_ns)
		a->state_max_ns = dt;
	return rv;
}

static int
send_fn(void *arg, size_t dst, const void *data, size_t len, char *err,
        size_t errlen)
{
	struct app *a = arg;
	int rv = cut_send(a->c, a->to[dst], data, len, NULL);
	char what[128];

	if (rv == 0)
		return 0;
	if (rv == CUT_ETIMEDOUT)
		return 1;
	snprintf(what, sizeof(what), "cut_send to %s", a->to[dst]);
	set_error(err, errlen, what, a->c, rv);
	return -1;
}

static void *
sender(void *arg)
{
	struct app *a = arg;

	if (a->start_file != NULL &&
	    bench_wait_file(a->start_file, a->deadline_ns) != 0) {
		snprintf(a->tx.error, sizeof(a->tx.error),
		         "%s did not appear in time", a->start_file);
	} else {
		bench_tx_run(&a->tx, send_fn, a);
	}
	a->tx_done = 1;
	return NULL;
}

static int
run_app(int argc, char **argv)
{
	static struct app a;
	char *expect[BENCH_MAX_SRC];
	size_t nexpect = 0;
	int latency = 0, rv, status, done = 0;
	pthread_t thr;
	uint64_t deadline_ms = 120000;

	a.tx.size = 64;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(o, "--latency") == 0) {
			latency = 1;
			continue;
		}
		if (strcmp(o, "--linger") == 0) {
			a.linger = 1;
			continue;
		}
		if (v == NULL)
			usage();
		i++;
		if (strcmp(o, "--app") == 0)
			a.app_url = v;
		else if (strcmp(o, "--node") == 0)
			a.node = v;
		else if (strcmp(o, "--to") == 0)
			a.nto = bench_split(argv[i], a.to, BENCH_MAX_SRC, o);
		else if (strcmp(o, "--expect") == 0)
			nexpect =
			    bench_split(argv[i], expect, BENCH_MAX_SRC, o);
		else if (strcmp(o, "--count") == 0)
			a.tx.count = bench_num(o, v);
		else if (strcmp(o, "--duration-ms") == 0)
			a.tx.duration_ms = bench_num(o, v);
		else if (strcmp(o, "--size") == 0)
			a.tx.size = bench_num(o, v);
		else if (strcmp(o, "--rate") == 0)
			a.tx.rate = bench_num(o, v);
		else if (strcmp(o, "--pause-ms") == 0)
			a.pause_ms = bench_num(o, v);
		else if (strcmp(o, "--recv-delay-us") == 0)
			a.recv_delay_us = bench_num(o, v);
		else if (strcmp(o, "--ready-file") == 0)
			a.ready_file = v;
		else if (strcmp(o, "--start-file") == 0)
			a.start_file = v;
		else if (strcmp(o, "--done-file") == 0)
			a.done_file = v;
		else if (strcmp(o, "--deadline-ms") == 0)
			deadline_ms = bench_num(o, v);
		else
			usage();
	}
	if (a.app_url == NULL || a.node == NULL || a.tx.size < BENCH_HDR)
		usage();
	bench_signals();
	a.deadline_ns = bench_now_ns() + deadline_ms * 1000000u;
	bench_rx_init(&a.rx, latency);
	for (size_t k = 0; k < nexpect; k++)
		bench_rx_expect(&a.rx, expect[k]);

	if (open_retry(a.app_url, NULL, a.node, a.deadline_ns, &a.c, a.error,
	               sizeof(a.error)) != 0)
		goto out;
	if (a.nto > 0 && a.tx.size > cut_max_message_size(a.c)) {
		snprintf(a.error, sizeof(a.error),
		         "--size %zu exceeds the daemon's limit %zu", a.tx.size,
		         cut_max_message_size(a.c));
		goto out;
	}
	cut_set_state_callback(a.c, on_state, &a);
	if (a.ready_file != NULL)
		bench_touch(a.ready_file);
	a.tx.ndst = a.nto;
	a.tx.deadline_ns = a.deadline_ns;
	if (a.nto > 0) {
		if (pthread_create(&thr, NULL, sender, &a) != 0) {
			snprintf(a.error, sizeof(a.error), "pthread_create");
			goto out;
		}
	} else {
		a.tx_done = 1;
	}

	/* Not reading at all for a while: the slow receiver. */
	if (a.pause_ms > 0) {
		uint64_t until = bench_now_ns() + a.pause_ms * 1000000u;
		while (!bench_quit && bench_now_ns() < until)
			usleep(20000);
	}
	for (;;) {
		struct cut_msg *m;

		if (bench_rx_loop_end(&a.rx, a.tx_done, a.tx.error,
		                      a.deadline_ns, a.done_file, a.linger,
		                      &done, a.error, sizeof(a.error)))
			break;
		rv = cut_recv(a.c, 100, &m);
		if (rv == 0) {
			int k = bench_rx_index(&a.rx, cut_msg_from(m));
			if (k < 0)
				bench_rx_error(&a.rx, "too many senders");
			else
				bench_rx_msg(&a.rx, (size_t)k, cut_msg_seq(m),
				             cut_msg_data(m), cut_msg_len(m),
				             bench_now_ns());
			cut_msg_free(m);
			if (a.recv_delay_us > 0)
				usleep((useconds_t)a.recv_delay_us);
		} else if (rv == CUT_ETIMEDOUT) {
			continue;
		} else if (rv == CUT_EREFUSED) {
			char why[256];
			cut_last_error(a.c, why, sizeof(why));
			if (a.refused++ == 0)
				fprintf(stderr, "cutbench %s: refused: %s\n",
				        a.node, why);
		} else if (rv == CUT_EPROTO) {
			a.proto++;
		} else {
			set_error(a.error, sizeof(a.error), "cut_recv", a.c,
			          rv);
			break;
		}
	}
	if (a.nto > 0) {
		if (!a.tx_done)
			bench_quit = 1;
		pthread_join(thr, NULL);
	}
out:
	status = a.error[0] != '\0' || a.tx.error[0] != '\0' ||
	         a.rx.errors > 0 || a.refused > 0 || a.proto > 0;
	if (a.error[0] == '\0' && a.tx.error[0] != '\0')
		snprintf(a.error, sizeof(a.error), "sender: %s", a.tx.error);
	if (a.error[0] == '\0' && a.rx.errors > 0)
		snprintf(a.error, sizeof(a.error), "%s", a.rx.first_error);
	if (a.error[0] == '\0' && a.refused > 0)
		snprintf(a.error, sizeof(a.error),
		         "the daemon refused %llu items",
		         (unsigned long long)a.refused);
	printf("node=%s ", a.node ? a.node : "-");
	bench_tx_print(&a.tx);
	putchar(' ');
	bench_rx_print(&a.rx);
	printf(" refused=%llu proto=%llu state_requests=%llu "
	       "state_reply_max_ms=%.3f ok=%d error=",
	       (unsigned long long)a.refused, (unsigned long long)a.proto,
	       (unsigned long long)a.states, (double)a.state_max_ns / 1e6,
	       !status);
	print_quoted(a.error);
	putchar('\n');
	fflush(stdout);
	cut_close(a.c);
	if (strncmp(a.error, "deadline", 8) == 0)
		return 2;
	return status;
}

static int
cmp64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static double
pct_ms(const uint64_t *v, size_t n, double p)
{
	size_t k = (size_t)(p * (double)n + 0.999999);

	if (n == 0)
		return 0;
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1] / 1e6;
}

static int
run_snap(int argc, char **argv)
{
	const char *url = NULL;
	uint64_t count = 0, interval_ms = 0, duration_ms = 0, snap_to = 10000;
	uint64_t deadline_ms = 120000, deadline_ns, t0;
	uint64_t n = 0, complete = 0, aborted = 0, failed = 0;
	uint64_t *lat = NULL, *dlat = NULL;
	char error[512] = "";
	struct cut *c = NULL;
	int rv, status;

	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		i++;
		if (strcmp(o, "--control") == 0)
			url = v;
		else if (strcmp(o, "--count") == 0)
			count = bench_num(o, v);
		else if (strcmp(o, "--interval-ms") == 0)
			interval_ms = bench_num(o, v);
		else if (strcmp(o, "--duration-ms") == 0)
			duration_ms = bench_num(o, v);
		else if (strcmp(o, "--snap-timeout-ms") == 0)
			snap_to = bench_num(o, v);
		else if (strcmp(o, "--deadline-ms") == 0)
			deadline_ms = bench_num(o, v);
		else
			usage();
	}
	if (url == NULL || (count == 0 && duration_ms == 0))
		usage();
	bench_signals();
	t0 = bench_now_ns();
	deadline_ns = t0 + deadline_ms * 1000000u;
	/* Without a count, bounded by the duration: one a millisecond. */
	if (count == 0)
		count = duration_ms + 1;
	lat = calloc(count, sizeof(*lat));
	dlat = calloc(count, sizeof(*dlat));
	if (lat == NULL || dlat == NULL)
		return 70;
	if (open_retry(NULL, url, NULL, deadline_ns, &c, error,
	               sizeof(error)) != 0)
		goto out;
	cut_set_control_timeout(c, (int)snap_to + 5000);
	while (n < count) {
		char id[CUT_SNAPSHOT_ID_MAX];
		struct cut_snapshot *s = NULL;
		uint64_t ts, te;

		if (bench_quit || bench_stop_send)
			break;
		if (duration_ms &&
		    bench_now_ns() - t0 >= duration_ms * 1000000u)
			break;
		if (bench_now_ns() > deadline_ns) {
			snprintf(error, sizeof(error),
			         "deadline passed after %llu snapshots",
			         (unsigned long long)n);
			break;
		}
		if (interval_ms &&
		    !bench_sleep_until(t0 + n * interval_ms * 1000000u))
			continue;
		ts = bench_now_ns();
		n++;
		rv = cut_snapshot_start(c, (int)snap_to, id, sizeof(id));
		if (rv != 0) {
			failed++;
			set_error(error, sizeof(error), "cut_snapshot_start", c,
			          rv);
			if (rv == CUT_EUNAVAIL || rv == CUT_ECLOSED)
				break;
			continue;
		}
		rv = cut_snapshot_wait(c, id, (int)snap_to + 5000, 0, &s);
		te = bench_now_ns();
		if (rv != 0) {
			failed++;
			set_error(error, sizeof(error), "cut_snapshot_wait", c,
			          rv);
			continue;
		}
		fprintf(stderr, "snapshot %s %s %.3f ms (daemon %llu ms)\n", id,
		        cut_snapshot_status(s) == CUT_SNAPSHOT_COMPLETE
		            ? "complete"
		            : "aborted",
		        (double)(te - ts) / 1e6,
		        (unsigned long long)(cut_snapshot_finished_ms(s) -
		                             cut_snapshot_started_ms(s)));
		if (cut_snapshot_status(s) == CUT_SNAPSHOT_COMPLETE) {
			lat[complete] = te - ts;
			dlat[complete++] = (cut_snapshot_finished_ms(s) -
			                    cut_snapshot_started_ms(s)) *
			                   1000000u;
		} else {
			aborted++;
			if (error[0] == '\0')
				snprintf(error, sizeof(error),
				         "snapshot %s aborted: %s", id,
				         cut_snapshot_reason(s));
		}
		cut_snapshot_free(s);
		cut_snapshot_delete(c, id);
	}
out:
	qsort(lat, complete, sizeof(*lat), cmp64);
	qsort(dlat, complete, sizeof(*dlat), cmp64);
	status = error[0] != '\0' || aborted > 0 || failed > 0;
	printf("snaps=%llu complete=%llu aborted=%llu failed=%llu "
	       "snap_p50_ms=%.3f snap_p99_ms=%.3f snap_max_ms=%.3f "
	       "daemon_p50_ms=%.0f daemon_p99_ms=%.0f ok=%d error=",
	       (unsigned long long)n, (unsigned long long)complete,
	       (unsigned long long)aborted, (unsigned long long)failed,
	       pct_ms(lat, complete, 0.5), pct_ms(lat, complete, 0.99),
	       pct_ms(lat, complete, 1.0), pct_ms(dlat, complete, 0.5),
	       pct_ms(dlat, complete, 0.99), !status);
	print_quoted(error);
	putchar('\n');
	fflush(stdout);
	cut_close(c);
	free(lat);
	free(dlat);
	if (strncmp(error, "deadline", 8) == 0)
		return 2;
	return status;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "app") == 0)
		return run_app(argc, argv);
	if (strcmp(argv[1], "snap") == 0)
		return run_snap(argc, argv);
	if (strcmp(argv[1], "now") == 0) {
		printf("%llu\n", (unsigned long long)(bench_now_ns() / 1000000));
		return 0;
	}
	usage();
	return 64;
}
