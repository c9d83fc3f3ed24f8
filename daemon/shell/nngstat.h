/*
 * nngstat.h - reading nng's statistics of one dialer or listener
 * (nngstat.c).
 *
 * nng 1.5.2's nng_stat_find_dialer() and nng_stat_find_listener() return
 * the first dialer or listener of the whole tree whatever its id
 * (nng_stat_find_scope() recurses with nng_stat_find()), so the scope is
 * looked up by hand.
 */
#ifndef CUT_NNGSTAT_H
#define CUT_NNGSTAT_H

#include <nng/nng.h>
#include <stdint.h>

/* The scope of the dialer or listener (name) whose id is id in the tree
 * under s, or NULL. */
nng_stat *nngstat_scope(nng_stat *s, const char *name, int id);
/* One counter of a scope (NULL: 0). */
uint64_t nngstat_value(nng_stat *scope, const char *name);

#endif
