/* Unit tests for origin.c: the origin frame and the owner of synthetic
 * stacks shaped like the real ones (a plain C program, nvcc's static cudart,
 * PyTorch, NCCL, cuBLAS), the variables that change the rules, the rules an
 * interpreter's own layout gives (pylayout.c), the doc that lists them, and
 * the cost at 100k sites of 64 frames. */
#define _GNU_SOURCE
#include "suite.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "origin.h"
#include "pylayout.h"
#include "stacks.h"
#include "symbolize.h"
#include "tracker.h"

#define SHIM "/opt/gpuleak/build/libgpuleak.so"
#define LIBCUDA "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define SITE "/venv/lib/python3.11/site-packages"
#define TORCHLIB SITE "/torch/lib"

/* Native and Python frames, terse. */
#define NAT(mod, fn) { (fn), NULL, (mod), 0, 0 }
#define NATL(mod, fn, file, line) { (fn), (file), (mod), (line), 0 }
#define PY(fn, file, line) { (fn), (file), NULL, (line), 1 }
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The variables as the shim reads them when tracking starts, then the
 * rules as a report takes them. */
static void reload(void)
{
    config_load();
    origin_init();
}

/* Starts a test from the documented defaults. */
static void defaults(void)
{
    unsetenv("GPULEAK_ORIGIN_SKIP");
    unsetenv("GPULEAK_ORIGIN_RULES");
    reload();
}

/* A C program linked with -lcuda: the shim and the driver are skipped, the
 * user's function in the binary is the origin, the memory is the user's. */
START_TEST(test_plain_c)
{
    defaults();
    const origin_frame_t frames[] = {
        NAT(SHIM, "cuMemAlloc_v2"),
        NAT(LIBCUDA, NULL),
        NATL("/home/u/app/leaky", "alloc_buffer", "/home/u/app/leaky.c", 10),
        NATL("/home/u/app/leaky", "main", "/home/u/app/leaky.c", 30),
        NAT(LIBC, "__libc_start_call_main"),
        NAT(LIBC, "__libc_start_main"),
        NAT("/home/u/app/leaky", "_start"),
    };
    ck_assert_int_eq(origin_find(frames, COUNT(frames)), 2);
    ck_assert_str_eq(origin_owner(frames, COUNT(frames), REPORT_KIND_device), "user");
    ck_assert_str_eq(origin_owner(frames, COUNT(frames), REPORT_KIND_host), "user");
    /* Without the user's frames, nothing is left. */
    const origin_frame_t tail[] = { frames[0], frames[1], frames[4], frames[5], frames[6] };
    ck_assert_int_eq(origin_find(tail, COUNT(tail)), -1);
    ck_assert_str_eq(origin_owner(tail, COUNT(tail), REPORT_KIND_device), "cuda-runtime");
    origin_end();
}
END_TEST

/* nvcc's static cudart: runtime code inside the user's own binary is told
 * apart by its function names, not its module. A user function whose name
 * merely starts with "cuda" in lower case stays the user's. */
/* cudart's own frames (and the driver's under them) fold under the runtime
 * call they serve, static or shared; nothing folds without that call. */
START_TEST(test_cudart_folded)
{
    const char *bin = "/home/u/cu/leak", *rt = "/usr/local/cuda/lib64/libcudart.so.13";
    const origin_frame_t fat[] = {
        NAT(LIBCUDA, "cuMemAlloc_v2"),
        NAT(bin, "libcudart_static_4d8b33a106dceb3c07a56e26de61f545ab8e4b0d"),
        NAT(bin, "__cudart803"),
        NAT(bin, "cudart::driverHelper::mallocPtr(unsigned long, void**)"),
        NAT(bin, "cudart::cudaApiMalloc(void**, unsigned long)"),
        NAT(bin, "cudaMalloc"),
        NATL(bin, "cudaError cudaMalloc<float>(float**, unsigned long)",
             "/usr/local/cuda/include/cuda_runtime.h", 585),
        NATL(bin, "main", "/home/u/cu/leak.cu", 40),
    };
    /* Up to cuda_runtime.h's template, the call as the user wrote it. */
    ck_assert_int_eq(origin_cudart_folded(fat, COUNT(fat)), 6);
    const origin_frame_t shared[] = { NAT(rt, NULL), NAT(rt, NULL), NAT(rt, "cudaMallocAsync"), NAT(bin, "main") };
    ck_assert_int_eq(origin_cudart_folded(shared, COUNT(shared)), 2);
    const origin_frame_t no_call[] = { NAT(rt, NULL), NAT(bin, "main") };
    ck_assert_int_eq(origin_cudart_folded(no_call, COUNT(no_call)), 0);
    const origin_frame_t at_call[] = { NAT(rt, "cudaMalloc"), NAT(bin, "main") };
    ck_assert_int_eq(origin_cudart_folded(at_call, COUNT(at_call)), 0);
    /* The runtime's entry with no frame inside it, under the header's
     * overload and template, symbolized with and without lines. */
    const origin_frame_t wrapped[] = {
        NAT(rt, "cudaHostAlloc"),
        NAT(bin, "cudaMallocHost(void**, unsigned long, unsigned int)"),
        NATL(bin, "cudaError cudaMallocHost<float>(float**, unsigned long, unsigned int)",
             "/usr/local/cuda/include/cuda_runtime.h", 901),
        NATL(bin, "main", "/home/u/cu/leak.cu", 40),
    };
    ck_assert_int_eq(origin_cudart_folded(wrapped, COUNT(wrapped)), 2);
    /* A C function of the user's named like an entry is no wrapper. */
    const origin_frame_t own[] = { NAT(rt, "cudaMalloc"), NAT(bin, "cudaMallocTraced"), NAT(bin, "main") };
    ck_assert_int_eq(origin_cudart_folded(own, COUNT(own)), 0);
    const origin_frame_t all_inside[] = { NAT(rt, NULL), NAT(rt, NULL) };
    ck_assert_int_eq(origin_cudart_folded(all_inside, COUNT(all_inside)), 0);
    const origin_frame_t python[] = { PY("step", "t.py", 3), NAT(rt, "cudaMalloc") };
    ck_assert_int_eq(origin_cudart_folded(python, COUNT(python)), 0);
    ck_assert_int_eq(origin_cudart_folded(NULL, 0), 0);
}
END_TEST

