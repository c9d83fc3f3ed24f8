/*
 * perm.h - who may call which control method, and the limits on Start.
 *
 * The control socket is an IPC socket of mode 0660: whoever can connect
 * (the daemon's user, root, the socket's group) may read.  Methods that
 * change state are for fewer callers, identified by the peer credentials
 * of their connection (SO_PEERCRED, through nng's ipc:peer-uid/gid):
 *
 *   class        methods                    allowed
 *   PERM_READ    Status, List, Get, Wait,   anyone who could connect
 *                Schedule Show
 *   PERM_START   Start, Evaluate, Schedule  the admins (below), and the
 *                Pause and Resume           uid of the application
 *                                           connected to this daemon
 *   PERM_ADMIN   Delete, Keep, Restore,     the daemon's own uid, root,
 *                and any method the table   members of admin_group
 *                does not know
 *
 * A method's class is the perm column of its row in the methods' table
 * (proto/ctltab.h).
 *
 * Membership of admin_group: the caller's primary gid (from its
 * connection), or the supplementary groups of the caller's uid in the
 * group database (getgrouplist).  A caller seen as the overflow uid (the
 * daemon runs in a user namespace that does not map it, as systemd's
 * PrivateUsers= does) may only read.  A TCP control endpoint gives no
 * credentials: there every call but PERM_READ is refused, unless the
 * cluster file says tcp_control = full.
 *
 * perm_check() and the token bucket are pure: no I/O, no clock.  Only
 * perm_groups() reads the user and group databases.
 */
#ifndef CUT_PERM_H
#define CUT_PERM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum perm_class { PERM_READ, PERM_START, PERM_ADMIN };

/* The verdicts: 0 allows. */
enum perm_verdict {
	PERM_ALLOW = 0,
	PERM_DENY_TCP,      /* no credentials on this transport */
	PERM_DENY_NOCREDS,  /* an IPC caller whose credentials are unknown */
	PERM_DENY_USER,     /* a known caller without the right */
	PERM_DENY_UNMAPPED, /* the overflow uid of a user namespace */
};

/* The uid the kernel reports for a peer whose uid is not mapped into the
 * reader's user namespace (kernel.overflowuid, 65534 unless changed).
 * Every such caller reads as this one uid, so it proves nothing: it never
 * counts as the application's user or as a member of a group. */
#define PERM_OVERFLOW_UID 65534

/* How many supplementary groups perm_groups() looks at. */
#define PERM_GROUPS_MAX 256

/* The caller of one request. */
struct perm_caller {
	int tcp;             /* 1: came over TCP, no credentials */
	int has_creds;       /* uid and gid are known */
	uid_t uid;           /* from the connection */
	gid_t gid;           /* the peer's primary gid, from the connection */
	const gid_t *groups; /* the uid's groups (may be NULL), borrowed */
	size_t ngroups;
};

/* What the daemon allows. */
struct perm_policy {
	uid_t self_uid; /* the daemon's own uid */
	long admin_gid; /* admin_group, or -1 */
	int tcp_full;   /* 1: tcp_control = full */
	long app_uid;   /* uid of the connected application, or -1 */
};

/* The class of a control method, by its gRPC path: its row's in the
 * methods' table (ctltab.h); unknown paths are PERM_ADMIN, so that a
 * method added later is closed until classified. */
enum perm_class perm_method_class(const char *method);

/* Decides whether caller may call method under policy.  Pure. */
enum perm_verdict perm_check(const char *method, const struct perm_policy *pol,
                             const struct perm_caller *caller);

/*
 * Writes to buf (len bytes, always NUL-terminated) the sentence that
 * explains verdict v for method: which callers may call it and why this
 * caller is not one of them.  admin_group is the group's name or NULL.
 */
void perm_explain(char *buf, size_t len, enum perm_verdict v,
                  const char *method, const struct perm_policy *pol,
                  const char *admin_group, const struct perm_caller *caller);

/*
 * Stores in groups (room for max) the groups of user uid, with gid among
 * them, and returns how many, or 0 if uid is not in the user database.
 * Reads the user and group databases.
 */
size_t perm_groups(uid_t uid, gid_t gid, gid_t *groups, size_t max);

/*
 * A token bucket: up to burst calls at once, rate per second on average.
 * Tokens are counted in thousandths so that the refill stays exact in
 * whole milliseconds.
 */
struct perm_bucket {
	int64_t milli; /* tokens x 1000 */
	int64_t last_ms;
	int started;
};

/* Takes one token at now_ms (a monotonic clock) if there is one: returns
 * 1 if it did, 0 if the bucket is empty.  rate and burst may change from
 * call to call (a reload); a new bucket starts full. */
int perm_bucket_take(struct perm_bucket *b, unsigned rate, unsigned burst,
                     int64_t now_ms);

/* Milliseconds until perm_bucket_take() would succeed at the given rate;
 * 0 if it would now. */
int64_t perm_bucket_wait_ms(const struct perm_bucket *b, unsigned rate,
                            unsigned burst, int64_t now_ms);

#endif /* CUT_PERM_H */
