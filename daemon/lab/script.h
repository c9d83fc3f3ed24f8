/*
 * script.h - the cutlab scenario language (cutlab run FILE).
 *
 * One statement a line; '#' starts a comment.  Declarations first:
 *
 *   markers classic|counted   optional, before any node; default counted
 *   cut aligned|unaligned     optional, before any node; where state
 *                             requests fall in the applications' down
 *                             queues; default aligned (or the caller's);
 *                             unaligned needs counted markers
 *   apps immediate|queued     optional, before any node; whether the
 *                             applications take delivered messages at once
 *                             (default) or only at take statements
 *   node NAME TOKENS          a node and its initial balance
 *   channel SRC DST           a directed channel
 *
 * then events, in order:
 *
 *   send SRC DST AMOUNT       SRC's balance drops now; the message joins
 *                             the channel's queue
 *   snapshot NODE             NODE initiates; snapshots are numbered
 *                             0, 1, 2, ... in initiation order
 *   deliver SRC DST [K]       deliver the K-th oldest frame of the channel
 *                             (message or marker); K defaults to 1 (FIFO);
 *                             with the unaligned cut a message may not
 *                             pass an older one
 *   take NODE [N]             (apps queued) NODE's application takes the N
 *                             oldest items of its down queue, one step
 *                             each; N defaults to 1
 *   drain                     deliver every queued frame, oldest first,
 *                             taking the channels in turn; with queued
 *                             applications each round ends with every
 *                             application taking its whole queue
 *
 * Markers are never written by hand: the engines emit them.
 */
#ifndef CUT_SCRIPT_H
#define CUT_SCRIPT_H

#include <stddef.h>
#include <stdio.h>

#include "lab.h"

/*
 * Reads and runs the script in, named name in messages.  On success stores
 * the finished lab in *ret_lab (the caller frees it with lab_free()).  On
 * failure writes "name:line: message" into err and returns a LAB_E* code;
 * nothing is stored.
 */
int script_run(FILE *in, const char *name, struct lab **ret_lab, char *err,
               size_t errlen);

/* The same, with cut for a script that declares none. */
int script_run_cut(FILE *in, const char *name, enum engine_cut cut,
                   struct lab **ret_lab, char *err, size_t errlen);

#endif /* CUT_SCRIPT_H */
