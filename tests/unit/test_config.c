/*
 * test_config.c - the cluster file: defaults, valid topologies, every
 * error with its exact "FILE:LINE: message", the --check-config summary
 * and the SIGHUP comparison.
 *
 * Each test runs in its own temporary directory and writes its file as
 * "c.ini" there, so that error messages are predictable.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_schema.h"

static char dir[] = "/tmp/test_config.XXXXXX";

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chdir(dir), 0);
}

static void
teardown(void)
{
	unlink("c.ini");
	cr_assert_eq(chdir("/"), 0);
	rmdir(dir);
}

TestSuite(config, .init = setup, .fini = teardown);

static void
write_file(const char *text)
{
	FILE *f = fopen("c.ini", "w");

	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0, 1);
	cr_assert_eq(fclose(f), 0);
}

/* Loads text, which must be valid. */
static struct config *
load_ok(const char *text)
{
	struct config *cfg = NULL;
	char *errs = NULL;
	int rv;

	write_file(text);
	rv = config_load("c.ini", &cfg, &errs);
	cr_assert_eq(rv, 0, "config_load: %s\n%s", err_str(rv),
	             errs ? errs : "");
	cr_assert_null(errs);
	cr_assert_not_null(cfg);
	return cfg;
}

/* Loads text, which must be rejected with exactly the errors want. */
static void
expect_errors(const char *text, const char *want)
{
	struct config *cfg = NULL;
	char *errs = NULL;

	write_file(text);
	cr_assert_eq(config_load("c.ini", &cfg, &errs), E_CONFIG);
	cr_assert_null(cfg);
	cr_assert_not_null(errs);
	cr_assert_str_eq(errs, want);
	free(errs);
}

#define CLUSTER "[cluster]\nname = demo\n" /* lines 1-2 */
#define NODE(n, port)                                                          \
	"[node " n "]\npeer = tcp://127.0.0.1:" port "\n" /* two lines */
#define THREE NODE("p0", "7100") NODE("p1", "7101") NODE("p2", "7102")

static void
assert_chan(const struct config *cfg, size_t i, size_t src, size_t dst,
            int line)
{
	cr_assert_lt(i, cfg->nchans);
	cr_assert_eq(cfg->chans[i].src, src, "channel %zu", i);
	cr_assert_eq(cfg->chans[i].dst, dst, "channel %zu", i);
	cr_assert_eq(cfg->chans[i].line, line, "channel %zu", i);
}

Test(config, complete_graph_with_defaults)
{
	struct config *cfg = load_ok(CLUSTER THREE);
	size_t i, j, k = 0;

	cr_assert_str_eq(cfg->path, "c.ini");
	cr_assert_str_eq(cfg->cluster, "demo");
	cr_assert_eq(cfg->deadline_ms, 10000);
	cr_assert_eq(cfg->max_message, 1048576);
	cr_assert_eq(cfg->window, 1048576);
	cr_assert_eq(cfg->app_window, 1048576);
	cr_assert_eq(cfg->message_cost, 1024);
	cr_assert_eq(cfg->aligned, 0);
	cr_assert_str_eq(cfg->run_dir, "/run/cutd");
	cr_assert_str_eq(cfg->state_dir, "/var/lib/cutd");
	cr_assert_eq(cfg->nnodes, 3);
	cr_assert_str_eq(cfg->nodes[1].name, "p1");
	cr_assert_str_eq(cfg->nodes[1].peer, "tcp://127.0.0.1:7101");
	cr_assert_str_eq(cfg->nodes[1].app, "ipc:///run/cutd/p1.app");
	cr_assert_str_eq(cfg->nodes[1].control, "ipc:///run/cutd/p1.ctl");
	cr_assert_str_eq(cfg->nodes[1].database, "/var/lib/cutd/p1.db");
	cr_assert_eq(cfg->chans_declared, 0);
	cr_assert_eq(cfg->nchans, 6);
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			if (i != j)
				assert_chan(cfg, k++, i, j, 0);
	cr_assert_eq(config_node_index(cfg, "p2"), 2);
	cr_assert_eq(config_node_index(cfg, "p3"), -1);
	config_free(cfg);
}

Test(config, every_setting_explicit)
{
	struct config *cfg = load_ok("\xef\xbb\xbf# a comment\r\n"
	                             "[cluster]\r\n"
	                             "  name = demo-1 ; the name\r\n"
	                             "  deadline_ms = 100\r\n"
	                             "  max_message = 67108864\r\n"
	                             "  window = 65536\r\n"
	                             "  app_window = 1073741824\r\n"
	                             "  cut = aligned ; waits\r\n"
	                             "  message_cost = 65536\r\n"
	                             "  run_dir = /tmp/run//\r\n"
	                             "  state_dir = /\r\n"
	                             "  tls_ca = /etc/ca.pem\r\n"
	                             "  allow_mixed_transports = false\r\n"
	                             "[node a.b_c-9]\r\n"
	                             "\tpeer = tls+tcp://[::1]:65535\r\n"
	                             "\tapp = tcp://host.example:1\r\n"
	                             "\tcontrol = ipc:///x/a.ctl\r\n"
	                             "\tdatabase = /data/a.sqlite\r\n"
	                             "\ttls_cert = /etc/a.pem\r\n"
	                             "\ttls_key = /etc/a.key\r\n");
	const struct config_node *n = &cfg->nodes[0];

	cr_assert_str_eq(cfg->cluster, "demo-1");
	cr_assert_eq(cfg->deadline_ms, 100);
	cr_assert_eq(cfg->max_message, 64 << 20);
	cr_assert_eq(cfg->window, 64 << 10);
	cr_assert_eq(cfg->app_window, 1 << 30);
	cr_assert_eq(cfg->message_cost, 65536);
	cr_assert_eq(cfg->aligned, 1);
	cr_assert_str_eq(cfg->run_dir, "/tmp/run");
	cr_assert_str_eq(cfg->state_dir, "/");
	cr_assert_eq(cfg->nnodes, 1);
	cr_assert_str_eq(n->name, "a.b_c-9");
	cr_assert_str_eq(n->peer, "tls+tcp://[::1]:65535");
	cr_assert_str_eq(n->app, "tcp://host.example:1");
	cr_assert_str_eq(n->control, "ipc:///x/a.ctl");
	cr_assert_str_eq(n->database, "/data/a.sqlite");
	cr_assert_str_eq(cfg->tls_ca, "/etc/ca.pem");
	cr_assert_eq(cfg->allow_mixed, 0);
	cr_assert_str_eq(n->tls_cert, "/etc/a.pem");
	cr_assert_str_eq(n->tls_key, "/etc/a.key");
	cr_assert_eq(cfg->nchans, 0);
	config_free(cfg);
}

Test(config, defaults_follow_the_directories)
{
	struct config *cfg = load_ok("[cluster]\nname = t\nrun_dir = /tmp/r/\n"
	                             "state_dir = /\n" NODE("p0", "1"));

	cr_assert_str_eq(cfg->nodes[0].app, "ipc:///tmp/r/p0.app");
	cr_assert_str_eq(cfg->nodes[0].control, "ipc:///tmp/r/p0.ctl");
	cr_assert_str_eq(cfg->nodes[0].database, "/p0.db");
	config_free(cfg);
}

Test(config, ring_and_chords)
{
	/* Channels may come before the nodes they name. */
	struct config *cfg = load_ok(CLUSTER "[channels]\n"          /* 3 */
	                                     "channel = p0 -> p1\n"  /* 4 */
	                                     "channel = p1 -> p2\n"  /* 5 */
	                                     "channel = p2 -> p3\n"  /* 6 */
	                                     "channel = p3 -> p0\n"  /* 7 */
	                                     "channel=p0->p2\n"      /* 8 */
	                                     "channel =  p3  ->p1\n" /* 9 */
	                             NODE("p0", "7100") NODE("p1", "7101")
	                                 NODE("p2", "7102") NODE("p3", "7103"));

	cr_assert_eq(cfg->chans_declared, 1);
	cr_assert_eq(cfg->nchans, 6);
	assert_chan(cfg, 0, 0, 1, 4);
	assert_chan(cfg, 1, 1, 2, 5);
	assert_chan(cfg, 2, 2, 3, 6);
	assert_chan(cfg, 3, 3, 0, 7);
	assert_chan(cfg, 4, 0, 2, 8);
	assert_chan(cfg, 5, 3, 1, 9);
	config_free(cfg);
}

Test(config, single_node)
{
	struct config *cfg = load_ok(CLUSTER NODE("solo", "7100"));

	cr_assert_eq(cfg->nnodes, 1);
	cr_assert_eq(cfg->nchans, 0);
	config_free(cfg);
	cfg = load_ok(CLUSTER NODE("solo", "7100") "[channels]\n");
	cr_assert_eq(cfg->chans_declared, 1);
	cr_assert_eq(cfg->nchans, 0);
	config_free(cfg);
}

Test(config, cannot_read)
{
	struct config *cfg = NULL;
	char *errs = NULL;

	cr_assert_eq(config_load("missing.ini", &cfg, &errs), E_IO);
	cr_assert_null(cfg);
	cr_assert_str_eq(errs, "missing.ini: cannot open the cluster file: No "
	                       "such file or directory\n");
	free(errs);
	cr_assert_eq(config_load("/", &cfg, &errs), E_IO);
	cr_assert_str_eq(errs, "/: cannot read the cluster file: Is a "
	                       "directory\n");
	free(errs);
	cr_assert_eq(config_load("missing.ini", &cfg, NULL), E_IO);
	cr_assert_str_eq(err_str(E_IO), "I/O error");
}

