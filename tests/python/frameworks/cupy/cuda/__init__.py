"""cupy.cuda: the memory pool and its hooks."""
from cupy.cuda import memory, memory_hook  # noqa: F401
from cupy.cuda.memory_hook import MemoryHook  # noqa: F401
