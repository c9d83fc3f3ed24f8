/*
 * config.c - the cluster file's meaning: sections, keys, defaults, and the
 * checks that need the whole file (endpoints, channels, connectivity).
 *
 * config_ini.c reads the file and calls us back for each section header
 * and key, with its line.  Problems are collected, never fatal, so that
 * one run reports everything (up to CONFIG_MAX_ERRORS), sorted by line.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_ini.h"

#define IPC_PATH_MAX 107 /* sizeof(sun_path) - 1 */
#define VALUE_MAX    256 /* longer than any line config_ini.c passes on */

enum sect {
	S_NONE,
	S_CLUSTER,
	S_NODE,
	S_CHANNELS,
	S_SCHEDULE,
	S_RETENTION,
	S_CONDITION,
	S_IGNORE
};
enum { SK_INTERVAL, SK_INITIATOR, SK_TIMEOUT, SK_N };
enum { RK_LAST, RK_FOR, RK_ABORTED, RK_N };
static const char *const schedule_keys[SK_N] = {"interval", "initiator",
                                                "timeout"};
static const char *const retention_keys[RK_N] = {"keep_last", "keep_for",
                                                 "keep_aborted"};
enum {
	CK_NAME,
	CK_DEADLINE,
	CK_MAXMSG,
	CK_RUNDIR,
	CK_STATEDIR,
	CK_WINDOW,
	CK_APPWINDOW,
	CK_CUT,
	CK_MSGCOST,
	CK_SOCKGROUP,
	CK_ADMINGROUP,
	CK_TCPCONTROL,
	CK_INFLIGHT,
	CK_RATE,
	CK_BURST,
	CK_TLSCA,
	CK_MIXED,
	CK_N
};
enum {
	NK_PEER,
	NK_APP,
	NK_CONTROL,
	NK_HTTP,
	NK_DATABASE,
	NK_CERT,
	NK_KEY,
	NK_N
};
#define N_ENDPOINTS NK_DATABASE /* the node keys before it are endpoints */
enum { V_OK, V_BAD, V_LONG };

static const char *const cluster_keys[CK_N] = {"name",
                                               "deadline_ms",
                                               "max_message",
                                               "run_dir",
                                               "state_dir",
                                               "window",
                                               "app_window",
                                               "cut",
                                               "message_cost",
                                               "socket_group",
                                               "admin_group",
                                               "tcp_control",
                                               "max_snapshots_in_flight",
                                               "start_rate",
                                               "start_burst",
                                               "tls_ca",
                                               "allow_mixed_transports"};
static const char *const node_keys[NK_N] = {
    "peer", "app", "control", "http", "database", "tls_cert", "tls_key"};
static const size_t node_offsets[NK_N] = {
    offsetof(struct config_node, peer),
    offsetof(struct config_node, app),
    offsetof(struct config_node, control),
    offsetof(struct config_node, http),
    offsetof(struct config_node, database),
    offsetof(struct config_node, tls_cert),
    offsetof(struct config_node, tls_key)};
#define ENDPOINT "tcp://HOST:PORT or tls+tcp://HOST:PORT"
static const char *const node_forms[NK_N] = {
    ENDPOINT,           "ipc:///PATH, " ENDPOINT, "ipc:///PATH, " ENDPOINT,
    "http://HOST:PORT", "an absolute path",       "an absolute path",
    "an absolute path"};

struct nodeinfo {
	int line;          /* of its [node] header */
	int keyline[NK_N]; /* of each key, 0 if absent */
};

struct rawchan {
	char *src, *dst;
	int line;
};

struct parser {
	struct config_ini_errors errs;
	enum sect sect;
	size_t node; /* in S_NODE, the current node */
	int cluster_line, channels_line;
	int ckeyline[CK_N];
	int schedule_line, retention_line;
	int skeyline[SK_N], rkeyline[RK_N];
	char *sched_initiator; /* resolved once the nodes are known */
	struct nodeinfo *ninfo;
	struct rawchan *raw;
	size_t nraw, rawcap;
	int condline[CONFIG_MAX_CONDITIONS][2]; /* lines of sql, file */
	struct config *cfg;
};

#define report(p, ...) config_ini_report(&(p)->errs, __VA_ARGS__)

/* Stores a copy of value in *field, replacing what was there. */
static void
set_str(struct parser *p, char **field, const char *value)
{
	char *s = strdup(value);

	if (s == NULL) {
		p->errs.oom = 1;
		return;
	}
	free(*field);
	*field = s;
}

static int
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int
is_node_name(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
	                     "vwxyz0123456789_.-");

	return n > 0 && n <= CONFIG_NAME_MAX && s[n] == '\0';
}

/* HOST:PORT, HOST a name or address, or an IPv6 address in brackets. */
static int
check_hostport(const char *s)
{
	const char *colon = strrchr(s, ':');
	unsigned long port;

	if (colon == NULL || colon == s || strchr(s, '/') != NULL)
		return V_BAD;
	if (s[0] == '[' ? colon[-1] != ']'
	                : memchr(s, ':', (size_t)(colon - s)) != NULL)
		return V_BAD;
	return config_ini_uint(colon + 1, 1, 65535, &port) ? V_BAD : V_OK;
}

static int
check_endpoint(const char *url, int ipc_ok)
{
	if (!config_ini_word(url))
		return V_BAD;
	if (starts_with(url, "tcp://"))
		return check_hostport(url + strlen("tcp://"));
	if (starts_with(url, "tls+tcp://"))
		return check_hostport(url + strlen("tls+tcp://"));
	if (!ipc_ok || !starts_with(url, "ipc:///") || url[7] == '\0')
		return V_BAD;
	return strlen(url + 6) > IPC_PATH_MAX ? V_LONG : V_OK;
}