Test(config, syntax_errors)
{
	expect_errors(CLUSTER "[node p0\n"         /* 3 */
	                      "peer = tcp://h:1\n" /* 4: in no section */
	                      "just words\n"       /* 5 */
	                      "= value\n"          /* 6 */
	              NODE("p1", "7101"),
	              "c.ini:3: section header is missing its closing ']'\n"
	              "c.ini:5: expected 'key = value', a [section] header or "
	              "a comment\n"
	              "c.ini:6: missing key name before '='\n");
}

/* What inih's grammar allows, line by line: ':' for '=', a comment or
 * anything after a header's ']', spaces inside the brackets, an indented
 * key after another (not a continuation of its value), and a header with
 * no keys after it, which still counts. */
Test(config, inih_grammar)
{
	struct config *cfg = load_ok("[cluster] ; the cluster\n"
	                             "name: demo\n"
	                             "    deadline_ms = 500\n"
	                             "    max_message = 4096\n"
	                             "[ node p0 ]junk\n"
	                             "peer = tcp://127.0.0.1:1 ; inline\n"
	                             "[node p1]\n"
	                             "peer=tcp://127.0.0.1:2\n"
	                             "#[channels]\n");

	cr_assert_str_eq(cfg->cluster, "demo");
	cr_assert_eq(cfg->deadline_ms, 500);
	cr_assert_eq(cfg->max_message, 4096);
	cr_assert_str_eq(cfg->nodes[0].name, "p0");
	cr_assert_str_eq(cfg->nodes[0].peer, "tcp://127.0.0.1:1");
	cr_assert_eq(cfg->chans_declared, 0);
	config_free(cfg);
	expect_errors(CLUSTER NODE("p0", "1") /* 1-4 */
	              "[]\n"                  /* 5 */
	              "peer = x\n"            /* 6: in no section */
	              "[cluster]\n"           /* 7 */
	              "[cluster]\n"           /* 8 */
	              "[node p1]\n",          /* 9: no keys */
	              "c.ini:5: unknown section []; expected [cluster], "
	              "[node NAME], [channels], [schedule], [retention] or [condition NAME]\n"
	              "c.ini:7: duplicate [cluster] section (first at line 1)\n"
	              "c.ini:8: duplicate [cluster] section (first at line 1)\n"
	              "c.ini:9: [node p1] has no 'peer' key\n");
}

Test(config, long_line_and_nul)
{
	char text[512];

	snprintf(text, sizeof(text),
	         CLUSTER NODE("p0", "1") "database = /%0199d\n", 0);
	expect_errors(text, "c.ini:5: line is longer than 198 characters\n");
	{
		FILE *f = fopen("c.ini", "w");
		struct config *cfg = NULL;
		char *errs = NULL;

		fwrite(CLUSTER "x = \0\n" NODE("p0", "1"), 1,
		       sizeof(CLUSTER "x = \0\n" NODE("p0", "1")) - 1, f);
		fclose(f);
		cr_assert_eq(config_load("c.ini", &cfg, &errs), E_CONFIG);
		cr_assert_str_eq(errs, "c.ini:3: line contains a NUL byte\n");
		free(errs);
	}
}

Test(config, unknown_sections_and_keys)
{
	expect_errors("colour = red\n"   /* 1 */
	              CLUSTER            /* 2-3 */
	              "colour = blue\n"  /* 4 */
	              "[nodes]\n"        /* 5 */
	              "peer = ignored\n" /* 6 */
	              NODE("p0", "1")    /* 7-8 */
	              "colour = green\n" /* 9 */
	              "[channels]\n"     /* 10 */
	              "chan = p0 -> p1\n" /* 11 */,
	              "c.ini:1: key 'colour' is outside any section; put it "
	              "under [cluster], [node NAME], [channels], [schedule], "
	              "[retention] or [condition NAME]\n"
	              "c.ini:4: unknown key 'colour' in [cluster]; 'cutd "
	              "--print-config-reference markdown' lists the keys of "
	              "[cluster]\n"
	              "c.ini:5: unknown section [nodes]; expected [cluster], "
	              "[node NAME], [channels], [schedule], [retention] or [condition NAME]\n"
	              "c.ini:9: unknown key 'colour' in [node p0]; the keys of "
	              "[node NAME] are peer, app, control, http, database, "
	              "tls_cert and tls_key\n"
	              "c.ini:11: unknown key 'chan' in [channels]; did you mean "
	              "'channel'?\n");
}

Test(config, missing_required)
{
	expect_errors("[cluster]\n" /* 1 */
	              "deadline_ms = 500\n"
	              "[node p0]\n" /* 3 */
	              "app = ipc:///a\n" /* 4 */,
	              "c.ini:1: [cluster] has no 'name' key\n"
	              "c.ini:3: [node p0] has no 'peer' key\n");
	expect_errors(NODE("p0", "1") "; the end\n",
	              "c.ini:3: the file has no [cluster] section\n");
	expect_errors(CLUSTER, "c.ini:2: the file declares no nodes; add a "
	                       "[node NAME] section\n");
	expect_errors("", "c.ini:1: the file has no [cluster] section\n"
	                  "c.ini:1: the file declares no nodes; add a [node "
	                  "NAME] section\n");
}

Test(config, duplicates)
{
	expect_errors(CLUSTER                 /* 1-2 */
	              "name = again\n"        /* 3 */
	              NODE("p0", "7100")      /* 4-5 */
	              "peer = tcp://h:2\n"    /* 6 */
	              "[cluster]\n"           /* 7 */
	              "name = third\n"        /* 8 */
	              NODE("p0", "7200")      /* 9-10 */
	              NODE("p1", "7101")      /* 11-12 */
	              "[channels]\n"          /* 13 */
	              "channel = p0 -> p1\n"  /* 14 */
	              "channel = p1 -> p0\n"  /* 15 */
	              "channel = p0->p1\n"    /* 16 */
	              "[channels]\n"          /* 17 */
	              "channel = p0 -> p1\n", /* 18 */
	              "c.ini:3: duplicate key 'name' in [cluster] (first at "
	              "line 2)\n"
	              "c.ini:6: duplicate key 'peer' in [node p0] (first at "
	              "line 5)\n"
	              "c.ini:7: duplicate [cluster] section (first at line 1)\n"
	              "c.ini:9: duplicate node p0 (first at line 4)\n"
	              "c.ini:16: duplicate channel p0 -> p1 (first at line "
	              "14)\n"
	              "c.ini:17: duplicate [channels] section (first at line "
	              "13)\n");
}

Test(config, bad_channels)
{
	expect_errors(CLUSTER THREE       /* 1-8 */
	              "[channels]\n"      /* 9 */
	              "channel = p0 p1\n" /* 10 */
	              "channel = p0 -> p1 -> p2\n"
	              "channel = -> p1\n"
	              "channel = p0 ->\n"
	              "channel = p0 -> p9\n" /* 14 */
	              "channel = px -> p1\n"
	              "channel = p2 -> p2\n" /* 16 */
	              "channel = p0 -> p1\n"
	              "channel = p1 -> p2\n"
	              "channel = p2 -> p0\n",
	              "c.ini:10: malformed channel 'p0 p1': expected 'SRC -> "
	              "DST'\n"
	              "c.ini:11: malformed channel 'p0 -> p1 -> p2': expected "
	              "'SRC -> DST'\n"
	              "c.ini:12: malformed channel '-> p1': expected 'SRC -> "
	              "DST'\n"
	              "c.ini:13: malformed channel 'p0 ->': expected 'SRC -> "
	              "DST'\n"
	              "c.ini:14: channel p0 -> p9 names unknown node p9\n"
	              "c.ini:15: channel px -> p1 names unknown node px\n"
	              "c.ini:16: channel p2 -> p2 joins a node to itself; a "
	              "channel needs two different nodes\n");
}

Test(config, not_strongly_connected)
{
	expect_errors(CLUSTER THREE "[channels]\n" /* 9 */
	                            "channel = p0 -> p1\n"
	                            "channel = p1 -> p2\n",
	              "c.ini:9: the channel graph is not strongly connected: "
	              "node p1 cannot reach node p0\n");
	expect_errors(CLUSTER THREE "[channels]\n" /* 9 */
	                            "channel = p0 -> p1\n"
	                            "channel = p1 -> p0\n"
	                            "channel = p2 -> p0\n",
	              "c.ini:9: the channel graph is not strongly connected: "
	              "node p2 cannot be reached from node p0\n");
	expect_errors(CLUSTER THREE "[channels]\n",
	              "c.ini:9: the channel graph is not strongly connected: "
	              "node p1 cannot be reached from node p0\n");
}

