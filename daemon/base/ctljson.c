/*
 * ctljson.c - the JSON of the control service's replies, built with
 * jansson: what cutctl --json prints and what the daemon's HTTP API
 * serves, from the same protobuf messages, so that both always agree.
 *
 * The JSON shapes are a contract: members are only ever added, never
 * renamed or removed (the README's Changelog lists the exceptions).  Every
 * command prints one document:
 *
 *   snapshot            {"id": S, "started_ms": N}
 *   snapshot --wait,    SUMMARY
 *   wait ID
 *   list                {"snapshots": [SUMMARY...]}      newest first
 *   show ID             SUMMARY + {"nodes": [NODE...],
 *                                  "channels": [CHANNEL...]}, and
 *                       "conditions": [{"name": S, "held": B|null,
 *                       "detail": S}...] when the daemon judged any
 *   evaluate ID         {"id": S, "held": B, "rows": N, "more": B,
 *                        "value": S}
 *   watch               {"id": S, "held": true, "rows": N, "value": S,
 *                        "snapshots": N}
 *   export ID           as show, and each CHANNEL has "messages":
 *                       [{"seq": N, "content_type": S|null,
 *                         "payload": PAYLOAD}...]
 *   status              {"node", "cluster", "version": S, "uptime_ms": N,
 *                        "app_connected": B, "storage_degraded": S|null,
 *                        "storage_damaged": S|null,
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
 *                                      "resent", "duplicates": N,
 *                                      "direction": "out"|"in"}
 *                                     ...],
 *                        "snapshots_in_progress": [S...],
 *                        "bad_frames", "bad_frames_peer",
 *                        "bad_frames_app", "bad_frames_control": N,
 *                        "calls_denied", "starts_limited",
 *                        "tls_listener_failures",
 *                        "auth_failures_unknown",
 *                        "unauthenticated_batches",
 *                        "tls_listener_restarts",
 *                        "control_listener_restarts",
 *                        "app_listener_restarts": N,
 *                        and with [condition] sections "conditions":
 *                        [{"name": S, "evaluated", "held", "not_held",
 *                          "failed": N, "last_snapshot_id": S|null,
 *                          "last_held": B|null, "last_detail": S|null,
 *                          "last_ms": N|null}...]}
 *                        "schedule": SCHEDULE|null,
 *                        "forgets_pending": N,
 *                        "restore_generation": N, "restore_phase": S,
 *                        "last_restore": S|null,
 *                        "last_restore_result": S|null,
 *                        "old_generation_batches": N,
 *                        "restore_missed": N|null,
 *                        "restore_app_waits": B,
 *                        "app_restorable": B}
 *   delete ID           {"deleted": S}
 *   keep ID, unkeep ID  {"id": S, "keep": B}
 *   schedule show|pause|resume
 *                       SCHEDULE, or {"configured": false}
 *
 *   SCHEDULE {"configured": true, "interval_ms": N, "initiator": S,
 *             "timeout_ms": N, "paused": B, "ticks", "started",
 *             "skipped", "paused_ticks", "failed": N,
 *             "last_snapshot_id": S|null, "next_tick_ms": N}
 *
 *   SUMMARY  {"id", "initiator": S, "status": "in_progress"|"complete"|
 *             "aborted", "reason": S, "started_ms", "finished_ms": N,
 *             "duration_ms": N|null, "deadline_ms": N|null,
 *             "parts_received", "parts_expected", "channels_recording": N,
 *             "audit": {"consistent": B, "reason": S}|null,
 *             "holds_all": B, "outcome_known": B|null,
 *             "part_status": S|null, "keep": B}
 *            holds_all: this node initiated it and holds every part; at
 *            a participant, outcome_known says whether the initiator's
 *            outcome has arrived (status, reason, parts and audit are
 *            then the initiator's), part_status how its own part ended
 *   NODE     {"node": S, "content_type": S|null, "state_size": N,
 *             "state": PAYLOAD|null}     null: the daemon sent no state
 *   CHANNEL  {"src", "dst": S, "m", "n", "count": N}
 *   PAYLOAD  {"content_type": S|null, "encoding": "json", "data": VALUE}
 *            when the content type is JSON (application/json or a +json
 *            suffix) and the bytes are one JSON value, embedded as it;
 *            else {"content_type": S|null, "encoding": "base64",
 *            "data": S}, the bytes in base64, and when the type said JSON
 *            but the bytes are not (or hold a duplicate key, or a number
 *            beyond 64-bit integers and doubles), also
 *            "invalid_json": true, "json_error": S (cj_payload())
 *
 * Times are Unix milliseconds.  Strings that are not UTF-8 (names,
 * reasons) have each bad byte replaced by U+FFFD; states and payloads are
 * never altered.  Output is deterministic for given data.
 */
