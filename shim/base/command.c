#define _GNU_SOURCE
#include "command.h"
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The command beside the library at lib_path, or in ../bin from it, into
 * found; 0 when neither is an executable file. */
static int command_beside(const char *lib_path, char *found, size_t size)
{
    const char *slash = strrchr(lib_path, '/');
    if (slash == NULL)
        return 0;
    int dir = (int)(slash - lib_path);
    static const char *const places[] = { "%.*s/gpuleak", "%.*s/../bin/gpuleak" };
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        char candidate[PATH_MAX];
        int n = snprintf(candidate, sizeof candidate, places[i], dir, lib_path);
        if (n > 0 && (size_t)n < sizeof candidate && access(candidate, X_OK) == 0
            && realpath(candidate, found) != NULL && strlen(found) < size)
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
        char candidate[PATH_MAX];  /* an empty entry is the working directory */
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
    char found[PATH_MAX];
    if (dladdr((void *)command_name, &info) != 0 && info.dli_fname != NULL
        && command_beside(info.dli_fname, found, size) && !first_on_path_is(found))
        snprintf(buf, size, "%s", found);
    else
        snprintf(buf, size, "gpuleak");
    errno = saved;
}
