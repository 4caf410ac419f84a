# holders.py: who keeps device memory alive, asked of the watched program's
# own interpreter. libgpuleak.so embeds this file (shim/embedded_py.S) and
# runs it from an atexit callback, with the GIL held, after the program's
# own atexit callbacks and before module teardown frees its globals
# (shim/finish.c).
#
# find(targets, budget_s, layout) walks down from the program's names (the
# main module's globals first, then the user's other modules, then daemon
# threads' locals, then the modules of the standard library and installed
# packages: those under a folder layout names, layout.py's answer; without
# it every module is searched as the user's), breadth
# first so each allocation gets its shortest name, and matches every object
# that exposes a device pointer (a PyTorch tensor's storage,
# __cuda_array_interface__) against targets: "start size id" lines, sorted
# by start, one per live allocation. For a tensor with an autograd graph,
# the graph's saved tensors are charged to "the autograd graph of" that
# tensor's name.
#
# It returns one line per allocation found:
#   id \t graph(0|1) \t expression \t type \t owner type \t file
# and a last line "#\tobjects looked at\thow it ended" (done: everything
# reachable was seen; all: every target was named first; budget: the time
# ran out; error).
#
# Rules it keeps: never runs the program's code beyond reading a device
# pointer (no properties, no __getattr__: attributes come from __dict__),
# never raises, stops at the time budget or once every target is named,
# and keeps no reference after it returns.
import sys


