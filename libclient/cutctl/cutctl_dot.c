/*
 * cutctl_dot.c - `cutctl show --dot`: a snapshot as a Graphviz digraph,
 * for `dot -Tsvg`.  One node per recorded node, labelled with its name
 * and its state in brief (the content type and size, and the first bytes
 * when they are short printable text); one edge per recorded channel,
 * labelled "m=M n=N" and the number of messages in transit, drawn bold
 * when some are.  The graph is named after the snapshot and its label
 * gives the status and the audit's verdict.
 *
 * Every string is written as a DOT quoted string: '"' and '\' are
 * escaped, control characters and bytes that are not UTF-8 become '?',
 * so any name or state gives a graph dot accepts.
 */
#include <inttypes.h>
#include <string.h>

#include "cutctl.h"
#include "text.h"

/* How many bytes of a state a node's label shows. */
#define DOT_STATE_WIDTH 40

/* Writes len bytes at s inside a DOT quoted string; cut with "..." after
 * width bytes (0: no limit). */
static void
quoted(FILE *f, const char *s, size_t len, size_t width)
{
	int utf8 = utf8_valid((const uint8_t *)s, len);
	size_t i, n = width > 0 && len > width ? width : len;

	/* Do not cut a character in two. */
	while (utf8 && n < len && n > 0 && ((uint8_t)s[n] & 0xc0) == 0x80)
		n--;
	for (i = 0; i < n; i++) {
		uint8_t ch = (uint8_t)s[i];
		if (ch == '"' || ch == '\\')
			fputc('\\', f);
		fputc(ch < 0x20 || ch == 0x7f || (ch >= 0x80 && !utf8) ? '?'
		                                                       : ch,
		      f);
	}
	if (n < len)
		fputs("...", f);
}

static void
qstr(FILE *f, const char *s)
{
	quoted(f, s != NULL ? s : "", s != NULL ? strlen(s) : 0, 0);
}

static void
dot_node(FILE *f, const Cut__V1__NodeState *n)
{
	fputs("  \"", f);
	qstr(f, n->node);
	fputs("\" [label=\"", f);
	qstr(f, n->node);
	fprintf(f, "\\n%" PRIu64 " bytes", n->state_size);
	if (n->content_type != NULL && n->content_type[0] != '\0') {
		fputs(" ", f);
		qstr(f, n->content_type);
	}
	if (n->has_state && n->state.len > 0 &&
	    utf8_valid(n->state.data, n->state.len)) {
		fputs("\\n", f);
		quoted(f, (const char *)n->state.data, n->state.len,
		       DOT_STATE_WIDTH);
	}
	fputs("\"];\n", f);
}

static void
dot_channel(FILE *f, const Cut__V1__ChannelState *c)
{
	fputs("  \"", f);
	qstr(f, c->src);
	fputs("\" -> \"", f);
	qstr(f, c->dst);
	fprintf(f,
	        "\" [label=\"m=%" PRIu64 " n=%" PRIu64 "\\nin transit %" PRIu64
	        "\"%s];\n",
	        c->m, c->n, c->count, c->count > 0 ? ", style=bold" : "");
}

void
print_snapshot_dot(FILE *f, const Cut__V1__SnapshotInfo *s)
{
	size_t i;

	fputs("digraph \"", f);
	qstr(f, s->id);
	fputs("\" {\n  label=\"snapshot ", f);
	qstr(f, s->id);
	fprintf(f, ", %s", snapshot_status_word(s));
	if (s->reason != NULL && s->reason[0] != '\0') {
		fputs(": ", f);
		qstr(f, s->reason);
	}
	if (s->audit != NULL)
		fputs(s->audit->consistent ? ", consistent" : ", INCONSISTENT",
		      f);
	fprintf(f,
	        ", %u/%u parts\";\n  labelloc=t;\n"
	        "  node [shape=box];\n",
	        s->parts_received, s->parts_expected);
	for (i = 0; i < s->n_nodes; i++)
		dot_node(f, s->nodes[i]);
	for (i = 0; i < s->n_channels; i++)
		dot_channel(f, s->channels[i]);
	fputs("}\n", f);
}
