"""A fake of the few parts of PyTorch the shim's holder search reads
(shim/python/holders.py): Tensor with is_cuda, data_ptr(), untyped_storage(), grad
and grad_fn, and autograd nodes with _saved_* attributes and
next_functions; torch.nn's Parameter and Module and torch.optim's
Optimizer (nn/, optim/), laid out as PyTorch's are. Memory comes from the fake libc10_cuda.so (FAKE_C10), so
the shim sees it as tensors, as it sees PyTorch's; without FAKE_C10,
addresses are made up (for tests of the search alone)."""
import ctypes
import itertools
import os

if os.environ.get("FAKE_C10"):
    _lib = ctypes.CDLL(os.environ["FAKE_C10"])
    _lib.fake_c10_malloc.restype = ctypes.c_void_p
    _lib.fake_c10_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
    _lib.fake_c10_free.argtypes = [ctypes.c_void_p, ctypes.c_int]
    _lib.fake_c10_blas_handle.restype = ctypes.c_void_p
    _lib.fake_c10_blas_handle.argtypes = [ctypes.c_int]
    _malloc = _lib.fake_c10_malloc
    _free = _lib.fake_c10_free  # kept: module teardown may clear _lib first
    _blas_handle = _lib.fake_c10_blas_handle
    _lib.fake_c10_record_oom.argtypes = [ctypes.c_size_t, ctypes.c_int]
    _record_oom = _lib.fake_c10_record_oom
    _lib.fake_c10_init(1)
else:
    _next = itertools.count(1 << 40, 1 << 20)
    _malloc = lambda nbytes, device: next(_next)  # noqa: E731
    _free = lambda ptr, device: None  # noqa: E731
    _blas_handle = lambda device: None  # noqa: E731
    _record_oom = lambda nbytes, device: None  # noqa: E731

# Larger requests fail as PyTorch's caching allocator fails one it cannot
# serve: its OOM event, then the exception.
_DEVICE_BYTES = 1 << 40


class OutOfMemoryError(RuntimeError):
    pass


class UntypedStorage:
    """Owns the memory, as a storage does: freed when the last tensor or
    saved variable that refers to it goes."""

    def __init__(self, nbytes):
        self._nbytes = nbytes
        self._ptr = _malloc(nbytes, 0)

    def data_ptr(self):
        return self._ptr

    def nbytes(self):
        return self._nbytes

    def __del__(self):
        _free(self._ptr, 0)


class Node:
    """An autograd node that saved a tensor's storage (as SavedVariable
    does, with no Python tensor of its own) and points to the nodes before
    it; leaves: the parameters backward() gives a gradient (PyTorch's
    AccumulateGrad nodes, kept here as a plain list)."""

    def __init__(self, saved, before, leaves=()):
        self._storage = saved
        self.next_functions = tuple((n, 0) for n in before)
        self.leaves = list(leaves)

    @property
    def _saved_self(self):
        return Tensor(storage=self._storage) if self._storage is not None else None


class Tensor:
    is_cuda = True
    # Times a non-leaf's .grad was read: PyTorch prints a warning then.
    grad_warnings = 0

    def __init__(self, nbytes=0, storage=None, grad_fn=None):
        self._storage = storage if storage is not None else UntypedStorage(nbytes)
        self._grad = None
        self.grad_fn = grad_fn

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        if not self.is_leaf:
            Tensor.grad_warnings += 1
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    def untyped_storage(self):
        return self._storage

    def data_ptr(self):
        return self._storage.data_ptr()

    def __matmul__(self, other):
        """A product: PyTorch's cuBLAS handle (its workspace allocated and
        kept on first use), then the result."""
        _blas_handle(0)
        return Tensor(self._storage.nbytes(), grad_fn=Node(self._storage, [self.grad_fn] if self.grad_fn else []))

    def nbytes(self):
        return self._storage.nbytes()

    def backward(self):
        autograd.backward(self)

    def __add__(self, other):
        """A running sum: its graph reaches both sides' (loss.item() would
        keep none)."""
        before = [t.grad_fn for t in (self, other) if t.grad_fn is not None]
        return Tensor(8, grad_fn=Node(self._storage, before))

    def detach(self):
        return Tensor(storage=self._storage)

    def sum(self):
        """A small result whose graph keeps this tensor's memory."""
        before = [self.grad_fn] if self.grad_fn is not None else []
        return Tensor(8, grad_fn=Node(self._storage, before))


_grad_enabled = [True]


class no_grad:
    """Operations inside make no graph."""

    def __enter__(self):
        _grad_enabled.append(False)

    def __exit__(self, *exc):
        _grad_enabled.pop()


def is_grad_enabled():
    return _grad_enabled[-1]


def empty(nbytes):
    if nbytes >= _DEVICE_BYTES:
        _record_oom(nbytes, 0)
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % nbytes)
    return Tensor(nbytes)


from . import autograd, nn, optim  # noqa: E402  (PyTorch's import torch loads them too)
