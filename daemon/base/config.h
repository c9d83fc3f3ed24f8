/*
 * config.h - the cluster file: one INI file that every node of a cluster
 * shares, parsed with inih, with defaults filled in and fully validated.
 *
 * A loaded struct config is always valid: every node has a name and all
 * four endpoints, every channel joins two distinct declared nodes, and the
 * channel graph is strongly connected.  Library code: it never logs or
 * exits; problems come back as "FILE:LINE: message" text.
 *
 * The format, in short (config_schema.c holds every key, with its type,
 * range, default and what SIGHUP does with it; "cutd
 * --print-config-reference" prints them, and README.md and cutd(8) carry
 * that text):
 *
 *   [cluster]                   ; once: name (required) and settings
 *   name = demo
 *   [node p0]                   ; one section per node;
 *                               ; name: [A-Za-z0-9_.-]{1,32}
 *   peer = tcp://127.0.0.1:7100 ; required; app, control, database
 *                               ; default from run_dir and state_dir
 *   [channels]                  ; optional; absent = every ordered pair of
 *                               ; distinct nodes
 *   channel = p0 -> p1          ; repeatable, one directed channel per line
 *   [schedule], [retention]     ; optional, once each
 *   [condition NAME]            ; optional, up to 16: sql or file
 *
 * Details:
 *
 * - Section and key names are case-sensitive.  Sections may come in any
 *   order; a channel may name a node declared further down.  [cluster] and
 *   [channels] appear at most once, each node once, each key once per
 *   section.
 * - Comments start with ';' or '#' at the beginning of a line, or with ';'
 *   after a space inside a line.  Leading spaces are ignored, so keys may
 *   be indented; a value cannot continue over several lines.  Lines are at
 *   most 198 characters, the file at most 1 MiB.
 * - Endpoints are
 *   tcp://HOST:PORT or tls+tcp://HOST:PORT (IPv6 hosts in brackets); app
 *   and control may also be ipc:///ABSOLUTE/PATH, at most 107 bytes of
 *   path (the limit of a Unix socket); http is http://HOST:PORT, no path.
 *   No endpoint may be used twice in the file, compared as written.
 * - socket_group and admin_group must name groups that exist on the host
 *   that loads the file (getgrnam), else the file is refused.
 * - tls+tcp:// peers need tls_ca and every node's tls_cert and tls_key;
 *   tcp:// and tls+tcp:// peers mix only with allow_mixed_transports.
 * - At most 256 nodes.  A single node needs no channels.  With [channels],
 *   the declared graph must be strongly connected: every node reachable from
 *   the first node declared, and able to reach it.
 *
 * Errors name the line they are about.  A value a key does not take is
 * reported with its section, its key, what it must be (the schema's range
 * or form) and what to do: "c.ini:3: [cluster] deadline_ms must be a whole
 * number from 100 to 3600000 (milliseconds), not '99'; use a value in that
 * range, or remove the line for the default (10000)".  Problems found only
 * once the whole
 * file is read point at the section concerned (a node without a peer: its
 * [node] line; a graph that is not strongly connected: the [channels] line)
 * or, when there is no such section (no [cluster], no nodes), at the file's
 * last line.  At most 20 errors are reported, sorted by line.
 */
#ifndef CUT_CONFIG_H
#define CUT_CONFIG_H

#include "cuterr.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Calls that can fail return 0 or an E_* code (cuterr.h). */

#define CONFIG_NAME_MAX    32 /* longest node name */
#define CONFIG_CLUSTER_MAX 64 /* longest cluster name */
#define CONFIG_MAX_NODES   256
#define CONFIG_MAX_ERRORS  20
#define CONFIG_MAX_CONDITIONS 16
#define CONFIG_CONDITION_MAX  (60 * 1024) /* longest condition, bytes */

/* A [condition NAME] section: a query the daemon judges on every complete
 * snapshot it initiated (README, Conditions).  sql is the text, given
 * inline (sql = ...) or read from file at load (file = ..., relative to
 * the cluster file's directory).  Whether it prepares is the daemon's to
 * say: the base layer knows no SQL. */
struct config_condition {
	char *name;
	char *sql;
	char *file; /* as given, or NULL */
	int line;   /* of its header */
};

struct config_node {
	char *name;
	char *peer;     /* nng URL the node listens on for its peers */
	char *app;      /* nng URL of the application link */
	char *control;  /* nng URL of the control service */
	char *http;     /* http://HOST:PORT of metrics and the HTTP API, or
	                   NULL: off */
	char *database; /* path of the node's SQLite database */
	char *tls_cert; /* PEM certificate for TLS peers, or NULL */
	char *tls_key;  /* its PEM private key, or NULL */
};

/* A directed channel src -> dst, as indices into config.nodes. */
struct config_channel {
	size_t src, dst;
	int line; /* its line in the file; 0 for the default channels */
};

