// A fake of PyTorch's libc10_cuda.so, for testing gpuleak's torch_trace.c
// without a GPU or PyTorch. It has what that module relies on, laid out as
// in PyTorch 2.11: the exported pointer c10::cuda::CUDACachingAllocator::
// allocator; a NativeCachingAllocator whose vtable and attach method are
// local symbols in .symtab (hidden visibility, as in PyTorch's wheels);
// trackers as std::function<void(const TraceEntry&)>, called on every event
// with the device's recursive mutex held; and a TraceEntry whose first
// fields sit where PyTorch's do. Behind it, a small caching allocator whose
// segments come from the driver (the fake libcuda.so.1 in CI), with
// expandable segments, frees completed later on another thread, empty_cache
// and out-of-memory events.
//
// Set at load by environment variables:
//   FAKE_C10_BACKEND=async   the allocator is a cudaMallocAsync-like backend
//                            whose attach method throws (as PyTorch's does)
//   FAKE_C10_BACKEND=unset   the allocator pointer stays null
//   FAKE_C10_EXPANDABLE=1    segments are cuMemCreate + cuMemMap, not cuMemAlloc
//   FAKE_C10_BAD_LAYOUT=1    events carry an action PyTorch never sends
//   FAKE_C10_BAD_LAYOUT_AFTER=N  the same, from the (N+1)th event on
// The test drives it through the extern "C" functions at the end.
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#define API extern "C" __attribute__((visibility("default")))

namespace c10 {
namespace CachingDeviceAllocator {

struct TraceEntry {
    enum Action {
        ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE,
        SEGMENT_MAP, SEGMENT_UNMAP, SNAPSHOT, OOM
    };
    int action_;                      // 0
    int8_t device_;                   // 4
    size_t addr_;                     // 8 (for OOM: the device's free bytes)
    std::shared_ptr<void> context_;   // 16
    void *stream_;                    // 32
    size_t size_;                     // 40
    char later_fields_[88];           // 48: mempool, time, user metadata...
};
static_assert(sizeof(TraceEntry) == 136, "PyTorch 2.11's TraceEntry size");

}  // namespace CachingDeviceAllocator

namespace cuda {
namespace CUDACachingAllocator {

using TraceEntry = c10::CachingDeviceAllocator::TraceEntry;
using AllocatorTraceTracker = std::function<void(const TraceEntry &)>;

// A few virtual methods before the one that matters, so that its slot is
// not the first: gpuleak must find it by the method's address.
class CUDAAllocator {
public:
    virtual ~CUDAAllocator() = default;
    virtual void init(int device_count) = 0;
    virtual void *malloc(size_t size, int device) = 0;
    virtual void free(void *ptr, bool deferred) = 0;
    virtual void processEvents() = 0;
    virtual void emptyCache() = 0;
    virtual void recordOom(size_t size, int device) = 0;
    virtual void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) = 0;
    virtual bool initialized() = 0;
};

namespace Native {

constexpr size_t kSegment = 2u << 20;   // a fresh segment's size, at least
constexpr size_t kRound = 512;          // PyTorch rounds blocks to 512 bytes

struct Block {
    int device;
    uintptr_t ptr;
    size_t size;       // rounded
    size_t requested;
    uintptr_t segment;
};

struct Segment {
    uintptr_t base;
    size_t size, used;
    CUmemGenericAllocationHandle handle;  // expandable segments
    int live;
};

class DeviceCachingAllocator {
public:
    // As the CUDA runtime does for PyTorch: the device's primary context,
    // made current before each driver call.
    explicit DeviceCachingAllocator(int device) : device_(device)
    {
        cuInit(0);
        cuDevicePrimaryCtxRetain(&context_, device);
    }

    // The test switches are read once, here: a getenv per event made the
    // fake's own cost part of what a benchmark charged to the shim.
    void attach(AllocatorTraceTracker tracker)
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        trackers_.emplace_back(std::move(tracker));
        const char *after = getenv("FAKE_C10_BAD_LAYOUT_AFTER");
        bad_layout_ = getenv("FAKE_C10_BAD_LAYOUT") != nullptr;
        bad_after_ = after != nullptr;
        bad_after_events_ = after != nullptr ? strtoul(after, nullptr, 10) : 0;
    }

