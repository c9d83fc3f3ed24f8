/*
 * cutctl_print.c - cutctl's output: snapshots, lists and node status, as
 * text for people and as JSON for scripts.
 *
 * The JSON shapes are a contract: members are only ever added, never
 * renamed or removed.  Every command prints one document:
 *
 *   snapshot            {"id": S, "started_ms": N}
 *   snapshot --wait,    SUMMARY
 *   wait ID
 *   list                {"snapshots": [SUMMARY...]}      newest first
 *   show ID             SUMMARY + {"nodes": [NODE...],
 *                                  "channels": [CHANNEL...]}
 *   export ID           as show, and each NODE has "state": PAYLOAD|null,
 *                       each CHANNEL "messages": [{"seq": N,
 *                       "content_type": S|null, "payload": PAYLOAD}...]
 *   status              {"node", "cluster", "version": S, "uptime_ms": N,
 *                        "app_connected": B, "storage_degraded": S|null,
 *                        "peers": [{"node": S, "connected": B,
 *                                   "last_seen_ms",
 *                                   "refused_connections": N, and for TLS
 *                                   links "tls": true,
 *                                   "authenticated": B,
 *                                   "auth_failures": N,
 *                                   "last_auth_error": S|null,
 *                                   "last_auth_error_ms": N}...],
 *                        "channels": [{"src", "dst": S, "sent", "acked",
 *                                      "delivered", "queued", "taken",
 *                                      "window_used_bytes", "stalls",
 *                                      "resent", "duplicates": N}
 *                                     ...],
 *                        "snapshots_in_progress": [S...],
 *                        "bad_frames", "bad_frames_peer",
 *                        "bad_frames_app", "bad_frames_control": N,
 *                        "calls_denied", "starts_limited",
 *                        "tls_listener_failures",
 *                        "auth_failures_unknown",
 *                        "unauthenticated_batches": N}
 *   delete ID           {"deleted": S}
 *
 *   SUMMARY  {"id", "initiator": S, "status": "in_progress"|"complete"|
 *             "aborted", "reason": S, "started_ms", "finished_ms": N,
 *             "duration_ms": N|null, "deadline_ms": N|null,
 *             "parts_received", "parts_expected", "channels_recording": N,
 *             "audit": {"consistent": B, "reason": S}|null}
 *   NODE     {"node": S, "content_type": S|null, "state_size": N}
 *   CHANNEL  {"src", "dst": S, "m", "n", "count": N}
 *   PAYLOAD  {"encoding": "utf-8"|"base64", "data": S}: the bytes as a
 *            string when they are valid UTF-8, else in base64
 *
 * Times are Unix milliseconds.  Output is deterministic for given data.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "cutctl.h"
#include "json.h"

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

const char *
snapshot_status_word(const Cut__V1__SnapshotInfo *s)
{
	switch (s->status) {
	case CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS:
		return "in_progress";
	case CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE:
		return "complete";
	case CUT__V1__SNAPSHOT_INFO__STATUS__ABORTED:
		return "aborted";
	default:
		return "unknown";
	}
}

/* The summary members of s, inside an object. */
static void
summary_members(struct json *j, const Cut__V1__SnapshotInfo *s)
{
	json_kv_string(j, "id", s->id);
	json_kv_string(j, "initiator", s->initiator);
	json_kv_string(j, "status", snapshot_status_word(s));
	json_kv_string(j, "reason", s->reason);
	json_kv_uint(j, "started_ms", s->started_ms);
	json_kv_uint(j, "finished_ms", s->finished_ms);
	json_key(j, "duration_ms");
	if (s->finished_ms >= s->started_ms && s->finished_ms > 0)
		json_uint(j, s->finished_ms - s->started_ms);
	else
		json_null(j);
	json_key(j, "deadline_ms");
	if (s->has_deadline_ms)
		json_uint(j, s->deadline_ms);
	else
		json_null(j);
	json_kv_uint(j, "parts_received", s->parts_received);
	json_kv_uint(j, "parts_expected", s->parts_expected);
	json_kv_uint(j, "channels_recording", s->channels_recording);
	json_key(j, "audit");
	if (s->audit == NULL) {
		json_null(j);
	} else {
		json_object_begin(j);
		json_kv_bool(j, "consistent", s->audit->consistent);
		json_kv_string(j, "reason", s->audit->reason);
		json_object_end(j);
	}
}

