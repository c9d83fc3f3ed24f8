/*
 * bench_util.c - the payload header, the send loop and the receiving side's
 * checks and figures, shared by cutbench and nngrelay.  See bench_util.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

volatile sig_atomic_t bench_stop_send, bench_quit;

static void
put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void
bench_hdr_put(void *buf, const struct bench_hdr *h)
{
	unsigned char *p = buf;

	put64(p, h->t_ns);
	put64(p + 8, h->seq);
	p[16] = h->src;
	p[17] = h->dst;
	p[18] = h->flags;
	memset(p + 19, 0, BENCH_HDR - 19);
}

int
bench_hdr_get(const void *buf, size_t len, struct bench_hdr *h)
{
	const unsigned char *p = buf;

	if (len < BENCH_HDR)
		return -1;
	h->t_ns = get64(p);
	h->seq = get64(p + 8);
	h->src = p[16];
	h->dst = p[17];
	h->flags = p[18];
	return 0;
}

uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int
bench_sleep_until(uint64_t t_ns)
{
	for (;;) {
		uint64_t now = bench_now_ns();
		uint64_t until;
		struct timespec ts;

		if (bench_stop_send || bench_quit)
			return 0;
		if (now >= t_ns)
			return 1;
		/* At most 100 ms at a time, so that a signal is seen. */
		until = t_ns - now > 100000000u ? now + 100000000u : t_ns;
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
}

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		bench_stop_send = 1;
	else
		bench_quit = 1;
}

void
bench_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

uint64_t
bench_num(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || s[0] == '-')
		goto bad;
	if (*end == 'k' || *end == 'K') {
		v *= 1000;
		end++;
	} else if (*end == 'M') {
		v *= 1000000;
		end++;
	}
	if (*end != '\0')
		goto bad;
	return v;
bad:
	fprintf(stderr, "%s: not a number: %s\n", opt, s);
	exit(64);
}

size_t
bench_split(char *s, char **items, size_t max, const char *opt)
{
	size_t n = 0;
	char *save = NULL;

	for (char *t = strtok_r(s, ",", &save); t != NULL;
	     t = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			fprintf(stderr, "%s: more than %zu items\n", opt, max);
			exit(64);
		}
		items[n++] = t;
	}
	return n;
}

void
bench_touch(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fclose(f) != 0) {
		fprintf(stderr, "cannot create %s: %s\n", path,
		        strerror(errno));
		exit(70);
	}
}

int
bench_wait_file(const char *path, uint64_t deadline_ns)
{
	struct stat st;

	while (stat(path, &st) != 0) {
		if (bench_quit || bench_now_ns() > deadline_ns)
			return -1;
		usleep(2000);
	}
	return 0;
}

void
bench_rx_init(struct bench_rx *rx, int latency)
{
	memset(rx, 0, sizeof(*rx));
	rx->latency = latency;
}

int
bench_rx_index(struct bench_rx *rx, const char *name)
{
	for (size_t i = 0; i < rx->nsrc; i++)
		if (strcmp(rx->names[i], name) == 0)
			return (int)i;
	if (rx->nsrc == BENCH_MAX_SRC)
		return -1;
	rx->names[rx->nsrc] = strdup(name);
	if (rx->names[rx->nsrc] == NULL)
		return -1;
	rx->next[rx->nsrc] = 1;
	rx->next_tr[rx->nsrc] = 1;
	return (int)rx->nsrc++;
}

void
bench_rx_expect(struct bench_rx *rx, const char *name)
{
	if (bench_rx_index(rx, name) < 0) {
		fprintf(stderr, "too many streams\n");
		exit(64);
	}
	rx->nexpect = rx->nsrc;
}

void
bench_rx_error(struct bench_rx *rx, const char *fmt, ...)
{
	va_list ap;

	if (rx->errors++ == 0) {
		va_start(ap, fmt);
		vsnprintf(rx->first_error, sizeof(rx->first_error), fmt, ap);
		va_end(ap);
	}
}