def find(targets, budget, layout=""):
    import time
    from bisect import bisect_right
    from collections import deque
    from itertools import islice

    deadline = time.monotonic() + budget
    starts, ends, ids = [], [], []
    for line in targets.split("\n"):
        if line:
            start, size, ident = line.split()
            starts.append(int(start))
            ends.append(int(start) + int(size))
            ids.append(int(ident))
    named = {}
    out = []

    # The base types' own iterators: a subclass's __iter__ is the
    # program's code, and a user's class may be named deque or method.
    sequences = ((list, list.__iter__), (tuple, tuple.__iter__), (set, set.__iter__),
                 (frozenset, frozenset.__iter__), (deque, deque.__iter__))
    method_type = type(find.__get__(0))

    def plain(name):
        """name as an exact str: a subclass's __eq__, __radd__ or __str__
        would run the program's code."""
        return str.__str__(name) if isinstance(name, str) else None

    torch = sys.modules.get("torch")
    tensor_type = getattr(torch, "Tensor", None) if torch is not None else None
    module_type = type(sys)
    function_type = type(find)

    exposing = {}

    def device_pointer(obj, kind):
        """The device address obj's memory starts at, or None."""
        try:
            if tensor_type is not None and issubclass(kind, tensor_type):
                if not obj.is_cuda:
                    return None
                # data_ptr(), never untyped_storage(): a storage's Python
                # object, once made, keeps its memory past module teardown
                # (PyTorch 2.11 preserves it), so the search made every
                # tensor it named outlive the program's finish. A view's
                # pointer lies inside its storage's allocation all the same.
                return obj.data_ptr()
            if kind not in exposing:
                # Looked up in the classes' dicts and read through its
                # descriptor: hasattr would run a metaclass's __getattr__,
                # and obj.__cuda_array_interface__ the class's own
                # __getattribute__, both the program's code.
                exposing[kind] = next(
                    (type.__getattribute__(c, "__dict__")["__cuda_array_interface__"]
                     for c in type.__getattribute__(kind, "__mro__")
                     if "__cuda_array_interface__" in type.__getattribute__(c, "__dict__")), None)
            exposes = exposing[kind]
            if exposes is not None:
                get = getattr(type(exposes), "__get__", None)
                interface = get(exposes, obj, kind) if get is not None else exposes
                return interface["data"][0]
        except Exception:
            pass
        return None

    def note(pointer, holder, graph):
        """Charges the allocation that holds pointer to holder, if it is
        one of the targets and not named yet."""
        if not isinstance(pointer, int):
            return
        i = bisect_right(starts, pointer) - 1
        if i < 0 or pointer >= ends[i] or ids[i] in named:
            return
        named[ids[i]] = 1
        expr, tname, owner, file = holder
        out.append("%d\t%d\t%s\t%s\t%s\t%s" % (ids[i], graph, expr, tname, owner, file))

    saved_names = {}
    # Nodes walked, for every graph: the graphs of losses summed into a
    # running total share their history, walked once, not once per loss.
    seen = set()

    def graph_pointers(root):
        """The device pointers of the tensors root's autograd graph saved
        that no graph walked before saved."""
        try:
            node = root.grad_fn
        except Exception:
            return
        todo = [node]
        while todo and time.monotonic() < deadline:
            node = todo.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            kind = type(node)
            names = saved_names.get(kind)
            if names is None:
                try:
                    names = [n for n in dir(kind) if n.startswith("_saved_")]
                except Exception:
                    names = []
                saved_names[kind] = names
            for name in names:
                try:
                    value = getattr(node, name)
                except Exception:
                    continue
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    if tensor_type is not None and isinstance(item, tensor_type) and item.is_cuda:
                        try:
                            yield item.data_ptr()
                        except Exception:
                            pass
            try:
                todo.extend(fn for fn, _ in node.next_functions)
            except Exception:
                pass

    # nn.Module keeps its parts in these dicts; a path through them reads as
    # PyTorch names parameters (model.fc.weight).
    module_dicts = ("_modules", "_parameters", "_buffers")

    def steps(obj, kind):
        """(child, step, is_attribute) for the objects obj refers to by a
        name or an index, without running the program's code. An
        attribute's owner type is part of its holder's description."""
        if issubclass(kind, dict):
            for _, value in list(islice(dict.items(obj), ITEMS)):
                yield value, "[...]", False
        elif issubclass(kind, (list, tuple, set, frozenset, deque)):
            iterate = next(it for base, it in sequences if issubclass(kind, base))
            for value in list(islice(iterate(obj), ITEMS)):
                yield value, "[...]", False
        elif issubclass(kind, function_type):
            cells = obj.__closure__ or ()
            for name, cell in zip(obj.__code__.co_freevars, cells):
                try:
                    yield cell.cell_contents, ".<closure>." + name, False
                except ValueError:
                    pass
        elif issubclass(kind, type):
            for name, value in list(vars(obj).items()):
                if not name.startswith("__"):
                    yield value, "." + name, False  # Class.name says it all
        elif not issubclass(kind, module_type):
            try:
                attrs = object.__getattribute__(obj, "__dict__")
            except Exception:
                attrs = None
            if type(attrs) is dict:
                for name, value in list(islice(dict.items(attrs), ITEMS)):
                    name = plain(name)
                    if name in module_dicts and isinstance(value, dict):
                        for key, part in list(islice(dict.items(value), ITEMS)):
                            key = plain(key)
                            if key is not None:
                                yield part, "." + key, True
                    elif name is not None:
                        yield value, "." + name, True
            if kind is method_type:
                yield obj.__self__, ".__self__", True

    # A container is looked into this far: a list of ten million numbers
    # must not eat the budget.
    ITEMS = 100000
    # A container of more items than this is walked after everything else.
    LARGE = 4096
    CHILDREN = 4096

    atoms = (int, float, complex, str, bytes, bool, type(None), range, module_type)

    visited = set()
    queue = deque()
    # Tensors with a graph, whose saved tensors are charged once the names
    # are walked: a loss's graph saves the weights it used, which the model
    # names (model.fc.weight) however deep they sit.
    graphs = deque()
    waiting = []       # large containers put off (walk)
    postponed = set()  # their ids, so that each waits once

    def large(obj, kind):
        """A container of more than LARGE items."""
        try:
            if issubclass(kind, dict):
                return dict.__len__(obj) > LARGE
            if issubclass(kind, (list, tuple)):
                return (list.__len__ if issubclass(kind, list) else tuple.__len__)(obj) > LARGE
            if issubclass(kind, (set, frozenset)):
                return (set.__len__ if issubclass(kind, set) else frozenset.__len__)(obj) > LARGE
        except Exception:
            pass
        return False

    def push(obj, expr, holder_type, owner, file):
        """Queues obj, met first by expr: breadth first, the first meeting
        is the shortest name, so a device array is named here at once (a
        program's many small objects queued before it need not be walked
        first for the search to end)."""
        kind = type(obj)
        if issubclass(kind, atoms) or id(obj) in visited:
            return
        visited.add(id(obj))
        pointer = device_pointer(obj, kind)
        if pointer is not None:
            note(pointer, (expr, holder_type, owner, file), 0)
        queue.append((obj, expr, holder_type, owner, file, pointer))

    def walk():
        """Empties the queue: "done", or "all" once every target is
        named, or "budget" when the time ran out first."""
        while queue or waiting:
            if not queue:
                queue.extend(waiting)
                waiting.clear()
            if len(named) == len(ids):
                return "all"
            # Checked for every object, and within one every CHILDREN
            # children below: one object may have ITEMS of them, and a
            # batch of such objects would overrun the budget by seconds.
            if time.monotonic() > deadline:
                return "budget"
            entry = queue.popleft()
            obj, expr, holder_type, owner, file, pointer = entry
            kind = type(obj)
            # A large container (a dataset, a cache of numbers) waits until
            # the rest is walked: device memory is rarely in one, and its
            # many items would be walked first otherwise. Its items then
            # come last, as the queue empties.
            if pointer is None and id(obj) not in postponed and large(obj, kind):
                postponed.add(id(obj))
                waiting.append(entry)
                continue
            if pointer is not None:
                holder = (expr, holder_type, owner, file)
                if tensor_type is not None and issubclass(kind, tensor_type):
                    try:
                        grad = obj.grad
                    except Exception:
                        grad = None
                    if grad is not None:
                        note(device_pointer(grad, type(grad)),
                             (expr + ".grad", type(grad).__name__, owner, file), 0)
                    graphs.append((obj, holder))
                continue
            try:
                for count, (child, step, is_attribute) in enumerate(steps(obj, kind), 1):
                    if count % CHILDREN == 0 and time.monotonic() > deadline:
                        return "budget"
                    if step == "[...]" and expr.endswith("[...]"):
                        child_expr, child_type, child_owner = expr, holder_type, owner
                    elif step == "[...]":
                        child_expr, child_type, child_owner = expr + step, holder_type, owner
                    else:
                        child_expr = expr + step
                        child_type = type(child).__name__
                        child_owner = kind.__name__ if is_attribute else owner
                    push(child, child_expr, child_type, child_owner, file)
            except Exception:
                pass
        return "all" if len(named) == len(ids) else "done"

    def walk_graphs():
        """Charges what the graphs met so far saved to their roots."""
        while graphs:
            obj, holder = graphs.popleft()
            for p in graph_pointers(obj):
                note(p, holder, 1)
            if time.monotonic() > deadline:
                return "budget"
        return "all" if len(named) == len(ids) else "done"

    def module_file(module):
        """The module's file name. CPython deletes the main module's
        __file__ once the script has run, so there it is the script's."""
        try:
            attrs = module_attrs(module)
            spec = attrs.get("__spec__")
            path = (attrs.get("__file__") or getattr(spec, "origin", None)
                    or (sys.argv[0] if module is sys.modules.get("__main__") else None))
            return path.rsplit("/", 1)[-1] if path else module.__name__
        except Exception:
            return "?"

    def module_attrs(module):
        """A module's namespace, read without getattr: a module's
        __getattr__ (PEP 562) runs for each name it lacks."""
        attrs = module_type.__dict__["__dict__"].__get__(module)
        return attrs if type(attrs) is dict else {}

    def roots():
        """Groups of (module, file): the main module, the user's modules,
        then the libraries' (those under a folder of layout's)."""
        libs = tuple(line.partition("\t")[2] + "/" for line in layout.split("\n") if line)
        main = sys.modules.get("__main__")
        user, other = [], []
        for name, module in list(sys.modules.items()):
            if module is None or module is main or type(module) is not module_type:
                continue
            path = module_attrs(module).get("__file__") or ""
            path = plain(path) or ""
            if path and not path.startswith(libs) and name != "gpuleak":
                user.append(module)
            else:
                other.append(module)
        return ([main] if main is not None else []), user, other

    def push_module(module):
        file = module_file(module)
        for name, value in list(module_attrs(module).items()):
            name = plain(name)
            if name is not None and not name.startswith("__"):
                push(value, name, type(value).__name__, "", file)

    def push_threads():
        import threading
        me = threading.get_ident()
        for ident, frame in list(sys._current_frames().items()):
            if ident == me:
                continue
            while frame is not None:
                file = frame.f_code.co_filename.rsplit("/", 1)[-1]
                where = frame.f_code.co_name
                try:
                    names = list(frame.f_locals.items())
                except Exception:
                    names = []
                for name, value in names:
                    push(value, where + "()." + name, type(value).__name__, "", file)
                frame = frame.f_back

    ended = "done"
    try:
        main, user, other = roots()
        for group in (main, user, None, other):
            if group is None:
                push_threads()
            else:
                for module in group:
                    push_module(module)
            ended = walk()
            if ended == "done":
                ended = walk_graphs()
            if ended != "done":
                break
    except Exception:
        ended = "error"
    out.append("#\t%d\t%s" % (len(visited), ended))
    return "\n".join(out)
