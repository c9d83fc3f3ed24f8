/*
 * config_schema.c - the cluster file's schema (config_schema.h): the table
 * of every key, and what reads a row without parsing a file: the forms
 * errors quote, defaults and values as text, and the reference that
 * README.md and cutd(8) carry.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config_schema.h"

const struct config_section_info config_sections[CS_N] = {
    [CS_CLUSTER] = {"cluster", "[cluster]", 0,
                    "Required, once: the cluster's name and settings."},
    [CS_NODE] = {"node", "[node NAME]", 1,
                 "One per node, at most 256; NAME is 1 to 32 characters "
                 "from A-Z a-z 0-9 _ . -."},
    [CS_CHANNELS] = {"channels", "[channels]", 0,
                     "Optional, once: the directed channels; without it, "
                     "every ordered pair of distinct nodes is one.  The "
                     "graph must be strongly connected."},
    [CS_SCHEDULE] = {"schedule", "[schedule]", 0,
                     "Optional, once: snapshots started without anyone "
                     "asking, on ticks of the wall clock."},
    [CS_RETENTION] = {"retention", "[retention]", 0,
                      "Optional, once: which snapshots each initiator "
                      "keeps; without keep_last and keep_for, nothing is "
                      "deleted automatically."},
    [CS_CONDITION] = {"condition", "[condition NAME]", 1,
                      "Optional, up to 16: a query judged on every "
                      "complete snapshot this node initiates; exactly one "
                      "of sql and file."},
};

static const char *const bool_words[] = {"false", "true", NULL};
static const char *const cut_words[] = {"unaligned", "aligned", NULL};
static const char *const tcp_control_words[] = {"read-only", "full", NULL};

#define KIB  1024ull
#define MIB  (1024ull * KIB)
#define GIB  (1024ull * MIB)
#define SEC  1000ull
#define HOUR (3600ull * SEC)
#define DAY  (24ull * HOUR)

/* Where a row's value is: a field of type, kept as st. */
#define AT(type, m, st)                                                        \
	.store = st, .offset = offsetof(type, m), .size = sizeof(((type *)0)->m)
#define CLUSTER(m, st) AT(struct config, m, st)
#define NODE(m)        AT(struct config_node, m, ST_STR)
#define COND(m)        AT(struct config_condition, m, ST_STR)

/*
 * One row per key.  A field left out is 0 or NULL: no unit, no choices,
 * no default (def, or def_doc to say what applies), no flags; a row must
 * give its type and reload, which have no 0 (test_config checks).  The
 * order is the reference's, the summary's (config_print) and, for [node],
 * the order in which the duplicate-endpoint check compares endpoints.
 */
