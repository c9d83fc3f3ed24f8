/*
 * cutctl.c - the command-line client of a cutd daemon's control API:
 * start, follow, list, show, export and delete snapshots, and show the
 * node's status.  Data goes to stdout, diagnostics to stderr; the exit
 * status follows sysexits(3) (see usage()).
 *
 * cutctl speaks the control protocol itself, through the same rpc.c that
 * libcut uses, so that it sees every field the daemon sends.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cut/cut.h"
#include "cutctl.h"
#include "cutctl_verbs.h"
#include "rpc.h"

#define DEFAULT_TIMEOUT_MS 5000
/* How often `wait` asks for progress when it shows it. */
#define PROGRESS_MS 250
/* How long one Wait call asks the daemon to wait when nobody watches. */
#define QUIET_SLICE_MS 10000
/* In-transit messages `show` fetches per channel. */
#define SHOW_MESSAGES 5

/* Exit status when the snapshot waited for was aborted or is not
 * consistent: a result, but not the one a script hopes for. */
#define EXIT_NOT_CONSISTENT 1
/* Exit status of watch when its --timeout came and the condition had not
 * held on any snapshot. */
#define EXIT_NOT_HELD 2
/* The longest condition watch sends: the daemon reads control requests
 * of up to 64 KiB. */
#define CONDITION_MAX (60 * 1024)
/* watch's interval: the default and the shortest. */
#define EVERY_MS     2000
#define EVERY_MIN_MS 100

struct opts {
	const char *control, *cluster, *node;
	int json, wait, help, dot;
	long timeout_ms; /* -1: not given */
	long limit, deadline_ms;
	long every_ms; /* watch */
	const char *condition, *condition_file;
	const char *cmd;
	const char *args[4];
	int nargs;
};

struct ctl {
	struct opts *o;
	struct rpc *rpc;
	char url[1024];
	const char *id; /* the command's snapshot ID, or NULL */
};

/* Whether errors are written as JSON (--json).  Set once in main(),
 * before anything can fail: fail() is called from everywhere, before a
 * struct ctl exists too. */
static int json_errors;

/* The commands: cutctl_verbs.h's rows, each run by its cmd_ function. */
#define DECLARE(verb, ...) static int cmd_##verb(struct ctl *x);
CUTCTL_VERBS(DECLARE)
#undef DECLARE

static const struct command {
	const char *name;
	const char *method; /* the control method it calls, or NULL */
	int nargs;
	const char *usage, *help;
	int (*run)(struct ctl *x);
} commands[] = {
#define COMMAND(verb, method, nargs, usage, help)                              \
	{#verb, method, nargs, usage, help, cmd_##verb},
    CUTCTL_VERBS(COMMAND)
#undef COMMAND
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *f)
{
	size_t i;

	fputs("usage: cutctl [--control URL | --cluster FILE --node NAME]\n"
	      "              [--json] [--timeout DURATION] COMMAND [ARGS]\n\n"
	      "commands:\n",
	      f);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %s\n      %s\n", commands[i].usage,
		        commands[i].help);
	fputs("\noptions:\n"
	      "  --control URL      the daemon's control socket, e.g.\n"
	      "                     ipc:///run/cutd/p0.ctl\n"
	      "  --cluster FILE     find it in the cluster file, for the node\n"
	      "  --node NAME        given by --node\n"
	      "  --json             print JSON (one document) instead of "
	      "text;\n"
	      "                     errors too, on stderr: {\"error\": "
	      "{\"code\",\n"
	      "                     \"message\", \"exit_status\"}}\n"
	      "  --timeout DURATION how long to wait for the daemon "
	      "(default 5000 ms);\n"
	      "                     for wait and snapshot --wait: for the "
	      "snapshot\n"
	      "                     (default: until it finishes); for watch: "
	      "the watch\n"
	      "  --initiator NODE   the same as --node (watch)\n"
	      "  --every, --condition, --condition-file: see watch;\n"
	      "                     a DURATION is N, Nms, Ns or Nm (N alone: "
	      "ms)\n"
	      "  --dot              show: a Graphviz digraph (dot -Tsvg)\n"
	      "  --help, --version\n\n"
	      "which daemon (the first that applies):\n"
	      "  --control URL; with --cluster or --node, the node's control "
	      "URL in\n"
	      "  the cluster file; $CUTD_CONTROL; the cluster file "
	      "($CUTD_CLUSTER,\n"
	      "  else /etc/cutd/cluster.ini) and the node ($CUTD_NODE, else "
	      "its only\n"
	      "  node, else the only one whose socket is on this host); "
	      "without\n"
	      "  /etc/cutd/cluster.ini, the only socket in /run/cutd "
	      "($CUTD_RUN_DIR)\n\n"
	      "exit status:\n"
	      "   0 ok (watch: the condition held)\n"
	      "   1 the snapshot waited for was aborted or inconsistent "
	      "(evaluate:\n"
	      "     the condition does not hold)\n"
	      "   2 watch: --timeout came first\n"
	      "  64 usage, or no daemon named and none found\n"
	      "  65 bad argument, unknown snapshot or bad condition (watch "
	      "checks it\n"
	      "     before the first snapshot)\n"
	      "  66 the condition file cannot be read\n"
	      "  69 daemon unavailable (also snapshot and delete while its "
	      "storage\n"
	      "     is degraded)\n"
	      "  70 internal error\n"
	      "  74 the output could not be written\n"
	      "  75 timed out, over the daemon's limits (a condition past its "
	      "deadline\n"
	      "     too) or refused for now; try again\n"
	      "  76 protocol error\n"
	      "  77 permission denied (also: the control socket is closed to "
	      "this user)\n"
	      "  78 bad cluster file or unknown node; or the daemon does not "
	      "offer the\n"
	      "     call (no [schedule] for schedule pause, or an older "
	      "daemon)\n",
	      f);
}

