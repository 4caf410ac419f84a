// leak.cu: a CUDA program that leaks on purpose, for scripts/gpu-check.sh.
//
// It goes through every allocation kind gpuleak reports (device, pool, vmm,
// managed, host, array), frees most of what it allocates, and leaks a known
// set from one host function, leak_on_purpose(), whose name the check looks
// for in the report's leak stacks. One allocation is made to fail (too big).
// VMM calls go through cudaGetDriverEntryPointByVersion, the door PyTorch's
// expandable segments use, so the program needs no -lcuda.
//
// It writes what it did as JSON to $LEAK_EXPECT_OUT (when set): per kind the
// allocations it made, the frees it made, what it leaked (count, bytes) and
// the failed allocations. Sizes are the sizes asked for (pitch allocations:
// pitch times height, as returned), array bytes are left out (gpuleak
// estimates them).
//
// Built by gpu-check.sh three ways: nvcc default (static cudart),
// -cudart shared, and static with --default-stream per-thread (the _ptsz
// entry points). Exit status 0 when every CUDA call behaved as expected.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        cudaError_t e_ = (call);                                                 \
        if (e_ != cudaSuccess) {                                                 \
            fprintf(stderr, "leak.cu:%d: %s -> %s\n", __LINE__, #call,          \
                    cudaGetErrorString(e_));                                     \
            exit(2);                                                             \
        }                                                                        \
    } while (0)

#define CHECK_CU(call)                                                           \
    do {                                                                         \
        CUresult r_ = (call);                                                    \
        if (r_ != CUDA_SUCCESS) {                                                \
            fprintf(stderr, "leak.cu:%d: %s -> CUresult %d\n", __LINE__, #call,  \
                    (int)r_);                                                    \
            exit(2);                                                             \
        }                                                                        \
    } while (0)

// A kind the platform may refuse (managed memory, VMM under some sandboxes):
// a failure is recorded as a failed allocation, reported, and the program
// goes on, so one refused kind does not hide every other check.
#define SOFT(call, kind, what)                                                   \
    ((call) == cudaSuccess ? 1                                                   \
                           : (fprintf(stderr, "leak.cu: WARNING: %s failed: %s; " \
                                      "counted as a failed allocation\n", what,   \
                                      cudaGetErrorString(cudaGetLastError())),   \
                              ex[kind].failed++, 0))

enum { DEVICE, POOL, VMM, MANAGED, HOST, ARRAY, NKINDS };
static const char *kind_names[NKINDS] = {"device", "pool", "vmm", "managed", "host", "array"};

struct expect {
    unsigned long long allocations, frees, failed, leaked, leaked_bytes, bytes;
};
static struct expect ex[NKINDS];

static void alloc_ok(int kind, unsigned long long bytes) {
    ex[kind].allocations++;
    ex[kind].bytes += bytes;
}
static void free_ok(int kind) { ex[kind].frees++; }
static void leak(int kind, unsigned long long bytes) {
    ex[kind].leaked++;
    ex[kind].leaked_bytes += bytes;
}

__global__ void touch(char *p, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = (char)i;
}

// The leaks, all from here, so the report's leak sites name this function.
// extern "C" keeps the symbol name plain; noinline keeps its frame.
extern "C" __attribute__((noinline)) void leak_on_purpose(cudaStream_t stream) {
    // device: 3 x 1 MiB
    for (int i = 0; i < 3; i++) {
        void *p = NULL;
        CHECK(cudaMalloc(&p, 1 << 20));
        alloc_ok(DEVICE, 1 << 20);
        leak(DEVICE, 1 << 20);
        touch<<<(1 << 20) / 256, 256, 0, stream>>>((char *)p, 1 << 20);
    }
    // pool: 1 x 256 KiB from the device's default pool
    void *q = NULL;
    CHECK(cudaMallocAsync(&q, 256 << 10, stream));
    alloc_ok(POOL, 256 << 10);
    leak(POOL, 256 << 10);
    // host (pinned): 64 KiB
    void *h = NULL;
    CHECK(cudaMallocHost(&h, 64 << 10));
    alloc_ok(HOST, 64 << 10);
    leak(HOST, 64 << 10);
    memset(h, 1, 64 << 10);
    // managed: 4 KiB (small: see the device notes on managed memory)
    void *m = NULL;
    if (SOFT(cudaMallocManaged(&m, 4096, cudaMemAttachGlobal), MANAGED, "cudaMallocManaged 4 KiB")) {
        alloc_ok(MANAGED, 4096);
        leak(MANAGED, 4096);
    }
    // array: one 2D float array
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t a = NULL;
    CHECK(cudaMallocArray(&a, &fd, 64, 64, 0));
    alloc_ok(ARRAY, 0);
    leak(ARRAY, 0);
    CHECK(cudaStreamSynchronize(stream));
}

