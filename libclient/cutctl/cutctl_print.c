/*
 * cutctl_print.c - cutctl's output for people: snapshots, lists, node
 * status and the schedule as text.  The JSON of the same replies is
 * ctljson.c's (daemon/base), which the daemon's HTTP API shares, written
 * with cutjson.h's fixed flags.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "cutctl.h"
#include "cutjson.h"
#include "text.h"

/* How a state or payload is abbreviated in `show`. */
#define STATE_WIDTH    60
#define PAYLOAD_WIDTH  24
#define SHOWN_MESSAGES 5

uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* 1 if s is a participant's copy whose outcome has not arrived. */
static int
outcome_unknown(const Cut__V1__SnapshotInfo *s)
{
	return s->has_outcome_known && !s->outcome_known;
}

/* Writes a duration in ms readably: "15 ms", "2.4 s", "3 min 20 s". */
static void
duration(FILE *f, uint64_t ms)
{
	if (ms < 1000)
		fprintf(f, "%" PRIu64 " ms", ms);
	else if (ms < 60000)
		fprintf(f, "%.1f s", (double)ms / 1000);
	else
		fprintf(f, "%" PRIu64 " min %" PRIu64 " s", ms / 60000,
		        ms / 1000 % 60);
}

/* The audit verdict in a few words. */
static void
verdict(FILE *f, const Cut__V1__SnapshotInfo *s)
{
	if (outcome_unknown(s) &&
	    s->status != CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS)
		fprintf(f,
		        "outcome not heard from the initiator %s yet "
		        "(this node's part: %s)",
		        s->initiator,
		        s->part_status != NULL ? s->part_status : "?");
	else if (s->status == CUT__V1__SNAPSHOT_INFO__STATUS__ABORTED)
		fprintf(f, "aborted: %s", s->reason);
	else if (s->audit == NULL)
		fputs("audit pending", f);
	else if (s->audit->consistent)
		fputs("audit: consistent", f);
	else
		fprintf(f, "audit: INCONSISTENT: %s", s->audit->reason);
}

void
print_summary_line(FILE *f, const Cut__V1__SnapshotInfo *s)
{
	fprintf(f, "%s %s", s->id, snapshot_status_word(s));
	if (s->finished_ms >= s->started_ms && s->finished_ms > 0) {
		fputs(" in ", f);
		duration(f, s->finished_ms - s->started_ms);
	}
	fprintf(f, ", %u/%u parts, ", s->parts_received, s->parts_expected);
	verdict(f, s);
	fputc('\n', f);
}

/* Writes bytes for a person: printable UTF-8 text up to width characters
 * (cut with "..."), else "(N bytes)". */
static void
abbrev(FILE *f, const uint8_t *data, size_t len, size_t width)
{
	size_t i;

	if (!utf8_valid(data, len) || len == 0) {
		fprintf(f, "(%zu bytes)", len);
		return;
	}
	for (i = 0; i < len; i++)
		if (data[i] < 0x20 || data[i] == 0x7f) {
			fprintf(f, "(%zu bytes of text)", len);
			return;
		}
	if (len <= width) {
		fwrite(data, 1, len, f);
		return;
	}
	/* Cut at a character boundary. */
	i = width - 3;
	while (i > 0 && (data[i] & 0xc0) == 0x80)
		i--;
	fwrite(data, 1, i, f);
	fputs("...", f);
}

static void
nodes_human(FILE *f, const Cut__V1__SnapshotInfo *s)
{
	const Cut__V1__NodeState *n;
	size_t i;

	fprintf(f, "\nnodes (%zu)\n", s->n_nodes);
	for (i = 0; i < s->n_nodes; i++) {
		n = s->nodes[i];
		fprintf(f, "  %-10s %-24s ", n->node,
		        n->content_type != NULL ? n->content_type : "-");
		if (n->has_state)
			abbrev(f, n->state.data, n->state.len, STATE_WIDTH);
		else
			fprintf(f, "(%" PRIu64 " bytes)", n->state_size);
		fputc('\n', f);
	}
}

