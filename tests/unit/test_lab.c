/*
 * Tests of the lab (daemon/lab/lab.c), the audit grid (daemon/lab/labaudit.c), the
 * script language (daemon/lab/script.c) and the property runs
 * (daemon/lab/labprops.c).
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

	cr_assert_eq(lab_send(lab, "p", "q", 11), E_FUNDS);
	cr_assert_eq(lab_send(lab, "p", "q", 0), E_INVAL);
	cr_assert_eq(lab_send(lab, "p", "x", 1), E_INVAL);
	cr_assert_eq(lab_channel(lab, "p", "q", &ch), 0);
	cr_assert_eq(lab_deliver(lab, ch, 1), E_EMPTY);
	cr_assert_eq(lab_add_node(lab, "r", 1), E_ORDER);
	cr_assert_eq(lab_send(lab, "p", "q", 4), 0);
	cr_assert_eq(lab_balance(lab, 0), 6);
	cr_assert_eq(lab_deliver(lab, ch, 2), E_EMPTY);
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
	cr_assert_eq(lab_snapshot(lab, "p", NULL), E_NOTSC);
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

/* Two nodes whose applications take only at lab_take(), with cut. */
static struct lab *
two_queued(enum engine_cut cut)
{
	struct lab *lab;

	cr_assert_eq(lab_new(ENGINE_COUNTED, &lab), 0);
	cr_assert_eq(lab_set_cut(lab, cut), 0);
	cr_assert_eq(lab_set_queued_apps(lab, 1), 0);
	cr_assert_eq(lab_add_node(lab, "p", 10), 0);
	cr_assert_eq(lab_add_node(lab, "q", 10), 0);
	cr_assert_eq(lab_add_channel(lab, "p", "q"), 0);
	cr_assert_eq(lab_add_channel(lab, "q", "p"), 0);
	cr_assert_eq(lab_cut(lab), cut);
	cr_assert_eq(lab_queued_apps(lab), 1);
	return lab;
}

Test(lab, cut_and_queue_options)
{
	struct lab *lab;

	cr_assert_eq(lab_new(ENGINE_CLASSIC, &lab), 0);
	cr_assert_eq(lab_cut(lab), ENGINE_CUT_ALIGNED);
	cr_assert_eq(lab_queued_apps(lab), 0);
	cr_assert_eq(lab_set_cut(lab, ENGINE_CUT_UNALIGNED), E_INVAL);
	cr_assert_eq(lab_set_cut(lab, (enum engine_cut)5), E_INVAL);
	cr_assert_eq(lab_cut(lab), ENGINE_CUT_ALIGNED);
	cr_assert_eq(lab_set_queued_apps(lab, 1), 0);
	lab_free(lab);

	lab = two_nodes(ENGINE_COUNTED);
	cr_assert_eq(lab_set_cut(lab, ENGINE_CUT_UNALIGNED), 0);
	cr_assert_eq(lab_start(lab), 0);
	cr_assert_eq(lab_set_cut(lab, ENGINE_CUT_ALIGNED), E_ORDER);
	cr_assert_eq(lab_set_queued_apps(lab, 1), E_ORDER);
	cr_assert_eq(lab_cut(lab), ENGINE_CUT_UNALIGNED);
	cr_assert_eq(lab_queued_apps(lab), 0);
	/* Immediate applications take at once: nothing is ever queued. */
	cr_assert_eq(lab_send(lab, "p", "q", 3), 0);
	cr_assert_eq(lab_deliver(lab, 0, 1), 0);
	cr_assert_eq(lab_down_len(lab, 1), 0);
	cr_assert_eq(lab_balance(lab, 1), 13);
	cr_assert_eq(lab_take(lab, 1), E_EMPTY);
	cr_assert_eq(lab_take(lab, 2), E_INVAL);
	lab_free(lab);
}

/*
 * q's application lags two messages behind its deliveries when p's marker
 * arrives.  Returns the result of the snapshot and checks the queue at the
 * moment q's request joins it.
 */
