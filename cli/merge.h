/* merge.h: `gpuleak merge FILE...`, many processes or ranks in one view. */
#ifndef GPULEAK_CLI_MERGE_H
#define GPULEAK_CLI_MERGE_H

int merge_main(int argc, char **argv);

#endif
