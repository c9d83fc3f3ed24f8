/*
 * test_pipewatch.c - daemon/shell/pipewatch.c over real nng sockets
 * (inproc): a dialing pair1 socket that nng gives a second connection,
 * which pair1 refuses, still has its first one; when that one closes the
 * watch follows the next; and pipewatch_check() forgets a connection nng
 * no longer knows.
 *
 * The refusal is the case a count of notifications got wrong: nng 1.5.2
 * reports the refused connection's removal but never its addition, so a
 * count said "no connection" while one was open, and the daemon never
 * sent its peer a hello (integration_tls_impostor failed in CI on it).
 */
#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/supplemental/util/platform.h>
#include <string.h>

#include "pipewatch.h"

static nng_socket s, a, b;
static struct pipewatch w;

static void
setup(void)
{
	cr_assert_eq(nng_pair1_open(&s), 0);
	cr_assert_eq(nng_pair1_open_poly(&a), 0);
	cr_assert_eq(nng_pair1_open_poly(&b), 0);
	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 10);
	nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 10);
	nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 1024);
	nng_socket_set_size(a, NNG_OPT_RECVMAXSZ, 1024);
	nng_socket_set_size(b, NNG_OPT_RECVMAXSZ, 1024);
	nng_socket_set_ms(a, NNG_OPT_RECVTIMEO, 2000);
	nng_socket_set_ms(b, NNG_OPT_RECVTIMEO, 2000);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 2000);
	cr_assert_eq(pipewatch_start(&w, s), 0);
	cr_assert_eq(nng_listen(a, "inproc://pipewatch-a", NULL, 0), 0);
	cr_assert_eq(nng_listen(b, "inproc://pipewatch-b", NULL, 0), 0);
}

static void
teardown(void)
{
	nng_close(s);
	nng_close(a);
	nng_close(b);
}

TestSuite(pipewatch, .init = setup, .fini = teardown, .timeout = 20);

/* Waits up to ms for the watch to name an open connection other than
 * not; returns it, or 0. */
static uint32_t
wait_open(uint32_t not, int ms)
{
	for (int t = 0; t < ms; t += 5) {
		uint32_t id = pipewatch_id(&w);
		if (id != 0 && id != not )
			return id;
		nng_msleep(5);
	}
	return 0;
}

/* Sends text on s and expects it on r. */
static void
expect_through(nng_socket r, const char *text)
{
	char *buf = NULL;
	size_t len;

	cr_assert_eq(nng_send(s, (void *)text, strlen(text) + 1, 0), 0);
	cr_assert_eq(nng_recv(r, &buf, &len, NNG_FLAG_ALLOC), 0,
	             "%s did not arrive", text);
	cr_assert_str_eq(buf, text);
	nng_free(buf, len);
}

/* How many connections pair1 refused on s, from nng's statistics. */
static uint64_t
refused_on_s(void)
{
	nng_stat *all, *st;
	uint64_t v = 0;

	cr_assert_eq(nng_stats_get(&all), 0);
	for (st = nng_stat_child(all); st != NULL; st = nng_stat_next(st)) {
		nng_stat *id = nng_stat_find(st, "id");
		nng_stat *rej = nng_stat_find(st, "reject");
		if (strcmp(nng_stat_name(st), "socket") == 0 && id != NULL &&
		    nng_stat_value(id) == (uint64_t)nng_socket_id(s) &&
		    rej != NULL)
			v = nng_stat_value(rej);
	}
	nng_stats_free(all);
	return v;
}

Test(pipewatch, refused_second_connection_keeps_the_first)
{
	uint32_t first, next;

	cr_assert_eq(pipewatch_id(&w), 0);
	cr_assert_eq(nng_dial(s, "inproc://pipewatch-a", NULL, 0), 0);
	cr_assert_neq(first = wait_open(0, 2000), 0, "no connection seen");
	cr_assert_eq(pipewatch_take_added(&w), 1);
	cr_assert_eq(pipewatch_take_added(&w), 0);
	/* A second dialer: pair1 refuses each of its connections while the
	 * first is open, and nng reports their removals. */
	cr_assert_eq(
	    nng_dial(s, "inproc://pipewatch-b", NULL, NNG_FLAG_NONBLOCK), 0);
	for (int t = 0; t < 2000 && refused_on_s() < 5; t += 5)
		nng_msleep(5);
	cr_assert_geq(refused_on_s(), 5, "pair1 refused nothing");
	cr_assert_eq(pipewatch_id(&w), first,
	             "the open connection was forgotten after refusals");
	expect_through(a, "to a");
	/* The first closes: the watch follows the dialer's next one, to b. */
	nng_close(a);
	cr_assert_neq(next = wait_open(first, 3000), 0,
	              "the connection to b was not seen");
	expect_through(b, "to b");
	cr_assert_eq(pipewatch_id(&w), next);
	cr_assert_eq(pipewatch_take_added(&w), 1);
}

Test(pipewatch, check_forgets_a_connection_nng_removed)
{
	uint32_t first;

	cr_assert_eq(nng_dial(s, "inproc://pipewatch-a", NULL, 0), 0);
	cr_assert_neq(first = wait_open(0, 2000), 0);
	/* A live connection is kept. */
	pipewatch_check(&w);
	cr_assert_eq(pipewatch_id(&w), first);
	nng_close(a);
	for (int t = 0; t < 2000 && pipewatch_id(&w) != 0; t += 5)
		nng_msleep(5);
	cr_assert_eq(pipewatch_id(&w), 0,
	             "the closed connection is still open");
	/* As if its removal had been reported before its addition and a
	 * later removal had hidden that: the id is stale. */
	atomic_store(&w.id, first);
	pipewatch_check(&w);
	cr_assert_eq(pipewatch_id(&w), 0, "a connection nng removed is kept");
}