    void *malloc(size_t requested)
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        size_t size = (requested + kRound - 1) / kRound * kRound;
        Block b{};
        auto cached = free_blocks_.find(size);
        if (cached != free_blocks_.end()) {
            b = cached->second;
            free_blocks_.erase(cached);
        } else {
            Segment *seg = segment_for(size);
            if (seg == nullptr) {
                trace(TraceEntry::OOM, 0, size);
                return nullptr;
            }
            b = Block{device_, seg->base + seg->used, size, 0, seg->base};
            seg->used += size;
        }
        b.requested = requested;
        segments_[b.segment].live++;
        live_[b.ptr] = b;
        trace(TraceEntry::ALLOC, b.ptr, requested);
        return reinterpret_cast<void *>(b.ptr);
    }

    bool owns(uintptr_t ptr)
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        return live_.count(ptr) != 0;
    }

    void free(uintptr_t ptr, bool deferred)
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        auto it = live_.find(ptr);
        Block b = it->second;
        live_.erase(it);
        trace(TraceEntry::FREE_REQUESTED, b.ptr, b.size);
        if (deferred)
            pending_.push_back(b);
        else
            complete(b);
    }

    // Frees whose streams finished, as a later malloc or empty_cache
    // processes them: possibly on another thread.
    void process_events()
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        for (const Block &b : pending_)
            complete(b);
        pending_.clear();
    }

    void empty_cache()
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        process_events();
        for (auto it = segments_.begin(); it != segments_.end();) {
            Segment &seg = it->second;
            if (seg.live != 0) {
                ++it;
                continue;
            }
            for (auto f = free_blocks_.begin(); f != free_blocks_.end();)
                f = f->second.segment == seg.base ? free_blocks_.erase(f) : std::next(f);
            cuCtxSetCurrent(context_);
            if (seg.handle != 0) {
                trace(TraceEntry::SEGMENT_UNMAP, seg.base, seg.size);
                cuMemUnmap(seg.base, seg.size);
                cuMemRelease(seg.handle);
                cuMemAddressFree(seg.base, seg.size);
            } else {
                trace(TraceEntry::SEGMENT_FREE, seg.base, seg.size);
                cuMemFree(seg.base);
            }
            it = segments_.erase(it);
        }
    }

    void record_oom(size_t size)
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        trace(TraceEntry::OOM, 1u << 20, size);
    }

    // torch.cuda.memory_reserved() and memory_allocated(): its segments'
    // bytes, and its live blocks' bytes as its trace events give them
    // (asked, as this fake's events carry).
    size_t reserved()
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        size_t n = 0;
        for (const auto &s : segments_)
            n += s.second.size;
        return n;
    }
    size_t allocated()
    {
        std::unique_lock<std::recursive_mutex> lock(mutex_);
        size_t n = 0;
        for (const auto &b : live_)
            n += b.second.requested;
        return n;
    }

