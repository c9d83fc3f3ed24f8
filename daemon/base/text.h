/*
 * text.h - which bytes are text: the one UTF-8 validator and the one
 * test of a JSON content type, shared by the daemon's store (what it
 * stores as SQLite TEXT), cutctl (what it prints as text) and the JSON
 * writer (cutjson.h: what it embeds as JSON, and how it mends strings
 * that are not UTF-8).
 */
#ifndef CUT_TEXT_H
#define CUT_TEXT_H

#include <stddef.h>

/*
 * The length of the longest prefix of the len bytes at s that is UTF-8 as
 * RFC 3629 defines it: no overlong forms, no surrogates (U+D800..U+DFFF),
 * nothing past U+10FFFF, no sequence cut short.  U+0000 is a character
 * like any other: callers that store C strings check for NUL themselves.
 */
size_t utf8_span(const void *s, size_t len);

/* 1 if the len bytes at s are UTF-8 (utf8_span() is len), else 0. */
int utf8_valid(const void *s, size_t len);

/* 1 if content type ct is JSON: application/json, or type/subtype+json
 * (RFC 6839), ignoring case and any parameters (";charset=utf-8"). */
int content_type_is_json(const char *ct);

#endif /* CUT_TEXT_H */
