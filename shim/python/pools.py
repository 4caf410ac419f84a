# pools.py: the arrays JAX and CuPy place inside their own memory pools, as
# the frameworks themselves record them. libgpuleak.so embeds this file
# (shim/python/embedded_py.S) and runs it in the watched program's
# interpreter with the GIL held (shim/python/search.c): arrays() at the
# moments the heap is walked and at the pools' own checkpoints, arm() once
# CuPy is loaded. The driver sees only the pools' blocks (JAX's XLA takes
# 75% of the GPU at its first operation; CuPy's pool takes chunks); the
# arrays inside them come from here (shim/python/pools.c records them as
# tensors).
#
# arrays(heap) returns one line per live array on a GPU (CuPy's only with
# heap nonzero: they are found among every object the collector tracks, a
# cost paid where the heap is walked anyway):
#   framework \t address \t bytes \t device \t identity \t frames
# framework: "jax" or "cupy"; identity: what tells this array from another
# one later placed at the same address with the same size (id() of a JAX
# array's traceback, of a CuPy PooledMemory, which CuPy's hook names as
# pmem_id); frames: where the array was made, innermost first, as
# "code:offset" pairs (id() of a live code object and the byte offset of
# its instruction: JAX's own traceback of each array), or "-" when the
# framework recorded none (CuPy) or the array was listed the time before
# (its frames are known); and a last line
#   "#" \t the frameworks whose every live array was listed
# (a record of theirs not listed is freed).
#
# arm(malloc, free, chunk, nothing) registers a CuPy memory hook
# (cupy.cuda.MemoryHook, CuPy's own API for this) whose malloc_postprocess,
# free_postprocess and alloc_postprocess are the shim's C functions, and
# whose *_preprocess do nothing (in C: the base class's are Python calls on
# every array), on the calling thread (CuPy keeps hooks per thread);
# returns "cupy" once it did, "" when CuPy is not loaded (yet).
#
# oom() names JAX's out-of-memory error that ended the program (below).
#
# Rules it keeps: it imports nothing (the frameworks are read only when the
# program loaded them: sys.modules), calls only the frameworks' own readers
# of their own arrays (JAX's live_arrays, an array's buffer pointer, size,
# devices and traceback; CuPy's PooledMemory fields, C descriptors) and
# never a class of the program's, never raises, and keeps no reference to
# an array after it returns.
import sys

