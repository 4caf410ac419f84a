"""shim/python/holders.py on its own, in this interpreter: the search the shim
runs at a Python program's atexit to name the objects that hold its GPU
memory. Objects expose fake device pointers through
__cuda_array_interface__, as CuPy's and Numba's arrays do."""
import contextlib
import os
import sys
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_find():
    scope = {}
    with open(os.path.join(ROOT, "shim", "python", "holders.py")) as fh:
        exec(compile(fh.read(), "holders.py", "exec"), scope)
    return scope["find"]


find = load_find()


SHIM = os.path.join(ROOT, "build", "libgpuleak.so")


def preloaded():
    """Whether the shim is in this process: its thread-local storage lets
    it only be preloaded, never dlopen'ed."""
    import ctypes
    return hasattr(ctypes.CDLL(None), "gpuleak_holders_walker")


def new_walker():
    """The shim's C walk (shim/python/refwalk.h), from the preloaded library:
    nothing starts tracking until a CUDA call reaches it."""
    import ctypes
    walker = ctypes.PyDLL(None).gpuleak_holders_walker
    walker.restype = ctypes.py_object
    return walker()


class Array:
    def __init__(self, ptr):
        self.ptr = ptr

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": (1,), "typestr": "|u1", "version": 3}


class Trap:
    """Any code of its own that the search ran would be seen."""
    ran = 0

    @property
    def value(self):
        Trap.ran += 1
        return Array(0x9000)

    def __getattr__(self, name):
        Trap.ran += 1
        return Array(0x9000)


paths = {}  # target id -> the whole path, for names that start at a type
answers = []  # the last search's answer, whole


def search(namespace, targets, budget=5.0, layout=""):
    """Runs find with namespace as the main module (and layout, layout.py's
    answer); returns {target id: (name, type, owner, file, graph)} and the
    ending line."""
    main = types.ModuleType("__main__")
    main.__dict__.update(namespace)
    main.__file__ = "/somewhere/train.py"
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        text = "".join("%d %d %d%s\n" % (t + ("",))[:4] for t in sorted(targets))
        answer = find(text, budget, layout, new_walker())
        answers[:] = [answer]
    finally:
        sys.modules["__main__"] = saved
    found, ending = {}, None
    paths.clear()
    for line in answer.split("\n"):
        fields = line.split("\t")
        if fields[0] == "#":
            ending = fields
        else:
            found[int(fields[0])] = (fields[2], fields[3], fields[4], fields[5], fields[1] == "1")
            paths[int(fields[0])] = fields[6]
    return found, ending


@contextlib.contextmanager
def fake_torch():
    """tests/python/faketorch as the module torch, for the search to find
    its Tensor type; this interpreter's own torch (if any) put back after."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python", "faketorch"))

    def take():
        """torch and its submodules out of sys.modules: a fresh fake's
        torch.nn must subclass its own Tensor, not an earlier fake's."""
        return {name: sys.modules.pop(name) for name in list(sys.modules)
                if name == "torch" or name.startswith("torch.")}
    saved = take()
    try:
        import torch
        yield torch
    finally:
        sys.path.pop(0)
        take()
        sys.modules.update(saved)


class Net:
    def __init__(self):
        self.kept = [Array(0x3000)]


