/*
 * config.c - the cluster file's meaning: sections, keys, defaults, and the
 * checks that need the whole file (endpoints, channels, connectivity).
 *
 * Which sections and keys there are, each key's type, range, default and
 * reload rule, is the schema's (config_schema.c): this file reads a value
 * by its row, and knows by name only the keys a check across the file
 * needs (the endpoints, the TLS keys, the schedule's initiator).
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
#include "config_schema.h"

#define IPC_PATH_MAX 107 /* sizeof(sun_path) - 1 */
#define VALUE_MAX    256 /* longer than any line config_ini.c passes on */
#define WHERE_MAX    (CONFIG_NAME_MAX + 16) /* "[node NAME]" */
#define TEXT_MAX     512 /* a value or a form, as messages quote it */

/* The parser's section besides those of the schema. */
#define SECT_NONE   (-1) /* before any header */
#define SECT_IGNORE (-2) /* under a header already reported */

enum { V_OK, V_BAD, V_LONG };

struct nodeinfo {
	int line;                     /* of its [node] header */
	int keyline[CONFIG_KEYS_MAX]; /* of each key, 0 if absent */
};

struct rawchan {
	char *src, *dst;
	int line;
};

struct parser {
	struct config_ini_errors errs;
	int sect;    /* an enum config_section, SECT_NONE or SECT_IGNORE */
	size_t inst; /* in [node] or [condition], which one */
	int sect_line[CS_N]; /* of the header of each section that comes
	                        once, 0 if absent */
	int keyline[CONFIG_KEYS_MAX]; /* of the keys of those sections */
	char *sched_initiator;        /* resolved once the nodes are known */
	struct nodeinfo *ninfo;
	struct rawchan *raw;
	size_t nraw, rawcap;
	int condline[CONFIG_MAX_CONDITIONS][CONFIG_KEYS_MAX];
	struct config *cfg;
};

#define report(p, ...) config_ini_report(&(p)->errs, __VA_ARGS__)

/* The row of a key this file checks by name; it is in the table. */
static const struct config_key *
row(enum config_section section, const char *key)
{
	const struct config_key *k = config_key_find(section, key);

	if (k == NULL)
		abort(); /* the table lost a key config.c relies on */
	return k;
}

/* The lines of the keys of section instance inst. */
static int *
keylines(struct parser *p, int sect, size_t inst)
{
	if (sect == CS_NODE)
		return p->ninfo[inst].keyline;
	if (sect == CS_CONDITION)
		return p->condline[inst];
	return p->keyline;
}

/* "[cluster]", "[node p0]", "[condition x]". */
static void
where(const struct config *cfg, int sect, size_t inst, char *buf, size_t len)
{
	if (sect == CS_NODE)
		snprintf(buf, len, "[node %s]", cfg->nodes[inst].name);
	else if (sect == CS_CONDITION)
		snprintf(buf, len, "[condition %s]", cfg->conds[inst].name);
	else
		snprintf(buf, len, "%s", config_sections[sect].title);
}

/* "[cluster], [node NAME], ... or [condition NAME]". */
static void
section_list(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int s = 0; s < CS_N && n < len; s++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
		                      s == 0          ? ""
		                      : s == CS_N - 1 ? " or "
		                                      : ", ",
		                      config_sections[s].title);
}

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

/* Checks an endpoint of type CT_PEER, CT_LOCAL or CT_HTTP. */
static int
check_url(enum config_type type, const char *value)
{
	if (type == CT_PEER)
		return check_endpoint(value, 0);
	if (type == CT_LOCAL)
		return check_endpoint(value, 1);
	/* No path: the listener serves its own (/metrics, /v1/...). */
	if (!config_ini_word(value) || !starts_with(value, "http://"))
		return V_BAD;
	return check_hostport(value + strlen("http://"));
}

static int
is_url(enum config_type type)
{
	return type == CT_PEER || type == CT_LOCAL || type == CT_HTTP;
}

/* Reports that value is not what key k takes: what it must be, and what
 * to do (a value in the range, or the default by removing the line). */
