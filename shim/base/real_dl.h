/* real_dl.h: glibc's own dlsym and dlclose.
 *
 * The shim exports a dlsym and a dlclose of its own (interpose.c); a call to
 * dlsym from inside the shim would reach that export, a floor above. Every
 * module that looks up a symbol for itself (the interpreter's functions,
 * libdw's, the driver's) asks glibc's through here. */
#ifndef GPULEAK_REAL_DL_H
#define GPULEAK_REAL_DL_H

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

#endif
