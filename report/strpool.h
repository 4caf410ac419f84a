/* strpool.h: one copy of each distinct string, for the loader. A report
 * read element by element frees each element's JSON once it is read, so
 * the names its sites and frames keep (functions, files, kinds) are copied
 * here; a training job's 100,000 sites share a few thousand names, so each
 * is stored once. */
#ifndef GPULEAK_CLI_STRPOOL_H
#define GPULEAK_CLI_STRPOOL_H

#include <stddef.h>

typedef struct strpool strpool_t;

/* A new, empty pool; NULL when out of memory. */
strpool_t *strpool_new(void);

/* The pool's copy of s (NUL-terminated), made on first sight; it lives as
 * long as the pool. NULL when out of memory. */
const char *strpool_intern(strpool_t *pool, const char *s);

/* Frees the pool and every copy it handed out. NULL is a no-op. */
void strpool_free(strpool_t *pool);

#endif
