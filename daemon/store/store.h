/*
 * store.h - the daemon's SQLite database of snapshots.
 *
 * One database per daemon.  A node records its own part of every snapshot
 * here; the initiator's daemon also stores the other nodes' parts and the
 * audit verdict.  The schema, its views and example queries are described
 * at the top of store.c.
 *
 * Every call that can fail returns 0 or a STORE_E* code, and
 * store_errmsg() describes the failure for the log.  Out-parameters are
 * written only on success.  Strings passed in are borrowed for the length
 * of the call.  A store is used by one thread at a time.
 *
 * Writes made outside store_begin() .. store_commit() commit one by one;
 * the daemon wraps each event-loop turn's writes in one batch so recorded
 * channel messages stream to disk without a commit per message.
 */
#ifndef CUT_STORE_H
#define CUT_STORE_H

#include "cuterr.h"
#include "store_port.h"

#include <stddef.h>
#include <stdint.h>

/* Calls that can fail return 0 or an E_* code (cuterr.h). */

/* An open database.  Opaque. */
struct store;

/*
 * Opens the database at path, creating it if needed, in WAL mode with
 * foreign keys on, checks it (PRAGMA quick_check: E_CORRUPT if it is
 * damaged) and migrates its schema to the current version.
 * Refuses (E_SCHEMA) a database written by a newer cutd or by another
 * program.  On failure, a sentence for the log goes to errbuf if it is not
 * NULL.  The caller owns *ret_store and frees it with store_close().
 */
int store_open(const char *path, struct store **ret_store, char *errbuf,
               size_t errlen);

/* Whether path names a database in memory: ":memory:", or a URI
 * "file:NAME?mode=memory&cache=shared" that another connection of this
 * process (cond_open()) can open too, as cutlab sim's nodes do. */
int store_in_memory(const char *path);

/* Closes st, rolling back an unfinished batch.  Accepts NULL. */
void store_close(struct store *st);

/* Describes the last failed call on st, with SQLite's words when SQLite
 * failed.  The string is owned by st and valid until its next call. */
const char *store_errmsg(const struct store *st);
/* SQLite's words the first time a call on st found the database file
 * damaged (SQLITE_CORRUPT, SQLITE_NOTADB) or could not read it
 * (SQLITE_IOERR_READ, _SHORT_READ), or "": kept while st is open, since a
 * damaged page does not mend. */
const char *store_damaged(const struct store *st);

/*
 * Starts a batch: every write until store_commit() commits at once.
 * E_STATE if a batch is already open.  If it fails otherwise (e.g.
 * E_BUSY), the batch is lost from the start: its writes fail with
 * E_IO until store_rollback() ends it.  A write that fails for a bad
 * argument or a duplicate (E_INVAL, E_NOENT, E_EXIST)
 * leaves the rest of the batch intact; after E_IO or E_NOMEM
 * (a full disk is E_IO) SQLite may have rolled the whole batch back:
 * then every later write of the batch fails with E_IO, and so does
 * store_commit(), naming the first failure.
 */
int store_begin(struct store *st);

/* Commits the open batch; E_STATE if none is open.  On E_BUSY
 * the batch stays open and the commit may be retried; after any other
 * failure the caller calls store_rollback(), which ends the batch whether
 * or not SQLite already rolled it back. */
int store_commit(struct store *st);

/* Abandons the open batch, if any.  Returns 0 when none is open. */
int store_rollback(struct store *st);

/*
 * Issues the counter of node's next snapshot id ("node:counter"): above
 * the last one issued, above every id of node's in snapshots, at least
 * now_ms (the wall clock) and at least floor.  The counter is in the meta
 * table, never deleted, and moves in the caller's batch, so a batch that
 * is rolled back also takes back the counter: the caller passes one more
 * than the last counter it issued as floor.  See store.c for why ids
 * never repeat.
 */
int store_next_id(struct store *st, const char *node, int64_t now_ms,
                  uint64_t floor, uint64_t *ret_counter);

/* Creates snapshot id, in progress.  E_EXIST if it is already here. */
int store_snapshot_create(struct store *st, const char *id,
                          const char *initiator, int is_initiator,
                          int64_t started_ms, uint32_t parts_expected);

/*
 * Stores one recorded message of channel src -> dst with its sender
 * sequence number.  JSON payloads (content type application/json or
 * *+json, holding valid UTF-8 JSON) are stored as TEXT, others as BLOB;
 * either way the bytes read back are the bytes written.  E_NOENT if
 * the snapshot is unknown, E_EXIST if that seq is already stored.
 * payload may be NULL when len is 0.
 */
int store_put_message(struct store *st, const char *id, const char *src,
                      const char *dst, uint64_t seq, const char *content_type,
                      const void *payload, size_t len);

/* Stores the recorded state of node, stored like a message payload.
 * E_EXIST if that node's state is already stored. */
int store_put_state(struct store *st, const char *id, const char *node,
                    const char *content_type, const void *state, size_t len,
                    int64_t recorded_ms);

/* Stores a recorded channel's summary.  E_EXIST if it is already
 * stored.  Counts above INT64_MAX are refused with E_INVAL. */
int store_put_channel(struct store *st, const char *id,
                      const struct store_channel *ch);

/* Ends an in-progress snapshot as STORE_COMPLETE or STORE_ABORTED, with a
 * reason (may be NULL).  E_STATE if it has already ended. */
