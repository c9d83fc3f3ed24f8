/*
 * config.h - the cluster file: one INI file that every node of a cluster
 * shares, parsed with inih, with defaults filled in and fully validated.
 *
 * A loaded struct config is always valid: every node has a name and all
 * four endpoints, every channel joins two distinct declared nodes, and the
 * channel graph is strongly connected.  Library code: it never logs or
 * exits; problems come back as "FILE:LINE: message" text.
 *
 * The format:
 *
 *   [cluster]
 *   name = demo                 ; required, printable, no spaces
 *   deadline_ms = 10000         ; optional snapshot deadline, default 10000,
 *                               ; 100..3600000
 *   run_dir = /run/cutd         ; optional, default /run/cutd: default app
 *                               ; and control sockets live here
 *   state_dir = /var/lib/cutd   ; optional, default /var/lib/cutd: default
 *                               ; databases live here
 *   max_message = 1048576       ; optional, largest application payload in
 *                               ; bytes, default 1 MiB, 1..64 MiB
 *   window = 1048576            ; optional, flow-control window of each
 *                               ; channel: payload bytes sent and not yet
 *                               ; taken by the receiving application,
 *                               ; default 1 MiB, 64 KiB..1 GiB
 *   app_window = 1048576        ; optional, payload bytes a daemon hands
 *                               ; to its application ahead of what it
 *                               ; took, default 1 MiB, 64 KiB..1 GiB
 *   message_cost = 1024         ; optional, what each message counts
 *                               ; against a window besides its payload,
 *                               ; so that a window also bounds how many
 *                               ; small messages are in flight, default
 *                               ; 1024, 0..64 KiB
 *   cut = unaligned             ; optional, unaligned (default: a state
 *                               ; request overtakes queued deliveries) or
 *                               ; aligned (it waits behind them)
 *   socket_group = cutd         ; optional, the group of the app and
 *                               ; control IPC sockets (mode 0660); default
 *                               ; the daemon's own group
 *   admin_group = cutd-admin    ; optional, a group whose members may
 *                               ; call mutating control methods (Start,
 *                               ; Delete) besides the daemon's user and
 *                               ; root; default none
 *   tcp_control = read-only     ; optional, read-only (default: a TCP
 *                               ; control endpoint, whose callers cannot
 *                               ; be identified, refuses mutating calls)
 *                               ; or full
 *   max_snapshots_in_flight = 16 ; optional, snapshots this node may have
 *                               ; initiated and not finished, 1..4096
 *   start_rate = 10             ; optional, Start calls per second, on
 *   start_burst = 20            ; average and at once (a token bucket),
 *                               ; 1..100000 each
 *   tls_ca = /etc/cutd/ca.pem   ; the CA certificate (PEM) that every TLS
 *                               ; peer's certificate must chain to;
 *                               ; required when a peer is tls+tcp://
 *   allow_mixed_transports = false ; optional: true lets tcp:// and
 *                               ; tls+tcp:// peers share a cluster
 *
 *   [node p0]                   ; one section per node;
 *                               ; name: [A-Za-z0-9_.-]{1,32}
 *   peer = tcp://127.0.0.1:7100 ; required, nng URL (tcp:// or tls+tcp://)
 *   app = ipc:///run/cutd/p0.app      ; optional,
 *                                     ; default ipc://<run_dir>/<node>.app
 *   control = ipc:///run/cutd/p0.ctl  ; optional,
 *                                     ; default ipc://<run_dir>/<node>.ctl
 *   http = http://127.0.0.1:9100      ; optional, default none (off):
 *                                     ; metrics, the read-only HTTP
 *                                     ; API and the web view
 *   database = /var/lib/cutd/p0.db    ; optional,
 *                                     ; default <state_dir>/<node>.db
 *   tls_cert = /etc/cutd/p0.pem       ; the node's certificate (PEM, CN or
 *                                     ; SAN DNS = the node's name) and
 *   tls_key = /etc/cutd/p0.key        ; its key: required for every node
 *                                     ; when a peer is tls+tcp://; cutd
 *                                     ; reads only its own node's key and
 *                                     ; refuses one group or others may
 *                                     ; read (not checked here)
 *
 *   [channels]                  ; optional; absent = every ordered pair of
 *                               ; distinct nodes
 *   channel = p0 -> p1          ; repeatable, one directed channel per line
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
 * - The cluster name is 1 to 64 printable ASCII characters without spaces.
 * - run_dir, state_dir, database, tls_ca, tls_cert and tls_key are absolute
 *   paths.  Endpoints are
 *   tcp://HOST:PORT or tls+tcp://HOST:PORT (IPv6 hosts in brackets); app
 *   and control may also be ipc:///ABSOLUTE/PATH, at most 107 bytes of
 *   path (the limit of a Unix socket); http is http://HOST:PORT, no path.
 *   No endpoint may be used twice in the file, compared as written.
 * - socket_group and admin_group must name groups that exist on the host
 *   that loads the file (getgrnam), else the file is refused.
 * - At most 256 nodes.  A single node needs no channels.  With [channels],
 *   the declared graph must be strongly connected: every node reachable from
 *   the first node declared, and able to reach it.
 *
 * Errors name the line they are about.  Problems found only once the whole
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
 * Writes a human summary of cfg to out, for "cutd --check-config": the
 * cluster settings, each node with its endpoints, the channels and whether
 * the graph is strongly connected.  Returns 0, or E_IO if writing
 * failed.
 */
int config_print(const struct config *cfg, FILE *out);

/*
 * Returns 1 if a and b describe the same running cluster: same cluster
 * name, same nodes in the same order with the same endpoints and database
 * paths, and the same channels in the same order.  Returns 0 otherwise.
 * The deadline and max_message may differ.  (For SIGHUP: a reload is
 * accepted only if this holds.)
 */
int config_same_topology(const struct config *a, const struct config *b);


#endif /* CUT_CONFIG_H */
