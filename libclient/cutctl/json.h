/*
 * json.h - a tiny JSON writer for cutctl: objects, arrays, strings with
 * full escaping, integers and booleans, pretty-printed with two-space
 * indentation.  It tracks commas and nesting so callers only say what
 * comes next.  Never installed.
 */
#ifndef CUT_JSON_H
#define CUT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	int count[JSON_MAX_DEPTH]; /* values written at each level */
	int after_key;             /* a key was written: no comma, no indent */
};

/* Starts writing one JSON document to f. */
void json_init(struct json *j, FILE *f);
/* Ends the document with a newline. */
void json_finish(struct json *j);

void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);

/* The key of the next member of the current object. */
void json_key(struct json *j, const char *key);

/* A string; NULL writes null. */
void json_string(struct json *j, const char *s);
/* len bytes as a string, escaped; they must be valid UTF-8. */
void json_string_n(struct json *j, const void *s, size_t len);
void json_uint(struct json *j, uint64_t v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);

/* Shorthands: a key and its value. */
void json_kv_string(struct json *j, const char *key, const char *s);
void json_kv_uint(struct json *j, const char *key, uint64_t v);
void json_kv_bool(struct json *j, const char *key, int v);

/*
 * Writes bytes as an object {"encoding": "utf-8", "data": "..."} when they
 * are valid UTF-8, else {"encoding": "base64", "data": "..."}.
 */
void json_payload(struct json *j, const void *data, size_t len);

/* 1 if the len bytes at s are valid UTF-8 (no overlongs, no surrogates). */
int utf8_valid(const void *s, size_t len);

#endif /* CUT_JSON_H */