static void
nodes_json(struct json *j, const Cut__V1__SnapshotInfo *s, enum detail d)
{
	const Cut__V1__NodeState *n;
	size_t i;

	json_key(j, "nodes");
	json_array_begin(j);
	for (i = 0; i < s->n_nodes; i++) {
		n = s->nodes[i];
		json_object_begin(j);
		json_kv_string(j, "node", n->node);
		json_kv_string(j, "content_type", n->content_type);
		json_kv_uint(j, "state_size", n->state_size);
		if (d == DETAIL_EXPORT) {
			json_key(j, "state");
			if (n->has_state)
				json_payload(j, n->state.data, n->state.len);
			else
				json_null(j);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

static void
messages_json(struct json *j, const Cut__V1__ChannelState *c)
{
	const Cut__V1__ChannelMessage *m;
	size_t i;

	json_key(j, "messages");
	json_array_begin(j);
	for (i = 0; i < c->n_messages; i++) {
		m = c->messages[i];
		json_object_begin(j);
		json_kv_uint(j, "seq", m->seq);
		json_kv_string(j, "content_type", m->content_type);
		json_key(j, "payload");
		json_payload(j, m->payload.data, m->payload.len);
		json_object_end(j);
	}
	json_array_end(j);
}

static void
channels_json(struct json *j, const Cut__V1__SnapshotInfo *s, enum detail d)
{
	const Cut__V1__ChannelState *c;
	size_t i;

	json_key(j, "channels");
	json_array_begin(j);
	for (i = 0; i < s->n_channels; i++) {
		c = s->channels[i];
		json_object_begin(j);
		json_kv_string(j, "src", c->src);
		json_kv_string(j, "dst", c->dst);
		json_kv_uint(j, "m", c->m);
		json_kv_uint(j, "n", c->n);
		json_kv_uint(j, "count", c->count);
		if (d == DETAIL_EXPORT)
			messages_json(j, c);
		json_object_end(j);
	}
	json_array_end(j);
}

void
print_snapshot_json(FILE *f, const Cut__V1__SnapshotInfo *s, enum detail d)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	summary_members(&j, s);
	if (d != DETAIL_SUMMARY) {
		nodes_json(&j, s, d);
		channels_json(&j, s, d);
	}
	json_object_end(&j);
	json_finish(&j);
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
	if (s->status == CUT__V1__SNAPSHOT_INFO__STATUS__ABORTED)
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
	if (s->channels_recording > 0)
		fprintf(f, "  recording  %u channels\n", s->channels_recording);
	fputs("  verdict    ", f);
	verdict(f, s);
	fputc('\n', f);
	nodes_human(f, s);
	channels_human(f, s);
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
		fprintf(f, " %3u/%-3u  %s\n", s->parts_received,
		        s->parts_expected,
		        s->audit == NULL       ? "-"
		        : s->audit->consistent ? "consistent"
		                               : "INCONSISTENT");
	}
}

void
print_list_json(FILE *f, const Cut__V1__ListReply *l)
{
	struct json j;
	size_t i;

	json_init(&j, f);
	json_object_begin(&j);
	json_key(&j, "snapshots");
	json_array_begin(&j);
	for (i = 0; i < l->n_snapshots; i++) {
		json_object_begin(&j);
		summary_members(&j, l->snapshots[i]);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
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

void
print_status_human(FILE *f, const Cut__V1__StatusReply *s, uint64_t now)
{
	const Cut__V1__ChannelStatus *c;
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
	else
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
	fprintf(f, "\nchannels (%zu)\n  %-20s %10s %10s %10s %10s %8s %10s\n",
	        s->n_channels, "", "sent", "acked", "delivered", "taken",
	        "queued", "window");
	for (i = 0; i < s->n_channels; i++) {
		c = s->channels[i];
		fprintf(f,
		        "  %8s -> %-8s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
		        " %10" PRIu64 " %8" PRIu64 " %10" PRIu64 "\n",
		        c->src, c->dst, c->sent, c->acked, c->delivered,
		        c->taken, c->queued, c->window_used_bytes);
	}
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
	if (s->tls_listener_failures || s->auth_failures_unknown ||
	    s->unauthenticated_batches)
		fprintf(f,
		        "tls: %" PRIu64
		        " handshakes failed at the listener, %" PRIu64
		        " hellos from unknown nodes refused, %" PRIu64
		        " unauthenticated batches dropped\n",
		        s->tls_listener_failures, s->auth_failures_unknown,
		        s->unauthenticated_batches);
}

static void
json_peer_tls(struct json *j, const Cut__V1__PeerStatus *p)
{
	if (!p->has_tls || !p->tls)
		return;
	json_kv_bool(j, "tls", 1);
	json_kv_bool(j, "authenticated", p->authenticated);
	json_kv_uint(j, "auth_failures", p->auth_failures);
	json_key(j, "last_auth_error");
	if (p->last_auth_error != NULL)
		json_string(j, p->last_auth_error);
	else
		json_null(j);
	json_kv_uint(j, "last_auth_error_ms", p->last_auth_error_ms);
}

void
print_status_json(FILE *f, const Cut__V1__StatusReply *s)
{
	struct json j;
	size_t i;

	json_init(&j, f);
	json_object_begin(&j);
	json_kv_string(&j, "node", s->node);
	json_kv_string(&j, "cluster", s->cluster);
	json_kv_string(&j, "version", s->version);
	json_kv_uint(&j, "uptime_ms", s->uptime_ms);
	json_kv_bool(&j, "app_connected", s->app_connected);
	json_key(&j, "storage_degraded");
	if (s->storage_degraded != NULL)
		json_string(&j, s->storage_degraded);
	else
		json_null(&j);
	json_key(&j, "peers");
	json_array_begin(&j);
	for (i = 0; i < s->n_peers; i++) {
		json_object_begin(&j);
		json_kv_string(&j, "node", s->peers[i]->node);
		json_kv_bool(&j, "connected", s->peers[i]->connected);
		json_kv_uint(&j, "last_seen_ms", s->peers[i]->last_seen_ms);
		json_kv_uint(&j, "refused_connections",
		             s->peers[i]->refused_connections);
		json_peer_tls(&j, s->peers[i]);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "channels");
	json_array_begin(&j);
	for (i = 0; i < s->n_channels; i++) {
		json_object_begin(&j);
		json_kv_string(&j, "src", s->channels[i]->src);
		json_kv_string(&j, "dst", s->channels[i]->dst);
		json_kv_uint(&j, "sent", s->channels[i]->sent);
		json_kv_uint(&j, "acked", s->channels[i]->acked);
		json_kv_uint(&j, "delivered", s->channels[i]->delivered);
		json_kv_uint(&j, "queued", s->channels[i]->queued);
		json_kv_uint(&j, "taken", s->channels[i]->taken);
		json_kv_uint(&j, "window_used_bytes",
		             s->channels[i]->window_used_bytes);
		json_kv_uint(&j, "stalls", s->channels[i]->stalls);
		json_kv_uint(&j, "resent", s->channels[i]->resent);
		json_kv_uint(&j, "duplicates", s->channels[i]->duplicates);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "snapshots_in_progress");
	json_array_begin(&j);
	for (i = 0; i < s->n_snapshots_in_progress; i++)
		json_string(&j, s->snapshots_in_progress[i]);
	json_array_end(&j);
	json_kv_uint(&j, "bad_frames", s->bad_frames);
	json_kv_uint(&j, "bad_frames_peer", s->bad_frames_peer);
	json_kv_uint(&j, "bad_frames_app", s->bad_frames_app);
	json_kv_uint(&j, "bad_frames_control", s->bad_frames_control);
	json_kv_uint(&j, "calls_denied", s->calls_denied);
	json_kv_uint(&j, "starts_limited", s->starts_limited);
	json_kv_uint(&j, "tls_listener_failures", s->tls_listener_failures);
	json_kv_uint(&j, "auth_failures_unknown", s->auth_failures_unknown);
	json_kv_uint(&j, "unauthenticated_batches", s->unauthenticated_batches);
	json_object_end(&j);
	json_finish(&j);
}
