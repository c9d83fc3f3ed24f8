/*
 * fuzz_app_batch.c - libFuzzer harness: frames from the application.
 *
 * Each frame of the input (fuzz_coord.h) is decoded as an AppBatch and
 * handed to coord_app_input(), which checks and handles its items (hello,
 * sends, taken counts, state replies).  Every frame comes from
 * connection FUZZ_APP_CONN; between frames a turn pulls the
 * coordinator's replies and down-stream frames, which marks deliveries
 * as sent, so that taken counts have deliveries to count, and the
 * peers' frames, which carry what the application sent.
 */
#include "fuzz_coord.h"

static void
frame(void *arg, const uint8_t *data, size_t len)
{
	fuzz_coord_app(arg, data, len);
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
