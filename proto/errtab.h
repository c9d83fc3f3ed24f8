/*
 * errtab.h - the one error table: what a failure is called in each layer
 * it crosses, and how each layer shows it.
 *
 * A failure starts as an internal code of the daemon (E_*, cuterr.h),
 * crosses the control socket as a gRPC status (control.proto's
 * StatusCode, in RpcReply.status), becomes a libcut code (CUT_E*,
 * cut/cut.h), and cutctl exits with a status of sysexits(3); the HTTP API
 * answers the status with an HTTP status.  Each translation reads this
 * table, and none has a switch of its own:
 *
 *   internal code -> words        err_str()           daemon/base/cuterr.c
 *   internal code -> gRPC status  err_grpc()          daemon/base/cuterr.c
 *   gRPC status -> HTTP status    err_http_status()   daemon/base/cuterr.c
 *   gRPC status -> CUT_E*         rpc_status_error()  libclient/error.c
 *   nng error -> CUT_E*           rpc_nng_error()     libclient/error.c
 *   AppError code -> CUT_E*       rpc_app_error()     libclient/error.c
 *   CUT_E* -> words               cut_strerror()      libclient/error.c
 *   CUT_E* -> cutctl exit status  rpc_exit_status()   libclient/error.c
 *
 * The table is a list of rows, CUT_ERRTAB(X), one X(...) per row: a user
 * defines X to keep the columns it has names for and drop the others (a
 * macro argument that is not used is never expanded), so that libcut,
 * which may not include the daemon's headers (tests/tools/check_layers.py),
 * never meets an E_* name, nor the daemon a CUT_E* or EX_* one.  This
 * header includes nothing, and lives beside the protocol, the one folder
 * both sides include.  tests/unit/test_errtab.c expands every column into
 * one array and checks the rules below; the README's table of errors is
 * printed from this one (tests/tools/errtab_doc.py, checked by ctest).
 *
 * Columns:
 *   internal  an E_* code of cuterr.h, or E_NONE
 *   status    a gRPC status, by its name in StatusCode, or NONE
 *   cut       a CUT_E* code, or 0 for success
 *   exit      cutctl's exit status, by its name in sysexits.h
 *   retry     1 if the same call later may succeed, 0 if it cannot
 *             without someone changing something
 *   http      what the HTTP API answers for the status; 0: nothing of its
 *             own (500)
 *   meaning   one line: err_str()'s words for a row of the daemon's,
 *             cut_strerror()'s for one of libcut's
 *
 * Two kinds of row:
 *   the daemon's (an internal code): what the daemon answers for it, and
 *     what a client makes of that answer;
 *   libcut's (E_NONE): a CUT_E* code as libcut names it and cutctl exits
 *     with it, also when it comes from nng or libcut itself; with a
 *     status, what a client makes of a status the daemon never sends.
 *
 * What holds (test_errtab.c): every internal code has one row, every
 * StatusCode a row, every CUT_E* code one row of libcut's without a
 * status; rows of one status agree on the CUT_E* code and the HTTP
 * status, rows of one CUT_E* code on the exit status; exit 75 (EX_TEMPFAIL,
 * "try again") only with retry 1, and a permanent exit (64, 65, 76, 77,
 * 78) only with retry 0; libcut's row of a code has retry 1 when any row
 * of the code has.
 */
#ifndef CUT_ERRTAB_H
#define CUT_ERRTAB_H

/*
 * The gRPC status codes, by the numbers gRPC gave them (which never
 * change), as ERRTAB_STATUS_<name>: the names of the status column, for
 * users that do not include protobuf-c's generated code (the daemon's
 * base layer).  cutproto.c checks them against control.proto's.
 */
