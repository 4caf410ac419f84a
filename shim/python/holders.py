# holders.py: who keeps device memory alive, asked of the watched program's
# own interpreter. libgpuleak.so embeds this file (shim/embedded_py.S) and
# runs it from an atexit callback, with the GIL held, after the program's
# own atexit callbacks and before module teardown frees its globals
# (shim/finish.c); the gpuleak Python package runs it on request.
#
# find(targets, budget_s, layout, walker) walks the heap breadth first with
# walker, the shim's C walk over the objects' own traversal (shim/refwalk.h),
# from the program's names: the main module's globals, then the user's
# other modules, then every thread's frames, then the modules of the
# standard library and installed packages (those under a folder layout
# names, layout.py's answer), then any object no name reaches (garbage not
# collected yet, objects held from C). The first meeting is the shortest
# name. It matches the objects that expose device memory against targets:
# "start size id [t]" lines sorted by start, one per live allocation (t:
# PyTorch's memory, a tensor's or its allocator's segment). Device
# memory is seen as a PyTorch tensor's data_ptr(), a C-level
# __cuda_array_interface__ (CuPy), a ctypes number, or any int kept by an
# object whose value lies inside an allocation (Numba's and hand-made
# arrays, an interface set on the instance). For a tensor with an autograd
# graph, the graph's saved tensors are charged to "the autograd graph of"
# that tensor's name.
#
# It returns one line per allocation found:
#   id \t graph(0|1) \t expression \t type \t owner type \t file \t path
# (path: the full path from a name when the expression starts at an
# object's type instead, else empty) and a last line
#   "#\tobjects looked at\thow it ended"
# (done: everything reachable was seen; all: every target was named first;
# budget: the time ran out; error).
#
# Rules it keeps: it never runs the program's code (no properties, no
# __getattr__, no __eq__, no imports beyond the interpreter's built-in
# modules: what it reads comes from the traversal, the base types' own
# methods and descriptors of C types), never raises, stops at the time
# budget or once every target is named, and keeps no reference after it
# returns.
import sys


