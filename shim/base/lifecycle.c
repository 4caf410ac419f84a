/* lifecycle.c: the state every part of the shim reads: whether tracking
 * runs, why it stopped, when it started (the clocks' offsets), and which
 * PyTorch allocator the program uses. start.c moves it. */
#define _GNU_SOURCE
#include "lifecycle.h"
#include "clock.h"
#include "config.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Atomic int lifecycle_state_now = LIFECYCLE_IDLE;
static _Atomic(const char *) stop_reason;
static _Atomic int started;      /* the report is owed at exit */
static _Atomic int starting;     /* lifecycle_begin has run (tracking may not have started) */
static uint64_t epoch_offset_ns;
static uint64_t started_ns;

static const char *torch_mode = "native";
#define ASYNC_CONF "backend:cudaMallocAsync"

const char *lifecycle_torch_mode(void)
{
    return torch_mode;
}

/* PyTorch reads PYTORCH_CUDA_ALLOC_CONF when its allocator starts, which
 * can precede the first driver call, so the choice is made at load time.
 * The program's allocator is left alone unless GPULEAK_TORCH_ALLOCATOR=async
 * asks for the cudaMallocAsync backend (each tensor one driver allocation,
 * but 14% slower on a GPT-2 training step, with other fragmentation and
 * peaks, and CUDA graph trees fail under it: docs/performance.md); by
 * default tensors come from the caching allocator's events (torch_trace.h).
 * A value the user set is never touched. */
__attribute__((constructor)) static void choose_torch_allocator(void)
{
    if (!config_enabled_at_load(config_getenv("GPULEAK_ENABLE")))
        return;
    int async = config_torch_allocator_async(config_getenv("GPULEAK_TORCH_ALLOCATOR")) == 1;
    const char *conf = config_getenv("PYTORCH_CUDA_ALLOC_CONF");
    if (conf != NULL) {
        /* Set by the shim in a parent (a shell, a launcher) when async was
         * asked for and the value is exactly the shim's. */
        torch_mode = async && strcmp(conf, ASYNC_CONF) == 0 ? "cudaMallocAsync" : "user";
        return;
    }
    if (!async)
        return;
    if (setenv("PYTORCH_CUDA_ALLOC_CONF", ASYNC_CONF, 0) == 0)
        torch_mode = "cudaMallocAsync";
}

uint64_t lifecycle_started_ns(void)
{
    return started_ns;
}

uint64_t lifecycle_epoch_offset_ns(void)
{
    return epoch_offset_ns;
}

/* A forked child inherits the parent's tables, so its own report would
 * repeat the parent's allocations: once the parent has begun to track, the
 * child forwards every call untouched and writes nothing (documented). A
 * child of a parent that never began tracks on its own, as a process
 * started with exec would. No lock is taken here, so a fork while another
 * thread holds a shim lock cannot deadlock the child; and since a fork
 * while another thread was inside start_tracking counts as begun, the
 * child never runs start_tracking again over locks (libunwind's among
 * them) held by a thread it does not have. */
static void child_after_fork(void)
{
    if (!atomic_load(&starting))
        return;
    atomic_store(&lifecycle_state_now, LIFECYCLE_OFF);
    atomic_store(&started, 0);
}

/* Registered at load, before any thread can be starting to track. */
__attribute__((constructor)) static void watch_forks(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* The process tracking started in: a vfork child shares this memory
 * (started included) and runs no fork handler, yet owes nothing. */
static _Atomic pid_t started_in;

int lifecycle_report_owed(void)
{
    return atomic_load(&started) && atomic_load(&started_in) == getpid();
}

static _Atomic int exit_begun;

int lifecycle_exit_begins(void)
{
    return atomic_exchange(&exit_begun, 1);
}

void lifecycle_begin(void)
{
    atomic_store(&starting, 1);
    struct timespec real, mono;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC_COARSE, &mono);
    epoch_offset_ns = ((uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec)
                    - ((uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec);
    started_ns = clock_coarse_ns();
}

void lifecycle_tracking_on(void)
{
    atomic_store(&started_in, getpid());
    atomic_store(&started, 1);
    atomic_store_explicit(&lifecycle_state_now, LIFECYCLE_TRACKING, memory_order_release);
}

void lifecycle_disable(const char *reason)
{
    const char *expected = NULL;
    if (atomic_compare_exchange_strong(&stop_reason, &expected, reason))
        log_line("%s; deactivating tracking (the program runs on)", reason);
    atomic_store(&lifecycle_state_now, LIFECYCLE_OFF);
}

void lifecycle_stop(void)
{
    int tracking = LIFECYCLE_TRACKING;
    atomic_compare_exchange_strong(&lifecycle_state_now, &tracking, LIFECYCLE_OFF);
}

const char *lifecycle_stop_reason(void)
{
    return atomic_load(&stop_reason);
}

