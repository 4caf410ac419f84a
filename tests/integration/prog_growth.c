/* prog_growth MODE: what the growth rule, the peak and the OOM snapshot must
 * see in a running program.
 *
 *   leak     80 steps of 5 ms: each allocates 1 MiB of activations in
 *            step_activations and frees them; every 4th step keeps 256 KiB
 *            in keep_history (the leak); 4 MiB of weights in load_weights at
 *            start-up stay live (not growth)
 *   steady   the same without keep_history: no growth finding
 *   short    6 steps of the leak: too few samples for the growth rule to
 *            judge (its report must say so, not "nothing grew")
 *   pool     40 steps of 5 ms, each keeping 256 KiB from the stream-ordered
 *            pool in keep_pooled: the timeline shows the pool's reservation
 *   oom      needs FAKECUDA_OOM_AFTER=3: hold_for_oom keeps 3 x 1 MiB, then
 *            ask_too_much fails twice (2 MiB each) */
#define _GNU_SOURCE
#include "progs.h"

#include <time.h>

#define MIB (1u << 20)

__attribute__((noinline)) static void load_weights(void)
{
    CUdeviceptr w;
    OK(cuMemAlloc(&w, 4 * MIB));
}

__attribute__((noinline)) static void keep_history(void)
{
    CUdeviceptr kept;
    OK(cuMemAlloc(&kept, MIB / 4));
}

__attribute__((noinline)) static void step_activations(void)
{
    CUdeviceptr a;
    OK(cuMemAlloc(&a, MIB));
    OK(cuMemFree(a));
}

__attribute__((noinline)) static void hold_for_oom(void)
{
    for (int i = 0; i < 3; i++) {
        CUdeviceptr p;
        OK(cuMemAlloc(&p, MIB));
    }
}

__attribute__((noinline)) static void ask_too_much(void)
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, 2 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
}

__attribute__((noinline)) static void keep_pooled(void)
{
    CUdeviceptr kept;
    OK(cuMemAllocAsync(&kept, MIB / 4, NULL));
}

static void train(int leak, int steps)
{
    load_weights();
    struct timespec step = { 0, 5 * 1000 * 1000 };
    for (int i = 0; i < steps; i++) {
        step_activations();
        if (leak && i % 4 == 0)
            keep_history();
        nanosleep(&step, NULL);
    }
}

int main(int argc, char **argv)
{
    const char *mode = prog_mode(argc, argv, "leak");
    use_primary(0);
    if (strcmp(mode, "leak") == 0 || strcmp(mode, "steady") == 0) {
        train(strcmp(mode, "leak") == 0, 80);
        return 0;
    }
    if (strcmp(mode, "short") == 0) {
        train(1, 6);
        return 0;
    }
    if (strcmp(mode, "pool") == 0) {
        struct timespec step = { 0, 5 * 1000 * 1000 };
        for (int i = 0; i < 40; i++) {
            keep_pooled();
            nanosleep(&step, NULL);
        }
        return 0;
    }
    if (strcmp(mode, "oom") == 0) {
        hold_for_oom();
        ask_too_much();
        ask_too_much();
        return 0;
    }
    return prog_bad_mode(mode);
}
