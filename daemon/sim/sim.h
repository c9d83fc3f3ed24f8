/*
 * sim.h - the whole-cluster simulation (cutlab sim): what its files share.
 *
 *   sim.c       options, one run (the loop, the faults, the workload),
 *               the checks, the report; see the comment at its top
 *   simnet.c    the network between daemons: connections, dialers,
 *               partitions, resets; and the turn of one daemon
 *   simapp.c    the applications: libcut's protocol core (appcore.c, the
 *               code libcut runs) under a token-bank workload
 *   simdb.c     the store port that makes a node's writes fail
 *   simops.c    the control calls beyond Start (restore, delete, keep,
 *               schedule pause), the schedule and retention, and their
 *               checks
 *
 * Everything runs in one thread on simulated time (milliseconds), and
 * every random choice comes from one PRNG seeded once (struct lab_rng):
 * a seed is a replay.
 */
#ifndef CUT_SIM_H
#define CUT_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "appcore.h"
#include "appqueue.h"
#include "config.h"
#include "coord.h"
#include "cutproto.h"
#include "fifo.h"
#include "lab.h"
#include "judge.h"
#include "store.h"
#include "store_fault.h"
#include "turn.h"

/* Lives of one application in a run (it dies at most SIM_MAX_LIVES - 1
 * times). */
#define SIM_MAX_LIVES 6
#define SIM_MIN_NODES 2
#define SIM_MAX_NODES 32
#define SIM_NEVER     INT64_MAX

/* The simulated wall clock starts on 2100-01-01: after anything a real
 * clock says, so the id counter SQLite starts at the real time when it
 * creates a database (store.c, migration 1 -> 2) is passed at the first
 * id, and ids depend on the seed alone. */
#define SIM_WALL_BASE 4102444800000LL

/* Restores decided in a run, at most (each opens an era of the bank). */
#define SIM_MAX_ERAS 12

/* Fault kinds (--faults). */
enum {
	SIM_F_CRASH = 1 << 0,      /* a daemon dies and restarts */
	SIM_F_PARTITION = 1 << 1,  /* a group cut off, both ways or one */
	SIM_F_DROP = 1 << 2,       /* a connection reset, its frames lost */
	SIM_F_STORAGE = 1 << 3,    /* a node's database fails writes */
	SIM_F_SLOW = 1 << 4,       /* applications slow, stopped or mute */
	SIM_F_APPLINK = 1 << 5,    /* an application's connection reset */
	SIM_F_APPKILL = 1 << 6,    /* an application dies and starts again */
	SIM_F_RESTORE = 1 << 7,    /* the cluster restored to a snapshot */
	SIM_F_DELETE = 1 << 8,     /* deletes, keeps, and a [retention] */
	SIM_F_SCHEDULE = 1 << 9,   /* a [schedule] starts snapshots */
	SIM_F_HANDSHAKE = 1 << 10, /* connections that close as they open */
	SIM_F_REBOOT = 1 << 11,    /* a daemon and its application die */
	SIM_F_LOSE = 1 << 12,      /* a frame lost, its connection kept */
	SIM_F_ALL = (1 << 13) - 1,
};

/* Bugs --self-check plants, to show that a check can fail. */
enum sim_self_check {
	SIM_SC_NONE,
	SIM_SC_CONSERVATION, /* an application overstates its balance */
	SIM_SC_ONCE,         /* libcut forgets a source when it resumes */
	SIM_SC_DEADLINE,     /* a node runs no timers */
	SIM_SC_IDS,          /* the store hands out one id counter twice */
	SIM_SC_BOUNDS,       /* the bounds are checked against an eighth
	                        of the window, which traffic passes */
	SIM_SC_RESTORE,      /* an application keeps its balance when it
	                        is restored */
};

/* What a failed check was about (--self-check asks for one). */
enum sim_check {
	SIM_C_DEADLINE,     /* a snapshot's end: in time, with a reason */
	SIM_C_CONSERVATION, /* a consistent cut holds the bank's total */
	SIM_C_ONCE,         /* every stream exactly once, in order */
	SIM_C_BOUNDS,       /* queues within their windows */
	SIM_C_IDS,          /* no id issued twice */
	SIM_C_LIVENESS,     /* links come back, the cluster settles */
	SIM_C_SIM,          /* the simulation's own consistency */
	SIM_C_RESTORE,      /* a restore: all or nothing, as recorded */
	SIM_C_RETENTION,    /* deletes reach every node; retention keeps
	                       what it promises */
	SIM_C_SCHEDULE,     /* ticks at their times, each accounted for */
};

