/*
 * cutd.c - the daemon beside one application process: options, start-up,
 * signals and the event loop.
 *
 * The loop is one thread polling the receive descriptors of its three
 * sockets, a signalfd and the HTTP listener's eventfd (http.c), sleeping
 * until the nearest timer.  Each turn
 * reads everything that arrived, runs timers, commits the turn's database
 * writes in one transaction, and only then sends, one batch per peer and
 * one to the application holding everything queued: a part or an ack never
 * leaves before what it stands for is on disk, and the cost of a turn is
 * shared by all the messages it moves.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "config_schema.h"
#include "cutd.h"
#include "net.h"
#include "appsock.h"
#include "control.h"
#include "http.h"
#include "log.h"
#include "tls.h"

#define EX_USAGE       64
#define EX_UNAVAILABLE 69
#define EX_SOFTWARE    70
#define EX_CANTCREAT   73
#define EX_CONFIG      78
/* run(): cutd must run again in this process (restart_self()). */
#define EX_RESTART -1

/* The loop sleeps until the nearest timer, but never longer than this,
 * so that the watchdog and status keep their pace. */
#define MAX_SLEEP_MS 1000
/* How long closing the sockets may take at exit before cutd gives up on
 * it and leaves them to the kernel. */
#define CLOSE_MS 2000

int64_t
cutd_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
cutd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: cutd --cluster FILE --node NAME [--log-level LEVEL]\n"
	        "       cutd --cluster FILE --check-config\n"
	        "       cutd --print-config-reference markdown|man\n"
	        "       cutd --version | --help\n"
	        "LEVEL: error, warning, notice, info (default), debug\n");
}

struct options {
	const char *cluster, *node;
	int check, level;
	int reference; /* 1 + an enum config_ref_format, or 0 */
};

