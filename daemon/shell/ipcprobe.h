/*
 * ipcprobe.h - keeps one of the daemon's IPC listeners accepting
 * (ipcprobe.c).
 *
 * nng 1.5.2's IPC listener can stop accepting for good (nng issue #1518,
 * fixed upstream): a client that goes away while nng sends it the SP
 * header makes the send fail with EPIPE, which nng reports as
 * NNG_ECLOSED; that negotiation error is handed to the listener's pending
 * accept, and the listener's accept callback takes NNG_ECLOSED for its
 * own close ("no further action").  Later clients connect and finish the
 * SP handshake, which is all they see, and then wait unread.  Any member
 * of the socket group could silence the control socket that way.
 *
 * So the daemon connects to its own listener with a plain AF_UNIX socket
 * and the SP header of a protocol the socket refuses (the probe): at once
 * when the listener's "other" or "canceled" count grows (a negotiation
 * failed: the only way in), and every PROBE_EVERY_MS.  A listener that
 * accepts hands the connection to the socket, whose ADD_PRE notification
 * names our own pid; one that does not within wait_ms is closed by the
 * caller and started again.  Its clients lose their connections and dial
 * again (req0 resends a request whose connection closed).
 *
 * The probe's connection also shows whether nng still reaps closed
 * connections.  nng 1.5.2 has one reaper thread for every socket, and it
 * can stop for good: when a connection closes (a send failed: its peer
 * died) while another thread is between reading a frame's header and
 * asking for its body, that thread resubmits the transport's stopped
 * receive (ipc_pipe_recv_cb() does not check p->closed), which nng never
 * finishes, and the reaper waits on it in pair1_pipe_stop() forever.  No
 * connection of any socket is reaped after that: the next application
 * that dies is never reported closed, pair1 refuses every new one, and
 * peers' connections leak.  A probe's connection is refused by its
 * socket and so reaped at once; one whose removal (REM_POST, passed in by
 * the owner with ipcprobe_removed()) does not come within REAP_WAIT_MS
 * says the reaper has stopped, and nothing but a new process mends that.
 */
#ifndef CUT_IPCPROBE_H
#define CUT_IPCPROBE_H

#include <nng/nng.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct ipcprobe {
	const char *what; /* "control", "application": for the log */
	const char *url;  /* ipc://PATH, borrowed */
	nng_listener listener;
	int wait_ms;               /* how long an accept may take */
	pid_t pid;                 /* ours */
	atomic_int seen;           /* the socket saw our probe's connection */
	int probing, fd;           /* the probe's connection, if probing */
	int64_t probe_ms, last_ms; /* when it connected; when one began */
	int64_t checked_ms;        /* when the statistics were read */
	uint64_t stops; /* the listener's "other" + "canceled", as read */
	uint64_t restarts;
	/* The reaper check (reap_check set by the owner): the probe's
	 * connection as nng numbered it, and whether it was reaped. */
	int reap_check, reaping, soon;
	atomic_uint probe_pipe;
	atomic_int reaped;
	int64_t reap_ms;
	int test_stuck; /* CUTD_TEST_STUCK_REAPER: the first is never reaped */
};

/* What ipcprobe_check() found. */
enum {
	IPCPROBE_OK,
	IPCPROBE_DEAF,  /* the listener stopped accepting: listen again */
	IPCPROBE_STUCK, /* nng stopped reaping connections: restart cutd */
};

/* Watches listener l of sock at url (ipc://; anything else is not
 * watched).  Registers sock's ADD_PRE notification: p must outlive sock.
 * Returns 0 or an NNG_E* code. */
int ipcprobe_start(struct ipcprobe *p, nng_socket sock, nng_listener l,
                   const char *url, const char *what, int wait_ms);
/* One step, on the loop's clock.  Returns IPCPROBE_DEAF when the
 * listener has stopped accepting: the caller closes it, listens again,
 * and calls ipcprobe_listening() with the new one; IPCPROBE_STUCK when
 * nng's reaper has stopped (checked when reap_check is set). */
int ipcprobe_check(struct ipcprobe *p, int64_t now);
/* nng reported connection id of the probe's socket closed (REM_POST); any
 * thread. */
void ipcprobe_removed(struct ipcprobe *p, uint32_t id);
/* Probes at the next step rather than on the next period. */
void ipcprobe_soon(struct ipcprobe *p);
void ipcprobe_listening(struct ipcprobe *p, nng_listener l);
/* Milliseconds until the next step, at most max. */
int ipcprobe_next_timer(const struct ipcprobe *p, int64_t now, int max);
/* Closes the probe's connection.  Accepts a probe never started. */
void ipcprobe_stop(struct ipcprobe *p);

#endif
