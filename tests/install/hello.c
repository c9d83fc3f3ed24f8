/*
 * hello.c - the smallest complete libcut program, built by
 * tests/install/t_install.sh against an installed libcut (through
 * pkg-config and through find_package(cut)) to prove that what is installed
 * is enough to write one.
 *
 *   hello APP_URL CONTROL_URL NODE
 *
 * It connects to the daemon of NODE, which must be the only node of its
 * cluster, registers a state callback, takes a snapshot, answers the
 * daemon's state request, and waits for the result.  Exit status 0 only
 * when the snapshot is complete, audited consistent, and holds exactly the
 * state the callback reported; 1 otherwise, with the reason on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cut/cut.h>

#define STATE        "{\"greeting\":\"hello\"}"
#define CONTENT_TYPE "application/json"
#define TIMEOUT_MS   10000
#define SLICE_MS     100

struct app {
	int answered; /* state requests answered */
	char snapshot[CUT_SNAPSHOT_ID_MAX];
};

/* The state callback: reports STATE, and remembers for which snapshot. */
static int
on_state(void *arg, const char *snapshot_id, struct cut_buf *ret_state)
{
	struct app *a = arg;
	int rv;

	rv = cut_buf_set(ret_state, STATE, strlen(STATE), CONTENT_TYPE);
	if (rv != 0)
		return rv;
	snprintf(a->snapshot, sizeof(a->snapshot), "%s", snapshot_id);
	a->answered++;
	return 0;
}

static int
fail(struct cut *c, const char *what, int err)
{
	char detail[256] = "";

	if (c != NULL)
		cut_last_error(c, detail, sizeof(detail));
	fprintf(stderr, "hello: %s: %s%s%s\n", what, cut_strerror(err),
	        detail[0] != '\0' ? ": " : "", detail);
	return 1;
}

/* Receives (and so answers state requests) until the callback ran, for
 * TIMEOUT_MS at most.  A single node gets no application messages. */
static int
serve(struct cut *c, const struct app *a)
{
	struct cut_msg *m;
	int rv, waited = 0;

	while (a->answered == 0) {
		if (waited >= TIMEOUT_MS)
			return CUT_ETIMEDOUT;
		rv = cut_recv(c, SLICE_MS, &m);
		if (rv == 0) {
			cut_msg_free(m);
			return CUT_EPROTO;
		}
		if (rv != CUT_ETIMEDOUT)
			return rv;
		waited += SLICE_MS;
	}
	return 0;
}

/* Whether s is what a one-node snapshot with our state must be. */
static int
check(const struct cut_snapshot *s, const char *node)
{
	const void *state;
	const char *type;
	size_t len;

	if (cut_snapshot_status(s) != CUT_SNAPSHOT_COMPLETE) {
		fprintf(stderr, "hello: snapshot %s not complete: %s\n",
		        cut_snapshot_id(s), cut_snapshot_reason(s));
		return 1;
	}
	if (cut_snapshot_consistent(s) != 1) {
		fprintf(stderr, "hello: snapshot %s not consistent: %s\n",
		        cut_snapshot_id(s), cut_snapshot_audit_reason(s));
		return 1;
	}
	if (cut_snapshot_parts(s) != 1 || cut_snapshot_parts_expected(s) != 1 ||
	    cut_snapshot_nnodes(s) != 1 || cut_snapshot_nchannels(s) != 0 ||
	    strcmp(cut_snapshot_node(s, 0), node) != 0) {
		fprintf(stderr, "hello: snapshot %s is not one node %s\n",
		        cut_snapshot_id(s), node);
		return 1;
	}
	state = cut_snapshot_node_state(s, 0, &len);
	type = cut_snapshot_node_content_type(s, 0);
	if (state == NULL || len != strlen(STATE) ||
	    memcmp(state, STATE, len) != 0 || type == NULL ||
	    strcmp(type, CONTENT_TYPE) != 0) {
		fprintf(stderr, "hello: snapshot %s holds another state\n",
		        cut_snapshot_id(s));
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct app a = {0};
	struct cut *c = NULL;
	struct cut_snapshot *s = NULL;
	char id[CUT_SNAPSHOT_ID_MAX];
	int rv;

	if (argc != 4) {
		fprintf(stderr, "usage: hello APP_URL CONTROL_URL NODE\n");
		return 64;
	}
	if ((rv = cut_open(argv[1], argv[2], argv[3], &c)) != 0)
		return fail(NULL, "cut_open", rv);
	if ((rv = cut_set_state_callback(c, on_state, &a)) != 0) {
		rv = fail(c, "cut_set_state_callback", rv);
		goto out;
	}
	if ((rv = cut_snapshot_start(c, 0, id, sizeof(id))) != 0) {
		rv = fail(c, "cut_snapshot_start", rv);
		goto out;
	}
	if ((rv = serve(c, &a)) != 0) {
		rv = fail(c, "waiting for the state request", rv);
		goto out;
	}
	if (strcmp(a.snapshot, id) != 0) {
		fprintf(stderr, "hello: asked for %s's state, started %s\n",
		        a.snapshot, id);
		rv = 1;
		goto out;
	}
	rv = cut_snapshot_wait(c, id, TIMEOUT_MS, CUT_SNAPSHOT_STATES, &s);
	if (rv != 0) {
		rv = fail(c, "cut_snapshot_wait", rv);
		goto out;
	}
	if ((rv = check(s, argv[3])) == 0)
		printf("hello: snapshot %s of %s/%s complete and consistent\n",
		       id, cut_cluster(c), cut_node(c));
out:
	cut_snapshot_free(s);
	cut_close(c);
	return rv;
}
