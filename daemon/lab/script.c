/*
 * script.c - parses and runs cutlab scenario scripts, a line at a time.
 *
 * Every statement is checked before it touches the lab, and the first bad
 * line stops the run with its line number: a script is an exact replay or
 * nothing.
 */
#include "script.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 8
#define MAX_LINE  1024

#define NEEDS_COUNTED "the unaligned cut needs counted markers, not classic"

struct parser {
	const char *name;
	size_t line;
	enum engine_mode mode;
	int mode_set;
	enum engine_cut cut;
	int cut_set;
	int queued_apps, apps_set;
	struct lab *lab; /* created at the first node */
	char *err;
	size_t errlen;
};

static int
fail(struct parser *p, int code, const char *fmt, ...)
{
	int len = snprintf(p->err, p->errlen, "%s:%zu: ", p->name, p->line);
	va_list ap;

	if (len >= 0 && (size_t)len < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + len, p->errlen - (size_t)len, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* Splits line in place into at most MAX_WORDS words, dropping comments. */
static size_t
split(char *line, char **words)
{
	size_t n = 0;
	char *hash = strchr(line, '#');

	if (hash != NULL)
		*hash = '\0';
	for (char *w = strtok(line, " \t\r\n"); w != NULL;
	     w = strtok(NULL, " \t\r\n")) {
		if (n == MAX_WORDS)
			return MAX_WORDS + 1;
		words[n++] = w;
	}
	return n;
}

static int
number(const char *s, long long min, long long max, long long *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return -1;
	*ret = v;
	return 0;
}

static int
need_lab(struct parser *p)
{
	int rv;

	if (p->lab != NULL)
		return 0;
	if ((rv = lab_new(p->mode, &p->lab)) != 0)
		return rv;
	if ((rv = lab_set_cut(p->lab, p->cut)) != 0 ||
	    (rv = lab_set_queued_apps(p->lab, p->queued_apps)) != 0) {
		lab_free(p->lab);
		p->lab = NULL;
	}
	return rv;
}

static int
do_markers(struct parser *p, char **w, size_t n)
{
	if (n != 2)
		return fail(p, E_INVAL, "usage: markers classic|counted");
	if (p->lab != NULL || p->mode_set)
		return fail(p, E_ORDER,
		            "markers must come once, before the first node");
	if (strcmp(w[1], "classic") == 0) {
		if (p->cut_set && p->cut == ENGINE_CUT_UNALIGNED)
			return fail(p, E_INVAL, NEEDS_COUNTED);
		p->mode = ENGINE_CLASSIC;
	} else if (strcmp(w[1], "counted") == 0)
		p->mode = ENGINE_COUNTED;
	else
		return fail(p, E_INVAL,
		            "unknown marker mode '%s' (classic or counted)",
		            w[1]);
	p->mode_set = 1;
	return 0;
}

static int
do_cut(struct parser *p, char **w, size_t n)
{
	if (n != 2)
		return fail(p, E_INVAL, "usage: cut aligned|unaligned");
	if (p->lab != NULL || p->cut_set)
		return fail(p, E_ORDER,
		            "cut must come once, before the first node");
	if (strcmp(w[1], "aligned") == 0)
		p->cut = ENGINE_CUT_ALIGNED;
	else if (strcmp(w[1], "unaligned") == 0) {
		if (p->mode != ENGINE_COUNTED)
			return fail(p, E_INVAL, NEEDS_COUNTED);
		p->cut = ENGINE_CUT_UNALIGNED;
	} else
		return fail(p, E_INVAL,
		            "unknown cut '%s' (aligned or unaligned)", w[1]);
	p->cut_set = 1;
	return 0;
}

static int
do_apps(struct parser *p, char **w, size_t n)
{
	if (n != 2)
		return fail(p, E_INVAL, "usage: apps immediate|queued");
	if (p->lab != NULL || p->apps_set)
		return fail(p, E_ORDER,
		            "apps must come once, before the first node");
	if (strcmp(w[1], "immediate") == 0)
		p->queued_apps = 0;
	else if (strcmp(w[1], "queued") == 0)
		p->queued_apps = 1;
	else
		return fail(p, E_INVAL,
		            "unknown apps '%s' (immediate or queued)", w[1]);
	p->apps_set = 1;
	return 0;
}

static int
do_node(struct parser *p, char **w, size_t n)
{
	long long tokens;
	size_t dummy;
	int rv;

	if (n != 3)
		return fail(p, E_INVAL, "usage: node NAME TOKENS");
	if (number(w[2], 0, INT64_MAX / 1024, &tokens) != 0)
		return fail(p, E_INVAL, "bad token count '%s'", w[2]);
	/* Only the caller's default cut can meet classic markers here. */
	if (p->lab == NULL && p->cut == ENGINE_CUT_UNALIGNED &&
	    p->mode != ENGINE_COUNTED)
		return fail(p, E_INVAL,
		            "%s: declare 'cut aligned' to run these markers",
		            NEEDS_COUNTED);
	if ((rv = need_lab(p)) != 0)
		return fail(p, rv, "%s", err_str(rv));
	if (lab_node(p->lab, w[1], &dummy) == 0)
		return fail(p, E_INVAL, "node %s declared twice", w[1]);
	if ((rv = lab_add_node(p->lab, w[1], tokens)) == E_ORDER)
		return fail(p, rv, "node %s declared after the first event",
		            w[1]);
	if (rv != 0)
		return fail(p, rv, "bad node name '%s'", w[1]);
	return 0;
}

/* Checks that w[1] and w[2] name nodes, and that they are distinct. */
static int
two_nodes(struct parser *p, char **w)
{
	size_t i;

	if (p->lab == NULL || lab_node(p->lab, w[1], &i) != 0)
		return fail(p, E_INVAL, "unknown node %s", w[1]);
	if (lab_node(p->lab, w[2], &i) != 0)
		return fail(p, E_INVAL, "unknown node %s", w[2]);
	return 0;
}

static int
do_channel(struct parser *p, char **w, size_t n)
{
	size_t dummy;
	int rv;

	if (n != 3)
		return fail(p, E_INVAL, "usage: channel SRC DST");
	if ((rv = two_nodes(p, w)) != 0)
		return rv;
	if (strcmp(w[1], w[2]) == 0)
		return fail(p, E_INVAL, "channel from %s to itself", w[1]);
	if (lab_channel(p->lab, w[1], w[2], &dummy) == 0)
		return fail(p, E_INVAL, "channel %s -> %s declared twice",
		            w[1], w[2]);
	if ((rv = lab_add_channel(p->lab, w[1], w[2])) == E_ORDER)
		return fail(p, rv, "channel declared after the first event");
	if (rv != 0)
		return fail(p, rv, "%s", err_str(rv));
	return 0;
}

/* Reports an event the lab refused, in the script's terms. */
static int
event_error(struct parser *p, int rv, char **w)
{
	switch (rv) {
	case E_NOTSC:
		return fail(p, rv,
		            "the channel graph is not strongly "
		            "connected: some node would never see a "
		            "marker");
	case E_ORDER:
		return fail(p, rv, "no nodes declared");
	case E_NOCHAN:
		return fail(p, rv, "no channel %s -> %s", w[1], w[2]);
	case E_FUNDS:
		return fail(p, rv, "%s has fewer than %s tokens", w[1], w[3]);
	}
	return fail(p, rv, "%s", err_str(rv));
}

static int
do_send(struct parser *p, char **w, size_t n)
{
	long long amount;
	int rv;

	if (n != 4)
		return fail(p, E_INVAL, "usage: send SRC DST AMOUNT");
	if ((rv = two_nodes(p, w)) != 0)
		return rv;
	if (number(w[3], 1, INT64_MAX / 1024, &amount) != 0)
		return fail(p, E_INVAL, "bad amount '%s'", w[3]);
	if ((rv = lab_send(p->lab, w[1], w[2], amount)) != 0)
		return event_error(p, rv, w);
	return 0;
}

static int
do_snapshot(struct parser *p, char **w, size_t n)
{
	size_t v;
	int rv;

	if (n != 2)
		return fail(p, E_INVAL, "usage: snapshot NODE");
	if (p->lab == NULL || lab_node(p->lab, w[1], &v) != 0)
		return fail(p, E_INVAL, "unknown node %s", w[1]);
	if ((rv = lab_snapshot(p->lab, w[1], NULL)) != 0)
		return event_error(p, rv, w);
	return 0;
}

static int
do_deliver(struct parser *p, char **w, size_t n)
{
	long long k = 1;
	size_t ch;
	int rv;

	if (n != 3 && n != 4)
		return fail(p, E_INVAL, "usage: deliver SRC DST [K]");
	if ((rv = two_nodes(p, w)) != 0)
		return rv;
	if (n == 4 && number(w[3], 1, 1LL << 40, &k) != 0)
		return fail(p, E_INVAL, "bad position '%s'", w[3]);
	if ((rv = lab_start(p->lab)) != 0 ||
	    (rv = lab_channel(p->lab, w[1], w[2], &ch)) != 0)
		return event_error(p, rv, w);
	if ((size_t)k > lab_queue_len(p->lab, ch)) {
		if (lab_queue_len(p->lab, ch) == 0)
			return fail(p, E_EMPTY, "channel %s -> %s is empty",
			            w[1], w[2]);
		return fail(p, E_EMPTY,
		            "channel %s -> %s holds %zu frames, not %lld", w[1],
		            w[2], lab_queue_len(p->lab, ch), k);
	}
	if ((rv = lab_deliver(p->lab, ch, (size_t)k)) == E_SEQ)
		return fail(
		    p, rv,
		    "frame %lld of %s -> %s is a message that would pass "
		    "an older one: the unaligned cut needs each "
		    "channel's messages in order",
		    k, w[1], w[2]);
	if (rv != 0)
		return event_error(p, rv, w);
	return 0;
}

static int
do_take(struct parser *p, char **w, size_t n)
{
	long long k = 1;
	size_t v, len;
	int rv;

	if (n != 2 && n != 3)
		return fail(p, E_INVAL, "usage: take NODE [N]");
	if (p->lab == NULL || lab_node(p->lab, w[1], &v) != 0)
		return fail(p, E_INVAL, "unknown node %s", w[1]);
	if (n == 3 && number(w[2], 1, 1LL << 40, &k) != 0)
		return fail(p, E_INVAL, "bad count '%s'", w[2]);
	if (!lab_queued_apps(p->lab))
		return fail(p, E_INVAL,
		            "take needs 'apps queued': applications take "
		            "everything at once");
	if ((rv = lab_start(p->lab)) != 0)
		return event_error(p, rv, w);
	if ((size_t)k > (len = lab_down_len(p->lab, v))) {
		if (len == 0)
			return fail(p, E_EMPTY,
			            "nothing is queued for %s's application",
			            w[1]);
		return fail(p, E_EMPTY,
		            "%s's application has %zu items queued, not %lld",
		            w[1], len, k);
	}
	for (; k > 0; k--)
		if ((rv = lab_take(p->lab, v)) != 0)
			return event_error(p, rv, w);
	return 0;
}

static int
do_drain(struct parser *p, char **w, size_t n)
{
	size_t moved = 1;
	int rv;

	(void)w;
	if (n != 1)
		return fail(p, E_INVAL, "usage: drain");
	if (p->lab == NULL)
		return fail(p, E_ORDER, "no nodes declared");
	if ((rv = lab_start(p->lab)) != 0)
		return event_error(p, rv, w);
	while (moved) {
		moved = 0;
		for (size_t ch = 0; ch < lab_channels(p->lab); ch++) {
			if (lab_queue_len(p->lab, ch) == 0)
				continue;
			if ((rv = lab_deliver(p->lab, ch, 1)) != 0)
				return event_error(p, rv, w);
			moved++;
		}
		for (size_t v = 0; v < lab_nodes(p->lab); v++)
			for (; lab_down_len(p->lab, v) > 0; moved++)
				if ((rv = lab_take(p->lab, v)) != 0)
					return event_error(p, rv, w);
	}
	return 0;
}

static const struct {
	const char *word;
	int (*fn)(struct parser *, char **, size_t);
} statements[] = {
    {"markers", do_markers},   {"cut", do_cut},         {"apps", do_apps},
    {"node", do_node},         {"channel", do_channel}, {"send", do_send},
    {"snapshot", do_snapshot}, {"deliver", do_deliver}, {"take", do_take},
    {"drain", do_drain},
};

static int
statement(struct parser *p, char **w, size_t n)
{
	if (n > MAX_WORDS)
		return fail(p, E_INVAL, "too many words");
	for (size_t i = 0; i < sizeof(statements) / sizeof(statements[0]); i++)
		if (strcmp(w[0], statements[i].word) == 0)
			return statements[i].fn(p, w, n);
	return fail(p, E_INVAL, "unknown statement '%s'", w[0]);
}

int
script_run(FILE *in, const char *name, struct lab **ret_lab, char *err,
           size_t errlen)
{
	return script_run_cut(in, name, ENGINE_CUT_ALIGNED, ret_lab, err,
	                      errlen);
}

int
script_run_cut(FILE *in, const char *name, enum engine_cut cut,
               struct lab **ret_lab, char *err, size_t errlen)
{
	struct parser p = {.name = name,
	                   .mode = ENGINE_COUNTED,
	                   .cut = cut,
	                   .err = err,
	                   .errlen = errlen};
	char line[MAX_LINE + 2], *w[MAX_WORDS + 1];
	int rv = 0;

	while (fgets(line, sizeof(line), in) != NULL) {
		size_t n;

		p.line++;
		if (strlen(line) > MAX_LINE) {
			rv = fail(&p, E_INVAL, "line longer than %d bytes",
			          MAX_LINE);
			goto out;
		}
		if ((n = split(line, w)) == 0)
			continue;
		if ((rv = statement(&p, w, n)) != 0)
			goto out;
	}
	if (ferror(in)) {
		rv = fail(&p, E_INVAL, "read error");
		goto out;
	}
	if (p.lab == NULL) {
		rv = fail(&p, E_ORDER, "no nodes declared");
		goto out;
	}
	if ((rv = lab_start(p.lab)) != 0) {
		rv = event_error(&p, rv, w);
		goto out;
	}
	*ret_lab = p.lab;
	return 0;
out:
	lab_free(p.lab);
	return rv;
}
