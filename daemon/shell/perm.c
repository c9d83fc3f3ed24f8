/*
 * perm.c - the permission decision of the control service and the token
 * bucket of its Start calls.  See perm.h for the rules.
 *
 * Everything but perm_groups() is pure, so that the unit tests can try
 * every combination of method, uid, gid and groups without users.  A
 * method's class is its row's in the methods' table (proto/ctltab.h).
 */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cutproto.h"
#include "perm.h"

/* perm.h's classes are the perm column of the methods' table. */
_Static_assert(PERM_READ == (int)CTLTAB_READ &&
                   PERM_START == (int)CTLTAB_START &&
                   PERM_ADMIN == (int)CTLTAB_ADMIN,
               "perm.h and ctltab.h disagree on the classes");

enum perm_class
perm_method_class(const char *method)
{
	const struct ctltab_row *row = ctltab_find(method);

	/* Evaluate holds up the daemon's loop for up to its deadline, and
	 * a watcher calls it with Start: whoever may start snapshots.
	 * Pausing and resuming the schedule is no more than starting. */
	return row != NULL ? (enum perm_class)row->perm : PERM_ADMIN;
}

static int
in_admin_group(const struct perm_policy *pol, const struct perm_caller *c)
{
	if (pol->admin_gid < 0)
		return 0;
	if ((long)c->gid == pol->admin_gid)
		return 1;
	for (size_t i = 0; c->groups != NULL && i < c->ngroups; i++)
		if ((long)c->groups[i] == pol->admin_gid)
			return 1;
	return 0;
}

enum perm_verdict
perm_check(const char *method, const struct perm_policy *pol,
           const struct perm_caller *c)
{
	enum perm_class k = perm_method_class(method);

	if (k == PERM_READ)
		return PERM_ALLOW;
	if (c->tcp)
		return pol->tcp_full ? PERM_ALLOW : PERM_DENY_TCP;
	if (!c->has_creds)
		return PERM_DENY_NOCREDS;
	if (c->uid == 0 || c->uid == pol->self_uid)
		return PERM_ALLOW;
	if (c->uid == PERM_OVERFLOW_UID)
		return PERM_DENY_UNMAPPED;
	if (in_admin_group(pol, c))
		return PERM_ALLOW;
	if (k == PERM_START && pol->app_uid >= 0 &&
	    (long)c->uid == pol->app_uid)
		return PERM_ALLOW;
	return PERM_DENY_USER;
}

void
perm_explain(char *buf, size_t len, enum perm_verdict v, const char *method,
             const struct perm_policy *pol, const char *admin_group,
             const struct perm_caller *c)
{
	char who[160];
	const struct ctltab_row *row = ctltab_find(method);
	const char *what = row != NULL ? row->does : "is not a method";

	if (admin_group != NULL)
		snprintf(
		    who, sizeof(who),
		    "the daemon's user (uid %ld), root or members of group "
		    "%s",
		    (long)pol->self_uid, admin_group);
	else
		snprintf(who, sizeof(who),
		         "the daemon's user (uid %ld) or root (no admin_group "
		         "is set)",
		         (long)pol->self_uid);
	switch (v) {
	case PERM_ALLOW:
		snprintf(buf, len, "%s is allowed", method);
		break;
	case PERM_DENY_TCP:
		snprintf(
		    buf, len,
		    "%s %s, and this control endpoint is TCP, where callers "
		    "cannot be identified: use the node's IPC control "
		    "socket, or set tcp_control = full",
		    method, what);
		break;
	case PERM_DENY_NOCREDS:
		snprintf(
		    buf, len,
		    "%s %s, and the caller's credentials could not be read",
		    method, what);
		break;
	case PERM_DENY_UNMAPPED:
		snprintf(buf, len,
		         "%s %s, and the caller shows as uid %d, the uid of "
		         "every user outside the daemon's user namespace "
		         "(systemd's PrivateUsers=), which proves nothing",
		         method, what, PERM_OVERFLOW_UID);
		break;
	case PERM_DENY_USER:
		snprintf(
		    buf, len,
		    "%s %s: only %s%s may call it, and uid %ld (gid %ld) is "
		    "not one of them",
		    method, what, who,
		    perm_method_class(method) == PERM_START
		        ? ", or the connected application's user"
		        : "",
		    (long)c->uid, (long)c->gid);
		break;
	}
}

size_t
perm_groups(uid_t uid, gid_t gid, gid_t *groups, size_t max)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	int n = (int)max;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 ||
	    found == NULL || max == 0)
		return 0;
	/* When there are more than max, getgrouplist() returns -1 and fills
	 * the first max: enough to look in, as documented in perm.h. */
	if (getgrouplist(pw.pw_name, gid, groups, &n) < 0 && n > (int)max)
		n = (int)max;
	return n > 0 ? (size_t)n : 0;
}

static int64_t
capacity(unsigned burst)
{
	return (int64_t)(burst ? burst : 1) * 1000;
}

/* Adds the tokens earned since the last call: rate per second is rate
 * thousandths per millisecond. */
static void
refill(struct perm_bucket *b, unsigned rate, unsigned burst, int64_t now_ms)
{
	if (!b->started) {
		b->started = 1;
		b->milli = capacity(burst);
		b->last_ms = now_ms;
		return;
	}
	if (now_ms > b->last_ms) {
		b->milli += (now_ms - b->last_ms) * (int64_t)rate;
		b->last_ms = now_ms;
	}
	if (b->milli > capacity(burst))
		b->milli = capacity(burst);
}

int
perm_bucket_take(struct perm_bucket *b, unsigned rate, unsigned burst,
                 int64_t now_ms)
{
	refill(b, rate, burst, now_ms);
	if (b->milli < 1000)
		return 0;
	b->milli -= 1000;
	return 1;
}

int64_t
perm_bucket_wait_ms(const struct perm_bucket *b, unsigned rate, unsigned burst,
                    int64_t now_ms)
{
	struct perm_bucket copy = *b;
	int64_t missing;

	refill(&copy, rate, burst, now_ms);
	if (copy.milli >= 1000)
		return 0;
	missing = 1000 - copy.milli;
	return rate ? (missing + rate - 1) / rate : INT64_MAX;
}