static void
bad_value(struct parser *p, const struct config_key *k, const char *w,
          const char *value, int line)
{
	char form[TEXT_MAX], def[TEXT_MAX], fix[2 * TEXT_MAX] = "";
	int ranged =
	    k->type == CT_INT || k->type == CT_SIZE || k->type == CT_DURATION;

	config_key_form(k, form, sizeof(form));
	if (ranged)
		snprintf(fix, sizeof(fix), "; use a value in that range");
	if (!(k->flags & KF_REQUIRED) && (k->def != NULL || k->def_doc)) {
		snprintf(def, sizeof(def), "%s",
		         k->def != NULL ? k->def : k->def_doc);
		snprintf(fix + strlen(fix), sizeof(fix) - strlen(fix),
		         "%s remove the line for the default (%s)",
		         ranged ? ", or" : ";", def);
	}
	report(p, line, "%s %s must be %s, not '%s'%s", w, k->key, form, value,
	       fix);
}

/* A group named in the file must exist on this host: the daemon gives
 * its sockets to it, or lets its members change state, and a typo must not
 * silently leave the sockets with the daemon's group or nobody as admin. */
static void
group_value(struct parser *p, const struct config_key *k, void *base,
            const char *w, const char *value, int line)
{
	struct group gr, *found = NULL;
	char buf[4096];

	if (!config_ini_word(value)) {
		bad_value(p, k, w, value, line);
		return;
	}
	if (getgrnam_r(value, &gr, buf, sizeof(buf), &found) != 0 ||
	    found == NULL) {
		report(
		    p, line,
		    "%s %s: no group '%s' on this host; create it (groupadd) "
		    "or remove the key",
		    w, k->key, value);
		return;
	}
	set_str(p, config_key_str(k, base), value);
	*(long *)((char *)base + k->offset2) = (long)found->gr_gid;
}

/* An absolute path; KF_TRIM drops its trailing slashes. */
static void
path_value(struct parser *p, const struct config_key *k, void *base,
           const char *w, const char *value, int line)
{
	char **field = config_key_str(k, base);
	size_t n;

	if (value[0] != '/') {
		bad_value(p, k, w, value, line);
		return;
	}
	set_str(p, field, value);
	for (n = *field ? strlen(*field) : 0;
	     (k->flags & KF_TRIM) && n > 1 && (*field)[n - 1] == '/';)
		(*field)[--n] = '\0';
}

