/* holders_py.S: shim/holders.py inside libgpuleak.so, as the NUL-terminated
 * string finish_holders_py (finish.c runs it in the watched program's
 * interpreter). Kept a Python file so that it reads, and is tested, as one. */
    .section .rodata
    .globl finish_holders_py
    .hidden finish_holders_py
    .type finish_holders_py, @object
finish_holders_py:
    .incbin "shim/holders.py"
    .byte 0
    .size finish_holders_py, . - finish_holders_py
    .section .note.GNU-stack,"",@progbits
