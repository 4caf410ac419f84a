/* unwind_fds.c: libunwind's validation pipe moved high (unwind_fds.h). */
#define _GNU_SOURCE
#include "unwind_fds.h"
#include "real_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define EXPORT __attribute__((visibility("default")))

/* libunwind's loaded code, [start, end); 0, 0 before init. */
static _Atomic uintptr_t unwind_start, unwind_end;

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t want = *(uintptr_t *)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && want >= start
            && want < start + ph->p_memsz) {
            atomic_store(&unwind_start, start);
            atomic_store(&unwind_end, start + ph->p_memsz);
            return 1;
        }
    }
    return 0;
}

void unwind_fds_init(void)
{
    uintptr_t probe = (uintptr_t)&unw_backtrace;
    real_dl_iterate(find_object, &probe);
}

/* The lowest number of the top few the descriptor limit allows; 0 when the
 * limit is too low to leave room (then the pipe stays where it was). */
static int high_floor(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return 1024;
    if (limit.rlim_cur < 64)
        return 0;
    return (int)(limit.rlim_cur > 1u << 20 ? 1u << 20 : limit.rlim_cur) - 16;
}

/* Moves fds[0] and fds[1] to the top of the range, close-on-exec. */
static void move_high(int fds[2])
{
    int floor = high_floor();
    if (floor <= 0)
        return;
    int high[2];
    high[0] = fcntl(fds[0], F_DUPFD_CLOEXEC, floor);
    high[1] = high[0] >= 0 ? fcntl(fds[1], F_DUPFD_CLOEXEC, floor) : -1;
    if (high[1] < 0) {
        if (high[0] >= 0)
            close(high[0]);
        return;
    }
    close(fds[0]);
    close(fds[1]);
    fds[0] = high[0];
    fds[1] = high[1];
}

typedef int (*pipe2_fn)(int fds[2], int flags);

EXPORT int pipe2(int fds[2], int flags)
{
    static _Atomic(pipe2_fn) real;
    pipe2_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (fn == NULL) {
        fn = (pipe2_fn)dlvsym(RTLD_NEXT, "pipe2", "GLIBC_2.9");
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    if (fn == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int rc = fn(fds, flags);
    uintptr_t caller = (uintptr_t)__builtin_return_address(0);
    if (rc == 0 && caller >= atomic_load(&unwind_start) && caller < atomic_load(&unwind_end)) {
        int saved_errno = errno;
        move_high(fds);
        errno = saved_errno;
    }
    return rc;
}
