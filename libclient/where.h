/*
 * where.h - where the local daemon's sockets are when the caller does not
 * say (where.c).  Internal to libcut and cutctl; never installed.
 *
 * The environment, each variable ignored when unset or empty:
 *   CUTD_CONTROL  the control URL, e.g. ipc:///run/cutd/p0.ctl
 *   CUTD_APP      the application link's URL (libcut only); by default
 *                 CUTD_CONTROL with .app for .ctl
 *   CUTD_NODE     the node, whose sockets are RUN_DIR/NODE.ctl and .app
 *   CUTD_CLUSTER  the cluster file (cutctl only; default
 *                 /etc/cutd/cluster.ini)
 *   CUTD_RUN_DIR  where the daemons' sockets are (default /run/cutd, the
 *                 systemd unit's RuntimeDirectory)
 */
#ifndef CUT_WHERE_H
#define CUT_WHERE_H

#include <stddef.h>

#define WHERE_ENV_CONTROL "CUTD_CONTROL"
#define WHERE_ENV_APP     "CUTD_APP"
#define WHERE_ENV_NODE    "CUTD_NODE"
#define WHERE_ENV_CLUSTER "CUTD_CLUSTER"
#define WHERE_ENV_RUN_DIR "CUTD_RUN_DIR"
#define WHERE_RUN_DIR     "/run/cutd"
#define WHERE_CLUSTER     "/etc/cutd/cluster.ini"
/* Room for a node's name found in the run directory, with its NUL. */
#define WHERE_NAME_MAX 256

/* The value of environment variable name, or NULL when unset or "". */
const char *where_env(const char *name);

/* $CUTD_RUN_DIR, or /run/cutd. */
const char *where_run_dir(void);

/* 1 if url is ipc://PATH and PATH is a socket. */
int where_ipc_exists(const char *url);

/*
 * Counts the control sockets (NODE.ctl) in dir; when there is exactly
 * one, copies its NODE into ret_node (size bytes).  Returns the count (0
 * also when dir cannot be read).
 */
size_t where_sole_node(const char *dir, char *ret_node, size_t size);

/*
 * The URLs cut_open(NULL, NULL, node) uses, each into a buffer of size
 * bytes.  The control URL: $CUTD_CONTROL; else RUN_DIR/NODE.ctl for node
 * (or $CUTD_NODE when node is NULL or ""); else the only control socket
 * in RUN_DIR.  The application link: $CUTD_APP; else the control URL
 * with .app for .ctl; else RUN_DIR/NODE.app.  Returns 0; CUT_EUNAVAIL
 * when nothing names a daemon (no variable, no node, not exactly one
 * socket in RUN_DIR); CUT_EINVAL when a URL does not fit or the
 * application link cannot be told from the control URL.
 */
int where_defaults(const char *node, char *app, char *control, size_t size);

#endif /* CUT_WHERE_H */