int store_finish(struct store *st, const char *id, enum store_status status,
                 const char *reason, int64_t finished_ms);

/* Ends snapshot id as aborted with reason, first creating its row (in
 * progress, with these fields) if the database does not have it: used to
 * write again the end of snapshots whose batch was rolled back.
 * E_STATE if it had already ended. */
int store_abort_snapshot(struct store *st, const char *id,
                         const char *initiator, int is_initiator,
                         int64_t started_ms, uint32_t parts_expected,
                         const char *reason, int64_t finished_ms);

/* Copies the WAL into the database file and truncates it to zero bytes,
 * giving its space back to the file system: after a full disk, the WAL
 * (which otherwise keeps its size) may be what filled it.  Outside a
 * batch only; E_BUSY at once if a reader holds an old snapshot. */
int store_checkpoint(struct store *st);

/* Writes now_ms to meta's 'probe' row: a write that proves, once
 * committed, that the database takes writes again. */
int store_probe(struct store *st, int64_t now_ms);

/* Ends every snapshot still in progress as aborted with reason, e.g.
 * "daemon restarted" for those a restart left behind.  *ret_count (if not
 * NULL) says how many there were. */
int store_abort_unfinished(struct store *st, const char *reason,
                           int64_t finished_ms, uint32_t *ret_count);

/* Stores the audit verdict of a complete snapshot, replacing an earlier
 * one.  E_STATE if the snapshot is not complete. */
int store_put_audit(struct store *st, const char *id, int consistent,
                    const char *reason);

/* Deletes a snapshot with everything recorded for it. */
int store_delete(struct store *st, const char *id);

/* Reads one snapshot into *ret.  Longer reasons are cut to fit. */
int store_get(struct store *st, const char *id, struct store_snapshot *ret);

/*
 * The iterators below call cb once per row; the pointers they pass are
 * valid only during the call.  A callback that returns nonzero stops the
 * iteration, and that value is returned.  A callback may read with other
 * store functions but not re-enter the iterator calling it (E_STATE),
 * and should not change the rows being visited.  An unknown id has no
 * rows.
 */

/* Every snapshot, newest (latest started) first. */
int store_list(struct store *st,
               int (*cb)(const struct store_snapshot *snap, void *arg),
               void *arg);

/* Every stored node state of id, by node name. */
int store_foreach_state(struct store *st, const char *id,
                        int (*cb)(const char *node, const char *content_type,
                                  const void *state, size_t len, void *arg),
                        void *arg);

/* Every stored channel summary of id, by src then dst. */
int store_foreach_channel(struct store *st, const char *id,
                          int (*cb)(const struct store_channel *ch, void *arg),
                          void *arg);

/* Every stored message of channel src -> dst of id, in seq order. */
int store_foreach_message(struct store *st, const char *id, const char *src,
                          const char *dst,
                          int (*cb)(uint64_t seq, const char *content_type,
                                    const void *payload, size_t len, void *arg),
                          void *arg);

/* Records the result of condition name on snapshot id, replacing an
 * earlier one: held 1 or 0, or -1 when it could not be judged (detail
 * says why).  E_NOENT if the snapshot is unknown.  Not part of the
 * coordinator's port: the shell judges conditions after a snapshot's end
 * is committed, and writes this outside the turn's batch. */
int store_put_condition(struct store *st, const char *id, const char *name,
                        int held, const char *detail, int64_t evaluated_ms);

/* Every condition result of id, by name (held as above). */
int store_foreach_condition(struct store *st, const char *id,
                            int (*cb)(const char *name, int held,
                                      const char *detail, void *arg),
                            void *arg);
/* A participant's row takes the initiator's outcome: status (complete
 * or aborted), reason, the audit verdict (consistent -1: none) and the
 * number of parts the initiator holds; its own part's end moves to
 * part_status.  E_NOENT if unknown, E_STATE if this node initiated it. */
int store_set_outcome(struct store *st, const char *id,
                      enum store_status status, const char *reason,
                      int consistent, const char *audit_reason, uint32_t parts,
                      int64_t outcome_ms);

/* Marks snapshot id kept (retention never deletes it) or not. */
int store_set_keep(struct store *st, const char *id, int keep);

/* forget_pending: node has not yet confirmed that it deleted id. */
int store_forget_add(struct store *st, const char *node, const char *id,
                     int64_t now_ms);
int store_forget_done(struct store *st, const char *node, const char *id);
/* Every pending deletion, oldest first. */
int store_forget_foreach(struct store *st, store_forget_fn fn, void *arg);
int store_forget_count(struct store *st, const char *node, uint64_t *ret);

/* This node's own ended snapshots, newest first: whether complete, kept,
 * and when they ended. */
int store_retain_foreach(struct store *st, store_retain_fn fn, void *arg);

/* After deletes, outside a batch: PRAGMA incremental_vacuum, then a
 * TRUNCATE checkpoint of the WAL. */
int store_reclaim(struct store *st);
/* Restores (the restores table): records that this node applied
 * restore `generation` of snapshot id, run by node restorer; and reads
 * the highest generation applied (0: none). */
int store_restore_put(struct store *st, uint64_t generation, const char *id,
                      const char *restorer, int64_t applied_ms,
                      uint64_t replayed);
int store_restore_generation(struct store *st, uint64_t *ret);

/* The store as the coordinator's port (store_port.h). */
struct store_port store_port(struct store *st);

#endif /* CUT_STORE_H */
