/*
 * labcli.h - cutlab's commands but sim (labcli.c): audit, run, props.
 */
#ifndef CUT_LABCLI_H
#define CUT_LABCLI_H

/* cutlab's main for every command but sim, with cutlab's argc and argv
 * (argv[1] the command); returns the exit status. */
int lab_main(int argc, char **argv);

#endif /* CUT_LABCLI_H */
