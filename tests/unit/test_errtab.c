/*
 * test_errtab.c - the one error table (proto/errtab.h), walked in both
 * directions: every internal code has a row and reaches a gRPC status, a
 * CUT_E* code and an exit status through the functions that read the
 * table (err_grpc(), rpc_status_error(), rpc_exit_status(), ...); no two
 * rows contradict; every CUT_E* code of cut.h has a row and words; and
 * the three mismatches of issue 18 stay mended.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include <nng/nng.h>

#include "cut/cut.h"
#include "cuterr.h"
#include "cutproto.h"
#include "errtab.h"
#include "rpc.h"

struct row {
	int err, status, cut, exit, retry, http;
	const char *meaning;
};

#define ROW(err, status, cut, exit, retry, http, meaning)                      \
	{err, ERRTAB_STATUS(status), cut, exit, retry, http, meaning},
static const struct row rows[] = {CUT_ERRTAB(ROW)};
#undef ROW
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The CUT_E* codes cut.h declares: 1..ncut, counted from the header
 * (CUT_H), so that a code added there without a row here fails. */
static int
ncut(void)
{
	char line[512];
	int n = 0, in = 0;
	FILE *f = fopen(CUT_H, "r");

	cr_assert_not_null(f, "%s", CUT_H);
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *p = line + strspn(line, " \t");
		if (strncmp(p, "CUT_EINVAL = 1,", 15) == 0)
			in = 1;
		if (in && strncmp(p, "};", 2) == 0)
			break;
		if (in && strncmp(p, "CUT_E", 5) == 0) {
			/* Consecutive: only the first has a value. */
			const char *cm = strstr(p, "/*");
			size_t len = cm != NULL ? (size_t)(cm - p) : strlen(p);
			cr_assert(n == 0 || memchr(p, '=', len) == NULL,
			          "cut.h: %s", p);
			n++;
		}
	}
	fclose(f);
	cr_assert_gt(n, 10);
	return n;
}

/* libcut's own row of code c (no internal code, no status), or NULL. */
static const struct row *
own_row(int c)
{
	const struct row *r = NULL;

	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].err == E_NONE &&
		    rows[i].status == ERRTAB_STATUS_NONE && rows[i].cut == c) {
			cr_assert_null(r, "two rows of libcut's own for %d", c);
			r = &rows[i];
		}
	return r;
}

static int
permanent(int exit)
{
	return exit == EX_USAGE || exit == EX_DATAERR || exit == EX_PROTOCOL ||
	       exit == EX_NOPERM || exit == EX_CONFIG;
}

/* Internal code -> status -> CUT_E* -> exit, by the real functions. */
Test(errtab, every_internal_code_has_one_row_and_crosses_it)
{
	for (int e = E_OK; e < E_MAX; e = e == E_OK ? E_INVAL : e + 1) {
		const struct row *r = NULL;
		for (size_t i = 0; i < NROWS; i++)
			if (rows[i].err == e) {
				cr_assert_null(r, "two rows for %d", e);
				r = &rows[i];
			}
		cr_assert_not_null(r, "no row for internal code %d", e);
		cr_assert_neq(r->status, ERRTAB_STATUS_NONE, "%d", e);
		cr_assert_str_eq(err_str(e), r->meaning, "%d", e);
		cr_assert_eq(err_grpc(e), r->status, "%s", r->meaning);
		cr_assert_eq(rpc_status_error(err_grpc(e)), r->cut, "%s",
		             r->meaning);
		cr_assert_eq(rpc_exit_status(r->cut), r->exit, "%s",
		             r->meaning);
		cr_assert_eq(err_http_status(r->status),
		             r->http != 0 ? r->http : 500, "%s", r->meaning);
	}
	/* Outside the table: INTERNAL, as a client reads it. */
	cr_assert_eq(err_grpc(E_MAX), CUT__V1__STATUS_CODE__INTERNAL);
	cr_assert_eq(err_grpc(E_NONE), CUT__V1__STATUS_CODE__INTERNAL);
	cr_assert_eq(err_grpc(1), CUT__V1__STATUS_CODE__INTERNAL);
	cr_assert_eq(err_grpc(0), CUT__V1__STATUS_CODE__OK);
	cr_assert_str_eq(err_str(E_NONE), "unknown error");
}

/* Status -> CUT_E* and HTTP: every status has a row, and the rows of one
 * status agree. */