static void
channel_value(struct parser *p, const char *value, int line)
{
	char buf[VALUE_MAX], *arrow, *src, *dst;
	struct rawchan *r;

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

/* Checks value for key k of section instance inst, by k's type, and
 * stores it; reports it otherwise.  w names the section for messages. */
static void
set_value(struct parser *p, const struct config_key *k, size_t inst,
          const char *w, const char *value, int line)
{
	void *base = config_key_base(p->cfg, k, inst);
	unsigned long n;
	uint64_t ms;
	size_t i;
	int v;

	switch (k->type) {
	case CT_INT:
	case CT_SIZE:
		if (config_ini_uint(value, (unsigned long)k->min,
		                    (unsigned long)k->max, &n) == 0)
			config_key_set_num(k, base, n);
		else
			bad_value(p, k, w, value, line);
		break;
	case CT_DURATION:
		if (config_duration(value, &ms) == 0 && ms >= k->min &&
		    ms <= k->max)
			config_key_set_num(k, base, ms);
		else
			bad_value(p, k, w, value, line);
		break;
	case CT_BOOL:
	case CT_ENUM:
		for (i = 0; k->choices[i] != NULL; i++)
			if (strcmp(value, k->choices[i]) == 0)
				break;
		if (k->choices[i] != NULL)
			config_key_set_num(k, base, i);
		else
			bad_value(p, k, w, value, line);
		break;
	case CT_STRING:
		if (config_ini_word(value) && strlen(value) >= k->min &&
		    strlen(value) <= k->max)
			set_str(p, config_key_str(k, base), value);
		else
			bad_value(p, k, w, value, line);
		break;
	case CT_PATH:
		path_value(p, k, base, w, value, line);
		break;
	case CT_GROUP:
		group_value(p, k, base, w, value, line);
		break;
	case CT_PEER:
	case CT_LOCAL:
	case CT_HTTP:
		if ((v = check_url(k->type, value)) == V_OK)
			set_str(p, config_key_str(k, base), value);
		else if (v == V_LONG)
			report(p, line,
			       "%s %s path is longer than %d bytes, the limit "
			       "for a Unix socket: '%s'",
			       w, k->key, IPC_PATH_MAX, value);
		else
			bad_value(p, k, w, value, line);
		break;
	case CT_NODE:
		/* Resolved to an index once every node is known. */
		if (strcmp(value, "rotate") == 0 || is_node_name(value))
			set_str(p, &p->sched_initiator, value);
		else
			bad_value(p, k, w, value, line);
		break;
	case CT_CHANNEL:
		channel_value(p, value, line);
		break;
	case CT_TEXT:
	case CT_FILE:
		if (*value == '\0')
			report(p, line, "%s %s needs a value", w, k->key);
		else
			set_str(p, config_key_str(k, base), value);
		break;
	}
}

static void
begin_once(struct parser *p, int sect, int line)
{
	int *first = &p->sect_line[sect];

	if (*first != 0) {
		report(p, line, "duplicate %s section (first at line %d)",
		       config_sections[sect].title, *first);
		p->sect = SECT_IGNORE;
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

	p->sect = SECT_IGNORE;
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
		p->inst = cfg->nnodes++;
		p->sect = CS_NODE;
	}
}

static void
begin_condition(struct parser *p, const char *name, int line)
{
	struct config *cfg = p->cfg;
	struct config_condition *c;

	p->sect = SECT_IGNORE;
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
	p->inst = cfg->nconds++;
	p->sect = CS_CONDITION;
}

/* config_ini_handler.section: name is NULL for a broken header. */
static void
on_section(void *user, const char *name, int line)
{
	struct parser *p = user;
	char list[256];

	p->sect = SECT_IGNORE; /* keys under a broken header belong nowhere */
	if (name == NULL)
		return;
	for (int s = 0; s < CS_N; s++) {
		const char *sname = config_sections[s].name;
		size_t n = strlen(sname);

		if (!config_sections[s].named) {
			if (strcmp(name, sname) == 0) {
				begin_once(p, s, line);
				return;
			}
		} else if (strncmp(name, sname, n) == 0 &&
		           (name[n] == '\0' || name[n] == ' ' ||
		            name[n] == '\t')) {
			name += n + strspn(name + n, " \t");
			if (s == CS_NODE)
				begin_node(p, name, line);
			else
				begin_condition(p, name, line);
			return;
		}
	}
	section_list(list, sizeof(list));
	report(p, line, "unknown section [%s]; expected %s", name, list);
}

/* Levenshtein distance of a and b, for names up to 63 characters; more
 * than 63 otherwise. */
static size_t
distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], i, j;

	if (la > 63 || lb > 63)
		return 64;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0], next;

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			next = row[j];
			row[j] = diag + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (next + 1 < row[j])
				row[j] = next + 1;
			diag = next;
		}
	}
	return row[lb];
}

/* What an unknown key name in section sect may have meant: a key one
 * edit away (two for a key of 6 characters or more), or one that it begins
 * or that begins it; else the section it belongs in, the keys of a
 * section that has few, or where to find them. */
static void
unknown_key_hint(int sect, const char *name, char *buf, size_t len)
{
	const struct config_key *best = NULL;
	size_t best_d = 3, nkeys = 0, seen, n, i;

	for (i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];
		size_t d;

		if ((int)k->section != sect)
			continue;
		nkeys++;
		d = distance(name, k->key);
		if (strlen(name) >= 4 &&
		    (starts_with(k->key, name) || starts_with(name, k->key)))
			d = d < 2 ? d : 2;
		else if (d > (strlen(k->key) >= 6 ? 2u : 1u))
			continue;
		if (d < best_d) {
			best = k;
			best_d = d;
		}
	}
	if (best != NULL) {
		snprintf(buf, len, "; did you mean '%s'?", best->key);
		return;
	}
	for (i = 0; i < config_nkeys; i++)
		if (strcmp(config_keys[i].key, name) == 0) {
			snprintf(buf, len, "; %s is a key of %s", name,
			         config_sections[config_keys[i].section].title);
			return;
		}
	if (nkeys > 8) {
		snprintf(buf, len,
		         "; 'cutd --print-config-reference markdown' lists the "
		         "keys of %s",
		         config_sections[sect].title);
		return;
	}
	n = (size_t)snprintf(buf, len, "; %s %s %s ",
	                     nkeys == 1 ? "the only key of" : "the keys of",
	                     config_sections[sect].title,
	                     nkeys == 1 ? "is" : "are");
	for (i = 0, seen = 0; i < config_nkeys && n < len; i++) {
		if ((int)config_keys[i].section != sect)
			continue;
		seen++;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
		                      seen == 1       ? ""
		                      : seen == nkeys ? " and "
		                                      : ", ",
		                      config_keys[i].key);
	}
}

