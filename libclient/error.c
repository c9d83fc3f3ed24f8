/*
 * error.c - the names of libcut's error codes.
 */
#include "cut/cut.h"

const char *
cut_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case CUT_EINVAL:
		return "invalid argument";
	case CUT_ENOMEM:
		return "out of memory";
	case CUT_ETIMEDOUT:
		return "timed out";
	case CUT_ENOENT:
		return "no such node or snapshot";
	case CUT_E2BIG:
		return "message too large";
	case CUT_EPROTO:
		return "protocol error";
	case CUT_EUNAVAIL:
		return "daemon unavailable";
	case CUT_ECLOSED:
		return "link to the daemon lost";
	case CUT_EREFUSED:
		return "refused by the daemon";
	case CUT_ENOTSUP:
		return "not supported";
	case CUT_EBUSY:
		return "busy: called from a callback, or another application "
		       "is connected";
	case CUT_EIO:
		return "transport error";
	case CUT_EAGAIN:
		return "no room on the channel now";
	case CUT_EPERM:
		return "permission denied by the daemon";
	case CUT_ELIMIT:
		return "over the daemon's limits; try again later";
	default:
		return "unknown error";
	}
}