Test(errtab, every_status_has_rows_that_agree)
{
	for (int s = 0; s <= CUT__V1__STATUS_CODE__UNAUTHENTICATED; s++) {
		const struct row *first = NULL;
		for (size_t i = 0; i < NROWS; i++) {
			if (rows[i].status != s)
				continue;
			if (first == NULL)
				first = &rows[i];
			cr_assert_eq(rows[i].cut, first->cut,
			             "status %d: \"%s\" and \"%s\"", s,
			             rows[i].meaning, first->meaning);
			cr_assert_eq(rows[i].http, first->http,
			             "status %d: \"%s\" and \"%s\"", s,
			             rows[i].meaning, first->meaning);
		}
		cr_assert_not_null(first, "no row for status %d (%s)", s,
		                   rpc_status_name(s));
		cr_assert_eq(rpc_status_error(s), first->cut, "%s",
		             rpc_status_name(s));
		cr_assert_eq(err_http_status(s),
		             first->http != 0 ? first->http : 500, "%s",
		             rpc_status_name(s));
	}
	cr_assert_eq(rpc_status_error(17), CUT_EPROTO);
	cr_assert_eq(rpc_status_error(-1), CUT_EPROTO);
	cr_assert_eq(err_http_status(-1), 500);
	cr_assert_eq(err_http_status(CUT__V1__STATUS_CODE__OK), 200);
	cr_assert_eq(err_http_status(CUT__V1__STATUS_CODE__NOT_FOUND), 404);
}

/* CUT_E* -> words and exit: every code of cut.h has one row of its own,
 * words of its own, and one exit status in every row. */
Test(errtab, every_cut_code_has_one_row_words_and_exit)
{
	int n = ncut();

	for (int c = 0; c <= n; c++) {
		const struct row *own = own_row(c);
		int retry = 0;
		cr_assert_not_null(own, "CUT_E* code %d has no row", c);
		cr_assert_gt(strlen(cut_strerror(c)), 0);
		cr_assert_str_eq(cut_strerror(c), own->meaning, "%d", c);
		cr_assert_eq(rpc_exit_status(c), own->exit, "%d", c);
		for (int d = 0; d < c; d++)
			cr_assert_str_neq(cut_strerror(c), cut_strerror(d),
			                  "%d and %d", c, d);
		for (size_t i = 0; i < NROWS; i++)
			if (rows[i].cut == c) {
				cr_assert_eq(rows[i].exit, own->exit,
				             "\"%s\": exit %d, its code's %d",
				             rows[i].meaning, rows[i].exit,
				             own->exit);
				retry |= rows[i].retry;
			}
		/* What libcut sees may be retried if any of it may. */
		cr_assert_eq(own->retry, retry, "%s", own->meaning);
	}
	for (size_t i = 0; i < NROWS; i++)
		cr_assert(rows[i].cut >= 0 && rows[i].cut <= n, "\"%s\": %d",
		          rows[i].meaning, rows[i].cut);
	cr_assert_str_eq(cut_strerror(n + 1), "unknown error");
	cr_assert_str_eq(cut_strerror(-1), "unknown error");
	cr_assert_eq(rpc_exit_status(n + 1), EX_SOFTWARE);
}

/* "Try again" only where it can help; a permanent exit only where it
 * cannot. */
Test(errtab, retry_agrees_with_the_exit_status)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		cr_assert(r->retry == 0 || r->retry == 1, "%s", r->meaning);
		cr_assert(r->exit != EX_TEMPFAIL || r->retry,
		          "\"%s\" exits 75 (try again) but is not retryable",
		          r->meaning);
		cr_assert(!permanent(r->exit) || !r->retry,
		          "\"%s\" exits %d (permanent) but is retryable",
		          r->meaning, r->exit);
		cr_assert(r->meaning != NULL && r->meaning[0] != '\0');
		cr_assert(r->http == 0 || (r->http >= 200 && r->http < 600));
	}
}

