/*
 * nngstat.c - nng's statistics of one dialer or listener (nngstat.h).
 */
#include <string.h>

#include "nngstat.h"

nng_stat *
nngstat_scope(nng_stat *s, const char *name, int id)
{
	nng_stat *c, *r;

	if (nng_stat_type(s) == NNG_STAT_SCOPE &&
	    strcmp(nng_stat_name(s), name) == 0) {
		for (c = nng_stat_child(s); c != NULL; c = nng_stat_next(c))
			if (strcmp(nng_stat_name(c), "id") == 0)
				return nng_stat_value(c) == (uint64_t)id ? s
				                                         : NULL;
		return NULL;
	}
	for (c = nng_stat_child(s); c != NULL; c = nng_stat_next(c))
		if ((r = nngstat_scope(c, name, id)) != NULL)
			return r;
	return NULL;
}

uint64_t
nngstat_value(nng_stat *scope, const char *name)
{
	nng_stat *c;

	for (c = scope ? nng_stat_child(scope) : NULL; c != NULL;
	     c = nng_stat_next(c))
		if (strcmp(nng_stat_name(c), name) == 0)
			return nng_stat_value(c);
	return 0;
}