struct config {
	char *path;    /* the file it was loaded from */
	char *cluster; /* the cluster name */
	unsigned deadline_ms;
	size_t max_message;
	size_t window;       /* per channel, bytes */
	size_t app_window;   /* daemon to application, bytes */
	size_t message_cost; /* counted per message against a window */
	int aligned;         /* 1: cut = aligned */
	/* Local permissions: groups by name and gid (-1: not set). */
	char *socket_group, *admin_group;
	long socket_gid, admin_gid;
	int tcp_control_full; /* 1: tcp_control = full */
	/* Limits on Start calls. */
	unsigned max_inflight;            /* max_snapshots_in_flight */
	unsigned start_rate, start_burst; /* per second; bucket size */
	char *run_dir, *state_dir;
	char *tls_ca;    /* PEM CA certificate of TLS peers, or NULL */
	int allow_mixed; /* 1: tcp:// and tls+tcp:// peers may mix */
	struct config_node *nodes; /* in the order of the file */
	size_t nnodes;
	struct config_channel *chans; /* in the order of the file */
	size_t nchans;
	int chans_declared; /* 1 if the file has [channels]; else every pair */
	struct config_condition *conds; /* in the order of the file */
	size_t nconds;
	/* [schedule]: a snapshot every sched_interval_ms (0: no schedule),
	 * started by node sched_initiator, or by each node in turn
	 * (SCHED_ROTATE), with timeout sched_timeout_ms (0: deadline_ms). */
	unsigned sched_interval_ms;
	long sched_initiator;
	unsigned sched_timeout_ms;
	/* [retention], applied by each initiator to its own snapshots: the
	 * newest keep_last complete ones (0: no count rule) and those that
	 * ended within keep_for_ms (0: no age rule) stay, aborted ones for
	 * keep_aborted_ms; retention is off when neither rule is set. */
	unsigned keep_last;
	uint64_t keep_for_ms, keep_aborted_ms;
};

#define SCHED_ROTATE (-1L)

/*
 * Reads and validates the cluster file at path.  On success, stores a new
 * configuration in *ret_cfg, which the caller owns and frees with
 * config_free(), and leaves *ret_errors alone.  On failure, returns
 * E_CONFIG, E_IO or E_NOMEM, leaves *ret_cfg alone and,
 * if ret_errors is not NULL, stores in *ret_errors a malloc'd text, one
 * problem per line ("FILE:LINE: message\n", or "FILE: message\n" when no
 * line applies), which the caller frees; it is NULL if even that text could
 * not be allocated.
 */
int config_load(const char *path, struct config **ret_cfg, char **ret_errors);

/* Frees cfg and everything it owns.  Accepts NULL. */
void config_free(struct config *cfg);

/* Returns 1 if url is a tls+tcp:// endpoint, else 0. */
int config_is_tls(const char *url);

/* Returns the index of the node called name, or -1 if there is none. */
int config_node_index(const struct config *cfg, const char *name);

/*
 * Writes a human summary of cfg to out, for "cutd --check-config": every
 * key of [cluster] with its value (the default when the file does not set
 * it), those of [schedule] and [retention] when they are in effect, each
 * node with its endpoints, the channels and whether the graph is strongly
 * connected.  Keys come in the schema's order.  Returns 0, or E_IO if
 * writing failed.
 */
int config_print(const struct config *cfg, FILE *out);

/*
 * Returns 1 if a and b describe the same running cluster: the same nodes
 * in the same order with the same keys (endpoints, database, TLS files),
 * the same channels in the same order, and the same cluster keys the
 * schema marks KF_TOPOLOGY (name, tls_ca, allow_mixed_transports).
 * Returns 0 otherwise.  The deadline and max_message may differ.
 */
int config_same_topology(const struct config *a, const struct config *b);

/* Told one change, as "[cluster] max_message changed from 1048576 to
 * 4096" (the text is borrowed for the call). */
typedef void config_note_fn(void *arg, const char *text);

/*
 * For SIGHUP: calls fn(arg, text) for each change from cur to next that
 * the schema says refuses a reload (a key whose reload is CR_REFUSE; the
 * nodes' names, number or order; the channels), and returns how many
 * there were: 0 means next may be applied.
 */
int config_reload_refusals(const struct config *cur, const struct config *next,
                           config_note_fn *fn, void *arg);

/*
 * For SIGHUP, after config_reload_refusals() found none: each changed key
 * the schema says takes effect (CR_APPLY) gets next's value in cur, told
 * to applied(); each changed key kept until a restart (CR_RESTART) stays,
 * told to kept().  next keeps what cur gave up, for config_free().
 */
void config_reload_apply(struct config *cur, struct config *next,
                         config_note_fn *applied, config_note_fn *kept,
                         void *arg);


#endif /* CUT_CONFIG_H */