Test(config, bad_numbers)
{
	expect_errors("[cluster]\nname = x\n"
	              "deadline_ms = 99\n"     /* 3 */
	              "max_message = 0\n" NODE(/* 4 */
	                                       "p0", "1"),
	              "c.ini:3: [cluster] deadline_ms must be a whole number "
	              "from 100 to 3600000 (milliseconds), not '99'; use a "
	              "value in that range, or remove the line for the default "
	              "(10000)\n"
	              "c.ini:4: [cluster] max_message must be a whole number "
	              "from 1 to 67108864 (bytes: 1 to 64 MiB), not '0'; use "
	              "a value in that range, or remove the line for the "
	              "default (1048576)\n");
	expect_errors("[cluster]\nname = x\n"
	              "deadline_ms = 3600001\n"
	              "max_message = 67108865\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] deadline_ms must be a whole number "
	              "from 100 to 3600000 (milliseconds), not '3600001'; use a "
	              "value in that range, or remove the line for the default "
	              "(10000)\n"
	              "c.ini:4: [cluster] max_message must be a whole number "
	              "from 1 to 67108864 (bytes: 1 to 64 MiB), not '67108865'; use "
	              "a value in that range, or remove the line for the "
	              "default (1048576)\n");
	expect_errors("[cluster]\nname = x\n"
	              "deadline_ms = -1000\n"
	              "max_message = 1 MiB\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] deadline_ms must be a whole number "
	              "from 100 to 3600000 (milliseconds), not '-1000'; use a "
	              "value in that range, or remove the line for the default "
	              "(10000)\n"
	              "c.ini:4: [cluster] max_message must be a whole number "
	              "from 1 to 67108864 (bytes: 1 to 64 MiB), not '1 MiB'; use "
	              "a value in that range, or remove the line for the "
	              "default (1048576)\n");
	expect_errors("[cluster]\nname = x\n"
	              "deadline_ms = 99999999999999999999999\n"
	              "max_message =\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] deadline_ms must be a whole number "
	              "from 100 to 3600000 (milliseconds), not '99999999999999999999999'; use a "
	              "value in that range, or remove the line for the default "
	              "(10000)\n"
	              "c.ini:4: [cluster] max_message must be a whole number "
	              "from 1 to 67108864 (bytes: 1 to 64 MiB), not ''; use "
	              "a value in that range, or remove the line for the "
	              "default (1048576)\n");
}

/* The flow-control windows, the message cost and the cut: each bound is
 * allowed; the defaults are 1 MiB, 1024 and unaligned. */
Test(config, windows_and_cut)
{
	struct config *cfg = load_ok("[cluster]\nname = x\n"
	                             "window = 65536\n"
	                             "app_window = 65536\n"
	                             "message_cost = 0\n"
	                             "cut = unaligned\n" NODE("p0", "1"));

	cr_assert_eq(cfg->window, 65536);
	cr_assert_eq(cfg->app_window, 65536);
	cr_assert_eq(cfg->message_cost, 0);
	cr_assert_eq(cfg->aligned, 0);
	config_free(cfg);
	cfg = load_ok("[cluster]\nname = x\n"
	              "window = 1073741824\n"
	              "app_window = 1073741824\n"
	              "message_cost = 65536\n"
	              "cut = aligned\n" NODE("p0", "1"));
	cr_assert_eq(cfg->window, 1073741824);
	cr_assert_eq(cfg->app_window, 1073741824);
	cr_assert_eq(cfg->message_cost, 65536);
	cr_assert_eq(cfg->aligned, 1);
	config_free(cfg);
	/* Each key on its own: the others keep their defaults. */
	cfg = load_ok("[cluster]\nname = x\nwindow = 300000\n" NODE("p0", "1"));
	cr_assert_eq(cfg->window, 300000);
	cr_assert_eq(cfg->app_window, 1048576);
	cr_assert_eq(cfg->message_cost, 1024);
	cr_assert_eq(cfg->aligned, 0);
	config_free(cfg);
	cfg = load_ok(
	    "[cluster]\nname = x\napp_window = 300000\n" NODE("p0", "1"));
	cr_assert_eq(cfg->window, 1048576);
	cr_assert_eq(cfg->app_window, 300000);
	config_free(cfg);
	cfg = load_ok("[cluster]\nname = x\ncut = aligned\n" NODE("p0", "1"));
	cr_assert_eq(cfg->window, 1048576);
	cr_assert_eq(cfg->app_window, 1048576);
	cr_assert_eq(cfg->aligned, 1);
	config_free(cfg);
}

Test(config, bad_windows)
{
	expect_errors("[cluster]\nname = x\n"
	              "window = 65535\n"          /* 3 */
	              "app_window = 1073741825\n" /* 4 */
	              NODE("p0", "1"),
	              "c.ini:3: [cluster] window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'65535'; use a value in that range, or remove the line "
	              "for the default (1048576)\n"
	              "c.ini:4: [cluster] app_window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'1073741825'; use a value in that range, or remove the line "
	              "for the default (1048576)\n");
	expect_errors("[cluster]\nname = x\n"
	              "window = 1073741825\n"
	              "app_window = 65535\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'1073741825'; use a value in that range, or remove the line "
	              "for the default (1048576)\n"
	              "c.ini:4: [cluster] app_window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'65535'; use a value in that range, or remove the line "
	              "for the default (1048576)\n");
	expect_errors("[cluster]\nname = x\n"
	              "window = 0\n"
	              "app_window = 1 MiB\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'0'; use a value in that range, or remove the line "
	              "for the default (1048576)\n"
	              "c.ini:4: [cluster] app_window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'1 MiB'; use a value in that range, or remove the line "
	              "for the default (1048576)\n");
	expect_errors("[cluster]\nname = x\n"
	              "window = -65536\n"
	              "app_window =\n"
	              "window = 65536\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'-65536'; use a value in that range, or remove the line "
	              "for the default (1048576)\n"
	              "c.ini:4: [cluster] app_window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "''; use a value in that range, or remove the line "
	              "for the default (1048576)\n"
	              "c.ini:5: duplicate key 'window' in [cluster] (first at "
	              "line 3)\n");
}

Test(config, bad_message_cost)
{
	expect_errors("[cluster]\nname = x\n"
	              "message_cost = 65537\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] message_cost must be a whole number "
	              "from 0 to 65536 (bytes: 0 to 64 KiB), not '65537'; use a "
	              "value in that range, or remove the line for the "
	              "default (1024)\n");
	expect_errors("[cluster]\nname = x\n"
	              "message_cost = -1\n"
	              "message_cost = 1 KiB\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] message_cost must be a whole number "
	              "from 0 to 65536 (bytes: 0 to 64 KiB), not '-1'; use a "
	              "value in that range, or remove the line for the "
	              "default (1024)\n"
	              "c.ini:4: duplicate key 'message_cost' in [cluster] "
	              "(first at line 3)\n");
}

Test(config, bad_cut)
{
	expect_errors("[cluster]\nname = x\n"
	              "cut = sideways\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] cut must be unaligned or aligned, "
	              "not 'sideways'; remove the line for the default "
	              "(unaligned)\n");
	expect_errors("[cluster]\nname = x\n"
	              "cut = Aligned\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] cut must be unaligned or aligned, "
	              "not 'Aligned'; remove the line for the default "
	              "(unaligned)\n");
	expect_errors("[cluster]\nname = x\n"
	              "cut =\n"
	              "cut = aligned\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] cut must be unaligned or aligned, "
	              "not ''; remove the line for the default "
	              "(unaligned)\n"
	              "c.ini:4: duplicate key 'cut' in [cluster] (first at "
	              "line 3)\n");
}

Test(config, permissions_and_limits)
{
	struct config *cfg = load_ok(CLUSTER NODE("p0", "7100"));

	/* The defaults: the daemon's group, no admin group, TCP read-only,
	 * 16 in flight, 10 starts a second with bursts of 20. */
	cr_assert_null(cfg->socket_group);
	cr_assert_null(cfg->admin_group);
	cr_assert_eq(cfg->socket_gid, -1);
	cr_assert_eq(cfg->admin_gid, -1);
	cr_assert_eq(cfg->tcp_control_full, 0);
	cr_assert_eq(cfg->max_inflight, 16);
	cr_assert_eq(cfg->start_rate, 10);
	cr_assert_eq(cfg->start_burst, 20);
	config_free(cfg);
	cfg = load_ok(CLUSTER "socket_group = root\n"
	                      "admin_group = root\n"
	                      "tcp_control = read-only\n"
	                      "max_snapshots_in_flight = 1\n"
	                      "start_rate = 100000\n"
	                      "start_burst = 1\n" NODE("p0", "7100"));
	cr_assert_str_eq(cfg->socket_group, "root");
	cr_assert_str_eq(cfg->admin_group, "root");
	cr_assert_eq(cfg->socket_gid, 0);
	cr_assert_eq(cfg->admin_gid, 0);
	cr_assert_eq(cfg->tcp_control_full, 0);
	cr_assert_eq(cfg->max_inflight, 1);
	cr_assert_eq(cfg->start_rate, 100000);
	cr_assert_eq(cfg->start_burst, 1);
	config_free(cfg);
	cfg = load_ok(CLUSTER "max_snapshots_in_flight = 4096\n"
	                      "tcp_control = full\n" NODE("p0", "7100"));
	cr_assert_eq(cfg->max_inflight, 4096);
	cr_assert_eq(cfg->tcp_control_full, 1);
	config_free(cfg);
}

