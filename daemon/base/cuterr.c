/*
 * cuterr.c - the error codes' words, gRPC statuses and HTTP statuses, all
 * read from the one error table (proto/errtab.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "cuterr.h"
#include "errtab.h"

/* The table's rows, as far as the daemon knows their names: those of
 * libcut's codes (E_NONE) are kept too, for the statuses. */
struct row {
	int err;
	int grpc;
	int http;
	const char *words;
};

#define ROW(err, status, cut, exit, retry, http, words)                        \
	{err, ERRTAB_STATUS(status), http, words},
static const struct row rows[] = {CUT_ERRTAB(ROW)};
#undef ROW
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The daemon's row of err, or NULL. */
static const struct row *
row_of(int err)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].err == err && err != E_NONE)
			return &rows[i];
	return NULL;
}

const char *
err_str(int err)
{
	const struct row *r = row_of(err);

	return r != NULL ? r->words : "unknown error";
}

int
err_grpc(int err)
{
	const struct row *r = row_of(err);

	return r != NULL ? r->grpc : ERRTAB_STATUS_INTERNAL;
}

int
err_http_status(int grpc)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].grpc == grpc && grpc != ERRTAB_STATUS_NONE)
			return rows[i].http != 0 ? rows[i].http : 500;
	return 500;
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
