/*
 * cuterr.c - the words of the error codes.
 */
#include <stdarg.h>
#include <stdio.h>

#include "cuterr.h"

// clang-format off
static const char *const words[E_MAX - E_INVAL] = {
	[E_INVAL - E_INVAL] = "invalid argument",
	[E_NOMEM - E_INVAL] = "out of memory",
	[E_NOCHAN - E_INVAL] = "no such channel",
	[E_EXIST - E_INVAL] = "already exists",
	[E_NOENT - E_INVAL] = "no such snapshot",
	[E_DUP - E_INVAL] = "duplicate",
	[E_STATE - E_INVAL] = "not allowed in the snapshot's state",
	[E_FULL - E_INVAL] = "full",
	[E_GAP - E_INVAL] = "sequence number leaves a gap",
	[E_IO - E_INVAL] = "I/O error",
	[E_BUSY - E_INVAL] = "database busy",
	[E_SCHEMA - E_INVAL] = "unsupported database schema",
	[E_CORRUPT - E_INVAL] = "database file is damaged",
	[E_STORAGE - E_INVAL] = "storage degraded",
	[E_CONFIG - E_INVAL] = "invalid configuration",
	[E_TRANSPORT - E_INVAL] = "transport error",
	[E_AUTH - E_INVAL] = "authentication failed",
	[E_PERM - E_INVAL] = "permission denied",
	[E_LIMIT - E_INVAL] = "over a limit",
	[E_UNAVAIL - E_INVAL] = "unavailable",
	[E_TIMEDOUT - E_INVAL] = "the time allowed passed first",
	[E_EMPTY - E_INVAL] = "no frame at that position on the channel",
	[E_ORDER - E_INVAL] =
	    "declarations must come before the first event",
	[E_NOTSC - E_INVAL] =
	    "the channel graph is not strongly connected",
	[E_FUNDS - E_INVAL] = "the sender has fewer tokens than that",
	[E_ENGINE - E_INVAL] = "the engine refused the event",
	[E_SEQ - E_INVAL] = ("the unaligned cut needs each channel's "
	                     "messages delivered in order"),
};
// clang-format on

const char *
err_str(int err)
{
	if (err == 0)
		return "success";
	if (err < E_INVAL || err >= E_MAX)
		return "unknown error";
	return words[err - E_INVAL];
}

int
err_set(struct errinfo *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	return code;
}
