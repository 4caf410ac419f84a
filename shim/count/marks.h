/* marks.h: named moments of a run (gpuleak_mark), for the timeline and for
 * "what is held now that was not then".
 *
 * Each mark keeps its time and name for the report (the first MARKS_MAX;
 * later ones are counted), and, for the last MARKS_REMEMBERED marks, what
 * every site held at that moment, PyTorch's cache left out. */
#ifndef GPULEAK_MARKS_H
#define GPULEAK_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "tracker.h"

#define MARKS_MAX 4096
#define MARKS_REMEMBERED 64

typedef struct mark {
    uint64_t time_ns;   /* clock_coarse_ns() */
    char name[64];
} mark_t;

/* Adds a mark named name at now_ns and remembers every site's live bytes:
 * none when nothing_live (tracking has not started, so nothing is live and
 * the tables may not exist yet), or when memory for them is lacking; then
 * every live byte counts as gained since. Returns its id (1, 2, ...). */
uint64_t marks_add(const char *name, uint64_t now_ns, int nothing_live);

/* A site's gain since a mark. */
typedef struct mark_gain {
    uint32_t site;
    uint64_t bytes;      /* live bytes now minus then */
} mark_gain_t;

/* The sites holding more now than at mark id, largest gain first, into
 * memory the caller frees (*count of them). Returns NULL with *count 0 when
 * none did, or id is unknown or forgotten. O(sites). */
mark_gain_t *marks_gains_since(uint64_t id, size_t *count);

/* A copy of the marks kept, oldest first, in memory the caller frees, their
 * number in *count; *dropped says how many came after MARKS_MAX. Waits for
 * the lock as bounded.h allows (none: NULL). */
mark_t *marks_copy(size_t *count, uint64_t *dropped);

#endif
