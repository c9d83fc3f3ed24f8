/*
 * labcli.c - cutlab's commands but sim: the deterministic lab, which runs
 * the real snapshot engine over simulated clusters and shows the cut it
 * records (lab_main(), called by cutlab's main in sim/cutlab.c).
 *
 *   cutlab audit [--markers classic|counted] [--cut aligned|unaligned]
 *                [--json] [--verbose]
 *   cutlab run FILE [--cut aligned|unaligned] [--json]
 *   cutlab props [--cut aligned|unaligned] [--order fifo|overtake|any]
 *                [--runs N] [--seed S]
 *   cutlab sim [--nodes N|LO-HI] [--seed S] [--runs R] [--faults LIST] ...
 *
 * sim runs whole clusters of coordinators (the daemon's core) with their
 * databases, a network and applications, on simulated time: see
 * sim/sim.c.  It is named here only in the usage text.
 *
 * Output with the default aligned cut is what it always was; the unaligned
 * cut adds its name and the messages recorded from the applications' down
 * queues.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutjson.h"
#include "lab.h"
#include "labaudit.h"
#include "labcli.h"
#include "labprops.h"
#include "script.h"

#define EX_USAGE    64
#define EX_DATAERR  65
#define EX_NOINPUT  66
#define EX_SOFTWARE 70

static void
usage(FILE *f)
{
	fprintf(f, "usage: cutlab audit [--markers classic|counted] "
	           "[--cut aligned|unaligned] [--json]\n"
	           "                    [--verbose]\n"
	           "       cutlab run FILE [--cut aligned|unaligned] [--json]\n"
	           "       cutlab props [--cut aligned|unaligned] "
	           "[--order fifo|overtake|any]\n"
	           "                    [--runs N] [--seed S]\n"
	           "       cutlab sim [--nodes N|LO-HI] [--seed S] [--runs R] "
	           "[--faults LIST] ...\n"
	           "                  (cutlab sim --help says more)\n"
	           "       cutlab --help\n");
}

static const char *
mode_name(enum engine_mode m)
{
	return m == ENGINE_CLASSIC ? "classic" : "counted";
}

static int
parse_cut(const char *s, enum engine_cut *ret)
{
	if (strcmp(s, "aligned") == 0)
		*ret = ENGINE_CUT_ALIGNED;
	else if (strcmp(s, "unaligned") == 0)
		*ret = ENGINE_CUT_UNALIGNED;
	else
		return -1;
	return 0;
}

#define NEEDS_COUNTED                                                          \
	"cutlab: the unaligned cut needs counted markers (--markers "          \
	"counted)\n"
#define NEEDS_ORDER                                                            \
	"cutlab: the unaligned cut needs each channel's messages in order; "   \
	"--order any reorders them\n"

static int
row_passed(const struct labaudit_row *r)
{
	return r->npassed == r->nchecks;
}

static void
audit_text(enum engine_mode mode, enum engine_cut cut,
           const struct labaudit_row *rows, int verbose)
{
	int un = cut == ENGINE_CUT_UNALIGNED;

	printf("cutlab audit: %s markers%s; P0, P1, P2 start with 18, 14 and "
	       "12 tokens (total 44)\n\n",
	       mode_name(mode), un ? ", unaligned cut" : "");
	printf("%-26s %-8s %13s %13s %15s %11s %14s %15s", "scenario",
	       "expected", "snapshotTotal", "channelAmount", "channelMessages",
	       "appMessages", "missingChannel", "markerOvertakes");
	if (un)
		printf(" %11s", "queuedAtCut");
	printf(" %6s\n", "passed");
	for (size_t i = 0; i < LABAUDIT_CASES; i++) {
		const struct labaudit_row *r = &rows[i];
		printf("%-26s %-8s %13lld %13lld %15llu %11llu %14llu %15llu",
		       r->scenario, r->expect_pass ? "pass" : "fail",
		       (long long)r->snapshot_total,
		       (long long)r->channel_amount,
		       (unsigned long long)r->channel_messages,
		       (unsigned long long)r->app_messages,
		       (unsigned long long)r->missing,
		       (unsigned long long)r->overtakes);
		if (un)
			printf(" %11llu", (unsigned long long)r->queued);
		printf(" %4d/%d\n", r->npassed, r->nchecks);
	}
	printf("\n");
	for (size_t i = 0; i < LABAUDIT_CASES; i++)
		for (int c = 0; c < rows[i].nchecks; c++)
			if (verbose || !rows[i].checks[c].passed)
				printf("%s: %s: %s\n", rows[i].scenario,
				       rows[i].checks[c].name,
				       rows[i].checks[c].passed ? "ok"
				                                : "FAILED");
}

/* One audit case as JSON. */
static json_t *
audit_case_json(const struct labaudit_row *r, int un)
{
	json_t *o, *checks = json_array();

	for (int c = 0; c < r->nchecks; c++)
		checks =
		    cj_append(checks, json_pack("{s:o, s:b}", "name",
		                                cj_string(r->checks[c].name),
		                                "passed", r->checks[c].passed));
	o = json_pack("{s:o, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "scenario",
	              cj_string(r->scenario), "expected",
	              r->expect_pass ? "pass" : "fail", "snapshot_total",
	              (json_int_t)r->snapshot_total, "channel_amount",
	              (json_int_t)r->channel_amount, "channel_messages",
	              (json_int_t)r->channel_messages, "app_messages",
	              (json_int_t)r->app_messages, "missing_channel",
	              (json_int_t)r->missing, "marker_overtakes",
	              (json_int_t)r->overtakes);
	if (un)
		o = cj_set(o, "queued_at_cut",
		           json_integer((json_int_t)r->queued));
	o = cj_set(o, "passed", json_boolean(row_passed(r)));
	return cj_set(o, "checks", checks);
}