int
bench_rx_msg(struct bench_rx *rx, size_t src, uint64_t tr_seq, const void *data,
             size_t len, uint64_t now)
{
	struct bench_hdr h;

	rx->received++;
	rx->bytes += len;
	if (rx->t_first_recv == 0)
		rx->t_first_recv = now;
	else if (now - rx->t_last_recv > rx->gap_max) {
		rx->gap_max = now - rx->t_last_recv;
		rx->gap_end = now;
	}
	rx->t_last_recv = now;
	if (bench_hdr_get(data, len, &h) != 0) {
		bench_rx_error(rx, "a %zu-byte message from %s", len,
		               rx->names[src]);
		return 0;
	}
	if (src >= rx->nexpect && rx->nexpect > 0)
		bench_rx_error(rx, "a message from unexpected %s",
		               rx->names[src]);
	if (rx->ended[src])
		bench_rx_error(rx, "%s: message %llu after its END",
		               rx->names[src], (unsigned long long)h.seq);
	if (h.seq != rx->next[src])
		bench_rx_error(rx,
		               "%s: message %llu where %llu was due "
		               "(lost, duplicated or reordered)",
		               rx->names[src], (unsigned long long)h.seq,
		               (unsigned long long)rx->next[src]);
	rx->next[src] = h.seq + 1;
	if (tr_seq != 0) {
		if (tr_seq != rx->next_tr[src])
			bench_rx_error(rx,
			               "%s: transport seq %llu where %llu "
			               "was due",
			               rx->names[src],
			               (unsigned long long)tr_seq,
			               (unsigned long long)rx->next_tr[src]);
		rx->next_tr[src] = tr_seq + 1;
	}
	if (rx->t_first_send == 0 || h.t_ns < rx->t_first_send)
		rx->t_first_send = h.t_ns;
	if (rx->latency && rx->nlat < BENCH_MAX_LAT) {
		if (rx->nlat == rx->caplat) {
			size_t cap = rx->caplat ? rx->caplat * 2 : 65536;
			uint64_t *v = realloc(rx->lat, cap * sizeof(*v));
			if (v == NULL) {
				bench_rx_error(rx, "out of memory");
				rx->latency = 0;
				goto done;
			}
			rx->lat = v;
			rx->caplat = cap;
		}
		rx->lat[rx->nlat++] = now > h.t_ns ? now - h.t_ns : 0;
	}
done:
	if (h.flags & BENCH_END) {
		rx->ended[src] = 1;
		return 1;
	}
	return 0;
}

int
bench_rx_done(const struct bench_rx *rx)
{
	if (rx->nexpect == 0)
		return 0;
	for (size_t i = 0; i < rx->nexpect; i++)
		if (!rx->ended[i])
			return 0;
	return 1;
}

static int
cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double
pct_us(const uint64_t *v, size_t n, double p)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)(p * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1] / 1000.0;
}

void
bench_rx_print(struct bench_rx *rx)
{
	double span = 0, rate = 0;

	if (rx->t_last_recv > rx->t_first_send && rx->t_first_send != 0) {
		span = (double)(rx->t_last_recv - rx->t_first_send) / 1e9;
		rate = (double)rx->received / span;
	}
	printf("recv=%llu bytes=%llu span_s=%.6f rate=%.1f "
	       "t_first_send_ns=%llu t_first_recv_ns=%llu t_last_recv_ns=%llu",
	       (unsigned long long)rx->received, (unsigned long long)rx->bytes,
	       span, rate, (unsigned long long)rx->t_first_send,
	       (unsigned long long)rx->t_first_recv,
	       (unsigned long long)rx->t_last_recv);
	printf(" gap_max_ns=%llu gap_end_ns=%llu",
	       (unsigned long long)rx->gap_max,
	       (unsigned long long)rx->gap_end);
	if (rx->nlat > 0) {
		qsort(rx->lat, rx->nlat, sizeof(*rx->lat), cmp64);
		printf(" lat_n=%zu lat_p50_us=%.1f lat_p99_us=%.1f "
		       "lat_max_us=%.1f",
		       rx->nlat, pct_us(rx->lat, rx->nlat, 0.50),
		       pct_us(rx->lat, rx->nlat, 0.99),
		       pct_us(rx->lat, rx->nlat, 1.0));
	}
	printf(" streams=");
	for (size_t i = 0; i < rx->nsrc; i++)
		printf("%s%s:%llu%s", i ? "," : "", rx->names[i],
		       (unsigned long long)(rx->next[i] - 1),
		       rx->ended[i] ? ":end" : "");
	if (rx->nsrc == 0)
		printf("-");
	printf(" rx_errors=%llu", (unsigned long long)rx->errors);
}

/* Before the k-th retry of a send that timed out: nothing the first time
 * (a send that blocked until its timeout has waited already), then 50 us
 * more each time up to 1 ms, so that a send that says "would block" at
 * once does not make the sender spin. */
static void
backoff(unsigned k)
{
	if (k > 0)
		usleep(k < 20 ? 50 * k : 1000);
}

