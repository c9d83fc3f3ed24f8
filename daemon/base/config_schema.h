/*
 * config_schema.h - the cluster file's schema: one table, one row per key,
 * and everything about a key is in its row: its section, name, type,
 * unit, range, default, what SIGHUP does with a change of it, a line of
 * documentation, and where struct config keeps it.
 *
 * What reads the table: the parser (config.c: which keys a section has,
 * how a value is checked and stored, the errors, which keys are required),
 * the defaults (a default is parsed as if the file had said it), the
 * summary of "cutd --check-config" (config_print), the SIGHUP policy
 * (config_reload_refusals, config_reload_apply, used by cutd.c), and the
 * reference in README.md and cutd(8), which "cutd
 * --print-config-reference" writes from it and a test compares with the
 * committed text.  Adding a key is adding a row (and its field in struct
 * config); a row the code must name (peer, tls_ca, ...) it finds with
 * config_key_find().
 */
#ifndef CUT_CONFIG_SCHEMA_H
#define CUT_CONFIG_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* The sections, in the order the reference lists them. */
enum config_section {
	CS_CLUSTER,
	CS_NODE,
	CS_CHANNELS,
	CS_SCHEDULE,
	CS_RETENTION,
	CS_CONDITION,
	CS_N
};

struct config_section_info {
	const char *name;  /* as in its header: "node" */
	const char *title; /* "[node NAME]" */
	int named;         /* its header names it: [node p0]; may repeat */
	const char *doc;   /* one line */
};

extern const struct config_section_info config_sections[CS_N];

/* No 0: a row of the table must say its type. */
enum config_type {
	CT_INT = 1,  /* a whole number from min to max */
	CT_SIZE,     /* a whole number of bytes from min to max */
	CT_DURATION, /* a number and a unit (ms s m h d): min to max ms */
	CT_BOOL,     /* true or false: choices, stored as the index */
	CT_ENUM,     /* one of choices, stored as its index */
	CT_STRING,   /* printable, no spaces, min to max characters */
	CT_PATH,     /* an absolute path */
	CT_GROUP,    /* a group of the host that loads the file */
	CT_PEER,     /* tcp://HOST:PORT or tls+tcp://HOST:PORT */
	CT_LOCAL,    /* the same or ipc:///PATH */
	CT_HTTP,     /* http://HOST:PORT */
	CT_NODE,     /* a node of the file, or rotate */
	CT_CHANNEL,  /* SRC -> DST, one per line: a list */
	CT_TEXT,     /* any text, not empty */
	CT_FILE      /* a path, relative to the cluster file's directory */
};

/* What SIGHUP does when the key's value changed (no 0: a row of the
 * table must say it). */
enum config_reload {
	CR_APPLY = 1, /* takes effect */
	CR_REFUSE,    /* the reload is refused; the running file stays */
	CR_RESTART    /* the reload goes on; the running value stays until a
	                 restart */
};

/* How struct config keeps the value. */
enum config_store {
	ST_NONE, /* not kept as a field (the channels) */
	ST_UINT, /* unsigned */
	ST_SIZE, /* size_t */
	ST_U64,  /* uint64_t */
	ST_INT,  /* int: the index of a CT_BOOL or CT_ENUM word */
	ST_LONG, /* long: CT_NODE, the node's index or SCHED_ROTATE */
	ST_STR   /* char *, malloc'd, NULL when not set */
};

/* config_key.flags */
#define KF_REQUIRED 0x01 /* a section without it is refused */
#define KF_REPEAT   0x02 /* may come more than once: a list */
#define KF_TRIM     0x04 /* trailing slashes of a path are dropped */
#define KF_DERIVED  0x08 /* def is a template (<run_dir>, <node>...) */
#define KF_TOPOLOGY 0x10 /* part of config_same_topology() */

struct config_key {
	enum config_section section;
	const char *key;
	enum config_type type;
	const char *unit;  /* of a number: "milliseconds", ...; or NULL */
	uint64_t min, max; /* of a number or a duration (ms), or a string's
	                      length */
	const char *const *choices; /* CT_BOOL, CT_ENUM: NULL-terminated */
	const char *def;            /* the default, as the file would say it, or
	                               NULL */
	const char *def_doc;        /* without def: what applies when the key is
	                               absent ("none"), or NULL */
	unsigned flags;             /* KF_* */
	enum config_reload reload;
	const char *doc; /* one line */
	enum config_store store;
	size_t offset;  /* of the field in struct config, config_node or
	                   config_condition, as the section has it */
	size_t offset2; /* CT_GROUP: of its gid (long) */
	size_t size;    /* of the field, checked against store */
};

extern const struct config_key config_keys[];
extern const size_t config_nkeys;

/* Every table the parser keeps per key holds this many. */
#define CONFIG_KEYS_MAX 48

/* The row of key in section, or NULL. */
const struct config_key *config_key_find(enum config_section section,
                                         const char *key);

/* The row's index in config_keys. */
size_t config_key_index(const struct config_key *k);

/* The struct a key of section keeps its value in: cfg itself, its node
 * i, or its condition i. */
void *config_key_base(const struct config *cfg, const struct config_key *k,
                      size_t i);

/* The value of a numeric key (ST_UINT to ST_LONG) in base. */
uint64_t config_key_num(const struct config_key *k, const void *base);
void config_key_set_num(const struct config_key *k, void *base, uint64_t v);
/* The field of an ST_STR key in base. */
char **config_key_str(const struct config_key *k, void *base);

/* Writes into buf what a value of k must be, as errors and the reference
 * say it ("a whole number from 100 to 3600000 (milliseconds)"). */
void config_key_form(const struct config_key *k, char *buf, size_t len);

/* Writes into buf k's default as the reference shows it: def, the
 * template of a derived one, "(def_doc)", or "required". */
void config_key_default(const struct config_key *k, char *buf, size_t len);

/* Writes into buf the value of k in cfg (node or condition i) as a file
 * would say it; a key not set, without a default, as "(def_doc)". */
void config_key_value(const struct config *cfg, const struct config_key *k,
                      size_t i, char *buf, size_t len);

/* "applied", "refused" or "at restart". */
const char *config_reload_name(enum config_reload r);

/* A duration in ms as the file would say it, in its largest exact unit:
 * 100ms, 10s, 1d. */
void config_duration_text(uint64_t ms, char *buf, size_t len);

/* Parses a duration: a whole number and a unit, ms, s, m, h or d, as in
 * 500ms, 10s, 5m.  A unit is required, so that nobody reads 10 as
 * seconds.  Returns 0 with milliseconds in *ret, or -1. */
int config_duration(const char *s, uint64_t *ret);

enum config_ref_format { CONFIG_REF_MARKDOWN, CONFIG_REF_MAN };

/* Writes the reference of every section and key to out, in Markdown (the
 * README) or mdoc (cutd.8).  Returns 0, or E_IO. */
int config_reference(FILE *out, enum config_ref_format format);

#endif /* CUT_CONFIG_SCHEMA_H */
