/* test_pools.c: how pools.c reconciles the records with a listing of
 * JAX's or CuPy's live arrays (pools_sync): a new array is recorded as a
 * tensor, one listed again is kept, one listed at the same address with
 * another identity or size replaces it, one a complete listing leaves out
 * is freed (one an incomplete listing leaves out is not), and the driver
 * block an array lies in becomes the framework's cache, VMM memory where
 * its handle is mapped. */
#include "suite.h"
#include "lifecycle.h"
#include "pools.h"
#include "stacks.h"
#include "timeline.h"
#include "tracker.h"
#include "vmm_maps.h"

#include <stdio.h>
#include <stdlib.h>

#define MIB (1ull << 20)

static void setup(void)
{
    static int initialised;
    if (!initialised) {
        ck_assert_int_eq(tracker_init(tracker_sample), 0);
        stacks_init(0);
        atomic_store(&lifecycle_state_now, LIFECYCLE_TRACKING);
        initialised = 1;
    }
}

/* The live tensor record at key, or a zeroed one (key 0) when none. */
static tracker_record_t live_tensor(uint64_t key)
{
    size_t n;
    tracker_record_t found = { 0 };
    tracker_record_t *records = tracker_live_records(&n);
    for (size_t i = 0; i < n; i++)
        if (records[i].kind == REPORT_KIND_tensor && records[i].key == key)
            found = records[i];
    free(records);
    return found;
}

/* Whether a live record of kind under key is listed (a block marked as a
 * framework's cache is not: tracker_live_records leaves reserves out). */
static int listed(int kind, uint64_t key)
{
    size_t n;
    int seen = 0;
    tracker_record_t *records = tracker_live_records(&n);
    for (size_t i = 0; i < n; i++)
        seen |= records[i].kind == kind && records[i].key == key;
    free(records);
    return seen;
}

START_TEST(arrays_are_recorded_kept_replaced_and_freed)
{
    const uint64_t base = 0x7f1000000000ull;
    char text[512];
    snprintf(text, sizeof text, "jax\t%llu\t4096\t0\t11\t-\njax\t%llu\t8192\t0\t12\t-\n#\tjax",
             (unsigned long long)base, (unsigned long long)(base + 4096));
    ck_assert_uint_eq(pools_sync(text), 2);
    ck_assert_uint_eq(live_tensor(base).size, 4096);
    uint32_t first_site = live_tensor(base).site;
    ck_assert_uint_eq(live_tensor(base + 4096).size, 8192);
    ck_assert_int_eq(pools_site_framework(first_site), REPORT_FRAMEWORK_jax);

    /* Listed again: the same record. Another identity at the first
     * address: a new array there. The second left out of a complete
     * listing: freed. */
    snprintf(text, sizeof text, "jax\t%llu\t4096\t0\t99\t-\n#\tjax", (unsigned long long)base);
    ck_assert_uint_eq(pools_sync(text), 1);
    ck_assert_uint_eq(live_tensor(base).size, 4096);
    ck_assert_uint_eq(live_tensor(base + 4096).key, 0);
    pools_counts_t c;
    pools_counts(REPORT_FRAMEWORK_jax, &c);
    ck_assert_uint_eq(c.live_arrays, 1);
    ck_assert_uint_eq(c.live_bytes, 4096);
    ck_assert_uint_eq(c.from_snapshots, 3);

    /* A listing that is not complete for JAX frees nothing of it. */
    ck_assert_uint_eq(pools_sync("#\tcupy"), 0);
    ck_assert_uint_eq(live_tensor(base).size, 4096);
    ck_assert_uint_eq(pools_sync("#\tjax"), 0);
    ck_assert_uint_eq(live_tensor(base).key, 0);
}
END_TEST

START_TEST(the_block_an_array_lies_in_is_the_pools)
{
    /* A CuPy chunk from cuMemAlloc, and JAX's VMM memory mapped at va. */
    const uint64_t chunk = 0x7f2000000000ull, va = 0x7f3000000000ull, handle = 77;
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_device, chunk, 2 * MIB, 0, NULL, 0), 0);
    ck_assert_int_eq(tracker_alloc(REPORT_KIND_vmm, handle, 64 * MIB, 0, NULL, 0), 0);
    vmm_maps_add(va, 64 * MIB, handle);
    ck_assert(listed(REPORT_KIND_device, chunk) && listed(REPORT_KIND_vmm, handle));
    char text[512];
    snprintf(text, sizeof text, "cupy\t%llu\t512\t0\t5\t-\njax\t%llu\t1024\t0\t6\t-\n#\tjax cupy",
             (unsigned long long)(chunk + 1024), (unsigned long long)(va + 32 * MIB));
    ck_assert_uint_eq(pools_sync(text), 2);
    ck_assert(!listed(REPORT_KIND_device, chunk));
    ck_assert(!listed(REPORT_KIND_vmm, handle));
    ck_assert(listed(REPORT_KIND_tensor, chunk + 1024) && listed(REPORT_KIND_tensor, va + 32 * MIB));
    ck_assert(pools_followed());
    ck_assert(pools_want_checkpoints());
}
END_TEST

START_TEST(malformed_lines_are_left)
{
    ck_assert_uint_eq(pools_sync(""), 0);
    ck_assert_uint_eq(pools_sync("torch\t1\t2\t0\t3\t-"), 0);   /* not a pool's framework */
    ck_assert_uint_eq(pools_sync("jax\t1\t2\t0"), 0);           /* fields missing */
    ck_assert_uint_eq(pools_sync("jax\t0\t2\t0\t3\t-"), 0);     /* no address */
    ck_assert_uint_eq(pools_sync("jax\t4096\t16\t0\t3\t1:2,x"), 1);  /* frames unread: no site frames */
    ck_assert_uint_eq(pools_sync(NULL), 0);
    ck_assert_uint_eq(pools_oom(""), 0);
    ck_assert_uint_eq(pools_oom("not a number"), 0);
    pools_sync("#\tjax");
}
END_TEST

START_TEST(a_jax_oom_is_a_tensor_failure)
{
    ck_assert_int_eq(pools_oom("16777216\t-"), 1);
    tracker_oom_t oom;
    ck_assert_int_eq(tracker_oom_copy(&oom), 1);
    ck_assert_int_eq(oom.kind, REPORT_KIND_tensor);
    ck_assert_uint_eq(oom.bytes_asked, 16777216);
    ck_assert_int_eq(pools_site_framework(oom.site), REPORT_FRAMEWORK_jax);
    free(oom.sites);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("pools");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, arrays_are_recorded_kept_replaced_and_freed);
    tcase_add_test(tc, the_block_an_array_lies_in_is_the_pools);
    tcase_add_test(tc, malformed_lines_are_left);
    tcase_add_test(tc, a_jax_oom_is_a_tensor_failure);
    suite_add_tcase(suite, tc);
    return suite_run(suite, 0);
}