struct sim_options {
	size_t nodes_lo, nodes_hi; /* the node count, drawn in this range */
	uint64_t seed, runs;
	unsigned faults;
	int cut;             /* -1: drawn; 0 unaligned; 1 aligned */
	int topology;        /* -1: drawn; 0 every pair; 1 a ring plus chords */
	int64_t duration_ms; /* of the faulty phase */
	unsigned rate;       /* messages per second per application */
	unsigned lat_lo, lat_hi; /* one-way latency, ms, drawn per pair */
	int verbose;
	enum sim_self_check self_check;
	uint64_t restore_kills; /* --restore-kills N, 0 if not given */
	/* The argument of --nodes as given, for the replay line. */
	char nodes_arg[32];
};

/* A frame in flight or arrived: when it arrives, and on which connection
 * (the receiver's id for it). */
struct sim_frame {
	struct sim_frame *next;
	int64_t at;
	uint32_t conn;
	int hello; /* an application's hello */
	/* To the application: the restore generation its daemon had
	 * applied when it sent the frame. */
	uint64_t gen;
	size_t len;
	uint8_t data[];
};

/* Frames in order. */
struct sim_queue {
	struct sim_frame *head, *tail;
	size_t n;
	int64_t last_at; /* arrival of the last one: a connection is FIFO */
};

/*
 * One TCP connection from the dialer src to the listener dst (the only
 * direction frames go: cutd's dialers only send).  dead: reset, its
 * frames lost; closing: src closed it, its frames still go, then dst
 * hears it closed.  The two ends learn of a close at src_close_at and
 * dst_close_at, as the network lets them.
 */
struct sim_conn {
	struct sim_conn *next;
	uint32_t id; /* dst's id for it */
	size_t src, dst;
	int dead, closing;
	int src_told, dst_told; /* the end has been told it closed */
	int64_t doom_at;        /* reset then (SIM_NEVER: not doomed) */
	int64_t src_close_at, dst_close_at;
	/* A lossy spell (simnet_lose_random()): until then, each frame sent
	 * vanishes with loss_pm per mille. */
	int64_t lossy_until;
	unsigned loss_pm;
	struct sim_queue q;
};

/* A node's dialer to another node, as net.c keeps it. */
struct sim_dial {
	struct sim_conn *cur; /* its open connection (src end), or NULL */
	int pipes;            /* 1 while cur is open at this end */
	int reconnected;      /* a connection came up since the last turn */
	int doom;             /* its next connection resets as it opens */
	/* Since chk_at (0: not now) nothing stands in the link's way
	 * (recovered() in simnet.c); it had sent up to chk_upto then. */
	int64_t chk_at;
	uint64_t chk_upto;
	/* A frame of the link, or of its acks, was lost while it had sent
	 * up to lost_upto (0: none pending); its resend may wait until
	 * loss_until, which each ack moves on (recovered()). */
	uint64_t lost_upto, acked_seen;
	int64_t loss_until;
	int64_t attempt_at; /* next connect attempt, or SIM_NEVER */
	int64_t connect_at; /* a connect in progress completes, or SIM_NEVER */
	int64_t backoff;
};

/* The store port of one node, which fails writes while told to. */
struct sim_db {
	struct sim *s;
	struct store *st;
	struct store_fault fault; /* in front of st; fault.failures counts */
	int active;               /* the fault window is open */
	unsigned fail_pm;         /* per mille of writes that fail in it */
	uint64_t last_id;         /* SIM_SC_IDS */
};

/* One node's application: libcut's state (cut_int.h's struct cut, the
 * parts the protocol needs) and the token bank's (simapp.c). */