static int
parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"cluster", required_argument, NULL, 'c'},
	    {"node", required_argument, NULL, 'n'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"check-config", no_argument, NULL, 'k'},
	    {"print-config-reference", required_argument, NULL, 'r'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int ch;

	memset(o, 0, sizeof(*o));
	o->level = LOG_INFO;
	while ((ch = getopt_long(argc, argv, "c:n:l:kVh", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'c':
			o->cluster = optarg;
			break;
		case 'n':
			o->node = optarg;
			break;
		case 'l':
			if ((o->level = log_level_parse(optarg)) < 0) {
				fprintf(stderr, "cutd: unknown log level %s\n",
				        optarg);
				return EX_USAGE;
			}
			break;
		case 'k':
			o->check = 1;
			break;
		case 'r':
			if (strcmp(optarg, "markdown") == 0) {
				o->reference = 1 + CONFIG_REF_MARKDOWN;
			} else if (strcmp(optarg, "man") == 0) {
				o->reference = 1 + CONFIG_REF_MAN;
			} else {
				fprintf(stderr,
				        "cutd: --print-config-reference takes "
				        "markdown or man, not %s\n",
				        optarg);
				return EX_USAGE;
			}
			break;
		case 'V':
			printf("cutd %s\n", CUTD_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (o->reference != 0 && optind == argc && o->cluster == NULL &&
	    o->node == NULL && !o->check)
		return 0;
	if (optind != argc || o->cluster == NULL || o->reference != 0 ||
	    (o->node == NULL && !o->check)) {
		usage(stderr);
		return EX_USAGE;
	}
	return 0;
}

static int
load_config(const char *path, struct config **ret)
{
	char *errors = NULL;

	if (config_load(path, ret, &errors) != 0) {
		fprintf(stderr, "%s", errors ? errors : "out of memory\n");
		free(errors);
		return EX_CONFIG;
	}
	return 0;
}

/* Makes the directory holding path (an ipc:// URL or a file path). */
static void
make_parent(const char *path)
{
	char dir[512];
	char *slash;

	if (strncmp(path, "ipc://", 6) == 0)
		path += 6;
	else if (strstr(path, "://") != NULL)
		return;
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0750) != 0 && errno != EEXIST)
		log_warnx("cannot create %s: %s", dir, strerror(errno));
}

/* This run's epoch: random, so that a stranger on the network cannot
 * guess it (core/coord_peer.c trusts a connection that carries it), and never
 * 0, which means "unknown". */
static uint64_t
run_id(void)
{
	uint64_t id = 0;

	while (id == 0)
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			id = (uint64_t)cutd_wall_ms() ^ (uint64_t)getpid()
			                                    << 40;
	return id;
}

static int64_t
judge_now(void *arg)
{
	(void)arg;
	return cutd_now_ms();
}

static int64_t
judge_wall(void *arg)
{
	(void)arg;
	return cutd_wall_ms();
}

static void
judge_damaged(void *arg, const char *why)
{
	control_storage_damaged(arg, why);
}

static int
open_store(struct cutd *d)
{
	const char *path = d->cfg->nodes[d->self].database;
	char err[768];
	int rv;

	make_parent(path);
	if ((rv = store_open(path, &d->store, err, sizeof(err))) == 0) {
		struct errinfo e = {0};
		/* After store_open(), which made the file and its WAL: a
		 * read-only connection cannot create them. */
		if ((rv = cond_open(path, 2 * d->cfg->max_message + 65536,
		                    &d->cond, &e)) == 0)
			return judge_check(d->cfg, d->cond) ? EX_CONFIG : 0;
		log_err("%s", e.text);
		return EX_CANTCREAT;
	}
	log_err("cannot open the database %s: %s", path, err);
	if (rv == E_CORRUPT)
		log_err("the database is damaged and cutd will not run on it. "
		        "With cutd stopped, move it aside with its -wal and "
		        "-shm files (mv %s %s.damaged; the same for %s-wal and "
		        "%s-shm), then start cutd on a new database (snapshot "
		        "ids stay new), or first recover what is readable: "
		        "sqlite3 %s.damaged .recover | sqlite3 %s",
		        path, path, path, path, path, path);
	else if (rv == E_IO || rv == E_BUSY)
		log_err("check that %s and its directory exist, are writable "
		        "by this user and on a writable file system with free "
		        "space",
		        path);
	return EX_CANTCREAT;
}

static int
start(struct cutd *d)
{
	const struct config_node *me = &d->cfg->nodes[d->self];
	struct errinfo e = {0};
	int rv;

	d->name = me->name;
	d->epoch = run_id();
	d->start_ms = cutd_now_ms();
	if ((rv = open_store(d)) != 0)
		return rv;
	make_parent(me->app);
	make_parent(me->control);
	/* Before the sockets: their nng threads write it. */
	if ((d->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		log_err("eventfd: %s", strerror(errno));
		return EX_SOFTWARE;
	}
	cutd_port(d);
	if ((rv = turn_start(&d->turn, d->cfg, d->self, d->epoch,
	                     store_port(d->store), &d->port, &e)) != 0) {
		log_err("%s", e.text);
		return rv == E_STORAGE ? EX_CANTCREAT : EX_SOFTWARE;
	}
	d->coord = d->turn.c;
	d->judge = (struct judge){.cfg = d->cfg,
	                          .store = d->store,
	                          .cond = d->cond,
	                          .now_ms = judge_now,
	                          .wall_ms = judge_wall,
	                          .damaged = judge_damaged,
	                          .arg = d};
	if (net_start(d) != 0 || app_start(d) != 0 || control_start(d) != 0 ||
	    http_start(d) != 0)
		return EX_UNAVAILABLE;
	/* The sockets live as long as the daemon, so do their descriptors. */
	if (nng_socket_get_int(d->pull, NNG_OPT_RECVFD, &d->pull_fd) != 0 ||
	    nng_socket_get_int(d->app, NNG_OPT_RECVFD, &d->app_fd) != 0 ||
	    nng_socket_get_int(d->ctl, NNG_OPT_RECVFD, &d->ctl_fd) != 0) {
		log_err("cannot get the sockets' descriptors");
		return EX_SOFTWARE;
	}
	return 0;
}

/* The sockets being closed by a helper thread, so that a close that
 * hangs cannot hold up the daemon's exit. */
struct closer {
	struct cutd *d;
	pthread_mutex_t mx;
	pthread_cond_t cv;
	int done;
};

/* Closes the dialers first, so that nothing connects again, then the
 * sending sockets, then the receiving ones, and ends nng, which joins its
 * threads: after this no pipe notification can touch d. */
static void *
close_all(void *arg)
{
	struct closer *c = arg;
	struct cutd *d = c->d;

	for (size_t v = 0; d->net != NULL && v < d->cfg->nnodes; v++)
		if (v != d->self)
			nng_dialer_close(d->net[v].dialer);
	for (size_t v = 0; d->net != NULL && v < d->cfg->nnodes; v++)
		if (v != d->self)
			nng_close(d->net[v].push);
	nng_close(d->app);
	nng_close(d->ctl);
	nng_close(d->pull);
	nng_fini();
	pthread_mutex_lock(&c->mx);
	c->done = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mx);
	return NULL;
}

/* The exit status main() is on its way to, for on_close_abort(). */
static volatile sig_atomic_t exit_status;

/*
 * nng 1.5.2 can panic in one of its own threads while the sockets close
 * ("panic: pthread_mutex_lock: Invalid argument", seen about once in six
 * runs on a TLS node whose dialers' handshakes keep failing, in the
 * integration test t_tls_impostor).  By then the database is closed and
 * nothing of ours is left to lose, so an abort in that last step ends the
 * exit with the status it was going to have, saying so on stderr, rather
 * than a core dump.  Only async-signal-safe calls here.
 */
static void
on_close_abort(int sig)
{
	static const char msg[] =
	    "cutd: nng aborted while closing the sockets (an nng 1.5.2 "
	    "close-time race); the database was already closed\n";
	ssize_t n;

	(void)sig;
	n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	_exit(exit_status);
}

/* Closes every socket within CLOSE_MS.  Returns 0 when they are closed,
 * or -1 when that did not finish in time (nng 1.5.2 can hang in
 * nng_close() on a socket that is still receiving, nng issue #1219): the
 * closing thread then still uses d and its closer, so the caller must
 * free nothing and leave at once with _exit(). */
static int
close_sockets(struct cutd *d)
{
	struct closer *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;
	struct timespec ts;
	struct sigaction sa;
	pthread_t t;
	int done;

	if (c == NULL)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_close_abort;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, NULL);
	c->d = d;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->mx, NULL);
	if (pthread_create(&t, NULL, close_all, c) != 0) {
		close_all(c);
	} else {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += CLOSE_MS / 1000;
		ts.tv_nsec += (CLOSE_MS % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&c->mx);
		while (!c->done &&
		       pthread_cond_timedwait(&c->cv, &c->mx, &ts) == 0)
			;
		done = c->done;
		pthread_mutex_unlock(&c->mx);
		if (!done) {
			log_warnx("closing the sockets takes over %d ms; "
			          "leaving them to the kernel",
			          CLOSE_MS);
			return -1; /* c stays: the thread still uses it */
		}
		pthread_join(t, NULL);
	}
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mx);
	free(c);
	return 0;
}