#define ERRTAB_STATUSES(X)                                                     \
	X(OK, 0)                                                               \
	X(CANCELLED, 1)                                                        \
	X(UNKNOWN, 2)                                                          \
	X(INVALID_ARGUMENT, 3)                                                 \
	X(DEADLINE_EXCEEDED, 4)                                                \
	X(NOT_FOUND, 5)                                                        \
	X(ALREADY_EXISTS, 6)                                                   \
	X(PERMISSION_DENIED, 7)                                                \
	X(RESOURCE_EXHAUSTED, 8)                                               \
	X(FAILED_PRECONDITION, 9)                                              \
	X(ABORTED, 10)                                                         \
	X(OUT_OF_RANGE, 11)                                                    \
	X(UNIMPLEMENTED, 12)                                                   \
	X(INTERNAL, 13)                                                        \
	X(UNAVAILABLE, 14)                                                     \
	X(DATA_LOSS, 15)                                                       \
	X(UNAUTHENTICATED, 16)

#define ERRTAB_STATUS_ENUM_(name, n) ERRTAB_STATUS_##name = n,
enum errtab_status {
	ERRTAB_STATUS_NONE = -1, /* a row the daemon never answers */
	ERRTAB_STATUSES(ERRTAB_STATUS_ENUM_)
};
#undef ERRTAB_STATUS_ENUM_

/* The value of a row's status column. */
#define ERRTAB_STATUS(name) ERRTAB_STATUS_##name

// clang-format off
/*
 *  internal     status               cut            exit            retry http
 *      meaning
 */
#define CUT_ERRTAB(X)                                                          \
/* The daemon's codes, in cuterr.h's order. */                                 \
X(E_OK,        OK,                  0,             EX_OK,          0, 200, \
    "success")                                                                 \
X(E_INVAL,     INVALID_ARGUMENT,    CUT_EINVAL,    EX_DATAERR,     0, 400, \
    "invalid argument")                                                        \
X(E_NOMEM,     RESOURCE_EXHAUSTED,  CUT_ELIMIT,    EX_TEMPFAIL,    1, 503, \
    "out of memory")                                                           \
X(E_NOCHAN,    INVALID_ARGUMENT,    CUT_EINVAL,    EX_DATAERR,     0, 400, \
    "no such channel")                                                         \
X(E_EXIST,     ALREADY_EXISTS,      CUT_EREFUSED,  EX_TEMPFAIL,    1, 0,   \
    "already exists")                                                          \
X(E_NOENT,     NOT_FOUND,           CUT_ENOENT,    EX_DATAERR,     0, 404, \
    "no such snapshot")                                                        \
X(E_DUP,       ALREADY_EXISTS,      CUT_EREFUSED,  EX_TEMPFAIL,    1, 0,   \
    "duplicate")                                                               \
X(E_STATE,     FAILED_PRECONDITION, CUT_EREFUSED,  EX_TEMPFAIL,    1, 0,   \
    "not allowed in the snapshot's state")                                     \
X(E_FULL,      RESOURCE_EXHAUSTED,  CUT_ELIMIT,    EX_TEMPFAIL,    1, 503, \
    "full")                                                                    \
X(E_GAP,       INVALID_ARGUMENT,    CUT_EINVAL,    EX_DATAERR,     0, 400, \
    "sequence number leaves a gap")                                            \
X(E_IO,        UNAVAILABLE,         CUT_EUNAVAIL,  EX_UNAVAILABLE, 1, 503, \
    "I/O error")                                                               \
X(E_BUSY,      UNAVAILABLE,         CUT_EUNAVAIL,  EX_UNAVAILABLE, 1, 503, \
    "database busy")                                                           \
X(E_SCHEMA,    UNAVAILABLE,         CUT_EUNAVAIL,  EX_UNAVAILABLE, 0, 503, \
    "unsupported database schema")                                             \
X(E_CORRUPT,   UNAVAILABLE,         CUT_EUNAVAIL,  EX_UNAVAILABLE, 0, 503, \
    "database file is damaged")                                                \