Test(config, bad_permissions_and_limits)
{
	expect_errors(
	    CLUSTER "socket_group = no-such-group-cutd-test\n"
	            "admin_group = two words\n"
	            "tcp_control = yes\n"
	            "max_snapshots_in_flight = 0\n"
	            "start_rate = 100001\n"
	            "start_burst = -1\n"
	            "admin_group = root\n" NODE("p0", "7100"),
	    "c.ini:3: [cluster] socket_group: no group "
	    "'no-such-group-cutd-test' on this host; create it (groupadd) or "
	    "remove the key\n"
	    "c.ini:4: [cluster] admin_group must be a group name, not 'two "
	    "words'; remove the line for the default (none)\n"
	    "c.ini:5: [cluster] tcp_control must be read-only or full, not "
	    "'yes'; remove the line for the default (read-only)\n"
	    "c.ini:6: [cluster] max_snapshots_in_flight must be a whole "
	    "number from 1 to 4096 (snapshots), not '0'; use a value in that "
	    "range, or remove the line for the default (16)\n"
	    "c.ini:7: [cluster] start_rate must be a whole number from 1 to "
	    "100000 (per second), not '100001'; use a value in that range, or "
	    "remove the line for the default (10)\n"
	    "c.ini:8: [cluster] start_burst must be a whole number from 1 to "
	    "100000 (calls), not '-1'; use a value in that range, or remove "
	    "the line for the default (20)\n"
	    "c.ini:9: duplicate key 'admin_group' in [cluster] (first at line "
	    "4)\n");
	expect_errors(CLUSTER "admin_group = nobody-group-cutd-test\n"
	                      "start_burst =\n" NODE("p0", "7100"),
	              "c.ini:3: [cluster] admin_group: no group "
	              "'nobody-group-cutd-test' on this host; create it "
	              "(groupadd) or remove the key\n"
	              "c.ini:4: [cluster] start_burst must be a whole number "
	              "from 1 to 100000 (calls), not ''; use a value in that "
	              "range, or remove the line for the default (20)\n");
}

Test(config, bad_names_and_values)
{
	expect_errors("[cluster]\n"
	              "name = my cluster\n" /* 2 */
	              "run_dir = run\n"     /* 3 */
	              "state_dir =\n"       /* 4 */
	              "[node p 0]\n"        /* 5 */
	              "[node]\n"            /* 6 */
	              "[node abcdefghijabcdefghijabcdefghijabc]\n"
	              "[node p/0]\n"        /* 8 */
	              NODE("p0", "1")       /* 9-10 */
	              "database = p0.db\n", /* 11 */
	              "c.ini:2: [cluster] name must be 1 to 64 printable "
	              "characters without spaces, not 'my cluster'\n"
	              "c.ini:3: [cluster] run_dir must be an absolute path, not "
	              "'run'; remove the line for the default (/run/cutd)\n"
	              "c.ini:4: [cluster] state_dir must be an absolute path, "
	              "not ''; remove the line for the default "
	              "(/var/lib/cutd)\n"
	              "c.ini:5: invalid node name 'p 0': use 1 to 32 "
	              "characters from A-Z a-z 0-9 _ . -\n"
	              "c.ini:6: a node section needs a name, as in [node p0]\n"
	              "c.ini:7: invalid node name "
	              "'abcdefghijabcdefghijabcdefghijabc': use 1 to 32 "
	              "characters from A-Z a-z 0-9 _ . -\n"
	              "c.ini:8: invalid node name 'p/0': use 1 to 32 "
	              "characters from A-Z a-z 0-9 _ . -\n"
	              "c.ini:11: [node p0] database must be an absolute path, "
	              "not 'p0.db'; remove the line for the default "
	              "(<state_dir>/<node>.db)\n");
}

Test(config, bad_endpoints)
{
	expect_errors(CLUSTER "[node p0]\n" /* 3 */
	                      "peer = ipc:///run/p0.peer\n"
	                      "app = udp://h:1\n"
	                      "control = ipc://rel.ctl\n" /* 6 */
	                      "[node p1]\n"               /* 7 */
	                      "peer = tcp://h\n"
	                      "app = tcp://h:0\n"
	                      "control = tcp://::1:80\n" /* 10 */
	                      "[node p2]\n"
	                      "peer = tcp://:7000\n" /* 12 */
	                      "app = ipc:///\n"
	                      "control = tcp://h:1 2\n",
	              "c.ini:4: [node p0] peer must be tcp://HOST:PORT or "
	              "tls+tcp://HOST:PORT, not 'ipc:///run/p0.peer'\n"
	              "c.ini:5: [node p0] app must be ipc:///PATH, "
	              "tcp://HOST:PORT or tls+tcp://HOST:PORT, not 'udp://h:1'; "
	              "remove the line for the default "
	              "(ipc://<run_dir>/<node>.app)\n"
	              "c.ini:6: [node p0] control must be ipc:///PATH, "
	              "tcp://HOST:PORT or tls+tcp://HOST:PORT, not 'ipc://rel.ctl'; "
	              "remove the line for the default "
	              "(ipc://<run_dir>/<node>.ctl)\n"
	              "c.ini:8: [node p1] peer must be tcp://HOST:PORT or "
	              "tls+tcp://HOST:PORT, not 'tcp://h'\n"
	              "c.ini:9: [node p1] app must be ipc:///PATH, "
	              "tcp://HOST:PORT or tls+tcp://HOST:PORT, not 'tcp://h:0'; "
	              "remove the line for the default "
	              "(ipc://<run_dir>/<node>.app)\n"
	              "c.ini:10: [node p1] control must be ipc:///PATH, "
	              "tcp://HOST:PORT or tls+tcp://HOST:PORT, not 'tcp://::1:80'; "
	              "remove the line for the default "
	              "(ipc://<run_dir>/<node>.ctl)\n"
	              "c.ini:12: [node p2] peer must be tcp://HOST:PORT or "
	              "tls+tcp://HOST:PORT, not 'tcp://:7000'\n"
	              "c.ini:13: [node p2] app must be ipc:///PATH, "
	              "tcp://HOST:PORT or tls+tcp://HOST:PORT, not 'ipc:///'; "
	              "remove the line for the default "
	              "(ipc://<run_dir>/<node>.app)\n"
	              "c.ini:14: [node p2] control must be ipc:///PATH, "
	              "tcp://HOST:PORT or tls+tcp://HOST:PORT, not 'tcp://h:1 2'; "
	              "remove the line for the default "
	              "(ipc://<run_dir>/<node>.ctl)\n");
}

Test(config, unix_socket_paths_too_long)
{
	char text[1024], want[1024], path[128];

	memset(path, 'x', 107);
	path[0] = '/';
	path[107] = '\0';
	snprintf(
	    text, sizeof(text),
	    CLUSTER NODE("p0", "1") "app = ipc://%s\ncontrol = ipc://%sy\n",
	    path, path);
	snprintf(want, sizeof(want),
	         "c.ini:6: [node p0] control path is longer than 107 bytes, "
	         "the limit for a Unix socket: 'ipc://%sy'\n",
	         path);
	expect_errors(text, want);
	path[101] = '\0';
	snprintf(text, sizeof(text),
	         "[cluster]\nname = x\nrun_dir = %s\n" NODE("p0", "1"), path);
	snprintf(want, sizeof(want),
	         "c.ini:4: the default app endpoint 'ipc://%s/p0.app' is "
	         "longer than 107 bytes, the limit for a Unix socket; set app "
	         "or a shorter run_dir\n"
	         "c.ini:4: the default control endpoint 'ipc://%s/p0.ctl' is "
	         "longer than 107 bytes, the limit for a Unix socket; set "
	         "control or a shorter run_dir\n",
	         path, path);
	expect_errors(text, want);
}

Test(config, duplicate_endpoints)
{
	expect_errors(CLUSTER NODE("p0", "7100")       /* 3-4 */
	              "app = ipc:///run/cutd/p1.ctl\n" /* 5 */
	              NODE("p1", "7100")               /* 6-7 */
	              "[node p2]\n"                    /* 8 */
	              "peer = tcp://127.0.0.1:7102\n"
	              "app = tcp://127.0.0.1:7102\n" /* 10 */
	              "control = ipc:///run/cutd/p1.app\n",
	              "c.ini:6: [node p1] control endpoint "
	              "ipc:///run/cutd/p1.ctl is already the app endpoint of "
	              "node p0\n"
	              "c.ini:7: [node p1] peer endpoint tcp://127.0.0.1:7100 "
	              "is already the peer endpoint of node p0\n"
	              "c.ini:10: [node p2] app endpoint tcp://127.0.0.1:7102 "
	              "is already the peer endpoint of node p2\n"
	              "c.ini:11: [node p2] control endpoint "
	              "ipc:///run/cutd/p1.app is already the app endpoint of "
	              "node p1\n");
}

Test(config, too_many_nodes)
{
	size_t size = 64 * (CONFIG_MAX_NODES + 2), len = 0;
	char *text = malloc(size), want[128];
	int i;

	cr_assert_not_null(text);
	len += (size_t)snprintf(text, size, CLUSTER);
	for (i = 0; i <= CONFIG_MAX_NODES; i++)
		len += (size_t)snprintf(text + len, size - len,
		                        "[node n%d]\npeer = tcp://h:%d\n", i,
		                        i + 1);
	snprintf(want, sizeof(want),
	         "c.ini:%d: too many nodes: at most 256 are allowed\n",
	         3 + 2 * CONFIG_MAX_NODES);
	expect_errors(text, want);
	free(text);
}

/* What an unknown key in [node NAME] is told. */
#define NODE_KEYS                                                              \
	"; the keys of [node NAME] are peer, app, control, http, database, "   \
	"tls_cert and tls_key"

