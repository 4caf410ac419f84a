/* embedded_py.S: the Python files libgpuleak.so runs in the watched
 * program's interpreter, each as a NUL-terminated string: shim/python/holders.py
 * as search_holders_py, shim/python/layout.py as search_layout_py, shim/python/pools.py as
 * search_pools_py (search.c runs them; api.c hands them to the Python package). Kept
 * Python files so that they read, and are tested, as such. */
    .macro embed name, path
    .section .rodata
    .globl \name
    .hidden \name
    .type \name, @object
\name:
    .incbin "\path"
    .byte 0
    .size \name, . - \name
    .endm

    embed search_holders_py, "shim/python/holders.py"
    embed search_layout_py, "shim/python/layout.py"
    embed search_pools_py, "shim/python/pools.py"
    .section .note.GNU-stack,"",@progbits
