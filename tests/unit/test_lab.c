/*
 * Tests of the lab (daemon/lab.c), the audit grid (daemon/labaudit.c), the
 * script language (daemon/script.c) and the property runs
 * (daemon/labprops.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "lab.h"
#include "labaudit.h"
#include "labprops.h"
#include "script.h"

#define PROPERTY_RUNS 10000

static struct lab *
two_nodes(enum engine_mode mode)
{
	struct lab *lab;

	cr_assert_eq(lab_new(mode, &lab), 0);
	cr_assert_eq(lab_add_node(lab, "p", 10), 0);
	cr_assert_eq(lab_add_node(lab, "q", 10), 0);
	cr_assert_eq(lab_add_channel(lab, "p", "q"), 0);
	cr_assert_eq(lab_add_channel(lab, "q", "p"), 0);
	return lab;
}

Test(lab, rejects_bad_events)
{
	struct lab *lab = two_nodes(ENGINE_COUNTED);
	size_t ch;

	cr_assert_eq(lab_send(lab, "p", "q", 11), LAB_EFUNDS);
	cr_assert_eq(lab_send(lab, "p", "q", 0), LAB_EINVAL);
	cr_assert_eq(lab_send(lab, "p", "x", 1), LAB_EINVAL);
	cr_assert_eq(lab_channel(lab, "p", "q", &ch), 0);
	cr_assert_eq(lab_deliver(lab, ch, 1), LAB_EEMPTY);
	cr_assert_eq(lab_add_node(lab, "r", 1), LAB_EORDER);
	cr_assert_eq(lab_send(lab, "p", "q", 4), 0);
	cr_assert_eq(lab_balance(lab, 0), 6);
	cr_assert_eq(lab_deliver(lab, ch, 2), LAB_EEMPTY);
	cr_assert_eq(lab_deliver(lab, ch, 1), 0);
	cr_assert_eq(lab_balance(lab, 1), 14);
	lab_free(lab);
}

Test(lab, rejects_graph_not_strongly_connected)
{
	struct lab *lab;

	cr_assert_eq(lab_new(ENGINE_COUNTED, &lab), 0);
	cr_assert_eq(lab_add_node(lab, "p", 1), 0);
	cr_assert_eq(lab_add_node(lab, "q", 1), 0);
	cr_assert_eq(lab_add_channel(lab, "p", "q"), 0);
	cr_assert_eq(lab_snapshot(lab, "p", NULL), LAB_ENOTSC);
	lab_free(lab);
}

/* A marker that overtakes two messages: classic loses them and the audit
 * and the ground truth agree; counted records them. */
static void
overtake(enum engine_mode mode, struct lab_snapshot_result *r)
{
	struct lab *lab = two_nodes(mode);
	size_t pq, qp, s;

	cr_assert_eq(lab_channel(lab, "p", "q", &pq), 0);
	cr_assert_eq(lab_channel(lab, "q", "p", &qp), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 2), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 3), 0);
	cr_assert_eq(lab_snapshot(lab, "p", &s), 0);
	cr_assert_eq(s, 0);
	cr_assert(lab_queue_at(lab, pq, 3)->is_marker);
	cr_assert_eq(lab_queue_at(lab, pq, 3)->count, 2);
	cr_assert_eq(lab_deliver(lab, pq, 3), 0);
	cr_assert_eq(lab_deliver(lab, pq, 1), 0);
	cr_assert_eq(lab_deliver(lab, pq, 1), 0);
	cr_assert_eq(lab_deliver(lab, qp, 1), 0);
	cr_assert_eq(lab_result(lab, 0, r), 0);
	lab_free(lab);
}

Test(lab, classic_overtake_is_flagged)
{
	struct lab_snapshot_result r;

	overtake(ENGINE_CLASSIC, &r);
	cr_assert(r.complete);
	cr_assert_eq(r.node_total, 15);
	cr_assert_eq(r.channel_total, 0);
	cr_assert_eq(r.missing, 2);
	cr_assert_eq(r.overtakes, 2);
	cr_assert_not(r.audit.consistent);
	cr_assert_eq(r.audit.missing_messages, 2);
	cr_assert(strstr(r.audit.reason, "channel p -> q") != NULL);
}