struct sim_app {
	struct sim *s;
	size_t node;
	/* libcut's protocol state: the code libcut runs (appcore.h).  It
	 * dies with the application (simapp_kill()). */
	struct appcore k;
	/* The connection to the daemon and its resumption, as libcut's
	 * shell keeps them (cut.c, resume.c). */
	uint32_t conn;   /* open, or 0 */
	int64_t dial_at; /* connects then, if the daemon is up */
	int hello_sent;  /* on conn */
	uint64_t frame_gen; /* sim_frame.gen of the frame being taken in */
	/* A life without a restore callback whose node owes it a restore
	 * is restarted then (0: not due). */
	int64_t restart_at;
	int lost, resuming;
	uint32_t hello_conn;
	/* The outgoing channels' nodes, by index in the hello reply. */
	size_t peer[SIM_MAX_NODES];
	/* The down stream: the frames waiting for the application, the
	 * unaligned requests ahead of them and a restore pending, in the
	 * queue libcut keeps (appqueue.h). */
	struct appq q;
	/* The checks' own record: per sending node, the seq of the last
	 * delivery this life of the application was handed (rewound: not
	 * yet set in this life, which may be handed again deliveries an
	 * earlier life had). */
	uint64_t src_taken[SIM_MAX_NODES];
	int rewound[SIM_MAX_NODES];
	/* Its lives (simapp_kill()): per life, the tokens gone before it
	 * began (dead balances, messages the daemon never read), and per
	 * sending node the first and last seq it was handed (0 none). */
	int life;
	int64_t gone[SIM_MAX_LIVES];
	uint64_t first[SIM_MAX_LIVES][SIM_MAX_NODES];
	uint64_t last[SIM_MAX_LIVES][SIM_MAX_NODES];
	/* Per outgoing channel (by node): the seq this life's numbering
	 * started after, the last of what earlier lives sent. */
	uint64_t opened_at[SIM_MAX_NODES];
	/* cut_flush(): the sync in flight (its token, and each channel's
	 * seq when it went), and per channel the seq the daemon confirmed
	 * holding (a dead life's messages up to it must not be lost). */
	uint64_t sync_token;
	uint32_t sync_conn;
	uint64_t sync_seq[SIM_MAX_NODES], flushed[SIM_MAX_NODES];
	int64_t next_flush;
	/* The token bank and the application's behaviour. */
	int64_t balance;
	int64_t next_recv, next_send;
	int64_t slow_until, stop_until, mute_until;
	int64_t recv_every; /* while slow */
	size_t recv_max;    /* items per pass while slow */
	uint64_t taken_total, sent_total;
	/* Restores (simops.c): the life has a restore callback; the
	 * restores taken (the bank's era, index of s->bank); the life the
	 * era began in (the lives before it belong to earlier eras); and per
	 * earlier era and life the bank's change simapp_delta() gave when
	 * the era ended (era_known 0: it could not tell). */
	int restorable, era, life_base;
	int64_t era_delta[SIM_MAX_ERAS][SIM_MAX_LIVES];
	unsigned char era_known[SIM_MAX_ERAS][SIM_MAX_LIVES];
};

/* A control call due at a node's next turn (simops.c). */
enum sim_call {
	SIM_CALL_RESTORE,
	SIM_CALL_DELETE,
	SIM_CALL_KEEP,
	SIM_CALL_PAUSE,
};

/* One node: its daemon (coordinator, database, sockets) and its
 * application. */
