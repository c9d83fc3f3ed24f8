/*
 * test_ctltab.c - the one table of control methods (proto/ctltab.h), and
 * cutctl's commands (libclient/cutctl/cutctl_verbs.h) that call them:
 * every method of control.proto's services has one row with its request
 * and reply types, every row the columns each side reads, every HTTP
 * route and every cutctl verb a method of the table.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cutctl_verbs.h"
#include "cutproto.h"

/* Every column of the table, the function names as their spelling. */
struct row {
	const char *method, *handler, *perm, *answer, *route, *http, *verb,
	    *does;
	const ProtobufCMessageDescriptor *req, *reply;
};

#define ROW(method, req, reply, handler, perm, answer, route, http, verb,      \
            does)                                                              \
	{method,                                                               \
	 #handler,                                                             \
	 #perm,                                                                \
	 #answer,                                                              \
	 route,                                                                \
	 #http,                                                                \
	 verb,                                                                 \
	 does,                                                                 \
	 &cut__v1__##req##__descriptor,                                        \
	 &cut__v1__##reply##__descriptor},
static const struct row rows[] = {CUT_CTLTAB(ROW)};
#undef ROW
#define NROWS (sizeof(rows) / sizeof(rows[0]))

struct verb {
	const char *verb, *method;
	int nargs;
	const char *usage;
};

#define VERB(verb, method, nargs, usage, help) {#verb, method, nargs, usage},
static const struct verb verbs[] = {CUTCTL_VERBS(VERB)};
#undef VERB
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static const struct row *
row_of(const char *method)
{
	for (size_t i = 0; i < NROWS; i++)
		if (strcmp(rows[i].method, method) == 0)
			return &rows[i];
	return NULL;
}

static const struct verb *
verb_of(const char *name)
{
	for (size_t i = 0; i < NVERBS; i++)
		if (strcmp(verbs[i].verb, name) == 0)
			return &verbs[i];
	return NULL;
}

/* The services of control.proto, as protoc-c generated them. */
static const ProtobufCServiceDescriptor *const services[] = {
    &cut__v1__snapshots__descriptor, &cut__v1__schedule__descriptor,
    &cut__v1__node__descriptor};

Test(ctltab, the_shared_rows_are_the_table)
{
	cr_assert_eq(CTLTAB_NROWS, 12);
	cr_assert_eq(NROWS, CTLTAB_NROWS);
	for (size_t i = 0; i < NROWS; i++) {
		const struct ctltab_row *r = ctltab_find(rows[i].method);
		cr_assert_eq(r, &ctltab_rows[i], "%s", rows[i].method);
		cr_assert_str_eq(r->method, rows[i].method);
		cr_assert_eq(r->req, rows[i].req, "%s", rows[i].method);
		cr_assert_eq(r->reply, rows[i].reply, "%s", rows[i].method);
		/* By text: an ASan build does not merge equal literals. */
		cr_assert((r->verb == NULL && rows[i].verb == NULL) ||
		              (r->verb != NULL && rows[i].verb != NULL &&
		               strcmp(r->verb, rows[i].verb) == 0),
		          "%s", rows[i].method);
	}
	cr_assert_null(ctltab_find("/cut.v1.Snapshots/Future"));
	cr_assert_null(ctltab_find("/cut.v1.Snapshots/start"));
	cr_assert_null(ctltab_find(""));
	cr_assert_null(ctltab_find(NULL));
}

Test(ctltab, methods_are_unique_and_every_row_is_whole)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		cr_assert_not_null(r->req, "%s", r->method);
		cr_assert_not_null(r->reply, "%s", r->method);
		cr_assert_eq(r->req->magic,
		             PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC);
		cr_assert_eq(r->reply->magic,
		             PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC);
		cr_assert_eq(strncmp(r->method, "/cut.v1.", 8), 0, "%s",
		             r->method);
		/* A handler, by name: do_ and the method in lower case. */
		cr_assert_eq(strncmp(r->handler, "do_", 3), 0, "%s", r->method);
		cr_assert(strcmp(r->perm, "READ") == 0 ||
		              strcmp(r->perm, "START") == 0 ||
		              strcmp(r->perm, "ADMIN") == 0,
		          "%s: %s", r->method, r->perm);
		cr_assert(strcmp(r->answer, "NOW") == 0 ||
		              strcmp(r->answer, "COMMIT") == 0 ||
		              strcmp(r->answer, "BATCH") == 0 ||
		              strcmp(r->answer, "LATER") == 0,
		          "%s: %s", r->method, r->answer);
		cr_assert_not_null(r->verb, "%s", r->method);
		/* What it does, as perm_explain() says it: "Delete deletes
		 * a snapshot". */
		cr_assert(r->does != NULL && r->does[0] >= 'a' &&
		              r->does[0] <= 'z' &&
		              r->does[strlen(r->does) - 1] != '.',
		          "%s", r->method);
		for (size_t j = 0; j < i; j++) {
			cr_assert_str_neq(rows[j].method, r->method);
			cr_assert_str_neq(rows[j].handler, r->handler);
		}
	}
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_START)->handler, "do_start");
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_SCHEDULE_PAUSE)->handler,
	                 "do_schedule_pause");
}

