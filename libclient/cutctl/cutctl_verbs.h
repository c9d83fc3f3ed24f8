/*
 * cutctl_verbs.h - cutctl's commands, one row each: the verb, the control
 * method it calls (a CUTPROTO_METHOD_* constant, a row of the methods'
 * table proto/ctltab.h; NULL for a verb that calls none), its number of
 * arguments, and the usage and help lines of `cutctl --help`, in their
 * order.  cutctl.c runs a verb by its function cmd_VERB (cmd_snapshot
 * for snapshot).  Like ctltab.h, a list of rows, CUTCTL_VERBS(X): each
 * user keeps the columns it needs.
 *
 * Adding a command: a row here and its cmd_ function in cutctl.c, which
 * builds the request and prints the reply (call_print() does the rest);
 * tests/unit/test_ctltab.c checks that the method is in the table.  A
 * verb that calls several methods names the first (watch: Evaluate
 * checks the condition, then Start and Wait) or the one its argument
 * picks by default (schedule: Show, Pause or Resume).
 */
#ifndef CUT_CUTCTL_VERBS_H
#define CUT_CUTCTL_VERBS_H

// clang-format off
#define CUTCTL_VERBS(X)                                                        \
X(snapshot, CUTPROTO_METHOD_START, 0,                                          \
  "snapshot [--wait] [--deadline MS]",                                         \
  "start a snapshot here; print its id, or with --wait its outcome")           \
X(wait, CUTPROTO_METHOD_WAIT, 1, "wait ID",                                    \
  "wait until snapshot ID is complete or aborted")                             \
X(list, CUTPROTO_METHOD_LIST, 0, "list [--limit N]",                           \
  "list the snapshots, newest first")                                          \
X(show, CUTPROTO_METHOD_GET, 1, "show [--dot] ID",                             \
  "show a snapshot: nodes, channels, audit (--dot: as a Graphviz graph)")      \
X(export, CUTPROTO_METHOD_GET, 1, "export ID",                                 \
  "write the whole snapshot, states and messages, as JSON")                    \
X(status, CUTPROTO_METHOD_STATUS, 0, "status",                                 \
  "show this node: peers, channels, counters")                                 \
X(delete, CUTPROTO_METHOD_DELETE, 1, "delete ID",                              \
  "delete a finished snapshot (one this node initiated: on every node)")       \
X(keep, CUTPROTO_METHOD_KEEP, 1, "keep ID",                                    \
  "mark a snapshot kept: retention never deletes it")                          \
X(unkeep, CUTPROTO_METHOD_KEEP, 1, "unkeep ID",                                \
  "let retention delete a snapshot again")                                     \
X(schedule, CUTPROTO_METHOD_SCHEDULE_SHOW, 1, "schedule show|pause|resume",    \
  "show, pause or resume the schedule at this node (pause is this "            \
  "node's only)")                                                              \
X(evaluate, CUTPROTO_METHOD_EVALUATE, 1,                                       \
  "evaluate ID --condition SQL | --condition-file FILE",                       \
  "judge the condition on snapshot ID, complete and consistent, at its\n"      \
  "      initiator: exit 0 if it holds, 1 if not")                             \
X(watch, CUTPROTO_METHOD_EVALUATE, 0,                                          \
  "watch [--every DURATION] --condition SQL | --condition-file FILE",          \
  "take a snapshot every DURATION (default 2s) until the condition\n"          \
  "      holds on one (complete, consistent); print its id.  The\n"            \
  "      condition is a SELECT naming the snapshot as :snapshot; it holds\n"   \
  "      when its first row's first column is true.  --timeout DURATION\n"     \
  "      bounds the whole watch (exit 2 when it ends first)")                  \
X(restore, CUTPROTO_METHOD_RESTORE, 1, "restore ID [--timeout DURATION]",      \
  "restore the whole cluster to snapshot ID (complete, consistent, one\n"      \
  "      this node initiated): every node's state and the messages in\n"       \
  "      transit; --timeout bounds the nodes' answers (default: the\n"         \
  "      cluster file's deadline_ms)")
// clang-format on

#endif /* CUT_CUTCTL_VERBS_H */
