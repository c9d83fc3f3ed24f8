/*
 * fuzz_libcut_frame.c - libFuzzer harness: libcut's framing of what the
 * daemon sends.
 *
 * libcut does not unpack a whole AppBatch: appcore_frame_item() (appcore.c), a
 * hand-written protobuf reader, walks the frame's items in place, once to
 * check the framing and again to queue and take the items, each of which
 * is then unpacked alone.  The harness runs both walks on the input and
 * checks what appcore_frame_item() promises: every item lies inside the frame
 * and follows the one before, the offset only moves forward, a frame
 * walks the same way twice, and a frame it accepts unpacks as an
 * AppBatch with the same items (protobuf-c agreeing with the framing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cut_int.h"
#include "cutproto.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz_libcut_frame: %s:%d: %s\n",      \
			        __FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

/* Walks the frame; returns the number of items or -1, and the items'
 * offsets and lengths in off[], len[] (up to max). */
static long
walk(const uint8_t *p, size_t n, size_t *offs, size_t *lens, size_t max)
{
	size_t off = 0, prev = 0, k = 0, len;
	const uint8_t *item;
	int rv;

	while ((rv = appcore_frame_item(p, n, &off, &item, &len)) == 1) {
		CHECK(item >= p + prev && item + len <= p + n);
		CHECK(off == (size_t)(item - p) + len && off > prev);
		if (k < max) {
			offs[k] = (size_t)(item - p);
			lens[k] = len;
		}
		k++;
		prev = off;
	}
	CHECK(off <= n);
	if (rv < 0)
		return -1;
	CHECK(rv == 0 && off == n);
	return (long)k;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	size_t o1[64], l1[64], o2[64], l2[64];
	long k1 = walk(data, len, o1, l1, 64);
	long k2 = walk(data, len, o2, l2, 64);
	Cut__V1__AppBatch *b;

	CHECK(k1 == k2);
	if (k1 < 0)
		return 0;
	for (long i = 0; i < k1 && i < 64; i++)
		CHECK(o1[i] == o2[i] && l1[i] == l2[i]);
	/* Each item alone, as take_packed() and urgent() unpack it. */
	for (long i = 0; i < k1 && i < 64; i++) {
		ProtobufCMessage *it = cutproto_unpack(
		    &cut__v1__app_item__descriptor, l1[i], data + o1[i]);
		if (it != NULL)
			protobuf_c_message_free_unpacked(it, NULL);
	}
	/* Strict unpacking refuses more than the framing does, never less:
	 * a batch it accepts has exactly the items the framing found. */
	b = (Cut__V1__AppBatch *)cutproto_unpack(
	    &cut__v1__app_batch__descriptor, len, data);
	if (b != NULL) {
		CHECK((long)b->n_items == k1);
		protobuf_c_message_free_unpacked(&b->base, NULL);
	}
	return 0;
}