typedef CUresult (*pfn_cuMemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *,
                                                      CUmemAllocationGranularity_flags);
typedef CUresult (*pfn_cuMemCreate)(CUmemGenericAllocationHandle *, size_t,
                                    const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*pfn_cuMemRelease)(CUmemGenericAllocationHandle);
typedef CUresult (*pfn_cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                            unsigned long long);
typedef CUresult (*pfn_cuMemAddressFree)(CUdeviceptr, size_t);
typedef CUresult (*pfn_cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                 unsigned long long);
typedef CUresult (*pfn_cuMemUnmap)(CUdeviceptr, size_t);
typedef CUresult (*pfn_cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);

static void *entry(const char *name) {
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !fn) {
        fprintf(stderr, "leak.cu: no driver entry point %s\n", name);
        exit(2);
    }
    return fn;
}

static unsigned long long vmm_maps, vmm_unmaps;

// Two VMM allocations, one map each, both unmapped and released: nothing
// leaks here.
static void vmm_cycle(int dev) {
    pfn_cuMemGetAllocationGranularity gran =
        (pfn_cuMemGetAllocationGranularity)entry("cuMemGetAllocationGranularity");
    pfn_cuMemCreate create = (pfn_cuMemCreate)entry("cuMemCreate");
    pfn_cuMemRelease release = (pfn_cuMemRelease)entry("cuMemRelease");
    pfn_cuMemAddressReserve reserve = (pfn_cuMemAddressReserve)entry("cuMemAddressReserve");
    pfn_cuMemAddressFree addrfree = (pfn_cuMemAddressFree)entry("cuMemAddressFree");
    pfn_cuMemMap map = (pfn_cuMemMap)entry("cuMemMap");
    pfn_cuMemUnmap unmap = (pfn_cuMemUnmap)entry("cuMemUnmap");
    pfn_cuMemSetAccess setaccess = (pfn_cuMemSetAccess)entry("cuMemSetAccess");

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t g = 0;
    CUresult r = gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "leak.cu: WARNING: cuMemGetAllocationGranularity -> %d: no VMM part\n", (int)r);
        return;
    }
    size_t size = 2 * g;
    CUdeviceptr va = 0;
    r = reserve(&va, 2 * size, 0, 0, 0);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "leak.cu: WARNING: cuMemAddressReserve -> %d: no VMM part\n", (int)r);
        return;
    }
    CUmemGenericAllocationHandle hnd[2];
    for (int i = 0; i < 2; i++) {
        r = create(&hnd[i], size, &prop, 0);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "leak.cu: WARNING: cuMemCreate -> %d: counted as a failed allocation, "
                            "VMM part stops\n", (int)r);
            ex[VMM].failed++;
            for (int j = 0; j < i; j++) {
                CHECK_CU(unmap(va + j * size, size));
                vmm_unmaps++;
                CHECK_CU(release(hnd[j]));
                free_ok(VMM);
            }
            CHECK_CU(addrfree(va, 2 * size));
            return;
        }
        alloc_ok(VMM, size);
        CHECK_CU(map(va + i * size, size, 0, hnd[i], 0));
        vmm_maps++;
    }
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(setaccess(va, 2 * size, &acc, 1));
    touch<<<(unsigned)((2 * size + 255) / 256), 256>>>((char *)va, 2 * size);
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < 2; i++) {
        CHECK_CU(unmap(va + i * size, size));
        vmm_unmaps++;
        CHECK_CU(release(hnd[i]));
        free_ok(VMM);
    }
    CHECK_CU(addrfree(va, 2 * size));
}

static void write_expect(const char *path, const char *variant) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    unsigned long long la = 0, lb = 0, lbna = 0;
    fprintf(f, "{\n  \"format\": \"leak-expect\",\n  \"variant\": \"%s\",\n  \"kinds\": {\n",
            variant);
    for (int k = 0; k < NKINDS; k++) {
        fprintf(f,
                "    \"%s\": {\"allocations\": %llu, \"frees\": %llu, \"failed_allocations\": %llu, "
                "\"leaked_allocations\": %llu, \"leaked_bytes\": %llu, \"bytes_allocated\": %llu}%s\n",
                kind_names[k], ex[k].allocations, ex[k].frees, ex[k].failed, ex[k].leaked,
                ex[k].leaked_bytes, ex[k].bytes, k + 1 < NKINDS ? "," : "");
        la += ex[k].leaked;
        lb += ex[k].leaked_bytes;
        if (k != ARRAY) lbna += ex[k].leaked_bytes;
    }
    fprintf(f,
            "  },\n  \"totals\": {\"leaked_allocations\": %llu, \"leaked_bytes_without_arrays\": %llu, "
            "\"maps\": %llu, \"unmaps\": %llu},\n",
            la, lbna, vmm_maps, vmm_unmaps);
    fprintf(f, "  \"leak_function\": \"leak_on_purpose\"\n}\n");
    fclose(f);
    (void)lb;
}

