#include "vmm_maps.h"
#include "bounded.h"
#include "report_format.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct vmm_map {
    uint64_t va, size, handle;
} vmm_map_t;

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static vmm_map_t *maps;      /* sorted by va, none overlapping */
static size_t maps_count, maps_room;

/* The index of the first mapping whose va is not below va. */
static size_t first_at_or_after(uint64_t va)
{
    size_t lo = 0, hi = maps_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (maps[mid].va < va)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void vmm_maps_add(uint64_t va, size_t size, uint64_t handle)
{
    pthread_mutex_lock(&maps_lock);
    if (maps_count == maps_room) {
        size_t room = maps_room ? maps_room * 2 : 64;
        vmm_map_t *grown = realloc(maps, room * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&maps_lock);
            return;
        }
        maps = grown;
        maps_room = room;
    }
    size_t at = first_at_or_after(va);
    if (at < maps_count && maps[at].va == va) {  /* mapped again over an unmap we missed */
        maps[at] = (vmm_map_t){ va, size, handle };
    } else {
        memmove(&maps[at + 1], &maps[at], (maps_count - at) * sizeof *maps);
        maps[at] = (vmm_map_t){ va, size, handle };
        maps_count++;
    }
    pthread_mutex_unlock(&maps_lock);
}

void vmm_maps_remove(uint64_t va, size_t size)
{
    pthread_mutex_lock(&maps_lock);
    size_t from = first_at_or_after(va), to = from;
    while (to < maps_count && maps[to].va - va < size)
        to++;
    memmove(&maps[from], &maps[to], (maps_count - to) * sizeof *maps);
    maps_count -= to - from;
    pthread_mutex_unlock(&maps_lock);
}

/* Contract in vmm_maps.h. A report's reader waits for the lock a bounded
 * time (bounded.h); without it, the address is not told. */
uint64_t vmm_maps_handle_at(uint64_t addr, uint64_t *va)
{
    uint64_t handle = 0;
    if (!bounded_mutex_lock(&maps_lock))
        return 0;
    size_t at = first_at_or_after(addr + 1);  /* the first mapping past addr's start */
    if (at > 0 && addr - maps[at - 1].va < maps[at - 1].size) {
        handle = maps[at - 1].handle;
        *va = maps[at - 1].va;
    }
    pthread_mutex_unlock(&maps_lock);
    return handle;
}

uint64_t vmm_maps_address_of(uint64_t handle)
{
    uint64_t va = 0;
    if (!bounded_mutex_lock(&maps_lock))
        return 0;
    for (size_t i = 0; i < maps_count && va == 0; i++)
        if (maps[i].handle == handle)
            va = maps[i].va;
    pthread_mutex_unlock(&maps_lock);
    return va;
}

uint64_t vmm_maps_seen_at(int kind, uint64_t key)
{
    if (kind == REPORT_KIND_vmm)
        return vmm_maps_address_of(key);
    return kind == REPORT_KIND_array ? 0 : key;
}