/* config_ini_handler.key */
static void
on_key(void *user, const char *name, const char *value, int line)
{
	struct parser *p = user;
	const struct config_key *k;
	char w[WHERE_MAX], list[256], hint[TEXT_MAX];
	int *lines;
	size_t i;

	if (p->sect == SECT_IGNORE)
		return; /* its header was reported */
	if (p->sect == SECT_NONE) {
		section_list(list, sizeof(list));
		report(p, line,
		       "key '%s' is outside any section; put it under %s", name,
		       list);
		return;
	}
	where(p->cfg, p->sect, p->inst, w, sizeof(w));
	if ((k = config_key_find(p->sect, name)) == NULL) {
		unknown_key_hint(p->sect, name, hint, sizeof(hint));
		report(p, line, "unknown key '%s' in %s%s", name, w, hint);
		return;
	}
	lines = keylines(p, p->sect, p->inst);
	i = config_key_index(k);
	if (lines[i] != 0 && !(k->flags & KF_REPEAT)) {
		report(p, line, "duplicate key '%s' in %s (first at line %d)",
		       name, w, lines[i]);
		return;
	}
	if (lines[i] == 0)
		lines[i] = line;
	set_value(p, k, p->inst, w, value, line);
}

/* Reports each key of the table that section instance inst requires and
 * lacks, at line (its header). */
static void
check_required(struct parser *p, int sect, size_t inst, int line)
{
	const int *lines = keylines(p, sect, inst);
	char w[WHERE_MAX];

	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];

		if ((int)k->section != sect || !(k->flags & KF_REQUIRED) ||
		    lines[i] != 0)
			continue;
		where(p->cfg, sect, inst, w, sizeof(w));
		report(p, line, "%s has no '%s' key", w, k->key);
	}
}

/* Fills in the derived default of key k of node i: its template with
 * <run_dir>, <state_dir> and <node> replaced (a directory's trailing
 * slash is not doubled by the template's). */
static void
derive(struct parser *p, const struct config_key *k, size_t i)
{
	static const struct {
		const char *name;
		size_t offset; /* in struct config; SIZE_MAX: the node */
	} vars[] = {{"<run_dir>", offsetof(struct config, run_dir)},
	            {"<state_dir>", offsetof(struct config, state_dir)},
	            {"<node>", SIZE_MAX}};
	struct config_node *n = &p->cfg->nodes[i];
	char buf[2 * VALUE_MAX], **field = config_key_str(k, n);
	const char *t = k->def;
	size_t len = 0, v;

	if (p->ninfo[i].keyline[config_key_index(k)] != 0)
		return; /* set, or reported as bad */
	while (*t != '\0' && len + 1 < sizeof(buf)) {
		for (v = 0; v < sizeof(vars) / sizeof(vars[0]); v++)
			if (starts_with(t, vars[v].name))
				break;
		if (v == sizeof(vars) / sizeof(vars[0])) {
			buf[len++] = *t++;
			continue;
		}
		const char *s = vars[v].offset == SIZE_MAX
		                    ? n->name
		                    : *(char *const *)((const char *)p->cfg +
		                                       vars[v].offset);
		t += strlen(vars[v].name);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s", s);
		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		if (len > 0 && buf[len - 1] == '/' && *t == '/')
			len--;
	}
	buf[len] = '\0';
	set_str(p, field, buf);
	if (*field != NULL && is_url(k->type) &&
	    check_url(k->type, *field) == V_LONG)
		report(
		    p, p->ninfo[i].line,
		    "the default %s endpoint '%s' is longer than %d bytes, "
		    "the limit for a Unix socket; set %s or a shorter run_dir",
		    k->key, *field, IPC_PATH_MAX, k->key);
}

