/*
 * test_json.c - the JSON cutctl and cutlab write: the UTF-8 validator and
 * JSON content types (text.c), cutjson's builders (a JSON state embedded
 * as its value, other states in base64 with their content type, a state
 * labelled JSON that is not, strings that are not UTF-8), its dump flags,
 * and the documents cutctl builds from a snapshot (ctljson.c), each
 * checked byte for byte.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cutctl.h"
#include "cutjson.h"
#include "text.h"

/* v dumped with CJ_DUMP_FLAGS; v is released.  The caller frees. */
static char *
dump(json_t *v)
{
	char *s;

	cr_assert_not_null(v, "the builder failed");
	s = json_dumps(v, CJ_DUMP_FLAGS | JSON_ENCODE_ANY); /* scalars too */
	json_decref(v);
	cr_assert_not_null(s);
	return s;
}

static void
assert_dump(json_t *v, const char *want)
{
	char *got = dump(v);

	cr_assert_str_eq(got, want);
	free(got);
}

/* The text of a document that must be JSON: it parses back, whole. */
static void
assert_parses(const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &err);

	cr_assert_not_null(v, "not JSON (%s): %s", err.text, text);
	json_decref(v);
}

Test(text, utf8)
{
	static const struct {
		const char *s;
		size_t len, span;
	} cases[] = {
	    {"", 0, 0},
	    {"plain", 5, 5},
	    {"caf\xc3\xa9", 5, 5},      /* é */
	    {"\xe2\x82\xac", 3, 3},     /* € */
	    {"\xf0\x9f\x98\x80", 4, 4}, /* U+1F600 */
	    {"\xf4\x8f\xbf\xbf", 4, 4}, /* U+10FFFF */
	    {"a\0b", 3, 3},             /* U+0000 is a character */
	    {"ab\xff", 3, 2},           /* never in UTF-8 */
	    {"ab\x80", 3, 2},           /* a continuation alone */
	    {"\xc0\xaf", 2, 0},         /* overlong '/' */
	    {"\xe0\x80\xaf", 3, 0},     /* overlong '/' */
	    {"x\xed\xa0\x80", 4, 1},    /* surrogate U+D800 */
	    {"\xf4\x90\x80\x80", 4, 0}, /* past U+10FFFF */
	    {"ok\xe2\x82", 4, 2},       /* cut short */
	    {"\xc3\xa9\xc3", 3, 2},     /* cut short after one */
	    {"\xe2\x28\xa1", 3, 0},     /* bad continuation */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(utf8_span(cases[i].s, cases[i].len), cases[i].span,
		             "case %zu", i);
		cr_assert_eq(utf8_valid(cases[i].s, cases[i].len),
		             cases[i].span == cases[i].len, "case %zu", i);
	}
}

Test(text, json_content_types)
{
	cr_assert_eq(content_type_is_json("application/json"), 1);
	cr_assert_eq(content_type_is_json("Application/JSON"), 1);
	cr_assert_eq(content_type_is_json("application/json; charset=utf-8"),
	             1);
	cr_assert_eq(content_type_is_json("application/json ;x=y"), 1);
	cr_assert_eq(content_type_is_json("application/vnd.cut+json"), 1);
	cr_assert_eq(content_type_is_json("application/ld+JSON;v=1"), 1);
	cr_assert_eq(content_type_is_json("application/jsonx"), 0);
	cr_assert_eq(content_type_is_json("application/octet-stream"), 0);
	cr_assert_eq(content_type_is_json("text/plain"), 0);
	cr_assert_eq(content_type_is_json("+json"), 0);
	cr_assert_eq(content_type_is_json("json"), 0);
	cr_assert_eq(content_type_is_json(""), 0);
	cr_assert_eq(content_type_is_json(NULL), 0);
}