START_TEST(test_static_cudart)
{
    defaults();
    const char *bin = "/home/u/cu/leak";
    const origin_frame_t frames[] = {
        NAT(LIBCUDA, "cuMemAlloc_v2"),
        NAT(bin, "libcudart_static_4d8b33a106dceb3c07a56e26de61f545ab8e4b0d"),
        NAT(bin, "__cudart803"),
        NAT(bin, "cudart::driverHelper::mallocPtr(unsigned long, void**)"),
        NAT(bin, "cudart::cudaApiMalloc(void**, unsigned long)"),
        NAT(bin, "cudaMalloc"),
        NATL(bin, "cudaError cudaMalloc<float>(float**, unsigned long)",
             "/usr/local/cuda/include/cuda_runtime.h", 585),
        NATL(bin, "cuda_helper_alloc(unsigned long)", "/home/u/cu/leak.cu", 12),
        NATL(bin, "main", "/home/u/cu/leak.cu", 40),
    };
    ck_assert_int_eq(origin_find(frames, COUNT(frames)), 7);
    ck_assert_str_eq(origin_owner(frames, COUNT(frames), REPORT_KIND_device), "user");
    /* The runtime's own allocation, before main (a constructor). */
    const origin_frame_t init[] = {
        frames[0], frames[1], frames[2],
        NAT(bin, "__cudaRegisterFatBinary"),
        NAT(LIBC, "__libc_start_main"),
        NAT(bin, "_start"),
    };
    ck_assert_int_eq(origin_find(init, COUNT(init)), -1);
    ck_assert_str_eq(origin_owner(init, COUNT(init), REPORT_KIND_device), "cuda-runtime");
    origin_end();
}
END_TEST

/* The native frames of a PyTorch allocation, innermost first. */
static const origin_frame_t torch_native[] = {
    NAT(LIBCUDA, "cuMemAlloc_v2"),
    NAT(SITE "/nvidia/cuda_runtime/lib/libcudart.so.12", "cudaMalloc"),
    NAT(TORCHLIB "/libc10_cuda.so",
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc("
        "signed char, unsigned long, CUstream_st*)"),
    NAT(TORCHLIB "/libc10_cuda.so",
        "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"),
    NAT(TORCHLIB "/libtorch_cuda.so", "at::native::empty_cuda(c10::ArrayRef<long>, "
        "std::optional<c10::ScalarType>, std::optional<c10::Device>)"),
    NAT(TORCHLIB "/libtorch_cpu.so", "at::_ops::empty_memory_format::call(...)"),
    NAT(TORCHLIB "/libtorch_python.so", "torch::autograd::THPVariable_randn(_object*, _object*)"),
    NAT(SITE "/torch/_C.cpython-311-x86_64-linux-gnu.so", NULL),
    NAT("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "_PyEval_EvalFrameDefault"),
    NAT("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "PyEval_EvalCode"),
    NAT("/usr/bin/python3.11", "main"),
    NAT(LIBC, "__libc_start_main"),
    NAT("/usr/bin/python3.11", "_start"),
};

/* Copies python[0..np) then torch_native (with frame 2 and 3 replaced when
 * allocator is not NULL) into out; returns the count. */
static int torch_stack(origin_frame_t *out, const origin_frame_t *python, int np,
                       const char *allocator)
{
    int n = 0;
    for (int i = 0; i < np; i++)
        out[n++] = python[i];
    for (int i = 0; i < COUNT(torch_native); i++) {
        out[n] = torch_native[i];
        if (allocator != NULL && (i == 2 || i == 3))
            out[n].function = allocator;
        n++;
    }
    return n;
}

/* JAX's and CuPy's pools own the blocks their allocators take from the
 * driver: XLA's in the CUDA plugin (or jaxlib), CuPy's in its memory
 * module; the user's line is still the origin. */
START_TEST(test_framework_pools)
{
    defaults();
    /* As a site lists them: the Python frames, then the native ones. */
    const origin_frame_t xla[] = {
        PY("_execute", SITE "/jax/_src/interpreters/pxla.py", 1300),
        PY("step", "/home/u/proj/train.py", 12),
        NAT(LIBCUDA, "cuMemCreate"),
        NAT(SITE "/jax_plugins/xla_cuda13/xla_cuda_plugin.so",
            "stream_executor::gpu::GpuDriver::CreateMemoryHandle"),
        NAT(SITE "/jaxlib/_jax.so", NULL),
    };
    ck_assert_str_eq(origin_owner(xla, COUNT(xla), REPORT_KIND_vmm), "xla-pool");
    ck_assert_str_eq(origin_owner(xla, COUNT(xla), REPORT_KIND_device), "xla-pool");
    ck_assert_str_eq(origin_owner(xla, COUNT(xla), REPORT_KIND_host), "user");
    ck_assert_str_eq(xla[origin_find(xla, COUNT(xla))].file, "/home/u/proj/train.py");
    const origin_frame_t cupy[] = {
        PY("filter_step", "/home/u/proj/denoise.py", 30),
        NAT(LIBCUDA, "cuMemAlloc_v2"),
        NAT(SITE "/cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so", NULL),
        NAT(SITE "/cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so", NULL),
    };
    ck_assert_str_eq(origin_owner(cupy, COUNT(cupy), REPORT_KIND_device), "cupy-pool");
    int o = origin_find(cupy, COUNT(cupy));
    ck_assert_str_eq(cupy[o].file, "/home/u/proj/denoise.py");
    origin_end();
}
END_TEST

/* PyTorch: the user's Python line wins over torch's Python files, the
 * standard library and every native frame; the caching allocator owns
 * device memory, the cudaMallocAsync backend owns pool memory. */
START_TEST(test_pytorch)
{
    defaults();
    const origin_frame_t python[] = {
        PY("Linear.forward", SITE "/torch/nn/modules/linear.py", 125),
        PY("Module._call_impl", SITE "/torch/nn/modules/module.py", 1747),
        PY("Module._wrapped_call_impl", SITE "/torch/nn/modules/module.py", 1736),
        PY("train_step", "/home/u/proj/train.py", 42),
        PY("main", "/home/u/proj/train.py", 60),
        PY("_run_code", "<frozen runpy>", 88),
    };
    origin_frame_t frames[64];
    int n = torch_stack(frames, python, COUNT(python), NULL);
    int o = origin_find(frames, n);
    ck_assert_int_eq(o, 3);
    ck_assert_str_eq(frames[o].file, "/home/u/proj/train.py");
    ck_assert_int_eq(frames[o].line, 42);
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_device), "pytorch-caching-allocator");
    /* Expandable segments map physical memory from the same allocator. */
    n = torch_stack(frames, python, COUNT(python),
                    "c10::cuda::CUDACachingAllocator::Native::ExpandableSegment::map("
                    "c10::cuda::CUDACachingAllocator::Native::SegmentRange)");
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_vmm), "pytorch-caching-allocator");
    /* The cudaMallocAsync backend: by name, whatever the kind... */
    n = torch_stack(frames, python, COUNT(python),
                    "c10::cuda::CUDACachingAllocator::CudaMallocAsync::mallocAsync("
                    "void**, signed char, unsigned long, CUstream_st*)");
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_pool), "pytorch-tensor");
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_device), "pytorch-tensor");
    ck_assert_int_eq(origin_find(frames, n), 3);
    /* ...or pool memory from libc10_cuda without names. */
    n = torch_stack(frames, python, COUNT(python), NULL);
    frames[COUNT(python) + 2].function = NULL;
    frames[COUNT(python) + 3].function = NULL;
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_pool), "pytorch-tensor");
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_device), "pytorch-caching-allocator");
    /* Pinned host memory is not the device caching allocator's. */
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_host), "user");
    origin_end();
}
END_TEST

