/*
 * ctltab.c - the columns of the control methods' table (ctltab.h) that
 * the daemon and cutctl share, and the lookup by method.
 */
#include <string.h>

#include "cutproto.h"

#define ROW(method, req, reply, handler, perm, answer, route, http, verb,      \
            does)                                                              \
	{method,                                                               \
	 &cut__v1__##req##__descriptor,                                        \
	 &cut__v1__##reply##__descriptor,                                      \
	 CTLTAB_##perm,                                                        \
	 CTLTAB_##answer,                                                      \
	 route,                                                                \
	 verb,                                                                 \
	 does},
const struct ctltab_row ctltab_rows[CTLTAB_NROWS] = {CUT_CTLTAB(ROW)};
#undef ROW

const struct ctltab_row *
ctltab_find(const char *method)
{
	if (method == NULL)
		return NULL;
	for (size_t i = 0; i < CTLTAB_NROWS; i++)
		if (strcmp(method, ctltab_rows[i].method) == 0)
			return &ctltab_rows[i];
	return NULL;
}