static void
lagging(enum engine_cut cut, struct lab_snapshot_result *r)
{
	struct lab *lab = two_queued(cut);
	size_t pq, qp, s;
	int64_t tokens;

	cr_assert_eq(lab_channel(lab, "p", "q", &pq), 0);
	cr_assert_eq(lab_channel(lab, "q", "p", &qp), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 2), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 3), 0);
	cr_assert_eq(lab_deliver(lab, pq, 1), 0);
	cr_assert_eq(lab_deliver(lab, pq, 1), 0);
	cr_assert_eq(lab_down_len(lab, 1), 2);
	cr_assert_eq(lab_balance(lab, 1), 10, "credited before taken");
	cr_assert_eq(lab_snapshot(lab, "p", &s), 0);
	cr_assert_eq(lab_down_len(lab, 0), 1);
	cr_assert(lab_down_at(lab, 0, 1)->is_request);
	cr_assert_eq(lab_queue_len(lab, pq), 0, "p answered before taking");
	cr_assert_eq(lab_take(lab, 0), 0);
	cr_assert_eq(lab_recorded_tokens(lab, s, 0, &tokens), 0);
	cr_assert_eq(tokens, 5);
	cr_assert_eq(lab_send(lab, "p", "q", 1), 0); /* after p's cut */
	cr_assert_eq(lab_deliver(lab, pq, 1), 0);    /* the marker */
	cr_assert_eq(lab_down_len(lab, 1), 3);
	/* Aligned, the request waits behind 2 and 3; unaligned, it
	 * overtakes them. */
	if (cut == ENGINE_CUT_ALIGNED) {
		cr_assert_eq(lab_down_at(lab, 1, 1)->seq, 1);
		cr_assert_eq(lab_down_at(lab, 1, 2)->seq, 2);
		cr_assert(lab_down_at(lab, 1, 3)->is_request);
	} else {
		cr_assert(lab_down_at(lab, 1, 1)->is_request);
		cr_assert_eq(lab_down_at(lab, 1, 2)->amount, 2);
		cr_assert_eq(lab_down_at(lab, 1, 3)->amount, 3);
	}
	cr_assert_eq(lab_recorded_tokens(lab, s, 1, &tokens), E_INVAL);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(lab_take(lab, 1), 0);
	cr_assert_eq(lab_take(lab, 1), E_EMPTY);
	cr_assert_eq(lab_balance(lab, 1), 15);
	cr_assert_eq(lab_deliver(lab, qp, 1), 0); /* q's marker */
	cr_assert_eq(lab_take(lab, 0), E_EMPTY, "markers skip the queue");
	cr_assert_eq(lab_deliver(lab, pq, 1), 0);
	cr_assert_eq(lab_take(lab, 1), 0);
	cr_assert_eq(lab_balance(lab, 1), 16);
	cr_assert_eq(lab_result(lab, s, r), 0);
	lab_free(lab);
}

Test(lab, aligned_request_waits_behind_the_queue)
{
	struct lab_snapshot_result r;

	lagging(ENGINE_CUT_ALIGNED, &r);
	cr_assert(r.complete);
	cr_assert_eq(r.node_total, 20);
	cr_assert_eq(r.channel_total, 0);
	cr_assert_eq(r.queued, 0);
	cr_assert_eq(r.missing + r.extra + r.receive_without_send, 0);
	cr_assert(r.audit.consistent, "%s", r.audit.reason);
}

Test(lab, unaligned_request_overtakes_the_queue)
{
	struct lab_snapshot_result r;

	lagging(ENGINE_CUT_UNALIGNED, &r);
	cr_assert(r.complete);
	cr_assert_eq(r.node_total, 15);
	cr_assert_eq(r.channel_total, 5);
	cr_assert_eq(r.channel_messages, 2);
	cr_assert_eq(r.queued, 2);
	cr_assert_eq(r.missing + r.extra + r.receive_without_send, 0);
	cr_assert(r.audit.consistent, "%s", r.audit.reason);
}

/* Messages delivered after an unaligned request sit behind it and are
 * recorded as they arrive; the queued range goes ahead of them. */
