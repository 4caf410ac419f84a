/* prog_signals: signals and ends of a process the shim must leave as they
 * would be without it (issue 23), by mode.
 *
 *   pthread-exit MS   leak in leak_here, start a thread that allocates for MS
 *                     ms, print "ready", and leave main with pthread_exit:
 *                     the process ends 0 when the thread does
 *   alloc-loop        leak, print "ready", allocate and free in a loop until
 *                     a signal ends the process
 *   own-term-exit     the same under the program's own SIGTERM handler,
 *                     which calls exit(3)
 *   print-loop        leak, print "ready", print to stderr until a signal
 *                     ends the process (stdio's lock on stderr mostly held)
 *   term-in-exit-report
 *                     leak pool memory, return from main: SIGTERM lands in
 *                     the main thread while it writes the report at exit
 *                     (the fake raises it when the report asks the pool's
 *                     reservation)
 *   kill-in-exit-report SIG
 *                     the same, with signal SIG sent to the process as
 *                     another process's kill sends it (SIGABRT, SIGSEGV)
 *   exit-together N   leak from 2,000 stacks (a report that takes a while),
 *                     then N threads and main call exit(0) at once
 *   sites N           leak from N stacks, exit 0
 *   fork-dump         leak, fork a child that waits; send it SIGUSR2 and print
 *                     how it ended; exit 0 when it died of the signal, 3 if not
 *   abort | segv | ill | fpe-raise | bus-raise
 *                     leak, print "ready", then die of SIGABRT (abort), a null
 *                     write (SIGSEGV), a trap (SIGILL), or raise(SIGFPE),
 *                     raise(SIGBUS)
 *   own-abort         the program's SIGABRT handler exits 5; leak and abort */
#define _GNU_SOURCE
#include "progs.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static CUcontext context;

static pthread_barrier_t exit_barrier;

static void *exit_at_barrier(void *unused)
{
    (void)unused;
    cuCtxSetCurrent(context);
    pthread_barrier_wait(&exit_barrier);
    exit(0);
}

static void leak_sites(int n);

/* n threads and main call exit(0) together, after a report's worth of
 * leaks. */
__attribute__((noreturn)) static void exit_together(int n)
{
    leak_sites(2000);
    pthread_barrier_init(&exit_barrier, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, exit_at_barrier, NULL) != 0)
            exit(PROG_BAD_STATE);
    }
    pthread_barrier_wait(&exit_barrier);
    exit(0);
}

__attribute__((noinline)) static void leak_here(void)
{
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p;
        OK(cuMemAlloc(&p, 4096));
    }
}

/* Leaks one allocation from a stack depth deep: each depth is a site. */
__attribute__((noinline)) static void leak_at_depth(int depth)
{
    if (depth > 0) {
        leak_at_depth(depth - 1);
        __asm__ volatile("" ::: "memory"); /* no tail call: the frame stays */
        return;
    }
    CUdeviceptr p;
    OK(cuMemAlloc(&p, 4096));
}

static void leak_sites(int n)
{
    for (int i = 0; i < n; i++)
        leak_at_depth(i);
}

static void ready(void)
{
    printf("ready\n");
    fflush(stdout);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void alloc_forever(void)
{
    for (;;) {
        CUdeviceptr p;
        OK(cuMemAlloc(&p, 256));
        OK(cuMemFree(p));
    }
}

static double worker_ms;

static void *worker(void *unused)
{
    (void)unused;
    OK(cuCtxSetCurrent(context));
    double until = now_s() + worker_ms / 1000;
    while (now_s() < until) {
        CUdeviceptr p;
        OK(cuMemAlloc(&p, 512));
        OK(cuMemFree(p));
        struct timespec tick = { 0, 1000 * 1000 };
        nanosleep(&tick, NULL);
    }
    return NULL;
}

static void exit_three(int sig)
{
    (void)sig;
    exit(3);
}

static void exit_five(int sig)
{
    (void)sig;
    _exit(5);
}

/* tests/fakecuda's hook: its next cuMemPoolGetAttribute raises sig. */
void fakecuda_raise_at_pool_query(int sig);

static int fork_dump(void)
{
    leak_here();
    pid_t child = fork();
    if (child == 0) {
        for (;;)
            pause();
    }
    struct timespec settle = { 0, 50 * 1000 * 1000 };
    nanosleep(&settle, NULL);
    kill(child, SIGUSR2);
    struct timespec wait_at_most = { 0, 500 * 1000 * 1000 };
    nanosleep(&wait_at_most, NULL);
    int status;
    if (waitpid(child, &status, WNOHANG) != child) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        printf("child still ran after SIGUSR2\n");
        return 3;
    }
    printf("child died of signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR2 ? 0 : 3;
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "sites");
    if (strcmp(mode, "own-abort") == 0)  /* before the first CUDA call starts the shim */
        signal(SIGABRT, exit_five);
    context = use_primary(0);
    if (strcmp(mode, "pthread-exit") == 0 && argc > 2) {
        worker_ms = atof(argv[2]);
        leak_here();
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, worker, NULL) == 0);
        ready();
        pthread_exit(NULL);
    }
    if (strcmp(mode, "alloc-loop") == 0 || strcmp(mode, "own-term-exit") == 0) {
        if (strcmp(mode, "own-term-exit") == 0)
            signal(SIGTERM, exit_three);
        leak_here();
        ready();
        alloc_forever();
    }
    if (strcmp(mode, "print-loop") == 0) {
        leak_here();
        ready();
        for (;;)
            fprintf(stderr, "%0100d\n", 0);
    }
    if (strcmp(mode, "term-in-exit-report") == 0) {
        CUdeviceptr p;
        OK(cuMemAllocAsync(&p, 4096, NULL));
        fakecuda_raise_at_pool_query(SIGTERM);
        return 0;
    }
    if (strcmp(mode, "kill-in-exit-report") == 0 && argc > 2) {
        CUdeviceptr p;
        OK(cuMemAllocAsync(&p, 4096, NULL));
        fakecuda_raise_at_pool_query(-atoi(argv[2]));
        return 0;
    }
    if (strcmp(mode, "exit-together") == 0 && argc > 2)
        exit_together(atoi(argv[2]));
    if (strcmp(mode, "sites") == 0) {
        leak_sites(argc > 2 ? atoi(argv[2]) : 10);
        return 0;
    }
    if (strcmp(mode, "fork-dump") == 0)
        return fork_dump();
    leak_here();
    ready();
    if (strcmp(mode, "abort") == 0 || strcmp(mode, "own-abort") == 0)
        abort();
    if (strcmp(mode, "segv") == 0)
        *(volatile int *)(uintptr_t)argc = 1;  /* address 1 or so: never mapped */
    if (strcmp(mode, "ill") == 0)
        __builtin_trap();
    if (strcmp(mode, "fpe-raise") == 0)
        raise(SIGFPE);
    if (strcmp(mode, "bus-raise") == 0)
        raise(SIGBUS);
    return prog_bad_mode(mode);
}
