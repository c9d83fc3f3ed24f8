/*
 * ipcprobe.c - keeps one of the daemon's IPC listeners accepting; see
 * ipcprobe.h for why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipcprobe.h"
#include "log.h"
#include "nngstat.h"

/* The listener's statistics are read this often; a probe runs at once
 * when they show a failed negotiation, and at least this often. */
#define CHECK_MS       100
#define PROBE_EVERY_MS 5000
/* How long the probe's refused connection may wait for the reaper.  It
 * takes well under a millisecond, but a reaper held in vain means a
 * restart of cutd, so the wait allows for a machine far behind. */
#define REAP_WAIT_MS 2000

/* The SP header of pair0 (protocol 0x10), which neither rep0 nor pair1
 * takes: the socket refuses the probe's connection after the listener
 * accepted it, so the probe never becomes a client or an application. */
static const unsigned char probe_header[8] = {0, 'S', 'P', 0, 0, 0x10, 0, 0};

/* Runs on an nng thread for every connection the listener hands to the
 * socket: only an atomic. */
static void
pipe_added(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct ipcprobe *p = arg;
	uint64_t pid;

	(void)ev;
	if (nng_pipe_get_uint64(pipe, NNG_OPT_IPC_PEER_PID, &pid) == 0 &&
	    pid == (uint64_t)p->pid) {
		atomic_store(&p->probe_pipe, (unsigned)nng_pipe_id(pipe));
		atomic_store(&p->seen, 1);
	}
}

void
ipcprobe_removed(struct ipcprobe *p, uint32_t id)
{
	if (id != 0 && atomic_load(&p->probe_pipe) == id)
		atomic_store(&p->reaped, 1);
}

void
ipcprobe_soon(struct ipcprobe *p)
{
	p->soon = 1;
}

int
ipcprobe_start(struct ipcprobe *p, nng_socket sock, nng_listener l,
               const char *url, const char *what, int wait_ms)
{
	memset(p, 0, sizeof(*p));
	p->what = what;
	if (strncmp(url, "ipc://", 6) != 0)
		return 0; /* TCP listeners were not seen to stop */
	p->url = url;
	p->listener = l;
	p->wait_ms = wait_ms;
	p->pid = getpid();
	p->test_stuck = getenv("CUTD_TEST_STUCK_REAPER") != NULL;
	atomic_init(&p->seen, 0);
	atomic_init(&p->probe_pipe, 0);
	atomic_init(&p->reaped, 0);
	return nng_pipe_notify(sock, NNG_PIPE_EV_ADD_PRE, pipe_added, p);
}

void
ipcprobe_stop(struct ipcprobe *p)
{
	if (p->probing)
		close(p->fd);
	p->probing = 0;
}

/* Connects the probe.  Returns IPCPROBE_DEAF when the listener's socket
 * file is gone or refuses connections (listening again makes it anew). */
static int
probe_connect(struct ipcprobe *p, int64_t now)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = p->url + 6;
	int fd;

	p->last_ms = now;
	p->soon = 0;
	if (strlen(path) >= sizeof(sa.sun_path))
		return IPCPROBE_OK;
	memcpy(sa.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	                 0)) < 0)
		return IPCPROBE_OK;
	atomic_store(&p->seen, 0);
	atomic_store(&p->probe_pipe, 0);
	atomic_store(&p->reaped, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = errno;
		close(fd);
		/* EAGAIN: the backlog is full, nng has not taken the
		 * connections yet; try again next time. */
		if (err != ENOENT && err != ECONNREFUSED)
			return IPCPROBE_OK;
		log_warnx("%s socket: cannot connect to it at %s: %s; "
		          "listening again",
		          p->what, path, strerror(err));
		return IPCPROBE_DEAF;
	}
	/* Our header is all nng reads before it accepts: it sits in the
	 * socket's buffer even once we close. */
	if (write(fd, probe_header, sizeof(probe_header)) < 0) {
		close(fd);
		return IPCPROBE_OK;
	}
	p->fd = fd;
	p->probing = 1;
	p->probe_ms = now;
	return IPCPROBE_OK;
}

/* The listener's "other" + "canceled": negotiations that failed in a way
 * that can stop it.  Returns 0 when nng gives no statistics. */
static int
read_stops(struct ipcprobe *p, uint64_t *stops)
{
	nng_stat *all, *l;

	if (nng_stats_get(&all) != 0)
		return 0;
	l = nngstat_scope(all, "listener", nng_listener_id(p->listener));
	*stops = nngstat_value(l, "other") + nngstat_value(l, "canceled");
	nng_stats_free(all);
	return l != NULL;
}

int
ipcprobe_check(struct ipcprobe *p, int64_t now)
{
	uint64_t stops = 0;

	if (p->url == NULL)
		return IPCPROBE_OK;
	if (p->probing) {
		if (!atomic_load(&p->seen)) {
			if (now - p->probe_ms < p->wait_ms)
				return IPCPROBE_OK;
			log_notice("%s socket: its listener took no connection "
			           "for %d ms (nng 1.5.2 stops accepting after "
			           "a client goes away while it negotiates): "
			           "listening again (connected clients connect "
			           "again)",
			           p->what, p->wait_ms);
			return IPCPROBE_DEAF;
		}
		/* Accepted, so its negotiation is over: closing it now
		 * cannot be a close during one. */
		ipcprobe_stop(p);
		p->reaping = p->reap_check;
		p->reap_ms = now;
	}
	if (p->reaping) {
		if (atomic_load(&p->reaped) && !p->test_stuck) {
			p->reaping = 0;
		} else if (now - p->reap_ms < REAP_WAIT_MS) {
			return IPCPROBE_OK;
		} else {
			p->reaping = 0;
			log_err(
			    "nng has stopped reaping closed connections (an "
			    "nng 1.5.2 race when a connection closes while "
			    "a frame is read): no connection that closes "
			    "from now on would be let go of");
			return IPCPROBE_STUCK;
		}
	}
	if (now - p->checked_ms < CHECK_MS)
		return IPCPROBE_OK;
	p->checked_ms = now;
	if (read_stops(p, &stops) && stops > p->stops) {
		int rv = probe_connect(p, now);
		/* A probe that could not connect yet (a full backlog) is
		 * tried again next time: a deaf listener counts nothing
		 * more that would start it. */
		if (p->probing || rv)
			p->stops = stops;
		return rv;
	}
	if (p->last_ms == 0) /* the first one a period after start */
		p->last_ms = now;
	if (p->soon || now - p->last_ms >= PROBE_EVERY_MS)
		return probe_connect(p, now);
	return IPCPROBE_OK;
}

void
ipcprobe_listening(struct ipcprobe *p, nng_listener l)
{
	/* After the old listener closed: the probe's connection was never
	 * the new one's. */
	ipcprobe_stop(p);
	p->listener = l;
	p->stops = 0;
	p->restarts++;
}

int
ipcprobe_next_timer(const struct ipcprobe *p, int64_t now, int max)
{
	int64_t at, ms;

	if (p->url == NULL)
		return max;
	/* While probing, often enough to let the next probe start soon. */
	at = p->probing   ? p->probe_ms + p->wait_ms
	     : p->reaping ? p->reap_ms + REAP_WAIT_MS
	                  : p->checked_ms + CHECK_MS;
	ms = at - now;
	if ((p->probing || p->reaping) && ms > 50)
		ms = 50;
	if (ms > max)
		ms = max;
	return ms < 0 ? 0 : (int)ms;
}