static void
finish_nodes(struct parser *p, int eof)
{
	struct config *cfg = p->cfg;

	if (cfg->nnodes == 0)
		report(p, eof,
		       "the file declares no nodes; add a [node NAME] "
		       "section");
	for (size_t i = 0; i < cfg->nnodes; i++) {
		check_required(p, CS_NODE, i, p->ninfo[i].line);
		for (size_t r = 0; r < config_nkeys; r++)
			if (config_keys[r].section == CS_NODE &&
			    (config_keys[r].flags & KF_DERIVED))
				derive(p, &config_keys[r], i);
	}
}

/* Reports each endpoint already used earlier in the file, by any node:
 * the node keys that are URLs, node by node, in the table's order. */
static void
check_endpoints(struct parser *p)
{
	const struct config *cfg = p->cfg;
	const struct config_key *ep[CONFIG_KEYS_MAX];
	size_t e, f, n, per = 0;

	for (size_t i = 0; i < config_nkeys; i++)
		if (config_keys[i].section == CS_NODE &&
		    is_url(config_keys[i].type))
			ep[per++] = &config_keys[i];
	n = cfg->nnodes * per;
	for (e = 0; e < n; e++) {
		struct config_node *a = &cfg->nodes[e / per];
		const struct config_key *ka = ep[e % per];
		const char *url = *config_key_str(ka, a);
		int line = p->ninfo[e / per].keyline[config_key_index(ka)];

		for (f = 0; url != NULL && f < e; f++) {
			struct config_node *b = &cfg->nodes[f / per];
			const char *other = *config_key_str(ep[f % per], b);

			if (other == NULL || strcmp(url, other) != 0)
				continue;
			report(p, line ? line : p->ninfo[e / per].line,
			       "[node %s] %s endpoint %s is already the %s "
			       "endpoint of node %s",
			       a->name, ka->key, url, ep[f % per]->key,
			       b->name);
			break;
		}
	}
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
		snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - path),
		         path, c->file);
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

	cfg->chans_declared = p->sect_line[CS_CHANNELS] != 0;
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
	report(p, p->sect_line[CS_CHANNELS],
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
	const struct config_key *peer = row(CS_NODE, "peer");
	const struct config_key *need[] = {row(CS_NODE, "tls_cert"),
	                                   row(CS_NODE, "tls_key")};
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
		report(p, p->ninfo[plain].keyline[config_key_index(peer)],
		       "[node %s] peer %s is plaintext but node %s's is TLS; "
		       "mixing them needs [cluster] allow_mixed_transports = "
		       "true",
		       cfg->nodes[plain].name, cfg->nodes[plain].peer,
		       cfg->nodes[tls].name);
	if (p->keyline[config_key_index(row(CS_CLUSTER, "tls_ca"))] == 0)
		report(p,
		       p->sect_line[CS_CLUSTER] ? p->sect_line[CS_CLUSTER]
		                                : eof,
		       "[cluster] has no 'tls_ca' key, which tls+tcp:// peers "
		       "need");
	for (i = 0; i < cfg->nnodes; i++) {
		for (size_t k = 0; k < sizeof(need) / sizeof(need[0]); k++)
			if (p->ninfo[i].keyline[config_key_index(need[k])] == 0)
				report(p, p->ninfo[i].line,
				       "[node %s] has no '%s' key, which "
				       "tls+tcp:// peers need",
				       cfg->nodes[i].name, need[k]->key);
	}
}

static void
finish_conditions(struct parser *p)
{
	size_t sql = config_key_index(row(CS_CONDITION, "sql"));
	size_t file = config_key_index(row(CS_CONDITION, "file"));

	for (size_t i = 0; i < p->cfg->nconds; i++) {
		struct config_condition *c = &p->cfg->conds[i];
		int *lines = p->condline[i];

		if ((lines[sql] != 0) == (lines[file] != 0))
			report(p, lines[sql] ? lines[file] : c->line,
			       "[condition %s] needs one of 'sql' and 'file'",
			       c->name);
		else if (lines[file] != 0 && c->file != NULL)
			read_condition(p, c, lines[file]);
	}
}

