/* diff.h: `gpuleak diff OLD NEW [--threshold SIZE]`. */
#ifndef GPULEAK_CLI_DIFF_H
#define GPULEAK_CLI_DIFF_H

int diff_main(int argc, char **argv);

#endif