private:
    void complete(const Block &b)
    {
        segments_[b.segment].live--;
        free_blocks_.emplace(b.size, b);
        trace(TraceEntry::FREE_COMPLETED, b.ptr, b.size);
    }

    // A segment with room for size bytes, asking the driver for a new one
    // when none has; nullptr when the driver refuses.
    Segment *segment_for(size_t size)
    {
        for (auto &kv : segments_)
            if (kv.second.size - kv.second.used >= size)
                return &kv.second;
        // Whole 2 MiB units, as PyTorch rounds large segments (and as the
        // VMM granularity requires).
        size_t bytes = (size + kSegment - 1) / kSegment * kSegment;
        cuCtxSetCurrent(context_);
        Segment seg{};
        seg.size = bytes;
        if (getenv("FAKE_C10_EXPANDABLE") != nullptr) {
            CUmemAllocationProp prop{};
            prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            prop.location.id = device_;
            CUdeviceptr va = 0;
            if (cuMemAddressReserve(&va, bytes, 0, 0, 0) != CUDA_SUCCESS)
                return nullptr;
            if (cuMemCreate(&seg.handle, bytes, &prop, 0) != CUDA_SUCCESS
                || cuMemMap(va, bytes, 0, seg.handle, 0) != CUDA_SUCCESS)
                return nullptr;
            seg.base = va;
            trace(TraceEntry::SEGMENT_MAP, seg.base, bytes);
        } else {
            CUdeviceptr p = 0;
            if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS)
                return nullptr;
            seg.base = p;
            trace(TraceEntry::SEGMENT_ALLOC, seg.base, bytes);
        }
        return &(segments_[seg.base] = seg);
    }

    void trace(int action, uintptr_t addr, size_t size)
    {
        if (trackers_.empty())
            return;
        TraceEntry te{};
        bool bad = bad_layout_ || (bad_after_ && events_++ >= bad_after_events_);
        te.action_ = bad ? 42 : action;
        te.device_ = static_cast<int8_t>(device_);
        te.addr_ = addr;
        te.size_ = size;
        for (const auto &t : trackers_)
            t(te);
    }

    int device_;
    unsigned long events_ = 0;
    bool bad_layout_ = false, bad_after_ = false;
    unsigned long bad_after_events_ = 0;
    CUcontext context_ = nullptr;
    std::recursive_mutex mutex_;
    std::vector<AllocatorTraceTracker> trackers_;
    std::map<uintptr_t, Segment> segments_;
    std::multimap<size_t, Block> free_blocks_;
    std::map<uintptr_t, Block> live_;
    std::vector<Block> pending_;
};

class NativeCachingAllocator : public CUDAAllocator {
public:
    void init(int device_count) override
    {
        for (int i = static_cast<int>(devices_.size()); i < device_count; i++)
            devices_.push_back(std::make_unique<DeviceCachingAllocator>(i));
    }
    void *malloc(size_t size, int device) override { return devices_.at(device)->malloc(size); }
    void free(void *ptr, bool deferred) override
    {
        for (auto &d : devices_)
            if (d->owns(reinterpret_cast<uintptr_t>(ptr)))
                return d->free(reinterpret_cast<uintptr_t>(ptr), deferred);
    }
    void processEvents() override
    {
        for (auto &d : devices_)
            d->process_events();
    }
    void emptyCache() override
    {
        for (auto &d : devices_)
            d->empty_cache();
    }
    void recordOom(size_t size, int device) override { devices_.at(device)->record_oom(size); }
    // Not virtual: the interface's slots stay PyTorch's.
    size_t reserved(int device) { return devices_.at(device)->reserved(); }
    size_t allocated(int device) { return devices_.at(device)->allocated(); }
    // As PyTorch's: every device allocator that exists gets the tracker; one
    // attached before init() is silently lost.
    void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) override
    {
        for (auto &d : devices_)
            d->attach(tracker);
    }
    bool initialized() override { return !devices_.empty(); }

private:
    std::vector<std::unique_ptr<DeviceCachingAllocator>> devices_;
};

NativeCachingAllocator native_allocator;

}  // namespace Native

namespace CudaMallocAsync {

// Stands for the cudaMallocAsync backend: every tensor one driver
// allocation, and no trace trackers (PyTorch's throws from the method).
class CudaMallocAsyncAllocator : public CUDAAllocator {
public:
    void init(int) override
    {
        cuInit(0);
        CUcontext context = nullptr;
        cuDevicePrimaryCtxRetain(&context, 0);
        cuCtxSetCurrent(context);
        ready_ = true;
    }
    void *malloc(size_t size, int) override
    {
        CUdeviceptr p = 0;
        return cuMemAllocAsync(&p, size, nullptr) == CUDA_SUCCESS ? reinterpret_cast<void *>(p)
                                                                    : nullptr;
    }
    void free(void *ptr, bool) override { cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), nullptr); }
    void processEvents() override {}
    void emptyCache() override {}
    void recordOom(size_t, int) override {}
    void attachAllocatorTraceTracker(AllocatorTraceTracker) override
    {
        throw std::runtime_error("cudaMallocAsync does not yet support attachAllocatorTraceTracker");
    }
    bool initialized() override { return ready_; }

