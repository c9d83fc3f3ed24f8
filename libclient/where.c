/*
 * where.c - where the local daemon is when nobody says: the environment
 * (CUTD_CONTROL, CUTD_APP, CUTD_NODE, CUTD_RUN_DIR) and the sockets the
 * systemd unit's daemons make in /run/cutd.  The one place that knows
 * these names, for libcut's cut_open(NULL, NULL, ...) and for cutctl.
 * Nothing here logs or allocates.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cut/cut.h"
#include "where.h"

const char *
where_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *
where_run_dir(void)
{
	const char *v = where_env(WHERE_ENV_RUN_DIR);

	return v != NULL ? v : WHERE_RUN_DIR;
}

/* 1 if path names a socket. */
static int
is_socket(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

int
where_ipc_exists(const char *url)
{
	return strncmp(url, "ipc://", 6) == 0 && is_socket(url + 6);
}

size_t
where_sole_node(const char *dir, char *ret_node, size_t size)
{
	char path[4096], first[WHERE_NAME_MAX] = "";
	struct dirent *e;
	size_t n = 0, len;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		len = strlen(e->d_name);
		if (len <= 4 || strcmp(e->d_name + len - 4, ".ctl") != 0 ||
		    len - 4 >= sizeof(first))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!is_socket(path))
			continue;
		if (n++ == 0)
			snprintf(first, sizeof(first), "%.*s", (int)(len - 4),
			         e->d_name);
	}
	closedir(d);
	if (n == 1 && strlen(first) < size)
		snprintf(ret_node, size, "%s", first);
	return n;
}

/* Writes "ipc://DIR/NODE.SUFFIX" into buf; returns 0 or CUT_EINVAL if
 * it does not fit. */
static int
node_url(const char *node, const char *suffix, char *buf, size_t size)
{
	int n = snprintf(buf, size, "ipc://%s/%s.%s", where_run_dir(), node,
	                 suffix);

	return n > 0 && (size_t)n < size ? 0 : CUT_EINVAL;
}

int
where_defaults(const char *node, char *app, char *control, size_t size)
{
	const char *ctl = where_env(WHERE_ENV_CONTROL);
	const char *ap = where_env(WHERE_ENV_APP);
	char sole[WHERE_NAME_MAX];
	size_t len;
	int rv;

	if (node == NULL || node[0] == '\0')
		node = where_env(WHERE_ENV_NODE);
	if (ctl != NULL) {
		if (strlen(ctl) >= size)
			return CUT_EINVAL;
		snprintf(control, size, "%s", ctl);
	} else if (node != NULL) {
		if ((rv = node_url(node, "ctl", control, size)) != 0)
			return rv;
	} else if (where_sole_node(where_run_dir(), sole, sizeof(sole)) == 1) {
		node = sole;
		if ((rv = node_url(node, "ctl", control, size)) != 0)
			return rv;
	} else {
		return CUT_EUNAVAIL;
	}
	if (ap != NULL) {
		if (strlen(ap) >= size)
			return CUT_EINVAL;
		snprintf(app, size, "%s", ap);
		return 0;
	}
	/* The daemon's two sockets differ by their suffix. */
	len = strlen(control);
	if (len > 4 && strcmp(control + len - 4, ".ctl") == 0) {
		snprintf(app, size, "%.*s.app", (int)(len - 4), control);
		return 0;
	}
	return node != NULL ? node_url(node, "app", app, size) : CUT_EINVAL;
}