/* Says what failed on stderr, "cutctl: ..." or with --json
 * {"error": {"code": code | null, "message", "exit_status"}}, and returns
 * status.  code is the daemon's gRPC status name when the failure is its
 * answer, else NULL. */
static int
vfail(int status, const char *code, const char *fmt, va_list ap)
{
	char msg[4096];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (json_errors &&
	    cj_print(stderr,
	             json_pack("{s:{s:o, s:o, s:i}}", "error", "code",
	                       cj_string(code), "message", cj_string(msg),
	                       "exit_status", status)) == 0)
		return status;
	fprintf(stderr, "cutctl: %s\n", msg);
	return status;
}

static int fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail_code(int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(status, NULL, fmt, ap);
	va_end(ap);
	return status;
}

static int
fail_code(int status, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(status, code, fmt, ap);
	va_end(ap);
	return status;
}

/* Writes JSON document doc (NULL: building it ran out of memory) to
 * stdout; returns 0 or an exit status after saying what failed. */
static int
json_out(json_t *doc)
{
	int built = doc != NULL;

	if (cj_print(stdout, doc) == 0)
		return 0;
	if (!built)
		return fail(rpc_exit_status(CUT_ENOMEM), "out of memory");
	return fail(EX_IOERR, "cannot write the output");
}

/* The exit status for a CUT_E* code: the error table's (proto/errtab.h),
 * as every failure that has a CUT_E* code exits. */
static int
exit_code(int err)
{
	return rpc_exit_status(err);
}

/* The name of user uid or group gid, or its number, in buf. */
static const char *
user_name(uid_t uid, char *buf, size_t size)
{
	const struct passwd *pw = getpwuid(uid);

	if (pw != NULL)
		return pw->pw_name;
	snprintf(buf, size, "%lu", (unsigned long)uid);
	return buf;
}

static const char *
group_name(gid_t gid, char *buf, size_t size)
{
	const struct group *gr = getgrgid(gid);

	if (gr != NULL)
		return gr->gr_name;
	snprintf(buf, size, "%lu", (unsigned long)gid);
	return buf;
}

/*
 * Why this user may not connect to the IPC socket of url, in buf: whose
 * the socket is, or, when it cannot even be looked at, whose the
 * directory on its path that is closed to this user is.  Returns 0, or -1
 * (buf empty) for a URL that is not ipc:// or a path with nothing to say.
 */
static int
socket_owner(const char *url, char *buf, size_t size)
{
	char path[1024], ubuf[24], gbuf[24], *slash;
	const char *what = "the socket", *group;
	struct stat sb;

	buf[0] = '\0';
	if (strncmp(url, "ipc://", 6) != 0 ||
	    snprintf(path, sizeof(path), "%s", url + 6) >= (int)sizeof(path))
		return -1;
	while (stat(path, &sb) != 0) {
		if ((slash = strrchr(path, '/')) == NULL || slash == path)
			return -1;
		*slash = '\0';
		what = "the directory";
	}
	group = group_name(sb.st_gid, gbuf, sizeof(gbuf));
	snprintf(buf, size,
	         "%s %s is mode %04o, owner %s, group %s: only the daemon's "
	         "user, root and members of group %s (socket_group in the "
	         "cluster file) may connect",
	         what, path, (unsigned)(sb.st_mode & 07777),
	         user_name(sb.st_uid, ubuf, sizeof(ubuf)), group, group);
	return 0;
}

/* Says why the daemon at x->url could not be asked (rv, a CUT_E* code of
 * the connection, not the daemon's answer) and returns the exit status.
 * A socket this user may not open (NNG_EPERM, CUT_EPERM) says whose it
 * is. */
static int
unreached(const struct ctl *x, int rv)
{
	char why[1400];

	if (rv == CUT_EPERM && socket_owner(x->url, why, sizeof(why)) == 0)
		return fail(exit_code(rv),
		            "permission denied: cannot connect to %s: %s",
		            x->url, why);
	if (rv == CUT_EPERM)
		return fail(exit_code(rv),
		            "permission denied: cannot connect to %s", x->url);
	return fail(exit_code(rv), "%s: %s", x->url, cut_strerror(rv));
}

/* Parses a number in 0..max; returns -1 if s is not one. */
static long
number(const char *s, long max)
{
	char *end;
	long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	v = strtol(s, &end, 10);
	return *end == '\0' && v >= 0 && v <= max ? v : -1;
}

/* The value of option argv[*i] ("--opt VALUE" or "--opt=VALUE"). */
static const char *
value(int argc, char **argv, int *i, const char *eq)
{
	if (eq != NULL)
		return eq + 1;
	return *i + 1 < argc ? argv[++*i] : NULL;
}

/* Parses a duration, N followed by ms, s, m or nothing (ms), into *ret
 * milliseconds in min..max; returns 0 or EX_USAGE. */
static int
duration(const char *name, const char *v, long min, long max, long *ret)
{
	char *end;
	long n, unit = 1;

	if (v == NULL || *v < '0' || *v > '9')
		return fail(EX_USAGE, "bad %s value \"%s\"", name, v);
	n = strtol(v, &end, 10);
	if (strcmp(end, "s") == 0)
		unit = 1000;
	else if (strcmp(end, "m") == 0)
		unit = 60000;
	else if (*end != '\0' && strcmp(end, "ms") != 0)
		return fail(EX_USAGE, "bad %s value \"%s\" (N, Nms, Ns or Nm)",
		            name, v);
	if (n < 0 || n > max / unit || n * unit < min)
		return fail(EX_USAGE,
		            "%s \"%s\" is out of range (%ld ms .. "
		            "%ld ms)",
		            name, v, min, max);
	*ret = n * unit;
	return 0;
}

