/*
 * test_perm.c - daemon/shell/perm.c: which caller may call which control method
 * (method, uid, gid, groups -> allow or deny, and the sentence that says
 * why), and the token bucket that bounds Start calls.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cutproto.h"
#include "perm.h"

#define SELF   998
#define ADMIN  1500
#define SOCKET 999

static const char *const readers[] = {CUTPROTO_METHOD_GET, CUTPROTO_METHOD_LIST,
                                      CUTPROTO_METHOD_WAIT,
                                      CUTPROTO_METHOD_STATUS};
static const char *const writers[] = {CUTPROTO_METHOD_START,
                                      CUTPROTO_METHOD_DELETE,
                                      "/cut.v1.Snapshots/Future", "", NULL};

static struct perm_policy
policy(long admin_gid)
{
	struct perm_policy p = {.self_uid = SELF,
	                        .admin_gid = admin_gid,
	                        .tcp_full = 0,
	                        .app_uid = -1};
	return p;
}

static struct perm_caller
caller(uid_t uid, gid_t gid, const gid_t *groups, size_t n)
{
	struct perm_caller c = {.has_creds = 1,
	                        .uid = uid,
	                        .gid = gid,
	                        .groups = groups,
	                        .ngroups = n};
	return c;
}

Test(perm, method_classes)
{
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(perm_method_class(readers[i]), PERM_READ, "%s",
		             readers[i]);
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_START), PERM_START);
	/* Evaluate stalls the loop up to its deadline: who may Start. */
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_EVALUATE), PERM_START);
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_DELETE), PERM_ADMIN);
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_KEEP), PERM_ADMIN);
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_RESTORE), PERM_ADMIN);
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_SCHEDULE_SHOW),
	             PERM_READ);
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_SCHEDULE_PAUSE),
	             PERM_START);
	cr_assert_eq(perm_method_class(CUTPROTO_METHOD_SCHEDULE_RESUME),
	             PERM_START);
	/* Unknown methods are closed until classified. */
	cr_assert_eq(perm_method_class("/cut.v1.Snapshots/Future"), PERM_ADMIN);
	cr_assert_eq(perm_method_class("/cut.v1.Snapshots/get"), PERM_ADMIN);
	cr_assert_eq(perm_method_class(NULL), PERM_ADMIN);
}

/* The class of every method is its row's in the methods' table
 * (proto/ctltab.h): 5 readers, 4 starters, 3 admins' methods. */
Test(perm, classes_are_the_table_rows)
{
	size_t n[3] = {0};

	for (size_t i = 0; i < CTLTAB_NROWS; i++) {
		enum perm_class k = perm_method_class(ctltab_rows[i].method);
		cr_assert_eq((int)k, (int)ctltab_rows[i].perm, "%s",
		             ctltab_rows[i].method);
		n[k]++;
	}
	cr_assert_eq(n[PERM_READ], 5);
	cr_assert_eq(n[PERM_START], 4);
	cr_assert_eq(n[PERM_ADMIN], 3);
}

Test(perm, readers_are_open_to_anyone_who_connects)
{
	struct perm_policy pol = policy(ADMIN);
	struct perm_caller c = caller(1234, 1234, NULL, 0);
	struct perm_caller nocreds = {0}, tcp = {.tcp = 1};

	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(perm_check(readers[i], &pol, &c), PERM_ALLOW);
		cr_assert_eq(perm_check(readers[i], &pol, &nocreds),
		             PERM_ALLOW);
		cr_assert_eq(perm_check(readers[i], &pol, &tcp), PERM_ALLOW);
	}
}

Test(perm, writers_need_self_root_or_admin)
{
	struct perm_policy pol = policy(ADMIN);
	gid_t sup_admin[] = {100, SOCKET, ADMIN};
	gid_t sup_other[] = {100, SOCKET};
	struct perm_caller self = caller(SELF, SOCKET, NULL, 0);
	struct perm_caller root = caller(0, 0, NULL, 0);
	struct perm_caller primary = caller(1234, ADMIN, NULL, 0);
	struct perm_caller sup = caller(1234, 1234, sup_admin, 3);
	struct perm_caller user = caller(1234, 1234, sup_other, 2);
	struct perm_caller sockgid = caller(1234, SOCKET, NULL, 0);

	for (size_t i = 0; i < 5; i++) {
		const char *m = writers[i];

		cr_assert_eq(perm_check(m, &pol, &self), PERM_ALLOW, "%s", m);
		cr_assert_eq(perm_check(m, &pol, &root), PERM_ALLOW, "%s", m);
		cr_assert_eq(perm_check(m, &pol, &primary), PERM_ALLOW);
		cr_assert_eq(perm_check(m, &pol, &sup), PERM_ALLOW);
		cr_assert_eq(perm_check(m, &pol, &user), PERM_DENY_USER);
		cr_assert_eq(perm_check(m, &pol, &sockgid), PERM_DENY_USER);
	}
}