static void
channels_human(FILE *f, const Cut__V1__SnapshotInfo *s)
{
	const Cut__V1__ChannelState *c;
	uint64_t total = 0;
	size_t i, k;

	fprintf(f,
	        "\nchannels (%zu): m delivered before the receiver "
	        "recorded, n sent before the sender recorded\n",
	        s->n_channels);
	for (i = 0; i < s->n_channels; i++) {
		c = s->channels[i];
		total += c->count;
		fprintf(f,
		        "  %s -> %-8s m=%-6" PRIu64 " n=%-6" PRIu64
		        " in transit %" PRIu64,
		        c->src, c->dst, c->m, c->n, c->count);
		for (k = 0; k < c->n_messages && k < SHOWN_MESSAGES; k++) {
			fputs(k == 0 ? ": " : ", ", f);
			abbrev(f, c->messages[k]->payload.data,
			       c->messages[k]->payload.len, PAYLOAD_WIDTH);
		}
		if (c->count > k && k > 0)
			fprintf(f, ", ... %" PRIu64 " more", c->count - k);
		fputc('\n', f);
	}
	fprintf(f, "  in transit in all: %" PRIu64 "\n", total);
}

void
print_snapshot_human(FILE *f, const Cut__V1__SnapshotInfo *s)
{
	time_t t = (time_t)(s->started_ms / 1000);
	char when[64] = "?";
	struct tm tm;

	if (localtime_r(&t, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "snapshot %s\n", s->id);
	fprintf(f, "  initiator  %s\n", s->initiator);
	fprintf(f, "  status     %s\n", snapshot_status_word(s));
	fprintf(f, "  started    %s.%03u\n", when,
	        (unsigned)(s->started_ms % 1000));
	if (s->finished_ms >= s->started_ms && s->finished_ms > 0) {
		fputs("  duration   ", f);
		duration(f, s->finished_ms - s->started_ms);
		fputc('\n', f);
	}
	fprintf(f, "  parts      %u/%u\n", s->parts_received,
	        s->parts_expected);
	if (s->has_holds_all && !s->holds_all)
		fprintf(f,
		        "  held here  this node's part only (%s); the "
		        "initiator %s holds the whole snapshot\n",
		        s->part_status != NULL ? s->part_status : "recording",
		        s->initiator);
	if (s->keep)
		fputs("  kept       retention does not delete it\n", f);
	if (s->channels_recording > 0)
		fprintf(f, "  recording  %u channels\n", s->channels_recording);
	fputs("  verdict    ", f);
	verdict(f, s);
	fputc('\n', f);
	nodes_human(f, s);
	channels_human(f, s);
	if (s->n_conditions > 0)
		fprintf(f, "conditions (%zu)\n", s->n_conditions);
	for (size_t i = 0; i < s->n_conditions; i++)
		fprintf(f, "  %-16s %-14s %s\n", s->conditions[i]->name,
		        !s->conditions[i]->has_held ? "not judged"
		        : s->conditions[i]->held    ? "holds"
		                                    : "does not hold",
		        s->conditions[i]->detail);
}

void
print_list_human(FILE *f, const Cut__V1__ListReply *l)
{
	const Cut__V1__SnapshotInfo *s;
	char when[32];
	struct tm tm;
	time_t t;
	size_t i;

	fprintf(f, "%-16s %-10s %-12s %-19s %10s %7s  %s\n", "ID", "INITIATOR",
	        "STATUS", "STARTED", "DURATION", "PARTS", "AUDIT");
	for (i = 0; i < l->n_snapshots; i++) {
		s = l->snapshots[i];
		t = (time_t)(s->started_ms / 1000);
		if (localtime_r(&t, &tm) == NULL ||
		    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
			strcpy(when, "?");
		fprintf(f, "%-16s %-10s %-12s %-19s ", s->id, s->initiator,
		        snapshot_status_word(s), when);
		if (s->finished_ms >= s->started_ms && s->finished_ms > 0)
			fprintf(f, "%7" PRIu64 " ms",
			        s->finished_ms - s->started_ms);
		else
			fprintf(f, "%10s", "-");
		fprintf(f, " %3u/%-3u  %s%s\n", s->parts_received,
		        s->parts_expected,
		        outcome_unknown(s) &&
		                s->status !=
		                    CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS
		            ? "outcome?"
		        : s->audit == NULL     ? "-"
		        : s->audit->consistent ? "consistent"
		                               : "INCONSISTENT",
		        s->keep ? " kept" : "");
	}
}

/* The TLS lines of a peer, when its links use TLS. */
static void
print_peer_tls(FILE *f, const Cut__V1__PeerStatus *p, uint64_t now)
{
	if (!p->has_tls || !p->tls)
		return;
	fprintf(f, "             tls, %s, %" PRIu64 " auth failure%s\n",
	        p->authenticated ? "authenticated" : "not authenticated",
	        p->auth_failures, p->auth_failures == 1 ? "" : "s");
	if (p->last_auth_error == NULL)
		return;
	fprintf(f, "             last auth error ");
	duration(f,
	         now > p->last_auth_error_ms ? now - p->last_auth_error_ms : 0);
	fprintf(f, " ago: %s\n", p->last_auth_error);
}

/* 1 if c leaves node (this node sends on it), 0 if it arrives here. */
static int
outgoing(const Cut__V1__StatusReply *s, const Cut__V1__ChannelStatus *c)
{
	return strcmp(c->src, s->node) == 0;
}

/* The channels of `status`, a table per direction, each with the
 * columns that apply to it: a sender counts what it sent and what the
 * receiving application took of it, a receiver what arrived and what
 * its application took. */
static void
channels_status_human(FILE *f, const Cut__V1__StatusReply *s)
{
	const Cut__V1__ChannelStatus *c;
	size_t i, n = 0;

	for (i = 0; i < s->n_channels; i++)
		n += outgoing(s, s->channels[i]);
	fprintf(f,
	        "\noutgoing channels (%zu): acked = taken by the receiving "
	        "application\n  %-10s %10s %10s %8s %12s %7s %7s %7s\n",
	        n, "to", "sent", "acked", "queued", "window_bytes", "stalls",
	        "resent", "dups");
	for (i = 0; i < s->n_channels; i++) {
		c = s->channels[i];
		if (outgoing(s, c))
			fprintf(f,
			        "  %-10s %10" PRIu64 " %10" PRIu64 " %8" PRIu64
			        " %12" PRIu64 " %7" PRIu64 " %7" PRIu64
			        " %7" PRIu64 "\n",
			        c->dst, c->sent, c->acked, c->queued,
			        c->window_used_bytes, c->stalls, c->resent,
			        c->duplicates);
	}
	fprintf(f,
	        "\nincoming channels (%zu): waiting = delivered here, not yet "
	        "taken\n  %-10s %10s %10s %8s %7s\n",
	        s->n_channels - n, "from", "delivered", "taken", "waiting",
	        "dups");
	for (i = 0; i < s->n_channels; i++) {
		c = s->channels[i];
		if (!outgoing(s, c))
			fprintf(f,
			        "  %-10s %10" PRIu64 " %10" PRIu64 " %8" PRIu64
			        " %7" PRIu64 "\n",
			        c->src, c->delivered, c->taken,
			        c->delivered > c->taken
			            ? c->delivered - c->taken
			            : 0,
			        c->duplicates);
	}
}

void
print_status_human(FILE *f, const Cut__V1__StatusReply *s, uint64_t now)
{
	const Cut__V1__PeerStatus *p;
	size_t i;

	fprintf(f, "node %s in cluster %s, cutd %s, up ", s->node, s->cluster,
	        s->version);
	duration(f, s->uptime_ms);
	fprintf(f, "\napplication: %s\n",
	        s->app_connected ? "connected" : "not connected");
	if (s->storage_degraded != NULL)
		fprintf(f, "storage: DEGRADED: %s (new snapshots refused)\n",
		        s->storage_degraded);
	if (s->storage_damaged != NULL)
		fprintf(f,
		        "storage: DAMAGED: %s (new snapshots refused; stop "
		        "cutd and move the database aside)\n",
		        s->storage_damaged);
	if (s->storage_degraded == NULL && s->storage_damaged == NULL)
		fputs("storage: ok\n", f);
	fprintf(f, "\npeers (%zu)\n", s->n_peers);
	for (i = 0; i < s->n_peers; i++) {
		p = s->peers[i];
		fprintf(f, "  %-10s %-13s", p->node,
		        p->connected ? "connected" : "disconnected");
		if (p->last_seen_ms == 0) {
			fputs(" never seen", f);
		} else {
			fputs(" last seen ", f);
			duration(f, now > p->last_seen_ms
			                ? now - p->last_seen_ms
			                : 0);
			fputs(" ago", f);
		}
		if (p->refused_connections > 0)
			fprintf(f, ", %" PRIu64 " impostor connections ignored",
			        p->refused_connections);
		fputc('\n', f);
		print_peer_tls(f, p, now);
	}
	channels_status_human(f, s);
	fputs("\nsnapshots in progress:", f);
	for (i = 0; i < s->n_snapshots_in_progress; i++)
		fprintf(f, " %s", s->snapshots_in_progress[i]);
	fprintf(f,
	        "%s\nbad frames dropped: %" PRIu64 " (peer %" PRIu64
	        ", app %" PRIu64 ", control %" PRIu64 ")\n",
	        s->n_snapshots_in_progress == 0 ? " none" : "", s->bad_frames,
	        s->bad_frames_peer, s->bad_frames_app, s->bad_frames_control);
	fprintf(f,
	        "control calls refused: %" PRIu64 " for permission, %" PRIu64
	        " starts over the limits\n",
	        s->calls_denied, s->starts_limited);
	if (s->schedule != NULL)
		print_schedule_human(f, s->schedule, now);
	if (s->forgets_pending > 0)
		fprintf(f,
		        "deletions not yet confirmed by participants: %" PRIu64
		        "\n",
		        s->forgets_pending);
	if (s->has_restore_generation)
		fprintf(f,
		        "restore: generation %" PRIu64 ", %s; application %s "
		        "restore%s%s%s%s\n",
		        s->restore_generation,
		        s->restore_phase ? s->restore_phase : "idle",
		        s->app_restorable ? "can" : "cannot",
		        s->last_restore ? "; last: " : "",
		        s->last_restore ? s->last_restore : "",
		        s->last_restore ? " " : "",
		        s->last_restore_result ? s->last_restore_result : "");
	if (s->restore_app_waits)
		fprintf(f, "restore: WAITING for an application that can take "
		           "it: this node's application is handed nothing until "
		           "one that registered a restore callback "
		           "(cut_set_restore_callback()) connects\n");
	if (s->has_restore_missed && s->restore_missed)
		fprintf(f,
		        "restore: MISSED generation %" PRIu64
		        ": this node's application was not restored; restore "
		        "again\n",
		        s->restore_missed);
	if (s->tls_listener_failures || s->auth_failures_unknown ||
	    s->unauthenticated_batches)
		fprintf(f,
		        "tls: %" PRIu64
		        " handshakes failed at the listener, %" PRIu64
		        " hellos from unknown nodes refused, %" PRIu64
		        " unauthenticated batches dropped\n",
		        s->tls_listener_failures, s->auth_failures_unknown,
		        s->unauthenticated_batches);
	if (s->tls_listener_restarts)
		fprintf(
		    f,
		    "tls: listener started again %" PRIu64
		    " times (a connection closed while nng negotiated it)\n",
		    s->tls_listener_restarts);
	if (s->control_listener_restarts)
		fprintf(f,
		        "control socket: listener started again %" PRIu64
		        " times (a client went away while nng negotiated it)\n",
		        s->control_listener_restarts);
	if (s->app_listener_restarts)
		fprintf(f,
		        "application socket: listener started again %" PRIu64
		        " times (a client went away while nng negotiated it)\n",
		        s->app_listener_restarts);
	for (i = 0; i < s->n_conditions; i++) {
		const Cut__V1__ConditionStatus *c = s->conditions[i];
		if (i == 0)
			fputs("conditions (held / not held / not judged, and "
			      "the last):\n",
			      f);
		fprintf(f, "  %-16s %" PRIu64 " / %" PRIu64 " / %" PRIu64 "  ",
		        c->name, c->held, c->not_held, c->failed);
		if (c->last_snapshot_id == NULL)
			fputs("none judged yet\n", f);
		else
			fprintf(f, "%s %s (%s)\n", c->last_snapshot_id,
			        !c->has_last_held ? "not judged"
			        : c->last_held    ? "holds"
			                          : "does not hold",
			        c->last_detail != NULL ? c->last_detail : "");
	}
}

void
print_schedule_human(FILE *f, const Cut__V1__ScheduleStatus *s, uint64_t now)
{
	if (!s->configured) {
		fputs("schedule: none (the cluster file has no [schedule])\n",
		      f);
		return;
	}
	fputs("schedule: every ", f);
	duration(f, s->interval_ms);
	fprintf(f, ", initiator %s, timeout ", s->initiator);
	duration(f, s->timeout_ms);
	fprintf(f, "; %s at this node\n", s->paused ? "PAUSED" : "running");
	fprintf(f,
	        "  ticks here %" PRIu64 ": %" PRIu64 " started, %" PRIu64
	        " skipped (the last one still running), %" PRIu64
	        " while paused, %" PRIu64 " failed\n",
	        s->ticks, s->started, s->skipped, s->paused_ticks, s->failed);
	if (s->last_snapshot_id != NULL)
		fprintf(f, "  last started %s\n", s->last_snapshot_id);
	if (s->next_tick_ms > now) {
		fputs("  next tick here in ", f);
		duration(f, s->next_tick_ms - now);
		fputc('\n', f);
	}
}