/* Parses a numeric option's value into *ret; returns 0 or EX_USAGE. */
static int
numeric(const char *name, const char *v, long min, long max, long *ret)
{
	long n = number(v, max);

	if (n < min)
		return fail(EX_USAGE, "bad %s value \"%s\"", name, v);
	*ret = n;
	return 0;
}

/* Parses one option; returns 0 or EX_USAGE. */
static int
option(struct opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *eq = strchr(a, '='), *v;
	char name[32];

	snprintf(name, sizeof(name), "%.*s",
	         (int)(eq != NULL ? (size_t)(eq - a) : strlen(a)), a);
	if (strcmp(name, "--json") == 0 || strcmp(name, "--wait") == 0 ||
	    strcmp(name, "--dot") == 0 || strcmp(name, "--help") == 0 ||
	    strcmp(name, "-h") == 0) {
		if (eq != NULL)
			return fail(EX_USAGE, "%s takes no value", name);
		if (name[2] == 'j')
			o->json = 1;
		else if (name[2] == 'w')
			o->wait = 1;
		else if (name[2] == 'd')
			o->dot = 1;
		else
			o->help = 1;
		return 0;
	}
	if (strcmp(name, "--control") != 0 && strcmp(name, "--cluster") != 0 &&
	    strcmp(name, "--node") != 0 && strcmp(name, "--timeout") != 0 &&
	    strcmp(name, "--limit") != 0 && strcmp(name, "--deadline") != 0 &&
	    strcmp(name, "--every") != 0 && strcmp(name, "--condition") != 0 &&
	    strcmp(name, "--condition-file") != 0 &&
	    strcmp(name, "--initiator") != 0)
		return fail(EX_USAGE, "unknown option %s (see cutctl --help)",
		            name);
	if ((v = value(argc, argv, i, eq)) == NULL)
		return fail(EX_USAGE, "%s needs a value", name);
	if (strcmp(name, "--control") == 0)
		o->control = v;
	else if (strcmp(name, "--cluster") == 0)
		o->cluster = v;
	else if (strcmp(name, "--node") == 0 ||
	         strcmp(name, "--initiator") == 0)
		o->node = v;
	else if (strcmp(name, "--condition") == 0)
		o->condition = v;
	else if (strcmp(name, "--condition-file") == 0)
		o->condition_file = v;
	else if (strcmp(name, "--every") == 0)
		return duration(name, v, EVERY_MIN_MS, 86400000, &o->every_ms);
	else if (strcmp(name, "--timeout") == 0)
		return duration(name, v, 1, 86400000, &o->timeout_ms);
	else if (strcmp(name, "--limit") == 0)
		return numeric(name, v, 0, 1000000, &o->limit);
	else
		return numeric(name, v, 0, 86400000, &o->deadline_ms);
	return 0;
}

/* Parses the command line into *o; returns 0 or an exit status. */
static int
parse(struct opts *o, int argc, char **argv)
{
	int i, rv, dashdash = 0;

	o->timeout_ms = -1;
	for (i = 1; i < argc; i++) {
		if (!dashdash && strcmp(argv[i], "--version") == 0) {
			printf("cutctl %s\n", CUT_VERSION);
			exit(EX_OK);
		}
		if (!dashdash && strcmp(argv[i], "--") == 0) {
			dashdash = 1;
		} else if (!dashdash && argv[i][0] == '-' && argv[i][1] != 0) {
			if ((rv = option(o, argc, argv, &i)) != 0)
				return rv;
		} else if (o->cmd == NULL) {
			o->cmd = argv[i];
		} else if (o->nargs < 4) {
			o->args[o->nargs++] = argv[i];
		} else {
			return fail(EX_USAGE, "too many arguments");
		}
	}
	return 0;
}

/* Finds the command named by o (with the right number of arguments if
 * check_args), or prints why not. */
static const struct command *
find_command(const struct opts *o, int check_args)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(o->cmd, commands[i].name) == 0)
			break;
	if (i == NCOMMANDS) {
		fail(EX_USAGE, "unknown command \"%s\" (see cutctl --help)",
		     o->cmd);
		return NULL;
	}
	if (check_args && o->nargs != commands[i].nargs) {
		fail(EX_USAGE, "usage: cutctl %s", commands[i].usage);
		return NULL;
	}
	return &commands[i];
}

/* Finds the control URL from the options, the environment and the
 * defaults (cutctl_where.c); returns 0 or an exit status. */
static int
control_url(struct ctl *x)
{
	char why[4096];
	int rv;

	rv = find_control(x->o->control, x->o->cluster, x->o->node, x->url,
	                  sizeof(x->url), why, sizeof(why));
	/* The cluster file's problems read as cutd prints them, FILE:LINE:
	 * message, one per line. */
	if (rv == EX_CONFIG && !json_errors) {
		fprintf(stderr, "%s\n", why);
		return rv;
	}
	return rv != 0 ? fail(rv, "%s", why) : 0;
}

/* The per-call timeout. */
static int
call_timeout(const struct ctl *x)
{
	return x->o->timeout_ms > 0 ? (int)x->o->timeout_ms
	                            : DEFAULT_TIMEOUT_MS;
}

/* Says why the daemon refused a call, answered a, in plain words (the
 * gRPC name goes into --json's "code"), and returns the exit status.  A
 * refusal for want of permission or over a limit gets a sentence of its
 * own, so that nobody mistakes it for a failure. */
