/*
 * cutproto.c - strict unpacking of cut.v1 frames.
 *
 * protobuf-c's unpack accepts some encodings that do not mean what they
 * seem: a string with an embedded NUL byte decodes to the C string before
 * the NUL ("p0\0junk" becomes "p0"), and a non-repeated field that appears
 * twice keeps its last value.  None of our encoders produce either, so a
 * frame that contains them is bad input.  They share one sign: packing the
 * decoded message again gives fewer bytes than came in.  Field order does
 * not change the size, and protobuf-c keeps and repacks unknown fields, so
 * a frame from a newer daemon with extra fields still passes.
 */
#include "cutproto.h"
#include "errtab.h"

#include <stdlib.h>
#include <string.h>

/* The error table's gRPC statuses are control.proto's. */
#define SAME_STATUS(name, n)                                                   \
	_Static_assert((int)ERRTAB_STATUS_##name ==                            \
	                       (int)CUT__V1__STATUS_CODE__##name &&            \
	                   n == (int)CUT__V1__STATUS_CODE__##name,             \
	               "errtab.h: status " #name);
ERRTAB_STATUSES(SAME_STATUS)
#undef SAME_STATUS

ProtobufCMessage *
cutproto_unpack(const ProtobufCMessageDescriptor *desc, size_t len,
                const uint8_t *data)
{
	ProtobufCMessage *msg;

	msg = protobuf_c_message_unpack(desc, NULL, len, data);
	if (msg == NULL)
		return NULL;
	if (protobuf_c_message_get_packed_size(msg) != len) {
		protobuf_c_message_free_unpacked(msg, NULL);
		return NULL;
	}
	return msg;
}

/* Every allocation is rounded up so that any field type is aligned. */
#define ARENA_ALIGN 16

static void *
arena_alloc(void *data, size_t size)
{
	struct cutproto_arena *a = data;
	size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	void *p;

	a->want += need;
	if (a->cap - a->used >= need) {
		p = a->block + a->used;
		a->used += need;
		return p;
	}
	/* Does not fit: a separate allocation until the next reset, which
	 * grows the block so that the next frame of this size fits. */
	if (a->nextra == a->capextra) {
		size_t cap = a->capextra ? a->capextra * 2 : 16;
		void **v = realloc(a->extra, cap * sizeof(*v));
		if (v == NULL)
			return NULL;
		a->extra = v;
		a->capextra = cap;
	}
	if ((p = malloc(need)) == NULL)
		return NULL;
	a->extra[a->nextra++] = p;
	return p;
}

static void
arena_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

void
cutproto_arena_init(struct cutproto_arena *a)
{
	memset(a, 0, sizeof(*a));
	a->alloc.alloc = arena_alloc;
	a->alloc.free = arena_free;
	a->alloc.allocator_data = a;
}

void
cutproto_arena_reset(struct cutproto_arena *a)
{
	for (size_t i = 0; i < a->nextra; i++)
		free(a->extra[i]);
	if (a->nextra > 0 && a->want > a->cap) {
		unsigned char *b = malloc(a->want);
		if (b != NULL) {
			free(a->block);
			a->block = b;
			a->cap = a->want;
		}
	}
	a->nextra = 0;
	a->used = 0;
	a->want = 0;
}

void
cutproto_arena_fini(struct cutproto_arena *a)
{
	cutproto_arena_reset(a);
	free(a->block);
	free(a->extra);
	memset(a, 0, sizeof(*a));
}

ProtobufCMessage *
cutproto_unpack_arena(const ProtobufCMessageDescriptor *desc, size_t len,
                      const uint8_t *data, struct cutproto_arena *a)
{
	ProtobufCMessage *msg;

	msg = protobuf_c_message_unpack(desc, &a->alloc, len, data);
	if (msg == NULL)
		return NULL;
	if (protobuf_c_message_get_packed_size(msg) != len)
		return NULL; /* the arena takes it back */
	return msg;
}