static int
check_node_value(int key, const char *value)
{
	switch (key) {
	case NK_PEER:
		return check_endpoint(value, 0);
	case NK_APP:
	case NK_CONTROL:
		return check_endpoint(value, 1);
	case NK_HTTP:
		/* No path: the listener serves its own (/metrics, /v1/...). */
		if (!config_ini_word(value) || !starts_with(value, "http://"))
			return V_BAD;
		return check_hostport(value + strlen("http://"));
	default:
		return value[0] == '/' ? V_OK : V_BAD;
	}
}

static char **
node_field(const struct config_node *n, int key)
{
	return (char **)((const char *)n + node_offsets[key]);
}

static void
begin_once(struct parser *p, enum sect sect, int *first, const char *what,
           int line)
{
	if (*first != 0) {
		report(p, line, "duplicate %s section (first at line %d)", what,
		       *first);
		p->sect = S_IGNORE;
		return;
	}
	*first = line;
	p->sect = sect;
}

static void
begin_node(struct parser *p, const char *name, int line)
{
	struct config *cfg = p->cfg;
	int i;

	p->sect = S_IGNORE;
	if (*name == '\0') {
		report(p, line, "a node section needs a name, as in [node p0]");
	} else if (!is_node_name(name)) {
		report(p, line,
		       "invalid node name '%s': use 1 to %d characters from "
		       "A-Z a-z 0-9 _ . -",
		       name, CONFIG_NAME_MAX);
	} else if ((i = config_node_index(cfg, name)) >= 0) {
		report(p, line, "duplicate node %s (first at line %d)", name,
		       p->ninfo[i].line);
	} else if (cfg->nnodes == CONFIG_MAX_NODES) {
		report(p, line, "too many nodes: at most %d are allowed",
		       CONFIG_MAX_NODES);
	} else if ((cfg->nodes[cfg->nnodes].name = strdup(name)) == NULL) {
		p->errs.oom = 1;
	} else {
		p->ninfo[cfg->nnodes].line = line;
		p->node = cfg->nnodes++;
		p->sect = S_NODE;
	}
}

/* Returns the key's index, or -1 after reporting an unknown or repeated
 * key. */
static int
claim_key(struct parser *p, const char *const *keys, int nkeys, int *lines,
          const char *name, const char *where, int line)
{
	int k;

	for (k = 0; k < nkeys; k++)
		if (strcmp(keys[k], name) == 0)
			break;
	if (k == nkeys) {
		report(p, line, "unknown key '%s' in %s", name, where);
		return -1;
	}
	if (lines[k] != 0) {
		report(p, line, "duplicate key '%s' in %s (first at line %d)",
		       name, where, lines[k]);
		return -1;
	}
	lines[k] = line;
	return k;
}

static int
number_key(struct parser *p, const char *name, const char *value,
           unsigned long lo, unsigned long hi, unsigned long *ret, int line)
{
	if (config_ini_uint(value, lo, hi, ret) == 0)
		return 0;
	report(p, line, "%s must be a whole number from %lu to %lu, not '%s'",
	       name, lo, hi, value);
	return -1;
}

static void
dir_key(struct parser *p, char **field, const char *name, const char *value,
        int line)
{
	char *s;
	size_t n;

	if (value[0] != '/') {
		report(p, line, "%s must be an absolute path, not '%s'", name,
		       value);
		return;
	}
	if ((s = strdup(value)) == NULL) {
		p->errs.oom = 1;
		return;
	}
	for (n = strlen(s); n > 1 && s[n - 1] == '/';)
		s[--n] = '\0';
	free(*field);
	*field = s;
}

/* A group named in the file must exist on this host: the daemon gives
 * its sockets to it, or lets its members change state, and a typo must not
 * silently leave the sockets with the daemon's group or nobody as admin. */
static void
group_key(struct parser *p, char **field, long *ret_gid, const char *name,
          const char *value, int line)
{
	struct group gr, *found = NULL;
	char buf[4096];

	if (!config_ini_word(value)) {
		report(p, line, "%s must be a group name, not '%s'", name,
		       value);
		return;
	}
	if (getgrnam_r(value, &gr, buf, sizeof(buf), &found) != 0 ||
	    found == NULL) {
		report(p, line,
		       "%s: no group '%s' on this host; create it (groupadd) "
		       "or remove the key",
		       name, value);
		return;
	}
	set_str(p, field, value);
	*ret_gid = (long)found->gr_gid;
}

