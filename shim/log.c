#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

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
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
    errno = saved_errno;
}