/* nng's errors and the application link's codes become codes with rows. */
Test(errtab, nng_and_app_codes)
{
	int n = ncut();

#define NNG_ROW(nng, cut)                                                      \
	cr_assert_eq(rpc_nng_error(nng), cut, #nng);                           \
	cr_assert(cut >= 1 && cut <= n);
	CUT_ERRTAB_NNG(NNG_ROW)
#undef NNG_ROW
#define APP_ROW(name, cut)                                                     \
	cr_assert_eq(rpc_app_error(CUT__V1__APP_ERROR__CODE__##name), cut,     \
	             #name);                                                   \
	cr_assert(cut >= 1 && cut <= n);
	CUT_ERRTAB_APP(APP_ROW)
#undef APP_ROW
	cr_assert_eq(rpc_nng_error(0), 0);
	cr_assert_eq(rpc_nng_error(NNG_ECRYPTO), CUT_EIO);
	cr_assert_eq(rpc_nng_error(NNG_ESYSERR | 5), CUT_EIO);
	cr_assert_eq(rpc_app_error(CUT__V1__APP_ERROR__CODE__BAD_ITEM),
	             CUT_EPROTO);
	cr_assert_eq(rpc_app_error(999), CUT_EPROTO);
}

/*
 * Mismatch 1: a user who may not open the control socket got "transport
 * error" and exit 70.  Now nng's EPERM (connect(2)'s EACCES: nng has no
 * EACCES) is CUT_EPERM, "permission denied", exit 77, and cutctl says
 * whose the socket is.  A real socket closed to the user, with cutctl
 * run as another user than root when the test runs as root (nng is in
 * Criterion's worker already, and a forked child may not use it: cutctl
 * is a new program).
 */
Test(errtab, a_socket_closed_to_the_user_is_permission_denied)
{
	char dir[] = "/tmp/cutd-errtab.XXXXXX", url[128], err[4096] = "";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, st, out[2];
	ssize_t n, len = 0;
	pid_t pid;

	cr_assert_eq(rpc_nng_error(NNG_EPERM), CUT_EPERM);
	cr_assert_eq(rpc_exit_status(CUT_EPERM), EX_NOPERM);
	cr_assert_eq(rpc_exit_status(CUT_EPERM), 77);
	cr_assert_str_eq(cut_strerror(CUT_EPERM),
	                 "permission denied by the daemon");

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/p0.ctl", dir);
	snprintf(url, sizeof(url), "ipc://%s", sa.sun_path);
	cr_assert_geq(fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 4), 0);
	cr_assert_eq(chmod(sa.sun_path, 0), 0); /* closed to all but root */
	cr_assert_eq(pipe(out), 0);
	if ((pid = fork()) == 0) {
		dup2(out[1], STDERR_FILENO);
		if (geteuid() == 0 &&
		    (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(100);
		execl(CUTCTL, "cutctl", "--control", url, "status", (char *)0);
		_exit(101);
	}
	cr_assert_gt(pid, 0);
	close(out[1]);
	while ((n = read(out[0], err + len, sizeof(err) - 1 - (size_t)len)) > 0)
		len += n;
	close(out[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);
	cr_assert(WIFEXITED(st), "status %#x", st);
	cr_assert_neq(WEXITSTATUS(st), 100, "cannot become uid 65534");
	cr_assert_neq(WEXITSTATUS(st), 101,
	              "cannot run %s (as uid 65534 when root)", CUTCTL);
	cr_assert_eq(WEXITSTATUS(st), 77, "cutctl exited %d: %s",
	             WEXITSTATUS(st), err);
	cr_assert_not_null(strstr(err, "permission denied: cannot connect to"),
	                   "%s", err);
	cr_assert_not_null(strstr(err, "the socket"), "%s", err);
	cr_assert_not_null(strstr(err, "mode 0000"), "%s", err);
	cr_assert_null(strstr(err, "transport error"), "%s", err);
}

/*
 * Mismatch 2: "the cluster file has no [schedule]" (now E_CONFIG, it was
 * E_STATE) exited 75, "try again", though nothing changes until the
 * cluster file does.  Now: UNIMPLEMENTED, CUT_ENOTSUP, exit 78
 * (EX_CONFIG), not retryable; a snapshot in progress stays 75.
 */
Test(errtab, no_schedule_is_permanent)
{
	int st = err_grpc(E_CONFIG), c = rpc_status_error(st);

	cr_assert_eq(st, CUT__V1__STATUS_CODE__UNIMPLEMENTED);
	cr_assert_eq(c, CUT_ENOTSUP);
	cr_assert_eq(rpc_exit_status(c), EX_CONFIG);
	cr_assert_eq(rpc_exit_status(c), 78);
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].err == E_CONFIG)
			cr_assert_eq(rows[i].retry, 0);
	cr_assert_eq(rpc_exit_status(rpc_status_error(err_grpc(E_STATE))),
	             EX_TEMPFAIL);
}

/*
 * Mismatch 3: a damaged database page answered UNAVAILABLE to Start and
 * INTERNAL to List (E_CORRUPT had no case in err_grpc() until e2da0d0,
 * and E_SCHEMA answered INTERNAL until this table).  Every storage
 * failure is UNAVAILABLE (cutctl 69, HTTP 503), whichever call meets it;
 * a damaged file or a foreign schema is not worth retrying, a busy or
 * degraded one is.  (t_dbdamage: every method, over a real damaged page.)
 */
Test(errtab, every_storage_failure_is_unavailable)
{
	static const struct {
		int err, retry;
	} storage[] = {{E_IO, 1},
	               {E_BUSY, 1},
	               {E_SCHEMA, 0},
	               {E_CORRUPT, 0},
	               {E_STORAGE, 1}};

	for (size_t k = 0; k < sizeof(storage) / sizeof(storage[0]); k++) {
		int e = storage[k].err, st = err_grpc(e);
		cr_assert_eq(st, CUT__V1__STATUS_CODE__UNAVAILABLE, "%s",
		             err_str(e));
		cr_assert_eq(rpc_status_error(st), CUT_EUNAVAIL);
		cr_assert_eq(rpc_exit_status(CUT_EUNAVAIL), 69);
		cr_assert_eq(err_http_status(st), 503);
		for (size_t i = 0; i < NROWS; i++)
			if (rows[i].err == e)
				cr_assert_eq(rows[i].retry, storage[k].retry,
				             "%s", err_str(e));
	}
}