int main(int argc, char **argv) {
    const char *variant = argc > 1 ? argv[1] : "unnamed";
    int dev = 0;
    CHECK(cudaSetDevice(dev));
    CHECK(cudaFree(0));  // creates the context; a NULL free reaches the driver or not, both sides see the same
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // device: 10 allocations, all freed
    void *d[10];
    for (int i = 0; i < 10; i++) {
        size_t n = (size_t)(i + 1) * 4096;
        CHECK(cudaMalloc(&d[i], n));
        alloc_ok(DEVICE, n);
    }
    for (int i = 0; i < 10; i++) {
        CHECK(cudaFree(d[i]));
        free_ok(DEVICE);
    }
    // device, pitched: allocated and freed
    void *pp = NULL;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&pp, &pitch, 1000, 17));
    alloc_ok(DEVICE, (unsigned long long)pitch * 17);
    CHECK(cudaFree(pp));
    free_ok(DEVICE);
    // device: one that fails (1 PiB)
    void *big = NULL;
    cudaError_t e = cudaMalloc(&big, (size_t)1 << 50);
    if (e == cudaSuccess) {
        fprintf(stderr, "leak.cu: a 1 PiB cudaMalloc succeeded?\n");
        return 2;
    }
    (void)cudaGetLastError();
    ex[DEVICE].failed++;

    // pool: 8 stream-ordered allocations on two streams (the legacy default
    // stream and s), all freed stream-ordered
    void *a[8];
    for (int i = 0; i < 8; i++) {
        cudaStream_t st = (i & 1) ? s : 0;
        CHECK(cudaMallocAsync(&a[i], (size_t)(i + 1) * 8192, st));
        alloc_ok(POOL, (unsigned long long)(i + 1) * 8192);
        touch<<<(i + 1) * 32, 256, 0, st>>>((char *)a[i], (size_t)(i + 1) * 8192);
        CHECK(cudaFreeAsync(a[i], st));
        free_ok(POOL);
    }
    // pool: from an explicit pool (cuMemAllocFromPoolAsync), freed
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    for (int i = 0; i < 3; i++) {
        void *p = NULL;
        CHECK(cudaMallocFromPoolAsync(&p, 65536, pool, s));
        alloc_ok(POOL, 65536);
        CHECK(cudaFreeAsync(p, s));
        free_ok(POOL);
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemPoolDestroy(pool));

    // host: cudaHostAlloc (cuMemHostAlloc) and cudaMallocHost, freed
    void *h1 = NULL, *h2 = NULL;
    CHECK(cudaHostAlloc(&h1, 8192, cudaHostAllocPortable));
    alloc_ok(HOST, 8192);
    CHECK(cudaMallocHost(&h2, 12288));
    alloc_ok(HOST, 12288);
    CHECK(cudaFreeHost(h1));
    free_ok(HOST);
    CHECK(cudaFreeHost(h2));
    free_ok(HOST);

    // managed: two, one freed here
    void *m = NULL;
    if (SOFT(cudaMallocManaged(&m, 8192, cudaMemAttachGlobal), MANAGED, "cudaMallocManaged 8 KiB")) {
        alloc_ok(MANAGED, 8192);
        CHECK(cudaFree(m));
        free_ok(MANAGED);
    }

    // arrays: a 2D array and a 3D array, both destroyed
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t arr2 = NULL, arr3 = NULL;
    CHECK(cudaMallocArray(&arr2, &fd, 128, 32, 0));
    alloc_ok(ARRAY, 0);
    CHECK(cudaMalloc3DArray(&arr3, &fd, make_cudaExtent(16, 16, 16), 0));
    alloc_ok(ARRAY, 0);
    CHECK(cudaFreeArray(arr2));
    free_ok(ARRAY);
    CHECK(cudaFreeArray(arr3));
    free_ok(ARRAY);

    // vmm: through the driver entry points
    vmm_cycle(dev);

    leak_on_purpose(s);

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaStreamDestroy(s));

    const char *out = getenv("LEAK_EXPECT_OUT");
    if (out && *out) write_expect(out, variant);
    printf("leak.cu (%s): done; leaked on purpose: device 3 x 1 MiB, pool 256 KiB, host 64 KiB, "
           "managed 4 KiB, 1 array\n", variant);
    // No cudaDeviceReset: the leaks must still be live when the process exits.
    return 0;
}