static int
refused(const struct ctl *x, int err, const struct rpc_answer *a)
{
	const char *why =
	    a->message[0] != '\0' ? a->message : cut_strerror(err);
	const char *code = rpc_status_name(a->status);

	if (err == CUT_EPERM)
		return fail_code(exit_code(err), code,
		                 "permission denied: %s (PERMISSION_DENIED). "
		                 "Nothing was changed",
		                 why);
	if (err == CUT_ELIMIT)
		return fail_code(exit_code(err), code,
		                 "the daemon is at its limit: %s "
		                 "(RESOURCE_EXHAUSTED). Nothing was changed; "
		                 "try again later",
		                 why);
	if (err == CUT_ENOENT && x->id != NULL)
		return fail_code(exit_code(err), code, "%s: %s", why, x->id);
	return fail_code(exit_code(err), code, "%s", why);
}

/* Calls method (a row of the methods' table, proto/ctltab.h, whose reply
 * type it decodes) with req; returns 0 with the answer in *a, or an exit
 * status after saying why the daemon could not be asked. */
static int
ask(struct ctl *x, const char *method, const ProtobufCMessage *req,
    int timeout_ms, struct rpc_answer *a)
{
	int rv;

	if (x->rpc == NULL && (rv = rpc_open(x->url, &x->rpc)) != 0)
		return unreached(x, rv);
	if ((rv = rpc_call(x->rpc, method, req, ctltab_find(method)->reply,
	                   timeout_ms, a)) != 0)
		return unreached(x, rv);
	return 0;
}

/*
 * One call.  Returns 0 with the body in *ret (caller frees), or an exit
 * status after saying what went wrong, with *ret NULL.  With allow_deadline
 * a DEADLINE_EXCEEDED answer also returns 0, with its body or NULL (Wait).
 */
static int
call(struct ctl *x, const char *method, const ProtobufCMessage *req,
     int timeout_ms, int allow_deadline, ProtobufCMessage **ret)
{
	struct rpc_answer a = {0};
	int rv;

	*ret = NULL; /* also tells gcc that no path leaves it unset */
	if ((rv = ask(x, method, req, timeout_ms, &a)) != 0)
		return rv;
	rv = rpc_status_error(a.status);
	if (rv == CUT_ETIMEDOUT && allow_deadline) {
		*ret = a.body;
		return 0;
	}
	if (rv != 0) {
		rpc_answer_clear(&a);
		return refused(x, rv, &a);
	}
	if (a.body == NULL)
		return fail(exit_code(CUT_EPROTO),
		            "the daemon's reply has no body");
	*ret = a.body;
	return 0;
}

/* The exit status for a snapshot that is done. */
static int
outcome(const Cut__V1__SnapshotInfo *s)
{
	if (s->status == CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE &&
	    s->audit != NULL && s->audit->consistent)
		return EX_OK;
	return EXIT_NOT_CONSISTENT;
}

static void
progress(const Cut__V1__SnapshotInfo *s, uint64_t t0)
{
	fprintf(stderr, "\r\033[K%s: %u/%u parts, %u channels recording, ",
	        s->id, s->parts_received, s->parts_expected,
	        s->channels_recording);
	fprintf(stderr, "%.1f s", (double)(now_ms() - t0) / 1000);
	fflush(stderr);
}