static void
cluster_key(struct parser *p, const char *name, const char *value, int line)
{
	struct config *cfg = p->cfg;
	unsigned long v = 0;

	switch (claim_key(p, cluster_keys, CK_N, p->ckeyline, name, "[cluster]",
	                  line)) {
	case CK_NAME:
		if (config_ini_word(value) &&
		    strlen(value) <= CONFIG_CLUSTER_MAX)
			set_str(p, &cfg->cluster, value);
		else
			report(p, line,
			       "name must be 1 to %d printable characters "
			       "without spaces, not '%s'",
			       CONFIG_CLUSTER_MAX, value);
		break;
	case CK_DEADLINE:
		if (number_key(p, name, value, 100, 3600000, &v, line) == 0)
			cfg->deadline_ms = (unsigned)v;
		break;
	case CK_MAXMSG:
		if (number_key(p, name, value, 1, 64ul << 20, &v, line) == 0)
			cfg->max_message = v;
		break;
	case CK_RUNDIR:
		dir_key(p, &cfg->run_dir, name, value, line);
		break;
	case CK_STATEDIR:
		dir_key(p, &cfg->state_dir, name, value, line);
		break;
	case CK_WINDOW:
		if (number_key(p, name, value, 64ul << 10, 1ul << 30, &v,
		               line) == 0)
			cfg->window = v;
		break;
	case CK_APPWINDOW:
		if (number_key(p, name, value, 64ul << 10, 1ul << 30, &v,
		               line) == 0)
			cfg->app_window = v;
		break;
	case CK_MSGCOST:
		if (number_key(p, name, value, 0, 64ul << 10, &v, line) == 0)
			cfg->message_cost = v;
		break;
	case CK_SOCKGROUP:
		group_key(p, &cfg->socket_group, &cfg->socket_gid, name, value,
		          line);
		break;
	case CK_ADMINGROUP:
		group_key(p, &cfg->admin_group, &cfg->admin_gid, name, value,
		          line);
		break;
	case CK_TCPCONTROL:
		if (strcmp(value, "read-only") == 0)
			cfg->tcp_control_full = 0;
		else if (strcmp(value, "full") == 0)
			cfg->tcp_control_full = 1;
		else
			report(p, line,
			       "tcp_control must be read-only or full, not "
			       "'%s'",
			       value);
		break;
	case CK_INFLIGHT:
		if (number_key(p, name, value, 1, 4096, &v, line) == 0)
			cfg->max_inflight = (unsigned)v;
		break;
	case CK_RATE:
		if (number_key(p, name, value, 1, 100000, &v, line) == 0)
			cfg->start_rate = (unsigned)v;
		break;
	case CK_BURST:
		if (number_key(p, name, value, 1, 100000, &v, line) == 0)
			cfg->start_burst = (unsigned)v;
		break;
	case CK_TLSCA:
		dir_key(p, &cfg->tls_ca, name, value, line);
		break;
	case CK_MIXED:
		if (strcmp(value, "true") == 0)
			cfg->allow_mixed = 1;
		else if (strcmp(value, "false") == 0)
			cfg->allow_mixed = 0;
		else
			report(p, line,
			       "allow_mixed_transports must be true or false, "
			       "not '%s'",
			       value);
		break;
	case CK_CUT:
		if (strcmp(value, "unaligned") == 0)
			cfg->aligned = 0;
		else if (strcmp(value, "aligned") == 0)
			cfg->aligned = 1;
		else
			report(p, line,
			       "cut must be unaligned or aligned, not '%s'",
			       value);
		break;
	}
}

static void
node_key(struct parser *p, const char *name, const char *value, int line)
{
	struct config_node *n = &p->cfg->nodes[p->node];
	char where[CONFIG_NAME_MAX + 16];
	int k, v;

	snprintf(where, sizeof(where), "[node %s]", n->name);
	k = claim_key(p, node_keys, NK_N, p->ninfo[p->node].keyline, name,
	              where, line);
	if (k < 0)
		return;
	if ((v = check_node_value(k, value)) == V_OK)
		set_str(p, node_field(n, k), value);
	else if (v == V_LONG)
		report(p, line,
		       "%s path is longer than %d bytes, the limit for a Unix "
		       "socket: '%s'",
		       name, IPC_PATH_MAX, value);
	else
		report(p, line, "%s must be %s, not '%s'", name, node_forms[k],
		       value);
}

static void
channel_key(struct parser *p, const char *name, const char *value, int line)
{
	char buf[VALUE_MAX], *arrow, *src, *dst;
	struct rawchan *r;

	if (strcmp(name, "channel") != 0) {
		report(p, line, "unknown key '%s' in [channels]", name);
		return;
	}
	snprintf(buf, sizeof(buf), "%s", value);
	if ((arrow = strstr(buf, "->")) != NULL)
		*arrow = '\0';
	src = config_ini_trim(buf);
	dst = arrow ? config_ini_trim(arrow + 2) : src;
	if (arrow == NULL || *src == '\0' || *dst == '\0' ||
	    strstr(dst, "->") != NULL) {
		report(p, line, "malformed channel '%s': expected 'SRC -> DST'",
		       value);
		return;
	}
	if (p->nraw == p->rawcap) {
		size_t cap = p->rawcap ? 2 * p->rawcap : 16;
		void *a = realloc(p->raw, cap * sizeof(*p->raw));

		if (a == NULL) {
			p->errs.oom = 1;
			return;
		}
		p->raw = a;
		p->rawcap = cap;
	}
	r = &p->raw[p->nraw++];
	r->line = line;
	r->src = strdup(src);
	r->dst = strdup(dst);
	p->errs.oom |= r->src == NULL || r->dst == NULL;
}

static void
begin_condition(struct parser *p, const char *name, int line)
{
	struct config *cfg = p->cfg;
	struct config_condition *c;

	p->sect = S_IGNORE;
	if (!is_node_name(name)) {
		report(p, line,
		       "a condition section needs a name of 1 to %d characters "
		       "from A-Z a-z 0-9 _ . -, as in [condition terminated]",
		       CONFIG_NAME_MAX);
		return;
	}
	for (size_t i = 0; i < cfg->nconds; i++)
		if (strcmp(cfg->conds[i].name, name) == 0) {
			report(p, line,
			       "duplicate condition %s (first at line %d)",
			       name, cfg->conds[i].line);
			return;
		}
	if (cfg->nconds == CONFIG_MAX_CONDITIONS) {
		report(p, line, "too many conditions: at most %d are allowed",
		       CONFIG_MAX_CONDITIONS);
		return;
	}
	c = &cfg->conds[cfg->nconds];
	if ((c->name = strdup(name)) == NULL) {
		p->errs.oom = 1;
		return;
	}
	c->line = line;
	cfg->nconds++;
	p->sect = S_CONDITION;
}

