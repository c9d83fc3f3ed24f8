/*
 * metrics.h - the Prometheus text format (version 0.0.4) of a daemon's
 * counters (metrics.c), served at /metrics by http.c.
 *
 * A struct mbuf grows as text is appended; an allocation that fails
 * marks it (oom) and keeps what it had, so that a caller checks once at
 * the end.  The family and sample writers only format: what the numbers
 * are is metrics_collect()'s business, on the loop's thread.
 */
#ifndef CUT_METRICS_H
#define CUT_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct cutd;

/* Text being built; free p with free().  At most MBUF_MAX bytes. */
struct mbuf {
	char *p;
	size_t len, cap;
	int oom; /* an append failed or would pass MBUF_MAX */
};
#define MBUF_MAX (64u * 1024 * 1024)

/* Appends printf-style text to b. */
void mbuf_printf(struct mbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s as a label value, escaped as the format wants (\\, \", \n). */
void mbuf_label(struct mbuf *b, const char *s);

/* The # HELP and # TYPE lines of family name; type is "counter",
 * "gauge" or "histogram". */
void metric_family(struct mbuf *b, const char *name, const char *type,
                   const char *help);
/* One sample: name{labels} v, labels being ready-made text such as
 * node="p0",channel="p0->p1" (or "" for none). */
void metric_sample(struct mbuf *b, const char *name, const char *labels,
                   uint64_t v);
/* A histogram of values in milliseconds written in seconds: count[i]
 * values fell in bucket i (at most le_ms[i], above le_ms[i-1]), count[n]
 * beyond le_ms[n-1]; sum_ms their sum.  Writes the cumulative
 * name_bucket{...,le="..."} lines, +Inf last, then name_sum and
 * name_count. */
void metric_histogram_ms(struct mbuf *b, const char *name, const char *labels,
                         const uint32_t *le_ms, size_t n, const uint64_t *count,
                         uint64_t sum_ms);

/* Writes every metric of daemon d to b.  Loop thread only: it reads the
 * coordinator. */
void metrics_collect(struct cutd *d, struct mbuf *b);

#endif /* CUT_METRICS_H */