/* Sends the next message (flags: 0 or BENCH_END) of stream d, retrying
 * while fn says "retry" (1) until the deadline.  Returns 0 or -1 with
 * tx->error set. */
static int
send_one(struct bench_tx *tx, bench_send_fn fn, void *arg, size_t d,
         uint8_t *buf, uint64_t now, uint8_t flags)
{
	struct bench_hdr h;
	int rv;

	h.t_ns = now;
	h.seq = tx->seq[d] + 1;
	h.src = tx->src;
	h.dst = tx->dst[d];
	h.flags = flags;
	bench_hdr_put(buf, &h);
	for (unsigned k = 0; (rv = fn(arg, d, buf, tx->size, tx->error,
	                              sizeof(tx->error))) == 1;
	     k++) {
		tx->retries++;
		if (bench_quit || bench_now_ns() > tx->deadline_ns) {
			snprintf(tx->error, sizeof(tx->error),
			         "%s kept timing out until the deadline or a "
			         "signal",
			         flags & BENCH_END ? "sending END" : "send");
			return -1;
		}
		backoff(k);
	}
	return rv == 0 ? 0 : -1;
}

int
bench_tx_run(struct bench_tx *tx, bench_send_fn fn, void *arg)
{
	unsigned char *buf;
	uint64_t t0, i = 0;

	tx->ok = 0;
	if (tx->ndst == 0 || tx->size < BENCH_HDR) {
		snprintf(tx->error, sizeof(tx->error),
		         "nothing to send to, or size below %d", BENCH_HDR);
		return -1;
	}
	if ((buf = calloc(1, tx->size)) == NULL) {
		snprintf(tx->error, sizeof(tx->error), "out of memory");
		return -1;
	}
	for (size_t k = BENCH_HDR; k < tx->size; k++)
		buf[k] = (unsigned char)(k * 7);
	t0 = tx->t_start = bench_now_ns();
	for (;;) {
		size_t d = i % tx->ndst;
		uint64_t now = bench_now_ns();

		if (bench_quit) {
			snprintf(tx->error, sizeof(tx->error), "terminated");
			goto fail;
		}
		if (bench_stop_send)
			break;
		if (tx->count != 0 && tx->sent >= tx->count * tx->ndst)
			break;
		if (tx->duration_ms != 0 &&
		    now - t0 >= tx->duration_ms * 1000000u)
			break;
		if (now > tx->deadline_ns) {
			snprintf(tx->error, sizeof(tx->error),
			         "deadline passed while sending (%llu sent)",
			         (unsigned long long)tx->sent);
			goto fail;
		}
		if (tx->rate != 0) {
			if (!bench_sleep_until(t0 + i * 1000000000u / tx->rate))
				continue;
			now = bench_now_ns();
		}
		if (send_one(tx, fn, arg, d, buf, now, 0) != 0)
			goto fail;
		tx->seq[d]++;
		tx->sent++;
		i++;
	}
	for (size_t d = 0; d < tx->ndst; d++) {
		if (send_one(tx, fn, arg, d, buf, bench_now_ns(), BENCH_END) !=
		    0)
			goto fail;
	}
	tx->t_end = bench_now_ns();
	tx->ok = 1;
	free(buf);
	return 0;
fail:
	tx->t_end = bench_now_ns();
	free(buf);
	return -1;
}

void
bench_tx_print(const struct bench_tx *tx)
{
	double span = (double)(tx->t_end - tx->t_start) / 1e9;

	printf("sent=%llu send_retries=%llu send_s=%.6f send_rate=%.1f",
	       (unsigned long long)tx->sent, (unsigned long long)tx->retries,
	       span, span > 0 ? (double)tx->sent / span : 0.0);
}

int
bench_rx_loop_end(const struct bench_rx *rx, int tx_done, const char *tx_error,
                  uint64_t deadline_ns, const char *done_file, int linger,
                  int *done, char *err, size_t errlen)
{
	if (bench_quit)
		return 1;
	if (bench_now_ns() > deadline_ns) {
		snprintf(
		    err, errlen,
		    "deadline passed (%llu received, streams not all ended)",
		    (unsigned long long)rx->received);
		return 1;
	}
	if (tx_done && tx_error[0] != '\0')
		return 1;
	if (tx_done && (rx->nexpect == 0 || bench_rx_done(rx))) {
		if (done_file != NULL && !*done) {
			bench_touch(done_file);
			*done = 1;
		}
		if (!linger)
			return 1;
	}
	return 0;
}
