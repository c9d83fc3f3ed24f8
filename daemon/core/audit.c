/*
 * audit.c - checks that an assembled snapshot is a consistent cut.
 *
 * Checks, in order: each declared node has exactly one part; each declared
 * channel is recorded exactly once and nothing undeclared is; on each
 * channel m <= n (no message received before the cut that was sent after
 * it) and the recorded messages are exactly m+1 .. n.  The quadratic name
 * comparisons are deliberate: clusters have tens of nodes, and the audit
 * then needs no memory of its own.
 */
#include "audit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
audit_seqs_init(struct audit_seqs *s)
{
	memset(s, 0, sizeof(*s));
	s->consecutive = 1;
}

void
audit_seqs_add(struct audit_seqs *s, uint64_t seq)
{
	if (s->count == 0)
		s->first = seq;
	else if (seq != s->last + 1)
		s->consecutive = 0;
	s->last = seq;
	s->count++;
}

/* Appends a sentence to the report's reason, silently truncating. */
static void
note(struct audit_report *r, const char *fmt, ...)
{
	size_t len = strlen(r->reason);
	va_list ap;

	if (len + 2 >= sizeof(r->reason))
		return;
	if (len > 0) {
		memcpy(r->reason + len, "; ", 3);
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(r->reason + len, sizeof(r->reason) - len, fmt, ap);
	va_end(ap);
}

static size_t
count_name(const char *const *v, size_t n, const char *name)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += strcmp(v[i], name) == 0;
	return k;
}

static void
check_parts(const struct audit_input *in, struct audit_report *r)
{
	for (size_t i = 0; i < in->nnodes; i++) {
		size_t k = count_name(in->parts, in->nparts, in->nodes[i]);
		if (k == 0) {
			r->missing_parts++;
			note(r, "node %s: no part recorded", in->nodes[i]);
		} else if (k > 1) {
			r->duplicate_parts++;
			note(r, "node %s: %zu parts recorded", in->nodes[i], k);
		}
	}
	for (size_t i = 0; i < in->nparts; i++)
		if (count_name(in->nodes, in->nnodes, in->parts[i]) == 0) {
			r->unknown_parts++;
			note(r, "node %s: not in the cluster", in->parts[i]);
		}
}

static size_t
count_chan(const struct audit_input *in, const char *src, const char *dst)
{
	size_t k = 0;

	for (size_t i = 0; i < in->nrecorded; i++)
		k += strcmp(in->recorded[i].src, src) == 0 &&
		     strcmp(in->recorded[i].dst, dst) == 0;
	return k;
}

static int
declared(const struct audit_input *in, const char *src, const char *dst)
{
	for (size_t i = 0; i < in->nchans; i++)
		if (strcmp(in->chan_src[i], src) == 0 &&
		    strcmp(in->chan_dst[i], dst) == 0)
			return 1;
	return 0;
}

static void
check_channel_set(const struct audit_input *in, struct audit_report *r)
{
	for (size_t i = 0; i < in->nchans; i++) {
		size_t k = count_chan(in, in->chan_src[i], in->chan_dst[i]);
		if (k == 0) {
			r->missing_channels++;
			note(r, "channel %s -> %s: not recorded",
			     in->chan_src[i], in->chan_dst[i]);
		} else if (k > 1) {
			r->duplicate_channels++;
			note(r, "channel %s -> %s: recorded %zu times",
			     in->chan_src[i], in->chan_dst[i], k);
		}
	}
	for (size_t i = 0; i < in->nrecorded; i++)
		if (!declared(in, in->recorded[i].src, in->recorded[i].dst)) {
			r->unknown_channels++;
			note(r, "channel %s -> %s: not in the cluster",
			     in->recorded[i].src, in->recorded[i].dst);
		}
}

/* Compares one channel's recorded run of seqs with m+1 .. n. */
static void
check_messages(const struct audit_channel *c, struct audit_report *r)
{
	const struct audit_seqs *s = &c->seqs;
	uint64_t want = c->n > c->m ? c->n - c->m : 0;
	uint64_t lo, hi, overlap = 0;
	uint64_t high = c->m_high ? c->m_high : c->m;

	if (c->m > c->n || high > c->n) {
		uint64_t k = c->m > c->n ? c->m - c->n : 1;
		r->receive_without_send += k;
		note(r,
		     "channel %s -> %s: %llu messages received before the cut "
		     "but sent after it (m=%llu, n=%llu)",
		     c->src, c->dst, (unsigned long long)k,
		     (unsigned long long)c->m, (unsigned long long)c->n);
	} else if (high != c->m) {
		r->unordered_channels++;
		note(r,
		     "channel %s -> %s: messages delivered out of sequence "
		     "before the cut (m=%llu, highest seq %llu)",
		     c->src, c->dst, (unsigned long long)c->m,
		     (unsigned long long)high);
		return;
	}
	if (s->count > 0 && !s->consecutive) {
		r->unordered_channels++;
		note(r, "channel %s -> %s: recorded messages out of sequence",
		     c->src, c->dst);
		return;
	}
	if (s->count > 0 && want > 0) {
		lo = s->first > c->m + 1 ? s->first : c->m + 1;
		hi = s->last < c->n ? s->last : c->n;
		overlap = hi >= lo ? hi - lo + 1 : 0;
	}
	if (want > overlap) {
		r->missing_messages += want - overlap;
		note(r,
		     "channel %s -> %s: %llu in-transit messages not recorded "
		     "(m=%llu, n=%llu, recorded %llu)",
		     c->src, c->dst, (unsigned long long)(want - overlap),
		     (unsigned long long)c->m, (unsigned long long)c->n,
		     (unsigned long long)s->count);
	}
	if (s->count > overlap) {
		r->extra_messages += s->count - overlap;
		note(r,
		     "channel %s -> %s: %llu recorded messages outside "
		     "m+1..n (m=%llu, n=%llu)",
		     c->src, c->dst, (unsigned long long)(s->count - overlap),
		     (unsigned long long)c->m, (unsigned long long)c->n);
	}
}

void
audit_run(const struct audit_input *in, struct audit_report *ret_report)
{
	struct audit_report r;

	memset(&r, 0, sizeof(r));
	check_parts(in, &r);
	check_channel_set(in, &r);
	for (size_t i = 0; i < in->nrecorded; i++)
		check_messages(&in->recorded[i], &r);
	r.consistent = r.missing_parts == 0 && r.duplicate_parts == 0 &&
	               r.unknown_parts == 0 && r.missing_channels == 0 &&
	               r.duplicate_channels == 0 && r.unknown_channels == 0 &&
	               r.receive_without_send == 0 && r.missing_messages == 0 &&
	               r.extra_messages == 0 && r.unordered_channels == 0;
	*ret_report = r;
}
