/* prog_symbols: a leak whose stack holds only functions no .dynsym names:
 * main, a static function, and a static one named like nvcc's static
 * cudart (cuda[A-Z]*), which the origin rules skip by name. The Makefile
 * builds it several ways (tests/integration/test_symbols.py): with DWARF,
 * at -O0 without -g, stripped of debug info but not of .symtab, and with
 * only MiniDebugInfo (.gnu_debugdata) left. Leaks 5000 bytes, exits 0. */
#include "progs.h"

static volatile int sink;

/* Stands for cudart's cudaMalloc as nvcc links it, statically. */
__attribute__((noinline)) static CUresult cudaStaticMalloc(CUdeviceptr *p, size_t size)
{
    CUresult rc = cuMemAlloc(p, size);
    sink++; /* keeps the call from being a tail call */
    return rc;
}

__attribute__((noinline)) static void leak_from_static(void)
{
    CUdeviceptr p;
    OK(cudaStaticMalloc(&p, 5000));
    sink++;
}

int main(void)
{
    use_primary(0);
    leak_from_static();
    return 0;
}
