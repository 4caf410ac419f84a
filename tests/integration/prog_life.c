/* prog_life: the process events the shim must survive, by mode.
 *
 *   sleep SECONDS   leak 3 allocations in leak_before_sleep, print "ready",
 *                   sleep, exit 0 (signals are sent by the test meanwhile)
 *   own-term        install a SIGTERM handler that exits 7, leak, print
 *                   "ready", wait for the signal
 *   fork            leak in the parent, fork; the child allocates, frees and
 *                   exits 0; the parent waits and exits 0
 *   fork-while-starting MICROSECONDS
 *                   a thread makes the process's first allocation (which
 *                   starts tracking) while the main thread forks after the
 *                   delay; the child allocates, frees and exits 0
 *   fork-term       leak, fork a child that waits; SIGTERM it and exit 0
 *                   when it died of the signal within a second, 3 when not
 *   fork-exit SECONDS THREADS
 *                   leak from a few sites, then THREADS threads fork for
 *                   SECONDS while snapshots are written; each child walks
 *                   the loaded objects (dl_iterate_phdr, as an unwinder
 *                   does) and calls exit(0); a child that has not exited
 *                   within 5 s is killed and counted; exits 3 when any was
 *   quick-exit HOW  leak; a vfork child leaves by _exit; allocate 4242 bytes;
 *                   leave by HOW (_exit or _Exit) with status 5
 *   daemon          leak, call daemon(1, 1); the daemon prints its pid
 *   stress SECONDS THREADS
 *                   THREADS threads allocate and free at random across every
 *                   family for SECONDS, while the main thread forks children
 *                   that touch CUDA and raises the dump signal now and then;
 *                   every thread frees what it holds except a known few */
#define _GNU_SOURCE
#include "progs.h"

#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static CUcontext context;

__attribute__((noinline)) static void leak_before_sleep(void)
{
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p;
        OK(cuMemAlloc(&p, 1 << 20));
    }
}

static void ready(void)
{
    printf("ready\n");
    fflush(stdout);
}

static void exit_seven(int sig)
{
    (void)sig;
    exit(7);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *first_allocation(void *unused)
{
    (void)unused;
    OK(cuCtxSetCurrent(context));
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 256));
    OK(cuMemFree(p));
    return NULL;
}

/* The child's allocation and free; _exit keeps the fake's books (written
 * at exit) the parent's alone. */
static void child_allocates(void)
{
    CUdeviceptr p;
    if (cuMemAlloc(&p, 64) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS)
        _exit(1);
    _exit(0);
}

static int fork_while_starting(long delay_us)
{
    pthread_t first;
    pthread_create(&first, NULL, first_allocation, NULL);
    struct timespec delay = { delay_us / 1000000, (delay_us % 1000000) * 1000 };
    nanosleep(&delay, NULL);
    pid_t child = fork();
    if (child == 0)
        child_allocates();
    int status;
    EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pthread_join(first, NULL);
    return 0;
}

static int fork_term(void)
{
    leak_before_sleep();
    pid_t child = fork();
    if (child == 0) {
        for (;;)
            pause();
    }
    struct timespec settle = { 0, 50 * 1000 * 1000 };
    nanosleep(&settle, NULL);
    double sent = now_s();
    kill(child, SIGTERM);
    int status;
    EXPECT(waitpid(child, &status, 0) == child);
    double took = now_s() - sent;
    printf("child died of signal %d after %.3f s\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0, took);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM && took < 1.0 ? 0 : 3;
}

/* A few distinct sites, so each snapshot has frames to symbolize. */
__attribute__((noinline)) static void leak_at(int depth)
{
    if (depth > 0) {
        leak_at(depth - 1);
        __asm__ volatile("" ::: "memory"); /* keep the call a call */
        return;
    }
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 4096));
}

static double fork_exit_until;
static atomic_int forked, hung;

static int no_op_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    (void)data;
    return 0;
}

