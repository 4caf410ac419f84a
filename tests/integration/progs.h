/* progs.h: what every integration program shares.
 *
 * The programs check every return code against what the fake driver must
 * return, and exit with PROG_BAD_RESULT on the first difference, so a test
 * that runs them under the shim asserts "return codes pass through" by the
 * exit status alone. */
#ifndef GPULEAK_PROGS_H
#define GPULEAK_PROGS_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct from any exit code a test asks a program for (0, 3). */
#define PROG_BAD_RESULT 90
#define PROG_BAD_USAGE 91
#define PROG_BAD_STATE 92

#define CHECK(call, want)                                                          \
    do {                                                                           \
        CUresult check_rc_ = (call);                                               \
        if (check_rc_ != (CUresult)(want)) {                                       \
            fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__,      \
                    __LINE__, #call, (int)check_rc_, (int)(want));                 \
            exit(PROG_BAD_RESULT);                                                 \
        }                                                                          \
    } while (0)

#define OK(call) CHECK(call, CUDA_SUCCESS)

/* For conditions other than return codes (canaries, counts, errno). */
#define EXPECT(cond)                                                               \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);    \
            exit(PROG_BAD_STATE);                                                  \
        }                                                                          \
    } while (0)

/* Initialises the driver and makes dev's primary context current, the way
 * cudart does on first use. Returns the context so threads can share it. */
static inline CUcontext use_primary(CUdevice dev)
{
    CUcontext ctx;
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    OK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* The program's mode: argv[1], or def when none is given. */
static inline const char *prog_mode(int argc, char **argv, const char *def)
{
    return argc > 1 ? argv[1] : def;
}

/* Exits with PROG_BAD_USAGE for an unknown mode, so a typo in a test is
 * not mistaken for a run that did nothing. */
static inline int prog_bad_mode(const char *mode)
{
    fprintf(stderr, "unknown mode %s\n", mode);
    return PROG_BAD_USAGE;
}

#endif
