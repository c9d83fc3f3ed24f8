/*
 * cutctl.h - what cutctl.c (commands) and cutctl_print.c (output for
 * people) share; the JSON is ctljson.h's.  Never installed.
 */
#ifndef CUT_CUTCTL_H
#define CUT_CUTCTL_H

#include <stdint.h>
#include <stdio.h>

#include "ctljson.h"
#include "cutproto.h"

/* Writes the one-line summary of s, for `wait` and `snapshot --wait`. */
void print_summary_line(FILE *f, const Cut__V1__SnapshotInfo *s);

/* Writes the readable picture of s for `show`. */
void print_snapshot_human(FILE *f, const Cut__V1__SnapshotInfo *s);

/* Writes the table of `list`. */
void print_list_human(FILE *f, const Cut__V1__ListReply *l);

/* Writes the node status of `status`. */
void print_status_human(FILE *f, const Cut__V1__StatusReply *s,
                        uint64_t now_ms);

/* Writes the schedule of `schedule show` and `status`. */
void print_schedule_human(FILE *f, const Cut__V1__ScheduleStatus *s,
                          uint64_t now_ms);

/*
 * Finds the control URL from the flags (each NULL when not given), the
 * environment and the defaults, in the order at the top of
 * cutctl_where.c.  Returns 0 with the URL in url (size bytes), or an exit
 * status (EX_USAGE, EX_CONFIG) with the sentence why (wsize bytes).
 */
int find_control(const char *control, const char *cluster, const char *node,
                 char *url, size_t size, char *why, size_t wsize);

/* Writes snapshot s as a Graphviz digraph for `show --dot`: a node per
 * recorded node with its state in brief, an edge per channel labelled
 * with m, n and the messages in transit. */
void print_snapshot_dot(FILE *f, const Cut__V1__SnapshotInfo *s);

/* Unix time now, in milliseconds. */
uint64_t now_ms(void);

#endif /* CUT_CUTCTL_H */
