/*
 * cutopen - opens libcut with no URLs, as an application under the
 * systemd unit's defaults would, for tests/ops/t_defaults.sh.
 *
 *   cutopen [NODE]
 *
 * Calls cut_open(NULL, NULL, NODE or NULL), then lists the snapshots
 * through the control URL it found, and prints "NODE CLUSTER N" (N
 * snapshots listed).  On failure prints "cutopen: CALL: the error" and
 * exits 1.
 */
#include <stdio.h>

#include "cut/cut.h"

int
main(int argc, char **argv)
{
	struct cut_snapshot_list *l;
	struct cut *c;
	int rv;

	if ((rv = cut_open(NULL, NULL, argc > 1 ? argv[1] : NULL, &c)) != 0) {
		fprintf(stderr, "cutopen: cut_open: %s\n", cut_strerror(rv));
		return 1;
	}
	if ((rv = cut_snapshot_list(c, 0, &l)) != 0) {
		fprintf(stderr, "cutopen: cut_snapshot_list: %s\n",
		        cut_strerror(rv));
		cut_close(c);
		return 1;
	}
	printf("%s %s %zu\n", cut_node(c), cut_cluster(c),
	       cut_snapshot_list_len(l));
	cut_snapshot_list_free(l);
	cut_close(c);
	return 0;
}
