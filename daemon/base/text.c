/*
 * text.c - UTF-8 and JSON content types (see text.h).
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "text.h"

size_t
utf8_span(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i, k, n;
	uint32_t cp, min;

	for (i = 0; i < len; i += n + 1) {
		if (p[i] < 0x80)
			n = 0, cp = p[i], min = 0;
		else if ((p[i] & 0xe0) == 0xc0)
			n = 1, cp = p[i] & 0x1f, min = 0x80;
		else if ((p[i] & 0xf0) == 0xe0)
			n = 2, cp = p[i] & 0x0f, min = 0x800;
		else if ((p[i] & 0xf8) == 0xf0)
			n = 3, cp = p[i] & 0x07, min = 0x10000;
		else
			return i;
		if (len - i <= n)
			return i;
		for (k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
	}
	return len;
}

int
utf8_valid(const void *s, size_t len)
{
	return utf8_span(s, len) == len;
}

int
content_type_is_json(const char *ct)
{
	size_t n;

	if (ct == NULL)
		return 0;
	n = strcspn(ct, ";");
	while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	if (n == 16 && strncasecmp(ct, "application/json", 16) == 0)
		return 1;
	return n > 5 && memchr(ct, '/', n - 5) != NULL &&
	       strncasecmp(ct + n - 5, "+json", 5) == 0;
}