/* The brief's literal stack (the user's frame innermost), the standard
 * library as plumbing, other packages as the user's, and a stack with no
 * user Python frame at all. */
START_TEST(test_pytorch_python_rules)
{
    defaults();
    origin_frame_t frames[64];
    const origin_frame_t first[] = {
        PY("train_step", "train.py", 42),
        PY("Module._call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 1747),
    };
    int n = torch_stack(frames, first, COUNT(first), NULL);
    ck_assert_int_eq(origin_find(frames, n), 0);

    const origin_frame_t threaded[] = {
        PY("_lazy_init", SITE "/torch/cuda/__init__.py", 300),
        PY("inner", "/usr/lib/python3.11/contextlib.py", 81),
        PY("wrapper", "/opt/conda/lib/python3.11/functools.py", 20),
        PY("worker", "/srv/job/loader.py", 17),
        PY("Thread.run", "/usr/lib/python3.11/threading.py", 982),
        PY("Thread._bootstrap_inner", "/usr/lib/python3.11/threading.py", 1045),
    };
    n = torch_stack(frames, threaded, COUNT(threaded), NULL);
    ck_assert_int_eq(origin_find(frames, n), 3);

    /* A package in site-packages other than torch is a library: the
     * user's line is the origin, the innermost library frame its via. */
    const origin_frame_t hf[] = {
        PY("Module._call_impl", SITE "/torch/nn/modules/module.py", 1747),
        PY("LlamaMLP.forward", SITE "/transformers/models/llama/modeling_llama.py", 310),
        PY("LlamaModel.forward", SITE "/transformers/models/llama/modeling_llama.py", 580),
        PY("train_step", "/home/u/proj/train.py", 42),
        PY("Trainer.fit", "/usr/lib/python3/dist-packages/lightning/trainer.py", 9),
    };
    n = torch_stack(frames, hf, COUNT(hf), NULL);
    ck_assert_int_eq(origin_find(frames, n), 3);
    ck_assert_int_eq(origin_find_via(frames, 3), 1);
    ck_assert_int_eq(origin_find_via(frames, 1), -1);  /* torch is plumbing, not a via */
    /* With no user frame at all, a library is still not the origin. */
    ck_assert_int_eq(origin_find(frames, 3), -1);

    /* A torch source checkout counts as torch. */
    const origin_frame_t checkout[] = {
        PY("empty_cache", "/home/u/src/pytorch/torch/cuda/memory.py", 192),
        PY("go", "/home/u/src/mine/go.py", 3),
    };
    n = torch_stack(frames, checkout, COUNT(checkout), NULL);
    ck_assert_int_eq(origin_find(frames, n), 1);

    /* torch.compile: Inductor's generated call() allocates the compiled
     * graph's buffers, under the user's forward (Dynamo keeps its file)
     * and the line that called the model; an FX GraphModule's forward is
     * generated too. */
    const origin_frame_t compiled[] = {
        PY("call", "/tmp/torchinductor_u/ab/cab3xyz.py", 118),
        PY("CompiledFxGraph.__call__", SITE "/torch/_inductor/output_code.py", 460),
        PY("forward", "<eval_with_key>.4", 12),
        PY("Net.forward", "/home/u/proj/model.py", 30),
        PY("train_step", "/home/u/proj/train.py", 42),
    };
    n = torch_stack(frames, compiled, COUNT(compiled), NULL);
    ck_assert_int_eq(origin_find(frames, n), 3);

    /* Python names are not native names: a class called PyThing is the user's. */
    const origin_frame_t pyname[] = { PY("PyThing.cudaMalloc", "/home/u/proj/thing.py", 5) };
    n = torch_stack(frames, pyname, COUNT(pyname), NULL);
    ck_assert_int_eq(origin_find(frames, n), 0);

    /* Only torch and the standard library: every frame is plumbing. */
    const origin_frame_t none[] = {
        PY("_lazy_init", SITE "/torch/cuda/__init__.py", 300),
        PY("Thread.run", "/usr/lib/python3.11/threading.py", 982),
    };
    n = torch_stack(frames, none, COUNT(none), NULL);
    ck_assert_int_eq(origin_find(frames, n), -1);
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_device), "pytorch-caching-allocator");
    /* And a user's C++ extension under a user script: its frame comes
     * after the Python ones, so the script still wins. */
    origin_frame_t ext[64];
    const origin_frame_t script[] = { PY("run", "/home/u/proj/run.py", 9) };
    n = 0;
    ext[n++] = script[0];
    ext[n++] = (origin_frame_t)NAT(LIBCUDA, NULL);
    ext[n++] = (origin_frame_t)NAT(SITE "/nvidia/cuda_runtime/lib/libcudart.so.12", "cudaMalloc");
    ext[n++] = (origin_frame_t)NATL(SITE "/myext/_ext.cpython-311-x86_64-linux-gnu.so",
                                    "myext::grow(unsigned long)", "/src/myext/grow.cu", 21);
    ext[n++] = (origin_frame_t)NAT(SITE "/myext/_ext.cpython-311-x86_64-linux-gnu.so",
                                   "pybind11::cpp_function::dispatcher(_object*, _object*, _object*)");
    ck_assert_int_eq(origin_find(ext, n), 0);
    ck_assert_int_eq(origin_find(ext + 1, n - 1), 2);
    ck_assert_str_eq(origin_owner(ext, n, REPORT_KIND_device), "user");
    origin_end();
}
END_TEST

