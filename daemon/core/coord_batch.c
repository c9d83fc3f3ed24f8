/*
 * coord_batch.c - the bottom of the coordinator, which every other
 * coordinator file calls and which calls none of them: the turn's batch
 * of database writes, the clock's conversions, and the protobuf wire
 * helpers that build frames without re-encoding.
 *
 * The turn's batch:
 *
 *   CLOSED --first write of a turn (coord_db())--> OPEN
 *   OPEN --coord_commit(), commit succeeds--> CLOSED
 *   OPEN --coord_commit(), database busy--> OPEN (retried next turn)
 *   OPEN --coord_commit(), commit fails, or a write of it failed
 *           (coord_write_failed())--> CLOSED, rolled back, snapshots it
 *           held aborted, ends written again (snap_storage_failed())
 *   CLOSED, degraded --a second later, at coord_commit()--> retried
 *
 * A begin that fails leaves the turn CLOSED with begin_failed set: its
 * writes then fail one by one (or commit alone) and the turn counts as a
 * lost batch.  So does an OPEN batch in which a write failed for want of
 * storage (write_failed): SQLite may have failed that statement alone and
 * kept the transaction, whose commit would then store the rest without
 * it (a snapshot's end, a channel of a part), so it is rolled back
 * instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "log.h"

int64_t
coord_wall_of(const struct coord *c, int64_t t)
{
	return c->wall - (c->now - t);
}

const char *
coord_ctype(const char *ctype)
{
	size_t len;

	if (ctype == NULL || ctype[0] == '\0')
		return "application/octet-stream";
	if ((len = strnlen(ctype, 256)) > 255)
		return NULL;
	for (size_t i = 0; i < len; i++)
		if (ctype[i] < ' ' || ctype[i] > '~')
			return NULL;
	return ctype;
}

size_t
wire_field_size(size_t len)
{
	size_t n = 2;

	for (uint64_t v = len; v > 0x7f; v >>= 7)
		n++;
	return n + len;
}

size_t
wire_put_header(uint8_t *dst, unsigned field, size_t len)
{
	size_t n = 0;
	uint64_t v = len;

	dst[n++] = (uint8_t)((field << 3) | 2);
	do {
		dst[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	return n;
}

size_t
wire_put_field(uint8_t *dst, unsigned field, const void *data, size_t len)
{
	size_t n = wire_put_header(dst, field, len);

	if (len > 0)
		memcpy(dst + n, data, len);
	return n + len;
}

void
coord_db(struct coord *c)
{
	if (c->batch_open || c->begin_failed)
		return;
	c->batch_gen++;
	if (DB0(c, begin) != 0) {
		/* The turn's writes fail or go one by one; coord_commit()
		 * then treats the turn as a lost batch. */
		log_err("cannot begin a database transaction: %s", DB_ERR(c));
		c->begin_failed = 1;
		return;
	}
	c->batch_open = 1;
}

void
coord_write_failed(struct coord *c, const char *what)
{
	if (c->write_failed && c->lost_why[0] != '\0')
		return; /* the first failure says why */
	c->write_failed = 1;
	snprintf(c->lost_why, sizeof(c->lost_why), "%s: %s", what, DB_ERR(c));
	log_err("%s", c->lost_why);
}

int
coord_db_rv(struct coord *c, int rv)
{
	if ((rv == E_IO || rv == E_NOMEM || rv == E_BUSY || rv == E_CORRUPT) &&
	    c->batch_open && !c->write_failed) {
		c->write_failed = 1;
		snprintf(c->lost_why, sizeof(c->lost_why), "%s", DB_ERR(c));
	}
	return rv;
}
