/*
 * log.c - leveled lines on stderr, with journald prefixes when the journal
 * is listening.
 *
 * The two settings are the program's own and change only through
 * log_init(), from its main thread; every log call only reads them.
 * cutd sets them from --log-level, `cutlab sim` from --verbose.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int max_pri = LOG_INFO;
static int journal;

static const char *const names[] = {"emerg",   "alert",  "crit", "error",
                                    "warning", "notice", "info", "debug"};

/* JOURNAL_STREAM is "DEV:INODE" of the journal's socket; it applies only
 * if stderr is still that socket (not redirected by a child's shell). */
static int
stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (env == NULL || sscanf(env, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(2, &st) != 0)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void
log_init(int max_priority)
{
	max_pri = max_priority;
	journal = stderr_is_journal();
}

int
log_level_parse(const char *name)
{
	for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

void
log_msg(int pri, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (pri > max_pri)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (journal)
		fprintf(stderr, "<%d>%s\n", pri, line);
	else
		fprintf(stderr, "cutd: %s: %s\n", names[pri & 7], line);
}