/* clang-format off */
const struct config_key config_keys[] = {
    /* [cluster] */
    {.section = CS_CLUSTER, .key = "name", .type = CT_STRING, .min = 1,
     .max = CONFIG_CLUSTER_MAX, .flags = KF_REQUIRED | KF_TOPOLOGY,
     .reload = CR_REFUSE,
     .doc = "The cluster's name, the same in every node's file.",
     CLUSTER(cluster, ST_STR)},
    {.section = CS_CLUSTER, .key = "deadline_ms", .type = CT_INT,
     .unit = "milliseconds", .min = 100, .max = HOUR, .def = "10000",
     .reload = CR_APPLY,
     .doc = "How long a snapshot may take before it is aborted.",
     CLUSTER(deadline_ms, ST_UINT)},
    {.section = CS_CLUSTER, .key = "max_message", .type = CT_SIZE,
     .unit = "bytes", .min = 1, .max = 64 * MIB, .def = "1048576",
     .reload = CR_REFUSE, .doc = "The largest application payload or state.",
     CLUSTER(max_message, ST_SIZE)},
    {.section = CS_CLUSTER, .key = "window", .type = CT_SIZE, .unit = "bytes",
     .min = 64 * KIB, .max = GIB, .def = "1048576", .reload = CR_REFUSE,
     .doc = "Per channel: payload bytes sent and not yet taken by the "
            "receiving application.",
     CLUSTER(window, ST_SIZE)},
    {.section = CS_CLUSTER, .key = "app_window", .type = CT_SIZE,
     .unit = "bytes", .min = 64 * KIB, .max = GIB, .def = "1048576",
     .reload = CR_REFUSE,
     .doc = "Payload bytes a daemon hands its application ahead of what it "
            "took.",
     CLUSTER(app_window, ST_SIZE)},
    {.section = CS_CLUSTER, .key = "message_cost", .type = CT_SIZE,
     .unit = "bytes", .min = 0, .max = 64 * KIB, .def = "1024",
     .reload = CR_REFUSE,
     .doc = "What each message counts against a window besides its payload, "
            "so that a window also bounds how many small messages are in "
            "flight.",
     CLUSTER(message_cost, ST_SIZE)},
    {.section = CS_CLUSTER, .key = "cut", .type = CT_ENUM,
     .choices = cut_words, .def = "unaligned", .reload = CR_REFUSE,
     .doc = "unaligned: a state request overtakes queued deliveries; "
            "aligned: it waits behind them.",
     CLUSTER(aligned, ST_INT)},
    {.section = CS_CLUSTER, .key = "run_dir", .type = CT_PATH,
     .def = "/run/cutd", .flags = KF_TRIM, .reload = CR_RESTART,
     .doc = "Where the default app and control sockets live.",
     CLUSTER(run_dir, ST_STR)},
    {.section = CS_CLUSTER, .key = "state_dir", .type = CT_PATH,
     .def = "/var/lib/cutd", .flags = KF_TRIM, .reload = CR_RESTART,
     .doc = "Where the default databases live.",
     CLUSTER(state_dir, ST_STR)},
    {.section = CS_CLUSTER, .key = "socket_group", .type = CT_GROUP,
     .def_doc = "the daemon's group", .reload = CR_REFUSE,
     .doc = "The group of the app and control IPC sockets (mode 0660); the "
            "daemon's user must be in it.",
     CLUSTER(socket_group, ST_STR),
     .offset2 = offsetof(struct config, socket_gid)},
    {.section = CS_CLUSTER, .key = "admin_group", .type = CT_GROUP,
     .def_doc = "none", .reload = CR_APPLY,
     .doc = "Its members may also call the mutating control methods (Start, "
            "Delete).",
     CLUSTER(admin_group, ST_STR),
     .offset2 = offsetof(struct config, admin_gid)},
    {.section = CS_CLUSTER, .key = "tcp_control", .type = CT_ENUM,
     .choices = tcp_control_words, .def = "read-only", .reload = CR_APPLY,
     .doc = "Whether a TCP control endpoint, whose callers cannot be "
            "identified, accepts mutating calls.",
     CLUSTER(tcp_control_full, ST_INT)},
    {.section = CS_CLUSTER, .key = "max_snapshots_in_flight", .type = CT_INT,
     .unit = "snapshots", .min = 1, .max = 4096, .def = "16",
     .reload = CR_APPLY,
     .doc = "Snapshots this node started and that have not ended; Start "
            "beyond it is refused.",
     CLUSTER(max_inflight, ST_UINT)},
    {.section = CS_CLUSTER, .key = "start_rate", .type = CT_INT,
     .unit = "per second", .min = 1, .max = 100000, .def = "10",
     .reload = CR_APPLY,
     .doc = "Start calls per second, on average (a token bucket).",
     CLUSTER(start_rate, ST_UINT)},
    {.section = CS_CLUSTER, .key = "start_burst", .type = CT_INT,
     .unit = "calls", .min = 1, .max = 100000, .def = "20",
     .reload = CR_APPLY,
     .doc = "Start calls at once (the token bucket's size).",
     CLUSTER(start_burst, ST_UINT)},
    {.section = CS_CLUSTER, .key = "tls_ca", .type = CT_PATH,
     .def_doc = "none", .flags = KF_TRIM | KF_TOPOLOGY, .reload = CR_REFUSE,
     .doc = "The CA certificate (PEM) every TLS peer's certificate must "
            "chain to; required when a peer is tls+tcp://.",
     CLUSTER(tls_ca, ST_STR)},
    {.section = CS_CLUSTER, .key = "allow_mixed_transports", .type = CT_BOOL,
     .choices = bool_words, .def = "false", .flags = KF_TOPOLOGY,
     .reload = CR_REFUSE,
     .doc = "true lets tcp:// and tls+tcp:// peers share a cluster.",
     CLUSTER(allow_mixed, ST_INT)},

    /* [node NAME]: the endpoints first, peer to http. */
    {.section = CS_NODE, .key = "peer", .type = CT_PEER,
     .flags = KF_REQUIRED, .reload = CR_REFUSE,
     .doc = "Where the other daemons reach this node.",
     NODE(peer)},
    {.section = CS_NODE, .key = "app", .type = CT_LOCAL,
     .def = "ipc://<run_dir>/<node>.app", .flags = KF_DERIVED,
     .reload = CR_REFUSE,
     .doc = "Where the node's application (libcut) reaches its daemon.",
     NODE(app)},
    {.section = CS_NODE, .key = "control", .type = CT_LOCAL,
     .def = "ipc://<run_dir>/<node>.ctl", .flags = KF_DERIVED,
     .reload = CR_REFUSE,
     .doc = "The control endpoint (cutctl).",
     NODE(control)},
    {.section = CS_NODE, .key = "http", .type = CT_HTTP,
     .def_doc = "none: off", .reload = CR_REFUSE,
     .doc = "Metrics, the read-only HTTP API and the web view.",
     NODE(http)},
    {.section = CS_NODE, .key = "database", .type = CT_PATH,
     .def = "<state_dir>/<node>.db", .flags = KF_DERIVED,
     .reload = CR_REFUSE,
     .doc = "The node's SQLite database.",
     NODE(database)},
    {.section = CS_NODE, .key = "tls_cert", .type = CT_PATH,
     .def_doc = "none", .reload = CR_REFUSE,
     .doc = "The node's certificate (PEM, CN or SAN DNS = the node's name); "
            "required for every node when a peer is tls+tcp://.",
     NODE(tls_cert)},
    {.section = CS_NODE, .key = "tls_key", .type = CT_PATH,
     .def_doc = "none", .reload = CR_REFUSE,
     .doc = "Its private key (PEM); only this node's daemon reads it, and "
            "refuses one that group or others may read.",
     NODE(tls_key)},

    /* [channels] */
    {.section = CS_CHANNELS, .key = "channel", .type = CT_CHANNEL,
     .def_doc = "without [channels], every ordered pair", .flags = KF_REPEAT,
     .reload = CR_REFUSE,
     .doc = "One directed channel, repeated for each.",
     .store = ST_NONE},

    /* [schedule] */
    {.section = CS_SCHEDULE, .key = "interval", .type = CT_DURATION,
     .min = 100, .max = DAY, .flags = KF_REQUIRED, .reload = CR_RESTART,
     .doc = "A snapshot every interval.",
     CLUSTER(sched_interval_ms, ST_UINT)},
    {.section = CS_SCHEDULE, .key = "initiator", .type = CT_NODE,
     .flags = KF_REQUIRED, .reload = CR_RESTART,
     .doc = "The node that starts them, or rotate: each node in turn, in "
            "the file's order.",
     CLUSTER(sched_initiator, ST_LONG)},
    {.section = CS_SCHEDULE, .key = "timeout", .type = CT_DURATION,
     .min = 100, .max = HOUR, .def_doc = "deadline_ms", .reload = CR_RESTART,
     .doc = "Each scheduled snapshot's deadline.",
     CLUSTER(sched_timeout_ms, ST_UINT)},

    /* [retention] */
    {.section = CS_RETENTION, .key = "keep_last", .type = CT_INT,
     .unit = "snapshots", .min = 1, .max = 1000000,
     .def_doc = "none: no count rule", .reload = CR_RESTART,
     .doc = "The newest complete snapshots each initiator keeps.",
     CLUSTER(keep_last, ST_UINT)},
    {.section = CS_RETENTION, .key = "keep_for", .type = CT_DURATION,
     .min = SEC, .max = 3650 * DAY, .def_doc = "none: no age rule",
     .reload = CR_RESTART,
     .doc = "And the complete snapshots that ended within this long.",
     CLUSTER(keep_for_ms, ST_U64)},
    {.section = CS_RETENTION, .key = "keep_aborted", .type = CT_DURATION,
     .min = 0, .max = 3650 * DAY, .def = "1h", .reload = CR_RESTART,
     .doc = "How long an aborted snapshot stays after it ended.",
     CLUSTER(keep_aborted_ms, ST_U64)},

    /* [condition NAME] */
    {.section = CS_CONDITION, .key = "sql", .type = CT_TEXT,
     .reload = CR_RESTART,
     .doc = "The query, on one line.",
     COND(sql)},
    {.section = CS_CONDITION, .key = "file", .type = CT_FILE,
     .reload = CR_RESTART,
     .doc = "A file holding the query, relative to the cluster file's "
            "directory, read at start.",
     COND(file)},
};
/* clang-format on */