/* NCCL under a user script (through PyTorch's process group) and under a
 * C program: NCCL owns the memory, the user's line is the origin. */
START_TEST(test_nccl)
{
    defaults();
    const char *nccl = SITE "/nvidia/nccl/lib/libnccl.so.2";
    const origin_frame_t frames[] = {
        PY("ProcessGroupNCCL._allreduce", SITE "/torch/distributed/distributed_c10d.py", 2501),
        PY("all_reduce", SITE "/torch/distributed/c10d_logger.py", 83),
        PY("sync_grads", "/home/u/proj/ddp.py", 17),
        NAT(LIBCUDA, "cuMemCreate"),
        NAT(nccl, NULL),
        NAT(nccl, "ncclCommInitRankConfig"),
        NAT(TORCHLIB "/libtorch_cuda.so", "c10d::ProcessGroupNCCL::getNCCLComm(...)"),
        NAT(TORCHLIB "/libtorch_python.so", NULL),
        NAT("/usr/bin/python3.11", "_PyEval_EvalFrameDefault"),
    };
    ck_assert_int_eq(origin_find(frames, COUNT(frames)), 2);
    ck_assert_str_eq(origin_owner(frames, COUNT(frames), REPORT_KIND_vmm), "nccl");
    ck_assert_str_eq(origin_owner(frames, COUNT(frames), REPORT_KIND_device), "nccl");

    const origin_frame_t c[] = {
        NAT(LIBCUDA, NULL),
        NAT("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", NULL),
        NAT("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "ncclCommInitRank"),
        NATL("/home/u/allreduce", "init_comms", "/home/u/allreduce.c", 33),
        NATL("/home/u/allreduce", "main", "/home/u/allreduce.c", 80),
    };
    ck_assert_int_eq(origin_find(c, COUNT(c)), 3);
    ck_assert_str_eq(origin_owner(c, COUNT(c), REPORT_KIND_device), "nccl");
    /* NCCL linked statically into the user's binary, found by name. */
    const origin_frame_t s[] = {
        NAT(LIBCUDA, NULL),
        NAT("/home/u/allreduce", "ncclResult_t ncclCudaCalloc<char>(char**, unsigned long)"),
        NAT("/home/u/allreduce", "init_comms"),
    };
    ck_assert_int_eq(origin_find(s, COUNT(s)), 2);
    ck_assert_str_eq(origin_owner(s, COUNT(s), REPORT_KIND_device), "nccl");
    origin_end();
}
END_TEST

/* cuBLAS's own workspace (cuBLAS carries a static cudart, so runtime names
 * appear inside libcublas): owner cublas. cuDNN likewise. PyTorch's cuBLAS
 * workspace comes from the caching allocator, and says so. */
START_TEST(test_cublas_cudnn)
{
    defaults();
    const origin_frame_t frames[] = {
        NAT(LIBCUDA, "cuMemAlloc_v2"),
        NAT("/usr/local/cuda/lib64/libcublasLt.so.12", "cudaMalloc"),
        NAT("/usr/local/cuda/lib64/libcublasLt.so.12", NULL),
        NAT("/usr/local/cuda/lib64/libcublas.so.12", "cublasCreate_v2"),
        NATL("/home/u/gemm", "setup_blas(int)", "/home/u/gemm.cu", 14),
        NATL("/home/u/gemm", "main", "/home/u/gemm.cu", 50),
    };
    ck_assert_int_eq(origin_find(frames, COUNT(frames)), 4);
    ck_assert_str_eq(origin_owner(frames, COUNT(frames), REPORT_KIND_device), "cublas");

    const origin_frame_t dnn[] = {
        NAT(LIBCUDA, NULL),
        NAT(SITE "/nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9", NULL),
        NAT(SITE "/nvidia/cudnn/lib/libcudnn.so.9", "cudnnCreate"),
        NAT("/home/u/conv", "make_handle"),
    };
    ck_assert_int_eq(origin_find(dnn, COUNT(dnn)), 3);
    ck_assert_str_eq(origin_owner(dnn, COUNT(dnn), REPORT_KIND_device), "cudnn");

    origin_frame_t torch[64];
    const origin_frame_t py[] = { PY("forward", "/home/u/proj/model.py", 7) };
    int n = torch_stack(torch, py, COUNT(py), NULL);
    torch[n - 9].function = "at::cuda::getCUDABlasLtWorkspace()";
    ck_assert_str_eq(origin_owner(torch, n, REPORT_KIND_device), "pytorch-caching-allocator");
    /* PyTorch's cuBLAS workspace: a tensor whose stack passes through the
     * handle pool (the caching allocator innermost) is cuBLAS's, kept for
     * the process; any other tensor is PyTorch's, for the program. */
    ck_assert_str_eq(origin_owner(torch, n, REPORT_KIND_tensor), "cublas");
    torch[n - 9].function = "at::cuda::getCurrentCUDABlasHandle()";
    ck_assert_str_eq(origin_owner(torch, n, REPORT_KIND_tensor), "cublas");
    ck_assert_int_eq(origin_find(torch, n), 0);
    torch[n - 9].function = "at::native::addmm_out_cuda_impl(...)";
    ck_assert_str_eq(origin_owner(torch, n, REPORT_KIND_tensor), "pytorch-tensor");
    ck_assert(origin_owner_keeps("cublas"));
    ck_assert(origin_owner_keeps("cudnn"));
    ck_assert(origin_owner_keeps("nccl"));
    ck_assert(!origin_owner_keeps("pytorch-tensor"));
    ck_assert(!origin_owner_keeps("pytorch-caching-allocator"));
    ck_assert(!origin_owner_keeps("user"));
    ck_assert(!origin_owner_keeps("cuda-runtime"));
    ck_assert(!origin_owner_keeps(NULL));
    origin_end();
}
END_TEST

/* PyTorch's pinned host cache, with the stack a real `.item()` had on the
 * H100 (torch 2.11): the block is PyTorch's, kept for the process, not the
 * script line's leak; pinned memory the program asks for itself stays its. */
START_TEST(test_pinned_host_cache)
{
    defaults();
    const origin_frame_t item[] = {
        NAT("/usr/local/cuda/lib64/libcudart.so.13", NULL),
        NAT("/usr/local/cuda/lib64/libcudart.so.13", "cudaHostAlloc"),
        NAT(SITE "/torch/lib/libtorch_cuda.so",
            "at::cuda::(anonymous namespace)::CUDACachingHostAllocatorImpl::allocate_host_memory_slowpath("
            "unsigned long, void**)"),
        NAT(SITE "/torch/lib/libtorch_cuda.so", "at::CachingHostAllocatorImpl<c10::cuda::CUDAStream>::allocate("
            "unsigned long)"),
        NAT(SITE "/torch/lib/libtorch_cpu.so", "at::detail::empty_cpu(...)"),
        NAT(SITE "/torch/lib/libtorch_cuda.so", "at::native::_local_scalar_dense_cuda(at::Tensor const&)"),
        PY("<module>", "/home/u/train.py", 27),
    };
    ck_assert_str_eq(origin_owner(item, COUNT(item), REPORT_KIND_host), "pytorch-host-cache");
    ck_assert(origin_owner_keeps("pytorch-host-cache"));
    const origin_frame_t own[] = {
        NAT(LIBCUDA, "cuMemHostAlloc"),
        NAT("/usr/local/cuda/lib64/libcudart.so.13", "cudaHostAlloc"),
        NATL("/home/u/stage", "make_staging(unsigned long)", "/home/u/stage.cu", 9),
    };
    ck_assert_str_ne(origin_owner(own, COUNT(own), REPORT_KIND_host), "pytorch-host-cache");
    origin_end();
}
END_TEST

/* Frames with nothing known, and empty stacks. */
START_TEST(test_edges)
{
    defaults();
    const origin_frame_t unknown[] = { NAT(LIBCUDA, NULL), NAT("?", NULL), { NULL, NULL, NULL, 0, 0 } };
    ck_assert_int_eq(origin_find(unknown, COUNT(unknown)), 1);
    ck_assert_int_eq(origin_find(unknown, 0), -1);
    ck_assert_str_eq(origin_owner(unknown, 0, REPORT_KIND_device), "unknown");
    ck_assert_str_eq(origin_owner(unknown, 1, REPORT_KIND_device), "cuda-runtime");
    ck_assert_str_eq(origin_owner(unknown, COUNT(unknown), -1), "user");
    ck_assert_str_eq(origin_owner(unknown, COUNT(unknown), 99), "user");
    origin_end();
    /* Without origin_init, the defaults apply. */
    ck_assert_int_eq(origin_find(unknown, COUNT(unknown)), 1);
    origin_end();
    origin_end();
}
END_TEST

/* Runs origin_init with stderr captured into buf. */
static void capturing(void (*run)(void), char *buf, size_t size)
{
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    run();
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(pipefd[1]);
    ssize_t n = read(pipefd[0], buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(pipefd[0]);
}

/* GPULEAK_ORIGIN_SKIP adds globs on module, function and file of native and
 * Python frames, before the built-in table ('!' keeps); GPULEAK_ORIGIN_RULES=none
 * drops the table; an invalid value is named on stderr and the default kept;
 * a new origin_init forgets what the old rules decided. */
START_TEST(test_overrides)
{
    char err[512];
    const origin_frame_t frames[] = {
        NAT(SHIM, "cuMemAlloc_v2"),
        NAT(LIBCUDA, NULL),
        NAT("/opt/mylib/lib/libpool.so", "pool_grow"),
        NATL("/home/u/app/bin", "my_alloc_wrapper", "/home/u/app/alloc.c", 5),
        NATL("/home/u/app/bin", "load_model", "/home/u/app/model.c", 77),
    };
    const int n = COUNT(frames);
    defaults();
    ck_assert_int_eq(origin_find(frames, n), 2);

    setenv("GPULEAK_ORIGIN_SKIP", "*/mylib/*:my_alloc_wrapper", 1);
    capturing(reload, err, sizeof err);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(origin_find(frames, n), 4);
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_device), "user");

    /* Empty entries are ignored; a glob on files reaches Python frames. */
    setenv("GPULEAK_ORIGIN_SKIP", "::*/proj/helpers.py::", 1);
    reload();
    const origin_frame_t py[] = {
        PY("alloc", "/home/u/proj/helpers.py", 3),
        PY("step", "/home/u/proj/train.py", 42),
    };
    ck_assert_int_eq(origin_find(py, COUNT(py)), 1);
    ck_assert_int_eq(origin_find(frames, n), 2);

    /* '!' keeps what the built-in table skips. */
    setenv("GPULEAK_ORIGIN_SKIP", "!*/libnccl*", 1);
    reload();
    const origin_frame_t nccl[] = {
        NAT(LIBCUDA, NULL),
        NAT("/usr/lib/libnccl.so.2", "ncclCommInitRank"),
        NAT("/home/u/a", "main"),
    };
    ck_assert_int_eq(origin_find(nccl, COUNT(nccl)), 1);
    ck_assert_str_eq(origin_owner(nccl, COUNT(nccl), REPORT_KIND_device), "nccl");

    /* No built-in table: the innermost frame is the origin... */
    unsetenv("GPULEAK_ORIGIN_SKIP");
    setenv("GPULEAK_ORIGIN_RULES", "none", 1);
    reload();
    ck_assert_int_eq(origin_find(frames, n), 0);
    /* ...while owners still see the libraries and the runtime. */
    ck_assert_str_eq(origin_owner(nccl, COUNT(nccl), REPORT_KIND_device), "nccl");
    ck_assert_str_eq(origin_owner(frames, n, REPORT_KIND_device), "user");
    const origin_frame_t rt[] = { NAT(SHIM, NULL), NAT(LIBCUDA, NULL) };
    ck_assert_str_eq(origin_owner(rt, COUNT(rt), REPORT_KIND_device), "cuda-runtime");

    /* ...and only the user's globs apply. */
    setenv("GPULEAK_ORIGIN_SKIP", "*/libgpuleak.so:*/libcuda.so.1", 1);
    reload();
    ck_assert_int_eq(origin_find(frames, n), 2);

    /* An invalid value: one line naming it, the default used. */
    unsetenv("GPULEAK_ORIGIN_SKIP");
    setenv("GPULEAK_ORIGIN_RULES", "nope", 1);
    capturing(reload, err, sizeof err);
    ck_assert_ptr_nonnull(strstr(err, "GPULEAK_ORIGIN_RULES=nope"));
    ck_assert_ptr_nonnull(strstr(err, "default"));
    int lines = 0;
    for (const char *c = err; *c; c++)
        lines += *c == '\n';
    ck_assert_int_eq(lines, 1);
    ck_assert_int_eq(origin_find(frames, n), 2);
    /* origin_init runs at every report: the line is not repeated. */
    capturing(origin_init, err, sizeof err);
    ck_assert_str_eq(err, "");

    setenv("GPULEAK_ORIGIN_RULES", "default", 1);
    capturing(reload, err, sizeof err);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(origin_find(frames, n), 2);
    unsetenv("GPULEAK_ORIGIN_RULES");
    origin_end();
}
END_TEST

