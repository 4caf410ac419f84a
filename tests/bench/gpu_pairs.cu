// gpu_pairs.cu: the floor under the shim on a real GPU (scripts/gpu-bench.sh).
//
//   gpu_pairs async|sync PAIRS [BYTES]
//
// async: PAIRS cudaMallocAsync + cudaFreeAsync pairs on one stream (served
// from the device's default pool after the first); sync: cudaMalloc +
// cudaFree pairs. BYTES defaults to 1 MiB. A warm-up (1000 async pairs, 20
// sync pairs) comes first; the stream is synchronised before the clock
// stops. Prints "ns_per_pair=<host time per pair>".
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static int check(cudaError_t rc, const char *what)
{
    if (rc != cudaSuccess) {
        std::fprintf(stderr, "gpu_pairs: %s: %s\n", what, cudaGetErrorString(rc));
        std::exit(1);
    }
    return 0;
}

static void pairs(bool async, long n, size_t bytes, cudaStream_t s)
{
    for (long i = 0; i < n; i++) {
        void *p = nullptr;
        if (async) {
            check(cudaMallocAsync(&p, bytes, s), "cudaMallocAsync");
            check(cudaFreeAsync(p, s), "cudaFreeAsync");
        } else {
            check(cudaMalloc(&p, bytes), "cudaMalloc");
            check(cudaFree(p), "cudaFree");
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: gpu_pairs async|sync PAIRS [BYTES]\n");
        return 2;
    }
    bool async = std::strcmp(argv[1], "async") == 0;
    long n = std::atol(argv[2]);
    size_t bytes = argc > 3 ? (size_t)std::atol(argv[3]) : (size_t)1 << 20;
    if ((!async && std::strcmp(argv[1], "sync") != 0) || n < 1 || bytes == 0) {
        std::fprintf(stderr, "gpu_pairs: bad arguments\n");
        return 2;
    }
    cudaStream_t s;
    check(cudaFree(nullptr), "context");
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    pairs(async, async ? 1000 : 20, bytes, s);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    auto t0 = std::chrono::steady_clock::now();
    pairs(async, n, bytes, s);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    auto t1 = std::chrono::steady_clock::now();
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    std::printf("ns_per_pair=%.1f pairs=%ld bytes=%zu\n", ns / (double)n, n, bytes);
    check(cudaStreamDestroy(s), "cudaStreamDestroy");
    return 0;
}
