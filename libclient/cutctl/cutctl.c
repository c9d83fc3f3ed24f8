/*
 * cutctl.c - the command-line client of a cutd daemon's control API:
 * start, follow, list, show, export and delete snapshots, and show the
 * node's status.  Data goes to stdout, diagnostics to stderr; the exit
 * status follows sysexits(3) (see usage()).
 *
 * cutctl speaks the control protocol itself, through the same rpc.c that
 * libcut uses, so that it sees every field the daemon sends.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cut/cut.h"
#include "cutctl.h"
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

struct opts {
	const char *control, *cluster, *node;
	int json, wait, help;
	long timeout_ms; /* -1: not given */
	long limit, deadline_ms;
	const char *cmd;
	const char *args[4];
	int nargs;
};

struct ctl {
	struct opts *o;
	struct rpc *rpc;
	char url[1024];
};

static const struct command {
	const char *name, *usage, *help;
	int nargs;
} commands[] = {
    {"snapshot", "snapshot [--wait] [--deadline MS]",
     "start a snapshot here; print its id, or with --wait its outcome", 0},
    {"wait", "wait ID", "wait until snapshot ID is complete or aborted", 1},
    {"list", "list [--limit N]", "list the snapshots, newest first", 0},
    {"show", "show ID", "show a snapshot: nodes, channels, audit", 1},
    {"export", "export ID",
     "write the whole snapshot, states and messages, as JSON", 1},
    {"status", "status", "show this node: peers, channels, counters", 0},
    {"delete", "delete ID",
     "delete a finished snapshot (one this node initiated: on every node)",
     1},
    {"keep", "keep ID", "mark a snapshot kept: retention never deletes it",
     1},
    {"unkeep", "unkeep ID", "let retention delete a snapshot again", 1},
    {"schedule", "schedule show|pause|resume",
     "show, pause or resume the schedule at this node (pause is this "
     "node's only)",
     1},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *f)
{
	size_t i;

	fputs("usage: cutctl [--control URL | --cluster FILE --node NAME]\n"
	      "              [--json] [--timeout MS] COMMAND [ARGS]\n\n"
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
	      "text\n"
	      "  --timeout MS       how long to wait for the daemon "
	      "(default 5000);\n"
	      "                     for wait and snapshot --wait: for the "
	      "snapshot\n"
	      "                     (default: until it finishes)\n"
	      "  --help, --version\n\n"
	      "exit status: 0 ok; 1 the snapshot waited for was aborted or\n"
	      "inconsistent; 64 usage; 65 bad argument or unknown snapshot; "
	      "69 daemon\nunavailable; 70 internal error; 75 timed out, "
	      "over the daemon's limits or\nrefused for now, try again; "
	      "76 protocol error; 77 permission denied;\n78 bad cluster "
	      "file or node\n",
	      f);
}

/* Prints "cutctl: ..." to stderr and returns status. */
static int fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("cutctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
		return fail(EX_SOFTWARE, "out of memory");
	return fail(EX_IOERR, "cannot write the output");
}

/* The exit status for a CUT_E* code. */
static int
exit_code(int err)
{
	switch (err) {
	case 0:
		return EX_OK;
	case CUT_EINVAL:
	case CUT_ENOENT:
	case CUT_E2BIG:
		return EX_DATAERR;
	case CUT_EUNAVAIL:
	case CUT_ECLOSED:
		return EX_UNAVAILABLE;
	case CUT_ETIMEDOUT:
	case CUT_EREFUSED:
	case CUT_ELIMIT:
		return EX_TEMPFAIL;
	case CUT_EPERM:
		return EX_NOPERM;
	case CUT_EPROTO:
	case CUT_ENOTSUP:
		return EX_PROTOCOL;
	default:
		return EX_SOFTWARE;
	}
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
	    strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		if (eq != NULL)
			return fail(EX_USAGE, "%s takes no value", name);
		if (name[2] == 'j')
			o->json = 1;
		else if (name[2] == 'w')
			o->wait = 1;
		else
			o->help = 1;
		return 0;
	}
	if (strcmp(name, "--control") != 0 && strcmp(name, "--cluster") != 0 &&
	    strcmp(name, "--node") != 0 && strcmp(name, "--timeout") != 0 &&
	    strcmp(name, "--limit") != 0 && strcmp(name, "--deadline") != 0)
		return fail(EX_USAGE, "unknown option %s (see cutctl --help)",
		            name);
	if ((v = value(argc, argv, i, eq)) == NULL)
		return fail(EX_USAGE, "%s needs a value", name);
	if (strcmp(name, "--control") == 0)
		o->control = v;
	else if (strcmp(name, "--cluster") == 0)
		o->cluster = v;
	else if (strcmp(name, "--node") == 0)
		o->node = v;
	else if (strcmp(name, "--timeout") == 0)
		return numeric(name, v, 1, 86400000, &o->timeout_ms);
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