/* Without the interpreter's layout (a report written before Python's
 * atexit), the built-in globs know the standard library of Fedora and the
 * like (lib64) and a zipped one, while a site-packages folder inside lib64
 * stays a library's and a user's own lib64 folder the user's. */
START_TEST(test_python_fallback_globs)
{
    defaults();
    const origin_frame_t frames[] = {
        PY("Thread.run", "/usr/lib64/python3.12/threading.py", 1010),
        PY("_WorkItem.run", "/usr/lib64/python3.12/concurrent/futures/thread.py", 58),
        PY("scheduler.run", "/opt/embed/lib/python312.zip/sched.py", 151),
        PY("Layer.forward", "/usr/lib64/python3.12/site-packages/fancylib/layer.py", 12),
        PY("step", "/home/u/lib64/proj/train.py", 42),
        PY("tool", "/home/u/proj/python3-tools.zip/tool.py", 7),
    };
    ck_assert_int_eq(origin_find(frames, COUNT(frames)), 4);
    ck_assert_int_eq(origin_find_via(frames, 4), 3);
    ck_assert_int_eq(origin_find(frames + 5, 1), 0);
    origin_end();
}
END_TEST

/* A standard library and packages in folders that no built-in glob knows,
 * as the interpreter said them: pylib/python3.12 (a custom platlibdir, or
 * a Python run from its build tree), a folder of pip install --target and
 * one whose name needs fnmatch's escapes. */