static void
condition_key(struct parser *p, const char *name, const char *value,
              int line)
{
	static const char *const keys[] = {"sql", "file"};
	struct config_condition *c = &p->cfg->conds[p->cfg->nconds - 1];
	int k = claim_key(p, keys, 2, p->condline[p->cfg->nconds - 1], name,
	                  "[condition]", line);

	if (k < 0)
		return;
	if (*value == '\0') {
		report(p, line, "%s needs a value", name);
		return;
	}
	set_str(p, k == 0 ? &c->sql : &c->file, value);
}

/* Reads condition c's file, relative to the cluster file's directory. */
static void
read_condition(struct parser *p, struct config_condition *c, int line)
{
	const char *path = p->cfg->path, *slash = strrchr(path, '/');
	char full[4096];
	FILE *f;
	size_t n;

	if (c->file[0] == '/' || slash == NULL)
		snprintf(full, sizeof(full), "%s", c->file);
	else
		snprintf(full, sizeof(full), "%.*s/%s",
		         (int)(slash - path), path, c->file);
	if ((f = fopen(full, "r")) == NULL) {
		report(p, line, "[condition %s] file %s: %s", c->name, full,
		       strerror(errno));
		return;
	}
	if ((c->sql = malloc(CONFIG_CONDITION_MAX + 1)) == NULL) {
		fclose(f);
		p->errs.oom = 1;
		return;
	}
	n = fread(c->sql, 1, CONFIG_CONDITION_MAX + 1, f);
	if (ferror(f))
		report(p, line, "[condition %s] file %s: cannot read it",
		       c->name, full);
	else if (n > CONFIG_CONDITION_MAX)
		report(p, line, "[condition %s] file %s is over %d bytes",
		       c->name, full, CONFIG_CONDITION_MAX);
	else if (memchr(c->sql, '\0', n) != NULL)
		report(p, line, "[condition %s] file %s holds a NUL byte",
		       c->name, full);
	c->sql[n <= CONFIG_CONDITION_MAX ? n : CONFIG_CONDITION_MAX] = '\0';
	fclose(f);
}

static void
finish_conditions(struct parser *p)
{
	for (size_t i = 0; i < p->cfg->nconds; i++) {
		struct config_condition *c = &p->cfg->conds[i];
		int *lines = p->condline[i];

		if ((lines[0] != 0) == (lines[1] != 0))
			report(p, lines[0] ? lines[1] : c->line,
			       "[condition %s] needs one of 'sql' and 'file'",
			       c->name);
		else if (lines[1] != 0 && c->file != NULL)
			read_condition(p, c, lines[1]);
	}
}

/*
 * Parses a duration: a whole number and a unit, ms, s, m, h or d, as in
 * 500ms, 10s, 5m.  A unit is required, so that nobody reads 10 as
 * seconds.  Returns 0 with milliseconds in *ret, or -1.
 */
static int
duration(const char *s, uint64_t *ret)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {{"ms", 1},          {"s", 1000},        {"m", 60000},
	             {"h", 3600000},     {"d", 86400000}};
	uint64_t v = 0;
	size_t i = 0;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > UINT64_MAX / 100)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
		if (strcmp(s + i, units[u].unit) == 0) {
			if (v > UINT64_MAX / units[u].ms)
				return -1;
			*ret = v * units[u].ms;
			return 0;
		}
	return -1;
}

static int
duration_key(struct parser *p, const char *name, const char *value,
             uint64_t lo, uint64_t hi, uint64_t *ret, int line)
{
	uint64_t v;

	if (duration(value, &v) == 0 && v >= lo && v <= hi) {
		*ret = v;
		return 0;
	}
	report(p, line,
	       "%s must be a duration such as 500ms, 10s, 5m, 1h or 7d, from "
	       "%llums to %llums, not '%s'",
	       name, (unsigned long long)lo, (unsigned long long)hi, value);
	return -1;
}

static void
schedule_key(struct parser *p, const char *name, const char *value, int line)
{
	struct config *cfg = p->cfg;
	uint64_t v;

	switch (claim_key(p, schedule_keys, SK_N, p->skeyline, name,
	                  "[schedule]", line)) {
	case SK_INTERVAL:
		/* 100 ms: a turn of every daemon is a few ms; a day is a
		 * schedule's longest useful tick. */
		if (duration_key(p, name, value, 100, 86400000, &v, line) == 0)
			cfg->sched_interval_ms = (unsigned)v;
		break;
	case SK_INITIATOR:
		if (strcmp(value, "rotate") == 0 || is_node_name(value))
			set_str(p, &p->sched_initiator, value);
		else
			report(p, line,
			       "initiator must be a node name or 'rotate', not "
			       "'%s'",
			       value);
		break;
	case SK_TIMEOUT:
		if (duration_key(p, name, value, 100, 3600000, &v, line) == 0)
			cfg->sched_timeout_ms = (unsigned)v;
		break;
	}
}

static void
retention_key(struct parser *p, const char *name, const char *value, int line)
{
	struct config *cfg = p->cfg;
	unsigned long n;
	uint64_t v;

	switch (claim_key(p, retention_keys, RK_N, p->rkeyline, name,
	                  "[retention]", line)) {
	case RK_LAST:
		if (number_key(p, name, value, 1, 1000000, &n, line) == 0)
			cfg->keep_last = (unsigned)n;
		break;
	case RK_FOR:
		if (duration_key(p, name, value, 1000, 3650ull * 86400000, &v,
		                 line) == 0)
			cfg->keep_for_ms = v;
		break;
	case RK_ABORTED:
		if (duration_key(p, name, value, 0, 3650ull * 86400000, &v,
		                 line) == 0)
			cfg->keep_aborted_ms = v;
		break;
	}
}

