/*
 * error.c - libcut's error codes: their names, and the one place where
 * what comes from elsewhere becomes one of them: nng's errors, the control
 * service's gRPC status codes and the application link's error codes; and
 * the exit status cutctl gives each.  All of it is read from the one error
 * table, proto/errtab.h, as far as libcut knows the names of its columns
 * (not the daemon's internal codes).
 */
#include <sysexits.h>

#include <nng/nng.h>

#include "cut/cut.h"
#include "cutproto.h"
#include "errtab.h"
#include "rpc.h"

/* A row of the table without its internal code. */
struct row {
	int32_t status; /* ERRTAB_STATUS_NONE: libcut's own row of cut */
	int cut;
	int exit;
	const char *words;
};

/* (ERRTAB_STATUS_x is CUT__V1__STATUS_CODE__x: cutproto.c checks.) */
#define ROW(err, status, cut, exit, retry, http, words)                        \
	{ERRTAB_STATUS(status), cut, exit, words},
static const struct row rows[] = {CUT_ERRTAB(ROW)};
#undef ROW
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* libcut's own row of code err (the one without a status), or NULL. */
static const struct row *
own_row(int err)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].cut == err && rows[i].status == ERRTAB_STATUS_NONE)
			return &rows[i];
	return NULL;
}

int
rpc_nng_error(int err)
{
#define NNG_ROW(nng, cut)                                                      \
	if (err == (nng))                                                      \
		return cut;
	if (err == 0)
		return 0;
	CUT_ERRTAB_NNG(NNG_ROW)
#undef NNG_ROW
	return CUT_EIO;
}

int
rpc_status_error(int32_t status)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].status == status && status != ERRTAB_STATUS_NONE)
			return rows[i].cut;
	return CUT_EPROTO; /* a status gRPC has not defined */
}

int
rpc_app_error(uint32_t code)
{
#define APP_ROW(name, cut)                                                     \
	if (code == CUT__V1__APP_ERROR__CODE__##name)                          \
		return cut;
	CUT_ERRTAB_APP(APP_ROW)
#undef APP_ROW
	return CUT_EPROTO;
}

int
rpc_exit_status(int err)
{
	const struct row *r = own_row(err);

	return r != NULL ? r->exit : EX_SOFTWARE;
}

const char *
cut_strerror(int err)
{
	const struct row *r = own_row(err);

	return r != NULL ? r->words : "unknown error";
}
