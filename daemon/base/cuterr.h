/*
 * cuterr.h - the one error space of the daemon and its libraries.
 *
 * Every internal call that can fail returns 0 or an ERR_* code: the
 * engine, the link, the coordinator, the store, the lab, the cluster file
 * and TLS.  A code says what kind of failure it is; the words for this
 * failure (SQLite's message, the file and line, the node) travel beside
 * it, in struct errinfo or the module's own errmsg, never instead of it.
 *
 * The codes cross the process boundary in one place: the control service
 * answers each with a gRPC status (err_grpc()), which libcut turns into
 * a CUT_E* code and cutctl into an exit status.  What each code becomes
 * at each step is one table, proto/errtab.h, which every one of these
 * translations reads (err_str(), err_grpc() and err_http_status() below
 * read it too).
 */
#ifndef CUT_CUTERR_H
#define CUT_CUTERR_H

#include <stddef.h>

enum err {
	E_NONE = -1, /* none: errtab.h's rows of libcut's codes */
	E_OK = 0,
	E_INVAL = 1000, /* malformed argument, frame or value out of range */
	E_NOMEM,        /* out of memory; nothing changed */
	E_NOCHAN,       /* no such channel */
	E_EXIST,        /* already exists (snapshot id, row) */
	E_NOENT,        /* no such snapshot */
	E_DUP,          /* a duplicate: a second marker, a message had */
	E_STATE,        /* not allowed in the snapshot's (or batch's) state */
	E_FULL,         /* a window, queue or hold buffer is full */
	E_GAP,          /* a sequence number leaves a gap */
	E_IO,           /* a file or the database could not be read/written */
	E_BUSY,         /* the database was locked for too long */
	E_SCHEMA,       /* not a cutd database, or a newer one */
	E_CORRUPT,      /* the database file is damaged */
	E_STORAGE,      /* the daemon's storage is degraded: writes refused */
	E_CONFIG,       /* a cluster file or TLS file is invalid */
	E_TRANSPORT,    /* nng refused a socket or TLS setting */
	E_AUTH,         /* a peer could not be authenticated */
	E_PERM,         /* the caller may not do that */
	E_LIMIT,        /* over a configured limit; try again later */
	E_UNAVAIL,      /* no application or peer to do it */
	E_TIMEDOUT,     /* the time allowed passed first */
	E_NOMETHOD,     /* the control service has no such method */
	/* The lab's script and model errors. */
	E_EMPTY,  /* no frame at that position */
	E_ORDER,  /* declarations after the first event */
	E_NOTSC,  /* the channel graph is not strongly connected */
	E_FUNDS,  /* the sender has fewer tokens than that */
	E_ENGINE, /* the engine refused an event */
	E_SEQ,    /* the unaligned cut needs in-order delivery */
	E_MAX
};

/* A sentence fragment naming the kind of failure ("no such snapshot"). */
const char *err_str(int err);

/* The gRPC status (a StatusCode value of control.proto) the control
 * service answers err with: INTERNAL for a code not in the table. */
int err_grpc(int err);

/* The HTTP status the HTTP API answers a control call's gRPC status
 * with: 500 for a status the table gives none. */
int err_http_status(int grpc);

/* A failure's code and its words, for calls whose caller shows them. */
struct errinfo {
	int code;
	char text[256];
};

/* Sets *e (when not NULL) to code and the printf-formatted text; returns
 * code, so that `return err_set(e, E_IO, "...")` reads naturally. */
int err_set(struct errinfo *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* CUT_CUTERR_H */