Test(lab, unaligned_range_goes_ahead_of_later_deliveries)
{
	struct lab *lab = two_queued(ENGINE_CUT_UNALIGNED);
	struct lab_snapshot_result r;
	size_t pq, qp, s;

	cr_assert_eq(lab_channel(lab, "p", "q", &pq), 0);
	cr_assert_eq(lab_channel(lab, "q", "p", &qp), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 1), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 2), 0);
	cr_assert_eq(lab_deliver(lab, pq, 1), 0); /* 1 queued at q */
	cr_assert_eq(lab_snapshot(lab, "q", &s), 0);
	cr_assert_eq(lab_deliver(lab, pq, 1), 0); /* 2, behind the request */
	cr_assert_eq(lab_recorded_count(lab, s, pq), 1);
	cr_assert_eq(lab_recorded_amount(lab, s, pq, 0), 2);
	cr_assert_eq(lab_take(lab, 1), 0); /* q records 10 */
	cr_assert_eq(lab_recorded_count(lab, s, pq), 2);
	cr_assert_eq(lab_recorded_amount(lab, s, pq, 0), 1);
	cr_assert_eq(lab_recorded_amount(lab, s, pq, 1), 2);
	cr_assert_eq(lab_deliver(lab, qp, 1), 0); /* q's marker: p's request */
	cr_assert_eq(lab_take(lab, 0), 0);        /* p records 7 */
	cr_assert_eq(lab_deliver(lab, pq, 1), 0); /* p's marker, n = 2 */
	cr_assert(lab_channel_done(lab, s, pq));
	cr_assert_eq(lab_result(lab, s, &r), 0);
	cr_assert(r.complete);
	cr_assert_eq(r.node_total, 17);
	cr_assert_eq(r.channel_total, 3);
	cr_assert_eq(r.queued, 1);
	cr_assert_eq(r.missing + r.extra + r.receive_without_send, 0);
	cr_assert(r.audit.consistent, "%s", r.audit.reason);
	lab_free(lab);
}

Test(lab, unaligned_refuses_a_message_passing_an_older_one)
{
	struct lab *lab = two_queued(ENGINE_CUT_UNALIGNED);
	size_t pq;

	cr_assert_eq(lab_channel(lab, "p", "q", &pq), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 1), 0);
	cr_assert_eq(lab_send(lab, "p", "q", 2), 0);
	cr_assert_eq(lab_snapshot(lab, "p", NULL), 0);
	cr_assert_eq(lab_take(lab, 0), 0); /* p's marker joins p -> q */
	cr_assert_eq(lab_deliver(lab, pq, 2), E_SEQ);
	cr_assert_eq(lab_queue_len(lab, pq), 3, "refusal changed the queue");
	cr_assert_eq(lab_down_len(lab, 1), 0);
	cr_assert_str_eq(err_str(E_SEQ),
	                 "the unaligned cut needs each channel's messages "
	                 "delivered in order");
	/* A marker may still pass them. */
	cr_assert(lab_queue_at(lab, pq, 3)->is_marker);
	cr_assert_eq(lab_deliver(lab, pq, 3), 0);
	cr_assert_eq(lab_deliver(lab, pq, 1), 0);
	lab_free(lab);
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

