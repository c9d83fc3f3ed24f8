/*
 * nngrelay - the plain nng baseline of the benchmark (tests/bench/run.sh):
 * the same payloads as cutbench (bench_util.h) over push/pull sockets,
 * with relays of the same shape as cutd's path app -> daemon -> daemon ->
 * app, but nothing else: no protocol, no acknowledgements, no persistence.
 *
 * An endpoint SPEC is listen:URL or dial:URL.  Every socket has
 * NNG_OPT_RECVMAXSZ set (1 MiB + 64 KiB, like cutd's default limit);
 * dialers connect in the background and retry every 10..100 ms.
 *
 *   nngrelay app [--push SPEC] [--pull SPEC] [--src I] [--to I[,I...]]
 *                [--count N] [--duration-ms MS] [--size B] [--rate R]
 *                [--expect I[,I...]] [--latency] [--pause-ms MS] [--linger]
 *                [--ready-file F] [--start-file F] [--done-file F]
 *                [--deadline-ms MS]
 *
 *     An application, like cutbench app: a sender thread that pushes to
 *     the destinations (node indexes, written into each payload's header
 *     for the routers) in turn, and a main thread that pulls and checks
 *     the streams (by the sender index in the header).
 *
 *   nngrelay relay --in SPEC --out SPEC [--deadline-ms MS]
 *
 *     One hop of the chain: pull from --in, push to --out, one message at
 *     a time (nng_recvmsg, nng_sendmsg), until SIGTERM.
 *
 *   nngrelay router --app-in SPEC --app-out SPEC --peer-in SPEC
 *                   --peer I=SPEC [--peer I=SPEC...] [--deadline-ms MS]
 *
 *     A daemon of the all-to-all mesh: one thread pulls what its
 *     application sends (--app-in) and pushes each message to the router
 *     of the node named in its header (--peer); another pulls what the
 *     other routers send (--peer-in) and pushes it to the application
 *     (--app-out).  Until SIGTERM.
 *
 * Each prints one line of key=value fields on stdout when it ends
 * (error="..." last) and exits 0, 1 on failures, 2 when its deadline
 * (default 120 s) passed, 64 on bad usage.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#include "bench_util.h"

#define RECVMAX (1024 * 1024 + 64 * 1024)
#define POLL_MS 200

static void
usage(void)
{
	fputs("usage: nngrelay app [--push SPEC] [--pull SPEC] [--src I] "
	      "[--to I,...]\n"
	      "                  [--count N] [--duration-ms MS] [--size B] "
	      "[--rate R]\n"
	      "                  [--expect I,...] [--latency] [--pause-ms MS] "
	      "[--linger]\n"
	      "                  [--ready-file F] [--start-file F] "
	      "[--done-file F] [--deadline-ms MS]\n"
	      "       nngrelay relay --in SPEC --out SPEC [--deadline-ms MS]\n"
	      "       nngrelay router --app-in SPEC --app-out SPEC "
	      "--peer-in SPEC\n"
	      "                  --peer I=SPEC... [--deadline-ms MS]\n"
	      "SPEC: listen:URL or dial:URL\n",
	      stderr);
	exit(64);
}

static void
print_quoted(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++)
		putchar(*s == '"' || *s == '\n' ? '\'' : *s);
	putchar('"');
}

/* Opens a push (push != 0) or pull socket on spec; exits 1 on failure. */
static nng_socket
open_sock(int push, const char *spec)
{
	nng_socket s;
	int rv;

	rv = push ? nng_push0_open(&s) : nng_pull0_open(&s);
	if (rv != 0) {
		fprintf(stderr, "nngrelay: cannot open a socket: %s\n",
		        nng_strerror(rv));
		exit(1);
	}
	nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, RECVMAX);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, POLL_MS);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, POLL_MS);
	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 10);
	nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 100);
	if (strncmp(spec, "listen:", 7) == 0) {
		rv = nng_listen(s, spec + 7, NULL, 0);
	} else if (strncmp(spec, "dial:", 5) == 0) {
		rv = nng_dial(s, spec + 5, NULL, NNG_FLAG_NONBLOCK);
	} else {
		fprintf(stderr, "nngrelay: not listen:URL or dial:URL: %s\n",
		        spec);
		exit(64);
	}
	if (rv != 0) {
		fprintf(stderr, "nngrelay: %s: %s\n", spec, nng_strerror(rv));
		exit(1);
	}
	return s;
}

