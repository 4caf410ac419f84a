/* elfsyms.h: function names from an ELF file's own symbol tables.
 *
 * The names of a loaded object's functions, read from its file at report
 * time: .symtab (static functions, main), else .dynsym, and the .symtab
 * that MiniDebugInfo keeps xz-compressed in .gnu_debugdata (liblzma is
 * dlopened for it, where present). This is what names frames where libdw
 * is absent or finds nothing (GPULEAK_NO_LIBDW=1, a stripped build): nvcc's
 * static cudart and the program's own functions are in no .dynsym, and the
 * origin rules match cudart by name. Runs at report time only: reads files,
 * allocates. Not thread-safe: the symbolizer calls it under its lock. */
#ifndef GPULEAK_ELFSYMS_H
#define GPULEAK_ELFSYMS_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

typedef struct elfsyms elfsyms_t;

/* Maps the ELF file at path (read-only) and reads its headers; no symbols
 * yet. NULL when it cannot be opened or is not an ELF file of this
 * machine's class and byte order. */
elfsyms_t *elfsyms_open(const char *path);

/* Whether the file is the object info describes, not another build of it
 * (a library replaced on disk while the program runs): the same program
 * headers and the same notes (the build id) as loaded. Takes no lock and
 * allocates nothing, so it may run inside a dl_iterate_phdr callback,
 * which is where info's memory is sure to stay mapped. */
int elfsyms_is_loaded_as(const elfsyms_t *t, const struct dl_phdr_info *info);

/* Reads and sorts the file's function symbols. *budget is how many more
 * entries the caller lets this batch hold (16 bytes each), and is lowered
 * by what was taken; a table that does not fit is not read. Returns the
 * number of functions (0: none, or over budget). */
size_t elfsyms_load(elfsyms_t *t, size_t *budget);

/* The function that holds vaddr (an address in the file's own terms:
 * the runtime address minus the load bias) and, in *offset, vaddr minus
 * its start; NULL when no function symbol covers it. The name lives until
 * elfsyms_close. */
const char *elfsyms_lookup(const elfsyms_t *t, uint64_t vaddr, uint64_t *offset);

/* The GNU build id of the ELF file at path into out (up to cap bytes).
 * Returns its length, 0 when the file has none, -1 when it is no ELF file
 * of this machine. */
int elfsyms_build_id(const char *path, unsigned char *out, size_t cap);

/* Unmaps the file and frees the table. NULL is fine. */
void elfsyms_close(elfsyms_t *t);

#endif
