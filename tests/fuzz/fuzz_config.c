/*
 * fuzz_config.c - libFuzzer harness: the cluster file.
 *
 * The input is written to a file and loaded with config_load(), the
 * parser and validator cutd, cutctl and SIGHUP use; a file it accepts is
 * printed (as --check-config does) and compared with itself (as SIGHUP
 * compares it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"

static char path[64];

static void
teardown(void)
{
	unlink(path);
}

static void
setup(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/cutd-fuzz-config.XXXXXX");
	if ((fd = mkstemp(path)) < 0)
		abort();
	close(fd);
	atexit(teardown);
}

static void
ignore(void *arg, const char *text)
{
	(void)arg;
	(void)text;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct config *cfg = NULL;
	char *errors = NULL;
	FILE *f;

	if (path[0] == '\0')
		setup();
	if ((f = fopen(path, "w")) == NULL)
		abort();
	if (len > 0 && fwrite(data, 1, len, f) != len)
		abort();
	fclose(f);
	if (config_load(path, &cfg, &errors) == 0) {
		FILE *out = fopen("/dev/null", "w");
		if (out == NULL || config_print(cfg, out) != 0)
			abort();
		fclose(out);
		if (!config_same_topology(cfg, cfg) ||
		    config_reload_refusals(cfg, cfg, ignore, NULL) != 0)
			abort(); /* a configuration differs from itself */
		for (size_t i = 0; i < cfg->nnodes; i++)
			if (config_node_index(cfg, cfg->nodes[i].name) !=
			    (int)i)
				abort(); /* duplicate node names accepted */
		config_free(cfg);
	} else if (errors != NULL && errors[0] == '\0') {
		abort(); /* refused without a reason */
	}
	free(errors);
	return 0;
}