/* Finds the control URL from the options; returns 0 or an exit status. */
static int
control_url(struct ctl *x)
{
	struct opts *o = x->o;
	struct config *cfg;
	char *errors = NULL;
	int rv, k;

	if (o->control != NULL && (o->cluster != NULL || o->node != NULL))
		return fail(EX_USAGE, "give --control or --cluster and "
		                      "--node, not both");
	if (o->control != NULL) {
		snprintf(x->url, sizeof(x->url), "%s", o->control);
		return 0;
	}
	if (o->cluster == NULL || o->node == NULL)
		return fail(EX_USAGE, "give --control URL, or --cluster FILE "
		                      "and --node NAME");
	if ((rv = config_load(o->cluster, &cfg, &errors)) != 0) {
		fprintf(stderr, "%s", errors != NULL ? errors : err_str(rv));
		free(errors);
		return EX_CONFIG;
	}
	if ((k = config_node_index(cfg, o->node)) < 0) {
		config_free(cfg);
		return fail(EX_CONFIG, "%s: no node \"%s\"", o->cluster,
		            o->node);
	}
	snprintf(x->url, sizeof(x->url), "%s", cfg->nodes[k].control);
	config_free(cfg);
	return 0;
}

/* The per-call timeout. */
static int
call_timeout(const struct ctl *x)
{
	return x->o->timeout_ms > 0 ? (int)x->o->timeout_ms
	                            : DEFAULT_TIMEOUT_MS;
}

/* Says why the daemon refused a call, answered a, and returns the exit
 * status.  A refusal for want of permission or over a limit gets a
 * sentence of its own, so that nobody mistakes it for a failure. */
static int
refused(int err, const struct rpc_answer *a)
{
	const char *why =
	    a->message[0] != '\0' ? a->message : cut_strerror(err);

	if (err == CUT_EPERM)
		return fail(exit_code(err),
		            "permission denied: %s (PERMISSION_DENIED). "
		            "Nothing was changed",
		            why);
	if (err == CUT_ELIMIT)
		return fail(exit_code(err),
		            "the daemon is at its limit: %s "
		            "(RESOURCE_EXHAUSTED). Nothing was changed; try "
		            "again later",
		            why);
	return fail(exit_code(err), "%s: %s", rpc_status_name(a->status), why);
}

/*
 * One call.  Returns 0 with the body in *ret (caller frees), or an exit
 * status after saying what went wrong, with *ret NULL.  With allow_deadline
 * a DEADLINE_EXCEEDED answer also returns 0, with its body or NULL (Wait).
 */
static int
call(struct ctl *x, const char *method, const ProtobufCMessage *req,
     const ProtobufCMessageDescriptor *desc, int timeout_ms, int allow_deadline,
     ProtobufCMessage **ret)
{
	struct rpc_answer a = {0};
	int rv;

	*ret = NULL; /* also tells gcc that no path leaves it unset */
	if (x->rpc == NULL && (rv = rpc_open(x->url, &x->rpc)) != 0)
		return fail(exit_code(rv), "%s: %s", x->url, cut_strerror(rv));
	if ((rv = rpc_call(x->rpc, method, req, desc, timeout_ms, &a)) != 0)
		return fail(exit_code(rv), "%s: %s", x->url, cut_strerror(rv));
	rv = rpc_status_error(a.status);
	if (rv == CUT_ETIMEDOUT && allow_deadline) {
		*ret = a.body;
		return 0;
	}
	if (rv != 0) {
		rpc_answer_clear(&a);
		return refused(rv, &a);
	}
	if (a.body == NULL)
		return fail(EX_PROTOCOL, "the daemon's reply has no body");
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
		          &cut__v1__snapshot_info__descriptor,
		          (int)req.timeout_ms + DEFAULT_TIMEOUT_MS, 1, &body);
		if (rv != 0)
			break;
		s = (Cut__V1__SnapshotInfo *)body;
		if (s == NULL) /* still in progress, no details */
			rv = end != 0 && now_ms() >= end
			         ? fail(EX_TEMPFAIL, "%s still in progress", id)
			         : 0;
		else if (rpc_check_snapshot(s) != 0)
			rv = fail(EX_PROTOCOL, "bad snapshot from the daemon");
		else if (s->status !=
		         CUT__V1__SNAPSHOT_INFO__STATUS__IN_PROGRESS)
			break;
		else if (end != 0 && now_ms() >= end)
			rv = fail(EX_TEMPFAIL, "%s still in progress", id);
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

