/*
 * cutjson.h - the JSON cutctl and cutlab write, built with jansson: one
 * set of dump flags for every document, strings that are always UTF-8,
 * and one shape for bytes that carry a content type (a node's recorded
 * state, a recorded message).
 *
 * Builders return a new reference, or NULL when out of memory.  Every
 * builder that takes values made by another (cj_payload(), and jansson's
 * json_pack() with "o", json_object_set_new(), json_array_append_new())
 * takes a NULL one as failure, so a document built from them is NULL
 * when any part of it failed, and cj_print() says so.
 */
#ifndef CUT_CUTJSON_H
#define CUT_CUTJSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/*
 * The dump flags of every document, so that the same data always gives
 * the same bytes: two spaces of indentation, members in the order they
 * were added (jansson has kept that order since 2.8; the flag says that
 * it is relied on), and reals with 17 significant digits, as many as a
 * double needs to read back unchanged (jansson keeps a number as a double,
 * not as its text: a state's 0.1 comes out as 0.10000000000000001).  No
 * JSON_ENSURE_ASCII: text other than ASCII is written as UTF-8.
 */
#define CJ_DUMP_FLAGS                                                          \
	(JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/*
 * How a state or message whose content type is JSON is read: any JSON
 * value, not only objects and arrays; "\u0000" in strings is kept; a
 * duplicate key is an error rather than the last one silently winning.
 * Integers beyond 64 bits and reals beyond a double's range do not load
 * either.  Whatever does not load is written in base64 (cj_payload()).
 */
#define CJ_LOAD_FLAGS                                                          \
	(JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES)

/* Sets member key of object o to v, which it takes, and returns o; if
 * that fails (o or v NULL, out of memory), releases both and returns
 * NULL.  Chains: o = cj_set(cj_set(o, "a", x), "b", y). */
json_t *cj_set(json_t *o, const char *key, json_t *v);

/* Appends v, which it takes, to array a and returns a; on failure
 * releases both and returns NULL. */
json_t *cj_append(json_t *a, json_t *v);

/* Writes doc to f with CJ_DUMP_FLAGS and a newline, and releases doc.
 * Returns 0, or -1 if doc is NULL (building it ran out of memory) or it
 * could not be written. */
int cj_print(FILE *f, json_t *doc);

/* s as a JSON string, or null when s is NULL.  A byte that is not part
 * of UTF-8 becomes U+FFFD, so that the document stays valid JSON: such
 * strings are names, ids and reasons, not data to keep byte for byte
 * (states and messages go through cj_payload()). */
json_t *cj_string(const char *s);

/* The len bytes at s as a JSON string, mended as by cj_string(). */
json_t *cj_stringn(const void *s, size_t len);

/* The len bytes at data as a JSON string in base64 (RFC 4648, with
 * padding). */
json_t *cj_base64(const void *data, size_t len);

/*
 * The len bytes at data, labelled content_type (NULL: none), as
 *   {"content_type": S, "encoding": "json", "data": VALUE}
 * when content_type is JSON (application/json or a +json suffix, see
 * content_type_is_json()) and the bytes load as one JSON value
 * (CJ_LOAD_FLAGS), embedded as that value; else as
 *   {"content_type": S|null, "encoding": "base64", "data": S}
 * with the bytes in base64, and, if content_type said JSON, also
 * "invalid_json": true and "json_error": S, jansson's reason.  data may
 * be NULL when len is 0.
 */
json_t *cj_payload(const char *content_type, const void *data, size_t len);

#endif /* CUT_CUTJSON_H */