/* Forks until fork_exit_until; each child must be gone within 5 s. */
static void *fork_exit_thread(void *unused)
{
    (void)unused;
    while (now_s() < fork_exit_until) {
        pid_t child = fork();
        if (child == 0) {
            dl_iterate_phdr(no_op_cb, NULL);
            exit(0);
        }
        if (child < 0)
            continue;
        atomic_fetch_add(&forked, 1);
        int status;
        double deadline = now_s() + 5;
        while (waitpid(child, &status, WNOHANG) == 0) {
            if (now_s() > deadline) {
                atomic_fetch_add(&hung, 1);
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
                break;
            }
            struct timespec tick = { 0, 1000 * 1000 };
            nanosleep(&tick, NULL);
        }
    }
    return NULL;
}

static int fork_exit(double seconds, int threads)
{
    for (int i = 0; i < 8; i++)
        leak_at(i);
    fork_exit_until = now_s() + seconds;
    pthread_t tids[64];
    if (threads > 64)
        threads = 64;
    for (int t = 0; t < threads; t++)
        pthread_create(&tids[t], NULL, fork_exit_thread, NULL);
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    printf("%d of %d children hung\n", atomic_load(&hung), atomic_load(&forked));
    return atomic_load(&hung) == 0 ? 0 : 3;
}

/* What a stress thread holds: a ring of live allocations of every family. */
typedef struct held {
    int family;
    uint64_t handle;
} held_t;

#define HELD 64
static double stress_until;
static atomic_int stress_failures;

/* Allocates in one of the six families; returns 0 on success. */
static int alloc_family(int family, uint64_t *handle, unsigned *seed)
{
    size_t size = 256 + (rand_r(seed) % 64) * 256;
    CUdeviceptr d;
    void *h;
    CUresult rc;
    switch (family) {
    case 0: rc = cuMemAlloc(&d, size); *handle = d; break;
    case 1: rc = cuMemAllocAsync(&d, size, NULL); *handle = d; break;
    case 2: rc = cuMemAllocManaged(&d, size, CU_MEM_ATTACH_GLOBAL); *handle = d; break;
    case 3: rc = cuMemAllocHost(&h, size); *handle = (uint64_t)(uintptr_t)h; break;
    case 4: {
        CUmemAllocationProp prop = { 0 };
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        CUmemGenericAllocationHandle v;
        rc = cuMemCreate(&v, 2 << 20, &prop, 0);
        *handle = v;
        break;
    }
    default: {
        CUDA_ARRAY_DESCRIPTOR desc = { .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT,
                                       .NumChannels = 1 };
        CUarray a;
        rc = cuArrayCreate(&a, &desc);
        *handle = (uint64_t)(uintptr_t)a;
        break;
    }
    }
    return rc == CUDA_SUCCESS ? 0 : -1;
}

static void free_family(const held_t *h)
{
    CUresult rc;
    switch (h->family) {
    case 0: case 2: rc = cuMemFree(h->handle); break;
    case 1: rc = cuMemFreeAsync(h->handle, NULL); break;
    case 3: rc = cuMemFreeHost((void *)(uintptr_t)h->handle); break;
    case 4: rc = cuMemRelease(h->handle); break;
    default: rc = cuArrayDestroy((CUarray)(uintptr_t)h->handle); break;
    }
    if (rc != CUDA_SUCCESS)
        atomic_fetch_add(&stress_failures, 1);
}

static void *stress_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    OK(cuCtxSetCurrent(context));
    held_t held[HELD];
    int count = 0;
    while (now_s() < stress_until) {
        if (count == HELD || (count > 0 && rand_r(&seed) % 2)) {
            int i = (int)(rand_r(&seed) % (unsigned)count);
            free_family(&held[i]);
            held[i] = held[--count];
        } else {
            held[count].family = (int)(rand_r(&seed) % 6);
            if (alloc_family(held[count].family, &held[count].handle, &seed) == 0)
                count++;
            else
                atomic_fetch_add(&stress_failures, 1);
        }
    }
    /* Keep exactly one device allocation per thread: a known leak. */
    for (int i = 0; i < count; i++)
        free_family(&held[i]);
    CUdeviceptr kept;
    OK(cuMemAlloc(&kept, 4096));
    return NULL;
}