static int
cmd_snapshot(struct ctl *x)
{
	Cut__V1__StartRequest req = CUT__V1__START_REQUEST__INIT;
	Cut__V1__StartReply *rep;
	ProtobufCMessage *body;
	int rv;

	req.has_timeout_ms = x->o->deadline_ms > 0;
	req.timeout_ms = (uint32_t)x->o->deadline_ms;
	rv = call(x, CUTPROTO_METHOD_START, &req.base,
	          &cut__v1__start_reply__descriptor, call_timeout(x), 0, &body);
	if (rv != 0)
		return rv;
	rep = (Cut__V1__StartReply *)body;
	if (x->o->wait) {
		if (!x->o->json && isatty(STDERR_FILENO))
			fprintf(stderr, "started %s\n", rep->snapshot_id);
		rv = wait_for(x, rep->snapshot_id);
	} else if (x->o->json) {
		rv = json_out(
		    json_pack("{s:o, s:I}", "id", cj_string(rep->snapshot_id),
		              "started_ms", (json_int_t)rep->started_ms));
	} else {
		printf("%s\n", rep->snapshot_id);
	}
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

static int
cmd_wait(struct ctl *x)
{
	return wait_for(x, x->o->args[0]);
}

static int
cmd_list(struct ctl *x)
{
	Cut__V1__ListRequest req = CUT__V1__LIST_REQUEST__INIT;
	Cut__V1__ListReply *l;
	ProtobufCMessage *body;
	size_t i;
	int rv;

	req.has_limit = x->o->limit > 0;
	req.limit = (uint32_t)(x->o->limit > 0 ? x->o->limit : 0);
	rv = call(x, CUTPROTO_METHOD_LIST, &req.base,
	          &cut__v1__list_reply__descriptor, call_timeout(x), 0, &body);
	if (rv != 0)
		return rv;
	l = (Cut__V1__ListReply *)body;
	for (i = 0; i < l->n_snapshots; i++)
		if (rpc_check_snapshot(l->snapshots[i]) != 0) {
			protobuf_c_message_free_unpacked(body, NULL);
			return fail(EX_PROTOCOL, "bad list from the daemon");
		}
	if (x->o->json)
		rv = json_out(list_json(l));
	else
		print_list_human(stdout, l);
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

/* show: states, and (as text) the first few in-transit messages of each
 * channel. */
static int
cmd_show(struct ctl *x)
{
	Cut__V1__GetRequest req = CUT__V1__GET_REQUEST__INIT;
	ProtobufCMessage *body;
	int rv;

	req.snapshot_id = (char *)x->o->args[0];
	req.has_include_states = req.include_states = 1;
	req.has_include_messages = req.include_messages = !x->o->json;
	req.has_max_messages = 1;
	req.max_messages = SHOW_MESSAGES;
	rv = call(x, CUTPROTO_METHOD_GET, &req.base,
	          &cut__v1__snapshot_info__descriptor, call_timeout(x), 0,
	          &body);
	if (rv != 0)
		return rv;
	if (rpc_check_snapshot((Cut__V1__SnapshotInfo *)body) != 0)
		rv = fail(EX_PROTOCOL, "bad snapshot from the daemon");
	else if (x->o->json)
		rv = json_out(
		    snapshot_json((Cut__V1__SnapshotInfo *)body, DETAIL_SHOW));
	else
		print_snapshot_human(stdout, (Cut__V1__SnapshotInfo *)body);
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

static int
cmd_export(struct ctl *x)
{
	Cut__V1__SnapshotInfo *s;
	char err[RPC_MSG_MAX] = "";
	int rv;

	if (x->rpc == NULL && (rv = rpc_open(x->url, &x->rpc)) != 0)
		return fail(exit_code(rv), "%s: %s", x->url, cut_strerror(rv));
	rv = rpc_get_snapshot(x->rpc, x->o->args[0], 1, 1, call_timeout(x), &s,
	                      err, sizeof(err));
	if (rv != 0)
		return fail(exit_code(rv), "%s",
		            err[0] != '\0' ? err : cut_strerror(rv));
	rv = json_out(snapshot_json(s, DETAIL_EXPORT));
	protobuf_c_message_free_unpacked(&s->base, NULL);
	return rv;
}

static int
cmd_status(struct ctl *x)
{
	Cut__V1__StatusRequest req = CUT__V1__STATUS_REQUEST__INIT;
	ProtobufCMessage *body;
	int rv;

	rv =
	    call(x, CUTPROTO_METHOD_STATUS, &req.base,
	         &cut__v1__status_reply__descriptor, call_timeout(x), 0, &body);
	if (rv != 0)
		return rv;
	if (x->o->json)
		rv = json_out(status_json((Cut__V1__StatusReply *)body));
	else
		print_status_human(stdout, (Cut__V1__StatusReply *)body,
		                   now_ms());
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

static int
cmd_delete(struct ctl *x)
{
	Cut__V1__DeleteRequest req = CUT__V1__DELETE_REQUEST__INIT;
	ProtobufCMessage *body;
	int rv;

	req.snapshot_id = (char *)x->o->args[0];
	rv =
	    call(x, CUTPROTO_METHOD_DELETE, &req.base,
	         &cut__v1__delete_reply__descriptor, call_timeout(x), 0, &body);
	if (rv != 0)
		return rv;
	if (x->o->json)
		rv = json_out(
		    json_pack("{s:o}", "deleted", cj_string(req.snapshot_id)));
	else
		printf("deleted %s\n", req.snapshot_id);
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

static int
keep_or_not(struct ctl *x, int keep)
{
	Cut__V1__KeepRequest req = CUT__V1__KEEP_REQUEST__INIT;
	ProtobufCMessage *body;
	int rv;

	req.snapshot_id = (char *)x->o->args[0];
	req.keep = keep;
	rv = call(x, CUTPROTO_METHOD_KEEP, &req.base,
	          &cut__v1__keep_reply__descriptor, call_timeout(x), 0, &body);
	if (rv != 0)
		return rv;
	if (x->o->json)
		rv = json_out(json_pack("{s:o, s:b}", "id",
		                        cj_string(req.snapshot_id), "keep",
		                        keep));
	else
		printf("%s %s\n", keep ? "kept" : "no longer kept",
		       req.snapshot_id);
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
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
cmd_schedule(struct ctl *x)
{
	static const char *const verbs[] = {"show", "pause", "resume"};
	static const char *const methods[] = {
	    CUTPROTO_METHOD_SCHEDULE_SHOW, CUTPROTO_METHOD_SCHEDULE_PAUSE,
	    CUTPROTO_METHOD_SCHEDULE_RESUME};
	Cut__V1__ScheduleRequest req = CUT__V1__SCHEDULE_REQUEST__INIT;
	ProtobufCMessage *body;
	size_t k;
	int rv;

	for (k = 0; k < 3; k++)
		if (strcmp(x->o->args[0], verbs[k]) == 0)
			break;
	if (k == 3)
		return fail(EX_USAGE,
		            "usage: cutctl schedule show|pause|resume, not "
		            "\"%s\"",
		            x->o->args[0]);
	rv = call(x, methods[k], &req.base,
	          &cut__v1__schedule_status__descriptor, call_timeout(x), 0,
	          &body);
	if (rv != 0)
		return rv;
	if (x->o->json)
		rv = json_out(schedule_json((Cut__V1__ScheduleStatus *)body));
	else
		print_schedule_human(stdout, (Cut__V1__ScheduleStatus *)body,
		                     now_ms());
	protobuf_c_message_free_unpacked(body, NULL);
	return rv;
}

/* Runs the command; returns the exit status. */
static int
run(struct ctl *x, const struct command *c)
{
	static int (*const fns[])(struct ctl *) = {
	    cmd_snapshot, cmd_wait,   cmd_list,   cmd_show,
	    cmd_export,   cmd_status, cmd_delete, cmd_keep,
	    cmd_unkeep,   cmd_schedule,
	};

	return fns[c - commands](x);
}

int
main(int argc, char **argv)
{
	struct opts o = {0};
	struct ctl x = {.o = &o};
	const struct command *c;
	int rv;

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
	if ((rv = control_url(&x)) != 0)
		return rv;
	rv = run(&x, c);
	rpc_close(x.rpc);
	if (fflush(stdout) != 0 && rv == 0)
		rv = fail(EX_IOERR, "cannot write the output");
	return rv;
}
