# holders.py: who keeps device memory alive, asked of the watched program's
# own interpreter. libgpuleak.so embeds this file (shim/python/embedded_py.S) and
# runs it from an atexit callback, with the GIL held, after the program's
# own atexit callbacks and before module teardown frees its globals
# (shim/python/search.c); the gpuleak Python package runs it on request.
#
# find(targets, budget_s, layout, walker) walks the heap breadth first with
# walker, the shim's C walk over the objects' own traversal (shim/python/refwalk.h),
# from the program's names: the main module's globals, then the user's
# other modules, then every thread's frames, then the modules of the
# standard library and installed packages (those under a folder layout
# names, layout.py's answer), then any object no name reaches (garbage not
# collected yet, objects held from C). The first meeting is the shortest
# name. It matches the objects that expose device memory against targets:
# "start size id [t]" lines sorted by start, one per live allocation (t:
# PyTorch's memory, a tensor's or its allocator's segment). Device
# memory is seen as a PyTorch tensor's data_ptr(), a JAX array's buffer
# pointer (its own unsafe_buffer_pointer), a C-level
# __cuda_array_interface__ (CuPy), a ctypes number, or any int kept by an
# object whose value lies inside an allocation (Numba's and hand-made
# arrays, an interface set on the instance). For a tensor with an autograd
# graph, the graph's saved tensors are charged to "the autograd graph of"
# that tensor's name.
#
# It returns one line per allocation found:
#   id \t graph(0|1) \t expression \t type \t owner type \t file \t path
#      \t role \t part
# (path: the full path from a name when the expression starts at an
# object's type instead, else empty; role: what the memory is, by what the
# interpreter shows of it, whatever the path that named it: "parameter" (a
# torch.nn.Parameter, or in a Module's _parameters), "gradient" (a
# parameter's or leaf's .grad; "untrained" when optimizers were found and
# none steps that parameter), "optimizer" (in a torch.optim.Optimizer's
# state), "buffer" (in a Module's _buffers), "saved" (saved for backward by
# a graph), else "held"; part: the name of what it belongs to: the
# outermost module that holds the parameter, the optimizer, else the
# holder's own name) and a last line
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

# The interpreter's own readers of types and modules: C descriptors, never a
# subclass's or a metaclass's code.
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_type_name = type.__dict__["__name__"].__get__
_module_type = type(sys)
_module_dict = _module_type.__dict__["__dict__"].__get__
_getset_type = type(type.__dict__["__dict__"])
_member_type = type(type.__dict__["__weakrefoffset__"])
_CONTAINERS = (dict, list, tuple, set, frozenset)
_MODULE_PARTS = ("_modules", "_parameters", "_buffers")  # torch.nn.Module's


def _plain(name):
    """name as an exact str: a subclass's __eq__ or __str__ would run the
    program's code."""
    return str.__str__(name) if issubclass(type(name), str) else None


_function_type = type(_plain)
_method_type = type(_plain.__get__(0))


def _cell_of(value):
    return (lambda: value).__closure__[0]


_cell_type = type(_cell_of(0))


def _attrs_of(module):
    """A module's namespace, read without getattr (a module's __getattr__,
    PEP 562, is the program's code)."""
    try:
        attrs = _module_dict(module)
    except Exception:
        return {}
    return attrs if type(attrs) is dict else {}


def _base_get(cls, name, obj):
    """obj's name as the base class cls defines it (a C descriptor)."""
    return _type_dict(cls)[name].__get__(obj)


def _lookup(kind, name):
    """name's entry in the first class of kind's MRO that has it."""
    for c in _type_mro(kind):
        d = _type_dict(c)
        if name in d:
            return d[name]
    return None


def _own_dict(obj):
    """obj's instance dict, read through the interpreter's own descriptor
    only: a __dict__ property is the program's code."""
    desc = _lookup(type(obj), "__dict__")
    if type(desc) is not _getset_type and type(desc) is not _member_type:
        return None
    try:
        d = desc.__get__(obj)
    except Exception:
        return None
    return d if type(d) is dict else None


def _read(obj, desc):
    """A class attribute's value for obj: a C descriptor's read, a plain
    value as it is; None for Python code (a property)."""
    if type(desc) in (_getset_type, _member_type):
        return desc.__get__(obj, type(obj))
    if type(desc) is _function_type or desc is None:
        return None
    return desc


def _code_name(code):
    """Net.forward, or step for a function nested in another."""
    try:
        return code.co_qualname.rsplit("<locals>.", 1)[-1]
    except AttributeError:
        return code.co_name