static const char *const layout_stdlib[] = { "/opt/py/pylib/python3.12", "/opt/py/pylib/python312.zip" };
static const char *const layout_packages[] = {
    "/opt/py/pylib/python3.12/vendor", "/srv/deps", "/srv/odd[1]*?",
};
static const origin_layout_t layout = { layout_stdlib, 2, layout_packages, 3 };

/* The frames each layout test judges: the standard library's, a library's
 * (a via), torch's under a packages folder, a library's inside the standard
 * library's folder, then the user's. */
static const origin_frame_t layout_frames[] = {
    PY("scheduler.run", "/opt/py/pylib/python3.12/sched.py", 151),
    PY("Layer.forward", "/srv/deps/fancylib/__init__.py", 12),
    PY("Module._call_impl", "/srv/deps/torch/nn/modules/module.py", 1747),
    PY("Vendored.go", "/opt/py/pylib/python3.12/vendor/thing.py", 3),
    PY("main", "/home/u/proj/train.py", 42),
};

/* The rules from a layout come before the built-in globs: each frame above
 * is judged by its folder, order included (a packages folder inside the
 * standard library's is a library's); the built-in globs still judge what
 * the layout does not name; the user's globs come first; with the built-in
 * rules dropped, the layout's go too. */
START_TEST(test_layout_rules)
{
    const origin_frame_t *f = layout_frames;
    const int n = COUNT(layout_frames);
    origin_rules_init(NULL, 1, NULL);
    ck_assert_int_eq(origin_find(f, n), 0);  /* sched.py taken for the user's */

    origin_rules_init(NULL, 1, &layout);
    ck_assert_int_eq(origin_find(f, n), 4);
    ck_assert_int_eq(origin_find_via(f, 4), 1);
    ck_assert_int_eq(origin_find_via(f + 2, 1), -1);  /* torch is plumbing */
    ck_assert_int_eq(origin_find_via(f + 3, 1), 0);   /* vendor: a library */
    const origin_frame_t elsewhere[] = {
        PY("Thread.run", "/usr/lib/python3.11/threading.py", 982),
        PY("x", "/srv/odd[1]*?/pkg/x.py", 1),
        PY("y", "/srv/odd1ab/pkg/y.py", 2),   /* the folder's name unescaped would match */
        PY("z", "/srv/deps2/z.py", 3),         /* a sibling of /srv/deps, not in it */
    };
    ck_assert_int_eq(origin_find(elsewhere, COUNT(elsewhere)), 2);
    ck_assert_int_eq(origin_find_via(elsewhere, 2), 1);
    ck_assert_int_eq(origin_find(elsewhere + 3, 1), 0);

    origin_rules_init("!*/fancylib/*", 1, &layout);
    ck_assert_int_eq(origin_find(f, n), 1);
    origin_rules_init(NULL, 0, &layout);
    ck_assert_int_eq(origin_find(f, n), 0);
    origin_end();
}
END_TEST

