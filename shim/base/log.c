#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int is_pending(int sig)
{
    sigset_t pending;
    return sigpending(&pending) == 0 && sigismember(&pending, sig);
}

void log_quiet_begin(log_quiet_t *quiet)
{
    sigset_t quiet_set;
    sigemptyset(&quiet_set);
    sigaddset(&quiet_set, SIGPIPE);
    sigaddset(&quiet_set, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &quiet_set, &quiet->old);
    quiet->pipe_pending = is_pending(SIGPIPE);
    quiet->xfsz_pending = is_pending(SIGXFSZ);
}

/* Takes sig back when the shim's writes raised it. */
static void take_back(int sig, int was_pending)
{
    if (was_pending || !is_pending(sig))
        return;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct timespec now = { 0, 0 };
    sigtimedwait(&one, NULL, &now);
}

void log_quiet_end(log_quiet_t *quiet)
{
    int saved_errno = errno;
    take_back(SIGPIPE, quiet->pipe_pending);
    take_back(SIGXFSZ, quiet->xfsz_pending);
    pthread_sigmask(SIG_SETMASK, &quiet->old, NULL);
    errno = saved_errno;
}

void log_line(const char *fmt, ...)
{
    char line[1024];
    int saved_errno = errno;
    int used = snprintf(line, sizeof line, "gpuleak: ");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + used, sizeof line - (size_t)used - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    size_t len = (size_t)used + (size_t)n;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    log_quiet_t quiet;
    log_quiet_begin(&quiet);
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
    log_quiet_end(&quiet);
    errno = saved_errno;
}