/* Marks what is in flight aborted, closes the database cleanly, closes
 * the sockets and frees everything the daemon holds, so that
 * LeakSanitizer sees a clean heap.  Returns -1 when the sockets could not
 * be closed in time: then nothing else is freed and main() must leave
 * with _exit().  Works on a daemon whose start() failed half-way. */
static int
stop(struct cutd *d)
{
	if (d->coord != NULL)
		turn_stop(&d->turn, "daemon stopped");
	/* Before the database closes: what still waits is answered 503. */
	http_stop(d);
	cond_close(d->cond);
	store_close(d->store);
	d->store = NULL;
	if (close_sockets(d) != 0)
		return -1;
	turn_fini(&d->turn);
	control_free(d);
	app_free(d);
	net_free(d);
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	coord_free(d->coord);
	tls_free(d->tls);
	config_free(d->cfg);
	/* Nothing may stay reachable from here but what leaked. */
	memset(d, 0, sizeof(*d));
	return 0;
}

/* Logs each line of a config_load() error text at error level, so that
 * under the journal the file:line messages carry a priority too. */
static void
log_lines(char *text)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		log_err("%s", line);
}

static void
note_refused(void *arg, const char *text)
{
	(void)arg;
	log_err("reload refused: %s; restart cutd to change it", text);
}

static void
note_applied(void *arg, const char *text)
{
	(void)arg;
	log_notice("reload: %s", text);
}