X(E_STORAGE,   UNAVAILABLE,         CUT_EUNAVAIL,  EX_UNAVAILABLE, 1, 503, \
    "storage degraded")                                                        \
X(E_CONFIG,    UNIMPLEMENTED,       CUT_ENOTSUP,   EX_CONFIG,      0, 0,   \
    "invalid configuration")                                                   \
X(E_TRANSPORT, UNAVAILABLE,         CUT_EUNAVAIL,  EX_UNAVAILABLE, 0, 503, \
    "transport error")                                                         \
X(E_AUTH,      PERMISSION_DENIED,   CUT_EPERM,     EX_NOPERM,      0, 0,   \
    "authentication failed")                                                   \
X(E_PERM,      PERMISSION_DENIED,   CUT_EPERM,     EX_NOPERM,      0, 0,   \
    "permission denied")                                                       \
X(E_LIMIT,     RESOURCE_EXHAUSTED,  CUT_ELIMIT,    EX_TEMPFAIL,    1, 503, \
    "over a limit")                                                            \
X(E_UNAVAIL,   UNAVAILABLE,         CUT_EUNAVAIL,  EX_UNAVAILABLE, 1, 503, \
    "unavailable")                                                             \
X(E_TIMEDOUT,  DEADLINE_EXCEEDED,   CUT_ETIMEDOUT, EX_TEMPFAIL,    1, 0,   \
    "the time allowed passed first")                                           \
X(E_NOMETHOD,  UNIMPLEMENTED,       CUT_ENOTSUP,   EX_CONFIG,      0, 0,   \
    "no such method")                                                          \
/* The lab's: never answered, but INTERNAL if they were. */                    \
X(E_EMPTY,     INTERNAL,            CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "no frame at that position on the channel")                                \
X(E_ORDER,     INTERNAL,            CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "declarations must come before the first event")                           \
X(E_NOTSC,     INTERNAL,            CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "the channel graph is not strongly connected")                             \
X(E_FUNDS,     INTERNAL,            CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "the sender has fewer tokens than that")                                   \
X(E_ENGINE,    INTERNAL,            CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "the engine refused the event")                                            \
X(E_SEQ,       INTERNAL,            CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "the unaligned cut needs each channel's messages delivered in order")      \
/* libcut's codes, in cut.h's order: cut_strerror()'s words. */                \
X(E_NONE,      NONE,                0,             EX_OK,          0, 0,   \
    "success")                                                                 \
X(E_NONE,      NONE,                CUT_EINVAL,    EX_DATAERR,     0, 0,   \
    "invalid argument")                                                        \
X(E_NONE,      NONE,                CUT_ENOMEM,    EX_SOFTWARE,    0, 0,   \
    "out of memory")                                                           \
X(E_NONE,      NONE,                CUT_ETIMEDOUT, EX_TEMPFAIL,    1, 0,   \
    "timed out")                                                               \
X(E_NONE,      NONE,                CUT_ENOENT,    EX_DATAERR,     0, 0,   \
    "no such node or snapshot")                                                \
X(E_NONE,      NONE,                CUT_E2BIG,     EX_DATAERR,     0, 0,   \
    "message too large")                                                       \
X(E_NONE,      NONE,                CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "protocol error")                                                          \
X(E_NONE,      NONE,                CUT_EUNAVAIL,  EX_UNAVAILABLE, 1, 0,   \
    "daemon unavailable")                                                      \
X(E_NONE,      NONE,                CUT_ECLOSED,   EX_UNAVAILABLE, 1, 0,   \
    "link to the daemon lost")                                                 \
X(E_NONE,      NONE,                CUT_EREFUSED,  EX_TEMPFAIL,    1, 0,   \
    "refused by the daemon")                                                   \
X(E_NONE,      NONE,                CUT_ENOTSUP,   EX_CONFIG,      0, 0,   \
    "not supported")                                                           \
