/*
 * metrics.c - a daemon's metrics in the Prometheus text format.
 *
 * Names follow Prometheus' conventions: the cutd_ prefix, base units in
 * the name (_bytes, _seconds), _total on counters.  Every sample has the
 * node label; channel samples also channel="p0->p1", src and dst, link
 * samples peer.  The numbers come from the coordinator's read-only
 * queries (coord.h: coord_peer_stats(), coord_link_stats(),
 * coord_counters(), coord_queue_stats()) and from the shell's own
 * counters, read on the loop's thread (http.c brings requests there).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cutd.h"
#include "control.h"
#include "http.h"
#include "metrics.h"

void
mbuf_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *p = cap <= MBUF_MAX ? realloc(b->p, cap) : NULL;
		if (p == NULL) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

void
mbuf_label(struct mbuf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			mbuf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			mbuf_printf(b, "\\n");
		else
			mbuf_printf(b, "%c", *s);
	}
}

void
metric_family(struct mbuf *b, const char *name, const char *type,
              const char *help)
{
	mbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void
metric_sample(struct mbuf *b, const char *name, const char *labels, uint64_t v)
{
	mbuf_printf(b, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
}

void
metric_histogram_ms(struct mbuf *b, const char *name, const char *labels,
                    const uint32_t *le_ms, size_t n, const uint64_t *count,
                    uint64_t sum_ms)
{
	const char *sep = labels[0] != '\0' ? "," : "";
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		total += count[i];
		mbuf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels,
		            sep, le_ms[i] / 1000.0, (unsigned long long)total);
	}
	total += count[n];
	mbuf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
	            (unsigned long long)total);
	mbuf_printf(b, "%s_sum{%s} %.3f\n", name, labels, sum_ms / 1000.0);
	mbuf_printf(b, "%s_count{%s} %llu\n", name, labels,
	            (unsigned long long)total);
}

/* What a channel family reads from a peer's stats; 0: not this one. */
enum chan_field {
	F_SENT,
	F_SENT_BYTES,
	F_RECV,
	F_RECV_BYTES,
	F_TAKEN,
	F_WINDOW,
	F_INFLIGHT,
	F_STALLS,
	F_RESENT,
	F_DUPS,
};

struct chan_family {
	const char *name, *type, *help;
	int out; /* of the channel self -> peer (else peer -> self) */
	enum chan_field f;
};

static const struct chan_family chan_families[] = {
    {"cutd_channel_messages_sent_total", "counter",
     "Application messages sent on the channel.", 1, F_SENT},
    {"cutd_channel_sent_bytes_total", "counter",
     "Payload bytes of the application messages sent on the channel.", 1,
     F_SENT_BYTES},
    {"cutd_channel_messages_received_total", "counter",
     "Application messages that arrived on the channel (duplicates not "
     "counted).",
     0, F_RECV},
    {"cutd_channel_received_bytes_total", "counter",
     "Payload bytes of the application messages that arrived on the "
     "channel.",
     0, F_RECV_BYTES},
    {"cutd_channel_messages_taken_total", "counter",
     "Messages of the channel the receiving application was handed.", 0,
     F_TAKEN},
    {"cutd_channel_window_used_bytes", "gauge",
     "Flow-control window in use: bytes sent and not yet taken by the "
     "receiving application, message_cost included.",
     1, F_WINDOW},
    {"cutd_channel_inflight_messages", "gauge",
     "Messages sent and not yet taken by the receiving application.", 1,
     F_INFLIGHT},
    {"cutd_channel_flow_control_stalls_total", "counter",
     "Sends refused for want of window (flow-control stalls).", 1, F_STALLS},
    {"cutd_channel_messages_resent_total", "counter",
     "Messages sent again after the receiving node restarted.", 1, F_RESENT},
    {"cutd_channel_duplicates_dropped_total", "counter",
     "Messages dropped on arrival as already had.", 0, F_DUPS},
};

static uint64_t
chan_value(const struct coord_peer_stats *ps, const struct coord_link_stats *ls,
           enum chan_field f)
{
	switch (f) {
	case F_SENT:
		return ps->sent;
	case F_SENT_BYTES:
		return ls->sent_bytes;
	case F_RECV:
		return ps->delivered;
	case F_RECV_BYTES:
		return ls->received_bytes;
	case F_TAKEN:
		return ps->taken;
	case F_WINDOW:
		return ps->window_used;
	case F_INFLIGHT:
		return ls->inflight_items;
	case F_STALLS:
		return ps->stalls;
	case F_RESENT:
		return ps->resent;
	case F_DUPS:
		return ps->dups;
	}
	return 0;
}

/* node="self",channel="a->b",src="a",dst="b" in buf. */
static void
chan_labels(char *buf, size_t len, const char *self, const char *src,
            const char *dst)
{
	snprintf(buf, len,
	         "node=\"%s\",channel=\"%s->%s\",src=\"%s\",dst=\"%s\"", self,
	         src, dst, src, dst);
}

