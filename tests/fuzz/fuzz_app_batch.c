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
#include <stdlib.h>
#include <string.h>

#include "fuzz_daemon.h"

static void
frame(struct cutd *d, const uint8_t *data, size_t len)
{
	nng_pipe pipe = NNG_PIPE_INITIALIZER;
	nng_msg *msg;

	if (nng_msg_alloc(&msg, len) != 0)
		abort();
	if (len > 0)
		memcpy(nng_msg_body(msg), data, len);
	pipe.id = 1;
	nng_msg_set_pipe(msg, pipe);
	app_batch(d, msg);
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
