/*
 * log.h - the daemon's log, on stderr.
 *
 * In the base layer, below everything that logs: the coordinator (core/),
 * the judge (store/judge.c), cutd (shell/) and `cutlab sim` all
 * log through it, and every program gets the same lines (log.c).
 * The engine and the libraries below the coordinator return codes.
 * When stderr is the systemd journal (JOURNAL_STREAM names it) every line
 * starts with a "<N>" priority prefix that journald turns into a level;
 * otherwise lines carry a readable level word.
 */
#ifndef CUT_LOG_H
#define CUT_LOG_H

#include <syslog.h>

/* Sets the highest priority logged (LOG_ERR .. LOG_DEBUG) and detects the
 * journal.  Safe to call again, e.g. after a reload. */
void log_init(int max_priority);

/* Parses "error", "warning", "notice", "info" or "debug"; -1 if none. */
int log_level_parse(const char *name);

/* Logs one line at priority pri (a LOG_* value). */
void log_msg(int pri, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_err(...)    log_msg(LOG_ERR, __VA_ARGS__)
#define log_warnx(...)  log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)   log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)  log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* CUT_LOG_H */