X(E_NONE,      NONE,                CUT_EBUSY,     EX_SOFTWARE,    0, 0,   \
    "busy: called from a callback, or another application is connected")      \
X(E_NONE,      NONE,                CUT_EIO,       EX_SOFTWARE,    0, 0,   \
    "transport error")                                                         \
X(E_NONE,      NONE,                CUT_EAGAIN,    EX_TEMPFAIL,    1, 0,   \
    "no room on the channel now")                                              \
X(E_NONE,      NONE,                CUT_EPERM,     EX_NOPERM,      0, 0,   \
    "permission denied by the daemon")                                         \
X(E_NONE,      NONE,                CUT_ELIMIT,    EX_TEMPFAIL,    1, 0,   \
    "over the daemon's limits; try again later")                               \
/* Statuses the daemon never sends, as a client reads them. */                 \
X(E_NONE,      CANCELLED,           CUT_EREFUSED,  EX_TEMPFAIL,    1, 0,   \
    "the call was cancelled")                                                  \
X(E_NONE,      UNKNOWN,             CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "an unknown error")                                                        \
X(E_NONE,      ABORTED,             CUT_EREFUSED,  EX_TEMPFAIL,    1, 0,   \
    "aborted by a conflict")                                                   \
X(E_NONE,      OUT_OF_RANGE,        CUT_EINVAL,    EX_DATAERR,     0, 0,   \
    "out of range")                                                            \
X(E_NONE,      DATA_LOSS,           CUT_EPROTO,    EX_PROTOCOL,    0, 0,   \
    "data lost")                                                               \
X(E_NONE,      UNAUTHENTICATED,     CUT_EREFUSED,  EX_TEMPFAIL,    1, 0,   \
    "not authenticated")

/*
 * nng's errors, as libcut reads them (rpc_nng_error()): nng, CUT_E*.  Any
 * other is CUT_EIO.  nng has no EACCES of its own: a socket file that
 * this user may not open (connect(2)'s EACCES) is NNG_EPERM.
 */
#define CUT_ERRTAB_NNG(X)                                                      \
X(NNG_ENOMEM,       CUT_ENOMEM)                                                \
X(NNG_ETIMEDOUT,    CUT_ETIMEDOUT)                                             \
X(NNG_EINVAL,       CUT_EINVAL)                                                \
X(NNG_EADDRINVAL,   CUT_EINVAL)                                                \
X(NNG_ENOTSUP,      CUT_EINVAL)                                                \
X(NNG_ECONNREFUSED, CUT_EUNAVAIL)                                              \
X(NNG_ENOENT,       CUT_EUNAVAIL)                                              \
X(NNG_EUNREACHABLE, CUT_EUNAVAIL)                                              \
X(NNG_EPERM,        CUT_EPERM)                                                 \
X(NNG_ECLOSED,      CUT_ECLOSED)                                               \
X(NNG_ECONNRESET,   CUT_ECLOSED)                                               \
X(NNG_ECONNSHUT,    CUT_ECLOSED)                                               \
X(NNG_ECONNABORTED, CUT_ECLOSED)                                               \
X(NNG_EMSGSIZE,     CUT_E2BIG)

/*
 * The application link's AppError codes (app.proto), as libcut reads
 * them (rpc_app_error()): the name in AppError.Code, CUT_E*.  Any other
 * is CUT_EPROTO: an item libcut should not have sent.
 */
#define CUT_ERRTAB_APP(X)                                                      \
X(WRONG_NODE,       CUT_ENOENT)                                                \
X(UNKNOWN_NODE,     CUT_ENOENT)                                                \
X(UNKNOWN_SNAPSHOT, CUT_ENOENT)                                                \
X(VERSION,          CUT_ENOTSUP)                                               \
X(TOO_LARGE,        CUT_E2BIG)                                                 \
X(BACKPRESSURE,     CUT_EAGAIN)
// clang-format on

#endif /* CUT_ERRTAB_H */
