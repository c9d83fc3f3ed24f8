/*
 * config_ini.c - the cluster file through inih, with the line of every
 * section header and key, and every syntax error (see config_ini.h).
 *
 * inih's whole-file parse tells its handler only of keys: Debian builds
 * libinih without INI_CALL_HANDLER_ON_NEW_SECTION, so a section header
 * goes unreported, and with it its line and any section that has no keys
 * (an empty [node p2] would vanish instead of being refused); and a parse
 * returns only the line of its first syntax error.  So inih is given one
 * line at a time: ini_parse_string() of the line followed by a probe key,
 * and inih says what the line is, by its own grammar (comments, inline
 * comments, the byte order mark, '=' and ':', spaces around names and
 * values, headers and the names in them):
 *   - a key: the handler is called for line 1 of the parse;
 *   - a section header: the probe, line 2, arrives in a section;
 *   - a syntax error: the parse fails at line 1;
 *   - otherwise a blank line or a comment.
 * This file does only what inih cannot: it numbers the file's lines (it
 * splits at '\n', as fgets() does for inih), keeps the lines inih cannot
 * take (longer than its line buffer, whose tail it would read as another
 * line, or holding a NUL, where its strings end) away from it, and keeps
 * track of which section each key is in.  A line parsed alone is never
 * the continuation of the one above (inih's multi-line values would make
 * an indented key part of the value before it), and a byte order mark is
 * skipped at the start of any line, not only the first.  inih keeps 49
 * bytes of a section name (its MAX_SECTION), so an overlong header is
 * named cut short in messages; no valid one is that long.
 *
 * INI_HANDLER_LINENO: Debian's libinih passes the line number to the
 * handler, though its ini.h defaults the macro to 0 and inih.pc does not
 * set it.  The top-level CMakeLists.txt checks that the library does; the
 * handler tells the line's key from the probe by it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define INI_HANDLER_LINENO 1
#include <ini.h>

#include "config_ini.h"

#define MAX_FILE     (1024 * 1024)
#define LINE_MAX_LEN (INI_MAX_LINE - 2) /* room for '\n' and NUL */
/* Line 2 of every parse: its section is the one line 1 opened, if any. */
#define PROBE "probe = 1\n"

/* What inih made of one line. */
struct verdict {
	const struct config_ini_handler *h;
	struct config_ini_errors *e;
	void *user;
	int lineno;                 /* in the file */
	int key;                    /* the handler was called for it */
	char section[INI_MAX_LINE]; /* the probe's section */
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

/* Reads the file at e->path whole into *ret_buf (caller frees) and its
 * length into *ret_len. */
static int
read_file(struct config_ini_errors *e, char **ret_buf, size_t *ret_len)
{
	FILE *f = fopen(e->path, "r");
	int rv = 0;

	*ret_buf = NULL;
	if (f == NULL) {
		config_ini_report(e, 0, "cannot open the cluster file: %s",
		                  strerror(errno));
		return E_IO;
	}
	if ((*ret_buf = malloc(MAX_FILE + 1)) == NULL) {
		e->oom = 1;
		rv = E_NOMEM;
	} else if ((*ret_len = fread(*ret_buf, 1, MAX_FILE + 1, f)),
	           ferror(f)) {
		config_ini_report(e, 0, "cannot read the cluster file: %s",
		                  strerror(errno));
		rv = E_IO;
	} else if (*ret_len > MAX_FILE) {
		config_ini_report(e, 0, "the file is larger than 1 MiB");
		rv = E_CONFIG;
	}
	fclose(f);
	return rv;
}

/* inih's handler: line 1 is the line's key, line 2 the probe. */
static int
handler(void *user, const char *section, const char *name, const char *value,
        int lineno)
{
	struct verdict *v = user;

	if (lineno != 1) {
		snprintf(v->section, sizeof(v->section), "%s", section);
		return 1;
	}
	v->key = 1;
	if (*name == '\0')
		config_ini_report(v->e, v->lineno,
		                  "missing key name before '='");
	else
		v->h->key(v->user, name, value, v->lineno);
	return 1;
}

/* 1 if the len bytes at s begin with '[' after any spaces: what inih
 * makes a header, or a syntax error if the ']' is missing. */
static int
bracket(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i < len && s[i] == '[';
}

/* Gives line v->lineno, the len bytes at s, to inih, and passes on what
 * it is. */
static void
parse_line(struct verdict *v, const char *s, size_t len)
{
	char text[LINE_MAX_LEN + 1 + sizeof(PROBE)];
	int rv;

	memcpy(text, s, len);
	memcpy(text + len, "\n" PROBE, sizeof("\n" PROBE));
	v->key = 0;
	v->section[0] = '\0';
	if ((rv = ini_parse_string(text, handler, v)) == -2) {
		v->e->oom = 1;
	} else if (rv != 0) {
		/* inih says that the line is bad, not why. */
		if (bracket(s, len)) {
			config_ini_report(v->e, v->lineno,
			                  "section header is missing its "
			                  "closing ']'");
			v->h->section(v->user, NULL, v->lineno);
		} else {
			config_ini_report(v->e, v->lineno,
			                  "expected 'key = value', a [section] "
			                  "header or a comment");
		}
	} else if (!v->key && (v->section[0] != '\0' || bracket(s, len))) {
		/* A header, named by the probe's section.  "[]" leaves the
		 * probe in section "" as a comment would, hence bracket(). */
		v->h->section(v->user, config_ini_trim(v->section), v->lineno);
	}
}

/* Reports line lineno if inih cannot take it; returns 0 if it can. */
static int
check_line(struct verdict *v, const char *s, size_t len)
{
	if (len > LINE_MAX_LEN)
		config_ini_report(v->e, v->lineno,
		                  "line is longer than %d characters",
		                  LINE_MAX_LEN);
	else if (memchr(s, '\0', len) != NULL)
		config_ini_report(v->e, v->lineno, "line contains a NUL byte");
	else
		return 0;
	/* What follows a header that is not read belongs to no section. */
	if (bracket(s, len))
		v->h->section(v->user, NULL, v->lineno);
	return -1;
}

int
config_ini_parse(struct config_ini_errors *e,
                 const struct config_ini_handler *h, void *user,
                 int *ret_nlines)
{
	struct verdict v = {.h = h, .e = e, .user = user};
	size_t off, end, len = 0;
	const char *nl;
	char *buf;
	int rv;

	if ((rv = read_file(e, &buf, &len)) == 0) {
		for (off = 0; off < len; off = end + 1) {
			nl = memchr(buf + off, '\n', len - off);
			end = nl != NULL ? (size_t)(nl - buf) : len;
			v.lineno++;
			if (check_line(&v, buf + off, end - off) == 0)
				parse_line(&v, buf + off, end - off);
		}
		*ret_nlines = v.lineno;
	}
	free(buf);
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
