/* refwalk.h: the references between a Python program's objects, as its
 * interpreter's own traversal sees them (each type's tp_traverse, what the
 * garbage collector and gc.get_referents use), walked breadth first from C.
 *
 * It follows every kind of reference, because the objects say what they
 * refer to: containers, instance dicts and __slots__, closures, frames and
 * tracebacks, generators and coroutines, bound methods, C extension types.
 * It runs none of the program's code: a type's traversal is the
 * interpreter's (or the extension's) own C code, and it reads nothing else.
 * shim/python/holders.py drives it and names what it finds.
 *
 * The walker, seen from Python (every call with the GIL held):
 *   walk(roots, ignore, classify, lo, hi, deadline[, expect[, named]])
 *       -> (indices, found, ended)
 *     Adds each object of the list roots not met before as a root, then
 *     walks breadth first from every object not walked yet. ignore: objects
 *     never entered (the search's own). classify(type) -> int is asked once
 *     per type met: nonzero marks its instances as worth a look. lo, hi: an
 *     exact int referred to with a value in [lo, hi) is reported too (a
 *     device address kept as a number). deadline: time.monotonic() past
 *     which the walk stops. expect: how many objects the heap has, to size
 *     the walk's table once. indices: each root's node, or -1 when met
 *     before; empty when named is 0 (roots without names of their own). found: (kind, node, object) in the order met; an int is
 *     reported as (-1, its referrer's node, the int). ended: "done" or
 *     "budget".
 *   up(node) -> (object, parent node or -1)
 *   count() -> how many objects were met
 *   close() -> None: lets go of every object met; walk and up then fail.
 *   locals(frame, n, layout) -> [(i, value)]: the frame's first n fast
 *     locals that are bound, read in place (layout 0: CPython 3.11 to
 *     3.13; 1: 3.10; frame.f_locals would keep a copy of them in the frame).
 * The walker holds a reference to every object it met until close(), so a
 * node stays valid while holders.py reads it. Call close() when done: the
 * walk may have met the walker's own functions, a cycle no collector sees. */
#ifndef GPULEAK_REFWALK_H
#define GPULEAK_REFWALK_H

/* A new walker: a tuple (walk, up, count, close, locals) of Python functions sharing one
 * walk's state, as a new reference; NULL (no error set) when the
 * interpreter's functions could not all be found or memory ran out. Call
 * with the GIL held. */
void *refwalk_new(void);

#endif