/* The schedule has its keys, and its initiator names a node of the
 * file. */
static void
finish_schedule(struct parser *p)
{
	struct config *cfg = p->cfg;
	int k;

	if (p->sect_line[CS_SCHEDULE] == 0)
		return;
	check_required(p, CS_SCHEDULE, 0, p->sect_line[CS_SCHEDULE]);
	if (p->sched_initiator == NULL)
		return;
	if (strcmp(p->sched_initiator, "rotate") == 0)
		cfg->sched_initiator = SCHED_ROTATE;
	else if ((k = config_node_index(cfg, p->sched_initiator)) >= 0)
		cfg->sched_initiator = k;
	else
		report(
		    p,
		    p->keyline[config_key_index(row(CS_SCHEDULE, "initiator"))],
		    "[schedule] initiator '%s' is not a node of the file",
		    p->sched_initiator);
}

static void
finish(struct parser *p, int nlines)
{
	int eof = nlines > 0 ? nlines : 1;

	if (p->errs.oom)
		return;
	if (p->sect_line[CS_CLUSTER] == 0)
		report(p, eof, "the file has no [cluster] section");
	else
		check_required(p, CS_CLUSTER, 0, p->sect_line[CS_CLUSTER]);
	finish_nodes(p, eof);
	check_endpoints(p);
	check_tls(p, eof);
	finish_channels(p);
	finish_conditions(p);
	finish_schedule(p);
}

/* The values of the sections that come once before the file is read:
 * each default, parsed as if the file said it, and what stands for "not
 * set" where 0 would be a value. */
static void
set_defaults(struct parser *p)
{
	for (size_t i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];
		char *base = (char *)p->cfg;

		if (config_sections[k->section].named || k->store == ST_NONE)
			continue;
		if (k->type == CT_GROUP)
			*(long *)(base + k->offset2) = -1;
		if (k->type == CT_NODE)
			config_key_set_num(k, base, (uint64_t)SCHED_ROTATE);
		if (k->def != NULL && !(k->flags & KF_DERIVED))
			set_value(p, k, 0, config_sections[k->section].title,
			          k->def, 0);
	}
}

static int
parser_init(struct parser *p, const char *path)
{
	struct config *cfg;

	memset(p, 0, sizeof(*p));
	p->sect = SECT_NONE;
	p->errs.path = path;
	if ((p->cfg = cfg = calloc(1, sizeof(*cfg))) == NULL)
		return p->errs.oom = 1, E_NOMEM;
	cfg->path = strdup(path);
	cfg->nodes = calloc(CONFIG_MAX_NODES, sizeof(*cfg->nodes));
	cfg->conds = calloc(CONFIG_MAX_CONDITIONS, sizeof(*cfg->conds));
	p->ninfo = calloc(CONFIG_MAX_NODES, sizeof(*p->ninfo));
	p->errs.oom = !cfg->path || !cfg->nodes || !p->ninfo || !cfg->conds;
	if (!p->errs.oom)
		set_defaults(p);
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

/* The number of instances of section s in cfg. */
static size_t
instances(const struct config *cfg, int s)
{
	if (s == CS_NODE)
		return cfg->nnodes;
	if (s == CS_CONDITION)
		return cfg->nconds;
	return 1;
}

void
config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < config_nkeys; i++) {
		const struct config_key *k = &config_keys[i];
		size_t n =
		    (k->section == CS_NODE && cfg->nodes == NULL) ||
		            (k->section == CS_CONDITION && cfg->conds == NULL)
		        ? 0
		        : instances(cfg, k->section);

		for (size_t j = 0; k->store == ST_STR && j < n; j++)
			free(*config_key_str(k, config_key_base(cfg, k, j)));
	}
	for (i = 0; cfg->nodes != NULL && i < cfg->nnodes; i++)
		free(cfg->nodes[i].name);
	for (i = 0; cfg->conds != NULL && i < cfg->nconds; i++)
		free(cfg->conds[i].name);
	free(cfg->nodes);
	free(cfg->conds);
	free(cfg->chans);
	free(cfg->path);
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

