/* command.h: how the person reading the exit summary calls the gpuleak
 * command, so that the next step it prints works as typed. */
#ifndef GPULEAK_COMMAND_H
#define GPULEAK_COMMAND_H

#include <stddef.h>

/* Writes into buf (size bytes) the way to call the gpuleak command that
 * came with this libgpuleak.so: "gpuleak" when that name on PATH is it,
 * else its absolute path (beside the library, as in the build folder, or
 * in ../bin, as installed); "gpuleak" when none is found. Leaves errno as
 * it found it. */
void command_name(char *buf, size_t size);

#endif
