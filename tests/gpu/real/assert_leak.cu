// assert_leak.cu: leaks device memory from main, then fails an assert, for
// scripts/gpu-real.sh (issue 23). Built without -g: the report must still
// name main and the static function that leaks (from the ELF symbol
// tables, libdw off), and the process must die of SIGABRT as it would
// without the shim, with a report written first.
#include <assert.h>
#include <cuda_runtime.h>
#include <stdio.h>

// noinline: nvcc -O2 folds a static function called once into main, and
// then no frame of it is left to name.
static __attribute__((noinline)) void *leak_from_static(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
        return NULL;
    return p;
}

int main(int argc, char **argv)
{
    void *kept = leak_from_static(1 << 20);
    printf("kept %p\n", kept);
    fflush(stdout);
    assert(argc > 1 && "no argument: this program fails its assert after leaking");
    (void)argv;
    return 0;
}