/*
 * Moves messages from `in` to the socket route() picks, one at a time,
 * until SIGTERM or the deadline.
 */
struct pump {
	nng_socket in;
	nng_socket out[BENCH_MAX_SRC]; /* by destination index */
	int has_out[BENCH_MAX_SRC];
	int route; /* 0: everything to out[0] */
	uint64_t deadline_ns;
	uint64_t moved, dropped;
	char error[256];
};

static void *
pump_run(void *arg)
{
	struct pump *p = arg;

	while (!bench_quit) {
		nng_msg *msg;
		nng_socket out;
		struct bench_hdr h;
		int rv;

		if (bench_now_ns() > p->deadline_ns) {
			snprintf(p->error, sizeof(p->error), "deadline passed");
			break;
		}
		rv = nng_recvmsg(p->in, &msg, 0);
		if (rv == NNG_ETIMEDOUT)
			continue;
		if (rv != 0) {
			snprintf(p->error, sizeof(p->error), "nng_recvmsg: %s",
			         nng_strerror(rv));
			break;
		}
		if (!p->route) {
			out = p->out[0];
		} else if (bench_hdr_get(nng_msg_body(msg), nng_msg_len(msg),
		                         &h) != 0 ||
		           h.dst >= BENCH_MAX_SRC || !p->has_out[h.dst]) {
			p->dropped++;
			nng_msg_free(msg);
			continue;
		} else {
			out = p->out[h.dst];
		}
		while ((rv = nng_sendmsg(out, msg, 0)) == NNG_ETIMEDOUT) {
			if (bench_quit || bench_now_ns() > p->deadline_ns)
				break;
		}
		if (rv != 0) {
			nng_msg_free(msg);
			if (rv != NNG_ETIMEDOUT)
				snprintf(p->error, sizeof(p->error),
				         "nng_sendmsg: %s", nng_strerror(rv));
			break;
		}
		p->moved++;
	}
	return NULL;
}

static uint64_t
deadline_from(uint64_t ms)
{
	return bench_now_ns() + ms * 1000000u;
}

static int
run_relay(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	uint64_t deadline_ms = 120000;
	static struct pump p;

	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[++i] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(o, "--in") == 0)
			in = v;
		else if (strcmp(o, "--out") == 0)
			out = v;
		else if (strcmp(o, "--deadline-ms") == 0)
			deadline_ms = bench_num(o, v);
		else
			usage();
	}
	if (in == NULL || out == NULL)
		usage();
	bench_signals();
	p.deadline_ns = deadline_from(deadline_ms);
	p.in = open_sock(0, in);
	p.out[0] = open_sock(1, out);
	pump_run(&p);
	printf("relayed=%llu ok=%d error=", (unsigned long long)p.moved,
	       p.error[0] == '\0');
	print_quoted(p.error);
	putchar('\n');
	fflush(stdout);
	/* Like cutd: leave the sockets to the kernel (nng 1.5.2 close races).
	 */
	if (strncmp(p.error, "deadline", 8) == 0)
		_exit(2);
	_exit(p.error[0] != '\0');
}

