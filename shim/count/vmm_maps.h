/* vmm_maps.h: where VMM physical memory is mapped.
 *
 * cuMemCreate's memory is keyed by its handle (tracker.h's SPACE_VMM), but
 * a program and its objects see it at the virtual addresses cuMemMap put it
 * at: JAX's pool (XLA's allocator grows one reserved range by mapping
 * handles into it) and PyTorch's expandable segments. These are the
 * mappings now live, so an address can be told the handle it lies in, and a
 * handle the address it is seen at. Maps are rare (a pool's growth), so
 * two sorted arrays under a short lock do: by address, and by handle (a
 * search asks where each of thousands of handles is seen). */
#ifndef GPULEAK_VMM_MAPS_H
#define GPULEAK_VMM_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* Notes that handle's memory is mapped at [va, va + size). Forgets it when
 * memory for the table is lacking (addresses inside are then not told). */
void vmm_maps_add(uint64_t va, size_t size, uint64_t handle);

/* Forgets every mapping that starts inside [va, va + size) (cuMemUnmap's
 * range). */
void vmm_maps_remove(uint64_t va, size_t size);

/* The handle mapped where addr lies, with that mapping's first address in
 * *va; 0 when addr lies in no mapping. */
uint64_t vmm_maps_handle_at(uint64_t addr, uint64_t *va);

/* The lowest address handle is mapped at, or 0 when it is not mapped. */
uint64_t vmm_maps_address_of(uint64_t handle);

/* Where the program's objects see a live allocation of kind (an
 * alloc_kind_t) under key: the key itself for the kinds keyed by address,
 * where its handle is mapped for VMM memory (0 when unmapped), and 0 for a
 * CUDA array, whose handle is no address. */
uint64_t vmm_maps_seen_at(int kind, uint64_t key);

#endif
