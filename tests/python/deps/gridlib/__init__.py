"""An installed package in a folder no built-in glob knows: tests/python/
deps is laid out as `pip install --target` leaves one (the package beside
its .dist-info). tests/python/layout_demo.py calls it; only the
interpreter's layout (a sys.path folder holding installed distributions)
tells it is not the user's code."""
import ctypes


class Grid:
    def __init__(self, alloc):
        self.alloc = alloc

    def make(self, size):
        ptr = ctypes.c_uint64()
        assert self.alloc(ctypes.byref(ptr), size) == 0  # VIA-LINE
        return ptr
