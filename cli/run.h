/* run.h: `gpuleak run [options] -- CMD [ARGS...]`. */
#ifndef GPULEAK_CLI_RUN_H
#define GPULEAK_CLI_RUN_H

/* Exit status when a gate fails, chosen like LeakSanitizer's exitcode=23 so
 * that CI tells a leak from a crash or a failing test. */
#define RUN_EXIT_GATE 23
/* gpuleak itself could not do its part (no shim, no report to judge). */
#define RUN_EXIT_INTERNAL 125
#define RUN_EXIT_NOEXEC 126
#define RUN_EXIT_NOTFOUND 127

int run_main(int argc, char **argv);

#endif
