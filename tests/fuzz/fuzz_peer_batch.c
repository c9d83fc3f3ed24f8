/*
 * fuzz_peer_batch.c - libFuzzer harness: frames from other daemons.
 *
 * Each frame of the input (fuzz_coord.h) is decoded as a PeerBatch and
 * handed to coord_peer_input(), which checks its header (cluster, sender,
 * addressee, epochs, the connection it came on) and runs every item
 * through the links, the engine, the store and assembly; between frames
 * a turn pulls and checks every frame the coordinator owes.
 */
#include "fuzz_coord.h"

static void
frame(void *arg, const uint8_t *data, size_t len)
{
	fuzz_coord_peer(arg, data, len);
}

static void
turn(void *arg)
{
	fuzz_coord_turn(arg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct fuzz_coord *f = fuzz_coord_new();

	fuzz_frames(data, len, frame, turn, f);
	fuzz_coord_free(f);
	return 0;
}