Test(perm, without_admin_group_only_self_and_root)
{
	struct perm_policy pol = policy(-1);
	gid_t sup[] = {ADMIN};
	struct perm_caller user = caller(1234, ADMIN, sup, 1);
	struct perm_caller root = caller(0, 0, NULL, 0);

	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &user),
	             PERM_DENY_USER);
	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &root),
	             PERM_ALLOW);
}

Test(perm, the_connected_application_may_start_not_delete)
{
	struct perm_policy pol = policy(ADMIN);
	struct perm_caller app = caller(2000, 2000, NULL, 0);
	struct perm_caller other = caller(2001, 2000, NULL, 0);

	pol.app_uid = 2000;
	cr_assert_eq(perm_check(CUTPROTO_METHOD_START, &pol, &app), PERM_ALLOW);
	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &app),
	             PERM_DENY_USER);
	cr_assert_eq(perm_check(CUTPROTO_METHOD_START, &pol, &other),
	             PERM_DENY_USER);
}

Test(perm, tcp_and_unknown_credentials)
{
	struct perm_policy pol = policy(ADMIN);
	struct perm_caller tcp = {.tcp = 1};
	struct perm_caller nocreds = {0};

	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &tcp),
	             PERM_DENY_TCP);
	cr_assert_eq(perm_check(CUTPROTO_METHOD_START, &pol, &tcp),
	             PERM_DENY_TCP);
	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &nocreds),
	             PERM_DENY_NOCREDS);
	pol.tcp_full = 1;
	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &tcp),
	             PERM_ALLOW);
	/* tcp_control = full says nothing about IPC callers. */
	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &nocreds),
	             PERM_DENY_NOCREDS);
}

Test(perm, the_overflow_uid_proves_nothing)
{
	struct perm_policy pol = policy(ADMIN);
	gid_t sup[] = {ADMIN};
	struct perm_caller nobody = caller(PERM_OVERFLOW_UID, ADMIN, sup, 1);
	char buf[256];

	/* Under PrivateUsers= every other user, the application's too,
	 * reads as the overflow uid. */
	pol.app_uid = PERM_OVERFLOW_UID;
	cr_assert_eq(perm_check(CUTPROTO_METHOD_START, &pol, &nobody),
	             PERM_DENY_UNMAPPED);
	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &nobody),
	             PERM_DENY_UNMAPPED);
	cr_assert_eq(perm_check(CUTPROTO_METHOD_LIST, &pol, &nobody),
	             PERM_ALLOW);
	/* A daemon that itself runs as that uid still trusts itself. */
	pol.self_uid = PERM_OVERFLOW_UID;
	cr_assert_eq(perm_check(CUTPROTO_METHOD_DELETE, &pol, &nobody),
	             PERM_ALLOW);
	perm_explain(buf, sizeof(buf), PERM_DENY_UNMAPPED,
	             CUTPROTO_METHOD_DELETE, &pol, NULL, &nobody);
	cr_assert(strstr(buf, "PrivateUsers=") != NULL, "%s", buf);
}

