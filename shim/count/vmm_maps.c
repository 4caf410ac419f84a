#include "vmm_maps.h"
#include "bounded.h"
#include "report_format.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct vmm_map {
    uint64_t va, size, handle;
} vmm_map_t;

/* A mapping as a handle's: the handle first, so that a handle's lowest
 * address is a binary search away (PyTorch's expandable segments map
 * thousands of handles, and a search asks after each of them). */
typedef struct handle_at {
    uint64_t handle, va;
} handle_at_t;

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static vmm_map_t *maps;        /* sorted by va, none overlapping */
static handle_at_t *by_handle; /* the same mappings, sorted by handle, then va */
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

/* The index of the first of by_handle's count entries not below (handle, va). */
static size_t first_of_handle(size_t count, uint64_t handle, uint64_t va)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (by_handle[mid].handle < handle || (by_handle[mid].handle == handle && by_handle[mid].va < va))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Inserts (handle, va) among by_handle's count entries (room for one more
 * is there). */
static void handle_insert(size_t count, uint64_t handle, uint64_t va)
{
    size_t at = first_of_handle(count, handle, va);
    memmove(&by_handle[at + 1], &by_handle[at], (count - at) * sizeof *by_handle);
    by_handle[at] = (handle_at_t){ handle, va };
}

/* Takes (handle, va) out of by_handle's count entries, where it is. */
static void handle_remove(size_t count, uint64_t handle, uint64_t va)
{
    size_t at = first_of_handle(count, handle, va);
    if (at < count && by_handle[at].handle == handle && by_handle[at].va == va)
        memmove(&by_handle[at], &by_handle[at + 1], (count - at - 1) * sizeof *by_handle);
}

/* Room for one more mapping in both tables; 0 when memory is lacking. */
static int make_room(void)
{
    if (maps_count < maps_room)
        return 1;
    size_t room = maps_room ? maps_room * 2 : 64;
    vmm_map_t *grown = realloc(maps, room * sizeof *grown);
    if (grown == NULL)
        return 0;
    maps = grown;
    handle_at_t *grown_handles = realloc(by_handle, room * sizeof *grown_handles);
    if (grown_handles == NULL)
        return 0;  /* maps keeps its larger block; the room stays as it was */
    by_handle = grown_handles;
    maps_room = room;
    return 1;
}

void vmm_maps_add(uint64_t va, size_t size, uint64_t handle)
{
    pthread_mutex_lock(&maps_lock);
    if (!make_room()) {
        pthread_mutex_unlock(&maps_lock);
        return;
    }
    size_t at = first_at_or_after(va);
    if (at < maps_count && maps[at].va == va) {  /* mapped again over an unmap we missed */
        handle_remove(maps_count, maps[at].handle, va);
        handle_insert(maps_count - 1, handle, va);
        maps[at] = (vmm_map_t){ va, size, handle };
    } else {
        memmove(&maps[at + 1], &maps[at], (maps_count - at) * sizeof *maps);
        maps[at] = (vmm_map_t){ va, size, handle };
        handle_insert(maps_count, handle, va);
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
    for (size_t i = from; i < to; i++)
        handle_remove(maps_count - (i - from), maps[i].handle, maps[i].va);
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
    size_t at = first_of_handle(maps_count, handle, 0);
    if (at < maps_count && by_handle[at].handle == handle)
        va = by_handle[at].va;
    pthread_mutex_unlock(&maps_lock);
    return va;
}

uint64_t vmm_maps_seen_at(int kind, uint64_t key)
{
    if (kind == REPORT_KIND_vmm)
        return vmm_maps_address_of(key);
    return kind == REPORT_KIND_array ? 0 : key;
}