/* The schedule's initiator names a node of the file, and the schedule
 * has an interval. */
static void
finish_schedule(struct parser *p)
{
	struct config *cfg = p->cfg;
	int k;

	if (p->schedule_line == 0)
		return;
	if (p->skeyline[SK_INTERVAL] == 0) {
		report(p, p->schedule_line, "[schedule] has no 'interval' key");
		return;
	}
	if (p->sched_initiator == NULL) {
		if (p->skeyline[SK_INITIATOR] == 0)
			report(p, p->schedule_line,
			       "[schedule] has no 'initiator' key (a node "
			       "name or 'rotate')");
		return;
	}
	if (strcmp(p->sched_initiator, "rotate") == 0)
		cfg->sched_initiator = SCHED_ROTATE;
	else if ((k = config_node_index(cfg, p->sched_initiator)) >= 0)
		cfg->sched_initiator = k;
	else
		report(p, p->skeyline[SK_INITIATOR],
		       "initiator '%s' is not a node of the file",
		       p->sched_initiator);
}

/* config_ini_handler.section: name is NULL for a broken header. */
static void
on_section(void *user, const char *name, int line)
{
	struct parser *p = user;

	if (name == NULL)
		p->sect = S_IGNORE; /* keys under it belong to no section */
	else if (strcmp(name, "cluster") == 0)
		begin_once(p, S_CLUSTER, &p->cluster_line, "[cluster]", line);
	else if (strcmp(name, "channels") == 0)
		begin_once(p, S_CHANNELS, &p->channels_line, "[channels]",
		           line);
	else if (strcmp(name, "schedule") == 0)
		begin_once(p, S_SCHEDULE, &p->schedule_line, "[schedule]",
		           line);
	else if (strcmp(name, "retention") == 0)
		begin_once(p, S_RETENTION, &p->retention_line, "[retention]",
		           line);
	else if (starts_with(name, "node") &&
	         (name[4] == '\0' || name[4] == ' ' || name[4] == '\t'))
		begin_node(p, name + 4 + strspn(name + 4, " \t"), line);
	else if (starts_with(name, "condition") &&
	         (name[9] == '\0' || name[9] == ' ' || name[9] == '\t'))
		begin_condition(p, name + 9 + strspn(name + 9, " \t"), line);
	else {
		report(p, line,
		       "unknown section [%s]; expected [cluster], [node NAME], "
		       "[channels], [schedule], [retention] or [condition NAME]",
		       name);
		p->sect = S_IGNORE;
	}
}

/* config_ini_handler.key */
static void
on_key(void *user, const char *name, const char *value, int line)
{
	struct parser *p = user;

	if (p->sect == S_CLUSTER)
		cluster_key(p, name, value, line);
	else if (p->sect == S_NODE)
		node_key(p, name, value, line);
	else if (p->sect == S_CHANNELS)
		channel_key(p, name, value, line);
	else if (p->sect == S_CONDITION)
		condition_key(p, name, value, line);
	else if (p->sect == S_SCHEDULE)
		schedule_key(p, name, value, line);
	else if (p->sect == S_RETENTION)
		retention_key(p, name, value, line);
	else if (p->sect == S_NONE)
		report(p, line,
		       "key '%s' is outside any section; put it under "
		       "[cluster], [node NAME], [channels], [schedule] or "
		       "[retention]",
		       name);
	/* In S_IGNORE, its header was reported. */
}

/* Fills in a default endpoint or database path of node i:
 * scheme dir/name.ext */
static void
default_value(struct parser *p, size_t i, int key, const char *scheme,
              const char *dir, const char *ext)
{
	struct config_node *n = &p->cfg->nodes[i];
	const char *sep = dir[strlen(dir) - 1] == '/' ? "" : "/";
	char buf[2 * VALUE_MAX], **field = node_field(n, key);

	if (p->ninfo[i].keyline[key] != 0)
		return; /* set, or reported as bad */
	snprintf(buf, sizeof(buf), "%s%s%s%s.%s", scheme, dir, sep, n->name,
	         ext);
	set_str(p, field, buf);
	if (*field != NULL && check_node_value(key, *field) == V_LONG)
		report(
		    p, p->ninfo[i].line,
		    "the default %s endpoint '%s' is longer than %d bytes, "
		    "the limit for a Unix socket; set %s or a shorter run_dir",
		    node_keys[key], *field, IPC_PATH_MAX, node_keys[key]);
}

static void
finish_nodes(struct parser *p, int eof)
{
	struct config *cfg = p->cfg;
	size_t i;

	if (cfg->nnodes == 0)
		report(p, eof,
		       "the file declares no nodes; add a [node NAME] "
		       "section");
	for (i = 0; i < cfg->nnodes; i++) {
		if (p->ninfo[i].keyline[NK_PEER] == 0)
			report(p, p->ninfo[i].line,
			       "[node %s] has no 'peer' key",
			       cfg->nodes[i].name);
		default_value(p, i, NK_APP, "ipc://", cfg->run_dir, "app");
		default_value(p, i, NK_CONTROL, "ipc://", cfg->run_dir, "ctl");
		default_value(p, i, NK_DATABASE, "", cfg->state_dir, "db");
	}
}