Test(cutjson, json_state_embedded)
{
	static const char state[] =
	    "{\"balance\": 3, \"owner\": \"caf\xc3\xa9\"}",
	                  array[] = " [1, -2, 0.5, \"a\\u0000b\", null] ";

	assert_dump(cj_payload("application/json", state, strlen(state)),
	            "{\n"
	            "  \"content_type\": \"application/json\",\n"
	            "  \"encoding\": \"json\",\n"
	            "  \"data\": {\n"
	            "    \"balance\": 3,\n"
	            "    \"owner\": \"caf\xc3\xa9\"\n"
	            "  }\n"
	            "}");
	/* Any JSON value; "\u0000" kept; parameters of the type ignored. */
	assert_dump(cj_payload("application/vnd.x+json; charset=utf-8", array,
	                       sizeof(array) - 1),
	            "{\n"
	            "  \"content_type\": \"application/vnd.x+json; "
	            "charset=utf-8\",\n"
	            "  \"encoding\": \"json\",\n"
	            "  \"data\": [\n"
	            "    1,\n"
	            "    -2,\n"
	            "    0.5,\n"
	            "    \"a\\u0000b\",\n"
	            "    null\n"
	            "  ]\n"
	            "}");
	/* A real is a double: 17 digits give it back exactly. */
	assert_dump(cj_payload("application/json", "0.1", 3),
	            "{\n"
	            "  \"content_type\": \"application/json\",\n"
	            "  \"encoding\": \"json\",\n"
	            "  \"data\": 0.10000000000000001\n"
	            "}");
	assert_dump(cj_payload("application/json", "42", 2),
	            "{\n"
	            "  \"content_type\": \"application/json\",\n"
	            "  \"encoding\": \"json\",\n"
	            "  \"data\": 42\n"
	            "}");
}

Test(cutjson, binary_state_base64_with_content_type)
{
	static const unsigned char bytes[] = {0x00, 0x01, 0x02, 0xff, 0xfe};

	assert_dump(cj_payload("application/octet-stream", bytes, 5),
	            "{\n"
	            "  \"content_type\": \"application/octet-stream\",\n"
	            "  \"encoding\": \"base64\",\n"
	            "  \"data\": \"AAEC//4=\"\n"
	            "}");
	/* Text that is not JSON is bytes too; no content type is null. */
	assert_dump(cj_payload("text/plain", "{\"a\": 1}", 8),
	            "{\n"
	            "  \"content_type\": \"text/plain\",\n"
	            "  \"encoding\": \"base64\",\n"
	            "  \"data\": \"eyJhIjogMX0=\"\n"
	            "}");
	assert_dump(cj_payload(NULL, NULL, 0), "{\n"
	                                       "  \"content_type\": null,\n"
	                                       "  \"encoding\": \"base64\",\n"
	                                       "  \"data\": \"\"\n"
	                                       "}");
}