def _suspended(obj):
    """(what, frame) for a generator, coroutine or async generator."""
    kind = type(obj)
    for attr, what in (("gi_frame", "generator"), ("cr_frame", "coroutine"),
                       ("ag_frame", "async generator")):
        desc = _lookup(kind, attr)
        if type(desc) is _getset_type or type(desc) is _member_type:
            return what, desc.__get__(obj)
    return None


def _read_property(desc, obj):
    """A framework's own property of its own object (JAX's), or None."""
    get = _lookup(type(desc), "__get__") if desc is not None else None
    return get(desc, obj, type(obj)) if get is not None else None


def _class_in(module_name, name):
    """The class module_name (already loaded) defines as name, or None."""
    module = sys.modules.get(module_name)
    cls = _attrs_of(module).get(name) if type(module) is _module_type else None
    return cls if isinstance(cls, type) else None


# Roles a tensor's own evidence gives, the strongest first: a parameter's
# memory saved by a graph is still the parameter.
_ROLE_RANK = {"parameter": 0, "gradient": 1, "optimizer": 2, "buffer": 3}


class _Targets:
    """The allocations searched for: "start size id [t]" lines sorted by
    start (t: PyTorch's memory)."""

    def __init__(self, text):
        self.starts, self.ends, self.ids, self.tensors = [], [], [], []
        for line in text.split("\n"):
            if line:
                fields = line.split()
                start, size = int(fields[0]), int(fields[1])
                self.starts.append(start)
                self.ends.append(start + size)
                self.ids.append(int(fields[2]))
                self.tensors.append(fields[3:] == ["t"])
        self.lo = self.starts[0] if self.starts else 0
        self.hi = max(self.ends) if self.ends else 0

    def index(self, pointer):
        """The index of the target pointer lies in, or -1."""
        if type(pointer) is not int or pointer < self.lo or pointer >= self.hi:
            return -1
        a, b = 0, len(self.starts)
        while a < b:
            m = (a + b) // 2
            if self.starts[m] <= pointer:
                a = m + 1
            else:
                b = m
        i = a - 1
        return i if i >= 0 and pointer < self.ends[i] else -1


class _Torch:
    """PyTorch, as loaded: its tensor type and what a tensor is asked
    through (the base type's own descriptors, never a subclass's)."""

    def __init__(self):
        torch = sys.modules.get("torch")
        attrs = _attrs_of(torch) if type(torch) is _module_type else {}
        self.tensor_type = attrs.get("Tensor")
        if not isinstance(self.tensor_type, type):
            self.tensor_type = None
        self.reads = {}
        if self.tensor_type is not None:
            for name in ("is_cuda", "data_ptr", "grad", "grad_fn", "is_leaf"):
                self.reads[name] = _lookup(self.tensor_type, name)
        torch_c = attrs.get("_C")
        self.plain_tensors = _attrs_of(torch_c).get("DisableTorchFunctionSubclass") \
            if type(torch_c) is _module_type else None
        # What says a tensor's role: torch.nn's Parameter and Module,
        # torch.optim's Optimizer (each None when not loaded).
        self.parameter_type = _class_in("torch.nn", "Parameter")
        self.module_type = _class_in("torch.nn", "Module")
        self.optimizer_type = _class_in("torch.optim", "Optimizer")

    def is_tensor(self, obj):
        return self.tensor_type is not None and self.tensor_type in _type_mro(type(obj))

    def is_a(self, obj, cls):
        """Whether obj is an instance of cls (None: never), by its MRO: a
        metaclass's __instancecheck__ is PyTorch's code."""
        return cls is not None and cls in _type_mro(type(obj))

    def read(self, obj, name):
        """A tensor's is_cuda, data_ptr(), grad or grad_fn, read through
        torch.Tensor's own definition (PyTorch's code), never a
        subclass's."""
        desc = self.reads.get(name)
        if desc is None:
            d = _own_dict(obj)
            return d.get(name) if d is not None else None
        if name == "data_ptr":
            return desc(obj)
        get = _lookup(type(desc), "__get__")
        return get(desc, obj, type(obj)) if get is not None else desc