/* Reports each endpoint already used earlier in the file, by any node. */
static void
check_endpoints(struct parser *p)
{
	const struct config *cfg = p->cfg;
	size_t e, f, n = cfg->nnodes * N_ENDPOINTS;

	for (e = 0; e < n; e++) {
		struct config_node *a = &cfg->nodes[e / N_ENDPOINTS];
		const char *url = *node_field(a, (int)(e % N_ENDPOINTS));
		int line = p->ninfo[e / N_ENDPOINTS].keyline[e % N_ENDPOINTS];

		for (f = 0; url != NULL && f < e; f++) {
			struct config_node *b = &cfg->nodes[f / N_ENDPOINTS];
			const char *other =
			    *node_field(b, (int)(f % N_ENDPOINTS));

			if (other == NULL || strcmp(url, other) != 0)
				continue;
			report(p, line ? line : p->ninfo[e / N_ENDPOINTS].line,
			       "[node %s] %s endpoint %s is already the %s "
			       "endpoint of node %s",
			       a->name, node_keys[e % N_ENDPOINTS], url,
			       node_keys[f % N_ENDPOINTS], b->name);
			break;
		}
	}
}

/* Marks in seen[] the nodes that node 0 reaches (rev: that reach node 0). */
static void
reach(const struct config *cfg, int rev, unsigned char *seen)
{
	int changed = 1;
	size_t i;

	memset(seen, 0, cfg->nnodes);
	seen[0] = 1;
	while (changed) {
		changed = 0;
		for (i = 0; i < cfg->nchans; i++) {
			size_t a = rev ? cfg->chans[i].dst : cfg->chans[i].src;
			size_t b = rev ? cfg->chans[i].src : cfg->chans[i].dst;

			if (seen[a] && !seen[b])
				seen[b] = 1, changed = 1;
		}
	}
}

/* Returns a node cut off from node 0 (*ret_rev: it cannot reach node 0
 * rather than not be reached), or -1 if the graph is strongly connected. */
static long
cut_off_node(const struct config *cfg, int *ret_rev)
{
	unsigned char seen[CONFIG_MAX_NODES];
	size_t i;
	int rev;

	for (rev = 0; rev < 2 && cfg->nnodes > 0; rev++) {
		reach(cfg, rev, seen);
		for (i = 0; i < cfg->nnodes; i++) {
			if (!seen[i]) {
				*ret_rev = rev;
				return (long)i;
			}
		}
	}
	return -1;
}

static void
default_channels(struct parser *p)
{
	struct config *cfg = p->cfg;
	size_t i, j, n = cfg->nnodes;

	if (n < 2)
		return;
	if ((cfg->chans = calloc(n * (n - 1), sizeof(*cfg->chans))) == NULL) {
		p->errs.oom = 1;
		return;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			if (i == j)
				continue;
			cfg->chans[cfg->nchans].src = i;
			cfg->chans[cfg->nchans++].dst = j;
		}
	}
}

/* Adds raw channel r unless it is bad; returns 0 if it was added. */
static int
add_channel(struct parser *p, const struct rawchan *r, int *matrix)
{
	struct config *cfg = p->cfg;
	int s = config_node_index(cfg, r->src);
	int d = config_node_index(cfg, r->dst);
	int *first;

	if (s < 0 || d < 0) {
		report(p, r->line, "channel %s -> %s names unknown node %s",
		       r->src, r->dst, s < 0 ? r->src : r->dst);
		return -1;
	}
	if (s == d) {
		report(p, r->line,
		       "channel %s -> %s joins a node to itself; a channel "
		       "needs two different nodes",
		       r->src, r->dst);
		return -1;
	}
	first = &matrix[(size_t)s * cfg->nnodes + (size_t)d];
	if (*first != 0) {
		report(p, r->line,
		       "duplicate channel %s -> %s (first at line %d)", r->src,
		       r->dst, *first);
		return -1;
	}
	*first = r->line;
	cfg->chans[cfg->nchans].src = (size_t)s;
	cfg->chans[cfg->nchans].dst = (size_t)d;
	cfg->chans[cfg->nchans++].line = r->line;
	return 0;
}

static void
finish_channels(struct parser *p)
{
	struct config *cfg = p->cfg;
	size_t n = cfg->nnodes, i;
	int *matrix, bad = 0, rev;
	long cut;

	cfg->chans_declared = p->channels_line != 0;
	if (!cfg->chans_declared) {
		default_channels(p);
		return;
	}
	matrix = calloc(n * n + 1, sizeof(*matrix));
	cfg->chans = calloc(p->nraw + 1, sizeof(*cfg->chans));
	for (i = 0; matrix != NULL && cfg->chans != NULL && i < p->nraw; i++)
		bad |= add_channel(p, &p->raw[i], matrix) != 0;
	p->errs.oom |= matrix == NULL || cfg->chans == NULL;
	free(matrix);
	if (bad || p->errs.oom || (cut = cut_off_node(cfg, &rev)) < 0)
		return;
	report(p, p->channels_line,
	       rev ? "the channel graph is not strongly connected: node %s "
	             "cannot reach node %s"
	           : "the channel graph is not strongly connected: node %s "
	             "cannot be reached from node %s",
	       cfg->nodes[cut].name, cfg->nodes[0].name);
}

/* tls+tcp:// peers need the cluster's CA and every node's certificate
 * and key (every node dials every other, and a TLS listener requires a
 * client certificate); plaintext and TLS peers mix only when asked. */
