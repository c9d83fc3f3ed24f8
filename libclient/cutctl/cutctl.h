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

/* Unix time now, in milliseconds. */
uint64_t now_ms(void);

#endif /* CUT_CUTCTL_H */