class _Search:
    """One search: the walk, what it found, and the names of the holders."""

    def __init__(self, targets, budget, layout, walker, moment):
        import time  # built into the interpreter: never a file of the program's
        self.clock = time.monotonic
        self.budget = budget
        self.deadline = self.clock() + budget
        self.targets = targets
        self.walk, self.up, self.count, self.close, self.fast_locals = walker
        self.moment = moment
        self.named = {}  # target index -> (node, suffix, graph)
        self.roles = {}  # target index -> (role, node of what it belongs to or None, key)
        self.grad_of = {}  # a gradient's target index -> id() of its parameter
        self.outer = {}  # node -> the outermost module's node over it (outermost)
        self.trained = None  # id() of every parameter an optimizer found holds (None: none found)
        self.torch = _Torch()
        ctypes_module = sys.modules.get("_ctypes")
        self.simple_cdata = _attrs_of(ctypes_module).get("_SimpleCData") \
            if type(ctypes_module) is _module_type else None
        self.graphs = []
        self.saved_names = {}
        self.walked_nodes = set()  # graph nodes walked: summed losses share history
        self.libs = tuple(line.partition("\t")[2] + "/" for line in layout.split("\n") if line)
        self.main = sys.modules.get("__main__")
        self.origins = {}
        self.reverse = {}  # id(dict) -> {id(value): key}
        version = sys.version_info[:2]
        self.in_place = 0 if (3, 11) <= version <= (3, 13) else 1 if version == (3, 10) else None
        self.frame_type = type(sys._getframe())
        thread_module = sys.modules.get("_thread")  # built in, always there
        self.local_type = _attrs_of(thread_module).get("_local") \
            if type(thread_module) is _module_type else None
        self.roots = {}  # root node -> (name, file, holder type)
        self.answers = {}  # (node, suffix) -> answer fields
        self.me = sys._getframe().f_globals
        self.heap = []  # gc.get_objects()'s list, once made

    # -- matching --------------------------------------------------------
    @staticmethod
    def is_jax_array(kind):
        """Whether kind is jaxlib's array type (ArrayImpl, defined in C++:
        its Python-level __cuda_array_interface__ is JAX's code too)."""
        d = _type_dict(kind)
        module = d.get("__module__")
        return _type_name(kind) == "ArrayImpl" and type(module) is str \
            and module.startswith("jaxlib")

    def classify(self, kind):
        """1: a tensor; 2: a C-level __cuda_array_interface__; 3: a ctypes
        number; 4: a torch.nn.Module; 5: a torch.optim.Optimizer; 6: a JAX
        array; 0: nothing to read (its numbers are still matched)."""
        mro = _type_mro(kind)
        if self.torch.tensor_type is not None and self.torch.tensor_type in mro:
            return 1
        if self.torch.module_type is not None and self.torch.module_type in mro:
            return 4
        if self.torch.optimizer_type is not None and self.torch.optimizer_type in mro:
            return 5
        desc = _lookup(kind, "__cuda_array_interface__")
        if type(desc) in (_getset_type, _member_type):
            return 2
        if self.is_jax_array(kind):
            return 6
        if self.simple_cdata is not None and self.simple_cdata in mro and kind is not self.simple_cdata:
            return 3
        return 0

    def note(self, pointer, node, suffix, graph, numbers=False):
        """Charges the target pointer lies in to node, if not named yet. A
        bare number never names tensor memory: PyTorch keeps no address as
        a Python int, a program's own tables might."""
        i = self.targets.index(pointer)
        if i >= 0 and i not in self.named and not (numbers and self.targets.tensors[i]):
            self.named[i] = (node, suffix, graph)

    def give_role(self, tensor, role, node, key=None, parameter=None):
        """Gives the target a CUDA tensor's memory lies in the role, and
        node as what it belongs to (key: its name in the module that
        node is; parameter: a gradient's), unless a stronger role (or the
        same one with an owner) came first."""
        tensor_read = self.torch.read
        if tensor is None or not self.torch.is_tensor(tensor) or not tensor_read(tensor, "is_cuda"):
            return
        i = self.targets.index(tensor_read(tensor, "data_ptr"))
        if i < 0:
            return
        if parameter is not None:
            self.grad_of[i] = id(parameter)
        had = self.roles.get(i)
        rank = _ROLE_RANK[role]
        if had is None or rank < _ROLE_RANK[had[0]] or rank == _ROLE_RANK[had[0]] and had[1] is None:
            self.roles[i] = (role, node, key)

    def module_roles(self, node, module):
        """A module's own parameters, their gradients and its buffers."""
        d = _own_dict(module)
        if d is None:
            return
        for attr, role in (("_parameters", "parameter"), ("_buffers", "buffer")):
            part = d.get(attr)
            for key, tensor in dict.items(part) if issubclass(type(part), dict) else ():
                key = _plain(key)
                self.give_role(tensor, role, node, key)
                if role == "parameter" and tensor is not None and self.torch.is_tensor(tensor) \
                        and self.torch.read(tensor, "is_leaf") is not False:
                    self.give_role(self.torch.read(tensor, "grad"), "gradient", node, key, tensor)

    def optimizer_roles(self, node, optimizer):
        """An optimizer's state: a dict per parameter of its tensors; and
        the parameters it steps (param_groups' "params")."""
        d = _own_dict(optimizer)
        groups = d.get("param_groups") if d is not None else None
        # Only an optimizer whose groups are read says what trains: a
        # wrapper that forwards param_groups through a property (accelerate's
        # AcceleratedOptimizer) leaves that to the optimizer it wraps.
        if type(groups) is list and self.trained is None:
            self.trained = set()
        for group in groups if type(groups) is list else ():
            params = dict.get(group, "params") if issubclass(type(group), dict) else None
            for p in params if type(params) is list else ():
                self.trained.add(id(p))
        state = d.get("state") if d is not None else None
        for per_parameter in dict.values(state) if issubclass(type(state), dict) else ():
            for tensor in dict.values(per_parameter) if issubclass(type(per_parameter), dict) else ():
                self.give_role(tensor, "optimizer", node)

    def look_at(self, kind, node, obj):
        """Matches one object the walk found (kind: classify's, or -1 for a
        number) against the targets."""
        tensor_read = self.torch.read
        if kind == -1:
            holder = self.holder_of(node)
            if holder is not None:
                self.note(obj, holder, "", 0, numbers=not self.declares(self.up(holder)[0]))
        elif kind == 1:
            if not tensor_read(obj, "is_cuda"):
                return
            self.note(tensor_read(obj, "data_ptr"), node, "", 0)
            # Only a leaf has a gradient of its own; asking a non-leaf for
            # it makes PyTorch print a warning.
            grad = tensor_read(obj, "grad") if tensor_read(obj, "is_leaf") is not False else None
            if grad is not None and tensor_read(grad, "is_cuda"):
                self.note(tensor_read(grad, "data_ptr"), node, ".grad", 0)
                self.give_role(grad, "gradient", None, None, obj)
            if self.torch.is_a(obj, self.torch.parameter_type):
                self.give_role(obj, "parameter", None)
            self.graphs.append((obj, node))
        elif kind == 4:
            self.module_roles(node, obj)
        elif kind == 5:
            self.optimizer_roles(node, obj)
        elif kind == 2:
            interface = _read(obj, _lookup(type(obj), "__cuda_array_interface__"))
            data = dict.get(interface, "data") if type(interface) is dict else None
            if type(data) is tuple and data:
                self.note(data[0], node, "", 0)
        elif kind == 3:
            self.note(_read(obj, _lookup(self.simple_cdata, "value")), node, "", 0)
        elif kind == 6:
            # JAX's own readers of its array's buffer: one device's, or
            # each shard's for an array sharded over devices.
            try:
                self.note(_lookup(type(obj), "unsafe_buffer_pointer")(obj), node, "", 0)
            except Exception:
                shards = _lookup(type(obj), "addressable_shards")
                for shard in _read_property(shards, obj) or ():
                    data = _read_property(_lookup(type(shard), "data"), shard)
                    if data is not None and self.is_jax_array(type(data)):
                        self.note(_lookup(type(data), "unsafe_buffer_pointer")(data), node, "", 0)

    def look(self, found):
        """Matches what a walk found against the targets, in the order met."""
        plain_tensors = self.torch.plain_tensors
        guard = plain_tensors() if plain_tensors is not None else None
        if guard is not None:
            guard.__enter__()
        try:
            for kind, node, obj in found:
                try:
                    self.look_at(kind, node, obj)
                except Exception:
                    pass
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)

    def saved_tensors(self, fn, node):
        """Charges the tensors one graph node saved to node."""
        kind = type(fn)
        names = self.saved_names.get(kind)
        if names is None:
            try:
                names = [n for n in dir(kind) if n.startswith("_saved_")]
            except Exception:
                names = []
            self.saved_names[kind] = names
        for name in names:
            try:
                value = getattr(fn, name)
            except Exception:
                continue
            for item in value if type(value) in (tuple, list) else (value,):
                try:
                    if self.torch.is_tensor(item) and self.torch.read(item, "is_cuda"):
                        self.note(self.torch.read(item, "data_ptr"), node, "", 1)
                except Exception:
                    pass

    def walk_graphs(self):
        """Charges the tensors each graph met so far saved to its root."""
        while self.graphs:
            root, node = self.graphs.pop(0)
            try:
                todo = [self.torch.read(root, "grad_fn")]
            except Exception:
                continue
            while todo:
                if self.clock() > self.deadline:
                    return "budget"
                fn = todo.pop()
                if fn is None or id(fn) in self.walked_nodes:
                    continue
                self.walked_nodes.add(id(fn))
                self.saved_tensors(fn, node)
                try:
                    todo.extend(f for f, _ in fn.next_functions)
                except Exception:
                    pass
        return "done"

    def declares(self, obj):
        """Whether obj says it is a device array (an interface on its class
        or on itself): then its numbers may name any memory, PyTorch's
        too."""
        if _lookup(type(obj), "__cuda_array_interface__") is not None:
            return True
        d = _own_dict(obj)
        return d is not None and "__cuda_array_interface__" in d

    def holder_of(self, node):
        """The object a number belongs to: past the containers that carry
        it (an interface's dict and tuple, an instance's dict). None when
        no object of a class carries it (a table of numbers, a list of
        addresses, a frame's local): a number does not keep memory alive,
        an array object may."""
        while True:
            obj, parent = self.up(node)
            if not issubclass(type(obj), _CONTAINERS):
                return node if self.origin(type(obj)) != "builtin" else None
            if parent < 0:
                return None
            node = parent

    # -- naming ----------------------------------------------------------
    def module_file(self, module):
        """The module's file name. CPython deletes the main module's
        __file__ once the script has run, so there it is the script's."""
        attrs = _attrs_of(module)
        path = _plain(attrs.get("__file__"))
        if path is None:
            spec = attrs.get("__spec__")
            path = _plain(_own_dict(spec).get("origin")) if _own_dict(spec) is not None else None
        if path is None and module is self.main and sys.argv:
            path = _plain(sys.argv[0])
        return path.rsplit("/", 1)[-1] if path else (_plain(attrs.get("__name__")) or "?")

    def is_library_path(self, path):
        return bool(path) and path.startswith(self.libs)

    def origin(self, kind):
        """'user', 'library' or 'builtin': where the class kind was written."""
        got = self.origins.get(kind)
        if got is None:
            got = "builtin"
            try:
                name = _plain(_type_dict(kind).get("__module__"))
                module = sys.modules.get(name) if name and name != "builtins" else None
                if module is self.main and name is not None:
                    got = "user"
                elif type(module) is _module_type:
                    path = _plain(_attrs_of(module).get("__file__")) or ""
                    got = "library" if not path or self.is_library_path(path) else "user"
            except Exception:
                pass
            self.origins[kind] = got
        return got

    def key_of(self, d, child):
        table = self.reverse.get(id(d))
        if table is None:
            table = {}
            for k, v in dict.items(d):
                table.setdefault(id(v), k)
            self.reverse[id(d)] = table
        k = table.get(id(child))
        return _plain(k) if k is not None else None

    def frame_locals(self, frame):
        """A frame's bound locals as (name, value), read in place where the
        walker can (reading frame.f_locals would make the frame keep a copy
        of them: objects the program deletes would live on)."""
        code = frame.f_code
        if self.in_place is not None:
            names = code.co_varnames
            return [(_plain(names[i]), value)
                    for i, value in self.fast_locals(frame, len(names), self.in_place)]
        return [(_plain(name), value) for name, value in dict.items(dict(frame.f_locals))]

    def local_name(self, frame, child):
        try:
            for name, value in self.frame_locals(frame):
                if value is child or type(value) is _cell_type and value.cell_contents is child:
                    return name
        except Exception:
            pass
        return None

    def thread_local(self, obj):
        """Whether obj is a threading.local, whose attributes live in one
        dict per thread, reached by its traversal, not by __dict__."""
        return isinstance(self.local_type, type) and self.local_type in _type_mro(type(obj))

    def dict_edge(self, parent, child, chain, i):
        """How a dict refers to child: an attribute of the object it is the
        namespace of, a class's attribute, or an item."""
        owner = chain[i - 1] if i > 0 else None
        # A threading.local keeps a dict of its threads' namespaces: that
        # level has no name, the namespace's keys are attributes.
        if owner is not None and self.thread_local(owner) and type(child) is dict:
            return None
        if i > 1 and self.thread_local(chain[i - 2]) and type(owner) is dict:
            owner = chain[i - 2]
        key = self.key_of(parent, child)
        if owner is not None and not issubclass(type(owner), _CONTAINERS):
            if issubclass(type(owner), type):
                return ("class", _type_name(owner), key or "?")
            if _own_dict(owner) is parent or self.thread_local(owner):
                return ("attr", key or "?", _type_name(type(owner)))
        return ("item", key)

    def frame_edge(self, parent, child, chain, i):
        """How an interpreter object (a frame, a traceback, a function, a
        cell, a bound method, a class, an exception, a suspended generator)
        refers to child; False when parent is none of those."""
        kind = type(parent)
        if kind is self.frame_type:
            if child is parent.f_back:
                return ("ref", "caller")
            name = self.local_name(parent, child)
            if name is not None:
                return ("local", _code_name(parent.f_code), name, parent.f_code.co_filename)
            return ("ref", "frame")
        if _type_name(kind) == "traceback":
            return ("traceback",) if child is parent.tb_frame else None
        if kind is _function_type:
            if child is parent.__closure__:
                return ("closure", parent, chain[i + 2] if i + 2 < len(chain) else None)
            return ("attr", "__defaults__", "function") if child is parent.__defaults__ else None
        if _type_name(kind) == "cell":
            return None
        if kind is _method_type:
            return ("attr", "__self__", "method") if child is parent.__self__ else None
        if issubclass(kind, type):
            # Its namespace (the class token names what is in it) or its
            # bases and MRO.
            return None if type(child) is dict else ("ref", _type_name(type(child)))
        if issubclass(kind, BaseException):
            if any(child is _base_get(BaseException, name, parent)
                   for name in ("__traceback__", "__context__", "__cause__")):
                return ("exception",)
        gen = _suspended(parent)
        if gen is not None and gen[1] is not None and child is gen[1]:
            # 3.10: a generator's frame is an object of its own.
            return ("generator", gen[0], _code_name(gen[1].f_code))
        if gen is not None and gen[1] is not None:
            name = self.local_name(gen[1], child)
            if name is not None:
                return ("suspended", gen[0], _code_name(gen[1].f_code), name,
                        gen[1].f_code.co_filename)
        return False

    def object_edge(self, parent, child):
        """How an object of a class refers to child: its type, an attribute
        in its dict or a slot."""
        kind = type(parent)
        if child is kind:
            return ("type", _type_name(kind))
        d = _own_dict(parent)
        if d is not None and child is d:
            return None  # the instance's dict: its keys are the attributes
        if d is not None:
            key = self.key_of(d, child)
            if key is not None:
                return ("attr", key, _type_name(kind))
        for c in _type_mro(kind):
            for name, desc in list(_type_dict(c).items()):
                if type(desc) is _member_type:
                    try:
                        if desc.__get__(parent) is child:
                            return ("attr", _plain(name), _type_name(kind))
                    except Exception:
                        pass
        return ("ref", _type_name(type(child)))

    def edge(self, parent, child, chain, i):
        """How parent refers to child, as a token (None: nothing to add)."""
        kind = type(parent)
        if issubclass(kind, dict):
            return self.dict_edge(parent, child, chain, i)
        if issubclass(kind, (list, tuple, set, frozenset)) or _type_name(kind) == "deque":
            if i > 0 and type(chain[i - 1]) is _function_type and parent is chain[i - 1].__closure__:
                return None  # the closure's token names the variable
            return ("item", None)
        if self.thread_local(parent) and type(child) is dict:
            return None  # a thread's namespace of it: its keys are the attributes
        token = self.frame_edge(parent, child, chain, i)
        return token if token is not False else self.object_edge(parent, child)

    def compose(self, tokens, expr, holder_type, owner, file):
        """The name a chain of tokens spells from a root's name, and the
        holder's type, the type it is an attribute of and its file."""
        kept_by = None
        via_traceback = False
        via_generator = None
        last_attr = None
        for token, child in tokens:
            what = token[0] if token is not None else None
            if what is None:
                continue
            if what == "item":
                if last_attr in _MODULE_PARTS and token[1] is not None:
                    expr = expr[:-len(last_attr) - 1] + "." + token[1]
                    holder_type = _type_name(type(child))
                elif not expr.endswith("[...]"):
                    expr += "[...]"
                last_attr = None
                continue
            last_attr = None
            if what == "attr":
                expr += "." + token[1]
                holder_type, owner = _type_name(type(child)), token[2]
                last_attr = token[1]
            elif what == "class":
                expr, holder_type, owner = token[1] + "." + token[2], _type_name(type(child)), ""
            elif what == "type":
                expr, holder_type, owner = token[1], "type", ""
            elif what == "closure":
                expr, holder_type = _closure_name(token[1], token[2], expr, holder_type)
            elif what == "traceback":
                via_traceback = True
            elif what == "generator":
                via_generator = "a suspended %s() %s" % (token[2], token[1])
            elif what == "local":
                if kept_by is None and expr:
                    kept_by = (expr, via_generator or ("an exception's traceback" if via_traceback
                                                       else "a frame"))
                expr, holder_type, owner = token[1] + "() local " + token[2], _type_name(type(child)), ""
                file = token[3].rsplit("/", 1)[-1]
            elif what == "suspended":
                if kept_by is None:
                    kept_by = (expr, "a suspended %s() %s" % (token[2], token[1]))
                expr, holder_type, owner = token[2] + "() local " + token[3], _type_name(type(child)), ""
                file = token[4].rsplit("/", 1)[-1]
            elif what == "ref":
                expr += ".<%s>" % token[1]
        if kept_by is not None:
            expr += ", kept by %s (%s)" % kept_by
        return expr, holder_type, owner, file

    def chain_to(self, node):
        """The objects from node's root down to node, and the root."""
        chain, root, n = [], node, node
        while n >= 0:
            obj, parent = self.up(n)
            chain.append(obj)
            root, n = n, parent
        chain.reverse()
        return chain, root

    def user_name(self, chain, tokens, whole):
        """A name that runs through a library's private parts reads as the
        user's object (or the library's) that holds it, the whole path
        kept; None when it does not."""
        def owner_at(i):
            """The object whose attribute tokens[i] reads (past its dict)."""
            if i > 0 and type(chain[i]) is dict and not issubclass(type(chain[i - 1]), _CONTAINERS):
                return chain[i - 1]
            return chain[i]

        private = -1
        for i, (token, _) in enumerate(tokens):
            if token is not None and token[0] == "attr" and token[1].startswith("_") \
                    and not token[1].startswith("__") and token[1] not in _MODULE_PARTS \
                    and self.origin(type(owner_at(i))) == "library":
                private = i
        if private < 0:
            return None
        start = next((j for j in range(private + 1, len(chain))
                      if self.origin(type(chain[j])) == "user"), None)
        if start is not None:
            kind = _type_name(type(chain[start]))
            return self.compose(tokens[start:], kind, kind, "", whole[3])
        owner = _type_name(type(owner_at(private)))
        return self.compose(tokens[private:], owner, owner, "", whole[3])

    def name_of(self, node, suffix):
        """The answer's fields for the holder at node: its name (+ suffix),
        type, owner type, file and the path it was shortened from."""
        got = self.answers.get((node, suffix))
        if got is not None:
            return got
        chain, root = self.chain_to(node)
        label = self.roots.get(root)
        if label is None:
            kind = _type_name(type(chain[0]))
            label = (kind + " (no name reaches it)", "?", kind)
        expr, file, holder_type = label
        tokens = []
        for i in range(len(chain) - 1):
            try:
                token = self.edge(chain[i], chain[i + 1], chain, i)
            except Exception:
                token = ("ref", "?")
            tokens.append((token, chain[i + 1]))
        whole = self.compose(tokens, expr, holder_type, "", file)
        short = self.user_name(chain, tokens, whole)
        path = ""
        if short is not None:
            path, whole = whole[0], short
        expr, holder_type, owner, file = whole
        got = (expr + suffix, holder_type if not suffix else "Tensor", owner, file, path)
        self.answers[(node, suffix)] = got
        return got

    def answer_fields(self, i, node, suffix, graph):
        """The answer's fields for target i, met at node: whether a graph
        saved it, its holder's name, type, owner type, file and path, its
        role and the name of what it belongs to. A module's parameter,
        gradient or buffer is named through its module
        (model.fc.weight.grad), whatever path met it first (an optimizer's
        state is keyed by the parameters); its part is the outermost module
        over it (model, not model.fc); an optimizer's state's, the
        optimizer; else the holder itself."""
        role, owner_node, key = self.roles.get(i, ("saved" if graph else "held", None, None))
        # A gradient no optimizer found steps: computed and kept for nothing
        # (said only when an optimizer was found: one gone by exit would
        # make every gradient look so).
        if role == "gradient" and self.trained is not None and self.grad_of.get(i) not in self.trained:
            role = "untrained"
        fields = self.name_of(node, suffix)
        if owner_node is None:
            return (graph,) + fields + (role, fields[0])
        if key is not None:
            name, kind, _, file, path = self.name_of(owner_node, "")
            tail = "." + key + (".grad" if role in ("gradient", "untrained") else "")
            fields = (name + tail, "Parameter" if role == "parameter" else "Tensor", kind, file,
                      path + tail if path else "")
            graph = 0
        return (graph,) + fields + (role, self.name_of(self.outermost(owner_node), "")[0])

    def outermost(self, node):
        """The outermost module on the path to node (node itself when none
        is above it), once per node: a model's thousands of tensors share
        a few owners."""
        got = self.outer.get(node)
        if got is None:
            got, n = node, node
            while n >= 0:
                obj, parent = self.up(n)
                if self.torch.is_a(obj, self.torch.module_type):
                    got = n
                n = parent
            self.outer[node] = got
        return got

    # -- the roots, group by group ---------------------------------------
    def module_roots(self, modules):
        objs, labels = [], []
        for module in modules:
            file = self.module_file(module)
            for name, value in list(dict.items(_attrs_of(module))):
                name = _plain(name)
                if name is not None and not name.startswith("__"):
                    objs.append(value)
                    labels.append((name, file, _type_name(type(value))))
        return objs, labels

    def thread_roots(self):
        objs, labels = [], []
        for _, frame in list(sys._current_frames().items()):
            while frame is not None:
                if frame.f_globals is not self.me:
                    code = frame.f_code
                    file = code.co_filename.rsplit("/", 1)[-1]
                    try:
                        local = self.frame_locals(frame)
                    except Exception:
                        local = []
                    for name, value in local:
                        objs.append(value)
                        labels.append(("%s() local %s" % (_code_name(code), name), file,
                                       _type_name(type(value))))
                frame = frame.f_back
        return objs, labels

    def exception_roots(self):
        """While the program runs (an OOM, a report on request): the
        exception the main thread is handling; its traceback's frames hold
        the memory of the step that failed. (The last one no code caught
        is sys.last_value: a library module's name.)"""
        objs, labels = [], []
        if self.moment != "exit":
            handled = sys.exc_info()[1]
            if handled is not None:
                objs.append(handled)
                labels.append(("the exception being handled", "?", _type_name(type(handled))))
        return objs, labels

    def unnamed_roots(self):
        """Every object the collector tracks: those no name reached are
        roots of their own, named by their type (name_of)."""
        return self.heap[0], ()

    def module_groups(self):
        """The main module, the user's other modules and the rest (the
        standard library's, installed packages', the search's own), and
        what the walk passes by: the module table, the modules and their
        namespaces, this file's globals."""
        mains, users, others = [], [], []
        ignore = [sys.modules, self.me]
        for name, module in list(dict.items(sys.modules)):
            if type(module) is not _module_type:
                continue
            ignore.append(module)
            ignore.append(_attrs_of(module))
            if module is self.main:
                mains.append(module)
                continue
            path = _plain(_attrs_of(module).get("__file__")) or ""
            if path and not self.is_library_path(path) and name != "gpuleak":
                users.append(module)
            else:
                others.append(module)
        return mains, users, others, ignore

    def walk_groups(self):
        """Walks the roots group by group until every target is named, the
        time runs out or the heap is done; returns how it ended."""
        import gc  # built into the interpreter: never a file of the program's
        mains, users, others, ignore = self.module_groups()
        groups = (self.exception_roots, lambda: self.module_roots(mains),
                  lambda: self.module_roots(users), self.thread_roots,
                  lambda: self.module_roots(others), self.unnamed_roots)
        # Every object, for the last group, and their number, so that the
        # walk's table is sized once.
        self.heap.append(gc.get_objects())
        lo, hi = self.targets.lo, self.targets.hi
        ended = "error"
        for group in groups:
            objs, labels = group()
            last = group == self.unnamed_roots
            # The last group's numbers are not matched: the search's own
            # lists of addresses are among its roots.
            indices, found, ended = self.walk(objs, ignore, self.classify, 0 if last else lo,
                                              0 if last else hi, self.deadline, len(self.heap[0]),
                                              not last)
            objs = None
            for node, label in zip(indices, labels):
                if node >= 0:
                    self.roots[node] = label
            self.look(found)
            found = None
            if ended == "done":
                ended = self.walk_graphs()
            if len(self.named) == len(self.targets.ids):
                ended = "all"
            if ended != "done":
                break
        return ended

    def answer(self):
        """The search's answer lines (module docstring), with gc off for
        the walk: no collection may free what the walk holds by address."""
        import gc
        ended = "error"
        enabled = gc.isenabled()
        gc.disable()
        try:
            ended = self.walk_groups()
            out = []
            for i, (node, suffix, graph) in sorted(self.named.items()):
                if self.clock() > self.deadline + self.budget:
                    break
                out.append("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s" % (
                    (self.targets.ids[i],) + self.answer_fields(i, node, suffix, graph)))
        except Exception:
            ended, out = "error", []
        finally:
            del self.heap[:]
            self.close()
            if enabled:
                gc.enable()
        out.append("#\t%d\t%s" % (self.count(), ended))
        return "\n".join(out)


def _closure_name(function, cell, expr, holder_type):
    """expr through a function's closure cell: its free variable's name,
    and the type of what the cell holds."""
    name = "?"
    try:
        for free, c in zip(function.__code__.co_freevars, function.__closure__):
            if c is cell:
                name = free
    except Exception:
        pass
    expr += ".<closure>." + name
    try:
        holder_type = _type_name(type(cell.cell_contents))
    except Exception:
        pass
    return expr, holder_type


def find(targets, budget, layout="", walker=None, moment="exit"):
    """The search (module docstring): targets' lines in, the answer's lines
    out, within budget seconds."""
    wanted = _Targets(targets)
    # A free-threaded build's objects have another header: the walker reads
    # an object's type where the default build keeps it.
    if walker is None or not wanted.ids or "t" in getattr(sys, "abiflags", ""):
        return "#\t0\t%s" % ("all" if not wanted.ids else "error")
    return _Search(wanted, budget, layout, walker, moment).answer()
