/* test_vmm_maps.c: where VMM handles are mapped (vmm_maps.h): an address
 * inside a mapping tells its handle, a handle its lowest address, an unmap
 * forgets every mapping it covers and nothing else. */
#include "suite.h"
#include "vmm_maps.h"

#define MIB (1ull << 20)

START_TEST(an_address_tells_the_handle_it_lies_in)
{
    vmm_maps_add(0x7f0000000000ull, 4 * MIB, 11);
    vmm_maps_add(0x7f0000400000ull, 2 * MIB, 12);  /* right after: a pool growing */
    uint64_t va = 0;
    ck_assert_uint_eq(vmm_maps_handle_at(0x7f0000000000ull, &va), 11);
    ck_assert_uint_eq(va, 0x7f0000000000ull);
    ck_assert_uint_eq(vmm_maps_handle_at(0x7f00003fffffull, &va), 11);
    ck_assert_uint_eq(vmm_maps_handle_at(0x7f0000400000ull, &va), 12);
    ck_assert_uint_eq(va, 0x7f0000400000ull);
    ck_assert_uint_eq(vmm_maps_handle_at(0x7f0000600000ull, &va), 0);  /* past the end */
    ck_assert_uint_eq(vmm_maps_handle_at(0x7effffffffffull, &va), 0);  /* before the start */
    ck_assert_uint_eq(vmm_maps_address_of(12), 0x7f0000400000ull);
    ck_assert_uint_eq(vmm_maps_address_of(13), 0);
}
END_TEST

START_TEST(an_unmap_forgets_what_it_covers)
{
    uint64_t va;
    vmm_maps_add(0x100000000ull, 2 * MIB, 21);
    vmm_maps_add(0x100200000ull, 2 * MIB, 22);
    vmm_maps_add(0x100400000ull, 2 * MIB, 23);
    vmm_maps_remove(0x100000000ull, 4 * MIB);  /* the first two, in one unmap */
    ck_assert_uint_eq(vmm_maps_handle_at(0x100000000ull, &va), 0);
    ck_assert_uint_eq(vmm_maps_handle_at(0x100200000ull, &va), 0);
    ck_assert_uint_eq(vmm_maps_handle_at(0x100400000ull, &va), 23);
    ck_assert_uint_eq(vmm_maps_address_of(21), 0);
    /* Mapped again at the same address: the newer handle. */
    vmm_maps_add(0x100400000ull, 2 * MIB, 24);
    ck_assert_uint_eq(vmm_maps_handle_at(0x100400001ull, &va), 24);
    vmm_maps_remove(0x100400000ull, 2 * MIB);
    ck_assert_uint_eq(vmm_maps_handle_at(0x100400001ull, &va), 0);
}
END_TEST

START_TEST(many_mappings_stay_sorted)
{
    uint64_t va;
    for (uint64_t i = 0; i < 1000; i++)  /* added out of order */
        vmm_maps_add(0x200000000ull + ((i * 7919) % 1000) * 2 * MIB, 2 * MIB, 1000 + (i * 7919) % 1000);
    for (uint64_t i = 0; i < 1000; i++)
        ck_assert_uint_eq(vmm_maps_handle_at(0x200000000ull + i * 2 * MIB + 5, &va), 1000 + i);
    vmm_maps_remove(0x200000000ull, 1000 * 2 * MIB);
    ck_assert_uint_eq(vmm_maps_handle_at(0x200000000ull + 5, &va), 0);
}
END_TEST

/* PyTorch's expandable segments map thousands of handles: each tells its
 * own address, the lowest where a handle is mapped twice, and an unmap of
 * some leaves the others' addresses told. */
START_TEST(each_handle_tells_its_address)
{
    const uint64_t base = 0x300000000ull, handles = 5000;
    for (uint64_t i = 0; i < handles; i++)  /* handles not in address order */
        vmm_maps_add(base + i * 2 * MIB, 2 * MIB, 50000 + (i * 7919) % handles);
    for (uint64_t i = 0; i < handles; i++)
        ck_assert_uint_eq(vmm_maps_address_of(50000 + (i * 7919) % handles), base + i * 2 * MIB);
    vmm_maps_add(base - 2 * MIB, 2 * MIB, 50000 + 7919 % handles);  /* handle 1's, mapped lower too */
    ck_assert_uint_eq(vmm_maps_address_of(50000 + 7919 % handles), base - 2 * MIB);
    vmm_maps_remove(base - 2 * MIB, 2 * MIB);
    ck_assert_uint_eq(vmm_maps_address_of(50000 + 7919 % handles), base + 2 * MIB);
    vmm_maps_remove(base, 2500 * 2 * MIB);  /* the lower half */
    for (uint64_t i = 0; i < handles; i++)
        ck_assert_uint_eq(vmm_maps_address_of(50000 + (i * 7919) % handles),
                          i < 2500 ? 0 : base + i * 2 * MIB);
    /* Mapped again over an unmap missed: the address is the new handle's. */
    vmm_maps_add(base + 4999 * 2 * MIB, 2 * MIB, 77);
    ck_assert_uint_eq(vmm_maps_address_of(77), base + 4999 * 2 * MIB);
    ck_assert_uint_eq(vmm_maps_address_of(50000 + (4999 * 7919) % handles), 0);
    vmm_maps_remove(base, handles * 2 * MIB);
    ck_assert_uint_eq(vmm_maps_address_of(77), 0);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("vmm_maps");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, an_address_tells_the_handle_it_lies_in);
    tcase_add_test(tc, an_unmap_forgets_what_it_covers);
    tcase_add_test(tc, many_mappings_stay_sorted);
    tcase_add_test(tc, each_handle_tells_its_address);
    suite_add_tcase(suite, tc);
    return suite_run(suite, 0);
}
