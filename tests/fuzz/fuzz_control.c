/*
 * fuzz_control.c - libFuzzer harness: control requests.
 *
 * Each frame of the input (fuzz_coord.h) goes through control_request()
 * of a socket-less daemon (fuzz_daemon.h), the code that decodes an
 * RpcRequest, answers a resent one from the kept replies, checks the
 * caller's permission and dispatches the method (Start, Get, List, Wait,
 * Delete, Status), whose bodies it decodes and checks in turn, as
 * control_recv_all() does for each message from the control socket.
 */
#include "fuzz_daemon.h"

static void
frame(void *arg, const uint8_t *data, size_t len)
{
	fuzz_daemon_control(arg, data, len);
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