/* Prints the keys of section s (instance i) that have a value or a
 * default, as "INDENT KEY = VALUE", KEY padded to width. */
static void
print_keys(const struct config *cfg, int s, size_t i, const char *indent,
           int width, FILE *out)
{
	char value[TEXT_MAX];

	for (size_t r = 0; r < config_nkeys; r++) {
		const struct config_key *k = &config_keys[r];

		if ((int)k->section != s || k->store == ST_NONE ||
		    (s == CS_CLUSTER && strcmp(k->key, "name") == 0))
			continue; /* the name heads the summary */
		/* A node's key without a value and without a default is
		 * off: it is left out. */
		if (s == CS_NODE &&
		    *config_key_str(k, config_key_base(cfg, k, i)) == NULL)
			continue;
		config_key_value(cfg, k, i, value, sizeof(value));
		fprintf(out, "%s%-*s = %s\n", indent, width, k->key, value);
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
	print_keys(cfg, CS_CLUSTER, 0, "  ", 11, out);
	if (cfg->sched_interval_ms != 0) {
		fprintf(out, "schedule:\n");
		print_keys(cfg, CS_SCHEDULE, 0, "  ", 11, out);
	}
	if (cfg->keep_last != 0 || cfg->keep_for_ms != 0) {
		fprintf(out, "retention:\n");
		print_keys(cfg, CS_RETENTION, 0, "  ", 11, out);
	}
	fprintf(out, "%zu node%s:\n", cfg->nnodes, plural(cfg->nnodes));
	for (size_t i = 0; i < cfg->nnodes; i++) {
		fprintf(out, "  %s\n", cfg->nodes[i].name);
		print_keys(cfg, CS_NODE, i, "    ", 8, out);
	}
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

/* 1 if key k of instance i has the same value in a and b.  A group is
 * the same by its gid, which is what the daemon gives its sockets. */
static int
same_value(const struct config *a, const struct config *b,
           const struct config_key *k, size_t i)
{
	const char *ba = config_key_base(a, k, i);
	const char *bb = config_key_base(b, k, i);

	if (k->type == CT_GROUP)
		return *(const long *)(ba + k->offset2) ==
		       *(const long *)(bb + k->offset2);
	if (k->store == ST_STR)
		return same_str(*config_key_str(k, (void *)ba),
		                *config_key_str(k, (void *)bb));
	return k->store == ST_NONE ||
	       config_key_num(k, ba) == config_key_num(k, bb);
}

static int
same_nodes(const struct config *a, const struct config *b)
{
	if (a->nnodes != b->nnodes)
		return 0;
	for (size_t i = 0; i < a->nnodes; i++)
		if (strcmp(a->nodes[i].name, b->nodes[i].name) != 0)
			return 0;
	return 1;
}

static int
same_channels(const struct config *a, const struct config *b)
{
	if (a->nchans != b->nchans)
		return 0;
	for (size_t i = 0; i < a->nchans; i++)
		if (a->chans[i].src != b->chans[i].src ||
		    a->chans[i].dst != b->chans[i].dst)
			return 0;
	return 1;
}

int
config_same_topology(const struct config *a, const struct config *b)
{
	if (!same_nodes(a, b) || !same_channels(a, b))
		return 0;
	for (size_t r = 0; r < config_nkeys; r++) {
		const struct config_key *k = &config_keys[r];
		size_t n =
		    k->section == CS_NODE ? a->nnodes
		    : k->section == CS_CLUSTER && (k->flags & KF_TOPOLOGY) ? 1
		                                                           : 0;

		for (size_t i = 0; i < n; i++)
			if (!same_value(a, b, k, i))
				return 0;
	}
	return 1;
}

/* "[cluster] max_message changed from 1048576 to 4096" into buf: key k
 * of instance i, from cur to next.  A text key's values are not quoted. */
static void
describe_change(const struct config *cur, const struct config *next,
                const struct config_key *k, size_t i, char *buf, size_t len)
{
	char w[WHERE_MAX], from[TEXT_MAX], to[TEXT_MAX];

	where(cur, k->section, i, w, sizeof(w));
	if (k->type == CT_TEXT) {
		snprintf(buf, len, "%s %s changed", w, k->key);
		return;
	}
	config_key_value(cur, k, i, from, sizeof(from));
	config_key_value(next, k, i, to, sizeof(to));
	snprintf(buf, len, "%s %s changed from %s to %s", w, k->key, from, to);
}

/* Whether the instances of section s match in cur and next, so that
 * their keys can be compared one by one: the same nodes, the same
 * conditions by name. */
static int
comparable(const struct config *cur, const struct config *next, int s)
{
	if (s == CS_NODE)
		return same_nodes(cur, next);
	if (s == CS_CONDITION) {
		if (cur->nconds != next->nconds)
			return 0;
		for (size_t i = 0; i < cur->nconds; i++)
			if (strcmp(cur->conds[i].name, next->conds[i].name))
				return 0;
	}
	return 1;
}

/* Calls fn for each value that differs between cur and next, of the keys
 * that a reload refuses (refused 1) or the others (0), with the change
 * described in text; returns how many. */
static int
each_change(const struct config *cur, const struct config *next, int refused,
            void (*fn)(const struct config_key *k, size_t i, const char *text,
                       void *arg),
            void *arg)
{
	char text[3 * TEXT_MAX];
	int n = 0;

	for (size_t r = 0; r < config_nkeys; r++) {
		const struct config_key *k = &config_keys[r];

		if ((k->reload == CR_REFUSE) != refused ||
		    k->store == ST_NONE || !comparable(cur, next, k->section))
			continue;
		for (size_t i = 0; i < instances(cur, k->section); i++) {
			if (same_value(cur, next, k, i))
				continue;
			describe_change(cur, next, k, i, text, sizeof(text));
			fn(k, i, text, arg);
			n++;
		}
	}
	return n;
}

/* Where each_change() reports: the callbacks, and for a reload the
 * configurations the applied values move between. */
struct notes {
	config_note_fn *applied, *kept;
	void *arg;
	struct config *cur, *next;
};

static void
note_refused(const struct config_key *k, size_t i, const char *text, void *arg)
{
	const struct notes *nt = arg;

	(void)k, (void)i;
	nt->kept(nt->arg, text);
}

int
config_reload_refusals(const struct config *cur, const struct config *next,
                       config_note_fn *fn, void *arg)
{
	struct notes nt = {.kept = fn, .arg = arg};
	int n = each_change(cur, next, 1, note_refused, &nt);

	if (!same_nodes(cur, next)) {
		fn(arg, "the nodes changed (their names, number or order)");
		n++;
	}
	if (!same_channels(cur, next)) {
		fn(arg, "the channels changed");
		n++;
	}
	return n;
}

/* Moves key k's value of instance i from next into cur; next gets cur's
 * old string, if any, to free. */
static void
take_value(struct config *cur, struct config *next, const struct config_key *k,
           size_t i)
{
	char *bc = config_key_base(cur, k, i),
	     *bn = config_key_base(next, k, i);

	if (k->store == ST_STR) {
		char **a = config_key_str(k, bc), **b = config_key_str(k, bn);
		char *old = *a;

		*a = *b;
		*b = old;
	} else {
		config_key_set_num(k, bc, config_key_num(k, bn));
	}
	if (k->type == CT_GROUP)
		*(long *)(bc + k->offset2) = *(long *)(bn + k->offset2);
}

static void
note_change(const struct config_key *k, size_t i, const char *text, void *arg)
{
	const struct notes *nt = arg;

	if (k->reload == CR_APPLY) {
		take_value(nt->cur, nt->next, k, i);
		nt->applied(nt->arg, text);
	} else {
		nt->kept(nt->arg, text);
	}
}

void
config_reload_apply(struct config *cur, struct config *next,
                    config_note_fn *applied, config_note_fn *kept, void *arg)
{
	struct notes nt = {applied, kept, arg, cur, next};

	if (!comparable(cur, next, CS_CONDITION))
		kept(arg, "the [condition] sections changed");
	(void)each_change(cur, next, 0, note_change, &nt);
}
