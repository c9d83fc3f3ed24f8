/*
 * cutlab - the deterministic lab: runs the real snapshot engine over
 * simulated clusters and shows the cut it records.
 *
 *   cutlab audit [--markers classic|counted] [--cut aligned|unaligned]
 *                [--json] [--verbose]
 *   cutlab run FILE [--cut aligned|unaligned] [--json]
 *   cutlab props [--cut aligned|unaligned] [--order fifo|overtake|any]
 *                [--runs N] [--seed S]
 *   cutlab sim [--nodes N|LO-HI] [--seed S] [--runs R] [--faults LIST] ...
 *
 * sim runs whole clusters of coordinators (the daemon's core) with their
 * databases, a network and applications, on simulated time: see sim.c.
 *
 * Output with the default aligned cut is what it always was; the unaligned
 * cut adds its name and the messages recorded from the applications' down
 * queues.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "labaudit.h"
#include "labprops.h"
#include "script.h"
#include "sim.h"

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

/* Writes s as a JSON string. */
static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

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

static void
audit_json(enum engine_mode mode, enum engine_cut cut,
           const struct labaudit_row *rows, int cases_ok, int checks_ok,
           int checks)
{
	int un = cut == ENGINE_CUT_UNALIGNED;

	printf("{\"markers\":\"%s\",%s\"total\":44,\"cases\":[",
	       mode_name(mode), un ? "\"cut\":\"unaligned\"," : "");
	for (size_t i = 0; i < LABAUDIT_CASES; i++) {
		const struct labaudit_row *r = &rows[i];
		printf("%s{\"scenario\":", i ? "," : "");
		json_str(stdout, r->scenario);
		printf(",\"expected\":\"%s\",\"snapshotTotal\":%lld,"
		       "\"channelAmount\":%lld,\"channelMessages\":%llu,"
		       "\"appMessages\":%llu,\"missingChannel\":%llu,"
		       "\"markerOvertakes\":%llu,",
		       r->expect_pass ? "pass" : "fail",
		       (long long)r->snapshot_total,
		       (long long)r->channel_amount,
		       (unsigned long long)r->channel_messages,
		       (unsigned long long)r->app_messages,
		       (unsigned long long)r->missing,
		       (unsigned long long)r->overtakes);
		if (un)
			printf("\"queuedAtCut\":%llu,",
			       (unsigned long long)r->queued);
		printf("\"passed\":%s,\"checks\":[",
		       row_passed(r) ? "true" : "false");
		for (int c = 0; c < r->nchecks; c++) {
			printf("%s{\"name\":", c ? "," : "");
			json_str(stdout, r->checks[c].name);
			printf(",\"passed\":%s}",
			       r->checks[c].passed ? "true" : "false");
		}
		printf("]}");
	}
	printf("],\"casesPassed\":%d,\"casesTotal\":%d,\"checksPassed\":%d,"
	       "\"checksTotal\":%d}\n",
	       cases_ok, LABAUDIT_CASES, checks_ok, checks);
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
		fprintf(stderr, "cutlab: simulation failed: %s\n",
		        err_str(rv));
		return EX_SOFTWARE;
	}
	for (size_t i = 0; i < LABAUDIT_CASES; i++) {
		cases_ok += row_passed(&rows[i]);
		checks_ok += rows[i].npassed;
		checks += rows[i].nchecks;
	}
	if (json)
		audit_json(mode, cut, rows, cases_ok, checks_ok, checks);
	else {
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

static void
run_json_snapshot(const struct lab *lab, size_t s,
                  const struct lab_snapshot_result *r)
{
	printf("{\"id\":\"%zu\",\"initiator\":", s);
	json_str(stdout, lab_node_name(lab, r->initiator));
	printf(",\"complete\":%s,\"nodes\":[", r->complete ? "true" : "false");
	for (size_t v = 0; v < lab_nodes(lab); v++) {
		int64_t tokens;
		printf("%s{\"node\":", v ? "," : "");
		json_str(stdout, lab_node_name(lab, v));
		if (lab_recorded_tokens(lab, s, v, &tokens) == 0)
			printf(",\"tokens\":%lld}", (long long)tokens);
		else
			printf(",\"tokens\":null}");
	}
	printf("],\"channels\":[");
	for (size_t ch = 0; ch < lab_channels(lab); ch++) {
		size_t src, dst, n = lab_recorded_count(lab, s, ch);
		lab_channel_ends(lab, ch, &src, &dst);
		printf("%s{\"src\":", ch ? "," : "");
		json_str(stdout, lab_node_name(lab, src));
		printf(",\"dst\":");
		json_str(stdout, lab_node_name(lab, dst));
		printf(",\"done\":%s,\"messages\":[",
		       lab_channel_done(lab, s, ch) ? "true" : "false");
		for (size_t i = 0; i < n; i++)
			printf("%s%lld", i ? "," : "",
			       (long long)lab_recorded_amount(lab, s, ch, i));
		printf("]}");
	}
	if (lab_cut(lab) == ENGINE_CUT_UNALIGNED)
		printf("],\"queuedAtCut\":%llu", (unsigned long long)r->queued);
	else
		printf("]");
	printf(",\"nodeTotal\":%lld,\"channelTotal\":%lld,\"total\":%lld,"
	       "\"conservedTotal\":%lld,\"consistent\":%s,\"reason\":",
	       (long long)r->node_total, (long long)r->channel_total,
	       (long long)(r->node_total + r->channel_total),
	       (long long)lab_total(lab),
	       r->audit.consistent ? "true" : "false");
	json_str(stdout, r->audit.reason);
	printf("}");
}

static int
cmd_run(int argc, char **argv)
{
	const char *path = NULL;
	struct lab *lab = NULL;
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
	if (json)
		printf("{\"markers\":\"%s\",%s\"snapshots\":[",
		       mode_name(lab_mode(lab)),
		       cut == ENGINE_CUT_UNALIGNED ? "\"cut\":\"unaligned\","
		                                   : "");
	else
		printf("markers %s%s\n", mode_name(lab_mode(lab)),
		       cut == ENGINE_CUT_UNALIGNED ? ", cut unaligned" : "");
	for (size_t s = 0; s < lab_snapshots(lab); s++) {
		struct lab_snapshot_result r;
		if ((rv = lab_result(lab, s, &r)) != 0) {
			fprintf(stderr, "cutlab: %s\n", err_str(rv));
			lab_free(lab);
			return EX_SOFTWARE;
		}
		all_ok &= r.complete && r.audit.consistent;
		if (json) {
			printf("%s", s ? "," : "");
			run_json_snapshot(lab, s, &r);
		} else
			run_text_snapshot(lab, s, &r);
	}
	if (json)
		printf("]}\n");
	lab_free(lab);
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
main(int argc, char **argv)
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
	if (strcmp(argv[1], "sim") == 0)
		return sim_main(argc - 2, argv + 2);
	usage(stderr);
	return EX_USAGE;
}