static int
run_router(int argc, char **argv)
{
	const char *app_in = NULL, *app_out = NULL, *peer_in = NULL;
	uint64_t deadline_ms = 120000;
	static struct pump up, down;
	pthread_t thr;
	int npeers = 0;

	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[++i] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(o, "--app-in") == 0) {
			app_in = v;
		} else if (strcmp(o, "--app-out") == 0) {
			app_out = v;
		} else if (strcmp(o, "--peer-in") == 0) {
			peer_in = v;
		} else if (strcmp(o, "--peer") == 0) {
			char *eq = strchr(v, '=');
			char idx[16];
			uint64_t k;
			if (eq == NULL || (size_t)(eq - v) >= sizeof(idx))
				usage();
			memcpy(idx, v, (size_t)(eq - v));
			idx[eq - v] = '\0';
			k = bench_num(o, idx);
			if (k >= BENCH_MAX_SRC || up.has_out[k])
				usage();
			up.out[k] = open_sock(1, eq + 1);
			up.has_out[k] = 1;
			npeers++;
		} else if (strcmp(o, "--deadline-ms") == 0) {
			deadline_ms = bench_num(o, v);
		} else {
			usage();
		}
	}
	if (app_in == NULL || app_out == NULL || peer_in == NULL || npeers == 0)
		usage();
	bench_signals();
	up.deadline_ns = down.deadline_ns = deadline_from(deadline_ms);
	up.route = 1;
	up.in = open_sock(0, app_in);
	down.in = open_sock(0, peer_in);
	down.out[0] = open_sock(1, app_out);
	if (pthread_create(&thr, NULL, pump_run, &down) != 0)
		return 70;
	pump_run(&up);
	bench_quit = 1;
	pthread_join(thr, NULL);
	if (up.error[0] == '\0')
		memcpy(up.error, down.error, sizeof(up.error));
	if (up.error[0] == '\0' && up.dropped > 0)
		snprintf(up.error, sizeof(up.error),
		         "%llu messages for unknown nodes dropped",
		         (unsigned long long)up.dropped);
	printf("routed_up=%llu routed_down=%llu ok=%d error=",
	       (unsigned long long)up.moved, (unsigned long long)down.moved,
	       up.error[0] == '\0');
	print_quoted(up.error);
	putchar('\n');
	fflush(stdout);
	if (strncmp(up.error, "deadline", 8) == 0)
		_exit(2);
	_exit(up.error[0] != '\0');
}

struct app {
	nng_socket push, pull;
	int has_push, has_pull, linger;
	const char *start_file, *done_file;
	uint64_t deadline_ns, pause_ms;
	struct bench_tx tx;
	atomic_int tx_done;
	struct bench_rx rx;
	char error[512];
};

static int
send_fn(void *arg, size_t dst, const void *data, size_t len, char *err,
        size_t errlen)
{
	struct app *a = arg;
	int rv = nng_send(a->push, (void *)data, len, 0);

	(void)dst;
	if (rv == 0)
		return 0;
	if (rv == NNG_ETIMEDOUT)
		return 1;
	snprintf(err, errlen, "nng_send: %s", nng_strerror(rv));
	return -1;
}

static void *
sender(void *arg)
{
	struct app *a = arg;

	if (a->start_file != NULL &&
	    bench_wait_file(a->start_file, a->deadline_ns) != 0)
		snprintf(a->tx.error, sizeof(a->tx.error),
		         "%s did not appear in time", a->start_file);
	else
		bench_tx_run(&a->tx, send_fn, a);
	a->tx_done = 1;
	return NULL;
}