static void
channels(struct cutd *d, struct mbuf *b)
{
	const struct config *cfg = d->cfg;
	char labels[256];

	for (size_t k = 0; k < sizeof(chan_families) / sizeof(*chan_families);
	     k++) {
		const struct chan_family *cf = &chan_families[k];
		metric_family(b, cf->name, cf->type, cf->help);
		for (size_t v = 0; v < cfg->nnodes; v++) {
			struct coord_peer_stats ps;
			struct coord_link_stats ls;
			if (v == d->self)
				continue;
			coord_peer_stats(d->coord, v, &ps);
			if (cf->out ? !ps.has_out : !ps.has_in)
				continue;
			coord_link_stats(d->coord, v, &ls);
			chan_labels(labels, sizeof(labels), d->name,
			            cf->out ? d->name : cfg->nodes[v].name,
			            cf->out ? cfg->nodes[v].name : d->name);
			metric_sample(b, cf->name, labels,
			              chan_value(&ps, &ls, cf->f));
		}
	}
}

static void
links(struct cutd *d, struct mbuf *b)
{
	static const char *const names[] = {"cutd_link_up",
	                                    "cutd_link_reconnects_total",
	                                    "cutd_link_items_resent_total",
	                                    "cutd_link_duplicate_items_total",
	                                    "cutd_link_unacked_items",
	                                    "cutd_link_held_items"};
	static const char *const types[] = {"gauge",   "counter", "counter",
	                                    "counter", "gauge",   "gauge"};
	static const char *const helps[] = {
	    "1 if the link to the peer is connected and acknowledging.",
	    "Connections to the peer opened after the first.",
	    "Link items sent again (after a reconnect, a hello or a resend "
	    "timeout); restarts from 0 when the peer restarts.",
	    "Link items from the peer dropped as duplicates; restarts from 0 "
	    "when the peer restarts.",
	    "Items sent to the peer and not yet acknowledged (queue depth).",
	    "Early items from the peer held until the gap before them fills."};
	char labels[128];

	for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++) {
		metric_family(b, names[k], types[k], helps[k]);
		for (size_t v = 0; v < d->cfg->nnodes; v++) {
			struct coord_link_stats ls;
			uint64_t x;
			if (v == d->self)
				continue;
			coord_link_stats(d->coord, v, &ls);
			x = k == 0   ? (uint64_t)coord_peer_alive(d->coord, v)
			    : k == 1 ? ls.reconnects
			    : k == 2 ? ls.items_resent
			    : k == 3 ? ls.items_dup
			    : k == 4 ? ls.unacked_items
			             : ls.held_items;
			snprintf(labels, sizeof(labels),
			         "node=\"%s\",peer=\"%s\"", d->name,
			         d->cfg->nodes[v].name);
			metric_sample(b, names[k], labels, x);
		}
	}
}

/* The database file and its WAL, in bytes. */
static uint64_t
db_size(const char *path)
{
	char wal[4200];
	struct stat st;
	uint64_t n = 0;

	if (stat(path, &st) == 0)
		n += (uint64_t)st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &st) == 0)
		n += (uint64_t)st.st_size;
	return n;
}

/* A family of one sample, labelled node only. */
struct single {
	const char *name, *type, *help;
	uint64_t v;
};

static void
singles(struct mbuf *b, const char *node, const struct single *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		metric_family(b, m[i].name, m[i].type, m[i].help);
		metric_sample(b, m[i].name, node, m[i].v);
	}
}

static void
snapshots(struct cutd *d, struct mbuf *b, const char *node)
{
	struct coord_counters n;
	char labels[128];

	coord_counters(d->coord, &n);
	const struct single m[] = {
	    {"cutd_snapshots_started_total", "counter",
	     "Snapshots this node initiated.", n.started},
	    {"cutd_snapshots_completed_total", "counter",
	     "Snapshots this node initiated that completed.", n.completed},
	    {"cutd_snapshots_in_flight", "gauge",
	     "Snapshots this node initiated that have not ended.",
	     coord_initiated_in_flight(d->coord)},
	    {"cutd_snapshots_participating", "gauge",
	     "Snapshots in progress at this node, started here or elsewhere.",
	     coord_in_progress(d->coord)},
	    {"cutd_recorded_messages_total", "counter",
	     "In-flight channel messages this node recorded in snapshots.",
	     n.recorded_msgs},
	    {"cutd_recorded_bytes_total", "counter",
	     "Payload bytes of the channel messages this node recorded.",
	     n.recorded_bytes},
	    {"cutd_database_commit_failures_total", "counter",
	     "Turns whose database transaction did not commit.",
	     n.commit_failures},
	};

	singles(b, node, m, sizeof(m) / sizeof(*m));
	metric_family(b, "cutd_snapshots_aborted_total", "counter",
	              "Snapshots this node initiated that were aborted, by "
	              "the class of their root cause.");
	for (int k = 0; k < COORD_ABORT_CLASSES; k++) {
		snprintf(labels, sizeof(labels), "%s,reason=\"%s\"", node,
		         coord_abort_class_name((enum coord_abort_class)k));
		metric_sample(b, "cutd_snapshots_aborted_total", labels,
		              n.aborted[k]);
	}
	metric_family(b, "cutd_snapshot_duration_seconds", "histogram",
	              "Time from start to complete of the snapshots this node "
	              "initiated.");
	metric_histogram_ms(b, "cutd_snapshot_duration_seconds", node,
	                    coord_duration_le_ms, COORD_DURATION_BUCKETS,
	                    n.duration_count, n.duration_sum_ms);
}