private:
    bool ready_ = false;
};

CudaMallocAsyncAllocator async_allocator;

}  // namespace CudaMallocAsync

__attribute__((visibility("default"))) std::atomic<CUDAAllocator *> allocator;

namespace {
struct ChooseBackend {
    ChooseBackend()
    {
        const char *backend = getenv("FAKE_C10_BACKEND");
        if (backend != nullptr && strcmp(backend, "unset") == 0)
            return;
        if (backend != nullptr && strcmp(backend, "async") == 0)
            allocator.store(&CudaMallocAsync::async_allocator);
        else
            allocator.store(&Native::native_allocator);
    }
} choose_backend;
}  // namespace

}  // namespace CUDACachingAllocator
}  // namespace cuda
}  // namespace c10

namespace alloc = c10::cuda::CUDACachingAllocator;

// PyTorch's cuBLAS handle pool (ATen/cuda/CublasHandlePool.cpp): the first
// handle a thread gets on a device and stream is given a workspace (32 MiB
// on Hopper) allocated through the caching allocator and kept in a leaky
// map for the life of the process. Exported, as PyTorch's is.
namespace at {
namespace cuda {
__attribute__((visibility("default"), noinline)) void *getCurrentCUDABlasHandle(int device)
{
    static std::mutex lock;
    static auto &workspaces = *new std::map<int, void *>;
    std::lock_guard<std::mutex> hold(lock);
    auto it = workspaces.find(device);
    if (it == workspaces.end())
        it = workspaces.emplace(device, alloc::allocator.load()->malloc(32u << 20, device)).first;
    return it->second;
}
}  // namespace cuda
}  // namespace at

// The test's side: what torch.cuda's lazy init and tensors do. Each returns
// 0, a pointer, or -1 / NULL when the allocator is unset or refused.
API int fake_c10_init(int devices)
{
    if (alloc::allocator.load() == nullptr)
        return -1;
    alloc::allocator.load()->init(devices);
    return 0;
}

API void *fake_c10_malloc(size_t size, int device)
{
    return alloc::allocator.load()->malloc(size, device);
}

API void fake_c10_free(void *ptr, int deferred)
{
    alloc::allocator.load()->free(ptr, deferred != 0);
}

// A matmul's first call on a device: PyTorch's cuBLAS handle and its
// workspace. Returns the workspace.
API void *fake_c10_blas_handle(int device)
{
    return at::cuda::getCurrentCUDABlasHandle(device);
}

API void fake_c10_process_events(void)
{
    alloc::allocator.load()->processEvents();
}

API void fake_c10_empty_cache(void)
{
    alloc::allocator.load()->emptyCache();
}

API void fake_c10_record_oom(size_t size, int device)
{
    alloc::allocator.load()->recordOom(size, device);
}

// torch.cuda.memory_reserved(device) and memory_allocated(device); 0 under
// another backend.
API size_t fake_c10_reserved(int device)
{
    auto *native = dynamic_cast<alloc::Native::NativeCachingAllocator *>(alloc::allocator.load());
    return native != nullptr ? native->reserved(device) : 0;
}

API size_t fake_c10_allocated(int device)
{
    auto *native = dynamic_cast<alloc::Native::NativeCachingAllocator *>(alloc::allocator.load());
    return native != nullptr ? native->allocated(device) : 0;
}

// A tracker of the fake's own, as a program's own code might attach: it
// counts events, so a test can check gpuleak's tracker leaves others be.
static std::atomic<unsigned long> own_events;
API int fake_c10_attach_counter(void)
{
    try {
        alloc::allocator.load()->attachAllocatorTraceTracker(
            [](const alloc::TraceEntry &) { own_events++; });
    } catch (const std::exception &) {
        return -1;
    }
    return 0;
}

API unsigned long fake_c10_counted_events(void)
{
    return own_events.load();
}
