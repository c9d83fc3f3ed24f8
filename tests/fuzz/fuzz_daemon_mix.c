/*
 * fuzz_daemon_mix.c - libFuzzer harness: the daemon's three sockets at
 * once, and its clock.
 *
 * Each frame of the input (fuzz_coord.h) starts with a byte that says
 * where it comes from (modulo 4): a peer (turn_peer_frame()), the application
 * (turn_app_frame()), a control client (control_request()) of a socket-less
 * daemon (fuzz_daemon.h); or, for 3, nobody: the clock jumps by the next
 * two bytes (little-endian) times 10 ms, up to about 11 minutes, which
 * reaches deadlines, resends, silent peers and the expiry of ended
 * snapshots.  Mixed, they reach what no socket reaches alone: a marker
 * from a peer answered by the application's state reply, a part
 * complete and sent to its initiator, a Wait answered when a snapshot
 * ends.
 */
#include "fuzz_daemon.h"

static void
frame(void *arg, const uint8_t *data, size_t len)
{
	struct fuzz_daemon *fd = arg;

	if (len == 0)
		return;
	switch (data[0] % 4) {
	case 0:
		fuzz_daemon_peer(fd, data + 1, len - 1);
		break;
	case 1:
		fuzz_daemon_app(fd, data + 1, len - 1);
		break;
	case 2:
		fuzz_daemon_control(fd, data + 1, len - 1);
		break;
	default:
		if (len >= 3)
			fuzz_coord_advance(
			    fd->f, 10 * (int64_t)(data[1] | data[2] << 8));
	}
}

static void
turn(void *arg)
{
	fuzz_daemon_turn(arg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct fuzz_daemon *fd = fuzz_daemon_new();

	fuzz_frames(data, len, frame, turn, fd);
	fuzz_daemon_free(fd);
	return 0;
}
