"""cupy.cuda.memory_hook as CuPy has it: hooks per thread, called by the
pool with keywords."""
import threading

_thread_local = threading.local()


def get_memory_hooks():
    hooks = getattr(_thread_local, "memory_hooks", None)
    if hooks is None:
        hooks = _thread_local.memory_hooks = {}
    return hooks


def _has_hooks():
    return bool(getattr(_thread_local, "memory_hooks", None))


class MemoryHook:
    name = None

    def __enter__(self):
        hooks = get_memory_hooks()
        if self.name in hooks:
            raise RuntimeError("memory hook %s already exists" % self.name)
        hooks[self.name] = self
        return self

    def __exit__(self, *exc):
        del get_memory_hooks()[self.name]

    def alloc_preprocess(self, **kwargs):
        pass

    def alloc_postprocess(self, **kwargs):
        pass

    def malloc_preprocess(self, **kwargs):
        pass

    def malloc_postprocess(self, **kwargs):
        pass

    def free_preprocess(self, **kwargs):
        pass

    def free_postprocess(self, **kwargs):
        pass
