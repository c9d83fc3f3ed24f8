/*
 * bench_util.h - what cutbench (the cutd side) and nngrelay (the plain nng
 * baseline) share, so that both sides of every comparison send the same
 * payloads and count, check and time them the same way.
 *
 * Every benchmark payload starts with a header (BENCH_HDR bytes, little
 * endian): the sender's CLOCK_MONOTONIC time in ns when it handed the
 * message over, the message's number on its (sender, receiver) stream from
 * 1, the sender's and receiver's indexes (used by the baseline's routers),
 * and flags (BENCH_END: the last message of the stream, sent when the
 * sender stops).  All processes run on one host, so monotonic times taken
 * in different processes compare.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_HDR 24
#define BENCH_END 0x1
/* The most streams one receiver tracks. */
#define BENCH_MAX_SRC 64
/* The most latency samples kept (the first ones). */
#define BENCH_MAX_LAT (4u * 1024 * 1024)

struct bench_hdr {
	uint64_t t_ns;
	uint64_t seq;
	uint8_t src, dst, flags;
};

void bench_hdr_put(void *buf, const struct bench_hdr *h);
int bench_hdr_get(const void *buf, size_t len, struct bench_hdr *h);

uint64_t bench_now_ns(void);
/* Sleeps until monotonic time t_ns; returns 1 then, or 0 early when
 * bench_stop_send or bench_quit is set. */
int bench_sleep_until(uint64_t t_ns);

/* Signal flags: SIGUSR1 sets stop_send (stop sending, say END, go on
 * receiving), SIGTERM and SIGINT set quit. */
extern volatile sig_atomic_t bench_stop_send, bench_quit;
void bench_signals(void);

/* Option parsing: an unsigned number (k/M suffixes allowed), or exit 64. */
uint64_t bench_num(const char *opt, const char *s);
/* Splits a comma-separated list into at most max items (the string is
 * modified); exits 64 on too many. */
size_t bench_split(char *s, char **items, size_t max, const char *opt);

/* Touches (creates) file path; exits 70 on failure. */
void bench_touch(const char *path);
/* Waits until path exists; returns 0, or -1 if deadline_ns passed or quit. */
int bench_wait_file(const char *path, uint64_t deadline_ns);

/*
 * The receiving side's bookkeeping: per stream, every message must be the
 * next number (header seq, and, when the transport gives one, its own
 * sequence number too); an END closes the stream.
 */
struct bench_rx {
	const char *names[BENCH_MAX_SRC]; /* expected streams' names */
	size_t nexpect;
	size_t nsrc;
	uint64_t next[BENCH_MAX_SRC];    /* next header seq expected */
	uint64_t next_tr[BENCH_MAX_SRC]; /* next transport seq expected */
	int ended[BENCH_MAX_SRC];
	uint64_t received; /* messages, END included */
	uint64_t bytes;
	uint64_t errors;
	char first_error[256];
	uint64_t t_first_send, t_first_recv, t_last_recv;
	/* The longest time between two messages received, and when the
	 * message that ended it came (ns, bench_now_ns()). */
	uint64_t gap_max, gap_end;
	int latency;   /* keep latency samples */
	uint64_t *lat; /* ns */
	size_t nlat, caplat;
};

void bench_rx_init(struct bench_rx *rx, int latency);
/* Adds a stream that must end for the receiver to be done. */
void bench_rx_expect(struct bench_rx *rx, const char *name);
/*
 * Accounts for one message from stream src (an index into names, found by
 * bench_rx_index), with transport sequence number tr_seq (0: none).
 * Returns 1 if it was an END, 0 otherwise.
 */
int bench_rx_msg(struct bench_rx *rx, size_t src, uint64_t tr_seq,
                 const void *data, size_t len, uint64_t now);
/* The index of stream name, adding it if it is new; -1 if too many. */
int bench_rx_index(struct bench_rx *rx, const char *name);
/* 1 once every expected stream has ended. */
int bench_rx_done(const struct bench_rx *rx);
void bench_rx_error(struct bench_rx *rx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints the receiver's key=value fields (no newline). */
void bench_rx_print(struct bench_rx *rx);
/* The checks at the top of a receiving loop, shared by cutbench and
 * nngrelay: returns 1 when the loop ends (a signal, the deadline, which
 * sets err, a failed sender, or everything received without linger);
 * touches done_file once everything expected arrived. */
int bench_rx_loop_end(const struct bench_rx *rx, int tx_done,
                      const char *tx_error, uint64_t deadline_ns,
                      const char *done_file, int linger, int *done, char *err,
                      size_t errlen);

/*
 * The sending side: payloads of size bytes to each of ndst destinations in
 * turn, numbered per destination, paced at rate messages a second over all
 * destinations (0: as fast as possible), until count messages went to
 * each destination (0: no limit), duration_ms passed (0: no limit) or
 * SIGUSR1; then an END to each destination.  SIGTERM stops at once,
 * without END.  Every send goes through fn, which returns 0 (sent), 1
 * (timed out: retried, and counted) or -1 (fatal: fn wrote err).
 */
typedef int (*bench_send_fn)(void *arg, size_t dst, const void *data,
                             size_t len, char *err, size_t errlen);

struct bench_tx {
	size_t ndst;
	uint8_t src;                /* header src */
	uint8_t dst[BENCH_MAX_SRC]; /* header dst, per destination */
	uint64_t count, duration_ms, rate;
	size_t size;
	uint64_t deadline_ns; /* fail if not done by then */
	/* results */
	uint64_t seq[BENCH_MAX_SRC]; /* messages sent, per destination */
	uint64_t sent;               /* messages, END excluded */
	uint64_t retries;
	uint64_t t_start, t_end; /* first send, END sent */
	int ok;
	char error[256];
};

/* Runs the send loop; returns 0, or -1 with tx->error set. */
int bench_tx_run(struct bench_tx *tx, bench_send_fn fn, void *arg);
/* Prints the sender's key=value fields (no newline). */
void bench_tx_print(const struct bench_tx *tx);

#endif
