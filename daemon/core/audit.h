/*
 * audit.h - the consistency audit of an assembled snapshot.
 *
 * The audit is pure: it is handed the cluster's declared nodes and
 * channels and what each node recorded, and it says whether the cut is
 * consistent.  Recorded channel messages are summarised as they stream in
 * (struct audit_seqs), so the daemon need not hold them in memory.
 */
#ifndef CUT_AUDIT_H
#define CUT_AUDIT_H

#include <stddef.h>
#include <stdint.h>

/* A running summary of the sender sequence numbers recorded on a channel. */
struct audit_seqs {
	uint64_t count;
	uint64_t first, last;
	int consecutive; /* every seq so far was the previous one plus one */
};

/* Resets a summary to "nothing recorded". */
void audit_seqs_init(struct audit_seqs *s);

/* Adds one recorded sequence number, in recording order. */
void audit_seqs_add(struct audit_seqs *s, uint64_t seq);

/* One recorded channel: what its receiver reported in its part. */
struct audit_channel {
	const char *src, *dst;
	uint64_t m; /* delivered before the receiver recorded */
	/* The highest seq among those m, or 0 meaning "equal to m".  With
	 * in-order delivery it is m; more means a message sent after the
	 * sender's cut, or out of order, was received before the cut. */
	uint64_t m_high;
	uint64_t n; /* sent before the sender recorded (the marker's count) */
	struct audit_seqs seqs;
};

struct audit_input {
	const char *const *nodes; /* declared nodes */
	size_t nnodes;
	const char *const *chan_src; /* declared channels, src[i] -> dst[i] */
	const char *const *chan_dst;
	size_t nchans;
	const char *const *parts; /* nodes whose part was recorded */
	size_t nparts;
	const struct audit_channel *recorded;
	size_t nrecorded;
};

struct audit_report {
	int consistent; /* 1 when every check below found nothing */
	size_t missing_parts, duplicate_parts, unknown_parts;
	size_t missing_channels, duplicate_channels, unknown_channels;
	uint64_t receive_without_send; /* sum over channels of m - n, m > n */
	uint64_t missing_messages;     /* in m+1..n but not recorded */
	uint64_t extra_messages;       /* recorded but not in m+1..n */
	size_t unordered_channels;     /* recorded out of sequence */
	/* The first problems found, as sentences, e.g. "channel p0 -> p1:
	 * 2 in-transit messages not recorded (m=3, n=5, recorded 0)". */
	char reason[512];
};

/*
 * Audits in and stores the verdict in *ret_report.  Every node and channel
 * must be recorded exactly once, and every channel's recorded messages must
 * be exactly m+1 .. n in order.  Cannot fail: it only compares.
 */
void audit_run(const struct audit_input *in, struct audit_report *ret_report);

#endif /* CUT_AUDIT_H */