/* The shim's path: layout.py's answer kept once (pylayout_set), which every
 * origin_init from then on takes; lines it does not know are left out, and
 * an answer that names no folder keeps nothing. */
START_TEST(test_layout_answer)
{
    defaults();
    ck_assert_ptr_null(origin_layout());
    ck_assert_int_eq(pylayout_set(""), -1);
    ck_assert_int_eq(pylayout_set("stdlib\trelative/lib\nnonsense\n\n"), -1);
    ck_assert_ptr_null(pylayout_get());
    ck_assert_int_eq(pylayout_set("stdlib\t/opt/py/pylib/python3.12\nwhat\t/x\n"
                                  "packages\t/srv/deps\nstdlib\n"), 0);
    ck_assert_int_eq(pylayout_set("stdlib\t/other\n"), -1);  /* once */
    ck_assert_ptr_null(origin_layout());  /* until the next origin_init */
    reload();
    const origin_layout_t *l = origin_layout();
    ck_assert_ptr_eq(l, pylayout_get());
    ck_assert_uint_eq(l->nstdlib, 1);
    ck_assert_str_eq(l->stdlib[0], "/opt/py/pylib/python3.12");
    ck_assert_uint_eq(l->npackages, 1);
    ck_assert_str_eq(l->packages[0], "/srv/deps");
    ck_assert_int_eq(origin_find(layout_frames, COUNT(layout_frames)), 4);
    origin_end();
}
END_TEST

/* Every built-in glob and both variables are in docs/origin-rules.md, so
 * the table and its documentation cannot drift apart. */
START_TEST(test_documented)
{
    static char text[1 << 18];
    suite_read_file("docs/origin-rules.md", text, sizeof text);
    size_t count;
    const origin_rule_t *rules = origin_builtin_rules(&count);
    ck_assert_uint_gt(count, 20);
    for (size_t i = 0; i < count; i++) {
        char quoted[256];
        snprintf(quoted, sizeof quoted, "`%s`", rules[i].glob);
        ck_assert_msg(strstr(text, quoted) != NULL, "%s missing from docs/origin-rules.md",
                      quoted);
    }
    ck_assert_ptr_nonnull(strstr(text, "GPULEAK_ORIGIN_SKIP"));
    ck_assert_ptr_nonnull(strstr(text, "GPULEAK_ORIGIN_RULES"));
}
END_TEST

/* A function of this binary, not inlined, whose address stands for the
 * user's frame of a recorded stack. */
__attribute__((noinline)) int origin_test_user_frame(int x)
{
    return x * 3 + 1;
}

/* origin_site on the stack depot: a recorded stack whose innermost frame is
 * in libc and next one in this binary resolves to this binary's frame, with
 * its module and offset; an unknown site has no origin and owner "unknown". */
