/* strpool.c: an open-addressing set of strings over a chunked arena. */
#include "strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES 65536

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    char data[];
} chunk_t;

struct strpool {
    const char **slots; /* NULL: empty */
    size_t nslots, count;
    chunk_t *chunks;    /* the newest first */
};

strpool_t *strpool_new(void)
{
    strpool_t *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return NULL;
    pool->nslots = 1024;
    pool->slots = calloc(pool->nslots, sizeof *pool->slots);
    if (pool->slots == NULL) {
        free(pool);
        return NULL;
    }
    return pool;
}

/* FNV-1a: names are short, and the set only needs an even spread. */
static uint64_t hash(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Copies len bytes and a NUL into the arena; NULL when out of memory. A
 * string longer than a chunk gets a chunk of its own. */
static char *arena_copy(strpool_t *pool, const char *s, size_t len)
{
    chunk_t *c = pool->chunks;
    if (c == NULL || c->size - c->used < len + 1) {
        size_t size = len + 1 > CHUNK_BYTES ? len + 1 : CHUNK_BYTES;
        c = malloc(sizeof *c + size);
        if (c == NULL)
            return NULL;
        c->size = size;
        c->used = 0;
        c->next = pool->chunks;
        pool->chunks = c;
    }
    char *out = c->data + c->used;
    memcpy(out, s, len);
    out[len] = '\0';
    c->used += len + 1;
    return out;
}

/* Doubles the slot table; -1 when out of memory (the pool is unchanged). */
static int grow(strpool_t *pool)
{
    size_t n = pool->nslots * 2;
    const char **slots = calloc(n, sizeof *slots);
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < pool->nslots; i++) {
        const char *s = pool->slots[i];
        if (s == NULL)
            continue;
        size_t j = hash(s, strlen(s)) & (n - 1);
        while (slots[j] != NULL)
            j = (j + 1) & (n - 1);
        slots[j] = s;
    }
    free(pool->slots);
    pool->slots = slots;
    pool->nslots = n;
    return 0;
}

const char *strpool_intern(strpool_t *pool, const char *s)
{
    if (pool->count * 2 >= pool->nslots && grow(pool) != 0)
        return NULL;
    size_t len = strlen(s);
    size_t i = hash(s, len) & (pool->nslots - 1);
    for (; pool->slots[i] != NULL; i = (i + 1) & (pool->nslots - 1))
        if (strcmp(pool->slots[i], s) == 0)
            return pool->slots[i];
    char *copy = arena_copy(pool, s, len);
    if (copy == NULL)
        return NULL;
    pool->slots[i] = copy;
    pool->count++;
    return copy;
}

void strpool_free(strpool_t *pool)
{
    if (pool == NULL)
        return;
    while (pool->chunks != NULL) {
        chunk_t *next = pool->chunks->next;
        free(pool->chunks);
        pool->chunks = next;
    }
    free(pool->slots);
    free(pool);
}
