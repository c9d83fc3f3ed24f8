/*
 * config_ini.c - inih with line numbers, section events and every syntax
 * error (see config_ini.h).
 *
 * inih is fed by our own reader, one line per call, which is how we know
 * the line of every handler call (Debian's libinih is built with
 * INI_HANDLER_LINENO but its header and inih.pc do not say so, so we do
 * not rely on it).  The reader also sees section headers, which inih does
 * not report, and strips leading spaces, which inih would otherwise take
 * for the continuation of the previous value.
 *
 * inih reports only the first syntax error of a parse.  check_syntax()
 * therefore parses repeatedly with key handling off, blanking each bad
 * line inih names, until the file parses cleanly; the real pass then sees
 * only good lines.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "config_ini.h"

#define MAX_FILE     (1024 * 1024)
#define LINE_MAX_LEN (INI_MAX_LINE - 2) /* room for '\n' and NUL */

struct line {
	size_t off, len; /* after leading spaces, without the newline */
	int bad;         /* reported already: the reader hands out a blank */
};

struct reading {
	struct config_ini_errors *e;
	const struct config_ini_handler *h;
	void *user;
	char *buf;
	size_t len;
	struct line *lines;
	int nlines;
	int cur;   /* lines handed to inih so far = line of the last one */
	int final; /* the real pass: pass sections and keys on */
};

void
config_ini_report(struct config_ini_errors *e, int line, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n;

	if (e->n == CONFIG_MAX_ERRORS) {
		e->truncated = 1;
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (msg = malloc((size_t)n + 1)) == NULL) {
		e->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	va_end(ap);
	e->errs[e->n].line = line;
	e->errs[e->n++].msg = msg;
}

char *
config_ini_trim(char *s)
{
	char *end;

	s += strspn(s, " \t");
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

int
config_ini_word(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e)
			return 0;
	return 1;
}

int
config_ini_uint(const char *s, unsigned long lo, unsigned long hi,
                unsigned long *ret)
{
	unsigned long v = 0;

	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > hi)
			return -1;
	}
	if (v < lo)
		return -1;
	*ret = v;
	return 0;
}

/* Reads the file whole: the syntax passes go over it several times. */
static int
read_file(struct reading *r)
{
	FILE *f = fopen(r->e->path, "r");
	int rv = 0;

	if (f == NULL) {
		config_ini_report(r->e, 0, "cannot open the cluster file: %s",
		                  strerror(errno));
		return E_IO;
	}
	if ((r->buf = malloc(MAX_FILE + 1)) == NULL) {
		r->e->oom = 1;
		rv = E_NOMEM;
	} else if ((r->len = fread(r->buf, 1, MAX_FILE + 1, f)), ferror(f)) {
		config_ini_report(r->e, 0, "cannot read the cluster file: %s",
		                  strerror(errno));
		rv = E_IO;
	} else if (r->len > MAX_FILE) {
		config_ini_report(r->e, 0, "the file is larger than 1 MiB");
		rv = E_CONFIG;
	}
	fclose(f);
	return rv;
}

/* Returns 0 if inih can take line l, else reports why. */
static int
check_line(struct reading *r, const struct line *l, int lineno)
{
	if (l->len > LINE_MAX_LEN)
		config_ini_report(r->e, lineno,
		                  "line is longer than %d characters",
		                  LINE_MAX_LEN);
	else if (memchr(r->buf + l->off, '\0', l->len) != NULL)
		config_ini_report(r->e, lineno, "line contains a NUL byte");
	else
		return 0;
	return -1;
}

/* Indexes the lines, past a UTF-8 byte order mark. */
static int
split_lines(struct reading *r)
{
	size_t off = 0, i;
	int n = 0;

	for (i = 0; i < r->len; i++)
		n += r->buf[i] == '\n';
	if ((r->lines = calloc((size_t)n + 1, sizeof(*r->lines))) == NULL) {
		r->e->oom = 1;
		return E_NOMEM;
	}
	if (r->len >= 3 && memcmp(r->buf, "\xef\xbb\xbf", 3) == 0)
		off = 3;
	while (off < r->len) {
		struct line *l = &r->lines[r->nlines++];
		const char *nl = memchr(r->buf + off, '\n', r->len - off);
		size_t end = nl ? (size_t)(nl - r->buf) : r->len;

		off += strspn(r->buf + off, " \t");
		l->off = off < end ? off : end;
		l->len = end - l->off;
		l->bad = check_line(r, l, r->nlines) != 0;
		off = end + 1;
	}
	return 0;
}

