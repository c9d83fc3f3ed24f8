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
