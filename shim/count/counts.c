#include "counts.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

__thread counts_block_t *counts_mine __attribute__((tls_model("initial-exec")));

static _Atomic(counts_block_t *) all_blocks;
_Static_assert(offsetof(counts_block_t, events) + sizeof ((counts_block_t *)0)->events <= 64,
               "the events share the pages pointer's line");

static counts_block_t shared_block;   /* for threads that could get no block */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ready;

/* Set once this thread has handed its block on: it is exiting. */
static __thread int counts_released __attribute__((tls_model("initial-exec")));

/* A finishing thread hands its block on, counts kept, and forgets it. A
 * driver call later in its exit (another key's destructor) must not claim
 * again: a claim in the last destructor pass would never be handed on, and
 * the block would stay taken for good. Such late counts go to the shared
 * block. */
static void release_block(void *block)
{
    counts_mine = NULL;
    counts_released = 1;
    atomic_store_explicit(&((counts_block_t *)block)->in_use, 0, memory_order_release);
}

static void make_key(void)
{
    key_ready = pthread_key_create(&exit_key, release_block) == 0;
}

/* Zeroed memory that starts and ends on a cache-line boundary, so that no
 * other thread's memory shares a line with what this thread writes at
 * every event (calloc aligns to 16 bytes). NULL when memory is out. */
static void *zeroed_lines(size_t size)
{
    size = (size + 63) & ~(size_t)63;
    void *p;
    if (posix_memalign(&p, 64, size) != 0)
        return NULL;
    return memset(p, 0, size);
}

/* This thread's block: one a finished thread left, or a new one; NULL when
 * none can be had or the thread is exiting. */
static counts_block_t *claim(void)
{
    if (counts_released)
        return NULL;
    pthread_once(&key_once, make_key);
    counts_block_t *b = atomic_load_explicit(&all_blocks, memory_order_acquire);
    for (; b != NULL; b = b->next) {
        int idle = 0;
        if (atomic_load_explicit(&b->in_use, memory_order_relaxed) == 0
            && atomic_compare_exchange_strong(&b->in_use, &idle, 1))
            break;
    }
    if (b == NULL) {
        b = zeroed_lines(sizeof *b);
        if (b == NULL)
            return NULL;
        atomic_store_explicit(&b->in_use, 1, memory_order_relaxed);
        b->next = atomic_load_explicit(&all_blocks, memory_order_relaxed);
        while (!atomic_compare_exchange_weak(&all_blocks, &b->next, b)) {
        }
    }
    /* Without a key the block could not be handed on at thread exit: the
     * shared block is slower but never leaks a block per thread. */
    if (!key_ready || pthread_setspecific(exit_key, b) != 0) {
        atomic_store_explicit(&b->in_use, 0, memory_order_release);
        return NULL;
    }
    counts_mine = b;
    return b;
}

counts_block_t *counts_block_first(void)
{
    counts_block_t *b = claim();
    return b ? b : &shared_block;
}

void counts_each(void (*fn)(counts_block_t *block, void *arg), void *arg)
{
    for (counts_block_t *b = atomic_load_explicit(&all_blocks, memory_order_acquire); b != NULL;
         b = b->next)
        fn(b, arg);
    fn(&shared_block, arg);
}

void counts_time_add_first(const uint64_t add[COUNTS_TIME_FIELDS])
{
    if (claim() == NULL) {
        for (int i = 0; i < COUNTS_TIME_FIELDS; i++)
            atomic_fetch_add_explicit(&shared_block.shim_time[i], add[i], memory_order_relaxed);
        return;
    }
    counts_time_add(add);
}

uint64_t counts_event_sum(unsigned event)
{
    uint64_t sum = atomic_load_explicit(&shared_block.events[event], memory_order_relaxed);
    for (counts_block_t *b = atomic_load_explicit(&all_blocks, memory_order_acquire); b != NULL;
         b = b->next)
        sum += atomic_load_explicit(&b->events[event], memory_order_relaxed);
    return sum;
}

uint64_t counts_time_sum(counts_time_t field)
{
    uint64_t sum = atomic_load_explicit(&shared_block.shim_time[field], memory_order_relaxed);
    for (counts_block_t *b = atomic_load_explicit(&all_blocks, memory_order_acquire); b != NULL;
         b = b->next)
        sum += atomic_load_explicit(&b->shim_time[field], memory_order_relaxed);
    return sum;
}

#define DIRECTORY_ENTRIES ((COUNTS_SITES + COUNTS_SITES_PER_PAGE - 1) / COUNTS_SITES_PER_PAGE)

/* The page of b that holds site, made (zeroed) when missing; NULL when
 * memory is out. Only b's thread calls this; readers see a directory and a
 * page only once they are zeroed (release stores). */
static counts_page_t *site_page(counts_block_t *b, uint32_t site)
{
    counts_page_t *_Atomic *dir = atomic_load_explicit(&b->pages, memory_order_relaxed);
    if (dir == NULL) {
        dir = calloc(DIRECTORY_ENTRIES, sizeof *dir);
        if (dir == NULL)
            return NULL;
        atomic_fetch_add_explicit(&b->page_bytes, DIRECTORY_ENTRIES * sizeof *dir,
                                  memory_order_relaxed);
        atomic_store_explicit(&b->pages, dir, memory_order_release);
    }
    counts_page_t *page = atomic_load_explicit(&dir[site / COUNTS_SITES_PER_PAGE], memory_order_relaxed);
    if (page == NULL) {
        page = zeroed_lines(sizeof *page);
        if (page == NULL)
            return NULL;
        atomic_fetch_add_explicit(&b->page_bytes, sizeof *page, memory_order_relaxed);
        atomic_store_explicit(&dir[site / COUNTS_SITES_PER_PAGE], page, memory_order_release);
    }
    return page;
}

live_share_t *counts_site_share_first(counts_block_t *b, uint32_t site)
{
    counts_page_t *page = b == counts_mine && site < COUNTS_SITES ? site_page(b, site) : NULL;
    return page ? &page->shares[site % COUNTS_SITES_PER_PAGE] : NULL;
}

size_t counts_memory_bytes(void)
{
    size_t bytes = 0;
    for (counts_block_t *b = atomic_load_explicit(&all_blocks, memory_order_acquire); b != NULL;
         b = b->next)
        bytes += sizeof *b + atomic_load_explicit(&b->page_bytes, memory_order_relaxed);
    return bytes;
}
