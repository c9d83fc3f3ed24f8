/*
 * ctltab.h - the one table of control methods: every method of
 * control.proto's services, and what each part of cutd and cutctl does
 * with it.  Included through cutproto.h.
 *
 * A control method used to live in five lists kept in step by hand (the
 * daemon's dispatch, its permission list, its HTTP routes, cutctl's
 * commands and their functions).  Each now reads this table:
 *
 *   dispatch, decoding, holding  control_request(), control_query()
 *                                                   daemon/shell/control.c
 *   permission class            perm_method_class() daemon/shell/perm.c
 *   HTTP API routes             route()             daemon/shell/http.c
 *   reply type of a call        call()              libclient/cutctl/cutctl.c
 *
 * The table is a list of rows, CUT_CTLTAB(X), one X(...) per row, as
 * errtab.h's: a user defines X to keep the columns it has names for (a
 * macro argument that is not used is never expanded), so that cutctl never
 * meets the daemon's handler names.  ctltab.c expands the columns every
 * side shares into ctltab_rows[], in the table's order; control.c
 * expands its handler column into an array of the same order, indexed
 * like ctltab_rows[] (ctltab_find() - ctltab_rows), and http.c its route
 * and http columns into its routes.
 *
 * Columns:
 *   method   the gRPC path, RpcRequest.method: a CUTPROTO_METHOD_*
 *            constant of cutproto.h, which libcut and cutctl call by
 *   req      the request message, by the stem of its protobuf-c name:
 *            start_request is Cut__V1__StartRequest, whose descriptor is
 *            cut__v1__start_request__descriptor
 *   reply    the reply message, the same way
 *   handler  the daemon's function (control.c) that answers a decoded
 *            request.  control.c decodes the body with the req
 *            descriptor first, and answers INVALID_ARGUMENT itself for a
 *            body that does not decode or a required snapshot_id that is
 *            not an id (engine_id_valid()); a request message without
 *            fields is not decoded, since nothing in it could matter
 *   perm     who may call it (perm.h): READ anyone who can connect, START
 *            the admins and the connected application's user, ADMIN the
 *            admins
 *   answer   NOW: answered when the handler returns; COMMIT: an OK answer
 *            is held until the turn's database batch commits (a change
 *            acknowledged and then lost would come back), and a lost
 *            batch answers a storage error instead; BATCH: held until the
 *            batch ends, committed or lost, then answered as made (Start:
 *            an id answered before its row is stored would name nothing
 *            after a kill -9; in a lost batch the snapshot ends aborted
 *            with the storage failure as its reason, which Get and Wait
 *            tell); LATER: the
 *            handler may keep the request and answer it later (Wait until
 *            the snapshot ends, Restore until every node has answered)
 *   route    the HTTP API's path for it (http.c; GET only, so only READ
 *            methods answered NOW), "{id}" standing for a snapshot id, or
 *            NULL
 *   http     http.c's function for the route, or NULL
 *   verb     the cutctl command that calls it (libclient/cutctl/
 *            cutctl_verbs.h)
 *   does     what a call does, as a refusal says it ("Delete deletes a
 *            snapshot: only ... may call it", perm_explain())
 *
 * Adding a method: its rpc in control.proto and its path in cutproto.h;
 * one row here; in control.c the handler, a function that fills the
 * reply from the decoded request (see do_delete()); for cutctl a row of
 * cutctl_verbs.h and its cmd_ function, which builds the request and
 * prints the reply.  tests/unit/test_ctltab.c checks the rows against
 * control.proto's services and cutctl's verbs.
 */
#ifndef CUT_CTLTAB_H
#define CUT_CTLTAB_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

// clang-format off
/*
 *  method                          req               reply
 *      handler             perm   answer  route                 http
 *      verb        does
 */
#define CUT_CTLTAB(X)                                                          \
X(CUTPROTO_METHOD_START,           start_request,    start_reply,          \
    do_start,           START, BATCH,  NULL,                 NULL,         \
    "snapshot", "starts a snapshot")                                           \
X(CUTPROTO_METHOD_GET,             get_request,      snapshot_info,        \
    do_get,             READ,  NOW,    "/v1/snapshots/{id}", http_snapshot, \
    "show", "shows a snapshot")                                                \
X(CUTPROTO_METHOD_LIST,            list_request,     list_reply,           \
    do_list,            READ,  NOW,    "/v1/snapshots",      http_list,    \
    "list", "lists the snapshots")                                             \
X(CUTPROTO_METHOD_WAIT,            wait_request,     snapshot_info,        \
    do_wait,            READ,  LATER,  NULL,                 NULL,         \
    "wait", "waits for a snapshot to end")                                     \
X(CUTPROTO_METHOD_DELETE,          delete_request,   delete_reply,         \
    do_delete,          ADMIN, COMMIT, NULL,                 NULL,         \
    "delete", "deletes a snapshot")                                            \
X(CUTPROTO_METHOD_EVALUATE,        evaluate_request, evaluate_reply,       \
    do_evaluate,        START, NOW,    NULL,                 NULL,         \
    "evaluate", "runs a query in the daemon")                                  \
X(CUTPROTO_METHOD_STATUS,          status_request,   status_reply,         \
    do_status,          READ,  NOW,    "/v1/status",         http_status,  \
    "status", "shows the daemon's status")                                     \
X(CUTPROTO_METHOD_KEEP,            keep_request,     keep_reply,           \
    do_keep,            ADMIN, COMMIT, NULL,                 NULL,         \
    "keep", "keeps a snapshot from retention, or lets it go")                  \
X(CUTPROTO_METHOD_RESTORE,         restore_request,  restore_reply,        \
    do_restore,         ADMIN, LATER,  NULL,                 NULL,         \
    "restore", "restores the cluster to a snapshot")                           \
X(CUTPROTO_METHOD_SCHEDULE_SHOW,   schedule_request, schedule_status,      \
    do_schedule_show,   READ,  NOW,    NULL,                 NULL,         \
    "schedule", "shows the schedule")                                          \
X(CUTPROTO_METHOD_SCHEDULE_PAUSE,  schedule_request, schedule_status,      \
    do_schedule_pause,  START, NOW,    NULL,                 NULL,         \
    "schedule", "pauses the schedule")                                         \
X(CUTPROTO_METHOD_SCHEDULE_RESUME, schedule_request, schedule_status,      \
    do_schedule_resume, START, NOW,    NULL,                 NULL,         \
    "schedule", "resumes the schedule")
// clang-format on

/* The perm column: who may call a method (perm.h's enum perm_class has
 * the same values). */
enum ctltab_perm { CTLTAB_READ, CTLTAB_START, CTLTAB_ADMIN };

/* The answer column. */
enum ctltab_answer { CTLTAB_NOW, CTLTAB_BATCH, CTLTAB_COMMIT, CTLTAB_LATER };

/* The columns every side shares, of one row. */
struct ctltab_row {
	const char *method;
	const ProtobufCMessageDescriptor *req, *reply;
	enum ctltab_perm perm;
	enum ctltab_answer answer;
	const char *route; /* or NULL */
	const char *verb;
	const char *does;
};

/* The number of rows, a constant expression. */
#define CTLTAB_ONE_(...) +1
#define CTLTAB_NROWS     (0 CUT_CTLTAB(CTLTAB_ONE_))

/* The rows, in the table's order. */
extern const struct ctltab_row ctltab_rows[CTLTAB_NROWS];

/* The row of method (a gRPC path), or NULL for a method the table does
 * not know (and for NULL).  The row is static. */
const struct ctltab_row *ctltab_find(const char *method);

#endif /* CUT_CTLTAB_H */