const size_t config_nkeys = sizeof(config_keys) / sizeof(config_keys[0]);

_Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) <= CONFIG_KEYS_MAX,
               "CONFIG_KEYS_MAX is too small for the table");

const struct config_key *
config_key_find(enum config_section section, const char *key)
{
	for (size_t i = 0; i < config_nkeys; i++)
		if (config_keys[i].section == section &&
		    strcmp(config_keys[i].key, key) == 0)
			return &config_keys[i];
	return NULL;
}

size_t
config_key_index(const struct config_key *k)
{
	return (size_t)(k - config_keys);
}

void *
config_key_base(const struct config *cfg, const struct config_key *k, size_t i)
{
	if (k->section == CS_NODE)
		return &cfg->nodes[i];
	if (k->section == CS_CONDITION)
		return &cfg->conds[i];
	return (void *)cfg;
}

uint64_t
config_key_num(const struct config_key *k, const void *base)
{
	const char *at = (const char *)base + k->offset;

	switch (k->store) {
	case ST_UINT:
		return *(const unsigned *)at;
	case ST_SIZE:
		return *(const size_t *)at;
	case ST_U64:
		return *(const uint64_t *)at;
	case ST_INT:
		return (uint64_t) * (const int *)at;
	case ST_LONG:
		return (uint64_t) * (const long *)at;
	default:
		return 0;
	}
}