Test(config, many_errors_collected_and_capped)
{
	char text[4096];
	size_t len = 0;
	int i;

	len += (size_t)snprintf(text, sizeof(text), CLUSTER NODE("p0", "1"));
	for (i = 0; i < 25; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		                        "bad%d = 1\n", i);
	expect_errors(text,
	              "c.ini:5: unknown key 'bad0' in [node p0]" NODE_KEYS "\n"
	              "c.ini:6: unknown key 'bad1' in [node p0]" NODE_KEYS "\n"
	              "c.ini:7: unknown key 'bad2' in [node p0]" NODE_KEYS "\n"
	              "c.ini:8: unknown key 'bad3' in [node p0]" NODE_KEYS "\n"
	              "c.ini:9: unknown key 'bad4' in [node p0]" NODE_KEYS "\n"
	              "c.ini:10: unknown key 'bad5' in [node p0]" NODE_KEYS "\n"
	              "c.ini:11: unknown key 'bad6' in [node p0]" NODE_KEYS "\n"
	              "c.ini:12: unknown key 'bad7' in [node p0]" NODE_KEYS "\n"
	              "c.ini:13: unknown key 'bad8' in [node p0]" NODE_KEYS "\n"
	              "c.ini:14: unknown key 'bad9' in [node p0]" NODE_KEYS "\n"
	              "c.ini:15: unknown key 'bad10' in [node p0]" NODE_KEYS "\n"
	              "c.ini:16: unknown key 'bad11' in [node p0]" NODE_KEYS "\n"
	              "c.ini:17: unknown key 'bad12' in [node p0]" NODE_KEYS "\n"
	              "c.ini:18: unknown key 'bad13' in [node p0]" NODE_KEYS "\n"
	              "c.ini:19: unknown key 'bad14' in [node p0]" NODE_KEYS "\n"
	              "c.ini:20: unknown key 'bad15' in [node p0]" NODE_KEYS "\n"
	              "c.ini:21: unknown key 'bad16' in [node p0]" NODE_KEYS "\n"
	              "c.ini:22: unknown key 'bad17' in [node p0]" NODE_KEYS "\n"
	              "c.ini:23: unknown key 'bad18' in [node p0]" NODE_KEYS "\n"
	              "c.ini:24: unknown key 'bad19' in [node p0]" NODE_KEYS "\n"
	              "c.ini: too many errors; only the first 20 are shown\n");
}

Test(config, errors_of_every_phase_sorted_by_line)
{
	expect_errors("[cluster]\n"          /* 1: no name */
	              "deadline_ms = soon\n" /* 2 */
	              "[node p0\n"           /* 3: syntax */
	              NODE("p1", "7101")     /* 4-5 */
	              "[node p2]\n"          /* 6: no peer */
	              "[channels]\n"         /* 7 */
	              "channel = p1 -> p3\n" /* 8 */
	              "oops\n",              /* 9: syntax */
	              "c.ini:1: [cluster] has no 'name' key\n"
	              "c.ini:2: [cluster] deadline_ms must be a whole number "
	              "from 100 to 3600000 (milliseconds), not 'soon'; use a "
	              "value in that range, or remove the line for the default "
	              "(10000)\n"
	              "c.ini:3: section header is missing its closing ']'\n"
	              "c.ini:6: [node p2] has no 'peer' key\n"
	              "c.ini:8: channel p1 -> p3 names unknown node p3\n"
	              "c.ini:9: expected 'key = value', a [section] header or "
	              "a comment\n");
}

static char *
print(const struct config *cfg)
{
	char *text = NULL;
	size_t size;
	FILE *f = open_memstream(&text, &size);

	cr_assert_not_null(f);
	cr_assert_eq(config_print(cfg, f), 0);
	cr_assert_eq(fclose(f), 0);
	return text;
}

Test(config, print_declared_channels)
{
	struct config *cfg =
	    load_ok("[cluster]\n"
	            "name = demo\n"
	            "deadline_ms = 5000\n"
	            "max_message = 4096\n"
	            "window = 200000\n"
	            "app_window = 65536\n"
	            "cut = aligned\n"
	            "message_cost = 0\n"
	            "run_dir = /tmp/r\n"
	            "state_dir = /tmp/s\n"
	            "socket_group = root\n"
	            "admin_group = root\n"
	            "tcp_control = full\n"
	            "max_snapshots_in_flight = 3\n"
	            "start_rate = 7\n"
	            "start_burst = 9\n" NODE("a", "7100")
	                NODE("b", "7101") "control = "
	                                  "tcp://0.0.0.0:9000\n"
	                                  "[channels]\n"
	                                  "channel = a -> b\n"
	                                  "channel = b -> a\n");
	char *text = print(cfg);

	cr_assert_str_eq(text, "cluster demo (c.ini)\n"
	                       "  deadline_ms = 5000\n"
	                       "  max_message = 4096\n"
	                       "  window      = 200000\n"
	                       "  app_window  = 65536\n"
	                       "  message_cost = 0\n"
	                       "  cut         = aligned\n"
	                       "  run_dir     = /tmp/r\n"
	                       "  state_dir   = /tmp/s\n"
	                       "  socket_group = root (gid 0)\n"
	                       "  admin_group = root (gid 0)\n"
	                       "  tcp_control = full\n"
	                       "  max_snapshots_in_flight = 3\n"
	                       "  start_rate  = 7\n"
	                       "  start_burst = 9\n"
	                       "  tls_ca      = (none)\n"
	                       "  allow_mixed_transports = false\n"
	                       "2 nodes:\n"
	                       "  a\n"
	                       "    peer     = tcp://127.0.0.1:7100\n"
	                       "    app      = ipc:///tmp/r/a.app\n"
	                       "    control  = ipc:///tmp/r/a.ctl\n"
	                       "    database = /tmp/s/a.db\n"
	                       "  b\n"
	                       "    peer     = tcp://127.0.0.1:7101\n"
	                       "    app      = ipc:///tmp/r/b.app\n"
	                       "    control  = tcp://0.0.0.0:9000\n"
	                       "    database = /tmp/s/b.db\n"
	                       "2 channels:\n"
	                       "  a -> b\n"
	                       "  b -> a\n"
	                       "strongly connected: yes\n");
	free(text);
	config_free(cfg);
}

Test(config, print_default_channels_and_single_node)
{
	struct config *cfg = load_ok(CLUSTER NODE("p0", "7100"));
	char *text = print(cfg);

	cr_assert_str_eq(text, "cluster demo (c.ini)\n"
	                       "  deadline_ms = 10000\n"
	                       "  max_message = 1048576\n"
	                       "  window      = 1048576\n"
	                       "  app_window  = 1048576\n"
	                       "  message_cost = 1024\n"
	                       "  cut         = unaligned\n"
	                       "  run_dir     = /run/cutd\n"
	                       "  state_dir   = /var/lib/cutd\n"
	                       "  socket_group = (the daemon's group)\n"
	                       "  admin_group = (none)\n"
	                       "  tcp_control = read-only\n"
	                       "  max_snapshots_in_flight = 16\n"
	                       "  start_rate  = 10\n"
	                       "  start_burst = 20\n"
	                       "  tls_ca      = (none)\n"
	                       "  allow_mixed_transports = false\n"
	                       "1 node:\n"
	                       "  p0\n"
	                       "    peer     = tcp://127.0.0.1:7100\n"
	                       "    app      = ipc:///run/cutd/p0.app\n"
	                       "    control  = ipc:///run/cutd/p0.ctl\n"
	                       "    database = /var/lib/cutd/p0.db\n"
	                       "0 channels (every ordered pair):\n"
	                       "strongly connected: yes\n");
	free(text);
	config_free(cfg);
	cfg = load_ok(CLUSTER NODE("p0", "7100") NODE("p1", "7101"));
	text = print(cfg);
	cr_assert(strstr(text, "\n2 channels (every ordered pair):\n"
	                       "  p0 -> p1\n"
	                       "  p1 -> p0\n"
	                       "strongly connected: yes\n") != NULL,
	          "%s", text);
	free(text);
	config_free(cfg);
}

Test(config, same_topology)
{
	struct config *a = load_ok(CLUSTER THREE);
	struct config *b = load_ok("[cluster]\nname = demo\ndeadline_ms = 900\n"
	                           "max_message = 10\n" THREE);
	struct config *c = load_ok(CLUSTER THREE "[channels]\n"
	                                         "channel = p0 -> p1\n"
	                                         "channel = p1 -> p2\n"
	                                         "channel = p2 -> p0\n");
	struct config *d = load_ok(CLUSTER THREE "database = /elsewhere\n");
	struct config *e = load_ok("[cluster]\nname = other\n" THREE);
	struct config *f = load_ok(CLUSTER NODE("p0", "7100") NODE("p2", "7102")
	                               NODE("p1", "7101"));

	cr_assert_eq(config_same_topology(a, a), 1);
	cr_assert_eq(config_same_topology(a, b), 1);
	cr_assert_eq(config_same_topology(a, c), 0);
	cr_assert_eq(config_same_topology(c, c), 1);
	cr_assert_eq(config_same_topology(a, d), 0);
	cr_assert_eq(config_same_topology(a, e), 0);
	cr_assert_eq(config_same_topology(a, f), 0);
	config_free(a);
	config_free(b);
	config_free(c);
	config_free(d);
	config_free(e);
	config_free(f);
	config_free(NULL);
}

#define TLSNODE(n, port)                                                       \
	"[node " n "]\npeer = tls+tcp://127.0.0.1:" port "\n"                  \
	"tls_cert = /c/" n ".pem\ntls_key = /c/" n ".key\n" /* four lines */

Test(config, tls_peers)
{
	struct config *cfg = load_ok(
	    "[cluster]\nname = t\ntls_ca = /c/ca.pem\n" TLSNODE("p0", "7100")
	        TLSNODE("p1", "7101"));

	cr_assert_str_eq(cfg->tls_ca, "/c/ca.pem");
	cr_assert_eq(cfg->allow_mixed, 0);
	cr_assert_str_eq(cfg->nodes[1].tls_cert, "/c/p1.pem");
	cr_assert_str_eq(cfg->nodes[1].tls_key, "/c/p1.key");
	cr_assert_eq(config_is_tls(cfg->nodes[0].peer), 1);
	cr_assert_eq(config_is_tls("tcp://127.0.0.1:1"), 0);
	config_free(cfg);
	/* Plaintext clusters need none of it. */
	cfg = load_ok(CLUSTER THREE);
	cr_assert_null(cfg->tls_ca);
	cr_assert_null(cfg->nodes[0].tls_cert);
	config_free(cfg);
}