Test(labaudit, unaligned_grid_keeps_44)
{
	struct labaudit_row rows[LABAUDIT_CASES];
	uint64_t queued = 0;

	cr_assert_eq(
	    labaudit_run_cut(ENGINE_CLASSIC, ENGINE_CUT_UNALIGNED, rows),
	    E_INVAL);
	cr_assert_eq(
	    labaudit_run_cut(ENGINE_COUNTED, ENGINE_CUT_UNALIGNED, rows), 0);
	for (int i = 0; i < LABAUDIT_CASES; i++) {
		cr_assert(rows[i].expect_pass);
		cr_assert_eq(rows[i].npassed, 7, "%s", rows[i].scenario);
		cr_assert_eq(rows[i].snapshot_total, 44);
		cr_assert_eq(rows[i].missing, 0);
		queued += rows[i].queued;
	}
	cr_assert_gt(queued, 0, "no request overtook a queued message");
	cr_assert_geq(rows[3].overtakes, 2);
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

Test(script, cut_apps_and_take)
{
	static const char *const text =
	    "cut unaligned\napps queued\nnode a 5\nnode b 0\n"
	    "channel a b\nchannel b a\nsend a b 1\nsend a b 2\n"
	    "deliver a b\ndeliver a b\nsnapshot a\ntake a\n"
	    "deliver a b\ntake b 2\ndrain\n";
	struct lab_snapshot_result r;
	struct lab *lab = NULL;
	char err[256];
	int64_t tokens;

	cr_assert_eq(run_script(text, &lab, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(lab_cut(lab), ENGINE_CUT_UNALIGNED);
	cr_assert_eq(lab_queued_apps(lab), 1);
	cr_assert_eq(lab_result(lab, 0, &r), 0);
	cr_assert(r.complete);
	cr_assert_eq(lab_recorded_tokens(lab, 0, 1, &tokens), 0);
	cr_assert_eq(tokens, 0, "b's request overtook both transfers");
	cr_assert_eq(r.channel_total, 3);
	cr_assert_eq(r.queued, 2);
	cr_assert(r.audit.consistent, "%s", r.audit.reason);
	/* drain let every application take its whole queue. */
	cr_assert_eq(lab_down_len(lab, 0) + lab_down_len(lab, 1), 0);
	cr_assert_eq(lab_balance(lab, 1), 3);
	lab_free(lab);
}

Test(script, caller_cut_is_the_default)
{
	static const char *const text =
	    "apps queued\nnode a 5\nnode b 0\nchannel a b\nchannel b a\n"
	    "send a b 1\ndeliver a b\nsnapshot a\ntake a\ndeliver a b\n"
	    "take b\ndrain\n";
	static const char *const own = "cut aligned\nnode a 1\n";
	static const char *const classic = "markers classic\nnode a 1\n";
	struct lab *lab = NULL;
	char err[256];
	int64_t tokens;
	FILE *f;

	for (int un = 0; un < 2; un++) {
		f = fmemopen((void *)text, strlen(text), "r");
		cr_assert_not_null(f);
		cr_assert_eq(script_run_cut(f, "t.lab",
		                            un ? ENGINE_CUT_UNALIGNED
		                               : ENGINE_CUT_ALIGNED,
		                            &lab, err, sizeof(err)),
		             0, "%s", err);
		fclose(f);
		cr_assert_eq(lab_cut(lab),
		             un ? ENGINE_CUT_UNALIGNED : ENGINE_CUT_ALIGNED);
		/* Aligned, b's one take is the queued message; unaligned,
		 * it is the request. */
		cr_assert_eq(lab_recorded_tokens(lab, 0, 1, &tokens), 0);
		cr_assert_eq(tokens, un ? 0 : 1);
		cr_assert_eq(lab_recorded_count(lab, 0, 0), un ? 1 : 0);
		lab_free(lab);
		lab = NULL;
	}
	/* A script's own cut wins over the caller's. */
	f = fmemopen((void *)own, strlen(own), "r");
	cr_assert_not_null(f);
	cr_assert_eq(script_run_cut(f, "t.lab", ENGINE_CUT_UNALIGNED, &lab, err,
	                            sizeof(err)),
	             0, "%s", err);
	fclose(f);
	cr_assert_eq(lab_cut(lab), ENGINE_CUT_ALIGNED);
	lab_free(lab);
	/* The caller's unaligned cut cannot run classic markers. */
	lab = NULL;
	f = fmemopen((void *)classic, strlen(classic), "r");
	cr_assert_not_null(f);
	cr_assert_eq(script_run_cut(f, "t.lab", ENGINE_CUT_UNALIGNED, &lab, err,
	                            sizeof(err)),
	             E_INVAL);
	fclose(f);
	cr_assert_null(lab);
	cr_assert_str_eq(err, "t.lab:2: the unaligned cut needs counted "
	                      "markers, not classic: declare 'cut aligned' to "
	                      "run these markers");
}

Test(script, unaligned_errors_name_the_line)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
	    {"cut sideways\n",
	     "t.lab:1: unknown cut 'sideways' (aligned or unaligned)"},
	    {"cut\n", "t.lab:1: usage: cut aligned|unaligned"},
	    {"markers classic\ncut unaligned\n",
	     "t.lab:2: the unaligned cut needs counted markers, not classic"},
	    {"cut unaligned\nmarkers classic\n",
	     "t.lab:2: the unaligned cut needs counted markers, not classic"},
	    {"node a 1\ncut unaligned\n",
	     "t.lab:2: cut must come once, before the first node"},
	    {"cut aligned\ncut aligned\n",
	     "t.lab:2: cut must come once, before the first node"},
	    {"apps later\n",
	     "t.lab:1: unknown apps 'later' (immediate or queued)"},
	    {"node a 1\napps queued\n",
	     "t.lab:2: apps must come once, before the first node"},
	    {"node a 1\nnode b 1\nchannel a b\nchannel b a\ntake a\n",
	     "t.lab:5: take needs 'apps queued': applications take "
	     "everything at once"},
	    {"apps queued\nnode a 1\nnode b 1\nchannel a b\nchannel b a\n"
	     "take c\n",
	     "t.lab:6: unknown node c"},
	    {"apps queued\nnode a 1\nnode b 1\nchannel a b\nchannel b a\n"
	     "take a\n",
	     "t.lab:6: nothing is queued for a's application"},
	    {"apps queued\nnode a 1\nnode b 1\nchannel a b\nchannel b a\n"
	     "send a b 1\ndeliver a b\ntake b 2\n",
	     "t.lab:8: b's application has 1 items queued, not 2"},
	    {"apps queued\nnode a 1\nnode b 1\nchannel a b\nchannel b a\n"
	     "take a 0\n",
	     "t.lab:6: bad count '0'"},
	    {"cut unaligned\nnode a 2\nnode b 1\nchannel a b\nchannel b a\n"
	     "send a b 1\nsend a b 1\ndeliver a b 2\n",
	     "t.lab:8: frame 2 of a -> b is a message that would pass an "
	     "older one: the unaligned cut needs each channel's messages in "
	     "order"},
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

/* The unaligned cut over random take schedules: applications take their
 * down queues at random steps, state requests overtake what is queued, and
 * the ground truth judges by the steps at which the applications really
 * took each message.  Every snapshot completes, passes the audit, misses
 * nothing, records nothing extra, and conserves the tokens. */
static void
props_queued(enum engine_mode mode, enum labprops_order order,
             enum engine_cut cut, struct labprops_result *r)
{
	struct labprops_options o = {mode, order, cut, 1};

	cr_assert_eq(labprops_run_opts(1, PROPERTY_RUNS, &o, r), 0);
	cr_assert_eq(r->scenarios, PROPERTY_RUNS);
	cr_assert_gt(r->snapshots, PROPERTY_RUNS);
	cr_assert_eq(r->incomplete, 0, "first bad seed %llu",
	             (unsigned long long)r->first_bad_seed);
	cr_assert_eq(r->silent, 0, "first bad seed %llu",
	             (unsigned long long)r->first_bad_seed);
	cr_assert_eq(r->false_alarms, 0, "first bad seed %llu",
	             (unsigned long long)r->first_bad_seed);
}

Test(props, unaligned_fifo_always_consistent, .timeout = 120)
{
	struct labprops_result r;

	props_queued(ENGINE_COUNTED, LABPROPS_FIFO, ENGINE_CUT_UNALIGNED, &r);
	cr_assert_eq(r.wrong, 0);
	cr_assert_eq(r.not_conserved, 0);
	cr_assert_eq(r.overtakes, 0);
	/* Requests really overtook queued messages, often. */
	cr_assert_gt(r.queued, PROPERTY_RUNS);
}

Test(props, unaligned_overtake_always_consistent, .timeout = 120)
{
	struct labprops_result r;

	props_queued(ENGINE_COUNTED, LABPROPS_OVERTAKE, ENGINE_CUT_UNALIGNED,
	             &r);
	cr_assert_gt(r.overtakes, 0);
	cr_assert_eq(r.wrong, 0);
	cr_assert_eq(r.not_conserved, 0);
	cr_assert_gt(r.queued, PROPERTY_RUNS);
}

/* Aligned requests behind lagging applications: still consistent, and
 * nothing is handed back from the queues. */
Test(props, aligned_with_queued_apps_always_consistent, .timeout = 120)
{
	struct labprops_result r;

	props_queued(ENGINE_CLASSIC, LABPROPS_FIFO, ENGINE_CUT_ALIGNED, &r);
	cr_assert_eq(r.wrong, 0);
	cr_assert_eq(r.queued, 0);
	props_queued(ENGINE_COUNTED, LABPROPS_OVERTAKE, ENGINE_CUT_ALIGNED, &r);
	cr_assert_eq(r.wrong, 0);
	cr_assert_eq(r.not_conserved, 0);
	cr_assert_eq(r.queued, 0);
}

Test(props, unaligned_refuses_classic_and_any_order)
{
	struct labprops_result r = {.scenarios = 77};
	struct labprops_options o = {ENGINE_CLASSIC, LABPROPS_FIFO,
	                             ENGINE_CUT_UNALIGNED, 1};

	cr_assert_eq(labprops_run_opts(1, 10, &o, &r), E_INVAL);
	o.mode = ENGINE_COUNTED;
	o.order = LABPROPS_ANY;
	cr_assert_eq(labprops_run_opts(1, 10, &o, &r), E_INVAL);
	cr_assert_eq(r.scenarios, 77, "result written on refusal");
}