def find(targets, budget, layout="", walker=None, moment="exit"):
    import gc  # built into the interpreter: never a file of the program's
    import time

    began = time.monotonic()
    deadline = began + budget
    starts, ends, ids, tensors = [], [], [], []
    for line in targets.split("\n"):
        if line:
            fields = line.split()
            start, size = int(fields[0]), int(fields[1])
            starts.append(start)
            ends.append(start + size)
            ids.append(int(fields[2]))
            tensors.append(fields[3:] == ["t"])
    # A free-threaded build's objects have another header: the walker
    # reads an object's type where the default build keeps it.
    if walker is None or not ids or "t" in getattr(sys, "abiflags", ""):
        return "#\t0\t%s" % ("all" if not ids else "error")
    walk, up, count, close, fast_locals = walker
    lo, hi = starts[0], max(ends)
    named = {}  # target index -> (node, suffix, graph)

    type_mro = type.__dict__["__mro__"].__get__
    type_dict = type.__dict__["__dict__"].__get__
    type_name = type.__dict__["__name__"].__get__
    module_type = type(sys)
    module_dict = module_type.__dict__["__dict__"].__get__
    getset_type = type(type.__dict__["__dict__"])
    member_type = type(type.__dict__["__weakrefoffset__"])
    function_type = type(find)
    method_type = type(find.__get__(0))

    def plain(name):
        """name as an exact str: a subclass's __eq__ or __str__ would run
        the program's code."""
        return str.__str__(name) if issubclass(type(name), str) else None

    def attrs_of(module):
        """A module's namespace, read without getattr (a module's
        __getattr__, PEP 562, is the program's code)."""
        try:
            attrs = module_dict(module)
        except Exception:
            return {}
        return attrs if type(attrs) is dict else {}

    def base_get(cls, name, obj):
        """obj's name as the base class cls defines it (a C descriptor)."""
        return type_dict(cls)[name].__get__(obj)

    def lookup(kind, name):
        """name's entry in the first class of kind's MRO that has it."""
        for c in type_mro(kind):
            d = type_dict(c)
            if name in d:
                return d[name]
        return None

    def own_dict(obj):
        """obj's instance dict, read through the interpreter's own
        descriptor only: a __dict__ property is the program's code."""
        desc = lookup(type(obj), "__dict__")
        if type(desc) is not getset_type and type(desc) is not member_type:
            return None
        try:
            d = desc.__get__(obj)
        except Exception:
            return None
        return d if type(d) is dict else None

    def read(obj, desc):
        """A class attribute's value for obj: a C descriptor's read, a
        plain value as it is; None for Python code (a property)."""
        if type(desc) in (getset_type, member_type):
            return desc.__get__(obj, type(obj))
        if type(desc) is function_type or desc is None:
            return None
        return desc

    # PyTorch, as loaded: its tensor type and what a tensor is asked
    # through (the base type's own descriptors, never a subclass's).
    torch = sys.modules.get("torch")
    torch_attrs = attrs_of(torch) if type(torch) is module_type else {}
    tensor_type = torch_attrs.get("Tensor")
    if not isinstance(tensor_type, type):
        tensor_type = None
    tensor_reads = {}
    if tensor_type is not None:
        for name in ("is_cuda", "data_ptr", "grad", "grad_fn", "is_leaf"):
            tensor_reads[name] = lookup(tensor_type, name)
    torch_c = torch_attrs.get("_C")
    plain_tensors = attrs_of(torch_c).get("DisableTorchFunctionSubclass") \
        if type(torch_c) is module_type else None

    def tensor_read(obj, name):
        """A tensor's is_cuda, data_ptr(), grad or grad_fn, read through
        torch.Tensor's own definition (PyTorch's code), never a
        subclass's."""
        desc = tensor_reads.get(name)
        if desc is None:
            d = own_dict(obj)
            return d.get(name) if d is not None else None
        if name == "data_ptr":
            return desc(obj)
        get = lookup(type(desc), "__get__")
        return get(desc, obj, type(obj)) if get is not None else desc

    ctypes_module = sys.modules.get("_ctypes")
    simple_cdata = attrs_of(ctypes_module).get("_SimpleCData") \
        if type(ctypes_module) is module_type else None

    def classify(kind):
        """1: a tensor; 2: a C-level __cuda_array_interface__; 3: a
        ctypes number; 0: nothing to read (its numbers are still matched)."""
        mro = type_mro(kind)
        if tensor_type is not None and tensor_type in mro:
            return 1
        desc = lookup(kind, "__cuda_array_interface__")
        if type(desc) in (getset_type, member_type):
            return 2
        if simple_cdata is not None and simple_cdata in mro and kind is not simple_cdata:
            return 3
        return 0

    def target(pointer):
        """The index of the target pointer lies in, or -1."""
        if type(pointer) is not int or pointer < lo or pointer >= hi:
            return -1
        a, b = 0, len(starts)
        while a < b:
            m = (a + b) // 2
            if starts[m] <= pointer:
                a = m + 1
            else:
                b = m
        i = a - 1
        return i if i >= 0 and pointer < ends[i] else -1

    def note(pointer, node, suffix, graph, numbers=False):
        """Charges the target pointer lies in to node, if not named yet. A
        bare number never names tensor memory: PyTorch keeps no address
        as a Python int, a program's own tables might."""
        i = target(pointer)
        if i >= 0 and i not in named and not (numbers and tensors[i]):
            named[i] = (node, suffix, graph)

    graphs = []

    def look(found):
        """Matches what a walk found against the targets, in the order met."""
        guard = plain_tensors() if plain_tensors is not None else None
        if guard is not None:
            guard.__enter__()
        try:
            for kind, node, obj in found:
                try:
                    if kind == -1:
                        holder = holder_of(node)
                        if holder is not None:
                            note(obj, holder, "", 0, numbers=not declares(up(holder)[0]))
                    elif kind == 1:
                        if not tensor_read(obj, "is_cuda"):
                            continue
                        note(tensor_read(obj, "data_ptr"), node, "", 0)
                        # Only a leaf has a gradient of its own; asking a
                        # non-leaf for it makes PyTorch print a warning.
                        grad = tensor_read(obj, "grad") if tensor_read(obj, "is_leaf") is not False \
                            else None
                        if grad is not None and tensor_read(grad, "is_cuda"):
                            note(tensor_read(grad, "data_ptr"), node, ".grad", 0)
                        graphs.append((obj, node))
                    elif kind == 2:
                        interface = read(obj, lookup(type(obj), "__cuda_array_interface__"))
                        data = dict.get(interface, "data") if type(interface) is dict else None
                        if type(data) is tuple and data:
                            note(data[0], node, "", 0)
                    elif kind == 3:
                        note(read(obj, lookup(simple_cdata, "value")), node, "", 0)
                except Exception:
                    pass
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)

    saved_names = {}
    walked_nodes = set()  # graph nodes walked: summed losses share history

    def walk_graphs():
        """Charges the tensors each graph met so far saved to its root."""
        while graphs:
            root, node = graphs.pop(0)
            try:
                todo = [tensor_read(root, "grad_fn")]
            except Exception:
                continue
            while todo:
                if time.monotonic() > deadline:
                    return "budget"
                fn = todo.pop()
                if fn is None or id(fn) in walked_nodes:
                    continue
                walked_nodes.add(id(fn))
                kind = type(fn)
                names = saved_names.get(kind)
                if names is None:
                    try:
                        names = [n for n in dir(kind) if n.startswith("_saved_")]
                    except Exception:
                        names = []
                    saved_names[kind] = names
                for name in names:
                    try:
                        value = getattr(fn, name)
                    except Exception:
                        continue
                    for item in value if type(value) in (tuple, list) else (value,):
                        try:
                            if tensor_type is not None and tensor_type in type_mro(type(item)) \
                                    and tensor_read(item, "is_cuda"):
                                note(tensor_read(item, "data_ptr"), node, "", 1)
                        except Exception:
                            pass
                try:
                    todo.extend(f for f, _ in fn.next_functions)
                except Exception:
                    pass
        return "done"

    containers = (dict, list, tuple, set, frozenset)

    def declares(obj):
        """Whether obj says it is a device array (an interface on its class
        or on itself): then its numbers may name any memory, PyTorch's
        too."""
        if lookup(type(obj), "__cuda_array_interface__") is not None:
            return True
        d = own_dict(obj)
        return d is not None and "__cuda_array_interface__" in d

    def holder_of(node):
        """The object a number belongs to: past the containers that carry
        it (an interface's dict and tuple, an instance's dict). None when
        no object of a class carries it (a table of numbers, a list of
        addresses, a frame's local): a number does not keep memory alive,
        an array object may."""
        while True:
            obj, parent = up(node)
            if not issubclass(type(obj), containers):
                return node if origin(type(obj)) != "builtin" else None
            if parent < 0:
                return None
            node = parent

    # -- naming ---------------------------------------------------------
    libs = tuple(line.partition("\t")[2] + "/" for line in layout.split("\n") if line)
    main = sys.modules.get("__main__")

    def module_file(module):
        """The module's file name. CPython deletes the main module's
        __file__ once the script has run, so there it is the script's."""
        attrs = attrs_of(module)
        path = plain(attrs.get("__file__"))
        if path is None:
            spec = attrs.get("__spec__")
            path = plain(own_dict(spec).get("origin")) if own_dict(spec) is not None else None
        if path is None and module is main and sys.argv:
            path = plain(sys.argv[0])
        return path.rsplit("/", 1)[-1] if path else (plain(attrs.get("__name__")) or "?")

    def is_library_path(path):
        return bool(path) and path.startswith(libs)

    origins = {}

    def origin(kind):
        """'user', 'library' or 'builtin': where the class kind was written."""
        got = origins.get(kind)
        if got is None:
            got = "builtin"
            try:
                name = plain(type_dict(kind).get("__module__"))
                module = sys.modules.get(name) if name and name != "builtins" else None
                if module is main and name is not None:
                    got = "user"
                elif type(module) is module_type:
                    path = plain(attrs_of(module).get("__file__")) or ""
                    got = "library" if not path or is_library_path(path) else "user"
            except Exception:
                pass
            origins[kind] = got
        return got

    reverse = {}  # id(dict) -> {id(value): key}

    def key_of(d, child):
        table = reverse.get(id(d))
        if table is None:
            table = {}
            for k, v in dict.items(d):
                table.setdefault(id(v), k)
            reverse[id(d)] = table
        k = table.get(id(child))
        return plain(k) if k is not None else None

    version = sys.version_info[:2]
    in_place = 0 if (3, 11) <= version <= (3, 13) else 1 if version == (3, 10) else None
    cell_type = type((lambda: in_place).__closure__[0])

    def frame_locals(frame):
        """A frame's bound locals as (name, value), read in place where the
        walker can (reading frame.f_locals would make the frame keep a
        copy of them: objects the program deletes would live on)."""
        code = frame.f_code
        if in_place is not None:
            names = code.co_varnames
            return [(plain(names[i]), value)
                    for i, value in fast_locals(frame, len(names), in_place)]
        return [(plain(name), value) for name, value in dict.items(dict(frame.f_locals))]

    def local_name(frame, child):
        try:
            for name, value in frame_locals(frame):
                if value is child or type(value) is cell_type and value.cell_contents is child:
                    return name
        except Exception:
            pass
        return None

    def code_name(code):
        """Net.forward, or step for a function nested in another."""
        try:
            return code.co_qualname.rsplit("<locals>.", 1)[-1]
        except AttributeError:
            return code.co_name

    frame_type = type(sys._getframe())
    thread_module = sys.modules.get("_thread")  # built in, always there
    local_type = attrs_of(thread_module).get("_local") if type(thread_module) is module_type else None

    def thread_local(obj):
        """Whether obj is a threading.local, whose attributes live in one
        dict per thread, reached by its traversal, not by __dict__."""
        return isinstance(local_type, type) and local_type in type_mro(type(obj))

    def suspended(obj):
        """(what, frame) for a generator, coroutine or async generator."""
        kind = type(obj)
        for attr, what in (("gi_frame", "generator"), ("cr_frame", "coroutine"),
                           ("ag_frame", "async generator")):
            desc = lookup(kind, attr)
            if type(desc) is getset_type or type(desc) is member_type:
                return what, desc.__get__(obj)
        return None

    def edge(parent, child, chain, i):
        """How parent refers to child, as a token (None: nothing to add)."""
        kind = type(parent)
        if issubclass(kind, dict):
            owner = chain[i - 1] if i > 0 else None
            # A threading.local keeps a dict of its threads' namespaces:
            # that level has no name, the namespace's keys are attributes.
            if owner is not None and thread_local(owner) and type(child) is dict:
                return None
            if i > 1 and thread_local(chain[i - 2]) and type(owner) is dict:
                owner = chain[i - 2]
            key = key_of(parent, child)
            if owner is not None and not issubclass(type(owner), containers):
                if issubclass(type(owner), type):
                    return ("class", type_name(owner), key or "?")
                if own_dict(owner) is parent or thread_local(owner):
                    return ("attr", key or "?", type_name(type(owner)))
            return ("item", key)
        if issubclass(kind, (list, tuple, set, frozenset)) or type_name(kind) == "deque":
            if i > 0 and type(chain[i - 1]) is function_type and parent is chain[i - 1].__closure__:
                return None  # the closure's token names the variable
            return ("item", None)
        if thread_local(parent) and type(child) is dict:
            return None  # a thread's namespace of it: its keys are the attributes
        if kind is frame_type:
            if child is parent.f_back:
                return ("ref", "caller")
            name = local_name(parent, child)
            if name is not None:
                return ("local", code_name(parent.f_code), name, parent.f_code.co_filename)
            return ("ref", "frame")
        if type_name(kind) == "traceback":
            return ("traceback",) if child is parent.tb_frame else None
        if kind is function_type:
            if child is parent.__closure__:
                return ("closure", parent, chain[i + 2] if i + 2 < len(chain) else None)
            return ("attr", "__defaults__", "function") if child is parent.__defaults__ else None
        if type_name(kind) == "cell":
            return None
        if kind is method_type:
            return ("attr", "__self__", "method") if child is parent.__self__ else None
        if issubclass(kind, type):
            # Its namespace (the class token names what is in it) or its
            # bases and MRO.
            return None if type(child) is dict else ("ref", type_name(type(child)))
        if issubclass(kind, BaseException):
            if any(child is base_get(BaseException, name, parent)
                   for name in ("__traceback__", "__context__", "__cause__")):
                return ("exception",)
        gen = suspended(parent)
        if gen is not None and gen[1] is not None and child is gen[1]:
            # 3.10: a generator's frame is an object of its own.
            return ("generator", gen[0], code_name(gen[1].f_code))
        if gen is not None and gen[1] is not None:
            name = local_name(gen[1], child)
            if name is not None:
                return ("suspended", gen[0], code_name(gen[1].f_code), name,
                        gen[1].f_code.co_filename)
        if child is kind:
            return ("type", type_name(kind))
        d = own_dict(parent)
        if d is not None and child is d:
            return None  # the instance's dict: its keys are the attributes
        if d is not None:
            key = key_of(d, child)
            if key is not None:
                return ("attr", key, type_name(kind))
        for c in type_mro(kind):
            for name, desc in list(type_dict(c).items()):
                if type(desc) is member_type:
                    try:
                        if desc.__get__(parent) is child:
                            return ("attr", plain(name), type_name(kind))
                    except Exception:
                        pass
        return ("ref", type_name(type(child)))

    module_parts = ("_modules", "_parameters", "_buffers")

    def compose(tokens, expr, holder_type, owner, file):
        kept_by = None
        via_traceback = False
        via_generator = None
        last_attr = None
        for token, child in tokens:
            what = token[0] if token is not None else None
            if what is None:
                continue
            if what == "item":
                if last_attr in module_parts and token[1] is not None:
                    expr = expr[:-len(last_attr) - 1] + "." + token[1]
                    holder_type = type_name(type(child))
                elif not expr.endswith("[...]"):
                    expr += "[...]"
                last_attr = None
                continue
            last_attr = None
            if what == "attr":
                expr += "." + token[1]
                holder_type, owner = type_name(type(child)), token[2]
                last_attr = token[1]
            elif what == "class":
                expr, holder_type, owner = token[1] + "." + token[2], type_name(type(child)), ""
            elif what == "type":
                expr, holder_type, owner = token[1], "type", ""
            elif what == "closure":
                function, cell = token[1], token[2]
                name = "?"
                try:
                    for free, c in zip(function.__code__.co_freevars, function.__closure__):
                        if c is cell:
                            name = free
                except Exception:
                    pass
                expr += ".<closure>." + name
                try:
                    holder_type = type_name(type(cell.cell_contents))
                except Exception:
                    pass
            elif what == "traceback":
                via_traceback = True
            elif what == "generator":
                via_generator = "a suspended %s() %s" % (token[2], token[1])
            elif what == "exception":
                pass
            elif what == "local":
                if kept_by is None and expr:
                    kept_by = (expr, via_generator or ("an exception's traceback" if via_traceback
                                                       else "a frame"))
                expr, holder_type, owner = token[1] + "() local " + token[2], type_name(type(child)), ""
                file = token[3].rsplit("/", 1)[-1]
            elif what == "suspended":
                if kept_by is None:
                    kept_by = (expr, "a suspended %s() %s" % (token[2], token[1]))
                expr, holder_type, owner = token[2] + "() local " + token[3], type_name(type(child)), ""
                file = token[4].rsplit("/", 1)[-1]
            elif what == "ref":
                expr += ".<%s>" % token[1]
        if kept_by is not None:
            expr += ", kept by %s (%s)" % kept_by
        return expr, holder_type, owner, file

    roots = {}  # root node -> (name, file, holder type)
    answers = {}  # (node, suffix) -> answer fields

    def name_of(node, suffix):
        got = answers.get((node, suffix))
        if got is not None:
            return got
        chain, root, n = [], node, node
        while n >= 0:
            obj, parent = up(n)
            chain.append(obj)
            root, n = n, parent
        chain.reverse()
        label = roots.get(root)
        if label is None:
            kind = type_name(type(chain[0]))
            label = (kind + " (no name reaches it)", "?", kind)
        expr, file, holder_type = label
        tokens = []
        for i in range(len(chain) - 1):
            try:
                token = edge(chain[i], chain[i + 1], chain, i)
            except Exception:
                token = ("ref", "?")
            tokens.append((token, chain[i + 1]))
        whole = compose(tokens, expr, holder_type, "", file)
        # A name that runs through a library's private parts reads as the
        # user's object (or the library's) that holds it, the path kept.
        def owner_at(i):
            """The object whose attribute tokens[i] reads (past its dict)."""
            if i > 0 and type(chain[i]) is dict and not issubclass(type(chain[i - 1]), containers):
                return chain[i - 1]
            return chain[i]

        private = -1
        for i, (token, _) in enumerate(tokens):
            if token is not None and token[0] == "attr" and token[1].startswith("_") \
                    and not token[1].startswith("__") and token[1] not in module_parts \
                    and origin(type(owner_at(i))) == "library":
                private = i
        path = ""
        if private >= 0:
            start = next((j for j in range(private + 1, len(chain))
                          if origin(type(chain[j])) == "user"), None)
            if start is not None:
                short = compose(tokens[start:], type_name(type(chain[start])),
                                type_name(type(chain[start])), "", whole[3])
            else:
                owner = type_name(type(owner_at(private)))
                short = compose(tokens[private:], owner, owner, "", whole[3])
            path = whole[0]
            whole = short
        expr, holder_type, owner, file = whole
        got = (expr + suffix, holder_type if not suffix else "Tensor", owner, file, path)
        answers[(node, suffix)] = got
        return got

    # -- the roots, group by group --------------------------------------
    def module_roots(modules):
        objs, labels = [], []
        for module in modules:
            file = module_file(module)
            for name, value in list(dict.items(attrs_of(module))):
                name = plain(name)
                if name is not None and not name.startswith("__"):
                    objs.append(value)
                    labels.append((name, file, type_name(type(value))))
        return objs, labels

    me = sys._getframe().f_globals

    def thread_roots():
        objs, labels = [], []
        for _, frame in list(sys._current_frames().items()):
            while frame is not None:
                if frame.f_globals is not me:
                    code = frame.f_code
                    file = code.co_filename.rsplit("/", 1)[-1]
                    try:
                        local = frame_locals(frame)
                    except Exception:
                        local = []
                    for name, value in local:
                        objs.append(value)
                        labels.append(("%s() local %s" % (code_name(code), name), file,
                                       type_name(type(value))))
                frame = frame.f_back
        return objs, labels

    heap = []  # gc.get_objects()'s list, once made

    def exception_roots():
        """While the program runs (an OOM, a report on request): the
        exception the main thread is handling; its traceback's frames hold
        the memory of the step that failed. (The last one no code caught
        is sys.last_value: a library module's name.)"""
        objs, labels = [], []
        if moment != "exit":
            handled = sys.exc_info()[1]
            if handled is not None:
                objs.append(handled)
                labels.append(("the exception being handled", "?", type_name(type(handled))))
        return objs, labels

    def unnamed_roots():
        """Every object the collector tracks: those no name reached are
        roots of their own, named by their type (name_of)."""
        return heap[0], ()

    mains, users, others = [], [], []
    ignore = [sys.modules, me]
    for name, module in list(dict.items(sys.modules)):
        if type(module) is not module_type:
            continue
        ignore.append(module)
        ignore.append(attrs_of(module))
        if module is main:
            mains.append(module)
            continue
        path = plain(attrs_of(module).get("__file__")) or ""
        if path and not is_library_path(path) and name != "gpuleak":
            users.append(module)
        else:
            others.append(module)

    ended = "error"
    enabled = gc.isenabled()
    gc.disable()  # no collection may free what the walk holds by address
    try:
        groups = (exception_roots, lambda: module_roots(mains), lambda: module_roots(users),
                  thread_roots, lambda: module_roots(others), unnamed_roots)
        # Every object, for the last group, and their number, so that the
        # walk's table is sized once.
        heap.append(gc.get_objects())
        for group in groups:
            objs, labels = group()
            last = group is unnamed_roots
            # The last group's numbers are not matched: the search's own
            # lists of addresses are among its roots.
            indices, found, ended = walk(objs, ignore, classify, 0 if last else lo,
                                         0 if last else hi, deadline, len(heap[0]), not last)
            objs = None
            for node, label in zip(indices, labels):
                if node >= 0:
                    roots[node] = label
            look(found)
            found = None
            if ended == "done":
                ended = walk_graphs()
            if len(named) == len(ids):
                ended = "all"
            if ended != "done":
                break
        out = []
        for i, (node, suffix, graph) in sorted(named.items()):
            if time.monotonic() > deadline + budget:
                break
            expr, holder_type, owner, file, path = name_of(node, suffix)
            out.append("%d\t%d\t%s\t%s\t%s\t%s\t%s" % (ids[i], graph, expr, holder_type, owner,
                                                       file, path))
    except Exception:
        ended, out = "error", []
    finally:
        del heap[:]
        close()
        if enabled:
            gc.enable()
    out.append("#\t%d\t%s" % (count(), ended))
    return "\n".join(out)