#include <stdint.h>
#include <string.h>

#include "ctljson.h"

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

/* A uint64_t as a JSON integer.  jansson's integers are signed 64-bit;
 * cutd never sends more (its store refuses counts above INT64_MAX), and a
 * reply that does gets a real of the right size rather than a negative
 * integer. */
static json_t *
juint(uint64_t v)
{
	if (v > INT64_MAX)
		return json_real((double)v);
	return json_integer((json_int_t)v);
}

/* The SUMMARY object of s. */
static json_t *
summary_json(const Cut__V1__SnapshotInfo *s)
{
	json_t *o;

	o = json_pack("{s:o, s:o, s:s, s:o, s:o, s:o}", "id", cj_string(s->id),
	              "initiator", cj_string(s->initiator), "status",
	              snapshot_status_word(s), "reason", cj_string(s->reason),
	              "started_ms", juint(s->started_ms), "finished_ms",
	              juint(s->finished_ms));
	o = cj_set(o, "duration_ms",
	           s->finished_ms >= s->started_ms && s->finished_ms > 0
	               ? juint(s->finished_ms - s->started_ms)
	               : json_null());
	o = cj_set(o, "deadline_ms",
	           s->has_deadline_ms ? juint(s->deadline_ms) : json_null());
	o = cj_set(o, "parts_received", juint(s->parts_received));
	o = cj_set(o, "parts_expected", juint(s->parts_expected));
	o = cj_set(o, "channels_recording", juint(s->channels_recording));
	o = cj_set(o, "audit",
	           s->audit == NULL ? json_null()
	                            : json_pack("{s:b, s:o}", "consistent",
	                                        s->audit->consistent, "reason",
	                                        cj_string(s->audit->reason)));
	o = cj_set(o, "holds_all",
	           json_boolean(!s->has_holds_all || s->holds_all));
	o = cj_set(o, "outcome_known",
	           s->has_outcome_known ? json_boolean(s->outcome_known)
	                                : json_null());
	o = cj_set(o, "part_status", cj_string(s->part_status));
	return cj_set(o, "keep", json_boolean(s->keep));
}

static json_t *
nodes_json(const Cut__V1__SnapshotInfo *s)
{
	const Cut__V1__NodeState *n;
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < s->n_nodes; i++) {
		n = s->nodes[i];
		a = cj_append(
		    a, json_pack("{s:o, s:o, s:o, s:o}", "node",
		                 cj_string(n->node), "content_type",
		                 cj_string(n->content_type), "state_size",
		                 juint(n->state_size), "state",
		                 n->has_state
		                     ? cj_payload(n->content_type,
		                                  n->state.data, n->state.len)
		                     : json_null()));
	}
	return a;
}

static json_t *
messages_json(const Cut__V1__ChannelState *c)
{
	const Cut__V1__ChannelMessage *m;
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < c->n_messages; i++) {
		m = c->messages[i];
		a = cj_append(
		    a, json_pack("{s:o, s:o, s:o}", "seq", juint(m->seq),
		                 "content_type", cj_string(m->content_type),
		                 "payload",
		                 cj_payload(m->content_type, m->payload.data,
		                            m->payload.len)));
	}
	return a;
}

static json_t *
channels_json(const Cut__V1__SnapshotInfo *s, enum detail d)
{
	const Cut__V1__ChannelState *c;
	json_t *a = json_array(), *o;
	size_t i;

	for (i = 0; i < s->n_channels; i++) {
		c = s->channels[i];
		o = json_pack("{s:o, s:o, s:o, s:o, s:o}", "src",
		              cj_string(c->src), "dst", cj_string(c->dst), "m",
		              juint(c->m), "n", juint(c->n), "count",
		              juint(c->count));
		if (d == DETAIL_EXPORT)
			o = cj_set(o, "messages", messages_json(c));
		a = cj_append(a, o);
	}
	return a;
}

