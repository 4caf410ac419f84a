"""gpuleak for the running program: ask the preloaded shim (libgpuleak.so)
what GPU memory is live, put named marks on its timeline, see which lines
gained memory since a mark and which objects hold it.

Every call is a harmless no-op when the shim is not loaded (the program
runs without gpuleak): numbers are 0, lists are empty. The C API behind it
is include/gpuleak.h."""
import ctypes
import os

__all__ = ["loaded", "tracking", "live_bytes", "mark", "live_since", "snapshot",
           "holders", "diagnosis", "kinds", "Mark", "Site"]


class _Site(ctypes.Structure):
    _fields_ = [("site", ctypes.c_uint32), ("kind", ctypes.c_int), ("device", ctypes.c_int),
                ("bytes", ctypes.c_uint64), ("live_bytes", ctypes.c_uint64),
                ("live_allocations", ctypes.c_uint64)]


def _find_shim():
    """The shim's functions, when it is loaded into this process."""
    try:
        lib = ctypes.CDLL(None)
        version = lib.gpuleak_api_version
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_int
    if version() < 4:
        return None
    lib.gpuleak_tracking.restype = ctypes.c_int
    lib.gpuleak_live_bytes.restype = ctypes.c_uint64
    lib.gpuleak_live_bytes.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.gpuleak_mark.restype = ctypes.c_uint64
    lib.gpuleak_mark.argtypes = [ctypes.c_char_p]
    lib.gpuleak_live_since.restype = ctypes.c_size_t
    lib.gpuleak_live_since.argtypes = [ctypes.c_uint64, ctypes.POINTER(_Site), ctypes.c_size_t]
    lib.gpuleak_site_origin.restype = ctypes.c_int
    lib.gpuleak_site_origin.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
    lib.gpuleak_site_thread.restype = ctypes.c_uint64
    lib.gpuleak_site_thread.argtypes = [ctypes.c_uint32]
    lib.gpuleak_site_python_frames.restype = ctypes.c_int
    lib.gpuleak_site_python_frames.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
    lib.gpuleak_site_records.restype = ctypes.c_size_t
    lib.gpuleak_site_records.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64),
                                         ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.gpuleak_holders_source.restype = ctypes.c_char_p
    lib.gpuleak_holder_phrase.restype = ctypes.c_int
    lib.gpuleak_holder_phrase.argtypes = [ctypes.c_char_p] * 4 + [ctypes.c_int, ctypes.c_char_p,
                                                                  ctypes.c_char_p,
                                                                  ctypes.c_size_t]
    lib.gpuleak_layout_source.restype = ctypes.c_char_p
    lib.gpuleak_snapshot.restype = ctypes.c_int
    if version() >= 5:
        lib.gpuleak_diagnosis.restype = ctypes.c_int
        lib.gpuleak_diagnosis.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64,
                                          ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.gpuleak_kind_name.restype = ctypes.c_char_p
    lib.gpuleak_kind_name.argtypes = [ctypes.c_int]
    return lib


_shim = _find_shim()


def kinds():
    """The report's kinds, as the shim names them (its table:
    common/report_format.h); empty without the shim."""
    names = []
    while _shim is not None:
        name = _shim.gpuleak_kind_name(len(names))
        if name is None:
            break
        names.append(name.decode())
    return tuple(names)


def loaded():
    """Whether libgpuleak.so is in this process."""
    return _shim is not None


def tracking():
    """Whether the shim tracks this process now (it starts at the first CUDA
    call, and never in a child forked after that)."""
    return _shim is not None and _shim.gpuleak_tracking() == 1


def live_bytes(kind=None, device=-1):
    """Live bytes now: of one kind (one of kinds(); None: the driver's GPU
    memory) on one device (-1: all)."""
    if _shim is None:
        return 0
    return _shim.gpuleak_live_bytes(kind.encode() if kind else None, device)


class Mark:
    """A named moment on the report's timeline; live_since(mark) answers
    what grew after it. id is 0 without the shim, or once tracking was
    turned off (or in a forked child); a mark made before the first CUDA
    call is a mark like any other."""

    def __init__(self, name, ident):
        self.name, self.id = name, ident

    def __repr__(self):
        return "Mark(%r, %d)" % (self.name, self.id)


def mark(name):
    """Puts a named mark on the timeline (shown in every view of the
    report) and remembers what each line held then. O(sites)."""
    ident = _shim.gpuleak_mark(str(name).encode("utf-8", "replace")) if _shim else 0
    return Mark(str(name), ident)


class Site:
    """A line that holds more memory than at a mark."""

    def __init__(self, raw):
        self.site, self.device = raw.site, raw.device
        name = _shim.gpuleak_kind_name(raw.kind) if _shim is not None else None
        self.kind = name.decode() if name else "?"
        self.bytes, self.live_bytes = raw.bytes, raw.live_bytes
        self.live_allocations = raw.live_allocations
        self.holders = []
        self.holder_facts = []

    @property
    def origin(self):
        """"file:line in function" of the user's line, by the report's
        origin rules, or None when the site has no such Python frame."""
        if _shim is None:
            return None
        buf = ctypes.create_string_buffer(4096)
        if _shim.gpuleak_site_origin(self.site, buf, len(buf)) != 0:
            return None
        return buf.value.decode("utf-8", "replace")

    @property
    def thread(self):
        """The thread that made the site, as threading.get_ident() names it,
        or 0 for a thread that ran no Python (PyTorch's autograd threads,
        a library's native workers)."""
        return _shim.gpuleak_site_thread(self.site) if _shim is not None else 0

    def python_frames(self):
        """The site's Python frames, innermost first, as "file:line in
        function" strings."""
        if _shim is None:
            return []
        size = 4096
        while True:
            buf = ctypes.create_string_buffer(size)
            count = _shim.gpuleak_site_python_frames(self.site, buf, size)
            lines = buf.value.decode("utf-8", "replace").splitlines()
            if len(lines) >= count or size >= 1 << 20:
                return lines
            size *= 4

    def records(self):
        """(address, size) of the site's live allocations."""
        if _shim is None:
            return []
        n = _shim.gpuleak_site_records(self.site, None, None, 0)
        addresses, sizes = (ctypes.c_uint64 * n)(), (ctypes.c_uint64 * n)()
        n = min(n, _shim.gpuleak_site_records(self.site, addresses, sizes, n))
        return list(zip(addresses[:n], sizes[:n]))

    def __repr__(self):
        return "Site(%d, %s, +%d bytes, %s)" % (self.site, self.kind, self.bytes, self.origin)