START_TEST(test_site)
{
    defaults();
    stacks_init(1);
    /* libc's own definition, not a sanitizer's interceptor of it. */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(libc);
    void *in_libc = dlsym(libc, "gnu_get_libc_version");
    ck_assert_ptr_nonnull(in_libc);
    uintptr_t native[2] = { (uintptr_t)in_libc + 4, (uintptr_t)&origin_test_user_frame + 4 };
    uint32_t id = stacks_intern(REPORT_KIND_device, native, 2, NULL, 0);
    ck_assert_uint_ne(id, 0);
    symbolize_begin();
    origin_site_t o;
    origin_site(id, REPORT_KIND_device, &o);
    ck_assert_int_eq(o.found, 1);
    ck_assert_str_eq(o.owner, "user");
    ck_assert_int_eq(o.frame.is_python, 0);
    ck_assert_ptr_nonnull(o.frame.module);
    ck_assert_ptr_nonnull(strstr(o.frame.module, "test_origin"));
    ck_assert_uint_eq(o.address, native[1]);
    ck_assert_uint_ne(o.offset, 0);
    if (o.frame.function != NULL)
        ck_assert_str_eq(o.frame.function, "origin_test_user_frame");
    origin_site(0, REPORT_KIND_device, &o);
    ck_assert_int_eq(o.found, 0);
    ck_assert_str_eq(o.owner, "unknown");
    /* Only libc: no origin, the runtime's. */
    uint32_t libc_only = stacks_intern(REPORT_KIND_device, native, 1, NULL, 0);
    origin_site(libc_only, REPORT_KIND_device, &o);
    ck_assert_int_eq(o.found, 0);
    ck_assert_str_eq(o.owner, "cuda-runtime");
    symbolize_end();
    dlclose(libc);
    origin_end();
}
END_TEST

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 100k sites of 64 frames, the worst case (62 plumbing frames walked by
 * both questions before the user's), drawn from 4000 distinct functions and
 * 40 modules: the answers are right after the cache has grown many times,
 * and the whole run stays within seconds. */
START_TEST(test_scale)
{
    defaults();
    enum { SITES = 100000, DEPTH = 64, FUNCS = 4000, MODS = 40 };
    static char funcs[FUNCS][64], mods[MODS][128];
    for (int i = 0; i < FUNCS; i++)
        snprintf(funcs[i], sizeof funcs[i], "at::native::kernel_%d(c10::Tensor const&)", i);
    for (int i = 0; i < MODS; i++)
        snprintf(mods[i], sizeof mods[i], TORCHLIB "/libtorch_part%d.so", i);
    origin_frame_t frames[DEPTH];
    unsigned seed = 1;
    double start = seconds();
    long checksum = 0, wrong = 0;
    for (int s = 0; s < SITES; s++) {
        frames[0] = (origin_frame_t)NAT(LIBCUDA, "cuMemAlloc_v2");
        for (int d = 1; d < DEPTH - 1; d++) {
            seed = seed * 1103515245u + 12345u;
            frames[d] = (origin_frame_t)NAT(mods[(seed >> 8) % MODS], funcs[(seed >> 12) % FUNCS]);
        }
        frames[DEPTH - 1] = (origin_frame_t)NAT("/home/u/app", "main");
        int o = origin_find(frames, DEPTH);
        const char *owner = origin_owner(frames, DEPTH, REPORT_KIND_device);
        wrong += o != DEPTH - 1 || strcmp(owner, "user") != 0;
        checksum += o;
    }
    double took = seconds() - start;
    fprintf(stderr, "origin: %d sites x %d frames in %.2f s\n", SITES, DEPTH, took);
    ck_assert_int_eq(wrong, 0);
    ck_assert_int_eq(checksum, (long)SITES * (DEPTH - 1));
    ck_assert_msg(took < 30.0, "took %.2f s", took);

    /* PyTorch-shaped: 100k distinct lines of train.py over torch frames. */
    static char files[100][32];
    for (int i = 0; i < 100; i++)
        snprintf(files[i], sizeof files[i], "/home/u/proj/mod%d.py", i);
    origin_frame_t big[64];
    start = seconds();
    for (int s = 0; s < SITES; s++) {
        const origin_frame_t python[] = {
            PY("Module._call_impl", SITE "/torch/nn/modules/module.py", 1747),
            PY("step", files[s % 100], s / 100 + 1),
        };
        int n = torch_stack(big, python, COUNT(python), NULL);
        wrong += origin_find(big, n) != 1;
        wrong += strcmp(origin_owner(big, n, REPORT_KIND_device), "pytorch-caching-allocator") != 0;
    }
    took = seconds() - start;
    fprintf(stderr, "origin: %d PyTorch-shaped sites in %.2f s\n", SITES, took);
    ck_assert_int_eq(wrong, 0);
    origin_end();
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("origin");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, test_plain_c);
    tcase_add_test(tc, test_framework_pools);
    tcase_add_test(tc, test_static_cudart);
    tcase_add_test(tc, test_cudart_folded);
    tcase_add_test(tc, test_pytorch);
    tcase_add_test(tc, test_pytorch_python_rules);
    tcase_add_test(tc, test_nccl);
    tcase_add_test(tc, test_cublas_cudnn);
    tcase_add_test(tc, test_pinned_host_cache);
    tcase_add_test(tc, test_edges);
    tcase_add_test(tc, test_overrides);
    tcase_add_test(tc, test_python_fallback_globs);
    tcase_add_test(tc, test_layout_rules);
    tcase_add_test(tc, test_layout_answer);
    tcase_add_test(tc, test_documented);
    tcase_add_test(tc, test_site);
    suite_add_tcase(suite, tc);
    TCase *scale = tcase_create("scale");
    tcase_set_timeout(scale, 120);
    tcase_add_test(scale, test_scale);
    suite_add_tcase(suite, scale);
    return suite_run(suite, 1);
}
