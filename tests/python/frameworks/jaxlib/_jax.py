"""A fake of jaxlib's C++ side as the shim reads it (shim/python/pools.py,
holders.py): ArrayImpl, each array's Traceback of the Python frames that
made it (innermost first, as (code, byte offset) pairs: raw_frames()), the
GPU Device, and the client's pool, an XLA-style block taken at the first
operation: a reserved address range with VMM memory mapped into it
(cuMemAddressReserve, cuMemCreate, cuMemMap, as XLA's allocator grows its
pool), from which every array's buffer is cut first fit; through a native
frame at jaxlib's path when FAKE_POOLS names build/fakepools. Without a
libcuda.so.1 the block's addresses are made up (tests of the search alone)."""
import ctypes
import os
import sys
import weakref

POOL_BYTES = 256 << 20       # XLA takes 75% of the GPU; 256 MiB here
GRANULARITY = 2 << 20


class XlaRuntimeError(RuntimeError):
    pass


class Device:
    platform = "gpu"

    def __init__(self, index):
        self.id = index
        self.local_hardware_id = index


class Traceback:
    __slots__ = ("_codes", "_offsets")

    def __init__(self):
        """The frames from the caller of ArrayImpl() outwards: JAX's own
        first, then the program's, as jaxlib records them."""
        codes, offsets = [], []
        f = sys._getframe(2)
        while f is not None:
            codes.append(f.f_code)
            offsets.append(f.f_lasti)
            f = f.f_back
        self._codes, self._offsets = codes, offsets

    def raw_frames(self):
        return (list(self._codes), list(self._offsets))

    @property
    def frames(self):
        return [(c.co_filename, c.co_name) for c in self._codes]


class _Pool:
    """The device's one block and its free list: (start, size) runs."""

    def __init__(self):
        self.base = None
        self.free = []
        self.live = weakref.WeakValueDictionary()  # id -> array

    def _take_block(self):
        try:
            cuda = ctypes.CDLL("libcuda.so.1")
        except OSError:
            self.base = 1 << 44
            return
        u64 = ctypes.c_uint64
        assert cuda.cuInit(0) == 0
        device, context = ctypes.c_int(), ctypes.c_void_p()
        assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
        assert cuda.cuCtxSetCurrent(context) == 0
        if os.environ.get("FAKE_POOLS"):  # the block's native frame where XLA's is
            native = ctypes.CDLL(os.path.join(os.environ["FAKE_POOLS"], "jaxlib", "xla.fake.so"))
            va, handle = u64(), u64()
            native.fake_pool_map.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(u64),
                                             ctypes.c_size_t, ctypes.c_int]
            assert native.fake_pool_map(ctypes.byref(va), ctypes.byref(handle), POOL_BYTES, 0) == 0
            self.base = va.value
            return
        va = u64()
        cuda.cuMemAddressReserve.argtypes = [ctypes.POINTER(u64), ctypes.c_size_t, ctypes.c_size_t,
                                             u64, ctypes.c_ulonglong]
        assert cuda.cuMemAddressReserve(ctypes.byref(va), POOL_BYTES, 0, 0, 0) == 0

        class Location(ctypes.Structure):
            _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]

        class Prop(ctypes.Structure):  # CUmemAllocationProp, as cuda.h lays it out
            _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                        ("location", Location), ("win32HandleMetaData", ctypes.c_void_p),
                        ("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                        ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]
        prop = Prop()
        prop.type = 1           # CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = 1  # CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = 0
        handle = u64()
        cuda.cuMemCreate.argtypes = [ctypes.POINTER(u64), ctypes.c_size_t, ctypes.POINTER(Prop),
                                     ctypes.c_ulonglong]
        assert cuda.cuMemCreate(ctypes.byref(handle), POOL_BYTES, ctypes.byref(prop), 0) == 0
        cuda.cuMemMap.argtypes = [u64, ctypes.c_size_t, ctypes.c_size_t, u64, ctypes.c_ulonglong]
        assert cuda.cuMemMap(va.value, POOL_BYTES, 0, handle.value, 0) == 0
        self.base = va.value

    def malloc(self, size):
        if self.base is None:
            self._take_block()
            self.free = [(self.base, POOL_BYTES)]
        size = (size + 255) // 256 * 256
        for i, (start, room) in enumerate(self.free):
            if room >= size:
                self.free[i] = (start + size, room - size)
                return start, size
        raise XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                              "%d bytes." % size)

    def release(self, start, size):
        self.free.append((start, size))
        self.free.sort()
        merged = []
        for s, n in self.free:
            if merged and merged[-1][0] + merged[-1][1] == s:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((s, n))
        self.free = merged


POOL = _Pool()
GPU = Device(0)


class Shard:
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


class ArrayImpl:
    """A device array: its buffer lives in the pool until the array goes.
    With pieces, an array sharded over devices: each piece a one-device
    array of its own (JAX lists them too), the whole owning no buffer."""
    __slots__ = ("shape", "_ptr", "_size", "_traceback", "_deleted", "_pieces", "__weakref__")

    def __init__(self, shape, pieces=None):
        self.shape = tuple(shape)
        self._deleted = True  # until its buffer is had: a refused one frees nothing
        self._pieces = pieces
        self._ptr = self._size = None
        if pieces is None:
            count = 1
            for n in self.shape:
                count *= n
            self._ptr, self._size = POOL.malloc(count * 4)
        self._deleted = False
        self._traceback = Traceback()
        POOL.live[id(self)] = self

    def __del__(self):
        if not self._deleted:
            self._deleted = True
            if self._pieces is None:
                POOL.release(self._ptr, self._size)

    def delete(self):
        self.__del__()

    def is_deleted(self):
        return self._deleted

    def unsafe_buffer_pointer(self):
        if self._pieces is not None:
            raise ValueError("unsafe_buffer_pointer() is supported only for unsharded arrays.")
        return self._ptr

    @property
    def addressable_shards(self):
        return [Shard(p) for p in self._pieces] if self._pieces is not None else [Shard(self)]

    def on_device_size_in_bytes(self):
        return self._size

    @property
    def nbytes(self):
        return self._size

    def devices(self):
        return {GPU}

    @property
    def traceback(self):
        return self._traceback


ArrayImpl.__module__ = "jaxlib._jax"
Traceback.__module__ = "jaxlib._jax"
