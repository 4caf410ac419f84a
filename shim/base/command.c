#define _GNU_SOURCE
#include "command.h"
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Candidate paths are built on the stack of whichever thread writes the
 * report, so they are kept short: a longer one is not looked at. */
#define CANDIDATE_MAX 1024

/* Into found (size bytes): the command beside the library at lib_path, or
 * in ../bin from it, its links resolved. 0 when neither is an executable
 * file, or its path does not fit. */
static int command_beside(const char *lib_path, char *found, size_t size)
{
    const char *slash = strrchr(lib_path, '/');
    if (slash == NULL)
        return 0;
    int dir = (int)(slash - lib_path);
    for (int installed = 0; installed < 2; installed++) {
        char candidate[CANDIDATE_MAX];
        int n = snprintf(candidate, sizeof candidate, "%.*s%s", dir, lib_path,
                         installed ? "/../bin/gpuleak" : "/gpuleak");
        if (n <= 0 || (size_t)n >= sizeof candidate || access(candidate, X_OK) != 0)
            continue;
        char *resolved = realpath(candidate, NULL);
        int fits = resolved != NULL && strlen(resolved) < size;
        if (fits)
            memcpy(found, resolved, strlen(resolved) + 1);
        free(resolved);
        if (fits)
            return 1;
    }
    return 0;
}

/* Whether "gpuleak" looked up on PATH is the file at path. */
static int first_on_path_is(const char *path)
{
    const char *dirs = config_getenv("PATH");
    struct stat want, seen;
    if (dirs == NULL || stat(path, &want) != 0)
        return 0;
    while (*dirs != '\0') {
        size_t len = strcspn(dirs, ":");
        char candidate[CANDIDATE_MAX];  /* an empty entry is the working directory */
        int n = snprintf(candidate, sizeof candidate, "%.*s/gpuleak", len ? (int)len : 1, len ? dirs : ".");
        if (n > 0 && (size_t)n < sizeof candidate && access(candidate, X_OK) == 0)
            return stat(candidate, &seen) == 0 && seen.st_dev == want.st_dev && seen.st_ino == want.st_ino;
        dirs += len + (dirs[len] == ':');
    }
    return 0;
}

void command_name(char *buf, size_t size)
{
    int saved = errno;
    Dl_info info;
    if (size == 0)
        return;
    if (dladdr((void *)command_name, &info) == 0 || info.dli_fname == NULL
        || !command_beside(info.dli_fname, buf, size) || first_on_path_is(buf))
        snprintf(buf, size, "gpuleak");
    errno = saved;
}