/* Waits for snapshot id and prints its summary. */
static int
wait_for(struct ctl *x, const char *id)
{
	Cut__V1__WaitRequest req = CUT__V1__WAIT_REQUEST__INIT;
	int tty = isatty(STDERR_FILENO), rv;
	uint64_t t0 = now_ms(), end, now;
	Cut__V1__SnapshotInfo *s = NULL;
	ProtobufCMessage *body = NULL;

	end = x->o->timeout_ms > 0 ? t0 + (uint64_t)x->o->timeout_ms : 0;
	req.snapshot_id = (char *)id;
	for (;;) {
		now = now_ms();
		req.timeout_ms = tty ? PROGRESS_MS : QUIET_SLICE_MS;
		if (end != 0 && end - now < req.timeout_ms)
			req.timeout_ms = now < end ? (uint32_t)(end - now) : 0;
		rv = call(x, CUTPROTO_METHOD_WAIT, &req.base,
		          (int)req.timeout_ms + DEFAULT_TIMEOUT_MS, 1, &body);
		if (rv != 0)
			break;
		s = (Cut__V1__SnapshotInfo *)body;
		if (s == NULL) /* still in progress, no details */
			rv = end != 0 && now_ms() >= end
			         ? fail(exit_code(CUT_ETIMEDOUT),
			                "%s still in progress", id)
			         : 0;
		else if (rpc_check_snapshot(s) != 0)
			rv = fail(exit_code(CUT_EPROTO),
			          "bad snapshot from the daemon");
		else if (s->status !=
		         CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS)
			break;
		else if (end != 0 && now_ms() >= end)
			rv = fail(exit_code(CUT_ETIMEDOUT),
			          "%s still in progress", id);
		else if (tty)
			progress(s, t0);
		/* A daemon that answers at once about a snapshot in
		 * progress (one it does not follow) is asked again later. */
		if (rv == 0 && now_ms() - now < req.timeout_ms / 2)
			usleep(100 * 1000);
		if (body != NULL)
			protobuf_c_message_free_unpacked(body, NULL);
		if (rv != 0)
			break;
	}
	if (tty)
		fputs("\r\033[K", stderr);
	if (rv != 0)
		return rv;
	if (!x->o->json)
		print_summary_line(stdout, s);
	else if ((rv = json_out(snapshot_json(s, DETAIL_SUMMARY))) != 0) {
		protobuf_c_message_free_unpacked(body, NULL);
		return rv;
	}
	rv = outcome(s);
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

/* Writes the reply rep to the request req of a command; returns 0 or an
 * exit status. */
typedef int printer(struct ctl *x, const ProtobufCMessage *req,
                    ProtobufCMessage *rep);

/* The usual command: one call of method with req, its reply written by
 * print, and freed.  Returns the exit status. */
static int
call_print(struct ctl *x, const char *method, const ProtobufCMessage *req,
           int timeout_ms, printer *print)
{
	ProtobufCMessage *body;
	int rv;

	if ((rv = call(x, method, req, timeout_ms, 0, &body)) != 0)
		return rv;
	rv = print(x, req, body);
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

static int
print_started(struct ctl *x, const ProtobufCMessage *req,
              ProtobufCMessage *body)
{
	const Cut__V1__StartReply *rep = (const Cut__V1__StartReply *)body;

	(void)req;
	if (x->o->wait) {
		if (!x->o->json && isatty(STDERR_FILENO))
			fprintf(stderr, "started %s\n", rep->snapshot_id);
		return wait_for(x, rep->snapshot_id);
	}
	if (x->o->json)
		return json_out(
		    json_pack("{s:o, s:I}", "id", cj_string(rep->snapshot_id),
		              "started_ms", (json_int_t)rep->started_ms));
	printf("%s\n", rep->snapshot_id);
	return 0;
}

static int
cmd_snapshot(struct ctl *x)
{
	Cut__V1__StartRequest req = CUT__V1__START_REQUEST__INIT;

	req.has_timeout_ms = x->o->deadline_ms > 0;
	req.timeout_ms = (uint32_t)x->o->deadline_ms;
	return call_print(x, CUTPROTO_METHOD_START, &req.base, call_timeout(x),
	                  print_started);
}

static int
cmd_wait(struct ctl *x)
{
	return wait_for(x, x->o->args[0]);
}

static int
print_list(struct ctl *x, const ProtobufCMessage *req, ProtobufCMessage *body)
{
	const Cut__V1__ListReply *l = (const Cut__V1__ListReply *)body;

	(void)req;
	for (size_t i = 0; i < l->n_snapshots; i++)
		if (rpc_check_snapshot(l->snapshots[i]) != 0)
			return fail(exit_code(CUT_EPROTO),
			            "bad list from the daemon");
	if (x->o->json)
		return json_out(list_json(l));
	print_list_human(stdout, l);
	return 0;
}

static int
cmd_list(struct ctl *x)
{
	Cut__V1__ListRequest req = CUT__V1__LIST_REQUEST__INIT;

	req.has_limit = x->o->limit > 0;
	req.limit = (uint32_t)(x->o->limit > 0 ? x->o->limit : 0);
	return call_print(x, CUTPROTO_METHOD_LIST, &req.base, call_timeout(x),
	                  print_list);
}

static int
print_show(struct ctl *x, const ProtobufCMessage *req, ProtobufCMessage *body)
{
	const Cut__V1__SnapshotInfo *s = (const Cut__V1__SnapshotInfo *)body;

	(void)req;
	if (rpc_check_snapshot(s) != 0)
		return fail(exit_code(CUT_EPROTO),
		            "bad snapshot from the daemon");
	if (x->o->dot)
		print_snapshot_dot(stdout, s);
	else if (x->o->json)
		return json_out(snapshot_json(s, DETAIL_SHOW));
	else
		print_snapshot_human(stdout, s);
	return 0;
}

/* show: states, and (as text) the first few in-transit messages of each
 * channel. */
static int
cmd_show(struct ctl *x)
{
	Cut__V1__GetRequest req = CUT__V1__GET_REQUEST__INIT;

	req.snapshot_id = (char *)x->o->args[0];
	req.has_include_states = req.include_states = 1;
	req.has_include_messages = req.include_messages =
	    !x->o->json && !x->o->dot;
	req.has_max_messages = 1;
	req.max_messages = SHOW_MESSAGES;
	return call_print(x, CUTPROTO_METHOD_GET, &req.base, call_timeout(x),
	                  print_show);
}

static int
cmd_export(struct ctl *x)
{
	int32_t status = CUT__V1__STATUS_CODE__OK;
	Cut__V1__SnapshotInfo *s;
	char err[RPC_MSG_MAX] = "";
	int rv;

	if (x->rpc == NULL && (rv = rpc_open(x->url, &x->rpc)) != 0)
		return unreached(x, rv);
	rv = rpc_get_snapshot(x->rpc, x->o->args[0], 1, 1, call_timeout(x), &s,
	                      err, sizeof(err), &status);
	if (rv != 0 && status != CUT__V1__STATUS_CODE__OK) {
		struct rpc_answer a = {.status = status};
		snprintf(a.message, sizeof(a.message), "%s", err);
		return refused(x, rv, &a);
	}
	if (rv != 0)
		return fail(exit_code(rv), "%s",
		            err[0] != '\0' ? err : cut_strerror(rv));
	rv = json_out(snapshot_json(s, DETAIL_EXPORT));
	protobuf_c_message_free_unpacked(&s->base, NULL);
	return rv;
}

static int
print_status(struct ctl *x, const ProtobufCMessage *req, ProtobufCMessage *body)
{
	(void)req;
	if (x->o->json)
		return json_out(status_json((Cut__V1__StatusReply *)body));
	print_status_human(stdout, (Cut__V1__StatusReply *)body, now_ms());
	return 0;
}

static int
cmd_status(struct ctl *x)
{
	Cut__V1__StatusRequest req = CUT__V1__STATUS_REQUEST__INIT;

	return call_print(x, CUTPROTO_METHOD_STATUS, &req.base, call_timeout(x),
	                  print_status);
}

static int
print_deleted(struct ctl *x, const ProtobufCMessage *req,
              ProtobufCMessage *body)
{
	const Cut__V1__DeleteRequest *rq = (const Cut__V1__DeleteRequest *)req;

	(void)body;
	if (x->o->json)
		return json_out(
		    json_pack("{s:o}", "deleted", cj_string(rq->snapshot_id)));
	printf("deleted %s\n", rq->snapshot_id);
	return 0;
}

static int
cmd_delete(struct ctl *x)
{
	Cut__V1__DeleteRequest req = CUT__V1__DELETE_REQUEST__INIT;

	req.snapshot_id = (char *)x->o->args[0];
	return call_print(x, CUTPROTO_METHOD_DELETE, &req.base, call_timeout(x),
	                  print_deleted);
}

/* The condition of watch, from --condition or --condition-file, into
 * buf; returns 0 or an exit status. */
static int
read_condition(const struct opts *o, char *buf, size_t size)
{
	FILE *f;
	size_t n;

	if ((o->condition == NULL) == (o->condition_file == NULL))
		return fail(EX_USAGE, "watch needs --condition SQL or "
		                      "--condition-file FILE (one of them)");
	if (o->condition != NULL) {
		if (strlen(o->condition) >= size)
			return fail(EX_DATAERR,
			            "the condition is over %zu bytes",
			            size - 1);
		snprintf(buf, size, "%s", o->condition);
		return 0;
	}
	if ((f = fopen(o->condition_file, "r")) == NULL)
		return fail(EX_NOINPUT, "%s: %s", o->condition_file,
		            strerror(errno));
	n = fread(buf, 1, size, f);
	if (ferror(f)) {
		fclose(f);
		return fail(EX_NOINPUT, "%s: cannot read it",
		            o->condition_file);
	}
	fclose(f);
	if (n >= size)
		return fail(EX_DATAERR, "%s: the condition is over %zu bytes",
		            o->condition_file, size - 1);
	buf[n] = '\0';
	if (strlen(buf) != n)
		return fail(EX_DATAERR, "%s: holds a NUL byte",
		            o->condition_file);
	return 0;
}

/*
 * Evaluates sql on snapshot id (NULL: only checks it).  Returns 0 with
 * the reply in *ret (caller frees); or, after saying why, EX_DATAERR for
 * a bad condition, EX_TEMPFAIL for one stopped at its deadline; for a
 * snapshot it cannot be judged on (not complete, not consistent), -1 if
 * skip (watch takes the next one), else EX_DATAERR; or another exit
 * status.
 */
static int
evaluate(struct ctl *x, const char *id, const char *sql, int skip,
         Cut__V1__EvaluateReply **ret)
{
	Cut__V1__EvaluateRequest req = CUT__V1__EVALUATE_REQUEST__INIT;
	struct rpc_answer a = {0};
	int rv;

	*ret = NULL;
	req.snapshot_id = (char *)(id != NULL ? id : "");
	req.sql = (char *)sql;
	if ((rv = ask(x, CUTPROTO_METHOD_EVALUATE, &req.base,
	              DEFAULT_TIMEOUT_MS, &a)) != 0)
		return rv;
	/* The exit statuses are the table's, but for FAILED_PRECONDITION
	 * (exit 75, "try again", for a Delete of a snapshot in progress): a
	 * snapshot that cannot be judged (aborted, inconsistent, another
	 * node's) never will be, a bad argument. */
	rv = rpc_status_error(a.status);
	if (a.status == CUT__V1__STATUS_CODE__INVALID_ARGUMENT)
		return fail_code(exit_code(rv), rpc_status_name(a.status),
		                 "bad condition: %s", a.message);
	if (a.status == CUT__V1__STATUS_CODE__RESOURCE_EXHAUSTED)
		return fail_code(exit_code(rv), rpc_status_name(a.status),
		                 "condition stopped: %s", a.message);
	if (a.status == CUT__V1__STATUS_CODE__FAILED_PRECONDITION && !skip)
		return fail_code(EX_DATAERR, rpc_status_name(a.status), "%s",
		                 a.message);
	if (a.status == CUT__V1__STATUS_CODE__FAILED_PRECONDITION) {
		fprintf(stderr, "cutctl: %s: skipped: %s\n", id ? id : "",
		        a.message);
		rpc_answer_clear(&a);
		return -1;
	}
	if (rv != 0) {
		rpc_answer_clear(&a);
		return refused(x, rv, &a);
	}
	if (a.body == NULL)
		return fail(exit_code(CUT_EPROTO),
		            "the daemon's reply has no body");
	*ret = (Cut__V1__EvaluateReply *)a.body;
	return 0;
}

/* Waits for snapshot id to end, until end_ms; returns 0 with its status
 * in *ret_done (1 complete and consistent, 0 not, -1 still in progress at
 * end_ms), or an exit status. */
static int
wait_quietly(struct ctl *x, const char *id, uint64_t end_ms, int *ret_done)
{
	Cut__V1__WaitRequest req = CUT__V1__WAIT_REQUEST__INIT;
	ProtobufCMessage *body;
	Cut__V1__SnapshotInfo *s;
	uint64_t now;
	int rv;

	req.snapshot_id = (char *)id;
	for (;;) {
		now = now_ms();
		if (end_ms != 0 && now >= end_ms) {
			*ret_done = -1;
			return 0;
		}
		req.timeout_ms = QUIET_SLICE_MS;
		if (end_ms != 0 && end_ms - now < req.timeout_ms)
			req.timeout_ms = (uint32_t)(end_ms - now);
		rv = call(x, CUTPROTO_METHOD_WAIT, &req.base,
		          (int)req.timeout_ms + DEFAULT_TIMEOUT_MS, 1, &body);
		if (rv != 0)
			return rv;
		s = (Cut__V1__SnapshotInfo *)body;
		if (s != NULL && rpc_check_snapshot(s) != 0) {
			protobuf_c_message_free_unpacked(body, NULL);
			return fail(exit_code(CUT_EPROTO),
			            "bad snapshot from the daemon");
		}
		if (s != NULL &&
		    s->status != CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS) {
			*ret_done = outcome(s) == EX_OK;
			if (!*ret_done)
				fprintf(stderr, "cutctl: %s: skipped: %s\n", id,
				        s->reason[0] != '\0' ? s->reason
				        : s->audit != NULL   ? s->audit->reason
				                           : "not consistent");
			protobuf_c_message_free_unpacked(body, NULL);
			return 0;
		}
		if (body != NULL)
			protobuf_c_message_free_unpacked(body, NULL);
		if (now_ms() - now < req.timeout_ms / 2)
			usleep(100 * 1000);
	}
}

/* evaluate: the condition on one snapshot. */
static int
cmd_evaluate(struct ctl *x)
{
	static char sql[CONDITION_MAX + 1];
	Cut__V1__EvaluateReply *ev;
	const char *id = x->o->args[0];
	int rv;

	if ((rv = read_condition(x->o, sql, sizeof(sql))) != 0)
		return rv;
	if ((rv = evaluate(x, id, sql, 0, &ev)) != 0)
		return rv;
	if (x->o->json)
		rv = json_out(json_pack(
		    "{s:o, s:b, s:I, s:b, s:o}", "id", cj_string(id), "held",
		    ev->held, "rows", (json_int_t)ev->rows, "more", ev->more,
		    "value", cj_string(ev->value ? ev->value : "")));
	else
		printf("%s: %s\nrows %u%s\nvalue %s\n", id,
		       ev->held ? "holds" : "does not hold", ev->rows,
		       ev->more ? " or more" : "", ev->value ? ev->value : "");
	if (rv == 0 && !ev->held)
		rv = EXIT_NOT_CONSISTENT;
	protobuf_c_message_free_unpacked(&ev->base, NULL);
	return rv;
}

/*
 * watch: checks the condition, then takes a snapshot every interval
 * (Start and Wait, as `snapshot --wait` does) and evaluates the condition
 * on each that is complete and consistent, until it holds (exit 0, the
 * id on stdout) or --timeout ends the watch (EXIT_NOT_HELD).  The
 * interval runs from one Start to the next; a snapshot that takes longer
 * is followed by the next at once.
 */
static int
cmd_watch(struct ctl *x)
{
	static char sql[CONDITION_MAX + 1];
	Cut__V1__StartRequest sreq = CUT__V1__START_REQUEST__INIT;
	Cut__V1__EvaluateReply *ev;
	Cut__V1__StartReply *rep;
	ProtobufCMessage *body;
	long every = x->o->every_ms > 0 ? x->o->every_ms : EVERY_MS;
	uint64_t t0 = now_ms(), end = 0, tick, now;
	unsigned taken = 0;
	char id[80];
	int rv, done = 0;

	if ((rv = read_condition(x->o, sql, sizeof(sql))) != 0)
		return rv;
	if (x->o->timeout_ms > 0)
		end = t0 + (uint64_t)x->o->timeout_ms;
	/* Before any snapshot: a condition that cannot run is an error
	 * now, not after the first interval. */
	if ((rv = evaluate(x, NULL, sql, 0, &ev)) != 0)
		return rv;
	protobuf_c_message_free_unpacked(&ev->base, NULL);
	sreq.has_timeout_ms = x->o->deadline_ms > 0;
	sreq.timeout_ms = (uint32_t)x->o->deadline_ms;
	for (;;) {
		tick = now_ms();
		if ((rv = call(x, CUTPROTO_METHOD_START, &sreq.base,
		               DEFAULT_TIMEOUT_MS, 0, &body)) != 0)
			return rv;
		rep = (Cut__V1__StartReply *)body;
		snprintf(id, sizeof(id), "%s", rep->snapshot_id);
		protobuf_c_message_free_unpacked(body, NULL);
		taken++;
		if ((rv = wait_quietly(x, id, end, &done)) != 0)
			return rv;
		if (done == 1) {
			rv = evaluate(x, id, sql, 1, &ev);
			if (rv > 0)
				return rv;
			if (rv == 0 && ev->held) {
				if (x->o->json)
					rv = json_out(json_pack(
					    "{s:o, s:b, s:I, s:o, s:I}", "id",
					    cj_string(id), "held", 1, "rows",
					    (json_int_t)ev->rows, "value",
					    cj_string(ev->value ? ev->value
					                        : ""),
					    "snapshots", (json_int_t)taken));
				else
					printf("%s\n", id);
				protobuf_c_message_free_unpacked(&ev->base,
				                                 NULL);
				return rv;
			}
			if (rv == 0) {
				fprintf(stderr,
				        "cutctl: %s: does not hold (%s)\n", id,
				        ev->value != NULL ? ev->value : "");
				protobuf_c_message_free_unpacked(&ev->base,
				                                 NULL);
			}
		}
		now = now_ms();
		if (end != 0 && now >= end)
			return fail(EXIT_NOT_HELD,
			            "the condition did not hold on any of %u "
			            "snapshots in %ld ms",
			            taken, x->o->timeout_ms);
		if (now < tick + (uint64_t)every) {
			uint64_t wake = tick + (uint64_t)every;
			if (end != 0 && wake > end)
				wake = end;
			usleep((useconds_t)(wake - now) * 1000);
		}
	}
}

static int
print_kept(struct ctl *x, const ProtobufCMessage *req, ProtobufCMessage *body)
{
	const Cut__V1__KeepRequest *rq = (const Cut__V1__KeepRequest *)req;

	(void)body;
	if (x->o->json)
		return json_out(json_pack("{s:o, s:b}", "id",
		                          cj_string(rq->snapshot_id), "keep",
		                          rq->keep));
	printf("%s %s\n", rq->keep ? "kept" : "no longer kept",
	       rq->snapshot_id);
	return 0;
}

static int
keep_or_not(struct ctl *x, int keep)
{
	Cut__V1__KeepRequest req = CUT__V1__KEEP_REQUEST__INIT;

	req.snapshot_id = (char *)x->o->args[0];
	req.keep = keep;
	return call_print(x, CUTPROTO_METHOD_KEEP, &req.base, call_timeout(x),
	                  print_kept);
}

static int
cmd_keep(struct ctl *x)
{
	return keep_or_not(x, 1);
}

static int
cmd_unkeep(struct ctl *x)
{
	return keep_or_not(x, 0);
}

static int
print_schedule(struct ctl *x, const ProtobufCMessage *req,
               ProtobufCMessage *body)
{
	(void)req;
	if (x->o->json)
		return json_out(schedule_json((Cut__V1__ScheduleStatus *)body));
	print_schedule_human(stdout, (Cut__V1__ScheduleStatus *)body, now_ms());
	return 0;
}

static int
cmd_schedule(struct ctl *x)
{
	static const char *const verbs[] = {"show", "pause", "resume"};
	static const char *const methods[] = {CUTPROTO_METHOD_SCHEDULE_SHOW,
	                                      CUTPROTO_METHOD_SCHEDULE_PAUSE,
	                                      CUTPROTO_METHOD_SCHEDULE_RESUME};
	Cut__V1__ScheduleRequest req = CUT__V1__SCHEDULE_REQUEST__INIT;
	size_t k;

	for (k = 0; k < 3; k++)
		if (strcmp(x->o->args[0], verbs[k]) == 0)
			break;
	if (k == 3)
		return fail(EX_USAGE,
		            "usage: cutctl schedule show|pause|resume, not "
		            "\"%s\"",
		            x->o->args[0]);
	return call_print(x, methods[k], &req.base, call_timeout(x),
	                  print_schedule);
}

static int
print_restored(struct ctl *x, const ProtobufCMessage *req,
               ProtobufCMessage *body)
{
	const Cut__V1__RestoreReply *rep = (const Cut__V1__RestoreReply *)body;

	(void)req;
	if (x->o->json)
		return json_out(
		    json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "snapshot_id",
		              cj_string(rep->snapshot_id), "generation",
		              (json_int_t)rep->generation, "nodes",
		              (json_int_t)rep->nodes, "replayed",
		              (json_int_t)rep->replayed, "state_bytes",
		              (json_int_t)rep->state_bytes, "message_bytes",
		              (json_int_t)rep->message_bytes));
	printf("restored %s on %u node%s (generation %llu): %llu "
	       "in-flight message%s replayed\n",
	       rep->snapshot_id, rep->nodes, rep->nodes == 1 ? "" : "s",
	       (unsigned long long)rep->generation,
	       (unsigned long long)rep->replayed,
	       rep->replayed == 1 ? "" : "s");
	return 0;
}

/* restore: the whole cluster to one snapshot. */
static int
cmd_restore(struct ctl *x)
{
	Cut__V1__RestoreRequest req = CUT__V1__RESTORE_REQUEST__INIT;
	long wait;

	req.snapshot_id = (char *)x->o->args[0];
	req.has_timeout_ms = x->o->timeout_ms > 0;
	req.timeout_ms =
	    (uint32_t)(x->o->timeout_ms > 0 ? x->o->timeout_ms : 0);
	/* The daemon waits for the votes, then for the confirmations. */
	wait = 2 * (x->o->timeout_ms > 0 ? x->o->timeout_ms : 10000) +
	       DEFAULT_TIMEOUT_MS;
	return call_print(x, CUTPROTO_METHOD_RESTORE, &req.base,
	                  wait > 0x7fffffff ? 0x7fffffff : (int)wait,
	                  print_restored);
}

int
main(int argc, char **argv)
{
	struct opts o = {0};
	struct ctl x = {.o = &o};
	const struct command *c;
	int rv;

	/* --json anywhere before "--" makes every error JSON, those of
	 * parsing the command line too. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			json_errors = 1;
	if ((rv = parse(&o, argc, argv)) != 0)
		return rv;
	if (o.help) {
		if (o.cmd == NULL) {
			usage(stdout);
			return EX_OK;
		}
		if ((c = find_command(&o, 0)) == NULL)
			return EX_USAGE;
		printf("usage: cutctl [OPTIONS] %s\n  %s\n(cutctl --help "
		       "lists the options)\n",
		       c->usage, c->help);
		return EX_OK;
	}
	if (o.cmd == NULL) {
		usage(stderr);
		return EX_USAGE;
	}
	if ((c = find_command(&o, 1)) == NULL)
		return EX_USAGE;
	if (o.dot && (strcmp(c->name, "show") != 0 || o.json))
		return fail(EX_USAGE, "--dot is for show, without --json");
	if (strstr(c->usage, " ID") != NULL)
		x.id = o.args[0];
	if ((rv = control_url(&x)) != 0)
		return rv;
	rv = c->run(&x);
	rpc_close(x.rpc);
	if (fflush(stdout) != 0 && rv == 0)
		rv = fail(EX_IOERR, "cannot write the output");
	return rv;
}