static void
note_kept(void *arg, const char *text)
{
	(void)arg;
	log_warnx("reload: %s; it takes effect when cutd restarts", text);
}

/* SIGHUP: what may change does, by the schema's reload column
 * (config_schema.c): a change of a key it marks refused, or of the nodes
 * or channels, refuses the whole file (max_message and the flow-control
 * settings sized the sockets and were told to the application, snapshots
 * in flight depend on the cut, the sockets belong to socket_group); keys
 * it marks applied take effect; the rest (the directories, the schedule,
 * retention, the conditions) stay as they are until a restart, said in
 * the log. */
static void
reload(struct cutd *d)
{
	struct config *cfg;
	char *errors = NULL;

	log_notice("reloading %s", d->cfg_path);
	if (config_load(d->cfg_path, &cfg, &errors) != 0) {
		if (errors != NULL)
			log_lines(errors);
		else
			log_err("%s: out of memory", d->cfg_path);
		free(errors);
		log_err("reload refused: the file is not valid; keeping the "
		        "running configuration");
		return;
	}
	if (config_reload_refusals(d->cfg, cfg, note_refused, d) > 0) {
		config_free(cfg);
		return;
	}
	config_reload_apply(d->cfg, cfg, note_applied, note_kept, d);
	log_notice("reloaded: deadline_ms %u", d->cfg->deadline_ms);
	config_free(cfg);
}

static int
signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, set, NULL) != 0)
		return -1;
	return signalfd(-1, set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Reads pending signals; returns 1 when the daemon should stop. */
static int
handle_signals(struct cutd *d, int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			reload(d);
		else if (si.ssi_signo == SIGUSR1)
			net_drop_connections(d);
		else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			return 1;
	}
	return 0;
}

static void
notify_status(struct cutd *d, int64_t now, int64_t *last)
{
	size_t peers = 0;

	if (now - *last < 1000)
		return;
	*last = now;
	for (size_t v = 0; v < d->cfg->nnodes; v++)
		peers += v != d->self && coord_peer_alive(d->coord, v);
	sd_notifyf(
	    0,
	    "WATCHDOG=1\nSTATUS=%zu of %zu peers connected, "
	    "%zu snapshots in flight, application %s%s%s%s%s",
	    peers, d->cfg->nnodes - 1, coord_in_progress(d->coord),
	    coord_app_connected(d->coord) ? "connected" : "not connected",
	    coord_degraded(d->coord)[0] != '\0' ? "; storage degraded: " : "",
	    coord_degraded(d->coord),
	    control_damaged(d)[0] != '\0' ? "; storage damaged: " : "",
	    control_damaged(d));
}

/* How long the loop may sleep: until the nearest deadline of a snapshot,
 * a Wait call, an owed ack, a heartbeat or a resend. */
static int
next_timeout(struct cutd *d, int64_t now)
{
	int ms = MAX_SLEEP_MS;

	ms = turn_next_timer(&d->turn, ms);
	ms = control_next_timer(d, now, ms);
	ms = app_next_timer(d, now, ms);
	return ms < 0 ? 0 : ms;
}

static int
run(struct cutd *d, int sfd)
{
	struct pollfd pfd[6];
	int64_t last_status = 0;
	uint64_t woken;

	pfd[0].fd = d->pull_fd;
	pfd[2].fd = d->ctl_fd;
	pfd[3].fd = sfd;
	pfd[4].fd = http_fd(d); /* -1 without a listener: poll() skips it */
	pfd[5].fd = d->wake_fd;
	for (int i = 0; i < 6; i++)
		pfd[i].events = POLLIN;
	for (;;) {
		int64_t now;

		pfd[1].fd = app_poll_fd(d);
		if (poll(pfd, 6, next_timeout(d, cutd_now_ms())) < 0 &&
		    errno != EINTR) {
			log_err("poll: %s", strerror(errno));
			return EX_SOFTWARE;
		}
		/* nng's descriptors stay readable while a message waits, so
		 * a socket poll() did not flag has nothing to read. */
		if ((pfd[3].revents & POLLIN) && handle_signals(d, sfd))
			return 0;
		if ((pfd[5].revents & POLLIN) &&
		    read(d->wake_fd, &woken, sizeof(woken)) < 0)
			woken = 0; /* read again next turn */
		d->pull_ready = (pfd[0].revents & POLLIN) != 0;
		d->app_ready = (pfd[1].revents & POLLIN) != 0;
		d->ctl_ready = (pfd[2].revents & POLLIN) != 0;
		d->http_ready = (pfd[4].revents & POLLIN) != 0;
		turn_run(&d->turn);
		now = cutd_now_ms();
		notify_status(d, now, &last_status);
		if (d->restart)
			return EX_RESTART;
	}
}