struct sim_node {
	struct sim *sim;
	size_t idx;
	const char *name;
	struct coord *c; /* NULL while down */
	uint64_t epoch;  /* its run's */
	int64_t started; /* when it last started */
	struct store *st;
	struct sim_db db;
	/* The conditions, judged after each turn's commit as cutd does
	 * (store/judge.h), on a read-only connection to the same database
	 * in memory (its URI in dbpath). */
	struct cond *cond;
	struct judge judge;
	char dbpath[96];
	int64_t restart_at;     /* while down: when it starts again */
	int64_t wake;           /* its next timer */
	uint32_t next_conn;     /* listener and application connection ids */
	struct sim_queue inbox; /* peer frames arrived, not yet read */
	uint32_t closed[64];    /* listener connections closed, to tell */
	size_t nclosed;
	struct sim_dial dial[SIM_MAX_NODES];
	/* The application socket: the connection open (0 none), frames for
	 * it not yet on a connection, frames on it, and the up stream. */
	uint32_t app_conn, app_removed, app_told;
	struct sim_queue app_held, app_down, app_up;
	struct sim_queue app_inbox;
	int starts;     /* coord_start calls due this turn */
	int flap;       /* reset the application's connection again as soon as
	                   its next hello is in the daemon's socket */
	int flap_early; /* ...or as soon as it opens, before its hello */
	/* The snapshots running here, as last seen. */
	struct sim_seen *live;
	size_t nlive, caplive;
	struct sim_app app;
	uint64_t turns, crashes;
	/* The last fault that could hold its links' acks back: a crash or
	 * start, a storage fault starting or ending, a partition anywhere,
	 * a reset of one of its connections (simnet_disturb()). */
	int64_t disturbed;
	/* Its daemon's turn (core/turn.c) over simnet.c's port, while up. */
	struct turn turn;
	struct turn_port port;
	uint64_t bad_seen; /* bad frames its coordinator counted */
	uint64_t gen_seen; /* the restore generation it last had */
	int64_t gen_at;    /* when it changed (0: never) */
	/* Control calls due (each counted in starts too, which brings the
	 * turn: sim_start_snapshot() makes them first). */
	enum sim_call calls[8];
	size_t ncalls;
	/* The schedule, as this run of the daemon has it: its counts as
	 * last seen, the wall clock of its first tick and of its last
	 * turn, and whether the simulation paused it. */
	uint64_t sched_ticks, sched_started, sched_skipped;
	int64_t sched_from, last_turn;
	int sched_paused;
};

/* The messages of one channel, by seq from 1: their amounts. */
struct sim_log {
	int32_t *amount;
	size_t n, cap;
};

/* A snapshot this run started, as the checks follow it. */
struct sim_snap {
	char id[ENGINE_ID_MAX + 1];
	size_t initiator;
	int64_t started, deadline; /* deadline: started + timeout */
	uint32_t timeout;
	int final;   /* the one started after the faults healed */
	int crashed; /* its initiator died before its deadline */
	int lost_ok; /* ...with its end only in memory: no row is fine */
	int sched;   /* started by the schedule */
	/* How it ended at its initiator (end_seen), from the row. */
	int end_seen, complete;
	int64_t ended_ms;
	/* Deleted at its initiator by a Delete (retention's are found at
	 * the end); kept (its row says so after the turn of the call). */
	int deleted, kept;
	uint64_t delete_failures; /* the store's failures at the call */
	int delete_due, keep_due; /* the row is looked at after the turn */
};

/* A restore the simulation asked for, and what its snapshot recorded
 * (read from the restorer's database when the call succeeded). */
struct sim_restore {
	int active;  /* started, and its era not yet taken by every node */
	int decided; /* the restorer applied it */
	int over;    /* the restorer's call ended (or it died) */
	char id[ENGINE_ID_MAX + 1];
	size_t restorer;
	uint64_t gen; /* the generation it brings */
	int64_t started;
	char state[SIM_MAX_NODES][80];
	int has[SIM_MAX_NODES][SIM_MAX_NODES];
	uint64_t m[SIM_MAX_NODES][SIM_MAX_NODES],
	    n[SIM_MAX_NODES][SIM_MAX_NODES];
	/* Per channel the recorded amounts, seq m+1 .. n. */
	struct sim_log rec[SIM_MAX_NODES][SIM_MAX_NODES];
	int64_t total; /* states and messages: the bank after it */
	int bad;       /* could not be read back */
};

/* A participant's own copy deleted there (only that copy goes). */
struct sim_local_delete {
	char id[ENGINE_ID_MAX + 1];
	size_t node;
	uint64_t failures; /* the store's failures at the call */
	int due, done;
};

/* Where a running snapshot was first seen at a node. */
struct sim_seen {
	char id[ENGINE_ID_MAX + 1];
	int64_t since, bound;
	int mark;
};