Test(cutjson, base64_rfc4648)
{
	static const char *const want[] = {
	    "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	json_t *v;

	for (size_t n = 0; n <= 6; n++) {
		v = cj_base64("foobar", n);
		cr_assert_not_null(v);
		cr_assert_str_eq(json_string_value(v), want[n], "%zu bytes", n);
		json_decref(v);
	}
}

/* The fallback of a state labelled JSON that is not: its bytes in
 * base64, flagged, with jansson's reason. */
static void
assert_invalid_json(const char *ct, const void *data, size_t len,
                    const char *b64, const char *reason)
{
	json_t *v = cj_payload(ct, data, len);
	const char *why;

	cr_assert_not_null(v);
	cr_assert_eq(json_object_size(v), 5);
	cr_assert_str_eq(json_string_value(json_object_get(v, "content_type")),
	                 ct);
	cr_assert_str_eq(json_string_value(json_object_get(v, "encoding")),
	                 "base64");
	cr_assert_str_eq(json_string_value(json_object_get(v, "data")), b64);
	cr_assert(json_is_true(json_object_get(v, "invalid_json")));
	why = json_string_value(json_object_get(v, "json_error"));
	cr_assert_not_null(why);
	cr_assert(strstr(why, reason) != NULL, "json_error: %s", why);
	json_decref(v);
}

Test(cutjson, invalid_json_state_falls_back_to_base64)
{
	char *text;

	assert_dump(cj_payload("application/json", "{\"balance\": ", 12),
	            "{\n"
	            "  \"content_type\": \"application/json\",\n"
	            "  \"encoding\": \"base64\",\n"
	            "  \"data\": \"eyJiYWxhbmNlIjog\",\n"
	            "  \"invalid_json\": true,\n"
	            "  \"json_error\": \"unexpected token near end of file "
	            "(line 1, column 12)\"\n"
	            "}");
	/* Nothing may be lost: a duplicate key, which a JSON object would
	 * keep only once, and numbers jansson cannot hold, stay bytes. */
	assert_invalid_json("application/json", "{\"a\":1,\"a\":2}", 13,
	                    "eyJhIjoxLCJhIjoyfQ==", "duplicate object key");
	assert_invalid_json("application/json", "18446744073709551616", 20,
	                    "MTg0NDY3NDQwNzM3MDk1NTE2MTY=", "too big integer");
	assert_invalid_json("application/json", "1e999", 5,
	                    "MWU5OTk=", "real number overflow");
	/* Not UTF-8, a lone surrogate, trailing bytes, nothing at all. */
	assert_invalid_json("application/json", "\"\xff\"", 3, "Iv8i",
	                    "unable to decode byte 0xff");
	assert_invalid_json("application/json", "\"\\ud800\"", 8,
	                    "Ilx1ZDgwMCI=", "invalid Unicode");
	assert_invalid_json("application/x+json", "{} {}", 5,
	                    "e30ge30=", "end of file expected");
	assert_invalid_json("application/json", "", 0, "", "");
	/* Whatever jansson quotes of the bad bytes, the document is JSON. */
	text = dump(cj_payload("application/json", "\xc3(x", 3));
	assert_parses(text);
	free(text);
}

Test(cutjson, strings_that_are_not_utf8)
{
	/* Each byte that starts no character becomes U+FFFD. */
	assert_dump(cj_string("p\xff"
	                      "0"),
	            "\"p\xef\xbf\xbd"
	            "0\"");
	assert_dump(cj_string("\xc0\xaf|\xed\xa0\x80|\xe2\x82"),
	            "\"\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef"
	            "\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\"");
	assert_dump(cj_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
	assert_dump(cj_string(NULL), "null");
	assert_dump(cj_stringn("a\0b", 3), "\"a\\u0000b\"");
	/* A content type that is not UTF-8 still gives JSON. */
	assert_dump(cj_payload("x/\xff", "ab", 2),
	            "{\n"
	            "  \"content_type\": \"x/\xef\xbf\xbd\",\n"
	            "  \"encoding\": \"base64\",\n"
	            "  \"data\": \"YWI=\"\n"
	            "}");
}

Test(cutjson, set_append_and_print_propagate_failure)
{
	char *out = NULL;
	size_t size;
	FILE *f;

	cr_assert_null(cj_set(json_object(), "k", NULL));
	cr_assert_null(cj_set(NULL, "k", json_true()));
	cr_assert_null(cj_append(json_array(), NULL));
	cr_assert_null(cj_append(NULL, json_true()));
	cr_assert_null(cj_set(json_object(), "bad\xff", json_true()));
	f = open_memstream(&out, &size);
	cr_assert_not_null(f);
	cr_assert_eq(cj_print(f, NULL), -1);
	cr_assert_eq(
	    cj_print(f, cj_append(cj_append(json_array(), json_integer(1)),
	                          json_pack("{s:s}", "a", "b"))),
	    0);
	cr_assert_eq(fclose(f), 0);
	cr_assert_str_eq(out, "[\n  1,\n  {\n    \"a\": \"b\"\n  }\n]\n");
	free(out);
}

/* A snapshot of three nodes: a JSON state, a binary one, and one labelled
 * JSON that is not; one channel with a JSON message and a binary one. */
struct fixture {
	Cut__V1__SnapshotInfo s;
	Cut__V1__AuditVerdict audit;
	Cut__V1__NodeState n[3], *np[3];
	Cut__V1__ChannelState c, *cp[1];
	Cut__V1__ChannelMessage m[2], *mp[2];
};

static void
fixture(struct fixture *x)
{
	static const Cut__V1__SnapshotInfo s = CUT__V1__SNAPSHOT_INFO__INIT;
	static const Cut__V1__AuditVerdict a = CUT__V1__AUDIT_VERDICT__INIT;
	static const Cut__V1__NodeState n = CUT__V1__NODE_STATE__INIT;
	static const Cut__V1__ChannelState c = CUT__V1__CHANNEL_STATE__INIT;
	static const Cut__V1__ChannelMessage m = CUT__V1__CHANNEL_MESSAGE__INIT;
	static const struct {
		const char *node, *ct, *state;
		size_t len;
	} nodes[] = {
	    {"p0", "application/json", "{\"balance\": 7}", 14},
	    {"p1", "application/octet-stream", "\x01\x02\x03", 3},
	    {"p2", "application/json", "{\"balance\": ", 12},
	};

	memset(x, 0, sizeof(*x));
	x->s = s;
	x->s.id = "p0:1796116051122";
	x->s.initiator = "p0";
	x->s.status = CUT__V1__SNAPSHOT_INFO__STATUS__COMPLETE;
	x->s.reason = "";
	x->s.started_ms = 1796116051122;
	x->s.finished_ms = 1796116051137;
	x->s.parts_received = x->s.parts_expected = 3;
	x->audit = a;
	x->audit.consistent = 1;
	x->audit.reason = "";
	x->s.audit = &x->audit;
	for (int i = 0; i < 3; i++) {
		x->n[i] = n;
		x->n[i].node = (char *)nodes[i].node;
		x->n[i].content_type = (char *)nodes[i].ct;
		x->n[i].state_size = nodes[i].len;
		x->n[i].has_state = 1;
		x->n[i].state.data = (uint8_t *)nodes[i].state;
		x->n[i].state.len = nodes[i].len;
		x->np[i] = &x->n[i];
	}
	x->s.n_nodes = 3;
	x->s.nodes = x->np;
	for (int i = 0; i < 2; i++) {
		x->m[i] = m;
		x->m[i].seq = 81 + (uint64_t)i;
		x->mp[i] = &x->m[i];
	}
	x->m[0].content_type = "application/json";
	x->m[0].payload.data = (uint8_t *)"{\"amount\": 4}";
	x->m[0].payload.len = 13;
	x->m[1].content_type = "application/octet-stream";
	x->m[1].payload.data = (uint8_t *)"\xff";
	x->m[1].payload.len = 1;
	x->c = c;
	x->c.src = "p2";
	x->c.dst = "p0";
	x->c.m = 80;
	x->c.n = 82;
	x->c.count = 2;
	x->c.n_messages = 2;
	x->c.messages = x->mp;
	x->cp[0] = &x->c;
	x->s.n_channels = 1;
	x->s.channels = x->cp;
}

#define SUMMARY                                                                \
	"{\n"                                                                  \
	"  \"id\": \"p0:1796116051122\",\n"                                    \
	"  \"initiator\": \"p0\",\n"                                           \
	"  \"status\": \"complete\",\n"                                        \
	"  \"reason\": \"\",\n"                                                \
	"  \"started_ms\": 1796116051122,\n"                                   \
	"  \"finished_ms\": 1796116051137,\n"                                  \
	"  \"duration_ms\": 15,\n"                                             \
	"  \"deadline_ms\": null,\n"                                           \
	"  \"parts_received\": 3,\n"                                           \
	"  \"parts_expected\": 3,\n"                                           \
	"  \"channels_recording\": 0,\n"                                       \
	"  \"audit\": {\n"                                                     \
	"    \"consistent\": true,\n"                                          \
	"    \"reason\": \"\"\n"                                               \
	"  },\n"                                                               \
	"  \"holds_all\": true,\n"                                            \
	"  \"outcome_known\": null,\n"                                        \
	"  \"part_status\": null,\n"                                          \
	"  \"keep\": false"

#define NODES                                                                  \
	"  \"nodes\": [\n"                                                     \
	"    {\n"                                                              \
	"      \"node\": \"p0\",\n"                                            \
	"      \"content_type\": \"application/json\",\n"                      \
	"      \"state_size\": 14,\n"                                          \
	"      \"state\": {\n"                                                 \
	"        \"content_type\": \"application/json\",\n"                    \
	"        \"encoding\": \"json\",\n"                                    \
	"        \"data\": {\n"                                                \
	"          \"balance\": 7\n"                                           \
	"        }\n"                                                          \
	"      }\n"                                                            \
	"    },\n"                                                             \
	"    {\n"                                                              \
	"      \"node\": \"p1\",\n"                                            \
	"      \"content_type\": \"application/octet-stream\",\n"              \
	"      \"state_size\": 3,\n"                                           \
	"      \"state\": {\n"                                                 \
	"        \"content_type\": \"application/octet-stream\",\n"            \
	"        \"encoding\": \"base64\",\n"                                  \
	"        \"data\": \"AQID\"\n"                                         \
	"      }\n"                                                            \
	"    },\n"                                                             \
	"    {\n"                                                              \
	"      \"node\": \"p2\",\n"                                            \
	"      \"content_type\": \"application/json\",\n"                      \
	"      \"state_size\": 12,\n"                                          \
	"      \"state\": {\n"                                                 \
	"        \"content_type\": \"application/json\",\n"                    \
	"        \"encoding\": \"base64\",\n"                                  \
	"        \"data\": \"eyJiYWxhbmNlIjog\",\n"                            \
	"        \"invalid_json\": true,\n"                                    \
	"        \"json_error\": \"unexpected token near end of file "         \
	"(line 1, column 12)\"\n"                                              \
	"      }\n"                                                            \
	"    }\n"                                                              \
	"  ]"

#define CHANNEL                                                                \
	"      \"src\": \"p2\",\n"                                             \
	"      \"dst\": \"p0\",\n"                                             \
	"      \"m\": 80,\n"                                                   \
	"      \"n\": 82,\n"                                                   \
	"      \"count\": 2"

Test(cutctl_json, summary)
{
	struct fixture x;

	fixture(&x);
	assert_dump(snapshot_json(&x.s, DETAIL_SUMMARY), SUMMARY "\n}");
}

Test(cutctl_json, show_embeds_states)
{
	struct fixture x;

	fixture(&x);
	assert_dump(snapshot_json(&x.s, DETAIL_SHOW),
	            SUMMARY ",\n" NODES ",\n"
	                    "  \"channels\": [\n"
	                    "    {\n" CHANNEL "\n"
	                    "    }\n"
	                    "  ]\n"
	                    "}");
	/* A node whose state the daemon did not send has "state": null. */
	x.n[1].has_state = 0;
	x.s.n_nodes = 2;
	{
		char *text = dump(snapshot_json(&x.s, DETAIL_SHOW));
		cr_assert(strstr(text, "\"state_size\": 3,\n"
		                       "      \"state\": null\n") != NULL,
		          "%s", text);
		free(text);
	}
}

Test(cutctl_json, export_embeds_messages)
{
	struct fixture x;

	fixture(&x);
	assert_dump(snapshot_json(&x.s, DETAIL_EXPORT), SUMMARY
	            ",\n" NODES ",\n"
	            "  \"channels\": [\n"
	            "    {\n" CHANNEL ",\n"
	            "      \"messages\": [\n"
	            "        {\n"
	            "          \"seq\": 81,\n"
	            "          \"content_type\": \"application/json\",\n"
	            "          \"payload\": {\n"
	            "            \"content_type\": "
	            "\"application/json\",\n"
	            "            \"encoding\": \"json\",\n"
	            "            \"data\": {\n"
	            "              \"amount\": 4\n"
	            "            }\n"
	            "          }\n"
	            "        },\n"
	            "        {\n"
	            "          \"seq\": 82,\n"
	            "          \"content_type\": "
	            "\"application/octet-stream\",\n"
	            "          \"payload\": {\n"
	            "            \"content_type\": "
	            "\"application/octet-stream\",\n"
	            "            \"encoding\": \"base64\",\n"
	            "            \"data\": \"/w==\"\n"
	            "          }\n"
	            "        }\n"
	            "      ]\n"
	            "    }\n"
	            "  ]\n"
	            "}");
}

Test(cutctl_json, names_that_are_not_utf8)
{
	struct fixture x;
	char *text;

	fixture(&x);
	x.s.reason = "p1: \xc3";
	x.s.status = CUT__V1__SNAPSHOT_INFO__STATUS__ABORTED;
	x.s.audit = NULL;
	x.n[0].node = "p\xff";
	text = dump(snapshot_json(&x.s, DETAIL_SHOW));
	assert_parses(text);
	cr_assert(strstr(text, "\"reason\": \"p1: \xef\xbf\xbd\",\n") != NULL,
	          "%s", text);
	cr_assert(strstr(text, "\"node\": \"p\xef\xbf\xbd\",\n") != NULL, "%s",
	          text);
	cr_assert(strstr(text, "\"audit\": null,\n") != NULL, "%s", text);
	free(text);
}

Test(cutctl_json, counts_beyond_int64)
{
	struct fixture x;
	char *text;

	fixture(&x);
	x.c.n = UINT64_MAX;
	x.c.m = (uint64_t)INT64_MAX;
	text = dump(snapshot_json(&x.s, DETAIL_SHOW));
	cr_assert(strstr(text, "\"m\": 9223372036854775807,\n"
	                       "      \"n\": 1.8446744073709552e19,\n") != NULL,
	          "%s", text);
	free(text);
}