/* Writes the audit grid as one JSON document. */
static int
audit_json(enum engine_mode mode, enum engine_cut cut,
           const struct labaudit_row *rows, int cases_ok, int checks_ok,
           int checks)
{
	int un = cut == ENGINE_CUT_UNALIGNED;
	json_t *doc, *cases = json_array();

	for (size_t i = 0; i < LABAUDIT_CASES; i++)
		cases = cj_append(cases, audit_case_json(&rows[i], un));
	doc = json_pack("{s:s}", "markers", mode_name(mode));
	if (un)
		doc = cj_set(doc, "cut", json_string("unaligned"));
	doc = cj_set(doc, "total", json_integer(44));
	doc = cj_set(doc, "cases", cases);
	doc = cj_set(doc, "cases_passed", json_integer(cases_ok));
	doc = cj_set(doc, "cases_total", json_integer(LABAUDIT_CASES));
	doc = cj_set(doc, "checks_passed", json_integer(checks_ok));
	doc = cj_set(doc, "checks_total", json_integer(checks));
	return cj_print(stdout, doc);
}

static int
parse_mode(const char *s, enum engine_mode *ret)
{
	if (strcmp(s, "classic") == 0)
		*ret = ENGINE_CLASSIC;
	else if (strcmp(s, "counted") == 0)
		*ret = ENGINE_COUNTED;
	else
		return -1;
	return 0;
}

static int
cmd_audit(int argc, char **argv)
{
	struct labaudit_row rows[LABAUDIT_CASES];
	enum engine_mode mode = ENGINE_CLASSIC;
	enum engine_cut cut = ENGINE_CUT_ALIGNED;
	int json = 0, verbose = 0, cases_ok = 0, checks_ok = 0, checks = 0;
	int mode_set = 0, rv;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = 1;
		else if (strcmp(argv[i], "--markers") == 0 && i + 1 < argc &&
		         parse_mode(argv[i + 1], &mode) == 0)
			i++, mode_set = 1;
		else if (strcmp(argv[i], "--cut") == 0 && i + 1 < argc &&
		         parse_cut(argv[i + 1], &cut) == 0)
			i++;
		else {
			usage(stderr);
			return EX_USAGE;
		}
	}
	/* Classic markers are the default for the aligned grid only: the
	 * unaligned cut cannot run them. */
	if (cut == ENGINE_CUT_UNALIGNED && !mode_set)
		mode = ENGINE_COUNTED;
	if (cut == ENGINE_CUT_UNALIGNED && mode != ENGINE_COUNTED) {
		fputs(NEEDS_COUNTED, stderr);
		return EX_USAGE;
	}
	if ((rv = labaudit_run_cut(mode, cut, rows)) != 0) {
		fprintf(stderr, "cutlab: simulation failed: %s\n", err_str(rv));
		return EX_SOFTWARE;
	}
	for (size_t i = 0; i < LABAUDIT_CASES; i++) {
		cases_ok += row_passed(&rows[i]);
		checks_ok += rows[i].npassed;
		checks += rows[i].nchecks;
	}
	if (json) {
		if (audit_json(mode, cut, rows, cases_ok, checks_ok, checks) !=
		    0) {
			fputs("cutlab: cannot write the JSON output\n", stderr);
			return EX_SOFTWARE;
		}
	} else {
		audit_text(mode, cut, rows, verbose);
		printf("%d/%d audit cases and %d/%d checks passed\n", cases_ok,
		       LABAUDIT_CASES, checks_ok, checks);
	}
	return checks_ok == checks ? 0 : 1;
}

