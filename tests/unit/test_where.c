/*
 * test_where.c - libclient/where.c: where cut_open(NULL, NULL, ...) and
 * cutctl find the daemon from the environment and the run directory.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cut/cut.h"
#include "where.h"

static char dir[64];

/* A fresh run directory and an environment that names nothing. */
static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_where.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	unsetenv("CUTD_CONTROL");
	unsetenv("CUTD_APP");
	unsetenv("CUTD_NODE");
	setenv("CUTD_RUN_DIR", dir, 1);
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Makes a Unix socket at dir/name. */
static void
make_socket(const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s", dir, name);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
}

TestSuite(where, .init = setup, .fini = teardown);

Test(where, nothing_names_a_daemon)
{
	char app[256], ctl[256];

	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), CUT_EUNAVAIL);
	cr_assert_eq(where_defaults("", app, ctl, sizeof(app)), CUT_EUNAVAIL);
}

Test(where, control_from_the_environment)
{
	char app[256], ctl[256], want[256];

	setenv("CUTD_CONTROL", "ipc:///x/p1.ctl", 1);
	cr_assert_eq(where_defaults("p0", app, ctl, sizeof(app)), 0);
	cr_assert_str_eq(ctl, "ipc:///x/p1.ctl");
	cr_assert_str_eq(app, "ipc:///x/p1.app");
	setenv("CUTD_APP", "ipc:///y/a", 1);
	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), 0);
	cr_assert_str_eq(app, "ipc:///y/a");
	/* Neither .ctl to replace nor a node: no application link. */
	unsetenv("CUTD_APP");
	setenv("CUTD_CONTROL", "tcp://127.0.0.1:7000", 1);
	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), CUT_EINVAL);
	cr_assert_eq(where_defaults("p2", app, ctl, sizeof(app)), 0);
	snprintf(want, sizeof(want), "ipc://%s/p2.app", dir);
	cr_assert_str_eq(app, want);
}

Test(where, the_node_given_or_in_the_environment)
{
	char app[256], ctl[256], want[256];

	cr_assert_eq(where_defaults("p3", app, ctl, sizeof(app)), 0);
	snprintf(want, sizeof(want), "ipc://%s/p3.ctl", dir);
	cr_assert_str_eq(ctl, want);
	setenv("CUTD_NODE", "p4", 1);
	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), 0);
	snprintf(want, sizeof(want), "ipc://%s/p4.app", dir);
	cr_assert_str_eq(app, want);
	/* The argument beats the variable. */
	cr_assert_eq(where_defaults("p3", app, ctl, sizeof(app)), 0);
	snprintf(want, sizeof(want), "ipc://%s/p3.app", dir);
	cr_assert_str_eq(app, want);
}

Test(where, the_only_socket_in_the_run_directory)
{
	char app[256], ctl[256], want[256], node[32];
	FILE *f;

	/* Files that are not sockets do not count. */
	snprintf(want, sizeof(want), "%s/p8.ctl", dir);
	cr_assert_not_null(f = fopen(want, "w"));
	fclose(f);
	cr_assert_eq(where_sole_node(dir, node, sizeof(node)), 0);
	make_socket("p5.ctl");
	make_socket("p5.app");
	cr_assert_eq(where_sole_node(dir, node, sizeof(node)), 1);
	cr_assert_str_eq(node, "p5");
	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), 0);
	snprintf(want, sizeof(want), "ipc://%s/p5.ctl", dir);
	cr_assert_str_eq(ctl, want);
	cr_assert(where_ipc_exists(ctl));
	make_socket("p6.ctl");
	cr_assert_eq(where_sole_node(dir, node, sizeof(node)), 2);
	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), CUT_EUNAVAIL);
	cr_assert_eq(where_sole_node("/nonexistent", node, sizeof(node)), 0);
}

Test(where, urls_that_do_not_fit)
{
	char app[16], ctl[16];

	setenv("CUTD_CONTROL", "ipc:///a/very/long/path/p0.ctl", 1);
	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), CUT_EINVAL);
	unsetenv("CUTD_CONTROL");
	cr_assert_eq(where_defaults("p0", app, ctl, sizeof(app)), CUT_EINVAL);
}

Test(where, empty_variables_are_unset)
{
	char app[256], ctl[256];

	setenv("CUTD_CONTROL", "", 1);
	setenv("CUTD_NODE", "", 1);
	cr_assert_eq(where_defaults(NULL, app, ctl, sizeof(app)), CUT_EUNAVAIL);
	setenv("CUTD_RUN_DIR", "", 1);
	cr_assert_str_eq(where_run_dir(), "/run/cutd");
}
