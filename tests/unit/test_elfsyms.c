/* Unit tests for elfsyms.c: names from this very binary's .symtab (static
 * functions included), its build id, the check that a file is the object
 * loaded, and files that are truncated or corrupt, which must give no
 * name rather than a crash (the sanitizer build runs this too). */
#define _GNU_SOURCE
#include "suite.h"
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"

static volatile int sink;

__attribute__((noinline)) static int a_static_function(int x)
{
    sink += x;
    return sink * 3;
}

/* The program's dl_iterate_phdr entry (always the first). */
static int first_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(struct dl_phdr_info *)data = *info;
    return 1;
}

static struct dl_phdr_info self_info(void)
{
    struct dl_phdr_info info;
    dl_iterate_phdr(first_cb, &info);
    return info;
}

static char self_path[4096];

static void find_self(void)
{
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    ck_assert_int_gt(n, 0);
    self_path[n] = '\0';
}

/* Writes data[0..size) to a fresh file and returns its path. */
static const char *write_copy(const void *data, size_t size)
{
    static char path[4096];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gpuleak-elfsyms-%d", dir && *dir ? dir : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, size, f), size);
    fclose(f);
    return path;
}

/* The whole of this binary's file, malloc'd. */
static unsigned char *read_self(size_t *size)
{
    FILE *f = fopen(self_path, "r");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    unsigned char *buf = malloc(*size);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, *size, f), *size);
    fclose(f);
    return buf;
}

START_TEST(names_a_static_function)
{
    find_self();
    struct dl_phdr_info info = self_info();
    elfsyms_t *t = elfsyms_open(self_path);
    ck_assert_ptr_nonnull(t);
    ck_assert(elfsyms_is_loaded_as(t, &info));
    size_t budget = 1 << 20;
    size_t n = elfsyms_load(t, &budget);
    ck_assert_uint_gt(n, 10);
    ck_assert_uint_le(budget, (size_t)(1 << 20) - n);
    uint64_t vaddr = (uintptr_t)(void *)a_static_function - info.dlpi_addr, off = 99;
    ck_assert_str_eq(elfsyms_lookup(t, vaddr + 3, &off), "a_static_function");
    ck_assert_uint_eq(off, 3);
    ck_assert_str_eq(elfsyms_lookup(t, vaddr, &off), "a_static_function");
    ck_assert_uint_eq(off, 0);
    ck_assert_ptr_null(elfsyms_lookup(t, 0, &off));
    ck_assert_ptr_null(elfsyms_lookup(t, UINT64_MAX, &off));
    elfsyms_close(t);
    ck_assert_int_eq(a_static_function(1) > 0, 1);
}
END_TEST

/* A table over the budget is not read at all. */
START_TEST(over_budget_reads_nothing)
{
    find_self();
    elfsyms_t *t = elfsyms_open(self_path);
    ck_assert_ptr_nonnull(t);
    size_t budget = 3;
    ck_assert_uint_eq(elfsyms_load(t, &budget), 0);
    ck_assert_uint_eq(budget, 3);
    uint64_t off;
    ck_assert_ptr_null(elfsyms_lookup(t, (uintptr_t)(void *)a_static_function, &off));
    elfsyms_close(t);
}
END_TEST

/* Another build of the program (here: one byte of a note changed, as a
 * rebuild changes the build id) is not the loaded object. */
START_TEST(another_build_is_not_the_loaded_object)
{
    find_self();
    struct dl_phdr_info info = self_info();
    size_t size;
    unsigned char *buf = read_self(&size);
    unsigned char id[64];
    int len = elfsyms_build_id(self_path, id, sizeof id);
    ck_assert_int_ge(len, 8);
    unsigned char *at = memmem(buf, size, id, (size_t)len);
    ck_assert_ptr_nonnull(at);
    *at ^= 0xff;
    const char *copy = write_copy(buf, size);
    elfsyms_t *t = elfsyms_open(copy);
    ck_assert_ptr_nonnull(t);
    ck_assert(!elfsyms_is_loaded_as(t, &info));
    elfsyms_close(t);
    unsigned char other[64];
    ck_assert_int_eq(elfsyms_build_id(copy, other, sizeof other), len);
    ck_assert_mem_ne(other, id, (size_t)len);
    unlink(copy);
    free(buf);
}
END_TEST

START_TEST(not_elf)
{
    const char *copy = write_copy("#!/bin/sh\necho hello\n", 21);
    ck_assert_ptr_null(elfsyms_open(copy));
    unsigned char id[20];
    ck_assert_int_eq(elfsyms_build_id(copy, id, sizeof id), -1);
    unlink(copy);
    ck_assert_ptr_null(elfsyms_open("/nonexistent/file"));
    ck_assert_ptr_null(elfsyms_open("/tmp")); /* a directory */
}
END_TEST

/* Opens, loads and looks up in copy: whatever the bytes, no crash. */
static void survive(const char *copy)
{
    elfsyms_t *t = elfsyms_open(copy);
    if (t == NULL)
        return;
    size_t budget = 1 << 20;
    elfsyms_load(t, &budget);
    uint64_t off;
    for (uint64_t a = 0; a < 0x20000; a += 0x101)
        elfsyms_lookup(t, a, &off);
    unsigned char id[64];
    elfsyms_build_id(copy, id, sizeof id);
    elfsyms_close(t);
}

/* Cut short anywhere, the file gives fewer names, never a crash. */
START_TEST(truncated_files)
{
    find_self();
    size_t size;
    unsigned char *buf = read_self(&size);
    for (size_t cut = 0; cut < size; cut += cut < 256 ? 1 : size / 97) {
        survive(write_copy(buf, cut));
    }
    unlink(write_copy("", 0));
    free(buf);
}
END_TEST

/* Random bytes written over the headers and tables. */
START_TEST(corrupt_files)
{
    find_self();
    size_t size;
    unsigned char *buf = read_self(&size);
    unsigned char *work = malloc(size);
    ck_assert_ptr_nonnull(work);
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)buf;
    unsigned seed = 23;
    for (int round = 0; round < 300; round++) {
        memcpy(work, buf, size);
        for (int k = 0; k < 1 + round % 8; k++) {
            /* Aim at the ELF header, the section table or anywhere. */
            size_t at;
            switch (rand_r(&seed) % 3) {
            case 0: at = rand_r(&seed) % sizeof(ElfW(Ehdr)); break;
            case 1: at = eh->e_shoff + rand_r(&seed) % (eh->e_shnum * sizeof(ElfW(Shdr))); break;
            default: at = rand_r(&seed) % size; break;
            }
            if (at < size)
                work[at] = (unsigned char)rand_r(&seed);
        }
        survive(write_copy(work, size));
    }
    unlink(write_copy("", 0));
    free(work);
    free(buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("elfsyms");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, names_a_static_function);
    tcase_add_test(tc, over_budget_reads_nothing);
    tcase_add_test(tc, another_build_is_not_the_loaded_object);
    tcase_add_test(tc, not_elf);
    tcase_add_test(tc, truncated_files);
    tcase_add_test(tc, corrupt_files);
    suite_add_tcase(s, tc);
    return suite_run(s, 1);
}