static void
check_tls(struct parser *p, int eof)
{
	const struct config *cfg = p->cfg;
	long tls = -1, plain = -1;
	size_t i;

	for (i = 0; i < cfg->nnodes; i++) {
		if (cfg->nodes[i].peer == NULL)
			continue;
		if (config_is_tls(cfg->nodes[i].peer))
			tls = tls < 0 ? (long)i : tls;
		else
			plain = plain < 0 ? (long)i : plain;
	}
	if (tls < 0)
		return;
	if (plain >= 0 && !cfg->allow_mixed)
		report(p, p->ninfo[plain].keyline[NK_PEER],
		       "[node %s] peer %s is plaintext but node %s's is TLS; "
		       "mixing them needs [cluster] allow_mixed_transports = "
		       "true",
		       cfg->nodes[plain].name, cfg->nodes[plain].peer,
		       cfg->nodes[tls].name);
	if (p->ckeyline[CK_TLSCA] == 0)
		report(p, p->cluster_line ? p->cluster_line : eof,
		       "[cluster] has no 'tls_ca' key, which tls+tcp:// peers "
		       "need");
	for (i = 0; i < cfg->nnodes; i++) {
		for (int k = NK_CERT; k <= NK_KEY; k++)
			if (p->ninfo[i].keyline[k] == 0)
				report(p, p->ninfo[i].line,
				       "[node %s] has no '%s' key, which "
				       "tls+tcp:// peers need",
				       cfg->nodes[i].name, node_keys[k]);
	}
}

static void
finish(struct parser *p, int nlines)
{
	int eof = nlines > 0 ? nlines : 1;

	if (p->errs.oom)
		return;
	if (p->cluster_line == 0)
		report(p, eof, "the file has no [cluster] section");
	else if (p->ckeyline[CK_NAME] == 0)
		report(p, p->cluster_line, "[cluster] has no 'name' key");
	finish_nodes(p, eof);
	check_endpoints(p);
	check_tls(p, eof);
	finish_channels(p);
	finish_conditions(p);
	finish_schedule(p);
}

static int
parser_init(struct parser *p, const char *path)
{
	struct config *cfg;

	memset(p, 0, sizeof(*p));
	p->errs.path = path;
	if ((p->cfg = cfg = calloc(1, sizeof(*cfg))) == NULL)
		return p->errs.oom = 1, E_NOMEM;
	cfg->deadline_ms = 10000;
	cfg->max_message = 1024 * 1024;
	cfg->window = 1024 * 1024;
	cfg->app_window = 1024 * 1024;
	cfg->message_cost = 1024;
	cfg->socket_gid = cfg->admin_gid = -1;
	cfg->max_inflight = 16;
	cfg->start_rate = 10;
	cfg->start_burst = 20;
	cfg->sched_initiator = SCHED_ROTATE;
	cfg->keep_aborted_ms = 3600000;
	cfg->path = strdup(path);
	cfg->run_dir = strdup("/run/cutd");
	cfg->state_dir = strdup("/var/lib/cutd");
	cfg->nodes = calloc(CONFIG_MAX_NODES, sizeof(*cfg->nodes));
	cfg->conds = calloc(CONFIG_MAX_CONDITIONS, sizeof(*cfg->conds));
	p->ninfo = calloc(CONFIG_MAX_NODES, sizeof(*p->ninfo));
	p->errs.oom = !cfg->path || !cfg->run_dir || !cfg->state_dir ||
	              !cfg->nodes || !p->ninfo || !cfg->conds;
	return p->errs.oom ? E_NOMEM : 0;
}

static void
parser_fini(struct parser *p)
{
	size_t i;

	for (i = 0; i < p->nraw; i++) {
		free(p->raw[i].src);
		free(p->raw[i].dst);
	}
	free(p->raw);
	free(p->ninfo);
	free(p->sched_initiator);
	config_ini_errors_fini(&p->errs);
	config_free(p->cfg);
}

int
config_load(const char *path, struct config **ret_cfg, char **ret_errors)
{
	static const struct config_ini_handler h = {on_section, on_key};
	struct parser p;
	int rv, nlines = 0;

	if ((rv = parser_init(&p, path)) == 0 &&
	    (rv = config_ini_parse(&p.errs, &h, &p, &nlines)) == 0) {
		finish(&p, nlines);
		rv = p.errs.oom ? E_NOMEM : p.errs.n ? E_CONFIG : 0;
	}
	if (rv == 0) {
		*ret_cfg = p.cfg;
		p.cfg = NULL;
	} else if (ret_errors != NULL) {
		*ret_errors = config_ini_error_text(&p.errs);
	}
	parser_fini(&p);
	return rv;
}

void
config_free(struct config *cfg)
{
	size_t i;
	int k;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nnodes; i++) {
		free(cfg->nodes[i].name);
		for (k = 0; k < NK_N; k++)
			free(*node_field(&cfg->nodes[i], k));
	}
	free(cfg->nodes);
	for (i = 0; cfg->conds != NULL && i < cfg->nconds; i++) {
		free(cfg->conds[i].name);
		free(cfg->conds[i].sql);
		free(cfg->conds[i].file);
	}
	free(cfg->conds);
	free(cfg->chans);
	free(cfg->path);
	free(cfg->cluster);
	free(cfg->run_dir);
	free(cfg->state_dir);
	free(cfg->socket_group);
	free(cfg->admin_group);
	free(cfg->tls_ca);
	free(cfg);
}

int
config_is_tls(const char *url)
{
	return starts_with(url, "tls+tcp://");
}

int
config_node_index(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nnodes; i++)
		if (strcmp(cfg->nodes[i].name, name) == 0)
			return (int)i;
	return -1;
}

static const char *
plural(size_t n)
{
	return n == 1 ? "" : "s";
}