void
config_key_set_num(const struct config_key *k, void *base, uint64_t v)
{
	char *at = (char *)base + k->offset;

	switch (k->store) {
	case ST_UINT:
		*(unsigned *)at = (unsigned)v;
		break;
	case ST_SIZE:
		*(size_t *)at = (size_t)v;
		break;
	case ST_U64:
		*(uint64_t *)at = v;
		break;
	case ST_INT:
		*(int *)at = (int)v;
		break;
	case ST_LONG:
		*(long *)at = (long)v;
		break;
	default:
		break;
	}
}

char **
config_key_str(const struct config_key *k, void *base)
{
	return (char **)((char *)base + k->offset);
}

/* Appends to buf, of len bytes, what fmt says, as far as it fits. */
static void __attribute__((format(printf, 3, 4)))
add(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

void
config_duration_text(uint64_t ms, char *buf, size_t len)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {{"d", DAY}, {"h", HOUR}, {"m", 60 * SEC}, {"s", SEC}};

	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
		if (ms != 0 && ms % units[u].ms == 0) {
			snprintf(buf, len, "%llu%s",
			         (unsigned long long)(ms / units[u].ms),
			         units[u].unit);
			return;
		}
	snprintf(buf, len, "%llums", (unsigned long long)ms);
}

int
config_duration(const char *s, uint64_t *ret)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {
	    {"ms", 1}, {"s", SEC}, {"m", 60 * SEC}, {"h", HOUR}, {"d", DAY}};
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

/* A byte count in its largest exact binary unit, when it has one. */
static void
size_text(uint64_t n, char *buf, size_t len)
{
	if (n != 0 && n % GIB == 0)
		snprintf(buf, len, "%llu GiB", (unsigned long long)(n / GIB));
	else if (n != 0 && n % MIB == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(n / MIB));
	else if (n != 0 && n % KIB == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n / KIB));
	else
		snprintf(buf, len, "%llu", (unsigned long long)n);
}

#define ENDPOINT "tcp://HOST:PORT or tls+tcp://HOST:PORT"