static void
node_metrics(struct cutd *d, struct mbuf *b, const char *node)
{
	static const char *const sources[] = {"peer", "app", "control"};
	struct coord_queue_stats q;
	struct coord_restore_view rv;
	char labels[160];

	coord_queue_stats(d->coord, &q);
	coord_restore_view(d->coord, &rv);
	const struct single m[] = {
	    {"cutd_app_connected", "gauge", "1 if an application is connected.",
	     (uint64_t)coord_app_connected(d->coord)},
	    {"cutd_app_queue_messages", "gauge",
	     "Deliveries queued for the application (queue depth).",
	     q.down_items},
	    {"cutd_app_queue_bytes", "gauge",
	     "Payload bytes of the deliveries queued for the application.",
	     q.down_bytes},
	    {"cutd_database_size_bytes", "gauge",
	     "Size of the database file and its WAL.",
	     db_size(d->cfg->nodes[d->self].database)},
	    {"cutd_storage_degraded", "gauge",
	     "1 while the database does not take writes.",
	     coord_degraded(d->coord)[0] != '\0'},
	    {"cutd_storage_damaged", "gauge",
	     "1 once the database was found damaged or unreadable.",
	     control_damaged(d)[0] != '\0'},
	    {"cutd_restore_generation", "gauge",
	     "The restore generation this node is at (restores applied).",
	     rv.generation},
	    {"cutd_restore_running", "gauge",
	     "1 while a restore is being voted, prepared or confirmed here.",
	     (uint64_t)rv.running},
	    {"cutd_restore_missed", "gauge",
	     "1 if this node took its generation without its restore.",
	     rv.adopted != 0},
	    {"cutd_old_generation_batches_total", "counter",
	     "Batches dropped as from before a restore.", rv.old_batches},
	};
	const uint64_t bad[] = {coord_bad_peer(d->coord),
	                        coord_bad_app(d->coord), d->bad_control};

	singles(b, node, m, sizeof(m) / sizeof(*m));
	metric_family(b, "cutd_bad_frames_total", "counter",
	              "Frames dropped as malformed, by where they came from.");
	for (size_t k = 0; k < 3; k++) {
		snprintf(labels, sizeof(labels), "%s,source=\"%s\"", node,
		         sources[k]);
		metric_sample(b, "cutd_bad_frames_total", labels, bad[k]);
	}
}

/* The cluster file's conditions, judged on this node's scheduled
 * snapshots: how often each held, did not, or could not be judged. */
static void
conditions(struct cutd *d, struct mbuf *b, const char *node)
{
	static const char *const results[] = {"held", "not_held", "failed"};

	if (d->cfg->nconds == 0)
		return;
	metric_family(b, "cutd_condition_evaluations_total", "counter",
	              "Evaluations of the cluster file's conditions on "
	              "scheduled snapshots, by result.");
	for (size_t i = 0; i < d->cfg->nconds; i++) {
		const struct cond_stat *st = &d->judge.stats[i];
		const uint64_t v[] = {st->held, st->not_held, st->failed};
		for (size_t k = 0; k < 3; k++) {
			mbuf_printf(b,
			            "cutd_condition_evaluations_total{%s,"
			            "condition=\"",
			            node);
			mbuf_label(b, d->cfg->conds[i].name);
			mbuf_printf(b, "\",result=\"%s\"} %" PRIu64 "\n",
			            results[k], v[k]);
		}
	}
}

void
metrics_collect(struct cutd *d, struct mbuf *b)
{
	char node[64];
	struct http_counts hc;

	snprintf(node, sizeof(node), "node=\"%s\"", d->name);
	metric_family(b, "cutd_build_info", "gauge",
	              "The daemon's version; always 1.");
	mbuf_printf(b, "cutd_build_info{%s,cluster=\"", node);
	mbuf_label(b, d->cfg->cluster);
	mbuf_printf(b, "\",version=\"%s\"} 1\n", CUTD_VERSION);
	metric_family(b, "cutd_uptime_seconds", "gauge",
	              "Seconds since the daemon started.");
	metric_sample(b, "cutd_uptime_seconds", node,
	              (uint64_t)(cutd_now_ms() - d->start_ms) / 1000);
	channels(d, b);
	links(d, b);
	snapshots(d, b, node);
	node_metrics(d, b, node);
	conditions(d, b, node);
	http_counts(d, &hc);
	metric_family(b, "cutd_http_requests_total", "counter",
	              "HTTP requests answered, by status class.");
	for (int k = 0; k < HTTP_CLASSES; k++) {
		char labels[96];
		snprintf(labels, sizeof(labels), "%s,code=\"%dxx\"", node,
		         k + 1);
		metric_sample(b, "cutd_http_requests_total", labels,
		              hc.answered[k]);
	}
}