static void
run_text_snapshot(const struct lab *lab, size_t s,
                  const struct lab_snapshot_result *r)
{
	printf("snapshot %zu (initiator %s): %s\n", s,
	       lab_node_name(lab, r->initiator),
	       r->complete ? "complete" : "incomplete");
	for (size_t v = 0; v < lab_nodes(lab); v++) {
		int64_t tokens;
		if (lab_recorded_tokens(lab, s, v, &tokens) == 0)
			printf("  node %s: %lld\n", lab_node_name(lab, v),
			       (long long)tokens);
		else
			printf("  node %s: not recorded\n",
			       lab_node_name(lab, v));
	}
	for (size_t ch = 0; ch < lab_channels(lab); ch++) {
		size_t src, dst, n = lab_recorded_count(lab, s, ch);
		lab_channel_ends(lab, ch, &src, &dst);
		printf("  channel %s -> %s:%s", lab_node_name(lab, src),
		       lab_node_name(lab, dst),
		       lab_channel_done(lab, s, ch) ? ""
		                                    : " (still recording)");
		if (n == 0)
			printf(" empty");
		for (size_t i = 0; i < n; i++)
			printf(" %lld",
			       (long long)lab_recorded_amount(lab, s, ch, i));
		printf("\n");
	}
	if (lab_cut(lab) == ENGINE_CUT_UNALIGNED)
		printf("  queued at the cut: %llu delivered but not taken, "
		       "recorded in transit\n",
		       (unsigned long long)r->queued);
	printf("  total: %lld = %lld at nodes + %lld in transit "
	       "(conserved total %lld)\n",
	       (long long)(r->node_total + r->channel_total),
	       (long long)r->node_total, (long long)r->channel_total,
	       (long long)lab_total(lab));
	if (r->audit.consistent)
		printf("  audit: consistent\n");
	else
		printf("  audit: inconsistent: %s\n", r->audit.reason);
}

/* Snapshot s of a run as JSON. */
static json_t *
run_json_snapshot(const struct lab *lab, size_t s,
                  const struct lab_snapshot_result *r)
{
	json_t *o, *nodes = json_array(), *chans = json_array(), *msgs;
	char id[32];

	for (size_t v = 0; v < lab_nodes(lab); v++) {
		int64_t tokens;
		int rec = lab_recorded_tokens(lab, s, v, &tokens) == 0;
		nodes = cj_append(
		    nodes, json_pack("{s:o, s:o}", "node",
		                     cj_string(lab_node_name(lab, v)), "tokens",
		                     rec ? json_integer(tokens) : json_null()));
	}
	for (size_t ch = 0; ch < lab_channels(lab); ch++) {
		size_t src, dst, n = lab_recorded_count(lab, s, ch);
		lab_channel_ends(lab, ch, &src, &dst);
		msgs = json_array();
		for (size_t i = 0; i < n; i++)
			msgs = cj_append(msgs, json_integer(lab_recorded_amount(
			                           lab, s, ch, i)));
		chans = cj_append(
		    chans,
		    json_pack("{s:o, s:o, s:b, s:o}", "src",
		              cj_string(lab_node_name(lab, src)), "dst",
		              cj_string(lab_node_name(lab, dst)), "done",
		              lab_channel_done(lab, s, ch), "messages", msgs));
	}
	snprintf(id, sizeof(id), "%zu", s);
	o = json_pack("{s:s, s:o, s:b, s:o, s:o}", "id", id, "initiator",
	              cj_string(lab_node_name(lab, r->initiator)), "complete",
	              r->complete, "nodes", nodes, "channels", chans);
	if (lab_cut(lab) == ENGINE_CUT_UNALIGNED)
		o = cj_set(o, "queued_at_cut",
		           json_integer((json_int_t)r->queued));
	o = cj_set(o, "node_total", json_integer(r->node_total));
	o = cj_set(o, "channel_total", json_integer(r->channel_total));
	o = cj_set(o, "total", json_integer(r->node_total + r->channel_total));
	o = cj_set(o, "conserved_total", json_integer(lab_total(lab)));
	o = cj_set(o, "consistent", json_boolean(r->audit.consistent));
	return cj_set(o, "reason", cj_string(r->audit.reason));
}