json_t *
snapshot_json(const Cut__V1__SnapshotInfo *s, enum detail d)
{
	json_t *o = summary_json(s);

	if (d != DETAIL_SUMMARY) {
		o = cj_set(o, "nodes", nodes_json(s));
		o = cj_set(o, "channels", channels_json(s, d));
	}
	if (d != DETAIL_SUMMARY && s->n_conditions > 0) {
		json_t *a = json_array();
		for (size_t i = 0; i < s->n_conditions; i++) {
			const Cut__V1__ConditionResult *c = s->conditions[i];
			a = cj_append(
			    a, json_pack("{s:o, s:o, s:o}", "name",
			                 cj_string(c->name), "held",
			                 c->has_held ? json_boolean(c->held)
			                             : json_null(),
			                 "detail", cj_string(c->detail)));
		}
		o = cj_set(o, "conditions", a);
	}
	return o;
}

json_t *
list_json(const Cut__V1__ListReply *l)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < l->n_snapshots; i++)
		a = cj_append(a, summary_json(l->snapshots[i]));
	return json_pack("{s:o}", "snapshots", a);
}

static json_t *
peer_json(const Cut__V1__PeerStatus *p)
{
	json_t *o = json_pack(
	    "{s:o, s:b, s:o, s:o}", "node", cj_string(p->node), "connected",
	    p->connected, "last_seen_ms", juint(p->last_seen_ms),
	    "refused_connections", juint(p->refused_connections));

	if (!p->has_tls || !p->tls)
		return o;
	o = cj_set(o, "tls", json_true());
	o = cj_set(o, "authenticated", json_boolean(p->authenticated));
	o = cj_set(o, "auth_failures", juint(p->auth_failures));
	o = cj_set(o, "last_auth_error", cj_string(p->last_auth_error));
	return cj_set(o, "last_auth_error_ms", juint(p->last_auth_error_ms));
}

static json_t *
channel_status_json(const Cut__V1__ChannelStatus *c, int out)
{
	json_t *o = json_pack("{s:o, s:o}", "src", cj_string(c->src), "dst",
	                      cj_string(c->dst));

	o = cj_set(o, "sent", juint(c->sent));
	o = cj_set(o, "acked", juint(c->acked));
	o = cj_set(o, "delivered", juint(c->delivered));
	o = cj_set(o, "queued", juint(c->queued));
	o = cj_set(o, "taken", juint(c->taken));
	o = cj_set(o, "window_used_bytes", juint(c->window_used_bytes));
	o = cj_set(o, "stalls", juint(c->stalls));
	o = cj_set(o, "resent", juint(c->resent));
	o = cj_set(o, "duplicates", juint(c->duplicates));
	/* Last: members are only ever added at the end of an object. */
	return cj_set(o, "direction", json_string(out ? "out" : "in"));
}