Test(config, tls_needs_ca_cert_and_key)
{
	expect_errors(
	    "[cluster]\nname = t\n" TLSNODE(
	        "p0", "7100") "[node p1]\npeer = tls+tcp://127.0.0.1:7101\n"
	                      "tls_cert = /c/p1.pem\n",
	    "c.ini:1: [cluster] has no 'tls_ca' key, which "
	    "tls+tcp:// peers need\n"
	    "c.ini:7: [node p1] has no 'tls_key' key, which "
	    "tls+tcp:// peers need\n");
	expect_errors(
	    "[cluster]\nname = t\ntls_ca = ca.pem\n" TLSNODE("p0", "1"),
	    "c.ini:3: [cluster] tls_ca must be an absolute path, not "
	    "'ca.pem'; remove the line for the default (none)\n");
}

Test(config, tls_mixed_transports)
{
	struct config *cfg;

	expect_errors(
	    "[cluster]\nname = t\ntls_ca = /c/ca.pem\n" TLSNODE(
	        "p0", "7100") "[node p1]\npeer = tcp://127.0.0.1:7101\n"
	                      "tls_cert = /c/p1.pem\n"
	                      "tls_key = /c/p1.key\n",
	    "c.ini:9: [node p1] peer tcp://127.0.0.1:7101 is "
	    "plaintext but node p0's is TLS; mixing them needs "
	    "[cluster] allow_mixed_transports = true\n");
	/* A plaintext node still needs a certificate: it dials TLS peers. */
	expect_errors("[cluster]\nname = t\ntls_ca = /c/ca.pem\n"
	              "allow_mixed_transports = true\n" TLSNODE("p0", "7100")
	                  NODE("p1", "7101"),
	              "c.ini:9: [node p1] has no 'tls_cert' key, which "
	              "tls+tcp:// peers need\n"
	              "c.ini:9: [node p1] has no 'tls_key' key, which "
	              "tls+tcp:// peers need\n");
	expect_errors(
	    "[cluster]\nname = t\nallow_mixed_transports = yes\n" NODE("p0",
	                                                               "1"),
	    "c.ini:3: [cluster] allow_mixed_transports must be true or "
	    "false, not 'yes'; remove the line for the default (false)\n");
	cfg = load_ok(
	    "[cluster]\nname = t\ntls_ca = /c/ca.pem\n"
	    "allow_mixed_transports = true\n" TLSNODE(
	        "p0", "7100") "[node p1]\npeer = tcp://127.0.0.1:7101\n"
	                      "tls_cert = /c/p1.pem\ntls_key = /c/p1.key\n");
	cr_assert_eq(cfg->allow_mixed, 1);
	config_free(cfg);
}

Test(config, tls_same_topology)
{
	struct config *a = load_ok(
	    "[cluster]\nname = t\ntls_ca = /c/ca.pem\n" TLSNODE("p0", "7100")
	        TLSNODE("p1", "7101"));
	struct config *b = load_ok(
	    "[cluster]\nname = t\ntls_ca = /c/ca2.pem\n" TLSNODE("p0", "7100")
	        TLSNODE("p1", "7101"));
	struct config *c = load_ok(
	    "[cluster]\nname = t\ntls_ca = /c/ca.pem\n" TLSNODE("p0", "7100")
	        TLSNODE("p1", "7101"));

	cr_assert_eq(config_same_topology(a, c), 1);
	cr_assert_eq(config_same_topology(a, b), 0);
	free(c->nodes[1].tls_key);
	c->nodes[1].tls_key = NULL;
	cr_assert_eq(config_same_topology(a, c), 0);
	config_free(a);
	config_free(b);
	config_free(c);
}

/* [condition NAME]: sql inline or from a file beside the cluster file;
 * exactly one of them; the file must exist and fit. */
Test(config, conditions)
{
	struct config *cfg;
	FILE *f = fopen("t.sql", "w");

	cr_assert_not_null(f);
	fputs("SELECT 1 WHERE :snapshot IS NOT NULL\n", f);
	fclose(f);
	cfg = load_ok(CLUSTER NODE(
	    "p0", "1") "[condition inline]\nsql = SELECT :snapshot\n"
	               "[condition fromfile]\nfile = t.sql\n");
	cr_assert_eq(cfg->nconds, 2);
	cr_assert_str_eq(cfg->conds[0].name, "inline");
	cr_assert_str_eq(cfg->conds[0].sql, "SELECT :snapshot");
	cr_assert_null(cfg->conds[0].file);
	cr_assert_str_eq(cfg->conds[1].name, "fromfile");
	cr_assert_str_eq(cfg->conds[1].sql,
	                 "SELECT 1 WHERE :snapshot IS NOT NULL\n");
	config_free(cfg);
	expect_errors(CLUSTER NODE("p0", "1")      /* 1-4 */
	              "[condition both]\n"         /* 5 */
	              "sql = SELECT 1\n"           /* 6 */
	              "file = t.sql\n"             /* 7 */
	              "[condition none]\n"         /* 8 */
	              "[condition gone]\n"         /* 9 */
	              "file = no-such.sql\n"       /* 10 */
	              "[condition both]\n"         /* 11 */
	              "[condition bad name]\n"     /* 12 */
	              "[condition x]\nsize = 1\n", /* 13-14 */
	              "c.ini:7: [condition both] needs one of 'sql' and "
	              "'file'\n"
	              "c.ini:8: [condition none] needs one of 'sql' and "
	              "'file'\n"
	              "c.ini:10: [condition gone] file no-such.sql: No such "
	              "file or directory\n"
	              "c.ini:11: duplicate condition both (first at line 5)\n"
	              "c.ini:12: a condition section needs a name of 1 to 32 "
	              "characters from A-Z a-z 0-9 _ . -, as in [condition "
	              "terminated]\n"
	              "c.ini:13: [condition x] needs one of 'sql' and 'file'\n"
	              "c.ini:14: unknown key 'size' in [condition x]; the keys "
	              "of [condition NAME] are sql and file\n");
	unlink("t.sql");
}

Test(config, schedule_and_retention)
{
	struct config *cfg = load_ok(CLUSTER NODE("p0", "1") NODE("p1", "2")
	                             "[schedule]\n"
	                             "interval = 500ms\n"
	                             "initiator = p1\n"
	                             "timeout = 2s\n"
	                             "[retention]\n"
	                             "keep_last = 20\n"
	                             "keep_for = 7d\n"
	                             "keep_aborted = 5m\n");

	cr_assert_eq(cfg->sched_interval_ms, 500);
	cr_assert_eq(cfg->sched_initiator, 1);
	cr_assert_eq(cfg->sched_timeout_ms, 2000);
	cr_assert_eq(cfg->keep_last, 20);
	cr_assert_eq(cfg->keep_for_ms, 7ull * 86400000);
	cr_assert_eq(cfg->keep_aborted_ms, 300000);
	config_free(cfg);
	cfg = load_ok(CLUSTER NODE("p0", "1") NODE("p1", "2")
	              "[schedule]\ninterval = 5m\ninitiator = rotate\n");
	cr_assert_eq(cfg->sched_interval_ms, 300000);
	cr_assert_eq(cfg->sched_initiator, SCHED_ROTATE);
	cr_assert_eq(cfg->sched_timeout_ms, 0);
	cr_assert_eq(cfg->keep_last, 0);
	cr_assert_eq(cfg->keep_aborted_ms, 3600000);
	config_free(cfg);
}

Test(config, schedule_errors)
{
	expect_errors(CLUSTER NODE("p0", "1") /* 1-4 */
	              "[schedule]\n"          /* 5 */
	              "interval = 10\n"       /* 6: no unit */
	              "initiator = p9\n"      /* 7: unknown node */
	              "timeout = 1x\n"        /* 8 */
	              "every = 1s\n"          /* 9 */
	              "[retention]\n"         /* 10 */
	              "keep_last = 0\n"       /* 11 */
	              "keep_for = 1\n",       /* 12 */
	              "c.ini:6: [schedule] interval must be a duration such as "
	              "500ms, 10s, 5m, 1h or 7d, from 100ms to 1d, not '10'; "
	              "use a value in that range\n"
	              "c.ini:7: [schedule] initiator 'p9' is not a node of the "
	              "file\n"
	              "c.ini:8: [schedule] timeout must be a duration such as "
	              "500ms, 10s, 5m, 1h or 7d, from 100ms to 1h, not '1x'; "
	              "use a value in that range, or remove the line for the "
	              "default (deadline_ms)\n"
	              "c.ini:9: unknown key 'every' in [schedule]; the keys of "
	              "[schedule] are interval, initiator and timeout\n"
	              "c.ini:11: [retention] keep_last must be a whole number "
	              "from 1 to 1000000 (snapshots), not '0'; use a value in "
	              "that range, or remove the line for the default (none: "
	              "no count rule)\n"
	              "c.ini:12: [retention] keep_for must be a duration such "
	              "as 500ms, 10s, 5m, 1h or 7d, from 1s to 3650d, not '1'; "
	              "use a value in that range, or remove the line for the "
	              "default (none: no age rule)\n");
	expect_errors(CLUSTER NODE("p0", "1") "[schedule]\ninitiator = p0\n",
	              "c.ini:5: [schedule] has no 'interval' key\n");
}