class UnderTheShim(unittest.TestCase):
    def test_the_search_under_the_shim(self):
        """Runs this file's tests in an interpreter the shim is preloaded
        into, as a program under gpuleak is."""
        if preloaded():
            self.skipTest("already under the shim")
        self.run_under(sys.executable)

    def test_other_interpreters(self):
        """The same under each CPython 3.10 to 3.13 this machine has (the
        frames' locals are read by each version's layout)."""
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from pythons import other_pythons
        others = other_pythons()
        if preloaded() or not others:
            self.skipTest("no other CPython 3.10-3.13 here")
        for python in others:
            with self.subTest(python=python):
                self.run_under(python)

    def run_under(self, python):
        import subprocess
        env = dict(os.environ, LD_PRELOAD=SHIM)
        done = subprocess.run([python, "-m", "unittest", "-v", "test_holders.HoldersTest"],
                              cwd=os.path.dirname(os.path.abspath(__file__)), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        sys.stderr.write(done.stdout)
        self.assertEqual(done.returncode, 0, python + ":\n" + done.stdout[-4000:])


@unittest.skipUnless(preloaded(), "runs under the shim (UnderTheShim)")
class HoldersTest(unittest.TestCase):
    def test_globals_containers_attributes_closures(self):
        def make():
            stash = [Array(0x4000)]
            return lambda: stash

        class Cache:
            entries = {"a": Array(0x5000)}

        found, ending = search({"history": [Array(0x1000), Array(0x1010)],
                                "cache": {"k": (Array(0x2000),)},
                                "net": Net(), "hook": make(), "Cache": Cache},
                               [(0x1000, 16, 1), (0x1010, 16, 2), (0x2000, 8, 3),
                                (0x3000, 8, 4), (0x4000, 8, 5), (0x5000, 8, 6)])
        self.assertEqual(found[1], ("history[...]", "list", "", "train.py", False))
        self.assertEqual(found[2], found[1])
        self.assertEqual(found[3], ("cache[...]", "dict", "", "train.py", False))
        self.assertEqual(found[4], ("net.kept[...]", "list", "Net", "train.py", False))
        self.assertEqual(found[5], ("hook.<closure>.stash[...]", "list", "", "train.py", False))
        self.assertEqual(found[6], ("Cache.entries[...]", "dict", "", "train.py", False))
        self.assertEqual(ending[2], "all")

    def test_the_users_modules_before_those_the_layout_names(self):
        """A module under a folder of the interpreter's layout (an installed
        package's) is searched after the user's, wherever it stands in
        sys.modules: the user's name for an array both hold wins."""
        shared = Array(0x7000)
        made = []
        for name, path in (("gpuleak_test_pkg", "/fake/packages/pkg/__init__.py"),
                           ("gpuleak_test_mine", "/home/u/proj/mine.py")):
            module = types.ModuleType(name)
            module.__file__ = path
            module.kept = [shared]
            sys.modules[name] = module
            made.append(name)
        try:
            found, _ = search({}, [(0x7000, 8, 1)], layout="packages\t/fake/packages\n")
            self.assertEqual(found[1][3], "mine.py")
            found, _ = search({}, [(0x7000, 8, 1)])
            self.assertEqual(found[1][3], "__init__.py")  # without it, in sys.modules' order
        finally:
            for name in made:
                del sys.modules[name]

    def test_a_pointer_inside_an_allocation_is_charged_to_it(self):
        found, _ = search({"view": Array(0x1800)}, [(0x1000, 0x1000, 7), (0x3000, 16, 8)])
        self.assertEqual(found, {7: ("view", "Array", "", "train.py", False)})

    def test_shortest_name_wins(self):
        shared = Array(0x1000)
        found, _ = search({"deep": {"a": {"b": [shared]}}, "top": shared}, [(0x1000, 8, 1)])
        self.assertEqual(found[1][0], "top")

    def test_module_parts_read_as_pytorch_names_them(self):
        class Linear:
            def __init__(self):
                self._parameters = {"weight": Array(0x1000)}
                self._modules = {}

        class Model:
            def __init__(self):
                self._parameters = {}
                self._modules = {"fc": Linear()}

        found, _ = search({"model": Model()}, [(0x1000, 8, 1)])
        self.assertEqual(found[1][:3], ("model.fc.weight", "Array", "Linear"))

    def test_the_programs_code_is_not_run(self):
        Trap.ran = 0
        found, ending = search({"trap": Trap()}, [(0x9000, 8, 1)])
        self.assertEqual(Trap.ran, 0)
        self.assertEqual(found, {})
        self.assertEqual(ending[2], "done")

    def test_no_code_of_the_program_runs_through_overridden_protocols(self):
        """Containers that override iteration, classes that share the name
        of deque or of a bound method, a module with a __getattr__ (PEP 562)
        and attribute names of a str subclass: the search reads their
        contents as the base types keep them, and runs none of that code."""
        ran = []

        class Listing(list):
            def __iter__(self):
                ran.append("list.__iter__")
                return list.__iter__(self)

        class Pairs(tuple):
            def __iter__(self):
                ran.append("tuple.__iter__")
                return tuple.__iter__(self)

        class deque:  # noqa: N801  (a user's class of the same name)
            def __iter__(self):
                ran.append("deque.__iter__")
                return iter(())

        class method:  # noqa: N801
            def __getattr__(self, name):
                ran.append("method." + name)
                raise AttributeError(name)

        class Name(str):
            def __eq__(self, other):
                ran.append("Name.__eq__")
                return str.__eq__(self, other)

            __hash__ = str.__hash__

            def __radd__(self, other):
                ran.append("Name.__radd__")
                return str.__add__(other, self)

        class Holder:
            pass

        class Guarded(Array):
            def __getattribute__(self, name):
                # The property itself (the pointer's read) may run; this
                # hook around every attribute is not part of it.
                if name == "__cuda_array_interface__":
                    ran.append("Guarded." + name)
                return object.__getattribute__(self, name)

        holder = Holder()
        holder.__dict__[Name("kept")] = Array(0x3000)
        lazy = types.ModuleType("gpuleak_lazy_demo")

        def module_getattr(name):
            ran.append("module." + name)
            raise AttributeError(name)
        lazy.__getattr__ = module_getattr
        sys.modules["gpuleak_lazy_demo"] = lazy
        try:
            found, _ = search({"listing": Listing([Array(0x1000)]), "pairs": Pairs((Array(0x2000),)),
                               "d": deque(), "m": method(), "holder": holder,
                               "guarded": Guarded(0x4000)},
                              [(0x1000, 8, 1), (0x2000, 8, 2), (0x3000, 8, 3), (0x9000, 8, 4)])
        finally:
            del sys.modules["gpuleak_lazy_demo"]
        self.assertEqual(ran, [])
        self.assertEqual(found[1][0], "listing[...]")
        self.assertEqual(found[2][0], "pairs[...]")
        self.assertEqual(found[3][:3], ("holder.kept", "Array", "Holder"))

    def test_large_containers_do_not_overrun_the_budget(self):
        """Hundreds of containers at the item cap each: the budget is
        kept within a container's worth, not a batch of 256 of them."""
        import time
        shared = [object() for _ in range(100000)]
        many = [list(shared) for _ in range(300)]
        began = time.monotonic()
        _, ending = search({"many": many}, [(0x1000, 8, 1)], budget=0.05)
        self.assertEqual(ending[2], "budget")
        self.assertLess(time.monotonic() - began, 1.0)

    def test_a_failing_array_interface_is_skipped(self):
        class Broken:
            @property
            def __cuda_array_interface__(self):
                raise RuntimeError("requires grad")

        found, ending = search({"b": Broken(), "a": Array(0x1000)}, [(0x1000, 8, 1)])
        self.assertEqual(found[1][0], "a")
        self.assertEqual(ending[2], "all")

    def test_large_containers_are_searched_whole(self):
        """A program's data (a list of 50,000 small records, whose numbers
        include the arrays' addresses) does not hide the array a model
        holds, and one held inside such a list is found all the same."""
        data = [{"id": i} for i in range(50000)]

        class Model:
            def __init__(self):
                self.layers = [Array(0x1000)]

        found, ending = search({"data": data, "model": Model()}, [(0x1000, 8, 1)])
        self.assertEqual(found[1][0], "model.layers[...]")
        self.assertEqual(ending[2], "all")
        data.append({"x": Array(0x2000)})
        found, ending = search({"data": data}, [(0x2000, 8, 2)])
        self.assertEqual(found[2][0], "data[...]")

    def test_the_budget_bounds_the_search(self):
        """A million objects that hold nothing: the search stops at its
        budget and says so; with time enough, it walks them all and ends
        done, well within the default budget of a second."""
        big = [[i] for i in range(1000000)]
        found, ending = search({"big": big}, [(0x7f0000001000, 8, 1)], budget=0.005)
        self.assertEqual(found, {})
        self.assertEqual(ending[2], "budget")
        found, ending = search({"big": big}, [(0x7f0000001000, 8, 1)], budget=30)
        self.assertEqual(ending[2], "done")
        self.assertGreater(int(ending[1]), 1000000)

    def test_a_graph_s_saved_tensors_are_charged_to_its_root(self):
        with fake_torch() as torch:
            hidden = torch.empty(64)
            loss = hidden.sum()
            ptr = hidden.untyped_storage().data_ptr()
            del hidden
            found, _ = search({"losses": [loss]},
                              [(ptr, 64, 1, " t"), (loss.untyped_storage().data_ptr(), 8, 2, " t")])
            self.assertEqual(found[1], ("losses[...]", "list", "", "train.py", True))
            self.assertEqual(found[2], ("losses[...]", "list", "", "train.py", False))

    def test_a_non_leaf_tensors_grad_is_not_asked(self):
        """Reading .grad of a tensor that is not a leaf makes PyTorch print
        a warning on the program's stderr: the search asks only leaves."""
        with fake_torch() as torch:
            hidden = torch.empty(64)
            loss = hidden.sum()
            torch.Tensor.grad_warnings = 0
            found, _ = search({"losses": [loss], "hidden": hidden},
                              [(hidden.data_ptr(), 64, 1, " t"), (loss.data_ptr(), 8, 2, " t")])
            self.assertEqual(torch.Tensor.grad_warnings, 0)
            self.assertEqual(found[2][0], "losses[...]")

    def test_weights_a_graph_saved_are_named_by_their_module(self):
        """A loss's graph saves the weights it used; the model that owns
        them names them, however deep, not the graph met first."""
        with fake_torch() as torch:
            weight = torch.empty(256)
            loss = torch.Tensor(8, grad_fn=torch.Node(weight.untyped_storage(), []))
            model = types.SimpleNamespace(encoder=types.SimpleNamespace(
                block=types.SimpleNamespace(attn=types.SimpleNamespace(weight=weight))))
            ptr = weight.untyped_storage().data_ptr()
            found, _ = search({"losses": [loss], "model": model}, [(ptr, 256, 1, " t")])
            self.assertEqual(found[1][0], "model.encoder.block.attn.weight")
            self.assertFalse(found[1][4])

    def test_graphs_sharing_their_history_are_walked_once(self):
        """Losses kept from a running total share their graph's history:
        walking it once per loss was quadratic and overran the budget."""
        with fake_torch() as torch:
            node, losses, targets = None, [], []
            for i in range(3000):
                storage = torch.UntypedStorage(64)
                node = torch.Node(storage, [node] if node is not None else [])
                losses.append(torch.Tensor(8, grad_fn=node))
                targets.append((storage.data_ptr(), 64, i, " t"))
            found, ending = search({"losses": losses}, targets, budget=5.0)
            self.assertEqual(ending[2], "all")
            self.assertEqual(len(found), 3000)


    def test_every_kind_of_reference_in_a_heap_of_a_million_and_a_half(self):
        """Issue 31's four holders, in a heap of 1.5M objects: a buffer
        kept by a caught exception's traceback, by a suspended generator,
        by a __slots__ object deep in a 400k-entry dict, and by an object
        whose interface is an instance attribute. Each is named, the
        search ends within the default budget of one second (its time is
        measured by tests/bench/holders_heap.py, not here)."""
        base = 0x7f0000000000

        class Buffer:
            def __init__(self, n):
                self.ptr = base + n * 0x100000

        def step():
            act = Buffer(1)  # noqa: F841  (kept by the traceback)
            raise ValueError("skipped")

        skipped = []
        try:
            step()
        except ValueError as err:
            skipped.append(err)

        def batches():
            buf = Buffer(2)
            while True:
                yield buf.ptr

        stream = batches()
        next(stream)

        class Slot:
            __slots__ = ("payload", "n")

            def __init__(self, payload):
                self.payload, self.n = payload, 0

        table = {i: ["x%d" % i, i] for i in range(400000)}
        table["deep"] = Slot(Buffer(3))

        class Raw:
            pass

        raw = Raw()
        raw.__cuda_array_interface__ = {"data": (base + 4 * 0x100000, False), "shape": (8,),
                                        "typestr": "|u1", "version": 3}
        filler = [[i, str(i)] for i in range(1100000)]
        import gc
        self.assertGreater(len(gc.get_objects()), 1500000)
        # A fifth target nothing holds: the walk goes through the whole heap.
        targets = [(base + n * 0x100000, 4096, n) for n in (1, 2, 3, 4, 5)]
        # What is judged is what the walk names, not how fast (that is
        # tests/bench/holders_heap.py's): time enough on a loaded machine.
        found, ending = search({"skipped": skipped, "stream": stream, "table": table,
                                "raw": raw, "filler": filler}, targets, budget=30.0)
        self.assertEqual(found[1][0], "step() local act, kept by skipped[...] (an exception's traceback)")
        self.assertEqual(found[1][3], "test_holders.py")
        self.assertEqual(found[2][0], "batches() local buf, kept by stream (a suspended batches() generator)")
        self.assertEqual(found[3][:3], ("table[...].payload", "Buffer", "Slot"))
        self.assertEqual(found[4][:2], ("raw", "Raw"))
        self.assertNotIn(5, found)
        self.assertEqual(ending[2], "done")
        self.assertGreater(int(ending[1]), 1500000)

    def test_a_library_s_private_path_reads_as_the_user_s_object(self):
        """A model passed straight to a library's trainer is reached
        through the trainer's private parts: the name starts at the user's
        object (Net.kept[...]), the whole path kept beside it."""
        pkg = types.ModuleType("gpuleak_test_trainerlib")
        pkg.__file__ = "/fake/packages/trainerlib.py"
        exec("class Selector:\n    def __init__(self, model):\n        self.model = model\n"
             "class Trainer:\n    def __init__(self, model):\n        self._selector = Selector(model)\n",
             pkg.__dict__)
        sys.modules[pkg.__name__] = pkg
        try:
            net = Net()
            net.kept[0].ptr = 0x7f0000001000
            found, _ = search({"t": pkg.Trainer(net)}, [(0x7f0000001000, 8, 1)],
                              layout="packages\t/fake/packages\n")
        finally:
            del sys.modules[pkg.__name__]
        self.assertEqual(found[1][:3], ("Net.kept[...]", "list", "Net"))
        self.assertEqual(paths[1], "t._selector.model.kept[...]")

    def test_a_thread_local_attribute_is_named(self):
        import threading
        tls = threading.local()
        tls.buf = Array(0x7f0000008000)
        found, _ = search({"tls": tls}, [(0x7f0000008000, 8, 1)])
        self.assertEqual(found[1][:3], ("tls.buf", "Array", "_local"))

    def test_other_threads_frames_are_searched(self):
        import threading
        ready, done = threading.Event(), threading.Event()

        def worker():
            staged = [Array(0x7f0000002000)]  # noqa: F841
            ready.set()
            done.wait(10)

        thread = threading.Thread(target=worker)
        thread.start()
        ready.wait(10)
        try:
            found, _ = search({}, [(0x7f0000002000, 8, 1)])
        finally:
            done.set()
            thread.join()
        self.assertEqual(found[1][0], "worker() local staged[...]")

    def test_a_huge_container_costs_no_memory_of_its_size(self):
        """One list of ten million numbers (a data set's): the walk looks
        at its items a few thousand at a time; it held all their addresses
        at once before (80 MB more at the peak)."""
        import resource
        data = list(range(10000000))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        _, ending = search({"data": data}, [(0x7f0000007000, 8, 1)], budget=30)
        grew_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        self.assertEqual(ending[2], "done")
        self.assertLess(grew_kib, 40 * 1024)

    def test_the_search_keeps_nothing_alive(self):
        """The walk holds every object it met while it names them, its
        own functions among them (met through the search's closures):
        once the search returns, what the program drops is freed."""
        import weakref

        class Kept:
            pass

        kept = Kept()
        kept.array = Array(0x7f0000005000)
        alive = weakref.ref(kept)
        found, _ = search({"kept": kept}, [(0x7f0000005000, 8, 1), (0x7f0000006000, 8, 2)])
        self.assertEqual(found[1][0], "kept.array")
        del kept
        self.assertIsNone(alive())

    def test_hostile_objects_run_no_code(self):
        """A metaclass's __getattribute__, a __dict__ and a __class__
        property, a fake torch module with a __getattr__, keys with an
        __eq__, a __cuda_array_interface__ property that would never
        return: none of it runs, and the array behind them is named."""
        ran = []

        class Meta(type):
            def __getattribute__(cls, name):
                ran.append("Meta." + name)
                return type.__getattribute__(cls, name)

        class Hostile(metaclass=Meta):
            def __init__(self):
                object.__setattr__(self, "kept", Array(0x7f0000003000))

            @property
            def __dict__(self):
                ran.append("__dict__")
                return {}

            @property
            def __class__(self):
                ran.append("__class__")
                return dict

            @property
            def __cuda_array_interface__(self):
                ran.append("interface")
                while True:
                    pass

            def __getattr__(self, name):
                ran.append("getattr " + name)
                raise AttributeError(name)

        class Key(str):
            def __eq__(self, other):
                ran.append("Key.__eq__")
                return str.__eq__(self, other)
            __hash__ = str.__hash__

        fake = types.ModuleType("torch")

        def module_getattr(name):
            ran.append("torch." + name)
            raise AttributeError(name)
        fake.__getattr__ = module_getattr
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake
        try:
            found, ending = search({"h": Hostile(), "keyed": {Key("k"): Array(0x7f0000004000)}},
                                   [(0x7f0000003000, 8, 1), (0x7f0000004000, 8, 2)])
        finally:
            if saved is not None:
                sys.modules["torch"] = saved
            else:
                del sys.modules["torch"]
        self.assertEqual(ran, [])
        self.assertEqual(found[2][0], "keyed[...]")
        self.assertEqual(ending[2], "all")

    def test_roles_are_read_without_running_code(self):
        """A module's _parameters and an optimizer's state and param_groups
        that are the program's own objects (a __class__ property, a dict
        subclass whose iteration would run code): the roles are read from
        the dicts alone, nothing of the program's runs, and the tensor is
        still named and given its role."""
        ran = []

        class Sly:
            @property
            def __class__(self):
                ran.append("__class__")
                return dict

        class Loud(dict):
            def items(self):
                ran.append("items")
                return dict.items(self)

            def values(self):
                ran.append("values")
                return dict.values(self)

        with fake_torch() as torch:
            model = torch.nn.Linear(256)
            opt = torch.optim.Adam(model.parameters())
            object.__setattr__(model, "_buffers", Sly())
            model.__dict__["_parameters"] = Loud(model.__dict__["_parameters"])
            opt.state = Sly()
            opt.param_groups.append(Sly())
            weight = model.weight
            found, _ = search({"model": model, "opt": opt},
                              [(weight.data_ptr(), 256, 1, " t")])
        self.assertEqual(ran, [])
        self.assertEqual(found[1][0], "model.weight")

    def test_a_wrapper_optimizer_does_not_make_gradients_untrained(self):
        """An optimizer that wraps another and forwards its state and
        param_groups through properties (accelerate's): gradients are
        judged by the optimizers whose groups are read; with only the
        wrapper reachable, none is called untrained."""
        with fake_torch() as torch:
            class Wrapper(torch.optim.Optimizer):
                def __init__(self, inner):
                    self.inner = inner

                @property
                def param_groups(self):
                    return self.inner.param_groups

            model = torch.nn.Linear(256)
            inner = torch.optim.Adam(model.parameters())
            model.weight.grad = torch.empty(256)
            grad = model.weight.grad
            wrapped = Wrapper(inner)
            target = [(grad.data_ptr(), 256, 1, " t")]
            found, _ = search({"model": model, "opt": wrapped}, target)
            self.assertEqual(found[1][0], "model.weight.grad")
            role = [line for line in self.last_answer().split("\n") if line.startswith("1\t")][0].split("\t")[7]
            self.assertEqual(role, "gradient")
            del wrapped.inner
            search({"model": model, "opt": wrapped}, target)
            role = [line for line in self.last_answer().split("\n") if line.startswith("1\t")][0].split("\t")[7]
            self.assertEqual(role, "gradient")

    def test_a_module_s_odd_keys_do_not_end_the_search(self):
        """A parameter kept under a key that is no str (a program's own
        _parameters): the search still ends well, and names the tensor by
        the path that met it."""
        with fake_torch() as torch:
            model = torch.nn.Linear(256)
            extra = torch.nn.Parameter(512)
            model.__dict__["_parameters"][7] = extra
            found, ending = search({"model": model}, [(extra.data_ptr(), 512, 1, " t")])
        self.assertEqual(ending[2], "all")
        self.assertIn(1, found)

    def last_answer(self):
        return answers[-1]


if __name__ == "__main__":
    unittest.main()