static void
print_nodes(const struct config *cfg, FILE *out)
{
	size_t i;

	fprintf(out, "%zu node%s:\n", cfg->nnodes, plural(cfg->nnodes));
	for (i = 0; i < cfg->nnodes; i++) {
		const struct config_node *n = &cfg->nodes[i];

		fprintf(out, "  %s\n", n->name);
		fprintf(out, "    peer     = %s\n", n->peer);
		fprintf(out, "    app      = %s\n", n->app);
		fprintf(out, "    control  = %s\n", n->control);
		if (n->http != NULL)
			fprintf(out, "    http     = %s\n", n->http);
		fprintf(out, "    database = %s\n", n->database);
		if (n->tls_cert != NULL)
			fprintf(out, "    tls_cert = %s\n", n->tls_cert);
		if (n->tls_key != NULL)
			fprintf(out, "    tls_key  = %s\n", n->tls_key);
	}
}

static void
print_channels(const struct config *cfg, FILE *out)
{
	size_t i;
	long cut;
	int rev = 0;

	fprintf(out, "%zu channel%s%s\n", cfg->nchans, plural(cfg->nchans),
	        cfg->chans_declared ? ":" : " (every ordered pair):");
	for (i = 0; i < cfg->nchans; i++)
		fprintf(out, "  %s -> %s\n", cfg->nodes[cfg->chans[i].src].name,
		        cfg->nodes[cfg->chans[i].dst].name);
	if ((cut = cut_off_node(cfg, &rev)) < 0)
		fprintf(out, "strongly connected: yes\n");
	else
		fprintf(out, "strongly connected: no (node %s %s node %s)\n",
		        cfg->nodes[cut].name,
		        rev ? "cannot reach" : "cannot be reached from",
		        cfg->nodes[0].name);
}

int
config_print(const struct config *cfg, FILE *out)
{
	fprintf(out, "cluster %s (%s)\n", cfg->cluster, cfg->path);
	fprintf(out, "  deadline_ms = %u\n", cfg->deadline_ms);
	fprintf(out, "  max_message = %zu\n", cfg->max_message);
	fprintf(out, "  window      = %zu\n", cfg->window);
	fprintf(out, "  app_window  = %zu\n", cfg->app_window);
	fprintf(out, "  message_cost = %zu\n", cfg->message_cost);
	fprintf(out, "  cut         = %s\n",
	        cfg->aligned ? "aligned" : "unaligned");
	fprintf(out, "  run_dir     = %s\n", cfg->run_dir);
	fprintf(out, "  state_dir   = %s\n", cfg->state_dir);
	if (cfg->socket_group != NULL)
		fprintf(out, "  socket_group = %s (gid %ld)\n",
		        cfg->socket_group, cfg->socket_gid);
	else
		fprintf(out, "  socket_group = (the daemon's group)\n");
	if (cfg->admin_group != NULL)
		fprintf(out, "  admin_group = %s (gid %ld)\n", cfg->admin_group,
		        cfg->admin_gid);
	else
		fprintf(out, "  admin_group = (none)\n");
	fprintf(out, "  tcp_control = %s\n",
	        cfg->tcp_control_full ? "full" : "read-only");
	fprintf(out, "  max_snapshots_in_flight = %u\n", cfg->max_inflight);
	fprintf(out, "  start_rate  = %u per second, burst %u\n",
	        cfg->start_rate, cfg->start_burst);
	if (cfg->tls_ca != NULL)
		fprintf(out, "  tls_ca      = %s\n", cfg->tls_ca);
	if (cfg->allow_mixed)
		fprintf(out, "  allow_mixed_transports = true\n");
	if (cfg->sched_interval_ms != 0)
		fprintf(out, "  schedule    = every %u ms by %s, timeout %u ms\n",
		        cfg->sched_interval_ms,
		        cfg->sched_initiator == SCHED_ROTATE
		            ? "each node in turn (rotate)"
		            : cfg->nodes[cfg->sched_initiator].name,
		        cfg->sched_timeout_ms ? cfg->sched_timeout_ms
		                              : cfg->deadline_ms);
	if (cfg->keep_last != 0 || cfg->keep_for_ms != 0)
		fprintf(out,
		        "  retention   = keep_last %u, keep_for %llu ms, "
		        "keep_aborted %llu ms\n",
		        cfg->keep_last, (unsigned long long)cfg->keep_for_ms,
		        (unsigned long long)cfg->keep_aborted_ms);
	print_nodes(cfg, out);
	print_channels(cfg, out);
	for (size_t i = 0; i < cfg->nconds; i++)
		fprintf(out, "condition %s: %s%s%zu bytes of SQL\n",
		        cfg->conds[i].name,
		        cfg->conds[i].file != NULL ? cfg->conds[i].file : "",
		        cfg->conds[i].file != NULL ? ", " : "",
		        strlen(cfg->conds[i].sql));
	return ferror(out) || fflush(out) != 0 ? E_IO : 0;
}

/* strcmp() for strings that may be absent. */
static int
same_str(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

static int
same_node(const struct config_node *a, const struct config_node *b)
{
	int k;

	for (k = 0; k < NK_N; k++)
		if (!same_str(*node_field(a, k), *node_field(b, k)))
			return 0;
	return strcmp(a->name, b->name) == 0;
}

int
config_same_topology(const struct config *a, const struct config *b)
{
	size_t i;

	if (strcmp(a->cluster, b->cluster) != 0 || a->nnodes != b->nnodes ||
	    a->nchans != b->nchans || !same_str(a->tls_ca, b->tls_ca) ||
	    a->allow_mixed != b->allow_mixed)
		return 0;
	for (i = 0; i < a->nnodes; i++)
		if (!same_node(&a->nodes[i], &b->nodes[i]))
			return 0;
	for (i = 0; i < a->nchans; i++)
		if (a->chans[i].src != b->chans[i].src ||
		    a->chans[i].dst != b->chans[i].dst)
			return 0;
	return 1;
}