/* Each method of each service has its row, with the service's request
 * and reply types, and the table has no other row. */
Test(ctltab, every_method_of_the_services_has_its_row)
{
	size_t n = 0;

	for (size_t s = 0; s < 3; s++) {
		const ProtobufCServiceDescriptor *svc = services[s];
		for (unsigned m = 0; m < svc->n_methods; m++) {
			char path[128];
			const struct ctltab_row *r;
			snprintf(path, sizeof(path), "/%s/%s", svc->name,
			         svc->methods[m].name);
			r = ctltab_find(path);
			cr_assert_not_null(r, "%s has no row", path);
			cr_assert_eq(r->req, svc->methods[m].input, "%s", path);
			cr_assert_eq(r->reply, svc->methods[m].output, "%s",
			             path);
			n++;
		}
	}
	cr_assert_eq(n, 12);
	cr_assert_eq(n, CTLTAB_NROWS);
	cr_assert_eq(ctltab_find(CUTPROTO_METHOD_GET)->reply,
	             &cut__v1__snapshot_info__descriptor);
	cr_assert_eq(ctltab_find(CUTPROTO_METHOD_SCHEDULE_RESUME)->req,
	             &cut__v1__schedule_request__descriptor);
}

Test(ctltab, permission_classes)
{
	static const char *const readers[] = {
	    CUTPROTO_METHOD_GET, CUTPROTO_METHOD_LIST, CUTPROTO_METHOD_WAIT,
	    CUTPROTO_METHOD_STATUS, CUTPROTO_METHOD_SCHEDULE_SHOW};
	static const char *const starters[] = {
	    CUTPROTO_METHOD_START, CUTPROTO_METHOD_EVALUATE,
	    CUTPROTO_METHOD_SCHEDULE_PAUSE, CUTPROTO_METHOD_SCHEDULE_RESUME};
	static const char *const admins[] = {CUTPROTO_METHOD_DELETE,
	                                     CUTPROTO_METHOD_KEEP,
	                                     CUTPROTO_METHOD_RESTORE};

	for (size_t i = 0; i < 5; i++) {
		cr_assert_str_eq(row_of(readers[i])->perm, "READ");
		cr_assert_eq(ctltab_find(readers[i])->perm, CTLTAB_READ);
	}
	for (size_t i = 0; i < 4; i++) {
		cr_assert_str_eq(row_of(starters[i])->perm, "START");
		cr_assert_eq(ctltab_find(starters[i])->perm, CTLTAB_START);
	}
	for (size_t i = 0; i < 3; i++) {
		cr_assert_str_eq(row_of(admins[i])->perm, "ADMIN");
		cr_assert_eq(ctltab_find(admins[i])->perm, CTLTAB_ADMIN);
	}
}

Test(ctltab, replies_held_or_deferred)
{
	for (size_t i = 0; i < NROWS; i++) {
		const char *m = rows[i].method;
		const struct ctltab_row *r = &ctltab_rows[i];
		if (strcmp(m, CUTPROTO_METHOD_WAIT) == 0 ||
		    strcmp(m, CUTPROTO_METHOD_RESTORE) == 0)
			cr_assert_eq(r->answer, CTLTAB_LATER, "%s", m);
		else if (strcmp(m, CUTPROTO_METHOD_START) == 0)
			cr_assert_eq(r->answer, CTLTAB_BATCH, "%s", m);
		else if (strcmp(m, CUTPROTO_METHOD_DELETE) == 0 ||
		         strcmp(m, CUTPROTO_METHOD_KEEP) == 0)
			cr_assert_eq(r->answer, CTLTAB_COMMIT, "%s", m);
		else
			cr_assert_eq(r->answer, CTLTAB_NOW, "%s", m);
	}
}

/* control.c checks a required snapshot_id before the handler runs: the
 * methods that name a snapshot have one, Evaluate's is optional. */