struct sim_stats {
	uint64_t runs, failed;
	uint64_t caught; /* runs in which --self-check's check failed */
	uint64_t started, refused, complete, aborted, final_ok;
	uint64_t messages, crashes, stops, partitions, drops, losses, storage,
	    slow;
	uint64_t applinks, appkills, kill_lost, kill_again, frames, turns,
	    recorded, db_failures;
	uint64_t judged; /* conditions judged on complete snapshots */
	uint64_t reboots, reboot_lost;
	int64_t sim_ms;
	uint64_t reasons[10];
	/* simops.c */
	uint64_t restores, restores_refused, restores_done, restores_late,
	    restores_given_up, replayed;
	/* applications killed while a restore ran; lives without a restore
	 * callback restarted because their node owed them one */
	uint64_t restore_kills, restore_restarts;
	uint64_t deletes, deletes_refused, deletes_undone, local_deletes,
	    retained_away, keeps;
	uint64_t sched_ticks, sched_started, sched_skipped, sched_other;
	uint64_t unverified; /* snapshots of an era whose bank is unknown */
};

struct sim {
	const struct sim_options *o;
	uint64_t seed;
	struct lab_rng rng;
	struct config *cfg;
	size_t n;
	struct sim_node nodes[SIM_MAX_NODES];
	struct sim_conn *conns;
	/* blocked[a][b]: frames from a do not reach b.  lat[a][b]: the
	 * one-way latency from a to b, in milliseconds. */
	unsigned char blocked[SIM_MAX_NODES][SIM_MAX_NODES];
	unsigned char lat[SIM_MAX_NODES][SIM_MAX_NODES];
	int64_t now, heal_at, settle_at, check_at;
	int phase; /* 0 faults, 1 healed, 2 traffic stopped */
	/* The snapshot after the faults heal: where, whether it is still to
	 * be started, and its index in snaps (SIZE_MAX before). */
	size_t final_node, final_id;
	int final_pending;
	struct cutproto_arena arena;
	/* Per channel src -> dst: the amount of each message by seq (from
	 * 1), as the sender's application sent it. */
	struct sim_log sent[SIM_MAX_NODES][SIM_MAX_NODES];
	int64_t total; /* tokens in the bank before any restore */
	/* Restores: the one running or last run; the bank's era (restores
	 * decided) and its total in each; the era s->sent is for, and the
	 * next era's channels (nsent), from the restored snapshot on, while
	 * some application has not yet taken the restore. */
	struct sim_restore rst;
	int era, log_era;
	int64_t bank[SIM_MAX_ERAS + 1];
	struct sim_log nsent[SIM_MAX_NODES][SIM_MAX_NODES];
	/* The last decided restore's replay: per channel, its last seq (0
	 * none), which the receiving application is to take before its
	 * daemon may die (the README leaves that window out). */
	uint64_t replay_to[SIM_MAX_NODES][SIM_MAX_NODES];
	/* Reboots (simapp_reboot()): a node's daemon and application die
	 * together, and its channels number from 1 again, a new generation
	 * of each one's log.  gen: per node, its reboots so far, the
	 * generation of its outgoing channels (s->sent is the current one;
	 * a message of generation g > 0 says so in its payload, "gen": g);
	 * gen_life: the node's life that began generation g.  Per channel
	 * src -> dst and earlier generation g: glog, what was sent in it;
	 * gfwd, what the receiving daemon had of it when src rebooted (the
	 * old daemon had forwarded them: each must be handed); gend, once
	 * the receiving application's stream left it, the last seq handed
	 * of it (the rest was lost).  rg: the generation the receiving
	 * stream is in, and hpos its highest seq handed to any life of the
	 * receiver. */
	int gen[SIM_MAX_NODES];
	int gen_life[SIM_MAX_NODES][SIM_MAX_LIVES];
	struct sim_log glog[SIM_MAX_NODES][SIM_MAX_NODES][SIM_MAX_LIVES];
	uint64_t gfwd[SIM_MAX_NODES][SIM_MAX_NODES][SIM_MAX_LIVES];
	uint64_t gend[SIM_MAX_NODES][SIM_MAX_NODES][SIM_MAX_LIVES];
	int rg[SIM_MAX_NODES][SIM_MAX_NODES];
	uint64_t hpos[SIM_MAX_NODES][SIM_MAX_NODES];
	unsigned nreboots;
	struct sim_local_delete *ldel;
	size_t nldel;
	struct sim_snap *snaps;
	size_t nsnaps, capsnaps;
	/* The schedule of faults, and the next snapshot start. */
	struct sim_event *events;
	size_t nevents, next_event;
	int64_t next_start;
	/* The first failure, and how many there were. */
	char fail[1024];
	uint64_t nfail;
	unsigned caught; /* 1 << enum sim_check of each failed check */
	struct sim_stats *st;
};