void
config_key_form(const struct config_key *k, char *buf, size_t len)
{
	char lo[32], hi[32];

	buf[0] = '\0';
	switch (k->type) {
	case CT_INT:
		add(buf, len, "a whole number from %llu to %llu",
		    (unsigned long long)k->min, (unsigned long long)k->max);
		if (k->unit != NULL)
			add(buf, len, " (%s)", k->unit);
		break;
	case CT_SIZE:
		size_text(k->min, lo, sizeof(lo));
		size_text(k->max, hi, sizeof(hi));
		add(buf, len,
		    "a whole number from %llu to %llu (bytes: %s to %s)",
		    (unsigned long long)k->min, (unsigned long long)k->max, lo,
		    hi);
		break;
	case CT_DURATION:
		config_duration_text(k->min, lo, sizeof(lo));
		config_duration_text(k->max, hi, sizeof(hi));
		add(buf, len,
		    "a duration such as 500ms, 10s, 5m, 1h or 7d, from %s to "
		    "%s",
		    lo, hi);
		break;
	case CT_BOOL:
		add(buf, len, "true or false");
		break;
	case CT_ENUM:
		for (size_t i = 0; k->choices[i] != NULL; i++)
			add(buf, len, "%s%s",
			    i == 0                      ? ""
			    : k->choices[i + 1] == NULL ? " or "
			                                : ", ",
			    k->choices[i]);
		break;
	case CT_STRING:
		add(buf, len,
		    "%llu to %llu printable characters without spaces",
		    (unsigned long long)k->min, (unsigned long long)k->max);
		break;
	case CT_PATH:
		add(buf, len, "an absolute path");
		break;
	case CT_GROUP:
		add(buf, len, "a group name");
		break;
	case CT_PEER:
		add(buf, len, ENDPOINT);
		break;
	case CT_LOCAL:
		add(buf, len, "ipc:///PATH, " ENDPOINT);
		break;
	case CT_HTTP:
		add(buf, len, "http://HOST:PORT");
		break;
	case CT_NODE:
		add(buf, len, "a node name or 'rotate'");
		break;
	case CT_CHANNEL:
		add(buf, len, "SRC -> DST, two nodes of the file");
		break;
	case CT_TEXT:
		add(buf, len, "any text");
		break;
	case CT_FILE:
		add(buf, len, "a path to a readable file");
		break;
	}
}

void
config_key_default(const struct config_key *k, char *buf, size_t len)
{
	if (k->def != NULL)
		snprintf(buf, len, "%s", k->def);
	else if (k->flags & KF_REQUIRED)
		snprintf(buf, len, "required");
	else if (k->def_doc != NULL)
		snprintf(buf, len, "(%s)", k->def_doc);
	else
		snprintf(buf, len, "(none)");
}

void
config_key_value(const struct config *cfg, const struct config_key *k, size_t i,
                 char *buf, size_t len)
{
	void *base = config_key_base(cfg, k, i);
	uint64_t v = config_key_num(k, base);
	char *s;

	if (k->store == ST_STR) {
		s = *config_key_str(k, base);
		if (s == NULL)
			snprintf(buf, len, "(%s)",
			         k->def_doc != NULL ? k->def_doc : "none");
		else if (k->type == CT_GROUP)
			snprintf(
			    buf, len, "%s (gid %ld)", s,
			    *(const long *)((const char *)base + k->offset2));
		else
			snprintf(buf, len, "%s", s);
		return;
	}
	if (k->store == ST_NONE) {
		snprintf(buf, len, "(a list)");
	} else if (v == 0 && k->def == NULL) {
		/* 0 is what a key without a default leaves. */
		snprintf(buf, len, "(%s)",
		         k->def_doc != NULL ? k->def_doc : "none");
	} else if (k->type == CT_BOOL || k->type == CT_ENUM) {
		snprintf(buf, len, "%s", k->choices[v]);
	} else if (k->type == CT_DURATION) {
		config_duration_text(v, buf, len);
	} else if (k->type == CT_NODE) {
		snprintf(buf, len, "%s",
		         (long)v == SCHED_ROTATE || (size_t)v >= cfg->nnodes
		             ? "rotate"
		             : cfg->nodes[v].name);
	} else {
		snprintf(buf, len, "%llu", (unsigned long long)v);
	}
}

const char *
config_reload_name(enum config_reload r)
{
	switch (r) {
	case CR_APPLY:
		return "applied";
	case CR_REFUSE:
		return "refused";
	default:
		return "at restart";
	}
}

static const char *const type_names[] = {
    [CT_INT] = "int",        [CT_SIZE] = "size",     [CT_DURATION] = "duration",
    [CT_BOOL] = "bool",      [CT_ENUM] = "enum",     [CT_STRING] = "string",
    [CT_PATH] = "path",      [CT_GROUP] = "group",   [CT_PEER] = "endpoint",
    [CT_LOCAL] = "endpoint", [CT_HTTP] = "endpoint", [CT_NODE] = "node",
    [CT_CHANNEL] = "list",   [CT_TEXT] = "text",     [CT_FILE] = "file",
};

