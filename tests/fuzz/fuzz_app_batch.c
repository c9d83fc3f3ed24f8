/*
 * fuzz_app_batch.c - libFuzzer harness: frames from the application.
 *
 * Each frame of the input (fuzz_daemon.h) goes through app_batch(), the
 * code that decodes an AppBatch and checks and handles its items (hello,
 * sends, taken counts, state replies), as app_recv_all() does for each
 * message from the application socket.  Every frame comes from
 * connection 1; between frames the daemon sends its batch to the
 * application, so taken counts have deliveries to count.
 */
#include "fuzz_daemon.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cutd *d = fuzz_daemon_new();

	fuzz_frames(d, data, len, fuzz_app_frame);
	fuzz_daemon_free(d);
	return 0;
}