static int stress(double seconds, int threads)
{
    /* Tracking starts at the first allocation, and with it the dump
     * signal's handler: until then SIGUSR2 kills, as it would without the
     * shim. Left to the stress threads, a loaded machine once had the first
     * raise below come before that, and the program died of it. */
    CUdeviceptr first;
    OK(cuMemAlloc(&first, 256));
    OK(cuMemFree(first));
    stress_until = now_s() + seconds;
    pthread_t tids[256];
    if (threads > 256)
        threads = 256;
    for (int t = 0; t < threads; t++)
        pthread_create(&tids[t], NULL, stress_thread, (void *)(uintptr_t)(t * 7919 + 1));
    while (now_s() < stress_until) {
        pid_t child = fork();
        if (child == 0) {
            /* A DataLoader-style child touching CUDA; _exit keeps the fake's
             * books (written at exit) the parent's alone. */
            CUdeviceptr p;
            if (cuMemAlloc(&p, 512) == CUDA_SUCCESS)
                cuMemFree(p);
            _exit(0);
        }
        if (child > 0)
            waitpid(child, NULL, 0);
        raise(SIGUSR2);
        struct timespec pause = { 0, 200 * 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    EXPECT(atomic_load(&stress_failures) == 0);
    return 0;
}

/* Leaves by _exit (or _Exit) with status 5, no exit handler run; first, a
 * vfork child that leaves by _exit must not end the parent's tracking. */
static int quick_exit_mode(const char *how)
{
    leak_before_sleep();
    pid_t child = vfork();
    if (child == 0)
        _exit(0);
    EXPECT(child > 0 && waitpid(child, NULL, 0) == child);
    CUdeviceptr after;
    OK(cuMemAlloc(&after, 4242));  /* still tracked: the child took nothing */
    if (strcmp(how, "_Exit") == 0)
        _Exit(5);
    _exit(5);
}

/* daemon() ends its caller; the daemon says its pid on stdout and ends. */
static int daemon_mode(void)
{
    leak_before_sleep();
    EXPECT(daemon(1, 1) == 0);
    printf("daemon %d\n", (int)getpid());
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "sleep");
    context = use_primary(0);
    if (strcmp(mode, "sleep") == 0) {
        leak_before_sleep();
        ready();
        /* A signal cuts sleep short; the test needs the whole time. */
        double until = now_s() + (argc > 2 ? atof(argv[2]) : 5);
        while (now_s() < until) {
            struct timespec tick = { 0, 20 * 1000 * 1000 };
            nanosleep(&tick, NULL);
        }
        return 0;
    }
    if (strcmp(mode, "own-term") == 0) {
        signal(SIGTERM, exit_seven);
        leak_before_sleep();
        ready();
        for (;;)
            pause();
    }
    if (strcmp(mode, "fork") == 0) {
        leak_before_sleep();
        pid_t child = fork();
        if (child == 0) {
            CUdeviceptr p;
            OK(cuMemAlloc(&p, 777));
            OK(cuMemFree(p));
            exit(0);
        }
        int status;
        EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return 0;
    }
    if (strcmp(mode, "fork-while-starting") == 0 && argc > 2)
        return fork_while_starting(atol(argv[2]));
    if (strcmp(mode, "fork-term") == 0)
        return fork_term();
    if (strcmp(mode, "fork-exit") == 0 && argc > 3)
        return fork_exit(atof(argv[2]), atoi(argv[3]));
    if (strcmp(mode, "quick-exit") == 0 && argc > 2)
        return quick_exit_mode(argv[2]);
    if (strcmp(mode, "daemon") == 0)
        return daemon_mode();
    if (strcmp(mode, "stress") == 0 && argc > 3)
        return stress(atof(argv[2]), atoi(argv[3]));
    return prog_bad_mode(mode);
}