Test(perm, explanations_name_the_method_and_the_reason)
{
	struct perm_policy pol = policy(ADMIN);
	struct perm_caller user = caller(1234, 1235, NULL, 0);
	struct perm_caller tcp = {.tcp = 1};
	char buf[256];

	perm_explain(buf, sizeof(buf), PERM_DENY_USER, CUTPROTO_METHOD_DELETE,
	             &pol, "cutd-admin", &user);
	cr_assert_str_eq(buf, "/cut.v1.Snapshots/Delete deletes a snapshot: "
	                      "only the daemon's user (uid 998), root or "
	                      "members of group cutd-admin may call it, and "
	                      "uid 1234 (gid 1235) is not one of them");
	perm_explain(buf, sizeof(buf), PERM_DENY_USER, CUTPROTO_METHOD_START,
	             &pol, NULL, &user);
	cr_assert_str_eq(buf, "/cut.v1.Snapshots/Start starts a snapshot: "
	                      "only the daemon's user (uid 998) or root (no "
	                      "admin_group is set), or the connected "
	                      "application's user may call it, and uid 1234 "
	                      "(gid 1235) is not one of them");
	/* What the call does comes from its row (ctltab.h's does). */
	perm_explain(buf, sizeof(buf), PERM_DENY_USER,
	             CUTPROTO_METHOD_SCHEDULE_PAUSE, &pol, NULL, &user);
	cr_assert(strstr(buf, "/cut.v1.Schedule/Pause pauses the schedule: ") ==
	              buf,
	          "%s", buf);
	perm_explain(buf, sizeof(buf), PERM_DENY_TCP, CUTPROTO_METHOD_DELETE,
	             &pol, NULL, &tcp);
	cr_assert(strstr(buf, "/cut.v1.Snapshots/Delete") == buf, "%s", buf);
	cr_assert(strstr(buf, "tcp_control = full") != NULL, "%s", buf);
	perm_explain(buf, 16, PERM_DENY_TCP, CUTPROTO_METHOD_DELETE, &pol, NULL,
	             &tcp);
	cr_assert_eq(strlen(buf), 15);
}

Test(perm, groups_of_root)
{
	gid_t groups[PERM_GROUPS_MAX];
	size_t n = perm_groups(0, 0, groups, PERM_GROUPS_MAX), i;

	cr_assert_geq(n, 1);
	for (i = 0; i < n && groups[i] != 0; i++)
		;
	cr_assert_lt(i, n, "root's groups include gid 0");
	cr_assert_eq(perm_groups(0, 0, groups, 0), 0);
	/* A uid nobody has: no groups, so no membership. */
	cr_assert_eq(perm_groups(4000000001u, 0, groups, PERM_GROUPS_MAX), 0);
}

Test(perm, bucket_burst_then_rate)
{
	struct perm_bucket b = {0};
	int i;

	/* A new bucket is full: burst calls at once, then none. */
	for (i = 0; i < 5; i++)
		cr_assert_eq(perm_bucket_take(&b, 2, 5, 1000), 1, "call %d", i);
	cr_assert_eq(perm_bucket_take(&b, 2, 5, 1000), 0);
	/* 2 per second: one token every 500 ms. */
	cr_assert_eq(perm_bucket_wait_ms(&b, 2, 5, 1000), 500);
	cr_assert_eq(perm_bucket_wait_ms(&b, 2, 5, 1200), 300);
	cr_assert_eq(perm_bucket_take(&b, 2, 5, 1499), 0);
	cr_assert_eq(perm_bucket_take(&b, 2, 5, 1500), 1);
	cr_assert_eq(perm_bucket_take(&b, 2, 5, 1500), 0);
	/* A long pause refills up to burst, never beyond. */
	for (i = 0; i < 5; i++)
		cr_assert_eq(perm_bucket_take(&b, 2, 5, 100000), 1);
	cr_assert_eq(perm_bucket_take(&b, 2, 5, 100000), 0);
	/* A clock that does not advance earns nothing. */
	cr_assert_eq(perm_bucket_take(&b, 2, 5, 99000), 0);
	cr_assert_eq(perm_bucket_wait_ms(&b, 2, 5, 100000), 500);
}

Test(perm, bucket_follows_a_reload)
{
	struct perm_bucket b = {0};

	cr_assert_eq(perm_bucket_take(&b, 1000, 1, 0), 1);
	cr_assert_eq(perm_bucket_take(&b, 1000, 1, 0), 0);
	cr_assert_eq(perm_bucket_take(&b, 1000, 1, 1), 1);
	/* A smaller burst caps what was saved. */
	cr_assert_eq(perm_bucket_take(&b, 1, 3, 10000), 1);
	cr_assert_eq(perm_bucket_take(&b, 1, 3, 10000), 1);
	cr_assert_eq(perm_bucket_take(&b, 1, 3, 10000), 1);
	cr_assert_eq(perm_bucket_take(&b, 1, 3, 10000), 0);
	cr_assert_eq(perm_bucket_wait_ms(&b, 1, 3, 10000), 1000);
}