static int
cmd_run(int argc, char **argv)
{
	const char *path = NULL;
	struct lab *lab = NULL;
	json_t *doc = NULL, *snaps = NULL;
	enum engine_cut cut = ENGINE_CUT_ALIGNED;
	char err[512];
	int json = 0, all_ok = 1, rv;
	FILE *f;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--cut") == 0 && i + 1 < argc &&
		         parse_cut(argv[i + 1], &cut) == 0)
			i++;
		else if (path == NULL &&
		         (argv[i][0] != '-' || strcmp(argv[i], "-") == 0))
			path = argv[i];
		else {
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (path == NULL) {
		usage(stderr);
		return EX_USAGE;
	}
	if (strcmp(path, "-") == 0)
		f = stdin;
	else if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "cutlab: %s: %s\n", path, strerror(errno));
		return EX_NOINPUT;
	}
	rv = script_run_cut(f, path, cut, &lab, err, sizeof(err));
	if (f != stdin)
		fclose(f);
	if (rv != 0) {
		fprintf(stderr, "%s\n", err);
		return EX_DATAERR;
	}
	cut = lab_cut(lab); /* the script's own, if it declared one */
	if (json) {
		doc = json_pack("{s:s}", "markers", mode_name(lab_mode(lab)));
		if (cut == ENGINE_CUT_UNALIGNED)
			doc = cj_set(doc, "cut", json_string("unaligned"));
		snaps = json_array();
	} else
		printf("markers %s%s\n", mode_name(lab_mode(lab)),
		       cut == ENGINE_CUT_UNALIGNED ? ", cut unaligned" : "");
	for (size_t s = 0; s < lab_snapshots(lab); s++) {
		struct lab_snapshot_result r;
		if ((rv = lab_result(lab, s, &r)) != 0) {
			fprintf(stderr, "cutlab: %s\n", err_str(rv));
			json_decref(doc);
			json_decref(snaps);
			lab_free(lab);
			return EX_SOFTWARE;
		}
		all_ok &= r.complete && r.audit.consistent;
		if (json)
			snaps = cj_append(snaps, run_json_snapshot(lab, s, &r));
		else
			run_text_snapshot(lab, s, &r);
	}
	lab_free(lab);
	if (json && cj_print(stdout, cj_set(doc, "snapshots", snaps)) != 0) {
		fputs("cutlab: cannot write the JSON output\n", stderr);
		return EX_SOFTWARE;
	}
	return all_ok ? 0 : 1;
}

static int
parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		return -1;
	*ret = v;
	return 0;
}

/* Whether a property run shows what its configuration promises. */
static int
props_ok(const struct labprops_result *r, enum engine_mode mode,
         enum labprops_order order)
{
	/* With messages reordered the audit cannot prove a cut right from
	 * m, n and the recorded run, so it may reject a right one; it must
	 * never pass a wrong one. */
	if (r->silent)
		return 0;
	if (order == LABPROPS_ANY)
		return 1; /* incomplete or rejected, never silently wrong */
	if (r->incomplete || r->false_alarms)
		return 0;
	if (order == LABPROPS_FIFO ||
	    (order == LABPROPS_OVERTAKE && mode == ENGINE_COUNTED))
		return r->wrong == 0 && r->not_conserved == 0;
	/* Overtaking must have produced violations for the audit to catch. */
	return order == LABPROPS_ANY || r->wrong > 0;
}

