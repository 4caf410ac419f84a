/* prog_threads.c [threads] [pairs] [leaks]: every thread allocates and
 * frees `pairs` blocks (sizes 256..1264) in the shared primary context,
 * then thread_leak() leaks `leaks` blocks of 4096. Defaults: 16 100000 3.
 *
 * The fake driver's books after each run: prog_threads.expect.json.
 */
#include "progs.h"

#include <pthread.h>

typedef struct {
    CUcontext ctx;
    long pairs, leaks;
} job_t;

__attribute__((noinline)) void thread_leak(void)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 4096));
}

/* A thread has no current context until it sets one, as with the driver. */
static void *worker(void *arg)
{
    const job_t *job = arg;
    OK(cuCtxSetCurrent(job->ctx));
    for (long i = 0; i < job->pairs; i++) {
        CUdeviceptr p = 0;
        OK(cuMemAlloc_v2(&p, 256 + (size_t)(i % 64) * 16));
        OK(cuMemFree_v2(p));
    }
    for (long i = 0; i < job->leaks; i++)
        thread_leak();
    return NULL;
}

int main(int argc, char **argv)
{
    long threads = argc > 1 ? atol(argv[1]) : 16;
    job_t job = { NULL, argc > 2 ? atol(argv[2]) : 100000, argc > 3 ? atol(argv[3]) : 3 };
    if (threads < 1 || threads > 256 || job.pairs < 0 || job.leaks < 0)
        return PROG_BAD_USAGE;
    job.ctx = use_primary(0);
    pthread_t tid[256];
    for (long t = 0; t < threads; t++)
        EXPECT(pthread_create(&tid[t], NULL, worker, &job) == 0);
    for (long t = 0; t < threads; t++)
        EXPECT(pthread_join(tid[t], NULL) == 0);
    return 0;
}
