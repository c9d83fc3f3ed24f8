/*
 * fuzz_daemon_mix.c - libFuzzer harness: the daemon's three sockets at
 * once.
 *
 * Each frame of the input (fuzz_daemon.h) starts with a byte that says
 * where it comes from (modulo 3: a peer, the application, a control
 * client), and the rest goes where fuzz_peer_batch, fuzz_app_batch and
 * fuzz_control send it.  Mixed, they reach what no socket reaches alone:
 * a marker from a peer answered by the application's state reply, a part
 * complete and sent to its initiator, a Wait answered when a snapshot
 * ends.
 */
#include "fuzz_daemon.h"

static void
frame(struct cutd *d, const uint8_t *data, size_t len)
{
	if (len == 0)
		return;
	switch (data[0] % 3) {
	case 0:
		fuzz_peer_frame(d, data + 1, len - 1);
		break;
	case 1:
		fuzz_app_frame(d, data + 1, len - 1);
		break;
	default:
		fuzz_control_frame(d, data + 1, len - 1);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cutd *d = fuzz_daemon_new();

	fuzz_frames(d, data, len, frame);
	fuzz_daemon_free(d);
	return 0;
}
