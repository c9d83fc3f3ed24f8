/*
 * store_port.h - what the coordinator needs from a database, and the rows
 * it writes and reads.
 *
 * The coordinator does no I/O: the rows it stores and reads back (its own
 * part, the parts it assembles, the audit's input) go through this table
 * of functions, which its caller supplies.  The daemon plugs in its SQLite
 * file (store/store.c, store_port()); the simulation plugs in the same
 * store on an in-memory SQLite database per node, where it can also make
 * writes fail.  Each function behaves as the store.h function of the same
 * name, with db in place of the store: 0 or an E_* code (cuterr.h), and
 * errmsg() saying why the last call failed.
 */
#ifndef CUT_STORE_PORT_H
#define CUT_STORE_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "cuterr.h"

/* Longest snapshot id, node name and content type, without the NUL. */
#define STORE_ID_MAX    64
#define STORE_NAME_MAX  64
#define STORE_CTYPE_MAX 255

enum store_status {
	STORE_IN_PROGRESS,
	STORE_COMPLETE,
	STORE_ABORTED,
};

/* One snapshot's row, as this node's database has it. */
struct store_snapshot {
	char id[STORE_ID_MAX + 1];
	char initiator[STORE_NAME_MAX + 1];
	int is_initiator; /* 1 when this node initiated it */
	enum store_status status;
	char reason[512]; /* why it was aborted, or "" */
	int64_t started_ms;
	int64_t finished_ms; /* 0 while in progress */
	uint32_t parts_expected;
	uint32_t parts;    /* node states stored here */
	uint32_t channels; /* channel states stored here */
	uint64_t messages; /* recorded channel messages stored here */
	int consistent;    /* audit verdict: 1, 0, or -1 before the audit */
	char audit_reason[512];
	/* Schema 3. */
	int keep; /* retention never deletes it */
	/* A participant: its own part's end (STORE_IN_PROGRESS: no outcome
	 * heard yet, status is then the part's), when the initiator's
	 * outcome arrived (0: not yet) and how many parts it holds. */
	enum store_status part_status;
	int64_t outcome_ms;
	uint32_t outcome_parts;
};

/* One recorded channel: src -> dst, as its receiver recorded it. */
struct store_channel {
	const char *src, *dst;
	uint64_t m;         /* delivered before the receiver recorded */
	uint64_t n;         /* sent before the sender recorded */
	uint64_t recorded;  /* channel messages recorded */
	uint64_t first_seq; /* first and last recorded seq; 0 if none */
	uint64_t last_seq;
	int consecutive; /* recorded seqs were consecutive (1 if none) */
};

typedef int (*store_state_fn)(const char *node, const char *content_type,
                              const void *state, size_t len, void *arg);
typedef int (*store_channel_fn)(const struct store_channel *ch, void *arg);
typedef int (*store_forget_fn)(const char *node, const char *id, void *arg);
typedef int (*store_retain_fn)(const char *id, int complete, int keep,
                               int64_t ended_ms, void *arg);
typedef int (*store_list_fn)(const struct store_snapshot *snap, void *arg);
typedef int (*store_message_fn)(uint64_t seq, const char *content_type,
                                const void *payload, size_t len, void *arg);

struct store_port_ops {
	const char *(*errmsg)(void *db);
	int (*begin)(void *db);
	int (*commit)(void *db);
	int (*rollback)(void *db);
	int (*checkpoint)(void *db);
	int (*probe)(void *db, int64_t now_ms);
	int (*next_id)(void *db, const char *node, int64_t now_ms,
	               uint64_t floor, uint64_t *ret_counter);
	int (*snapshot_create)(void *db, const char *id, const char *initiator,
	                       int is_initiator, int64_t started_ms,
	                       uint32_t parts_expected);
	int (*put_message)(void *db, const char *id, const char *src,
	                   const char *dst, uint64_t seq,
	                   const char *content_type, const void *payload,
	                   size_t len);
	int (*put_state)(void *db, const char *id, const char *node,
	                 const char *content_type, const void *state,
	                 size_t len, int64_t recorded_ms);
	int (*put_channel)(void *db, const char *id,
	                   const struct store_channel *ch);
	int (*finish)(void *db, const char *id, enum store_status status,
	              const char *reason, int64_t finished_ms);
	int (*abort_snapshot)(void *db, const char *id, const char *initiator,
	                      int is_initiator, int64_t started_ms,
	                      uint32_t parts_expected, const char *reason,
	                      int64_t finished_ms);
	int (*abort_unfinished)(void *db, const char *reason,
	                        int64_t finished_ms, uint32_t *ret_count);
	int (*put_audit)(void *db, const char *id, int consistent,
	                 const char *reason);
	int (*remove)(void *db, const char *id);
	int (*foreach_state)(void *db, const char *id, store_state_fn fn,
	                     void *arg);
	int (*foreach_channel)(void *db, const char *id, store_channel_fn fn,
	                       void *arg);
	int (*foreach_message)(void *db, const char *id, const char *src,
	                       const char *dst, store_message_fn fn, void *arg);
	/* Schema 3: outcomes, keep marks, deletions owed to participants,
	 * retention. */
	int (*set_outcome)(void *db, const char *id, enum store_status status,
	                   const char *reason, int consistent,
	                   const char *audit_reason, uint32_t parts,
	                   int64_t outcome_ms);
	int (*set_keep)(void *db, const char *id, int keep);
	int (*forget_add)(void *db, const char *node, const char *id,
	                  int64_t now_ms);
	int (*forget_done)(void *db, const char *node, const char *id);
	int (*forget_foreach)(void *db, store_forget_fn fn, void *arg);
	int (*forget_count)(void *db, const char *node, uint64_t *ret);
	int (*retain_foreach)(void *db, store_retain_fn fn, void *arg);
	int (*reclaim)(void *db);
	int (*get)(void *db, const char *id, struct store_snapshot *ret);
	/* Every snapshot, newest first (store_list()). */
	int (*list)(void *db, store_list_fn fn, void *arg);
	/* Restores applied here. */
	int (*restore_put)(void *db, uint64_t generation, const char *id,
	                   const char *restorer, int64_t applied_ms,
	                   uint64_t replayed);
	int (*restore_generation)(void *db, uint64_t *ret);
};

struct store_port {
	const struct store_port_ops *ops;
	void *db;
};

#endif /* CUT_STORE_PORT_H */
