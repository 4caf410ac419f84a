"""cupy.cuda.memory as the shim reads it: PooledMemory with C-level ptr,
size and device_id fields (slots here, Cython's there), MemoryPointer, and
the pool: a request served first fit from the chunks given back, split as
needed, else a new chunk of its rounded size from the driver (cuMemAlloc,
through a native frame at CuPy's memory module's path when FAKE_POOLS
names build/fakepools), calling the memory hooks as CuPy does."""
import ctypes
import os
import weakref

from cupy.cuda import memory_hook

_cuda = ctypes.CDLL("libcuda.so.1")
_cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
# A chunk's native frame where CuPy's is (its memory module), when built:
# FAKE_POOLS names build/fakepools (tests/fakecuda/fake_pool_native.c).
_take = _cuda.cuMemAlloc_v2
if os.environ.get("FAKE_POOLS"):
    _take = ctypes.CDLL(os.path.join(os.environ["FAKE_POOLS"], "cupy", "cuda",
                                     "memory.fake.so")).fake_pool_alloc
    _take.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
_context = None


def _driver_alloc(size):
    global _context
    if _context is None:
        assert _cuda.cuInit(0) == 0
        device, _context = ctypes.c_int(), ctypes.c_void_p()
        assert _cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
        assert _cuda.cuDevicePrimaryCtxRetain(ctypes.byref(_context), device) == 0
    assert _cuda.cuCtxSetCurrent(_context) == 0  # each thread, as CuPy's device does
    ptr = ctypes.c_uint64()
    if _take(ctypes.byref(ptr), size) != 0:
        raise OutOfMemoryError(size)
    return ptr.value


class OutOfMemoryError(MemoryError):
    pass


class BaseMemory:
    __slots__ = ("ptr", "size", "device_id", "__weakref__")


class PooledMemory(BaseMemory):
    __slots__ = ("pool",)

    def __init__(self, pool, ptr, size):
        self.ptr, self.size, self.device_id, self.pool = ptr, size, 0, weakref.ref(pool)

    def free(self):
        pool = self.pool()
        ptr, size = self.ptr, self.size
        if not ptr or pool is None:
            return
        self.ptr = 0
        hooks = memory_hook.get_memory_hooks().values() if memory_hook._has_hooks() else ()
        for hook in hooks:
            hook.free_preprocess(device_id=0, mem_size=size, mem_ptr=ptr, pmem_id=id(self))
        pool._give_back(ptr, size)
        for hook in hooks:
            hook.free_postprocess(device_id=0, mem_size=size, mem_ptr=ptr, pmem_id=id(self))

    __del__ = free


class MemoryPointer:
    __slots__ = ("mem", "ptr")

    def __init__(self, mem, offset=0):
        self.mem, self.ptr = mem, mem.ptr + offset


class SingleDeviceMemoryPool:
    def __init__(self):
        self._free = []     # (ptr, size) given back
        self._total = 0
        self._used = 0

    def _alloc(self, size):
        hooks = memory_hook.get_memory_hooks().values() if memory_hook._has_hooks() else ()
        for hook in hooks:
            hook.alloc_preprocess(device_id=0, mem_size=size)
        ptr = _driver_alloc(size)
        for hook in hooks:
            hook.alloc_postprocess(device_id=0, mem_size=size, mem_ptr=ptr)
        self._total += size
        return ptr

    def _malloc(self, size):
        for i, (ptr, room) in enumerate(self._free):
            if room >= size:
                if room > size:
                    self._free[i] = (ptr + size, room - size)
                else:
                    del self._free[i]
                break
        else:
            ptr = self._alloc(size)
        self._used += size
        return MemoryPointer(PooledMemory(self, ptr, size))

    def malloc(self, size):
        size = max(512, (size + 511) // 512 * 512)
        if not memory_hook._has_hooks():
            return self._malloc(size)
        hooks = memory_hook.get_memory_hooks().values()
        for hook in hooks:
            hook.malloc_preprocess(device_id=0, size=size, mem_size=size)
        memptr = self._malloc(size)
        for hook in hooks:
            hook.malloc_postprocess(device_id=0, size=size, mem_size=size, mem_ptr=memptr.ptr,
                                    pmem_id=id(memptr.mem))
        return memptr

    def _give_back(self, ptr, size):
        self._used -= size
        self._free.append((ptr, size))
        self._free.sort()

    def used_bytes(self):
        return self._used

    def total_bytes(self):
        return self._total


MemoryPool = SingleDeviceMemoryPool
_pool = SingleDeviceMemoryPool()


def alloc(size):
    return _pool.malloc(size)