Test(lab, counted_overtake_is_recorded)
{
	struct lab_snapshot_result r;

	overtake(ENGINE_COUNTED, &r);
	cr_assert(r.complete);
	cr_assert_eq(r.node_total, 15);
	cr_assert_eq(r.channel_total, 5);
	cr_assert_eq(r.channel_messages, 2);
	cr_assert_eq(r.missing, 0);
	cr_assert_eq(r.extra, 0);
	cr_assert(r.audit.consistent, "%s", r.audit.reason);
}

Test(labaudit, classic_grid)
{
	struct labaudit_row rows[LABAUDIT_CASES];
	int checks = 0;

	cr_assert_eq(labaudit_run(ENGINE_CLASSIC, rows), 0);
	for (int i = 0; i < LABAUDIT_CASES; i++) {
		cr_assert_eq(rows[i].npassed, rows[i].nchecks, "%s",
		             rows[i].scenario);
		checks += rows[i].nchecks;
	}
	cr_assert_eq(checks, 27);
	for (int i = 0; i < 3; i++) {
		cr_assert(rows[i].expect_pass);
		cr_assert_eq(rows[i].snapshot_total, 44);
		cr_assert_eq(rows[i].overtakes, 0);
	}
	cr_assert_str_eq(rows[3].scenario, "non-FIFO marker overtake");
	cr_assert_not(rows[3].expect_pass);
	cr_assert_lt(rows[3].snapshot_total, 44);
	cr_assert_geq(rows[3].overtakes, 2);
	cr_assert_eq(rows[3].missing, rows[3].overtakes);
	cr_assert_str_eq(rows[3].checks[5].name,
	                 "missing channel messages expose FIFO violation");
}

Test(labaudit, counted_grid_keeps_44)
{
	struct labaudit_row rows[LABAUDIT_CASES];

	cr_assert_eq(labaudit_run(ENGINE_COUNTED, rows), 0);
	for (int i = 0; i < LABAUDIT_CASES; i++) {
		cr_assert(rows[i].expect_pass);
		cr_assert_eq(rows[i].nchecks, 7);
		cr_assert_eq(rows[i].npassed, 7, "%s", rows[i].scenario);
		cr_assert_eq(rows[i].snapshot_total, 44);
	}
	cr_assert_geq(rows[3].overtakes, 2);
}

static int
run_script(const char *text, struct lab **ret_lab, char *err, size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rv;

	cr_assert_not_null(f);
	rv = script_run(f, "t.lab", ret_lab, err, len);
	fclose(f);
	return rv;
}

Test(script, errors_name_the_line)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
	    {"node a 1\nnode a 2\n", "t.lab:2: node a declared twice"},
	    {"node a 1\nnode b 1\nchannel a b\nchannel b a\n\nfly a\n",
	     "t.lab:6: unknown statement 'fly'"},
	    {"node a 1\nsnapshot a\nmarkers classic\n",
	     "t.lab:3: markers must come once, before the first node"},
	    {"node a x\n", "t.lab:1: bad token count 'x'"},
	    {"node a 1\nnode b 1\nchannel a b\nchannel b a\nsend a b -1\n",
	     "t.lab:5: bad amount '-1'"},
	    {"node a 1\nnode b 1\nchannel a b\nchannel b a\ndeliver a b 2\n",
	     "t.lab:5: channel a -> b is empty"},
	    {"node a 1\nnode b 1\nchannel a a\n",
	     "t.lab:3: channel from a to itself"},
	    {"node a 1\nnode b 1\nchannel a b\nsend a b 1\nnode c 1\n",
	     "t.lab:4: the channel graph is not strongly connected: some "
	     "node would never see a marker"},
	    {"# nothing\n", "t.lab:1: no nodes declared"},
	};
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lab *lab = NULL;
		cr_assert_neq(run_script(cases[i].text, &lab, err, sizeof(err)),
		              0, "case %zu", i);
		cr_assert_null(lab);
		cr_assert_str_eq(err, cases[i].err, "case %zu", i);
	}
}

