/*
 * fuzz_control.c - libFuzzer harness: control requests.
 *
 * Each frame of the input (fuzz_daemon.h) goes through control_request(),
 * the code that decodes an RpcRequest, answers a resent one from the kept
 * replies and dispatches the method (Start, Get, List, Wait, Delete,
 * Status), whose bodies it decodes and checks in turn, as
 * control_recv_all() does for each message from the control socket.
 */
#include "fuzz_daemon.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cutd *d = fuzz_daemon_new();

	fuzz_frames(d, data, len, fuzz_control_frame);
	fuzz_daemon_free(d);
	return 0;
}