def live_since(since, limit=1000):
    """The sites whose live bytes rose since the mark `since`, largest gain
    first (PyTorch's cache and what CUDA libraries keep for the process left
    out). Empty without the shim, or for a mark
    older than the last 64."""
    if _shim is None or since.id == 0:
        return []
    buf = (_Site * limit)()
    n = _shim.gpuleak_live_since(since.id, buf, limit)
    return [Site(buf[i]) for i in range(min(n, limit))]


def snapshot():
    """Writes a report now (as GPULEAK_DUMP_SIGNAL does); the program runs
    on. Returns whether one was written."""
    return _shim is not None and _shim.gpuleak_snapshot() == 0


_find = None
_layout = None


def _shim_function(source, file, name):
    """The function name of the shim's embedded file, run here."""
    scope = {}
    exec(compile(source().decode(), file, "exec"), scope)
    return scope[name]


def holders(sites, budget=1.0):
    """Fills each site's .holders with (name, bytes) of the Python objects
    that keep its live allocations, as the report's "held_by" names them
    (the same search, from the shim, which looks in the modules of the
    standard library and installed packages last): "history[...] (list in
    train.py)"; and .holder_facts with (expression, graph, role, bytes) of
    each, for diagnosis(). Returns the sites."""
    global _find, _layout
    if _shim is None or not sites:
        return sites
    if _find is None:
        _find = _shim_function(_shim.gpuleak_holders_source, "holders.py", "find")
        _layout = _shim_function(_shim.gpuleak_layout_source, "layout.py", "layout")
    targets, owner = [], []
    for s in sites:
        tensor = " t" if s.kind == "tensor" else ""
        for address, size in s.records():
            owner.append((s, size))
            targets.append((address, size, len(owner) - 1, tensor))
    targets.sort()
    walker = ctypes.PyDLL(None).gpuleak_holders_walker
    walker.restype = ctypes.py_object
    try:
        walker = walker()
    except ValueError:  # NULL: the interpreter's functions were not found
        walker = None
    answer = _find("".join("%d %d %d%s\n" % t for t in targets), budget, _layout(), walker)
    named, facts = {}, {}
    for line in answer.split("\n"):
        fields = line.split("\t")
        if fields[0] == "#" or len(fields) < 7:
            continue
        site, size = owner[int(fields[0])]
        graph, name, kind, owner_type, file, path = fields[1:7]
        fact = (id(site), name, graph == "1", fields[7] if len(fields) > 7 else "held")
        facts[fact] = facts.get(fact, 0) + size
        phrase = ctypes.create_string_buffer(1024)
        _shim.gpuleak_holder_phrase(name.encode(), kind.encode(), owner_type.encode(), file.encode(),
                                    graph == "1", path.encode(), phrase, len(phrase))
        key = (id(site), phrase.value.decode(errors="replace"))
        named[key] = named.get(key, 0) + size
    for s in sites:
        s.holders = sorted(((text, n) for (sid, text), n in named.items() if sid == id(s)),
                           key=lambda h: -h[1])
        s.holder_facts = sorted((f[1:] + (n,) for f, n in facts.items() if f[0] == id(s)),
                                key=lambda h: -h[3])
    return sites


def diagnosis(name, graph, role, size, grew, indent=0):
    """The cause and cure one holder shows by itself (a holder_facts entry:
    its graph kept; tensors kept across steps, when its memory grew), as
    every view of gpuleak words it; "" when none or with an older shim."""
    function = getattr(_shim, "gpuleak_diagnosis", None) if _shim is not None else None
    if function is None or function.argtypes is None:
        return ""
    out = ctypes.create_string_buffer(2048)
    function(name.encode(), int(graph), role.encode(), size, int(grew), indent, out, len(out))
    return out.value.decode(errors="replace")


def _library_path():
    """Where libgpuleak.so is, for running a program under it: GPULEAK_LIB,
    else next to the gpuleak command (its folder, or ../lib), else where
    the checkout scripts/install-python.sh installed from builds it."""
    path = os.environ.get("GPULEAK_LIB")
    if path:
        return path if os.path.exists(path) else None
    import shutil
    command = shutil.which("gpuleak")
    if command:
        here = os.path.dirname(os.path.realpath(command))
        for candidate in (os.path.join(here, "libgpuleak.so"),
                          os.path.join(here, "..", "lib", "libgpuleak.so")):
            if os.path.exists(candidate):
                return os.path.realpath(candidate)
    try:
        from ._installed import SHIM
    except ImportError:
        return None
    return SHIM if os.path.exists(SHIM) else None
