/*
 * json.c - cutctl's JSON writer.  Output is deterministic: the same data
 * always gives the same bytes, so scripts and golden files can rely on it.
 */
#include <inttypes.h>
#include <string.h>

#include "json.h"

void
json_init(struct json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

void
json_finish(struct json *j)
{
	fputc('\n', j->f);
}

/* Writes the comma, newline and indentation before a value or key. */
static void
before_value(struct json *j)
{
	int i;

	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth > 0) {
		if (j->count[j->depth] > 0)
			fputc(',', j->f);
		fputc('\n', j->f);
		for (i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	j->count[j->depth]++;
}

static void
open_(struct json *j, int c)
{
	before_value(j);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->count[j->depth] = 0;
}

static void
close_(struct json *j, int c)
{
	int i, empty = j->count[j->depth] == 0;

	if (j->depth > 0)
		j->depth--;
	if (!empty) {
		fputc('\n', j->f);
		for (i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

void
json_object_begin(struct json *j)
{
	open_(j, '{');
}

void
json_object_end(struct json *j)
{
	close_(j, '}');
}

void
json_array_begin(struct json *j)
{
	open_(j, '[');
}

void
json_array_end(struct json *j)
{
	close_(j, ']');
}

/* Writes s (len bytes) in quotes, escaped. */
static void
quoted(FILE *f, const unsigned char *s, size_t len)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < len; i++) {
		switch (s[i]) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (s[i] < 0x20 || s[i] == 0x7f)
				fprintf(f, "\\u%04x", s[i]);
			else
				fputc(s[i], f);
		}
	}
	fputc('"', f);
}

void
json_key(struct json *j, const char *key)
{
	before_value(j);
	quoted(j->f, (const unsigned char *)key, strlen(key));
	fputs(": ", j->f);
	j->after_key = 1;
}

void
json_string(struct json *j, const char *s)
{
	if (s == NULL) {
		json_null(j);
		return;
	}
	json_string_n(j, s, strlen(s));
}

void
json_string_n(struct json *j, const void *s, size_t len)
{
	before_value(j);
	quoted(j->f, s, len);
}

void
json_uint(struct json *j, uint64_t v)
{
	before_value(j);
	fprintf(j->f, "%" PRIu64, v);
}

void
json_bool(struct json *j, int v)
{
	before_value(j);
	fputs(v ? "true" : "false", j->f);
}

void
json_null(struct json *j)
{
	before_value(j);
	fputs("null", j->f);
}

void
json_kv_string(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_string(j, s);
}

void
json_kv_uint(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_uint(j, v);
}

void
json_kv_bool(struct json *j, const char *key, int v)
{
	json_key(j, key);
	json_bool(j, v);
}

int
utf8_valid(const void *data, size_t len)
{
	const unsigned char *s = data;
	size_t i = 0, n, k;
	uint32_t cp, min;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			n = 1, cp = s[i] & 0x1f, min = 0x80;
		else if ((s[i] & 0xf0) == 0xe0)
			n = 2, cp = s[i] & 0x0f, min = 0x800;
		else if ((s[i] & 0xf8) == 0xf0)
			n = 3, cp = s[i] & 0x07, min = 0x10000;
		else
			return 0;
		if (len - i <= n)
			return 0;
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

/* Writes len bytes as a base64 string. */
static void
base64(struct json *j, const unsigned char *s, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "abcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t v;
	size_t i;

	before_value(j);
	fputc('"', j->f);
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		fputc(tab[v >> 18], j->f);
		fputc(tab[(v >> 12) & 63], j->f);
		fputc(tab[(v >> 6) & 63], j->f);
		fputc(tab[v & 63], j->f);
	}
	if (i < len) {
		v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		fputc(tab[v >> 18], j->f);
		fputc(tab[(v >> 12) & 63], j->f);
		fputc(i + 1 < len ? tab[(v >> 6) & 63] : '=', j->f);
		fputc('=', j->f);
	}
	fputc('"', j->f);
}

void
json_payload(struct json *j, const void *data, size_t len)
{
	int text = utf8_valid(data, len);

	json_object_begin(j);
	json_kv_string(j, "encoding", text ? "utf-8" : "base64");
	json_key(j, "data");
	if (text)
		json_string_n(j, data, len);
	else
		base64(j, data, len);
	json_object_end(j);
}