/* Passes on a header line that inih accepted: '[' name ']' ... */
static void
section(struct reading *r, const char *s, size_t len)
{
	char name[INI_MAX_LINE];
	const char *end = memchr(s, ']', len);

	len = end ? (size_t)(end - s) - 1 : 0;
	memcpy(name, s + 1, len);
	name[len] = '\0';
	r->h->section(r->user, config_ini_trim(name), r->cur);
}

/* inih's reader: one line per call; bad lines come out blank. */
static char *
reader(char *str, int num, void *stream)
{
	struct reading *r = stream;
	const struct line *l;
	const char *s;

	if (r->cur == r->nlines)
		return NULL;
	l = &r->lines[r->cur++];
	s = r->buf + l->off;
	if (l->bad || l->len + 2 > (size_t)num) {
		if (r->final && l->len > 0 && s[0] == '[')
			r->h->section(r->user, NULL, r->cur);
		memcpy(str, "\n", 2);
		return str;
	}
	memcpy(str, s, l->len);
	memcpy(str + l->len, "\n", 2);
	if (r->final && l->len > 0 && s[0] == '[')
		section(r, s, l->len);
	return str;
}

/* inih's handler, on the line the reader handed out last. */
static int
handler(void *user, const char *section, const char *name, const char *value)
{
	struct reading *r = user;

	(void)section; /* the reader passed it on already */
	if (!r->final)
		return 1;
	if (*name == '\0')
		config_ini_report(r->e, r->cur, "missing key name before '='");
	else
		r->h->key(r->user, name, value, r->cur);
	return 1;
}

static void
check_syntax(struct reading *r)
{
	int rv;

	r->final = 0;
	while (!r->e->truncated) {
		r->cur = 0;
		rv = ini_parse_stream(reader, r, handler, r);
		if (rv == -2)
			r->e->oom = 1;
		if (rv <= 0 || rv > r->nlines || r->lines[rv - 1].bad)
			return;
		r->lines[rv - 1].bad = 1;
		if (r->buf[r->lines[rv - 1].off] == '[')
			config_ini_report(r->e, rv,
			                  "section header is missing "
			                  "its closing ']'");
		else
			config_ini_report(r->e, rv,
			                  "expected 'key = value', a [section] "
			                  "header or a comment");
	}
}

int
config_ini_parse(struct config_ini_errors *e,
                 const struct config_ini_handler *h, void *user,
                 int *ret_nlines)
{
	struct reading r = {.e = e, .h = h, .user = user};
	int rv;

	if ((rv = read_file(&r)) == 0 && (rv = split_lines(&r)) == 0) {
		check_syntax(&r);
		r.final = 1;
		r.cur = 0;
		if (ini_parse_stream(reader, &r, handler, &r) == -2)
			e->oom = 1;
		*ret_nlines = r.nlines;
	}
	free(r.lines);
	free(r.buf);
	return rv;
}

static void
sort_errors(struct config_ini_errors *e)
{
	int i, j;

	for (i = 1; i < e->n; i++) {
		int line = e->errs[i].line;
		char *msg = e->errs[i].msg;

		for (j = i; j > 0 && e->errs[j - 1].line > line; j--)
			e->errs[j] = e->errs[j - 1];
		e->errs[j].line = line;
		e->errs[j].msg = msg;
	}
}

char *
config_ini_error_text(struct config_ini_errors *e)
{
	char *text = NULL;
	size_t size;
	FILE *f = open_memstream(&text, &size);
	int i;

	if (f == NULL)
		return NULL;
	sort_errors(e);
	for (i = 0; i < e->n; i++) {
		if (e->errs[i].line > 0)
			fprintf(f, "%s:%d: %s\n", e->path, e->errs[i].line,
			        e->errs[i].msg);
		else
			fprintf(f, "%s: %s\n", e->path, e->errs[i].msg);
	}
	if (e->truncated)
		fprintf(f, "%s: too many errors; only the first %d are shown\n",
		        e->path, CONFIG_MAX_ERRORS);
	if (e->oom)
		fprintf(f, "%s: out of memory\n", e->path);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

void
config_ini_errors_fini(struct config_ini_errors *e)
{
	int i;

	for (i = 0; i < e->n; i++)
		free(e->errs[i].msg);
	e->n = 0;
}
