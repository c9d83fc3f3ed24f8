/*
 * cutctl_where.c - which daemon cutctl talks to.  Each of the control URL,
 * the cluster file and the node comes from its flag, else from the
 * environment, else from the defaults of the systemd unit:
 *
 *   1. --control URL (with neither --cluster nor --node);
 *   2. with --cluster or --node, the node's control URL in the cluster
 *      file, skipping CUTD_CONTROL (a flag beats a variable);
 *   3. $CUTD_CONTROL;
 *   4. the cluster file (--cluster, $CUTD_CLUSTER, /etc/cutd/cluster.ini)
 *      and the node (--node, $CUTD_NODE; else the file's only node, else
 *      the only one of its nodes whose control socket is on this host);
 *   5. with no cluster file at the default path: RUN_DIR/NODE.ctl for a
 *      node named, else the only control socket in RUN_DIR
 *      ($CUTD_RUN_DIR, /run/cutd).
 *
 * When nothing works the sentence says what was tried.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "config.h"
#include "cutctl.h"
#include "where.h"

/* The "--control not given, CUTD_CONTROL unset" part of a sentence. */
#define TRIED "no control socket: --control not given, CUTD_CONTROL unset"

/* Copies s into url; returns 0 or EX_USAGE if it does not fit. */
static int
set_url(const char *s, char *url, size_t size, char *why, size_t wsize)
{
	if (strlen(s) >= size) {
		snprintf(why, wsize, "the control URL is over %zu bytes",
		         size - 1);
		return EX_USAGE;
	}
	snprintf(url, size, "%s", s);
	return 0;
}

/* Without a cluster file: the node's socket, or the only one here. */
static int
from_run_dir(const char *node, const char *cluster, char *url, size_t size,
             char *why, size_t wsize)
{
	const char *dir = where_run_dir();
	char sole[WHERE_NAME_MAX], buf[1024];
	size_t n;

	if (node == NULL &&
	    (n = where_sole_node(dir, sole, sizeof(sole))) != 1) {
		snprintf(why, wsize,
		         TRIED ", %s: %s, %s control sockets in %s; give "
		               "--control URL, or --cluster FILE and --node "
		               "NAME",
		         cluster, strerror(ENOENT), n == 0 ? "no" : "several",
		         dir);
		return EX_USAGE;
	}
	snprintf(buf, sizeof(buf), "ipc://%s/%s.ctl", dir,
	         node != NULL ? node : sole);
	return set_url(buf, url, size, why, wsize);
}

/* The file's only node, or the only one whose socket is on this host;
 * -1 after writing why. */
static int
guess_node(const struct config *cfg, const char *cluster, char *why,
           size_t wsize)
{
	size_t i, here = 0;
	int k = -1;

	if (cfg->nnodes == 1)
		return 0;
	for (i = 0; i < cfg->nnodes; i++)
		if (where_ipc_exists(cfg->nodes[i].control)) {
			here++;
			k = (int)i;
		}
	if (here == 1)
		return k;
	snprintf(why, wsize,
	         TRIED ", %s names %zu nodes and %s of their control sockets "
	               "%s on this host; say which with --node (or "
	               "CUTD_NODE)",
	         cluster, cfg->nnodes, here == 0 ? "none" : "more than one",
	         here == 0 ? "is" : "are");
	return -1;
}

int
find_control(const char *control, const char *cluster, const char *node,
             char *url, size_t size, char *why, size_t wsize)
{
	const char *env = where_env(WHERE_ENV_CONTROL);
	struct config *cfg;
	char *errors = NULL;
	int rv, k, named = cluster != NULL;

	if (control != NULL && (cluster != NULL || node != NULL)) {
		snprintf(why, wsize,
		         "give --control or --cluster and --node, "
		         "not both");
		return EX_USAGE;
	}
	if (control != NULL)
		return set_url(control, url, size, why, wsize);
	if (cluster == NULL && node == NULL && env != NULL)
		return set_url(env, url, size, why, wsize);
	if (cluster == NULL && (cluster = where_env(WHERE_ENV_CLUSTER)) != NULL)
		named = 1;
	if (cluster == NULL)
		cluster = WHERE_CLUSTER;
	if (node == NULL)
		node = where_env(WHERE_ENV_NODE);
	if (!named && access(cluster, F_OK) != 0 && errno == ENOENT)
		return from_run_dir(node, cluster, url, size, why, wsize);
	if ((rv = config_load(cluster, &cfg, &errors)) != 0) {
		snprintf(why, wsize, "%s",
		         errors != NULL ? errors : err_str(rv));
		free(errors);
		/* config_load's lines end with a newline; fail() adds one. */
		if (why[0] != '\0' && why[strlen(why) - 1] == '\n')
			why[strlen(why) - 1] = '\0';
		return EX_CONFIG;
	}
	if (node != NULL && (k = config_node_index(cfg, node)) < 0) {
		snprintf(why, wsize, "%s: no node \"%s\"", cluster, node);
		rv = EX_CONFIG;
	} else if (node == NULL &&
	           (k = guess_node(cfg, cluster, why, wsize)) < 0) {
		rv = EX_USAGE;
	} else {
		rv = set_url(cfg->nodes[k].control, url, size, why, wsize);
	}
	config_free(cfg);
	return rv;
}