Test(config, http_listener_off_by_default_or_set)
{
	struct config *cfg = load_ok(CLUSTER "[node p0]\n"
	                                     "peer = tcp://127.0.0.1:7100\n"
	                                     "http = http://127.0.0.1:9100\n"
	                                     "[node p1]\n"
	                                     "peer = tcp://127.0.0.1:7101\n"
	                                     "http = http://[::1]:9101\n"
	                                     "[node p2]\n"
	                                     "peer = tcp://127.0.0.1:7102\n");

	cr_assert_str_eq(cfg->nodes[0].http, "http://127.0.0.1:9100");
	cr_assert_str_eq(cfg->nodes[1].http, "http://[::1]:9101");
	cr_assert_null(cfg->nodes[2].http);
	config_free(cfg);
}

Test(config, bad_http)
{
	expect_errors(CLUSTER "[node p0]\n" /* 3 */
	                      "peer = tcp://127.0.0.1:7100\n"
	                      "http = tcp://127.0.0.1:9100\n" /* 5 */
	                      "[node p1]\n"
	                      "peer = tcp://127.0.0.1:7101\n"
	                      "http = http://127.0.0.1:9100/metrics\n" /* 8 */
	                      "[node p2]\n"
	                      "peer = tcp://127.0.0.1:7102\n"
	                      "http = http://h:0\n" /* 11 */
	                      "[node p3]\n"
	                      "peer = tcp://127.0.0.1:7103\n"
	                      "http = http://127.0.0.1:9103\n"
	                      "[node p4]\n"
	                      "peer = tcp://127.0.0.1:7104\n"
	                      "http = http://127.0.0.1:9103\n", /* 17 */
	              "c.ini:5: [node p0] http must be http://HOST:PORT, not "
	              "'tcp://127.0.0.1:9100'; remove the line for the default (none: off)\n"
	              "c.ini:8: [node p1] http must be http://HOST:PORT, not "
	              "'http://127.0.0.1:9100/metrics'; remove the line for the default (none: off)\n"
	              "c.ini:11: [node p2] http must be http://HOST:PORT, not "
	              "'http://h:0'; remove the line for the default (none: off)\n"
	              "c.ini:17: [node p4] http endpoint "
	              "http://127.0.0.1:9103 is already the http endpoint of "
	              "node p3\n");
}

/* ---- The schema (config_schema.c) ---- */

/* Appends to text, of size bytes, what fmt says. */
static void __attribute__((format(printf, 3, 4)))
append(char *text, size_t size, const char *fmt, ...)
{
	size_t n = strlen(text);
	va_list ap;

	va_start(ap, fmt);
	cr_assert_lt((size_t)vsnprintf(text + n, size - n, fmt, ap), size - n);
	va_end(ap);
}

/* A value key k takes. */
static void
sample(const struct config_key *k, char *buf, size_t len)
{
	switch (k->type) {
	case CT_INT:
	case CT_SIZE:
		snprintf(buf, len, "%llu", (unsigned long long)k->min);
		break;
	case CT_DURATION:
		snprintf(buf, len, "%llums", (unsigned long long)k->min);
		break;
	case CT_BOOL:
	case CT_ENUM:
		snprintf(buf, len, "%s", k->choices[0]);
		break;
	case CT_NODE:
		snprintf(buf, len, "rotate");
		break;
	default:
		snprintf(buf, len, "/x");
		break;
	}
}

/* A file of one node, p0, and section s (which comes once) with its
 * required keys, but for skip, then "key = value" under it if key is not
 * NULL.  [cluster] is lines 1-2, p0 lines 3-4; the key is on the last
 * line.  Returns that line. */
static int
file_with(char *text, size_t size, enum config_section s,
          const struct config_key *skip, const char *key, const char *value)
{
	char v[64];
	int line = 4;

	text[0] = '\0';
	append(text, size, NODE("p0", "1") CLUSTER);
	if (s != CS_CLUSTER)
		append(text, size, "%s\n", config_sections[s].title), line++;
	else
		line = 4;
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];

		if (k->section != s || !(k->flags & KF_REQUIRED) || k == skip ||
		    k->type == CT_STRING)
			continue;
		sample(k, v, sizeof(v));
		append(text, size, "%s = %s\n", k->key, v), line++;
	}
	if (key != NULL)
		append(text, size, "%s = %s\n", key, value), line++;
	return line;
}

Test(config, schema_has_no_duplicate_keys)
{
	for (size_t i = 0; i < config_nkeys; i++) {
		for (size_t j = 0; j < i; j++)
			cr_assert(config_keys[i].section !=
			                  config_keys[j].section ||
			              strcmp(config_keys[i].key,
			                     config_keys[j].key) != 0,
			          "%s %s is in the table twice",
			          config_sections[config_keys[i].section].title,
			          config_keys[i].key);
		cr_assert_eq(config_key_find(config_keys[i].section,
		                             config_keys[i].key),
		             &config_keys[i]);
	}
	cr_assert_null(config_key_find(CS_CLUSTER, "peer"));
	cr_assert_lt(config_nkeys, CONFIG_KEYS_MAX + 1);
}

/* Each row is whole: a line of documentation, a field of the size its
 * store says, a range that holds something, choices for a word. */
Test(config, schema_rows_are_well_formed)
{
	static const size_t sizes[] = {
	    [ST_UINT] = sizeof(unsigned), [ST_SIZE] = sizeof(size_t),
	    [ST_U64] = sizeof(uint64_t),  [ST_INT] = sizeof(int),
	    [ST_LONG] = sizeof(long),     [ST_STR] = sizeof(char *)};
	int seen[CS_N] = {0};

	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];

		seen[k->section] = 1;
		cr_assert(k->doc != NULL && k->doc[0] != '\0', "%s", k->key);
		cr_assert_neq(k->type, 0, "%s has no type", k->key);
		cr_assert_neq(k->reload, 0, "%s has no reload rule", k->key);
		if (k->store != ST_NONE)
			cr_assert_eq(k->size, sizes[k->store], "%s", k->key);
		if (k->type == CT_INT || k->type == CT_SIZE ||
		    k->type == CT_DURATION || k->type == CT_STRING)
			cr_assert_leq(k->min, k->max, "%s", k->key);
		if (k->type == CT_BOOL || k->type == CT_ENUM)
			cr_assert(k->choices != NULL && k->choices[1] != NULL,
			          "%s", k->key);
		cr_assert(!(k->flags & KF_REQUIRED) || k->def == NULL,
		          "%s is required and has a default", k->key);
		cr_assert(!(k->flags & KF_DERIVED) || k->def != NULL,
		          "%s", k->key);
	}
	for (int s = 0; s < CS_N; s++)
		cr_assert(seen[s], "%s has no key", config_sections[s].title);
}

/* A file that says no key of a section gets each default of the table:
 * the same value as a file that says the default itself.  A key without
 * a default is not set (0, NULL, or -1 for a group's gid); a derived one
 * is its template filled in. */
Test(config, every_default_is_the_tables)
{
	struct config *dflt = load_ok(NODE("p0", "1") CLUSTER), *cfg;
	char text[1024], want[256], got[256];
	int checked = 0;

	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];

		if (k->store == ST_NONE || (k->flags & KF_REQUIRED) ||
		    k->section == CS_CONDITION)
			continue;
		if (k->flags & KF_DERIVED) {
			/* ipc://<run_dir>/<node>.app and the like */
			const char *t = k->def;

			want[0] = '\0';
			while (*t != '\0') {
				if (strncmp(t, "<run_dir>", 9) == 0)
					append(want, sizeof(want), "%s",
					       dflt->run_dir),
					    t += 9;
				else if (strncmp(t, "<state_dir>", 11) == 0)
					append(want, sizeof(want), "%s",
					       dflt->state_dir),
					    t += 11;
				else if (strncmp(t, "<node>", 6) == 0)
					append(want, sizeof(want), "p0"),
					    t += 6;
				else
					append(want, sizeof(want), "%c", *t++);
			}
			cr_assert_str_eq(
			    *config_key_str(k, config_key_base(dflt, k, 0)),
			    want, "%s", k->key);
			checked++;
			continue;
		}
		if (k->def == NULL) {
			void *base = config_key_base(dflt, k, 0);

			if (k->store == ST_STR)
				cr_assert_null(*config_key_str(k, base), "%s",
				               k->key);
			else
				cr_assert_eq(config_key_num(k, base), 0, "%s",
				             k->key);
			if (k->type == CT_GROUP)
				cr_assert_eq(*(long *)((char *)base +
				                       k->offset2),
				             -1, "%s", k->key);
			checked++;
			continue;
		}
		file_with(text, sizeof(text), k->section, NULL, k->key,
		          k->def);
		cfg = load_ok(text);
		config_key_value(dflt, k, 0, got, sizeof(got));
		config_key_value(cfg, k, 0, want, sizeof(want));
		cr_assert_str_eq(got, want, "%s: default %s, said %s", k->key,
		                 got, want);
		if (k->store == ST_STR)
			cr_assert_str_eq(*config_key_str(k, dflt),
			                 *config_key_str(k, cfg), "%s", k->key);
		else
			cr_assert_eq(config_key_num(k, dflt),
			             config_key_num(k, cfg), "%s", k->key);
		config_free(cfg);
		checked++;
	}
	/* The values the daemon has always had. */
	cr_assert_eq(dflt->deadline_ms, 10000);
	cr_assert_eq(dflt->keep_aborted_ms, 3600000);
	cr_assert_eq(dflt->sched_initiator, SCHED_ROTATE);
	cr_assert_gt(checked, 20);
	config_free(dflt);
}

