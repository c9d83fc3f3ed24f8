/*
 * rpc.h - one control connection to a cutd daemon: RpcRequest out,
 * RpcReply back, over an nng req0 socket.  Internal to libcut and cutctl;
 * never installed.
 *
 * Every call gets a fresh request id (a random 64-bit start, then +1 per
 * call).  When the answer does not come in time, or the connection
 * closes before it comes (the daemon restarted its listener), the same
 * request, same id, is sent once more: the daemon keeps recent replies by
 * request id and answers a resend without executing the call twice.
 * Then the call gives up (CUT_ETIMEDOUT, CUT_ECLOSED).
 *
 * A struct rpc is not thread-safe: callers serialize calls on it.  Codes
 * returned are CUT_E* (cut/cut.h); nng codes are translated here.
 */
#ifndef CUT_RPC_H
#define CUT_RPC_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "cutproto.h"

/* The largest control reply accepted, in bytes (NNG_OPT_RECVMAXSZ). */
#define RPC_MAX_REPLY (128u << 20)

/* How many channel messages a Get asks for per page. */
#define RPC_PAGE_MESSAGES 4096u

/* Room for a daemon's error message, including the NUL. */
#define RPC_MSG_MAX 256

/* Snapshots/Restore, until cutproto.h names it with the others. */

struct rpc;

/* What the daemon answered to one call. */
struct rpc_answer {
	int32_t status;            /* the gRPC status code */
	char message[RPC_MSG_MAX]; /* the daemon's sentence, maybe cut short */
	ProtobufCMessage *body;    /* the decoded reply body, or NULL */
};

/*
 * Dials url and returns the connection in *ret (the caller frees it with
 * rpc_close()).  The dial is synchronous so that a daemon that is not
 * running is reported at once: CUT_EUNAVAIL.  Later the connection
 * redials by itself.  CUT_EINVAL for a bad URL, CUT_ENOMEM.
 */
int rpc_open(const char *url, struct rpc **ret);

/* Closes the socket and frees r.  Accepts NULL.  Once nng's reaper has
 * stopped (rpc_reaper_stopped()) the socket is left open instead: closing
 * it would wait for the reaper forever. */
void rpc_close(struct rpc *r);

/*
 * nng 1.5.2 has one reaper thread per process, and it can stop for good: a
 * connection that closes because a send failed (its peer died) while nng's
 * receiving thread is between a frame's header and its body leaves that
 * receive unfinished, and the reaper waits for it forever (fixed upstream;
 * the daemon's shell/ipcprobe.h tells the whole story).  From then on no
 * closed connection of any socket in the process is let go of: a dialer
 * never dials again and closing a socket never returns.  libcut notices it
 * (cut.c, cut_link_check()) and says so here, for the whole process:
 * sockets are then replaced instead of redialing and left open instead of
 * closed.
 */
void rpc_set_reaper_stopped(void);
int rpc_reaper_stopped(void);

/* The sum of nng's statistics names (NULL-terminated) in the scope kind
 * ("socket", "dialer") numbered id, or -1 if there is no such scope. */
int64_t rpc_stat_sum(const char *kind, int id, const char *const *names);

/*
 * Calls method (a CUTPROTO_METHOD_* path) with the encoded request req and
 * waits up to timeout_ms for the answer, twice at most (see above).  On 0,
 * *ret holds the daemon's status and message and, when the reply has a
 * body, that body decoded as reply_desc (owned by the caller: release it
 * with rpc_answer_clear()); the status may be an error.  Returns
 * CUT_ETIMEDOUT, CUT_EUNAVAIL, CUT_EPROTO (a reply that does not decode,
 * answers another request, or a body that does not decode), CUT_ENOMEM or
 * CUT_EIO, leaving *ret alone.  req is borrowed.
 */
int rpc_call(struct rpc *r, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *reply_desc, int timeout_ms,
             struct rpc_answer *ret);

/* Frees the body of a and sets it to NULL.  Accepts an empty answer. */
void rpc_answer_clear(struct rpc_answer *a);

/*
 * The translations into and out of CUT_E* codes, each read from the one
 * error table (proto/errtab.h; error.c).
 *
 * The CUT_E* code for a gRPC status: 0 for OK, CUT_ENOENT for NOT_FOUND,
 * CUT_EINVAL for INVALID_ARGUMENT and OUT_OF_RANGE, CUT_ETIMEDOUT for
 * DEADLINE_EXCEEDED, CUT_EUNAVAIL for UNAVAILABLE, CUT_ENOTSUP for
 * UNIMPLEMENTED, CUT_EPERM for PERMISSION_DENIED, CUT_ELIMIT for
 * RESOURCE_EXHAUSTED, CUT_EREFUSED for the other refusals (ALREADY_EXISTS,
 * FAILED_PRECONDITION, ABORTED, CANCELLED, UNAUTHENTICATED), CUT_EPROTO for
 * everything else.
 */
int rpc_status_error(int32_t status);
/* The CUT_E* code of an application link error (AppError.code). */
int rpc_app_error(uint32_t code);

/* The gRPC name of a status ("NOT_FOUND"), or "UNKNOWN_STATUS". */
const char *rpc_status_name(int32_t status);

/* The CUT_E* code for an nng error: CUT_EPERM for NNG_EPERM (a socket
 * this user may not open), CUT_EIO for one the table does not name. */
int rpc_nng_error(int nng_err);

/* cutctl's exit status (sysexits.h) for CUT_E* code err; EX_SOFTWARE for
 * one that is not a CUT_E* code. */
int rpc_exit_status(int err);

/*
 * Checks a SnapshotInfo from a daemon: a known status, a printable id
 * that fits CUT_SNAPSHOT_ID_MAX, counters that agree.  Returns 0 or
 * CUT_EPROTO.
 */
int rpc_check_snapshot(const Cut__V1__SnapshotInfo *s);

/*
 * Fetches snapshot id with a Get: with its states if states, and with every
 * recorded channel message if messages, asking for further pages of each
 * channel whose reply says more.  Stores the snapshot in *ret (the caller
 * frees it with protobuf_c_message_free_unpacked()).  An error status from
 * the daemon is returned as its CUT_E* code with its message in errbuf
 * and, when ret_status is not NULL, the status in *ret_status (OK for a
 * failure of another kind).
 */
int rpc_get_snapshot(struct rpc *r, const char *id, int states, int messages,
                     int timeout_ms, Cut__V1__SnapshotInfo **ret, char *errbuf,
                     size_t errlen, int32_t *ret_status);

#endif /* CUT_RPC_H */
