/*
 * ctljson.h - the JSON of the control service's replies (ctljson.c):
 * snapshots, lists, node status and the schedule, from the protobuf
 * messages of proto/control.proto.  cutctl prints them (--json); the
 * daemon's HTTP API (shell/http.c) serves them.
 *
 * The builders return a new document for cj_print() or json_dumps(), or
 * NULL when out of memory; they only read their argument.
 */
#ifndef CUT_CTLJSON_H
#define CUT_CTLJSON_H

#include "cutjson.h"
#include "cutproto.h"

/* How much of a snapshot to write. */
enum detail {
	DETAIL_SUMMARY, /* the header only (list, wait) */
	DETAIL_SHOW,    /* nodes and channels, payloads abbreviated */
	DETAIL_EXPORT,  /* everything, payloads in full */
};

/* The status of s as a word: "in_progress", "complete", "aborted". */
const char *snapshot_status_word(const Cut__V1__SnapshotInfo *s);

/* Snapshot s: the summary members, and for DETAIL_SHOW and DETAIL_EXPORT
 * its nodes and channels (the shapes are described at the top of
 * ctljson.c); with DETAIL_EXPORT each channel has its "messages". */
json_t *snapshot_json(const Cut__V1__SnapshotInfo *s, enum detail d);

/* {"snapshots": [SUMMARY...]} */
json_t *list_json(const Cut__V1__ListReply *l);

/* The node status of `cutctl status`. */
json_t *status_json(const Cut__V1__StatusReply *s);

/* The schedule, or {"configured": false}. */
json_t *schedule_json(const Cut__V1__ScheduleStatus *s);

#endif /* CUT_CTLJSON_H */
