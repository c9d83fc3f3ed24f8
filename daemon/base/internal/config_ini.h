/*
 * config_ini.h - the INI layer under the cluster file, internal to
 * cutbase (config.c): inih, asked about one line at a time so that it
 * says what a whole-file parse keeps to itself.
 *
 * It gives the line of every section header and key, reports section
 * headers even when no key follows them, reports every syntax error (a
 * whole-file parse of inih returns only the first), and collects problems,
 * with their lines, into one list that config.c adds its own to.  It also
 * reads the plain scalar values (words, numbers); config.c gives them
 * meaning.
 */
#ifndef CUT_CONFIG_INI_H
#define CUT_CONFIG_INI_H

#include "config.h"

/* The problems found in one file, in the order found. */
struct config_ini_errors {
	const char *path; /* borrowed */
	struct {
		int line; /* 0 when no line applies */
		char *msg;
	} errs[CONFIG_MAX_ERRORS];
	int n;
	int truncated; /* more problems than fit */
	int oom;       /* a problem or a result was lost for want of memory */
};

/* What config_ini_parse() calls, in file order.  Strings are borrowed for
 * the duration of the call. */
struct config_ini_handler {
	/* A section header; name has its spaces trimmed.  name is NULL for
	 * a broken header (already reported): what follows belongs to no
	 * section. */
	void (*section)(void *user, const char *name, int line);
	/* A "name = value" line; both trimmed, name not empty. */
	void (*key)(void *user, const char *name, const char *value, int line);
};

/* Records a problem at line (0: the file as a whole). */
void config_ini_report(struct config_ini_errors *e, int line, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));

/*
 * Reads the file at e->path and calls h with user for each section header
 * and key.  Syntax problems go to e and their lines are skipped.  Stores
 * the number of lines in *ret_nlines.  Returns 0 when the file was read
 * (whatever its problems), E_IO if it could not be, E_CONFIG
 * if it is too large, E_NOMEM; all but E_NOMEM are explained
 * in e.
 */
int config_ini_parse(struct config_ini_errors *e,
                     const struct config_ini_handler *h, void *user,
                     int *ret_nlines);

/* Returns the problems in e as a malloc'd text, sorted by line, one
 * "FILE:LINE: message\n" each; NULL if out of memory. */
char *config_ini_error_text(struct config_ini_errors *e);

/* Frees what e holds, not e itself. */
void config_ini_errors_fini(struct config_ini_errors *e);

/* Strips spaces and tabs from both ends of s, in place; returns the new
 * start. */
char *config_ini_trim(char *s);

/* Returns 1 if s is 1 or more printable ASCII characters without spaces,
 * else 0. */
int config_ini_word(const char *s);

/* Parses s as a decimal number from lo to hi: digits only, no sign, no
 * spaces.  Returns 0 and stores it in *ret, or returns -1. */
int config_ini_uint(const char *s, unsigned long lo, unsigned long hi,
                    unsigned long *ret);

#endif /* CUT_CONFIG_INI_H */
