/*
 * cutjson.c - JSON output through jansson (see cutjson.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cutjson.h"
#include "text.h"

json_t *
cj_set(json_t *o, const char *key, json_t *v)
{
	/* json_object_set_new() releases v when it fails. */
	if (json_object_set_new(o, key, v) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *
cj_append(json_t *a, json_t *v)
{
	if (json_array_append_new(a, v) != 0) {
		json_decref(a);
		return NULL;
	}
	return a;
}

int
cj_print(FILE *f, json_t *doc)
{
	int rv;

	if (doc == NULL)
		return -1;
	rv = json_dumpf(doc, f, CJ_DUMP_FLAGS);
	json_decref(doc);
	if (rv != 0 || fputc('\n', f) == EOF)
		return -1;
	return 0;
}

json_t *
cj_stringn(const void *s, size_t len)
{
	static const char fffd[] = "\xef\xbf\xbd";
	const unsigned char *p = s;
	size_t i = 0, n, out = 0;
	json_t *v;
	char *buf;

	if (utf8_valid(p, len))
		return json_stringn(s, len);
	/* Each byte that starts no character takes 3 bytes as U+FFFD. */
	if (len > (SIZE_MAX - 1) / 3 || (buf = malloc(3 * len + 1)) == NULL)
		return NULL;
	while (i < len) {
		n = utf8_span(p + i, len - i);
		memcpy(buf + out, p + i, n);
		out += n;
		i += n;
		if (i < len) {
			memcpy(buf + out, fffd, 3);
			out += 3;
			i++;
		}
	}
	v = json_stringn(buf, out);
	free(buf);
	return v;
}

json_t *
cj_string(const char *s)
{
	return s != NULL ? cj_stringn(s, strlen(s)) : json_null();
}

json_t *
cj_base64(const void *data, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = data;
	size_t i, o = 0;
	uint32_t v;
	json_t *str;
	char *buf;

	if (len > SIZE_MAX / 4 * 3 - 3 ||
	    (buf = malloc((len + 2) / 3 * 4 + 1)) == NULL)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		buf[o++] = tab[v >> 18];
		buf[o++] = tab[(v >> 12) & 63];
		buf[o++] = tab[(v >> 6) & 63];
		buf[o++] = tab[v & 63];
	}
	if (i < len) {
		v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		buf[o++] = tab[v >> 18];
		buf[o++] = tab[(v >> 12) & 63];
		buf[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		buf[o++] = '=';
	}
	str = json_stringn(buf, o);
	free(buf);
	return str;
}

json_t *
cj_payload(const char *content_type, const void *data, size_t len)
{
	json_error_t err;
	json_t *v;
	char why[sizeof(err.text) + 64];

	if (len == 0)
		data = ""; /* json_loadb() refuses NULL */
	if (!content_type_is_json(content_type))
		return json_pack("{s:o, s:s, s:o}", "content_type",
		                 cj_string(content_type), "encoding", "base64",
		                 "data", cj_base64(data, len));
	if ((v = json_loadb(data, len, CJ_LOAD_FLAGS, &err)) != NULL)
		return json_pack("{s:o, s:s, s:o}", "content_type",
		                 cj_string(content_type), "encoding", "json",
		                 "data", v);
	/* Shown all the same, byte for byte, with jansson's reason. */
	snprintf(why, sizeof(why), "%s (line %d, column %d)", err.text,
	         err.line, err.column);
	return json_pack("{s:o, s:s, s:o, s:b, s:o}", "content_type",
	                 cj_string(content_type), "encoding", "base64", "data",
	                 cj_base64(data, len), "invalid_json", 1, "json_error",
	                 cj_string(why));
}
