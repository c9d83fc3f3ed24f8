/*
 * fuzz_peer_batch.c - libFuzzer harness: frames from other daemons.
 *
 * Each frame of the input (fuzz_daemon.h) goes through peer_batch(), the
 * code that decodes a PeerBatch, checks its header (cluster, sender,
 * addressee, epochs) and runs every item through the links, the engine,
 * the store and assembly, as peer_recv_all() does for each message from
 * the peer socket.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_daemon.h"

static void
frame(struct cutd *d, const uint8_t *data, size_t len)
{
	nng_msg *msg;

	if (nng_msg_alloc(&msg, len) != 0)
		abort();
	if (len > 0)
		memcpy(nng_msg_body(msg), data, len);
	peer_batch(d, msg);
	nng_msg_free(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cutd *d = fuzz_daemon_new();

	fuzz_frames(d, data, len, frame);
	fuzz_daemon_free(d);
	return 0;
}