/* Every number and duration the table bounds: one past either end is
 * refused with the section, the key, the range the table gives, and what
 * to do. */
Test(config, out_of_range_names_the_tables_range)
{
	char text[1024], value[64], form[256], want[768];
	struct config *cfg = NULL;
	char *errs = NULL;
	int n = 0;

	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];
		const char *unit =
		    k->type == CT_DURATION ? "ms" : "";

		if (k->type != CT_INT && k->type != CT_SIZE &&
		    k->type != CT_DURATION)
			continue;
		config_key_form(k, form, sizeof(form));
		for (int end = 0; end < 2; end++) {
			int line;

			if (end == 0 && k->min == 0)
				continue;
			snprintf(value, sizeof(value), "%llu%s",
			         (unsigned long long)(end ? k->max + 1
			                                  : k->min - 1),
			         unit);
			line = file_with(text, sizeof(text), k->section, k,
			                 k->key, value);
			write_file(text);
			cr_assert_eq(config_load("c.ini", &cfg, &errs),
			             E_CONFIG, "%s = %s accepted", k->key,
			             value);
			snprintf(want, sizeof(want),
			         "c.ini:%d: %s %s must be %s, not '%s'; use a "
			         "value in that range",
			         line, config_sections[k->section].title,
			         k->key, form, value);
			cr_assert(strstr(errs, want) == errs, "%s\nwant: %s",
			          errs, want);
			free(errs);
			n++;
		}
	}
	cr_assert_gt(n, 15);
	/* One whole, as a user sees it. */
	expect_errors(CLUSTER "window = 2147483648\n" NODE("p0", "1"),
	              "c.ini:3: [cluster] window must be a whole number from "
	              "65536 to 1073741824 (bytes: 64 KiB to 1 GiB), not "
	              "'2147483648'; use a value in that range, or remove the "
	              "line for the default (1048576)\n");
}

Test(config, unknown_key_names_a_guess_or_the_keys)
{
	expect_errors(CLUSTER "deadline = 5000\n"  /* 3: a prefix */
	                      "windw = 65536\n"    /* 4: one edit */
	                      "max_mesage = 10\n"  /* 5: one edit */
	                      "Name = x\n"         /* 6: case */
	              NODE("p0", "1") "databse = /x\n" /* 9 */
	                              "[retention]\n"
	                              "keep = 5\n"      /* 11: a prefix */
	                              "count = 5\n"     /* 12 */
	                              "timeout = 5s\n", /* 13: elsewhere */
	              "c.ini:3: unknown key 'deadline' in [cluster]; did you "
	              "mean 'deadline_ms'?\n"
	              "c.ini:4: unknown key 'windw' in [cluster]; did you mean "
	              "'window'?\n"
	              "c.ini:5: unknown key 'max_mesage' in [cluster]; did you "
	              "mean 'max_message'?\n"
	              "c.ini:6: unknown key 'Name' in [cluster]; did you mean "
	              "'name'?\n"
	              "c.ini:9: unknown key 'databse' in [node p0]; did you "
	              "mean 'database'?\n"
	              "c.ini:11: unknown key 'keep' in [retention]; did you "
	              "mean 'keep_last'?\n"
	              "c.ini:12: unknown key 'count' in [retention]; the keys "
	              "of [retention] are keep_last, keep_for and "
	              "keep_aborted\n"
	              "c.ini:13: unknown key 'timeout' in [retention]; timeout "
	              "is a key of [schedule]\n");
}

/* The summary shows the schedule and retention in effect, each key in
 * the file's own units. */
Test(config, print_schedule_and_retention)
{
	struct config *cfg = load_ok(CLUSTER NODE("p0", "1") NODE("p1", "2")
	                             "[schedule]\ninterval = 90s\n"
	                             "initiator = p1\n"
	                             "[retention]\nkeep_for = 7d\n");
	char *text = print(cfg);

	cr_assert(strstr(text, "\nschedule:\n"
	                       "  interval    = 90s\n"
	                       "  initiator   = p1\n"
	                       "  timeout     = (deadline_ms)\n"
	                       "retention:\n"
	                       "  keep_last   = (none: no count rule)\n"
	                       "  keep_for    = 7d\n"
	                       "  keep_aborted = 1h\n"
	                       "2 nodes:\n") != NULL,
	          "%s", text);
	free(text);
	config_free(cfg);
}

struct notes {
	char text[2048];
	int n;
};

static void
note(void *arg, const char *text)
{
	struct notes *n = arg;

	append(n->text, sizeof(n->text), "%s\n", text);
	n->n++;
}

struct two {
	struct notes applied, kept;
};

static void
note_applied(void *arg, const char *text)
{
	note(&((struct two *)arg)->applied, text);
}

static void
note_kept(void *arg, const char *text)
{
	note(&((struct two *)arg)->kept, text);
}

/* SIGHUP by the table: refused keys, nodes and channels refuse; applied
 * keys move into the running configuration; the rest are told kept. */
Test(config, reload_follows_the_table)
{
	struct config *cur = load_ok(CLUSTER NODE("p0", "1") NODE("p1", "2"));
	struct config *next;
	struct notes refused = {.n = 0};
	struct two two = {.applied.n = 0};

	next = load_ok("[cluster]\nname = demo\nmax_message = 4096\n"
	               "deadline_ms = 300\n" NODE("p0", "1")
	                   NODE("p1", "3"));
	cr_assert_eq(config_reload_refusals(cur, next, note, &refused), 2);
	cr_assert_str_eq(refused.text,
	                 "[cluster] max_message changed from 1048576 to "
	                 "4096\n"
	                 "[node p1] peer changed from tcp://127.0.0.1:2 to "
	                 "tcp://127.0.0.1:3\n");
	config_free(next);

	refused.text[0] = '\0';
	next = load_ok(CLUSTER NODE("p0", "1") NODE("p2", "2"));
	cr_assert_eq(config_reload_refusals(cur, next, note, &refused), 1);
	cr_assert_str_eq(refused.text, "the nodes changed (their names, "
	                               "number or order)\n");
	config_free(next);

	/* The same channels declared are the same; in another order not. */
	next = load_ok(CLUSTER NODE("p0", "1") NODE("p1", "2")
	               "[channels]\nchannel = p0 -> p1\nchannel = p1 -> p0\n");
	cr_assert_eq(config_reload_refusals(cur, next, note, &refused), 0);
	config_free(next);
	refused.text[0] = '\0';
	next = load_ok(CLUSTER NODE("p0", "1") NODE("p1", "2")
	               "[channels]\nchannel = p1 -> p0\nchannel = p0 -> p1\n");
	cr_assert_eq(config_reload_refusals(cur, next, note, &refused), 1);
	cr_assert_str_eq(refused.text, "the channels changed\n");
	config_free(next);

	/* run_dir itself is kept until a restart, but the default
	 * endpoints it moves are refused. */
	refused.text[0] = '\0';
	next = load_ok(CLUSTER "run_dir = /tmp/cutd-r\n" NODE("p0", "1")
	                   NODE("p1", "2"));
	cr_assert_eq(config_reload_refusals(cur, next, note, &refused), 4);
	cr_assert(strncmp(refused.text,
	                  "[node p0] app changed from ipc:///run/cutd/p0.app "
	                  "to ipc:///tmp/cutd-r/p0.app\n",
	                  70) == 0,
	          "%s", refused.text);
	config_free(next);

	next = load_ok("[cluster]\nname = demo\ndeadline_ms = 300\n"
	               "admin_group = root\nstart_rate = 99\n"
	               "state_dir = /tmp/cutd-s\n"
	               "[node p0]\npeer = tcp://127.0.0.1:1\n"
	               "database = /var/lib/cutd/p0.db\n"
	               "[node p1]\npeer = tcp://127.0.0.1:2\n"
	               "database = /var/lib/cutd/p1.db\n"
	               "[schedule]\ninterval = 1m\ninitiator = rotate\n");
	cr_assert_eq(config_reload_refusals(cur, next, note, &refused), 0);
	config_reload_apply(cur, next, note_applied, note_kept, &two);
	config_free(next);
	cr_assert_eq(cur->deadline_ms, 300);
	cr_assert_eq(cur->start_rate, 99);
	cr_assert_str_eq(cur->admin_group, "root");
	cr_assert_eq(cur->admin_gid, 0);
	cr_assert_str_eq(cur->state_dir, "/var/lib/cutd");
	cr_assert_eq(cur->sched_interval_ms, 0, "a schedule is not started");
	cr_assert_str_eq(two.applied.text,
	                 "[cluster] deadline_ms changed from 10000 to 300\n"
	                 "[cluster] admin_group changed from (none) to root "
	                 "(gid 0)\n"
	                 "[cluster] start_rate changed from 10 to 99\n");
	cr_assert_str_eq(two.kept.text,
	                 "[cluster] state_dir changed from /var/lib/cutd to "
	                 "/tmp/cutd-s\n"
	                 "[schedule] interval changed from (none) to 1m\n");
	/* And back: the strings swapped into next are freed with it. */
	next = load_ok(CLUSTER NODE("p0", "1") NODE("p1", "2"));
	config_reload_apply(cur, next, note_applied, note_kept, &two);
	config_free(next);
	cr_assert_eq(cur->deadline_ms, 10000);
	cr_assert_null(cur->admin_group);
	cr_assert_eq(cur->admin_gid, -1);
	config_free(cur);
}