static const char *const order_names[] = {"fifo", "overtake", "any"};

static int
parse_order(const char *s, int *ret)
{
	for (int o = LABPROPS_FIFO; o <= LABPROPS_ANY; o++)
		if (strcmp(s, order_names[o]) == 0) {
			*ret = o;
			return 0;
		}
	return -1;
}

static int
props_line(uint64_t seed, uint64_t runs, const struct labprops_options *o,
           int *ok)
{
	struct labprops_result r;
	int rv, good;

	if ((rv = labprops_run_opts(seed, runs, o, &r)) != 0) {
		fprintf(stderr, "cutlab: %s\n", err_str(rv));
		return EX_SOFTWARE;
	}
	good = props_ok(&r, o->mode, o->order);
	*ok &= good;
	printf("%-8s %-9s %10llu %10llu %10llu %10llu %10llu %8llu %8llu "
	       "%10llu",
	       mode_name(o->mode), order_names[o->order],
	       (unsigned long long)r.scenarios, (unsigned long long)r.snapshots,
	       (unsigned long long)r.incomplete,
	       (unsigned long long)r.overtakes, (unsigned long long)r.wrong,
	       (unsigned long long)r.flagged, (unsigned long long)r.silent,
	       (unsigned long long)r.false_alarms);
	if (o->cut == ENGINE_CUT_UNALIGNED)
		printf(" %10llu", (unsigned long long)r.queued);
	printf("  %s", good ? "ok" : "FAILED");
	if (!good && r.have_bad)
		printf(" (first bad scenario seed %llu)",
		       (unsigned long long)r.first_bad_seed);
	printf("\n");
	return 0;
}

static int
cmd_props(int argc, char **argv)
{
	struct labprops_options o;
	enum engine_cut cut = ENGINE_CUT_ALIGNED;
	uint64_t runs = 2500, seed = 1;
	int ok = 1, order = -1, rv;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc &&
		    parse_u64(argv[i + 1], &runs) == 0)
			i++;
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc &&
		         parse_u64(argv[i + 1], &seed) == 0)
			i++;
		else if (strcmp(argv[i], "--cut") == 0 && i + 1 < argc &&
		         parse_cut(argv[i + 1], &cut) == 0)
			i++;
		else if (strcmp(argv[i], "--order") == 0 && i + 1 < argc &&
		         parse_order(argv[i + 1], &order) == 0)
			i++;
		else {
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (cut == ENGINE_CUT_UNALIGNED && order == LABPROPS_ANY) {
		fputs(NEEDS_ORDER, stderr);
		return EX_USAGE;
	}
	if (cut == ENGINE_CUT_UNALIGNED)
		printf("cut unaligned: applications take their down queues at "
		       "random steps; counted markers, messages in order\n");
	printf("%-8s %-9s %10s %10s %10s %10s %10s %8s %8s %10s", "markers",
	       "delivery", "scenarios", "snapshots", "incomplete", "overtakes",
	       "wrong", "flagged", "silent", "falseAlarm");
	if (cut == ENGINE_CUT_UNALIGNED)
		printf(" %10s", "queued");
	printf("  %s\n", "verdict");
	memset(&o, 0, sizeof(o));
	o.cut = cut;
	o.queued_apps = cut == ENGINE_CUT_UNALIGNED;
	for (int m = 0; m < 2; m++)
		for (int ord = LABPROPS_FIFO; ord <= LABPROPS_ANY; ord++) {
			o.mode = m ? ENGINE_COUNTED : ENGINE_CLASSIC;
			o.order = (enum labprops_order)ord;
			if ((order >= 0 && ord != order) ||
			    (cut == ENGINE_CUT_UNALIGNED &&
			     (o.mode != ENGINE_COUNTED || ord == LABPROPS_ANY)))
				continue;
			if ((rv = props_line(seed, runs, &o, &ok)) != 0)
				return rv;
		}
	return ok ? 0 : 1;
}

int
lab_main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EX_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "audit") == 0)
		return cmd_audit(argc - 2, argv + 2);
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 2, argv + 2);
	if (strcmp(argv[1], "props") == 0)
		return cmd_props(argc - 2, argv + 2);
	usage(stderr);
	return EX_USAGE;
}
