/*
 * fuzz_peer_batch.c - libFuzzer harness: frames from other daemons.
 *
 * Each frame of the input (fuzz_daemon.h) goes through peer_batch(), the
 * code that decodes a PeerBatch, checks its header (cluster, sender,
 * addressee, epochs) and runs every item through the links, the engine,
 * the store and assembly, as peer_recv_all() does for each message from
 * the peer socket.
 */
#include "fuzz_daemon.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cutd *d = fuzz_daemon_new();

	fuzz_frames(d, data, len, fuzz_peer_frame);
	fuzz_daemon_free(d);
	return 0;
}
