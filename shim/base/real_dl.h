/* real_dl.h: the shim's one door to glibc's loader.
 *
 * The shim exports a dlsym and a dlclose of its own (interpose.c); a call to
 * dlsym from inside the shim would reach that export, a floor above. Every
 * module that looks up a symbol for itself (the interpreter's functions,
 * libdw's, the driver's) asks glibc's through here.
 *
 * dl_iterate_phdr, and dlopen or dlclose while they add or drop an object,
 * hold glibc's dl_load_write_lock, which fork does not reset: a child forked
 * meanwhile hangs at its own first dl_iterate_phdr (an unwinder's, a C++
 * throw) or dlopen of a new library. Such calls the shim makes from any
 * thread (the unwinder meeting a new address, libunwind's walk, the report
 * loading libdw) go through here, and a fork waits for them. */
#ifndef GPULEAK_REAL_DL_H
#define GPULEAK_REAL_DL_H

#include <link.h>
#include <stdint.h>

typedef void *(*real_dlsym_fn)(void *handle, const char *name);
typedef int (*real_dlclose_fn)(void *handle);

/* glibc's dlsym and dlclose, found by version at load so that the shim's
 * exported ones are not found instead (GLIBC_2.34 where libdl merged into
 * libc, GLIBC_2.2.5 before). NULL only on a libc with neither, which glibc
 * is not. */
real_dlsym_fn real_dlsym(void);
real_dlclose_fn real_dlclose(void);

/* name in handle by glibc's dlsym (the shim is then the caller glibc sees:
 * not for RTLD_NEXT on a program's behalf), or NULL. */
void *real_dl_lookup(void *handle, const char *name);

/* Between real_dl_enter and real_dl_leave a fork waits (libunwind's
 * unw_backtrace, which calls dl_iterate_phdr itself, runs there). Pairs
 * nest; what runs between them takes no lock a forking thread may hold. */
void real_dl_enter(void);
void real_dl_leave(void);

/* dl_iterate_phdr(cb, data), which a fork waits for. cb takes no lock
 * and allocates nothing: a forking thread may hold an allocator's locks
 * (its fork handler ran before the shim's) while it waits. */
int real_dl_iterate(int (*cb)(struct dl_phdr_info *info, size_t size, void *data), void *data);

/* The extent [*start, *end) of the loaded object's segments that holds
 * addr (a function's address: the shim's own, the interpreter's), through
 * real_dl_iterate. Returns 0, or -1 (and leaves them) when no loaded object
 * holds it. */
int real_dl_object_extent(const void *addr, uintptr_t *start, uintptr_t *end);

/* dlopen(name, flags), which a fork waits for (for at most
 * REAL_DL_FORK_WAIT_MS: a library's constructor that calls pthread_atfork
 * would wait for the forking thread, which holds fork's own lock). */
void *real_dl_open(const char *name, int flags);

/* glibc's dlclose(handle), which a fork waits for likewise; -1 when glibc's
 * dlclose was not found. */
int real_dl_close(void *handle);

#define REAL_DL_FORK_WAIT_MS 1000

#endif
