/*
 * cutlab - the deterministic lab (lab/labcli.c) and the whole-cluster
 * simulation (sim.c) in one program: `cutlab sim ...` runs the
 * simulation, every other command the lab.  Here, above both layers,
 * because the simulation is above the lab (it draws from the lab's PRNG).
 */
#include <string.h>

#include "labcli.h"
#include "sim.h"

int
main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "sim") == 0)
		return sim_main(argc - 2, argv + 2);
	return lab_main(argc, argv);
}