/*
 * nng stopped reaping closed connections (ipcprobe.h): no connection
 * that closes from now on would be let go of, and closing the sockets
 * would wait for the reaper forever.  So cutd runs again in this process,
 * as after a crash but at once and without a service manager: what is
 * in flight ends aborted, the database is closed, and execv() leaves
 * nng's threads and sockets behind (their descriptors are close-on-
 * exec).  Peers see a restart; the application reconnects.
 */
/* Marks every descriptor but stdin, stdout and stderr close-on-exec: nng
 * 1.5.2 makes its poller's eventfd without it. */
static void
cloexec_all(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;

	while (dir != NULL && (e = readdir(dir)) != NULL) {
		int fd = atoi(e->d_name);
		if (fd > 2 && fd != dirfd(dir))
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	if (dir != NULL)
		closedir(dir);
}

static void
restart_self(struct cutd *d, char **argv)
{
	turn_stop(&d->turn, "daemon restarted: nng stopped reaping "
	                    "connections");
	cond_close(d->cond);
	store_close(d->store);
	log_err("starting cutd again in this process");
	sd_notify(0, "STATUS=starting again (nng stopped reaping connections)");
	unsetenv("CUTD_TEST_STUCK_REAPER"); /* once, for the tests */
	fflush(NULL);
	cloexec_all();
	execv("/proc/self/exe", argv);
	log_err("cannot start cutd again: %s", strerror(errno));
	_exit(EX_SOFTWARE);
}

int
main(int argc, char **argv)
{
	struct options o;
	struct cutd d;
	sigset_t set;
	char tlserr[512];
	int rv, sfd, node;

	if ((rv = parse_options(argc, argv, &o)) != 0)
		return rv;
	if (o.reference != 0)
		return config_reference(stdout, (enum config_ref_format)(
		                                    o.reference - 1)) == 0
		           ? 0
		           : EX_SOFTWARE;
	log_init(o.level);
	memset(&d, 0, sizeof(d));
	d.wake_fd = -1;
	d.cfg_path = (char *)o.cluster;
	if ((rv = load_config(o.cluster, &d.cfg)) != 0)
		return rv;
	if (o.check) {
		rv = config_print(d.cfg, stdout) == 0 ? 0 : EX_SOFTWARE;
		config_free(d.cfg);
		return rv;
	}
	if ((node = config_node_index(d.cfg, o.node)) < 0) {
		fprintf(stderr, "%s: no node named %s\n", o.cluster, o.node);
		config_free(d.cfg);
		return EX_CONFIG;
	}
	d.self = (size_t)node;
	if ((sfd = signals(&set)) < 0) {
		log_err("signalfd: %s", strerror(errno));
		config_free(d.cfg);
		return EX_SOFTWARE;
	}
	/* After signals(): nng starts its threads here, and they must inherit
	 * the blocked signals, or one of them takes SIGUSR1 and dies of it. */
	if ((rv = tls_open(d.cfg, d.self, &d.tls, tlserr, sizeof(tlserr))) !=
	    0) {
		fprintf(stderr, "%s\n", tlserr);
		config_free(d.cfg);
		return rv == E_NOMEM ? EX_SOFTWARE : EX_CONFIG;
	}
	if ((rv = start(&d)) == 0) {
		log_notice("node %s of cluster %s ready", d.name,
		           d.cfg->cluster);
		sd_notify(0, "READY=1");
		if ((rv = run(&d, sfd)) == EX_RESTART)
			restart_self(&d, argv);
		sd_notify(0, "STOPPING=1");
		log_notice("stopping");
	}
	exit_status = rv;
	fflush(NULL);
	if (stop(&d) != 0) {
		fflush(NULL);
		_exit(rv);
	}
	close(sfd);
	return rv;
}
