/* unwind_fds.h: libunwind's own descriptors, kept out of the program's way.
 *
 * libunwind checks the memory it reads while it steps a signal frame by
 * writing one byte of it to a pipe of its own, made once (pipe2) and kept
 * in two static descriptors for the life of the process. pipe2 gives the
 * lowest free numbers, 3 and 4 in most programs: one that closes its
 * descriptors (a daemon, a spawn helper, closefrom) and opens files of its
 * own gets those numbers, and libunwind then reads and writes the program's
 * files. The shim exports pipe2: a pipe libunwind asks for is moved to
 * descriptors at the top of the process's limit (close-on-exec, as it
 * asked), where a program's files do not land; every other caller's pipe2
 * is glibc's, untouched. When the program closes them anyway, libunwind's
 * next read fails and it asks for a new pipe, moved up again. */
#ifndef GPULEAK_UNWIND_FDS_H
#define GPULEAK_UNWIND_FDS_H

/* Finds where libunwind's code is. Call once, before the first libunwind
 * call (which makes the pipe), outside any signal handler. */
void unwind_fds_init(void);

#endif