json_t *
status_json(const Cut__V1__StatusReply *s)
{
	json_t *o, *peers = json_array(), *chans = json_array(),
	           *ids = json_array();
	size_t i;

	for (i = 0; i < s->n_peers; i++)
		peers = cj_append(peers, peer_json(s->peers[i]));
	for (i = 0; i < s->n_channels; i++)
		chans = cj_append(
		    chans, channel_status_json(
		               s->channels[i],
		               strcmp(s->channels[i]->src, s->node) == 0));
	for (i = 0; i < s->n_snapshots_in_progress; i++)
		ids = cj_append(ids, cj_string(s->snapshots_in_progress[i]));
	o = json_pack("{s:o, s:o, s:o, s:o, s:b, s:o}", "node",
	              cj_string(s->node), "cluster", cj_string(s->cluster),
	              "version", cj_string(s->version), "uptime_ms",
	              juint(s->uptime_ms), "app_connected", s->app_connected,
	              "storage_degraded", cj_string(s->storage_degraded));
	o = cj_set(o, "storage_damaged", cj_string(s->storage_damaged));
	o = cj_set(o, "peers", peers);
	o = cj_set(o, "channels", chans);
	o = cj_set(o, "snapshots_in_progress", ids);
	o = cj_set(o, "bad_frames", juint(s->bad_frames));
	o = cj_set(o, "bad_frames_peer", juint(s->bad_frames_peer));
	o = cj_set(o, "bad_frames_app", juint(s->bad_frames_app));
	o = cj_set(o, "bad_frames_control", juint(s->bad_frames_control));
	o = cj_set(o, "calls_denied", juint(s->calls_denied));
	o = cj_set(o, "starts_limited", juint(s->starts_limited));
	o = cj_set(o, "tls_listener_failures", juint(s->tls_listener_failures));
	o = cj_set(o, "auth_failures_unknown", juint(s->auth_failures_unknown));
	o = cj_set(o, "unauthenticated_batches",
	           juint(s->unauthenticated_batches));
	o = cj_set(o, "tls_listener_restarts", juint(s->tls_listener_restarts));
	o = cj_set(o, "control_listener_restarts",
	           juint(s->control_listener_restarts));
	o = cj_set(o, "app_listener_restarts", juint(s->app_listener_restarts));
	if (s->n_conditions > 0) {
		json_t *a = json_array();
		for (i = 0; i < s->n_conditions; i++) {
			const Cut__V1__ConditionStatus *c = s->conditions[i];
			int last = c->last_snapshot_id != NULL;
			json_t *co = json_pack("{s:o, s:o, s:o, s:o, s:o}",
			                       "name", cj_string(c->name),
			                       "evaluated", juint(c->evaluated),
			                       "held", juint(c->held),
			                       "not_held", juint(c->not_held),
			                       "failed", juint(c->failed));
			co = cj_set(co, "last_snapshot_id",
			            cj_string(c->last_snapshot_id));
			co = cj_set(co, "last_held",
			            last && c->has_last_held
			                ? json_boolean(c->last_held)
			                : json_null());
			co = cj_set(co, "last_detail",
			            cj_string(c->last_detail));
			co = cj_set(co, "last_ms",
			            last ? juint(c->last_ms) : json_null());
			a = cj_append(a, co);
		}
		o = cj_set(o, "conditions", a);
	}
	o = cj_set(o, "schedule",
	           s->schedule != NULL ? schedule_json(s->schedule)
	                               : json_null());
	o = cj_set(o, "forgets_pending", juint(s->forgets_pending));
	o = cj_set(o, "restore_generation", juint(s->restore_generation));
	o = cj_set(o, "restore_phase",
	           cj_string(s->restore_phase ? s->restore_phase : "idle"));
	o = cj_set(o, "last_restore",
	           s->last_restore ? cj_string(s->last_restore) : json_null());
	o = cj_set(o, "last_restore_result",
	           s->last_restore_result ? cj_string(s->last_restore_result)
	                                  : json_null());
	o = cj_set(o, "old_generation_batches",
	           juint(s->old_generation_batches));
	o = cj_set(o, "restore_missed",
	           s->has_restore_missed ? juint(s->restore_missed)
	                                 : json_null());
	o = cj_set(o, "restore_app_waits",
	           json_boolean(s->restore_app_waits));
	return cj_set(o, "app_restorable", json_boolean(s->app_restorable));
}

json_t *
schedule_json(const Cut__V1__ScheduleStatus *s)
{
	json_t *o = json_pack("{s:b}", "configured", s->configured);

	if (!s->configured)
		return o;
	o = cj_set(o, "interval_ms", juint(s->interval_ms));
	o = cj_set(o, "initiator", cj_string(s->initiator));
	o = cj_set(o, "timeout_ms", juint(s->timeout_ms));
	o = cj_set(o, "paused", json_boolean(s->paused));
	o = cj_set(o, "ticks", juint(s->ticks));
	o = cj_set(o, "started", juint(s->started));
	o = cj_set(o, "skipped", juint(s->skipped));
	o = cj_set(o, "paused_ticks", juint(s->paused_ticks));
	o = cj_set(o, "failed", juint(s->failed));
	o = cj_set(o, "last_snapshot_id", cj_string(s->last_snapshot_id));
	return cj_set(o, "next_tick_ms", juint(s->next_tick_ms));
}
