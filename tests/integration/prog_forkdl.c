/* prog_forkdl SECONDS THREADS: forks that land while the shim is inside
 * glibc's loader.
 *
 * dl_iterate_phdr and dlopen hold glibc's dl_load_write_lock for a while,
 * and fork does not reset it: a child forked meanwhile hangs at its own
 * first dl_iterate_phdr or dlopen. The shim calls both from any thread (the
 * unwinder meeting a new address, the report loading libdw). This program
 * is linked with -rdynamic, so its own dlopen and dl_iterate_phdr below are
 * the ones the shim calls; while forking, each marks itself busy for 20 ms
 * around glibc's. THREADS threads fork for SECONDS while the main thread
 * allocates from new call sites and the shim writes snapshots; each child
 * reads its copy of the mark and exits 3 when it was forked inside. Prints
 * "N of M children forked inside the loader; K calls" (K: the calls made
 * while forking) and exits 3 when N > 0. */
#define _GNU_SOURCE
#include "progs.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int forking, busy, busy_calls, forked, inside;

static void busy_begin(void)
{
    if (!atomic_load(&forking))
        return;
    atomic_fetch_add(&busy, 1);
    atomic_fetch_add(&busy_calls, 1);
    struct timespec nap = { 0, 20 * 1000 * 1000 };
    nanosleep(&nap, NULL);
}

static void busy_end(void)
{
    if (atomic_load(&forking))
        atomic_fetch_sub(&busy, 1);
}

void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (real == NULL)
        real = (void *(*)(const char *, int))dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
    if (real == NULL)
        real = (void *(*)(const char *, int))dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.2.5");
    busy_begin();
    void *handle = real(file, mode);
    busy_end();
    return handle;
}

typedef int (*phdr_cb)(struct dl_phdr_info *, size_t, void *);

int dl_iterate_phdr(phdr_cb cb, void *data)
{
    static int (*real)(phdr_cb, void *);
    if (real == NULL)
        real = (int (*)(phdr_cb, void *))dlvsym(RTLD_NEXT, "dl_iterate_phdr", "GLIBC_2.2.5");
    busy_begin();
    int r = real(cb, data);
    busy_end();
    return r;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double until;

static void *forker(void *unused)
{
    (void)unused;
    while (now_s() < until) {
        pid_t child = fork();
        if (child == 0)
            _exit(atomic_load(&busy) > 0 ? 3 : 0);
        if (child < 0)
            continue;
        int status;
        if (waitpid(child, &status, 0) == child)
            atomic_fetch_add(&forked, 1);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
            atomic_fetch_add(&inside, 1);
    }
    return NULL;
}

/* Sites the unwinder has not met: each return address is new to it. */
#define SITE(n)                                                                 \
    __attribute__((noinline)) static void site_##n(void)                       \
    {                                                                           \
        CUdeviceptr p;                                                          \
        OK(cuMemAlloc(&p, 4096 * (n + 1)));                                     \
        OK(cuMemFree(p));                                                       \
    }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static void (*const sites[])(void) = { site_0, site_1, site_2, site_3,
                                       site_4, site_5, site_6, site_7 };

int main(int argc, char **argv)
{
    if (argc < 3)
        return PROG_BAD_USAGE;
    double seconds = atof(argv[1]);
    int threads = atoi(argv[2]);
    if (threads < 1 || threads > 16)
        return PROG_BAD_USAGE;
    (void)use_primary(0);
    CUdeviceptr kept;
    OK(cuMemAlloc(&kept, 1 << 20));
    until = now_s() + seconds;
    atomic_store(&forking, 1);
    pthread_t tids[16];
    for (int t = 0; t < threads; t++)
        pthread_create(&tids[t], NULL, forker, NULL);
    for (size_t i = 0; now_s() < until; i++) {
        sites[i % 8]();
        struct timespec nap = { 0, 50 * 1000 * 1000 };
        nanosleep(&nap, NULL);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    atomic_store(&forking, 0);
    printf("%d of %d children forked inside the loader; %d calls\n", atomic_load(&inside),
           atomic_load(&forked), atomic_load(&busy_calls));
    return atomic_load(&inside) == 0 ? 0 : 3;
}
