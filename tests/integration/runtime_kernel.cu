// runtime_kernel.cu: a CUDA program as nvcc builds it (kernels, launches,
// the runtime API), for the fake runtime's test. keep_scratch() leaks 2 MiB
// of cudaMalloc behind a kernel launch; the rest is freed.
#include <cstdio>

__global__ void fill(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 1.0f;
}

__attribute__((noinline)) float *keep_scratch(int n)
{
    float *scratch = nullptr;
    if (cudaMalloc(&scratch, 2 << 20) != cudaSuccess)
        return nullptr;
    fill<<<(n + 255) / 256, 256>>>(scratch, n);
    return scratch;
}

int main()
{
    float *kept = keep_scratch(1024);
    float *tmp = nullptr;
    cudaError_t rc = cudaMalloc(&tmp, 1 << 20);
    if (kept == nullptr || rc != cudaSuccess) {
        std::printf("runtime error: %s\n", cudaGetErrorString(rc));
        return 1;
    }
    fill<<<4, 256>>>(tmp, 1024);
    cudaDeviceSynchronize();
    cudaFree(tmp);
    std::printf("kernel program done: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