_module_type = type(sys)
_module_dict = _module_type.__dict__["__dict__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_type_name = type.__dict__["__name__"].__get__
_getset_type = type(type.__dict__["__dict__"])
_member_type = type(type.__dict__["__weakrefoffset__"])


def _attrs_of(name):
    """The namespace of the module the program loaded as name, read without
    getattr (a module's __getattr__ is code of its own); {} when absent."""
    module = sys.modules.get(name)
    if type(module) is not _module_type:
        return {}
    try:
        attrs = _module_dict(module)
    except Exception:
        return {}
    return attrs if type(attrs) is dict else {}


# The code objects the last answer names, kept until the next call: the
# shim interns them after arrays() returns, and an array the program let
# go meanwhile must not take its frames' code with it.
_codes = []


def _traceback_pairs(tb):
    """(code, offset) pairs of a Python traceback chain, innermost first."""
    pairs = []
    while tb is not None and len(pairs) < 256:
        pairs.append((tb.tb_frame.f_code, tb.tb_lasti))
        tb = tb.tb_next
    pairs.reverse()
    return pairs


def _pairs_text(pairs):
    """(code, offset) pairs as "id:offset" text, their code objects kept
    alive for the shim to read ("-" for none)."""
    _codes.extend(code for code, _ in pairs)
    return ",".join("%d:%d" % (id(c), o) for c, o in pairs) or "-"


def _frames(traceback):
    """A JAX traceback's (code, offset) pairs as text, innermost first:
    from raw_frames(), or, in a jaxlib without it, from the Python
    traceback it makes of itself (as_python_traceback())."""
    try:
        raw = traceback.raw_frames()
        pairs = list(zip(raw[0], raw[1]))
    except Exception:
        pairs = _traceback_pairs(traceback.as_python_traceback())
    return _pairs_text(pairs)


def _size_of(piece):
    """A one-device array's bytes on its device (padding included where
    JAX says so)."""
    try:
        return piece.on_device_size_in_bytes()
    except Exception:
        return piece.nbytes


def _jax_pieces(array):
    """(address, bytes, device, piece) of each single-device buffer of a JAX
    array on a GPU: the array itself, or its shards'."""
    if array.is_deleted():
        return []
    pieces = [array]
    try:
        pointers = [array.unsafe_buffer_pointer()]
    except Exception:  # sharded over devices: each shard's own buffer
        pieces = [shard.data for shard in array.addressable_shards]
        pointers = [piece.unsafe_buffer_pointer() for piece in pieces]
    out = []
    for pointer, piece in zip(pointers, pieces):
        device = next(iter(piece.devices()))
        if device.platform not in ("gpu", "cuda", "rocm"):
            continue
        size = _size_of(piece)
        index = getattr(device, "local_hardware_id", None)
        out.append((pointer, size, index if type(index) is int else device.id))
    return out


# The arrays of the last listing: id() -> (their traceback, their lines
# without frames, their addresses, whether sharded). An array listed
# before, still with the same traceback object (an id another array took
# would not have it), is listed again from here without reading it: a
# checkpoint costs little more than live_arrays() itself. Tracebacks are
# kept, never an array.
_listed = {}


def _jax_record(array, tb):
    """What _listed keeps of array (its lines end before their frames)."""
    pieces = _jax_pieces(array)
    lines = ["jax\t%d\t%d\t%d\t%d\t" % (pointer, size, device, id(tb))
             for pointer, size, device in pieces]
    return (tb, lines, [p[0] for p in pieces], len(pieces) > 1)


def _jax(lines):
    live = _attrs_of("jax").get("live_arrays")
    if live is None:
        return False
    try:
        arrays = live()
    except Exception:
        return False
    listed, sharded, taken = {}, [], set()
    for array in arrays:
        try:
            tb = array.traceback
            record = _listed.get(id(array))
            frames = "-"
            if record is None or tb is None or record[0] is not tb:
                record = _jax_record(array, tb)
                frames = _frames(tb) if tb is not None else "-"
            listed[id(array)] = record
            if record[3]:
                sharded.append((record, frames))  # after the one-device arrays
                continue
            for line, address in zip(record[1], record[2]):
                taken.add(address)
                lines.append(line + frames)
        except Exception:
            continue
    for record, frames in sharded:  # a shard's buffer is also an array of its own
        for line, address in zip(record[1], record[2]):
            if address not in taken:
                taken.add(address)
                lines.append(line + frames)
    _listed.clear()
    _listed.update(listed)
    return True


def _field(kind, name):
    """The reader of a C-level field of kind's instances (a getset or member
    descriptor, as Cython makes them), or None."""
    for c in _type_mro(kind):
        d = _type_dict(c)
        if name in d:
            f = d[name]
            return f.__get__ if type(f) in (_getset_type, _member_type) else None
    return None


def _cupy(lines):
    pooled = _attrs_of("cupy.cuda.memory").get("PooledMemory")
    if not isinstance(pooled, type):
        return False
    ptr, size, device = (_field(pooled, name) for name in ("ptr", "size", "device_id"))
    if ptr is None or size is None or device is None:
        return False
    import gc  # built into the interpreter: never a file of the program's
    for obj in gc.get_objects():
        if type(obj) is pooled:
            try:
                address = ptr(obj)
                if address:
                    lines.append("cupy\t%d\t%d\t%d\t%d\t-" % (address, size(obj), device(obj),
                                                                 id(obj)))
            except Exception:
                continue
    return True


def arrays(heap=1):
    del _codes[:]
    lines = []
    complete = []
    try:
        if _jax(lines):
            complete.append("jax")
    except Exception:
        pass
    try:
        if heap and _cupy(lines):
            complete.append("cupy")
    except Exception:
        pass
    lines.append("#\t" + " ".join(complete))
    return "\n".join(lines)


_exception_args = BaseException.__dict__["args"].__get__
_exception_traceback = BaseException.__dict__["__traceback__"].__get__


def _bytes_asked(text):
    """N of JAX's "... while trying to allocate N bytes" (0: not said)."""
    at = text.find("allocate ")
    digits = ""
    for c in text[at + 9:] if at >= 0 else "":
        if not c.isdigit():
            break
        digits += c
    return int(digits) if digits else 0


def oom():
    """JAX's out-of-memory error that ended the program, asked at Python's
    finish: the interpreter keeps the exception it printed (sys.last_exc,
    sys.last_value before 3.12), and with it the frames that held the
    memory. Returns "bytes asked \t frames" (frames as arrays() gives
    them, from the failing call outwards), or "" for any other end."""
    d = _module_dict(sys)
    exc = d.get("last_exc") or d.get("last_value")
    if not isinstance(exc, BaseException) \
            or _type_name(type(exc)) not in ("XlaRuntimeError", "JaxRuntimeError"):
        return ""
    args = _exception_args(exc)
    text = args[0] if type(args) is tuple and args and type(args[0]) is str else ""
    if not text.startswith("RESOURCE_EXHAUSTED"):
        return ""
    return "%d\t%s" % (_bytes_asked(text), _pairs_text(_traceback_pairs(_exception_traceback(exc))))


def arm(malloc, free, chunk, nothing):
    base = _attrs_of("cupy.cuda.memory_hook").get("MemoryHook")
    if not isinstance(base, type):
        return ""
    try:
        hook_type = type("GpuleakHook", (base,), {
            "name": "gpuleak", "malloc_postprocess": malloc,
            "free_postprocess": free, "alloc_postprocess": chunk,
            "malloc_preprocess": nothing, "free_preprocess": nothing,
            "alloc_preprocess": nothing})
        hook_type().__enter__()
    except Exception:
        return ""
    return "cupy"