/* Writes s to out with each character of escape doubled or escaped:
 * '|' for a Markdown table cell, '\\' for roff. */
static void
put_escaped(FILE *out, const char *s, enum config_ref_format format)
{
	for (; *s != '\0'; s++) {
		if (format == CONFIG_REF_MARKDOWN && *s == '|')
			fputs("\\|", out);
		else if (format == CONFIG_REF_MAN && *s == '\\')
			fputs("\\e", out);
		else
			fputc(*s, out);
	}
}

static void
markdown_section(FILE *out, enum config_section s)
{
	char form[256], def[256];

	fprintf(out, "### `%s`\n\n", config_sections[s].title);
	put_escaped(out, config_sections[s].doc, CONFIG_REF_MARKDOWN);
	fputs("\n\n| Key | Type | Default | Accepted values | SIGHUP | "
	      "Meaning |\n|---|---|---|---|---|---|\n",
	      out);
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];

		if (k->section != s)
			continue;
		config_key_form(k, form, sizeof(form));
		config_key_default(k, def, sizeof(def));
		fprintf(out, "| `%s` | %s | ", k->key, type_names[k->type]);
		if (k->def != NULL) {
			fprintf(out, "`%s`", def);
		} else {
			put_escaped(out, def, CONFIG_REF_MARKDOWN);
		}
		fputs(" | ", out);
		put_escaped(out, form, CONFIG_REF_MARKDOWN);
		fprintf(out, "%s | %s | ",
		        k->flags & KF_REPEAT ? ", one per line" : "",
		        config_reload_name(k->reload));
		put_escaped(out, k->doc, CONFIG_REF_MARKDOWN);
		fputs(" |\n", out);
	}
}

static void
man_section(FILE *out, enum config_section s)
{
	char form[256], def[256];

	fprintf(out, ".Ss %s\n", config_sections[s].title);
	put_escaped(out, config_sections[s].doc, CONFIG_REF_MAN);
	fputs("\n.Bl -tag -width Ds\n", out);
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];

		if (k->section != s)
			continue;
		config_key_form(k, form, sizeof(form));
		config_key_default(k, def, sizeof(def));
		fprintf(out, ".It Cm %s Ar %s\n", k->key, type_names[k->type]);
		put_escaped(out, k->doc, CONFIG_REF_MAN);
		fputs("\n", out);
		if (k->def != NULL)
			fprintf(out, "Default\n.Li %s ;\n", def);
		else if (k->flags & KF_REQUIRED)
			fputs("Required;\n", out);
		else
			fprintf(out, "Default %s;\n", def);
		put_escaped(out, form, CONFIG_REF_MAN);
		fprintf(out, "%s.\nOn SIGHUP: %s.\n",
		        k->flags & KF_REPEAT ? ", one per line" : "",
		        config_reload_name(k->reload));
	}
	fputs(".El\n", out);
}

int
config_reference(FILE *out, enum config_ref_format format)
{
	if (format == CONFIG_REF_MARKDOWN)
		fputs("The keys of each section (from `cutd "
		      "--print-config-reference markdown`). SIGHUP: *applied* "
		      "takes effect; *refused* refuses the reload, and the "
		      "running configuration stays; *at restart* lets the "
		      "reload go on with the running value, until cutd "
		      "restarts.\n\n",
		      out);
	else
		fputs(
		    "The keys of each section.\n"
		    "On SIGHUP, a changed key is\n.Em applied ,\n"
		    "or\n.Em refused :\nthe reload is refused and the running "
		    "configuration stays; or kept\n.Em at restart :\n"
		    "the reload goes on with the running value, until\n.Nm\n"
		    "restarts.\n",
		    out);
	for (int s = 0; s < CS_N; s++) {
		if (format == CONFIG_REF_MARKDOWN) {
			if (s > 0)
				fputs("\n", out);
			markdown_section(out, (enum config_section)s);
		} else {
			man_section(out, (enum config_section)s);
		}
	}
	return ferror(out) || fflush(out) != 0 ? E_IO : 0;
}