static int
run_app(int argc, char **argv)
{
	static struct app a;
	const char *push = NULL, *pull = NULL, *ready = NULL;
	char *to[BENCH_MAX_SRC], *expect[BENCH_MAX_SRC];
	size_t nexpect = 0;
	uint64_t deadline_ms = 120000;
	int latency = 0, status, done = 0;
	pthread_t thr;

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
		if (strcmp(o, "--push") == 0)
			push = v;
		else if (strcmp(o, "--pull") == 0)
			pull = v;
		else if (strcmp(o, "--src") == 0)
			a.tx.src = (uint8_t)bench_num(o, v);
		else if (strcmp(o, "--to") == 0)
			a.tx.ndst = bench_split(argv[i], to, BENCH_MAX_SRC, o);
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
		else if (strcmp(o, "--ready-file") == 0)
			ready = v;
		else if (strcmp(o, "--start-file") == 0)
			a.start_file = v;
		else if (strcmp(o, "--done-file") == 0)
			a.done_file = v;
		else if (strcmp(o, "--deadline-ms") == 0)
			deadline_ms = bench_num(o, v);
		else
			usage();
	}
	if ((a.tx.ndst > 0) != (push != NULL) || a.tx.size < BENCH_HDR ||
	    (nexpect > 0 && pull == NULL))
		usage();
	for (size_t k = 0; k < a.tx.ndst; k++)
		a.tx.dst[k] = (uint8_t)bench_num("--to", to[k]);
	bench_signals();
	a.deadline_ns = a.tx.deadline_ns = deadline_from(deadline_ms);
	bench_rx_init(&a.rx, latency);
	for (size_t k = 0; k < nexpect; k++)
		bench_rx_expect(&a.rx, expect[k]);
	if (pull != NULL) {
		a.pull = open_sock(0, pull);
		a.has_pull = 1;
	}
	if (push != NULL) {
		a.push = open_sock(1, push);
		a.has_push = 1;
	}
	if (ready != NULL)
		bench_touch(ready);
	if (a.has_push) {
		if (pthread_create(&thr, NULL, sender, &a) != 0)
			return 70;
	} else {
		a.tx_done = 1;
	}
	if (a.pause_ms > 0) {
		uint64_t until = bench_now_ns() + a.pause_ms * 1000000u;
		while (!bench_quit && bench_now_ns() < until)
			usleep(20000);
	}
	for (;;) {
		nng_msg *msg;
		struct bench_hdr h;
		char name[8];
		int rv, k;

		if (bench_rx_loop_end(&a.rx, a.tx_done, a.tx.error,
		                      a.deadline_ns, a.done_file, a.linger,
		                      &done, a.error, sizeof(a.error)))
			break;
		if (!a.has_pull) {
			usleep(20000);
			continue;
		}
		rv = nng_recvmsg(a.pull, &msg, 0);
		if (rv == NNG_ETIMEDOUT)
			continue;
		if (rv != 0) {
			snprintf(a.error, sizeof(a.error), "nng_recvmsg: %s",
			         nng_strerror(rv));
			break;
		}
		if (bench_hdr_get(nng_msg_body(msg), nng_msg_len(msg), &h) != 0)
			h.src = 255;
		snprintf(name, sizeof(name), "%u", (unsigned)h.src);
		k = bench_rx_index(&a.rx, name);
		if (k < 0)
			bench_rx_error(&a.rx, "too many senders");
		else
			bench_rx_msg(&a.rx, (size_t)k, 0, nng_msg_body(msg),
			             nng_msg_len(msg), bench_now_ns());
		nng_msg_free(msg);
	}
	if (a.has_push) {
		if (!a.tx_done)
			bench_quit = 1;
		pthread_join(thr, NULL);
	}
	status = a.error[0] != '\0' || a.tx.error[0] != '\0' || a.rx.errors;
	if (a.error[0] == '\0' && a.tx.error[0] != '\0')
		snprintf(a.error, sizeof(a.error), "sender: %s", a.tx.error);
	if (a.error[0] == '\0' && a.rx.errors > 0)
		snprintf(a.error, sizeof(a.error), "%s", a.rx.first_error);
	printf("node=%u ", (unsigned)a.tx.src);
	bench_tx_print(&a.tx);
	putchar(' ');
	bench_rx_print(&a.rx);
	printf(" ok=%d error=", !status);
	print_quoted(a.error);
	putchar('\n');
	fflush(stdout);
	if (strncmp(a.error, "deadline", 8) == 0)
		_exit(2);
	_exit(status);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "app") == 0)
		return run_app(argc, argv);
	if (strcmp(argv[1], "relay") == 0)
		return run_relay(argc, argv);
	if (strcmp(argv[1], "router") == 0)
		return run_router(argc, argv);
	usage();
	return 64;
}