/* sim.c */
/* cutlab sim ARGS...: argv holds the arguments after "sim". */
int sim_main(int argc, char **argv);
int64_t sim_wall(const struct sim *s);
uint64_t sim_rand(struct sim *s, uint64_t n);             /* 0 .. n-1 */
int64_t sim_range(struct sim *s, int64_t lo, int64_t hi); /* lo .. hi */
/* Records a failed check (the first one is kept whole). */
void sim_fail(struct sim *s, enum sim_check check, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sim_trace(struct sim *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The node's coordinator saw snapshot id running (check bookkeeping). */
void sim_note_running(struct sim *s, size_t node);
/* The amount a bank message carries ({"amount": k}): 0, or -1 when the
 * payload is not one. */
int sim_amount(const void *payload, size_t len, long *ret);
/* A Start call at node n, as control.c makes it. */
void sim_start_snapshot(struct sim *s, struct sim_node *n);

/* A daemon dies (the crash fault): its batch rolled back, back after
 * down ms; stop: coord_stop() first. */
void sim_crash(struct sim *s, struct sim_node *n, int64_t down, int stop);

/* simnet.c */
void simnet_frame_free(struct sim_frame *f);
struct sim_frame *simnet_frame_new(size_t len);
void simnet_queue_push(struct sim_queue *q, struct sim_frame *f);
struct sim_frame *simnet_queue_pop(struct sim_queue *q);
void simnet_queue_clear(struct sim_queue *q);
/* The network's next event after now, or SIM_NEVER. */
int64_t simnet_next_event(struct sim *s);
/* Moves frames and close notices due at s->now to their receivers,
 * and completes dials. */
void simnet_deliver(struct sim *s);
/* Node n's daemon: one turn of cutd's loop, at s->now. */
void simnet_turn(struct sim *s, struct sim_node *n);
int simnet_due(const struct sim *s, const struct sim_node *n);
/* Crash and start of a daemon; a reset; a partition. */
void simnet_crash(struct sim *s, struct sim_node *n);
int simnet_start(struct sim *s, struct sim_node *n);
void simnet_reset_random(struct sim *s);
void simnet_partition(struct sim *s, int one_way);
/* Resets node n's connection to peer (its application's when peer is
 * n or s->n), and makes the next one close as it opens. */
void simnet_handshake(struct sim *s, struct sim_node *n, size_t peer);
/* Notes that node i's links may be held back now (see sim_node). */
void simnet_disturb(struct sim *s, size_t i);
void simnet_lose_random(struct sim *s, int64_t spell, unsigned pm);
/* Checks that the links a fault reset are whole again in time (after
 * every step). */
void simnet_recovered(struct sim *s);
void simnet_heal(struct sim *s);
void simnet_free(struct sim *s);
/* The application's connection to its daemon opens, or closes (both ends
 * know at once: IPC). */
void simnet_app_connect(struct sim *s, struct sim_node *n);
void simnet_app_close(struct sim *s, struct sim_node *n);

/* simapp.c */
void simapp_init(struct sim *s, struct sim_app *a, size_t node,
                 int64_t balance);
void simapp_fini(struct sim_app *a);
int64_t simapp_next_event(const struct sim_app *a);
/* The application's due work at s->now: connect, receive, send, timers. */
void simapp_step(struct sim *s, struct sim_app *a);
/* A frame from the daemon arrived (libcut's receiving thread). */
void simapp_ingest(struct sim *s, struct sim_app *a, const uint8_t *buf,
                   size_t len);
/* Its connection closed (the daemon died, or the link was reset). */
void simapp_conn_closed(struct sim *s, struct sim_app *a);
/* The application dies (kill -9): its libcut with it, what it had
 * written to its daemon's socket and not yet read, its balance; it starts
 * again, empty, a little later. */
void simapp_kill(struct sim *s, struct sim_app *a);
/* The node's daemon and application die together (a reboot): what its
 * application sent and its daemon had not passed on is lost, and its
 * channels number from 1 again; both start again later.  Returns 0 if it
 * did not (the cases the README leaves out). */
int simapp_reboot(struct sim *s, struct sim_app *a, int64_t down);
/* Whether a daemon's death at a's node now would lose messages the
 * README promises: an old generation of an incoming channel, whose
 * sender rebooted, may still be held only by that daemon. */
int simapp_holds_old(const struct sim *s, const struct sim_app *a);
/* The ends of the generations of every channel that the receiving
 * streams have not left yet (the end of the run). */
void simapp_end_gens(struct sim *s);
/* What the bank's total has changed by at a's node for a snapshot that
 * recorded a's life `life` there: the tokens earlier lives took with them,
 * less the deliveries handed to them that the daemon hands again. */
int64_t simapp_delta(const struct sim *s, const struct sim_app *a, int life);
/* Whether messages an earlier life of a sent are still held only by its
 * daemon (not yet taken by their receivers). */
int simapp_orphans(const struct sim *s, const struct sim_app *a);
/* The channel from -> to, checked at the end: every message sent was
 * taken, once, in order. */
uint64_t simapp_taken_from(const struct sim_app *a, size_t from);
/* The same for the channel from -> to in its current generation (0 if the
 * receiving stream has not reached it). */
uint64_t simapp_stream_taken(const struct sim *s, size_t from, size_t to);

/* The log of channel src -> dst as an application in era `era` sees
 * it. */
struct sim_log *sim_log_of(struct sim *s, size_t src, size_t dst, int era);
void sim_log_put(struct sim_log *log, int32_t amount);
struct sim_snap *sim_snap_by_id(struct sim *s, const char *id);
/* A snapshot started at n (by a Start or by the schedule): id. */
struct sim_snap *sim_snap_add(struct sim *s, struct sim_node *n, const char *id,
                              uint32_t timeout, int final);

/* simops.c */
/* The configuration's [schedule] and [retention], drawn. */
void simops_config(struct sim *s, struct config *cfg);
/* Makes node n's next control call. */
void simops_call(struct sim *s, struct sim_node *n, enum sim_call call);
/* After each turn of node i (sim_note_running()). */
void simops_after_turn(struct sim *s, size_t i);
/* Before node n dies: its schedule's counts; whether a crash now is one
 * the README leaves out (a restore that could end half applied). */
void simops_crash(struct sim *s, struct sim_node *n);
int simops_crash_unsafe(struct sim *s, struct sim_node *n);
/* Whether something simops follows has not finished; why. */
int simops_busy(struct sim *s, char *why, size_t len);
/* The end of a run: restores, deletes, retention, schedule. */
void simops_final(struct sim *s);
void simops_free(struct sim *s);
/* The application takes an AppRestore (simapp.c): checked against what
 * the snapshot recorded, and its era's accounting begins. */
void simops_app_restore(struct sim *s, struct sim_app *a,
                        const Cut__V1__AppRestore *r);
/* The bank's change at a's node for a snapshot that recorded its life
 * `life` in era `era`: 0 and *known 0 when it cannot be told. */
int64_t simapp_delta_era(const struct sim *s, const struct sim_app *a, int era,
                         int life, int *known);
/* The application's era begins (its restore): saves what the lives of
 * the ending era changed, and starts counting afresh. */
void simapp_new_era(struct sim *s, struct sim_app *a);
/* a's life takes again the restore that began its era, which an earlier
 * life took and died before its daemon read AppRestored: the era begins
 * again at this life (the daemon ignored all the earlier ones did in
 * it, and hands the state and the replay again). */
void simapp_era_again(struct sim *s, struct sim_app *a);

/* simdb.c */
void simdb_init(struct sim_db *d, struct sim *s, struct store *st);
struct store_port simdb_port(struct sim_db *d);
/* Ends a batch a crash left open. */
void simdb_crash(struct sim_db *d);

#endif /* CUT_SIM_H */