Test(ctltab, methods_naming_a_snapshot_have_a_required_id)
{
	static const char *const named[] = {
	    CUTPROTO_METHOD_GET, CUTPROTO_METHOD_WAIT, CUTPROTO_METHOD_DELETE,
	    CUTPROTO_METHOD_KEEP, CUTPROTO_METHOD_RESTORE};
	size_t n = 0;

	for (size_t i = 0; i < NROWS; i++) {
		const ProtobufCFieldDescriptor *f =
		    protobuf_c_message_descriptor_get_field_by_name(
		        rows[i].req, "snapshot_id");
		if (f == NULL || f->label != PROTOBUF_C_LABEL_REQUIRED)
			continue;
		cr_assert_eq(f->type, PROTOBUF_C_TYPE_STRING);
		n++;
	}
	cr_assert_eq(n, 5);
	for (size_t i = 0; i < 5; i++)
		cr_assert_eq(protobuf_c_message_descriptor_get_field_by_name(
		                 ctltab_find(named[i])->req, "snapshot_id")
		                 ->label,
		             PROTOBUF_C_LABEL_REQUIRED, "%s", named[i]);
	cr_assert_eq(
	    protobuf_c_message_descriptor_get_field_by_name(
	        ctltab_find(CUTPROTO_METHOD_EVALUATE)->req, "snapshot_id")
	        ->label,
	    PROTOBUF_C_LABEL_OPTIONAL);
	/* Requests without fields are not decoded at all. */
	cr_assert_eq(ctltab_find(CUTPROTO_METHOD_STATUS)->req->n_fields, 0);
	cr_assert_eq(ctltab_find(CUTPROTO_METHOD_SCHEDULE_SHOW)->req->n_fields,
	             0);
}

/* The HTTP API is GET only: its routes are of READ methods answered at
 * once, each with its function. */
Test(ctltab, http_routes_name_read_methods)
{
	size_t n = 0;

	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		if (r->route == NULL) {
			cr_assert_str_eq(r->http, "NULL", "%s", r->method);
			continue;
		}
		n++;
		cr_assert_eq(strncmp(r->route, "/v1/", 4), 0, "%s", r->route);
		cr_assert_eq(strncmp(r->http, "http_", 5), 0, "%s", r->route);
		cr_assert_str_eq(r->perm, "READ", "%s", r->route);
		cr_assert_str_eq(r->answer, "NOW", "%s", r->route);
		cr_assert_not_null(ctltab_find(r->method));
	}
	cr_assert_eq(n, 3);
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_STATUS)->route, "/v1/status");
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_LIST)->route, "/v1/snapshots");
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_GET)->route,
	                 "/v1/snapshots/{id}");
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_GET)->http, "http_snapshot");
	cr_assert_null(row_of(CUTPROTO_METHOD_WAIT)->route);
}

/* Every cutctl verb calls a method of the table (none is local yet), and
 * every row's verb is one of cutctl's. */
Test(ctltab, cutctl_verbs_name_methods_of_the_table)
{
	cr_assert_eq(NVERBS, 13);
	for (size_t i = 0; i < NVERBS; i++) {
		const struct verb *v = &verbs[i];
		cr_assert_not_null(v->method, "%s", v->verb);
		cr_assert_not_null(ctltab_find(v->method), "%s: %s", v->verb,
		                   v->method);
		cr_assert_eq(strncmp(v->usage, v->verb, strlen(v->verb)), 0,
		             "%s", v->verb);
		cr_assert(v->nargs == 0 || v->nargs == 1, "%s", v->verb);
		for (size_t j = 0; j < i; j++)
			cr_assert_str_neq(verbs[j].verb, v->verb);
	}
	for (size_t i = 0; i < NROWS; i++)
		cr_assert_not_null(verb_of(rows[i].verb), "%s: %s",
		                   rows[i].method, rows[i].verb);
	cr_assert_str_eq(verb_of("snapshot")->method, CUTPROTO_METHOD_START);
	cr_assert_str_eq(verb_of("show")->method, CUTPROTO_METHOD_GET);
	cr_assert_str_eq(verb_of("export")->method, CUTPROTO_METHOD_GET);
	cr_assert_str_eq(verb_of("unkeep")->method, CUTPROTO_METHOD_KEEP);
	cr_assert_eq(verb_of("wait")->nargs, 1);
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_SCHEDULE_RESUME)->verb,
	                 "schedule");
	cr_assert_str_eq(row_of(CUTPROTO_METHOD_START)->verb, "snapshot");
}
