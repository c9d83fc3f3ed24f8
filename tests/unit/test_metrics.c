/*
 * test_metrics.c - the Prometheus text of metrics.c: the growing buffer,
 * label escaping, HELP/TYPE lines, samples and the histogram of
 * millisecond values written in seconds (cumulative buckets, +Inf last,
 * _sum and _count), each checked byte for byte; and the abort classes
 * and duration buckets of the coordinator's counters (coord_stats.c).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "cutd.h"
#include "metrics.h"

/* cutd.c's clock, which the shell's modules call (not these tests). */
int64_t
cutd_wall_ms(void)
{
	return 0;
}

int64_t
cutd_now_ms(void)
{
	return 0;
}

static void
expect(struct mbuf *b, const char *want)
{
	cr_assert(!b->oom);
	cr_assert_eq(b->len, strlen(want), "length %zu, expected %zu:\n%.*s",
	             b->len, strlen(want), (int)b->len, b->p);
	cr_assert(memcmp(b->p, want, b->len) == 0, "got:\n%.*s\nexpected:\n%s",
	          (int)b->len, b->p, want);
	free(b->p);
}

Test(metrics, family_and_sample)
{
	struct mbuf b = {0};

	metric_family(&b, "cutd_x_total", "counter", "Things.");
	metric_sample(&b, "cutd_x_total", "node=\"p0\"", 18446744073709551615u);
	metric_sample(&b, "cutd_x_total", "", 0);
	expect(&b, "# HELP cutd_x_total Things.\n"
	           "# TYPE cutd_x_total counter\n"
	           "cutd_x_total{node=\"p0\"} 18446744073709551615\n"
	           "cutd_x_total{} 0\n");
}

Test(metrics, label_escaping)
{
	struct mbuf b = {0};

	mbuf_label(&b, "a\"b\\c\nd");
	expect(&b, "a\\\"b\\\\c\\nd");
}

Test(metrics, grows_past_its_first_allocation)
{
	struct mbuf b = {0};

	for (int i = 0; i < 10000; i++)
		mbuf_printf(&b, "%04d\n", i % 10000);
	cr_assert(!b.oom);
	cr_assert_eq(b.len, 50000);
	cr_assert(memcmp(b.p + 49995, "9999\n", 5) == 0);
	free(b.p);
}

Test(metrics, histogram_in_seconds)
{
	static const uint32_t le[] = {5, 250, 1000};
	static const uint64_t count[] = {2, 0, 1, 3}; /* last: beyond */
	struct mbuf b = {0};

	metric_histogram_ms(&b, "cutd_d_seconds", "node=\"p0\"", le, 3, count,
	                    12345);
	expect(&b, "cutd_d_seconds_bucket{node=\"p0\",le=\"0.005\"} 2\n"
	           "cutd_d_seconds_bucket{node=\"p0\",le=\"0.25\"} 2\n"
	           "cutd_d_seconds_bucket{node=\"p0\",le=\"1\"} 3\n"
	           "cutd_d_seconds_bucket{node=\"p0\",le=\"+Inf\"} 6\n"
	           "cutd_d_seconds_sum{node=\"p0\"} 12.345\n"
	           "cutd_d_seconds_count{node=\"p0\"} 6\n");
}

Test(metrics, histogram_without_labels)
{
	static const uint32_t le[] = {10};
	static const uint64_t count[] = {0, 0};
	struct mbuf b = {0};

	metric_histogram_ms(&b, "cutd_h_seconds", "", le, 1, count, 0);
	expect(&b, "cutd_h_seconds_bucket{le=\"0.01\"} 0\n"
	           "cutd_h_seconds_bucket{le=\"+Inf\"} 0\n"
	           "cutd_h_seconds_sum{} 0.000\n"
	           "cutd_h_seconds_count{} 0\n");
}

Test(metrics, abort_classes)
{
	cr_assert_eq(coord_abort_classify("p1: storage: database or disk is "
	                                  "full"),
	             COORD_ABORT_STORAGE);
	cr_assert_eq(coord_abort_classify("p2: the application did not answer "
	                                  "the state request; p1: no marker on "
	                                  "channel p2 -> p1"),
	             COORD_ABORT_APP);
	cr_assert_eq(coord_abort_classify("p1: no marker on channel p2 -> p1; "
	                                  "p2: storage degraded"),
	             COORD_ABORT_DEADLINE);
	cr_assert_eq(coord_abort_classify("p2: no part and no word by the "
	                                  "deadline"),
	             COORD_ABORT_DEADLINE);
	cr_assert_eq(coord_abort_classify("p1 restarted"), COORD_ABORT_PEER);
	cr_assert_eq(coord_abort_classify("daemon stopped"), COORD_ABORT_OTHER);
	cr_assert_eq(coord_abort_classify(NULL), COORD_ABORT_OTHER);
	cr_assert_str_eq(coord_abort_class_name(COORD_ABORT_APP), "app");
	cr_assert_str_eq(coord_abort_class_name(COORD_ABORT_CLASSES), "other");
}

Test(metrics, duration_bounds_increase)
{
	for (size_t i = 1; i < COORD_DURATION_BUCKETS; i++)
		cr_assert_gt(coord_duration_le_ms[i], coord_duration_le_ms[i - 1]);
}