Test(script, deliver_position_and_drain)
{
	struct lab_snapshot_result r;
	struct lab *lab = NULL;
	char err[256];

	cr_assert_eq(run_script("markers counted\nnode a 3\nnode b 0\n"
	                        "channel a b\nchannel b a\nsend a b 1\n"
	                        "send a b 2\nsnapshot a\ndeliver a b 3\n"
	                        "drain # rest\n",
	                        &lab, err, sizeof(err)),
	             0, "%s", err);
	cr_assert_eq(lab_snapshots(lab), 1);
	cr_assert_eq(lab_result(lab, 0, &r), 0);
	cr_assert(r.complete);
	cr_assert_eq(r.node_total, 0);
	cr_assert_eq(r.channel_total, 3);
	cr_assert_eq(lab_recorded_amount(lab, 0, 0, 0), 1);
	cr_assert_eq(lab_recorded_amount(lab, 0, 0, 1), 2);
	lab_free(lab);
}

static void
props(enum engine_mode mode, enum labprops_order order,
      struct labprops_result *r)
{
	cr_assert_eq(labprops_run(1, PROPERTY_RUNS, mode, order, r), 0);
	cr_assert_eq(r->scenarios, PROPERTY_RUNS);
	cr_assert_gt(r->snapshots, PROPERTY_RUNS);
	if (order != LABPROPS_ANY)
		cr_assert_eq(r->incomplete, 0);
	cr_assert_eq(r->silent, 0, "first bad seed %llu",
	             (unsigned long long)r->first_bad_seed);
	if (order != LABPROPS_ANY)
		cr_assert_eq(r->false_alarms, 0, "first bad seed %llu",
		             (unsigned long long)r->first_bad_seed);
}

Test(props, fifo_classic_always_consistent, .timeout = 120)
{
	struct labprops_result r;

	props(ENGINE_CLASSIC, LABPROPS_FIFO, &r);
	cr_assert_eq(r.wrong, 0);
	cr_assert_eq(r.not_conserved, 0);
	cr_assert_eq(r.overtakes, 0);
}

Test(props, fifo_counted_always_consistent, .timeout = 120)
{
	struct labprops_result r;

	props(ENGINE_COUNTED, LABPROPS_FIFO, &r);
	cr_assert_eq(r.wrong, 0);
	cr_assert_eq(r.not_conserved, 0);
}

Test(props, overtake_classic_violations_all_flagged, .timeout = 120)
{
	struct labprops_result r;

	props(ENGINE_CLASSIC, LABPROPS_OVERTAKE, &r);
	cr_assert_gt(r.overtakes, 0);
	cr_assert_gt(r.wrong, 0);
	cr_assert_eq(r.flagged, r.wrong);
}

Test(props, overtake_counted_always_consistent, .timeout = 120)
{
	struct labprops_result r;

	props(ENGINE_COUNTED, LABPROPS_OVERTAKE, &r);
	cr_assert_gt(r.overtakes, 0);
	cr_assert_eq(r.wrong, 0);
	cr_assert_eq(r.not_conserved, 0);
}

/* Application messages reordered too: no marker rule promises a right cut,
 * but the audit must flag every wrong one. */
Test(props, any_order_violations_all_flagged, .timeout = 120)
{
	struct labprops_result r;

	props(ENGINE_CLASSIC, LABPROPS_ANY, &r);
	cr_assert_gt(r.wrong, 0);
	cr_assert_eq(r.flagged, r.wrong);
	props(ENGINE_COUNTED, LABPROPS_ANY, &r);
	cr_assert_gt(r.wrong, 0);
	cr_assert_eq(r.flagged, r.wrong);
}
