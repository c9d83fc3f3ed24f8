/*
 * error.c - libcut's error codes: their names, and the one place where
 * what comes from elsewhere becomes one of them: nng's errors, the control
 * service's gRPC status codes and the application link's error codes.
 */
#include <nng/nng.h>

#include "cut/cut.h"
#include "cutproto.h"
#include "rpc.h"

int
rpc_nng_error(int err)
{
	switch (err) {
	case 0:
		return 0;
	case NNG_ENOMEM:
		return CUT_ENOMEM;
	case NNG_ETIMEDOUT:
		return CUT_ETIMEDOUT;
	case NNG_EINVAL:
	case NNG_EADDRINVAL:
	case NNG_ENOTSUP:
		return CUT_EINVAL;
	case NNG_ECONNREFUSED:
	case NNG_ENOENT:
	case NNG_EUNREACHABLE:
		return CUT_EUNAVAIL;
	case NNG_ECLOSED:
	case NNG_ECONNRESET:
	case NNG_ECONNSHUT:
	case NNG_ECONNABORTED:
		return CUT_ECLOSED;
	case NNG_EMSGSIZE:
		return CUT_E2BIG;
	default:
		return CUT_EIO;
	}
}

int
rpc_status_error(int32_t status)
{
	switch (status) {
	case CUT__V1__STATUS_CODE__OK:
		return 0;
	case CUT__V1__STATUS_CODE__NOT_FOUND:
		return CUT_ENOENT;
	case CUT__V1__STATUS_CODE__INVALID_ARGUMENT:
	case CUT__V1__STATUS_CODE__OUT_OF_RANGE:
		return CUT_EINVAL;
	case CUT__V1__STATUS_CODE__DEADLINE_EXCEEDED:
		return CUT_ETIMEDOUT;
	case CUT__V1__STATUS_CODE__UNAVAILABLE:
		return CUT_EUNAVAIL;
	case CUT__V1__STATUS_CODE__UNIMPLEMENTED:
		return CUT_ENOTSUP;
	case CUT__V1__STATUS_CODE__PERMISSION_DENIED:
		return CUT_EPERM;
	case CUT__V1__STATUS_CODE__RESOURCE_EXHAUSTED:
		return CUT_ELIMIT;
	case CUT__V1__STATUS_CODE__CANCELLED:
	case CUT__V1__STATUS_CODE__ALREADY_EXISTS:
	case CUT__V1__STATUS_CODE__FAILED_PRECONDITION:
	case CUT__V1__STATUS_CODE__ABORTED:
	case CUT__V1__STATUS_CODE__UNAUTHENTICATED:
		return CUT_EREFUSED;
	default:
		return CUT_EPROTO;
	}
}

int
rpc_app_error(uint32_t code)
{
	switch (code) {
	case CUT__V1__APP_ERROR__CODE__WRONG_NODE:
	case CUT__V1__APP_ERROR__CODE__UNKNOWN_NODE:
	case CUT__V1__APP_ERROR__CODE__UNKNOWN_SNAPSHOT:
		return CUT_ENOENT;
	case CUT__V1__APP_ERROR__CODE__VERSION:
		return CUT_ENOTSUP;
	case CUT__V1__APP_ERROR__CODE__TOO_LARGE:
		return CUT_E2BIG;
	case CUT__V1__APP_ERROR__CODE__BACKPRESSURE:
		return CUT_EAGAIN;
	default:
		return CUT_EPROTO;
	}
}

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
