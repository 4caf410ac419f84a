/* test_cli.c: Check suites for the gpuleak command's units: size and time
 * parsing, suppression matching, and the loader on many bad inputs (each
 * must give one line naming the problem, never a crash or a report). */
#define _GNU_SOURCE
#include "frames.h"
#include "dump.h"
#include "dump_text.h"
#include "json_plain.h"
#include "load.h"
#include "opts.h"
#include "supp.h"
#include "units.h"

#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

START_TEST(sizes_parse)
{
    static const struct { const char *text; uint64_t bytes; } ok[] = {
        { "0", 0 }, { "123", 123 }, { "4KiB", 4096 }, { "4kib", 4096 }, { "1.5MB", 1500000 },
        { "2GiB", 2147483648ULL }, { "1KB", 1000 }, { "10B", 10 }, { "1.5KiB", 1536 },
        { "0.5GiB", 536870912 }, { "1TiB", 1099511627776ULL }, { "18446744073709551615", UINT64_MAX },
        { "1.1KiB", 1126 },
        /* A bare K, M, G or T is binary, either case. */
        { "4K", 4096 }, { "4k", 4096 }, { "10M", 10485760 }, { "10m", 10485760 }, { "1.5M", 1572864 },
        { "2G", 2147483648ULL }, { "2g", 2147483648ULL }, { "1T", 1099511627776ULL },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 7;
        ck_assert_msg(units_parse_size(ok[i].text, &v) == 0, "%s", ok[i].text);
        ck_assert_msg(v == ok[i].bytes, "%s gave %llu", ok[i].text, (unsigned long long)v);
    }
}
END_TEST

START_TEST(sizes_reject)
{
    static const char *const bad[] = { "", "-1", "+1", "1.5", "1.", ".5MB", "4 KiB", "4XB", "4KK", "4Ki", "4KiBB", "M",
                                       "18446744073709551616", "20000000000GiB", "1e3", "0x10",
                                       "1.5B", "KiB", " 1", "20000000000G", "4P" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        ck_assert_msg(units_parse_size(bad[i], &v) != 0, "accepted \"%s\"", bad[i]);
        ck_assert_uint_eq(v, 7);
    }
    ck_assert_int_ne(units_parse_size(NULL, NULL), 0);
}
END_TEST

START_TEST(times_parse)
{
    uint64_t v;
    ck_assert_int_eq(units_parse_time("30s", &v), 0);
    ck_assert_uint_eq(v, 30000000000ULL);
    ck_assert_int_eq(units_parse_time("5m", &v), 0);
    ck_assert_uint_eq(v, 300000000000ULL);
    ck_assert_int_eq(units_parse_time("100ms", &v), 0);
    ck_assert_uint_eq(v, 100000000ULL);
    ck_assert_int_eq(units_parse_time("1.5s", &v), 0);
    ck_assert_uint_eq(v, 1500000000ULL);
    ck_assert_int_eq(units_parse_time("2", &v), 0);
    ck_assert_uint_eq(v, 2000000000ULL);
    ck_assert_int_ne(units_parse_time("5x", &v), 0);
    ck_assert_int_ne(units_parse_time("-5s", &v), 0);
    ck_assert_int_ne(units_parse_time("1.5ns", &v), 0);
    ck_assert_int_ne(units_parse_time("999999999999h", &v), 0);
}
END_TEST

START_TEST(sizes_format)
{
    char b[UNITS_SIZE_BUF];
    ck_assert_str_eq(units_format_size(0, b), "0 B");
    ck_assert_str_eq(units_format_size(1023, b), "1023 B");
    ck_assert_str_eq(units_format_size(15728640, b), "15.0 MiB");
    ck_assert_str_eq(units_format_size(UINT64_MAX, b), "16.0 EiB");
    ck_assert_uint_eq(units_add(UINT64_MAX, 1), UINT64_MAX);
}
END_TEST

static load_frame_t frame(const char *function, const char *file, const char *module)
{
    load_frame_t f = { function, file, module, 0, 0x10, 0x1000, false };
    return f;
}

static int matches(const char *rule, load_frame_t *frames, size_t n, load_pyframe_t *py, size_t npy)
{
    supp_set_t *set = supp_new();
    char *err = NULL;
    ck_assert_int_eq(supp_add_line(set, rule, "test", &err), 0);
    const load_frame_t *native[16];
    const load_pyframe_t *python[16];
    ck_assert(n <= 16 && npy <= 16);
    for (size_t i = 0; i < n; i++)
        native[i] = &frames[i];
    for (size_t i = 0; i < npy; i++)
        python[i] = &py[i];
    load_site_t site = { .kind = "device", .stack = native, .nstack = n, .python = python, .npython = npy };
    int m = supp_match(set, &site);
    supp_free(set);
    return m >= 0;
}

START_TEST(supp_matching)
{
    load_frame_t user[] = { frame("keep_for_logging", "demo.c", "/src/build/demo") };
    ck_assert(matches("leak:keep_for_logging", user, 1, NULL, 0));
    ck_assert(matches("leak:for_log", user, 1, NULL, 0));          /* substring, like LSan */
    ck_assert(matches("leak:keep_*", user, 1, NULL, 0));           /* glob */
    ck_assert(!matches("leak:for_log*", user, 1, NULL, 0));        /* globs are anchored */
    ck_assert(matches("leak:demo.c", user, 1, NULL, 0));           /* file */
    ck_assert(matches("leak:demo", user, 1, NULL, 0));             /* module substring */
    ck_assert(matches("leak:dem?", user, 1, NULL, 0));             /* module basename glob */
    ck_assert(matches("  leak:  keep_for_logging  \n", user, 1, NULL, 0));
    ck_assert(!matches("leak:other", user, 1, NULL, 0));
    load_pyframe_t py[] = { { "forward", "/src/model.py", 17 } };
    ck_assert(matches("leak:*model.py", user, 1, py, 1));
    ck_assert(matches("leak:forward", user, 1, py, 1));
    ck_assert(!matches("leak:backward", user, 1, py, 1));
    load_frame_t none[] = { frame(NULL, NULL, "/lib/libfoo.so") };
    ck_assert(matches("leak:libfoo*", none, 1, NULL, 0));
    ck_assert(!matches("leak:libbar*", none, 1, NULL, 0));
}
END_TEST

START_TEST(supp_file_syntax)
{
    supp_set_t *set = supp_new();
    char *err = NULL;
    ck_assert_int_eq(supp_add_line(set, "# comment", "t", &err), 0);
    ck_assert_int_eq(supp_add_line(set, "   ", "t", &err), 0);
    ck_assert_int_eq(supp_count(set), 0);
    ck_assert_int_ne(supp_add_line(set, "called_from_lib:foo", "t", &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "called_from_lib"));
    free(err);
    ck_assert_int_ne(supp_add_line(set, "leak:", "t", &err), 0);
    free(err);
    ck_assert_int_ne(supp_add_line(set, "foo", "t", &err), 0);
    free(err);
    ck_assert_int_ne(supp_load_file(set, "/nonexistent/supp", &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/supp"));
    free(err);
    supp_free(set);
}
END_TEST

static int default_match(load_frame_t *frames, size_t n)
{
    supp_set_t *set = supp_new();
    ck_assert_int_eq(supp_add_defaults(set), 0);
    const load_frame_t *native[16];
    ck_assert(n <= 16);
    for (size_t i = 0; i < n; i++)
        native[i] = &frames[i];
    load_site_t site = { .kind = "device", .stack = native, .nstack = n };
    int m = supp_match(set, &site);
    supp_free(set);
    return m >= 0;
}

START_TEST(supp_defaults)
{
    load_frame_t torch[] = { frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*)", NULL, "/x/libc10_cuda.so") };
    ck_assert(default_match(torch, 1));
    load_frame_t cublas[] = { frame("cublasCreate_v2", NULL, "/usr/lib/libcublas.so.12"), frame("main", "m.c", "/bin/app") };
    ck_assert(default_match(cublas, 2));
    load_frame_t nccl[] = { frame(NULL, NULL, "/usr/lib/libnccl.so.2"), frame("main", "m.c", "/bin/app") };
    ck_assert(default_match(nccl, 2));
    /* cudart on its own behalf (lazy module loading under a launch): benign. */
    load_frame_t internal[] = { frame(NULL, NULL, "/usr/lib/libcudart.so.12"),
                                frame("cudaLaunchKernel", NULL, "/usr/lib/libcudart.so.12"),
                                frame("main", "m.c", "/bin/app") };
    ck_assert(default_match(internal, 3));
    /* The program's own cudaMalloc has cudart innermost too: not suppressed. */
    load_frame_t user_malloc[] = { frame("cudaMalloc", NULL, "/usr/lib/libcudart.so.12"), frame("main", "m.c", "/bin/app") };
    ck_assert(!default_match(user_malloc, 2));
    /* cudart not innermost past the driver: not suppressed. */
    load_frame_t deeper[] = { frame("mine", "m.c", "/bin/app"), frame(NULL, NULL, "/usr/lib/libcudart.so.12") };
    ck_assert(!default_match(deeper, 2));
    load_frame_t plain[] = { frame("main", "m.c", "/bin/app") };
    ck_assert(!default_match(plain, 1));
}
END_TEST

#define GOOD_HEAD "{\"format\":\"gpuleak-report\",\"version\":1,"
#define GOOD_TOTALS "\"totals\":{\"allocations\":1,\"frees\":0,\"peak_bytes\":4,\"leaked_bytes\":4,\"leaked_allocations\":1},"
#define GOOD_FRAME "{\"function\":\"f\",\"file\":null,\"line\":null,\"module\":\"/m\",\"offset\":\"0x1\",\"address\":\"0x2\"}"
#define GOOD_SITE "{\"site\":1,\"kind\":\"device\",\"device\":0,\"bytes\":4,\"allocations\":1,\"stack\":[" GOOD_FRAME "],\"python_stack\":[]}"
#define GOOD GOOD_HEAD GOOD_TOTALS "\"leaks\":[" GOOD_SITE "],\"sites\":[" GOOD_SITE "]}"
/* Version 2: frames once in "frames", stacks once in "stacks" by site. */
#define V2_HEAD "{\"format\":\"gpuleak-report\",\"version\":2,"
#define V2_SITE(id) "{\"site\":" #id ",\"kind\":\"device\",\"device\":0,\"bytes\":4,\"allocations\":1}"
#define GOOD_V2 V2_HEAD GOOD_TOTALS "\"leaks\":[" V2_SITE(1) "," V2_SITE(2) "],\"sites\":[" V2_SITE(1) "]," \
    "\"stacks\":{\"2\":{\"stack\":[1,0],\"python_stack\":[0]},\"1\":{\"stack\":[0],\"python_stack\":[]}}," \
    "\"frames\":[" GOOD_FRAME ",{\"function\":\"g\",\"module\":\"/m\",\"offset\":\"0x7\",\"address\":\"0x8\"}]," \
    "\"python_frames\":[{\"function\":\"step\",\"file\":\"t.py\",\"line\":3}]}"

static void expect_bad(const char *json, size_t len, const char *needle)
{
    char *err = NULL;
    load_report_t *r = load_buffer(json, len, "r.json", &err);
    ck_assert_msg(r == NULL, "accepted: %.*s", (int)len, json);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strncmp(err, "r.json: ", 8) == 0, "no file name: %s", err);
    ck_assert_msg(strchr(err, '\n') == NULL, "two lines: %s", err);
    ck_assert_msg(strstr(err, needle) != NULL, "\"%s\" not in: %s", needle, err);
    free(err);
}

/* The message a report gets when jansson, parsing the text whole, refuses
 * it: what a report read piecewise must say too. */
static void expect_jansson_refusal(const char *json)
{
    json_error_t jerr;
    json_t *whole = json_loadb(json, strlen(json), JSON_REJECT_DUPLICATES, &jerr);
    ck_assert_msg(whole == NULL, "jansson accepts: %s", json);
    char want[300];
    snprintf(want, sizeof want, "not JSON (line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
    expect_bad(json, strlen(json), want);
}

/* Reports are read piecewise (json_split.h): a piece that is not JSON, a
 * separator missing, text after the document, a key twice (in the
 * document, in a streamed element, in the stack table) are refused with
 * jansson's own word on the whole text. */
START_TEST(loader_reads_piecewise)
{
    const char *bad[] = {
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[" GOOD_SITE " " GOOD_SITE "],\"sites\":[]}",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[" GOOD_SITE ",],\"sites\":[]}",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[{\"site\":1,\"kind\":\"dev",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[]} x",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"leaks\":[],\"sites\":[]}",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"site\":1,\"site\":2}],\"sites\":[]}",
        V2_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"stacks\":{\"1\":{},\"1\":{}}}",
        V2_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"stacks\":{\"1\" {}}}",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"peak\":{\"bytes\":1,\"sites\":[{]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_jansson_refusal(bad[i]);
}
END_TEST

/* dump_report writes the document back, the streamed members from the text,
 * with the names the load demangled demangled. */
START_TEST(loader_dumps_what_it_read)
{
    static const char mangled[] = V2_HEAD GOOD_TOTALS "\"leaks\":[" V2_SITE(1) "],\"sites\":[]," \
        "\"stacks\":{\"1\":{\"stack\":[0,1]}},\"frames\":[" GOOD_FRAME "," \
        "{\"function\":\"_Z4stepi\",\"module\":\"/m\",\"offset\":\"0x7\",\"address\":\"0x8\"}]}";
    const char *texts[] = { GOOD, GOOD_V2, mangled };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char *err = NULL, *out = calloc(1, 1);
        load_report_t *r = load_buffer(texts[i], strlen(texts[i]), "r.json", &err);
        ck_assert_msg(r != NULL, "%s", err);
        ck_assert_int_eq(dump_report(r, dump_to_text, &out), 0);
        json_t *dumped = json_loads(out, 0, NULL), *read = json_loads(texts[i], 0, NULL);
        ck_assert_msg(dumped != NULL, "not JSON: %s", out);
        if (texts[i] == mangled) {
            json_t *f = json_object_get(json_array_get(json_object_get(dumped, "frames"), 1), "function");
            ck_assert_str_eq(json_string_value(f), r->frames[1].function);
            ck_assert_str_eq(json_string_value(f), "step(int)");
            json_object_set_new(json_array_get(json_object_get(read, "frames"), 1), "function",
                                json_string("step(int)"));
        }
        ck_assert_msg(json_equal(dumped, read), "changed: %s", out);
        json_decref(dumped);
        json_decref(read);
        free(out);
        load_free(r);
    }
}
END_TEST

/* The plain subset (json_plain.h) is read as jansson reads it: the same
 * tree, keys in order, ending where the value ends. A report's own pieces
 * are plain; anything else is left to jansson (NULL, the cursor where it
 * was), whether jansson takes it or refuses it. */
START_TEST(plain_json_is_read_as_jansson_reads_it)
{
    static const char *plain[] = {
        "{\"site\":1,\"kind\":\"device\",\"device\":0,\"bytes\":3286433792,\"frees\":0,"
        "\"origin\":{\"function\":\"forward\",\"file\":\"/src/<!--x-->/m.py\",\"line\":17,"
        "\"module\":null,\"python\":true},\"owner\":\"user\"}",
        "{\"stack\":[5,9,10,0],\"python_stack\":[]}",
        "[ 1 ,\n[ true , false ,null] , {} , \"\" ,-0, -12]",
        "{\"\":123456789012345678,\"b\":[[[]]]}",
        "\"a string\"", "0", "false",
        "[9223372036854775807,-9223372036854775808,1796000000000000000,-0]",
        "{\"bytes_per_second\":1966.08,\"steadiness\":0.9,\"trend\":1.0,\"r\":[-0.25e-3,1E+2,0e0,1e-400]}",
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        const char *p = plain[i];
        json_t *v = plain_parse(&p, plain[i] + strlen(plain[i]));
        ck_assert_msg(v != NULL, "not read: %s", plain[i]);
        ck_assert_ptr_eq(p, plain[i] + strlen(plain[i]));
        json_t *j = json_loads(plain[i], JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        ck_assert_ptr_nonnull(j);
        char *mine = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        char *theirs = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
        ck_assert_str_eq(mine, theirs);
        free(mine);
        free(theirs);
        json_decref(v);
        json_decref(j);
    }
    /* A value followed by more of the text ends where it ends. */
    const char text[] = "[1,2] ,3", *p = text;
    json_t *v = plain_parse(&p, text + strlen(text));
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_eq(p, text + 5);
    json_decref(v);
    static const char *taken[] = {
        "{\"file\":\"C:\\\\x.py\"}", "[\"\\u00e9\"]", "[\"caf\xc3\xa9\"]",
        "[0.1234567890123456789012345678901234567890123456789012345678901234567]",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    };
    static const char *refused[] = {
        "{\"site\":1,\"site\":2}", "[01]", "[\"a\tb\"]", "[1,]", "{\"a\" 1}", "[tru]", "[1x]",
        "[truex]", "[\"open", "[1", "-", "+1", "[nul]", "{1:2}", "[9223372036854775808]",
        "[-9223372036854775809]", "[12345678901234567890]",
        "[1.]", "[1e]", "[1e+]", "[.5]", "[-.5]", "[1.5x]", "[01.5]", "[1e400]", "[-1e400]",
    };
    const char *const *lists[] = { taken, refused };
    const size_t counts[] = { sizeof taken / sizeof *taken, sizeof refused / sizeof *refused };
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < counts[k]; i++) {
            const char *text = lists[k][i], *q = text;
            ck_assert_msg(plain_parse(&q, text + strlen(text)) == NULL, "read: %s", text);
            ck_assert_ptr_eq(q, text);
            json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
            ck_assert_msg((j != NULL) == (k == 0), "jansson's verdict on %s", text);
            json_decref(j);
        }
}
END_TEST

/* A page's two parts (dump_head, dump_rest) cut a report's lists after
 * their first entries and its stack table to the sites those keep, a list
 * one level down included; together they make the document; the cut
 * totals count what the rest holds; a report with no list longer than the
 * cut has an empty rest and a head that is the whole. A summary
 * (dump_summary) is the head without the stack and frame tables. */
START_TEST(dump_parts_make_the_report)
{
    static const char text[] = V2_HEAD GOOD_TOTALS "\"leaks\":[" V2_SITE(1) "," V2_SITE(2) "],"
        "\"sites\":[" V2_SITE(1) "],\"peak\":{\"bytes\":8,\"sites\":[" V2_SITE(2) "," V2_SITE(3) "," V2_SITE(5) "," V2_SITE(6) "]},"
        "\"stacks\":{\"2\":{\"stack\":[1,0],\"python_stack\":[0]},\"1\":{\"stack\":[0],\"python_stack\":[]},"
        "\"3\":{\"stack\":[1],\"python_stack\":[]},\"4\":{\"stack\":[0],\"python_stack\":[]},\"5\":{\"stack\":[1,1],\"python_stack\":[]},\"6\":{\"stack\":[0,0],\"python_stack\":[]}},"
        "\"oom\":{\"count\":1,\"bytes\":8,\"kind\":\"device\",\"device\":0,\"site\":4,"
        "\"sites\":[{\"site\":5,\"kind\":\"device\",\"bytes\":4},{\"site\":3,\"kind\":\"device\",\"bytes\":4}]},"
        "\"frames\":[" GOOD_FRAME ",{\"function\":\"_Z4stepi\",\"module\":\"/m\",\"offset\":\"0x7\",\"address\":\"0x8\"}],"
        "\"python_frames\":[{\"function\":\"step\",\"file\":\"t.py\",\"line\":3}]}";
    char *err = NULL, *head = calloc(1, 1), *rest = calloc(1, 1), *totals = calloc(1, 1);
    load_report_t *r = load_buffer(text, strlen(text), "r.json", &err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert(dump_cuts(r, 1));
    ck_assert_int_eq(dump_head(r, 1, dump_to_text, &head), 0);
    ck_assert_int_eq(dump_rest(r, 1, dump_to_text, &rest), 0);
    ck_assert_int_eq(dump_cut_totals(r, 1, dump_to_text, &totals), 0);
    json_t *h = json_loads(head, 0, NULL), *m = json_loads(rest, 0, NULL), *t = json_loads(totals, 0, NULL);
    ck_assert_msg(h != NULL && m != NULL && t != NULL, "not JSON: %s | %s | %s", head, rest, totals);
    ck_assert_int_eq(json_array_size(json_object_get(h, "leaks")), 1);
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(h, "peak"), "sites")), 1);
    /* The head keeps the stacks of sites 1 (leaks, sites), 2 (peak) and
     * every one the oom section names, never cut: 4 refused, 5 and 3
     * holding. */
    ck_assert_int_eq(json_object_size(json_object_get(h, "stacks")), 5);
    ck_assert_str_eq(rest, "{\"leaks\":[" V2_SITE(2) "],\"peak\":{\"sites\":[" V2_SITE(3) "," V2_SITE(5) "," V2_SITE(6) "]},"
                           "\"stacks\":{\"6\":{\"stack\":[0,0],\"python_stack\":[]}}}");
    ck_assert_str_eq(totals, "{\"leaks\":{\"sites\":2,\"bytes\":4,\"allocations\":1},"
                             "\"peak.sites\":{\"sites\":4,\"bytes\":12,\"allocations\":3}}");
    dump_extend(h, m);
    json_t *read = json_loads(text, 0, NULL);
    json_object_set_new(json_array_get(json_object_get(read, "frames"), 1), "function",
                        json_string("step(int)"));
    ck_assert_msg(json_equal(h, read), "head and rest: %s | %s", head, rest);
    json_decref(h);
    json_decref(m);
    json_decref(t);
    json_decref(read);
    free(rest);
    rest = calloc(1, 1);
    free(head);
    head = calloc(1, 1);
    ck_assert(!dump_cuts(r, 4));
    ck_assert_int_eq(dump_rest(r, 4, dump_to_text, &rest), 0);
    ck_assert_str_eq(rest, "{}");
    ck_assert_int_eq(dump_head(r, 4, dump_to_text, &head), 0);
    h = json_loads(head, 0, NULL);
    read = json_loads(text, 0, NULL);
    json_object_set_new(json_array_get(json_object_get(read, "frames"), 1), "function",
                        json_string("step(int)"));
    ck_assert(json_equal(h, read));
    json_decref(h);
    /* A summary: the head cut at 1, without the stack and frame tables,
     * even where no list is cut. */
    for (size_t max = 1; max <= 4; max += 3) {
        char *summary = calloc(1, 1);
        ck_assert_int_eq(dump_summary(r, max, dump_to_text, &summary), 0);
        json_t *sum = json_loads(summary, 0, NULL);
        ck_assert_msg(sum != NULL, "not JSON: %s", summary);
        json_t *want = json_deep_copy(read);
        json_object_del(want, "stacks");
        json_object_del(want, "frames");
        json_object_del(want, "python_frames");
        if (max == 1) {
            json_array_remove(json_object_get(want, "leaks"), 1);
            json_t *peak = json_object_get(json_object_get(want, "peak"), "sites");
            while (json_array_size(peak) > 1)
                json_array_remove(peak, 1);
        }
        ck_assert_msg(json_equal(sum, want), "summary at %zu: %s", max, summary);
        json_decref(sum);
        json_decref(want);
        free(summary);
    }
    json_decref(read);
    free(head);
    free(rest);
    free(totals);
    load_free(r);
}
END_TEST

START_TEST(loader_accepts_good)
{
    char *err = NULL;
    load_report_t *r = load_buffer(GOOD, strlen(GOOD), "r.json", &err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert_uint_eq(r->leaks.n, 1);
    ck_assert_uint_eq(r->leaks.v[0].stack[0]->offset, 1);
    ck_assert_ptr_null(r->leaks.v[0].stack[0]->file);
    ck_assert(!r->has_growth && !r->has_peak && !r->has_timeline);
    load_free(r);
}
END_TEST

START_TEST(loader_resolves_version_2_tables)
{
    char *err = NULL;
    load_report_t *r = load_buffer(GOOD_V2, strlen(GOOD_V2), "r.json", &err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert_uint_eq(r->leaks.n, 2);
    const load_site_t *one = &r->leaks.v[0], *two = &r->leaks.v[1];
    ck_assert_uint_eq(one->nstack, 1);
    ck_assert_str_eq(one->stack[0]->function, "f");
    ck_assert_uint_eq(one->npython, 0);
    ck_assert_uint_eq(two->nstack, 2);
    ck_assert_str_eq(two->stack[0]->function, "g");
    ck_assert_uint_eq(two->stack[0]->offset, 7);
    ck_assert_str_eq(two->stack[1]->function, "f");
    ck_assert_uint_eq(two->npython, 1);
    ck_assert_str_eq(two->python[0]->file, "t.py");
    /* The same site in two lists shares one resolved stack. */
    ck_assert_ptr_eq(r->sites.v[0].stack, one->stack);
    load_free(r);
}
END_TEST

/* The shim's "origin" names the line a person acts on (its rules skip the
 * framework's frames); views show it rather than the innermost frame, and a
 * malformed one is ignored, not fatal. */
START_TEST(views_name_the_shims_origin)
{
    static const char json[] = V2_HEAD GOOD_TOTALS "\"leaks\":["
        "{\"site\":1,\"kind\":\"pool\",\"device\":0,\"bytes\":4,\"allocations\":1,\"owner\":\"pytorch-tensor\","
        "\"origin\":{\"function\":\"step\",\"file\":\"train.py\",\"line\":12,\"module\":null,\"python\":true}},"
        "{\"site\":2,\"kind\":\"device\",\"device\":0,\"bytes\":4,\"allocations\":1,"
        "\"origin\":{\"function\":\"leak\",\"file\":\"a.c\",\"line\":3,\"module\":\"/bin/a\",\"offset\":\"0x10\",\"python\":false}},"
        "{\"site\":3,\"kind\":\"device\",\"device\":0,\"bytes\":4,\"allocations\":1,"
        "\"origin\":{\"python\":true,\"line\":\"x\"}}],\"sites\":[],"
        "\"stacks\":{\"1\":{\"python_stack\":[0]},\"3\":{\"python_stack\":[0]}},"
        "\"python_frames\":[{\"function\":\"forward\",\"file\":\"/x/torch/nn/modules/linear.py\",\"line\":134}]}";
    char *err = NULL;
    load_report_t *r = load_buffer(json, strlen(json), "r.json", &err);
    ck_assert_msg(r != NULL, "%s", err);
    char *one = frames_origin(&r->leaks.v[0]), *two = frames_origin(&r->leaks.v[1]),
         *three = frames_origin(&r->leaks.v[2]);
    /* The phrase the shim's exit summary writes too (common/frame_text.h). */
    ck_assert_str_eq(one, "train.py:12 in step (owner: pytorch-tensor)");
    ck_assert_str_eq(two, "a.c:3 in leak");
    ck_assert_str_eq(three, "/x/torch/nn/modules/linear.py:134 in forward");
    free(one);
    free(two);
    free(three);
    load_free(r);
}
END_TEST

/* "status" says when a report was taken; check's verdict depends on
 * moment and complete, so they are read as strictly as the counts, and
 * complete follows the moment where an older shim did not write it. */
static load_report_t *load_status_json(const char *status)
{
    char *json = NULL, *err = NULL;
    ck_assert_int_ge(asprintf(&json, GOOD_HEAD "%s" GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", status), 0);
    load_report_t *r = load_buffer(json, strlen(json), "r.json", &err);
    ck_assert_msg(r != NULL, "%s: %s", status, err);
    free(json);
    return r;
}

START_TEST(loader_reads_status)
{
    load_report_t *r = load_status_json("");
    ck_assert(r->complete);
    ck_assert_ptr_null(r->moment);
    load_free(r);
    r = load_status_json("\"status\":{\"moment\":\"snapshot\",\"complete\":false,\"signal\":null,\"locks_skipped\":0},");
    ck_assert(!r->complete);
    ck_assert_str_eq(r->moment, "snapshot");
    ck_assert_int_eq(r->signal, 0);
    load_free(r);
    r = load_status_json("\"status\":{\"moment\":\"request\"},");
    ck_assert(!r->complete);
    load_free(r);
    r = load_status_json("\"status\":{\"moment\":\"signal\",\"complete\":true,\"signal\":15,\"locks_skipped\":2},");
    ck_assert(r->complete);
    ck_assert_int_eq(r->signal, 15);
    ck_assert_uint_eq(r->locks_skipped, 2);
    load_free(r);
    /* A newer shim's moment is kept; the hints only shown are read quietly. */
    r = load_status_json("\"status\":{\"moment\":\"later\",\"signal\":\"TERM\",\"locks_skipped\":-1},");
    ck_assert(r->complete);
    ck_assert_str_eq(r->moment, "later");
    ck_assert_int_eq(r->signal, 0);
    ck_assert_uint_eq(r->locks_skipped, 0);
    load_free(r);
    static const char bad[] = GOOD_HEAD "\"status\":{\"complete\":\"no\"}," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}";
    expect_bad(bad, strlen(bad), "\"status.complete\" is not a boolean");
    static const char bad2[] = GOOD_HEAD "\"status\":{\"moment\":1}," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}";
    expect_bad(bad2, strlen(bad2), "\"status.moment\" is not a string");
}
END_TEST

/* "python_layout", what a re-judge judges Python frames by: its folders
 * are read; one that is not a string is left out, and a layout this reader
 * cannot read (or none, as in older reports) is no layout, never a refusal. */
static load_report_t *load_layout_json(const char *layout)
{
    char *json = NULL, *err = NULL;
    ck_assert_int_ge(asprintf(&json, GOOD_HEAD GOOD_TOTALS "%s\"leaks\":[],\"sites\":[]}", layout), 0);
    load_report_t *r = load_buffer(json, strlen(json), "r.json", &err);
    ck_assert_msg(r != NULL, "%s: %s", layout, err);
    free(json);
    return r;
}

START_TEST(loader_reads_python_layout)
{
    load_report_t *r = load_layout_json("\"python_layout\":{\"stdlib\":[\"/usr/lib64/python3.12\",5,"
                                        "\"/usr/lib64/python312.zip\"],\"packages\":[\"/opt/deps\"]},");
    ck_assert(r->has_layout);
    ck_assert_uint_eq(r->layout.nstdlib, 2);
    ck_assert_str_eq(r->layout.stdlib[0], "/usr/lib64/python3.12");
    ck_assert_str_eq(r->layout.stdlib[1], "/usr/lib64/python312.zip");
    ck_assert_uint_eq(r->layout.npackages, 1);
    ck_assert_str_eq(r->layout.packages[0], "/opt/deps");
    load_free(r);
    r = load_layout_json("\"python_layout\":{\"stdlib\":\"/usr\",\"packages\":[\"/opt/deps\"]},");
    ck_assert(r->has_layout);
    ck_assert_uint_eq(r->layout.nstdlib, 0);
    load_free(r);
    static const char *const none[] = {
        "", "\"python_layout\":null,", "\"python_layout\":[\"/usr\"],",
        "\"python_layout\":{\"stdlib\":[],\"packages\":[1]},",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        r = load_layout_json(none[i]);
        ck_assert_msg(!r->has_layout, "%s", none[i]);
        load_free(r);
    }
}
END_TEST

/* "oom" names its sites by id: frames from the stack table (inline in
 * version 1), origins from the same site's entry elsewhere. A display
 * hint: what cannot be read is left out, the report still loads. */
START_TEST(loader_reads_oom)
{
    static const char json[] = V2_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":["
        "{\"site\":2,\"kind\":\"device\",\"device\":0,\"bytes\":0,\"allocations\":0,"
        "\"origin\":{\"function\":\"ask\",\"file\":\"a.c\",\"line\":9,\"module\":\"/bin/a\",\"offset\":\"0x7\",\"python\":false}}],"
        "\"oom\":{\"count\":3,\"time_ns\":5,\"bytes\":2048,\"kind\":\"device\",\"device\":1,\"live_bytes\":4096,\"site\":2,"
        "\"sites\":[{\"site\":1,\"kind\":\"pool\",\"bytes\":4000},{\"site\":3,\"bytes\":9},7,"
        "{\"site\":4,\"kind\":\"device\",\"bytes\":96}]},"
        "\"stacks\":{\"2\":{\"stack\":[1,0]},\"1\":{\"stack\":[0]}},"
        "\"frames\":[" GOOD_FRAME ",{\"function\":\"g\",\"module\":\"/m\",\"offset\":\"0x7\",\"address\":\"0x8\"}]}";
    char *err = NULL;
    load_report_t *r = load_buffer(json, strlen(json), "r.json", &err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert(r->has_oom);
    const load_oom_t *o = &r->oom;
    ck_assert_uint_eq(o->count, 3);
    ck_assert_uint_eq(o->time_ns, 5);
    ck_assert_uint_eq(o->live_bytes, 4096);
    ck_assert_uint_eq(o->site.bytes, 2048);
    ck_assert_str_eq(o->site.kind, "device");
    ck_assert_int_eq(o->site.device, 1);
    ck_assert_uint_eq(o->site.nstack, 2);
    ck_assert_str_eq(o->site.stack[0]->function, "g");
    char *origin = frames_origin(&o->site);
    ck_assert_str_eq(origin, "a.c:9 in ask");
    free(origin);
    /* The holder without a kind and the one that is no object are left out. */
    ck_assert_uint_eq(o->holders.n, 2);
    ck_assert_uint_eq(o->holders.v[0].bytes, 4000);
    ck_assert_int_eq(o->holders.v[0].device, -1);
    ck_assert_uint_eq(o->holders.v[0].nstack, 1);
    origin = frames_origin(&o->holders.v[0]);
    ck_assert_str_eq(origin, "m+0x1 in f");
    free(origin);
    ck_assert_uint_eq(o->holders.v[1].id, 4);
    ck_assert_uint_eq(o->holders.v[1].nstack, 0);
    load_free(r);

    /* Version 1: the refused allocation's frames inline; without a site
     * id it takes no other entry's origin (one without an id either). */
    static const char v1[] = GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[{\"kind\":\"device\",\"bytes\":4,"
        "\"allocations\":1,\"origin\":{\"function\":\"x\",\"file\":\"x.py\",\"line\":1,\"python\":true}}],"
        "\"oom\":{\"count\":1,\"bytes\":8,\"kind\":\"host\",\"device\":0,\"stack\":[" GOOD_FRAME "],\"python_stack\":[],\"sites\":[]}}";
    r = load_buffer(v1, strlen(v1), "r.json", &err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert(r->has_oom);
    ck_assert_uint_eq(r->oom.site.nstack, 1);
    ck_assert(r->oom.site.owns_stack);
    ck_assert_int_eq(r->oom.site.origin_kind, LOAD_ORIGIN_NONE);
    ck_assert_uint_eq(r->oom.holders.n, 0);
    load_free(r);

    /* Malformed: no section, never a refused report. */
    static const char *const quiet[] = {
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"oom\":null}",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"oom\":[1]}",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"oom\":{\"count\":1,\"bytes\":8}}",
        GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"oom\":{\"count\":-1,\"bytes\":8,\"kind\":\"device\"}}",
    };
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
        r = load_buffer(quiet[i], strlen(quiet[i]), "r.json", &err);
        ck_assert_msg(r != NULL, "%s: %s", quiet[i], err);
        ck_assert_msg(!r->has_oom, "%s", quiet[i]);
        load_free(r);
    }
    /* A stack that cannot be read leaves the OOM without frames. */
    static const char badstack[] = GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],"
        "\"oom\":{\"count\":1,\"bytes\":8,\"kind\":\"device\",\"stack\":[" GOOD_FRAME ",7]}}";
    r = load_buffer(badstack, strlen(badstack), "r.json", &err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert(r->has_oom);
    ck_assert_uint_eq(r->oom.site.nstack, 0);
    load_free(r);
}
END_TEST

START_TEST(loader_rejects_bad)
{
    static const struct { const char *json; const char *needle; } bad[] = {
        { "nope", "not JSON" },
        { "{\"format\":\"gpuleak-report\",\"version\":1,", "truncated" },
        { "[]", "not a gpuleak report" },
        { "{}", "not a gpuleak report: \"format\" is missing" },
        { "{\"format\":7}", "\"format\" is not a string" },
        { "{\"format\":\"other\"}", "\"format\" is \"other\"" },
        { "{\"format\":\"gpuleak-report\"}", "\"version\" is missing" },
        { "{\"format\":\"gpuleak-report\",\"version\":\"1\"}", "\"version\" is not an integer" },
        { "{\"format\":\"gpuleak-report\",\"version\":3}", "unsupported report version 3" },
        { "{\"format\":\"gpuleak-report\",\"version\":0}", "unsupported report version 0" },
        { V2_HEAD "\"stacks\":[]," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "\"stacks\" is not an object" },
        { V2_HEAD "\"frames\":[7]," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "\"frames[0]\" is not an object" },
        { V2_HEAD "\"frames\":[" GOOD_FRAME "],\"stacks\":{\"1\":{\"stack\":[1]}}," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "\"stacks.1.stack[0]\" names frame 1, but \"frames\" has 1" },
        { V2_HEAD "\"stacks\":{\"1\":{\"python_stack\":[\"0\"]}}," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "\"stacks.1.python_stack[0]\" is not an integer" },
        { V2_HEAD "\"stacks\":{\"-1\":{}}," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "\"stacks.-1\" is not keyed by a site id" },
        { V2_HEAD "\"stacks\":{\"01\":{}}," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "\"stacks.01\" is not keyed by a site id" },
        { V2_HEAD "\"stacks\":{\"4294967296\":{}}," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "\"stacks.4294967296\" is not keyed by a site id" },
        { GOOD_HEAD "\"leaks\":[],\"sites\":[]}", "\"totals\" is missing" },
        { GOOD_HEAD "\"totals\":[],\"leaks\":[],\"sites\":[]}", "\"totals\" is not an object" },
        { GOOD_HEAD "\"totals\":{\"allocations\":-1,\"frees\":0,\"peak_bytes\":0,\"leaked_bytes\":0,\"leaked_allocations\":0},\"leaks\":[],\"sites\":[]}", "\"totals.allocations\" is negative" },
        { GOOD_HEAD "\"totals\":{\"allocations\":1.5,\"frees\":0,\"peak_bytes\":0,\"leaked_bytes\":0,\"leaked_allocations\":0},\"leaks\":[],\"sites\":[]}", "\"totals.allocations\" is not an integer" },
        { GOOD_HEAD "\"totals\":{\"allocations\":99999999999999999999,\"frees\":0}}", "not JSON" },
        { GOOD_HEAD "\"totals\":{\"allocations\":1,\"frees\":0,\"peak_bytes\":0,\"leaked_bytes\":0},\"leaks\":[],\"sites\":[]}", "\"totals.leaked_allocations\" is missing" },
        { GOOD_HEAD GOOD_TOTALS "\"sites\":[]}", "\"leaks\" is missing" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":{},\"sites\":[]}", "\"leaks\" is not an array" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[7],\"sites\":[]}", "\"leaks[0]\" is not an object" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"kind\":\"device\",\"allocations\":1}],\"sites\":[]}", "\"leaks[0].bytes\" is missing" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"kind\":3,\"bytes\":1,\"allocations\":1}],\"sites\":[]}", "\"leaks[0].kind\" is not a string" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"kind\":\"device\",\"bytes\":1,\"allocations\":1,\"stack\":[{\"module\":\"m\",\"offset\":\"12\",\"address\":\"0x1\"}]}],\"sites\":[]}", "\"leaks[0].stack[0].offset\" is not a hex address" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"kind\":\"device\",\"bytes\":1,\"allocations\":1,\"stack\":[{\"module\":\"m\",\"offset\":\"0x11111111111111111\",\"address\":\"0x1\"}]}],\"sites\":[]}", "not a hex address" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"kind\":\"device\",\"bytes\":1,\"allocations\":1,\"stack\":[{\"offset\":\"0x1\",\"address\":\"0x1\"}]}],\"sites\":[]}", "\"leaks[0].stack[0].module\" is missing" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"kind\":\"device\",\"bytes\":1,\"allocations\":1,\"stack\":[{\"module\":\"m\",\"offset\":\"0x1\",\"address\":\"0x1\",\"line\":-3}]}],\"sites\":[]}", "out of range" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[{\"kind\":\"device\",\"bytes\":1,\"allocations\":1,\"python_stack\":[{\"function\":\"f\"}]}],\"sites\":[]}", "\"leaks[0].python_stack[0].file\" is missing" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"failures\":[{\"kind\":\"device\",\"bytes\":1}]}", "\"failures[0].count\" is missing" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"timeline\":{\"points\":[{\"t_ns\":5,\"bytes\":1},{\"t_ns\":4,\"bytes\":1}]}}", "goes back in time" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"timeline\":{\"points\":[{\"t_ns\":5,\"bytes\":1,\"kinds\":{\"device\":\"x\"}}]}}", "\"timeline.points[0].kinds.device\" is not an integer" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"timeline\":[]}", "\"timeline\" is not an object" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"growth\":5}", "\"growth\" is neither" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"peak\":{\"bytes\":-1}}", "\"peak.bytes\" is negative" },
        { GOOD_HEAD GOOD_TOTALS "\"leaks\":[],\"sites\":[],\"process\":{\"argv\":[1]}}", "\"process.argv[0]\" is not a string" },
        { GOOD_HEAD "\"version\":1," GOOD_TOTALS "\"leaks\":[],\"sites\":[]}", "not JSON" }, /* duplicate key */
        { "{\"format\":\"gpuleak\\u0000report\"}", "not JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad(bad[i].json, strlen(bad[i].json), bad[i].needle);
    expect_bad("", 0, "empty");
    /* Every prefix of a good report is refused: truncation never passes. */
    for (size_t n = 1; n < strlen(GOOD); n++)
        expect_bad(GOOD, n, "r.json");
}
END_TEST

START_TEST(loader_file_errors)
{
    char *err = NULL;
    ck_assert_ptr_null(load_file("/nonexistent/r.json", &err));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/r.json: cannot open"));
    free(err);
    ck_assert_ptr_null(load_file("/", &err));
    ck_assert_ptr_nonnull(err);
    free(err);
}
END_TEST

/* A command with one option of each kind, for the parser. */
static const char *const colours[] = { "red", "green", NULL };
static const opt_spec_t test_options[] = {
    { "--gate", "--old-gate", OPT_SIZE, OPT_OPTIONAL, "SIZE", NULL, 0, "g" },
    { "--top", NULL, OPT_COUNT, 0, "N", NULL, 10, "t" },
    { "--colour", "-c", OPT_CHOICE, 0, "red|green", colours, 0, "c" },
    { "--file", NULL, OPT_STRING, OPT_REPEATED, "FILE", NULL, 0, "f" },
    { "--quiet", "-q", OPT_FLAG, 0, NULL, NULL, 0, "q" },
};
static const cmd_spec_t test_cmd = {
    .name = "test", .operands = "-- CMD", .min_operands = 1, .max_operands = OPERANDS_ANY,
    .options_first = true, .options = test_options, .noptions = 5,
};

/* Parses the words of line (space-separated, at most 15). */
static int parse_line(const char *line, opts_t *o)
{
    static char buf[256];
    static char *argv[16];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *w = strtok(buf, " "); w != NULL && argc < 15; w = strtok(NULL, " "))
        argv[argc++] = w;
    return opts_parse(&test_cmd, argc, argv, o);
}

START_TEST(options_parse)
{
    opts_t o;
    ck_assert_int_eq(parse_line("--gate 20MiB --top=3 -c green --file a --file=b -q -- cmd --gate", &o), OPTS_OK);
    ck_assert(o.v[0].set);
    ck_assert_uint_eq(o.v[0].number, 20 << 20);
    ck_assert_str_eq(o.v[0].given, "--gate");
    ck_assert_uint_eq(o.v[1].number, 3);
    ck_assert_int_eq(o.v[2].choice, 1);
    ck_assert_uint_eq(o.v[3].count, 2);
    ck_assert_str_eq(o.v[3].all[1], "b");
    ck_assert(o.v[4].set);
    ck_assert_uint_eq(o.noperands, 2);
    ck_assert_str_eq(o.operands[1], "--gate"); /* CMD's own, after "--" */
    ck_assert_ptr_null(o.operands[2]);
    opts_free(&o);
    /* An optional value is the next word only when it begins with a digit. */
    ck_assert_int_eq(parse_line("--old-gate python x.py", &o), OPTS_OK);
    ck_assert(o.v[0].set);
    ck_assert_ptr_null(o.v[0].text);
    ck_assert_str_eq(o.v[0].given, "--old-gate");
    ck_assert_str_eq(o.operands[0], "python");
    ck_assert_str_eq(o.operands[1], "x.py"); /* options end at CMD */
    opts_free(&o);
    ck_assert_int_eq(parse_line("--gate=10M cmd", &o), OPTS_OK);
    ck_assert_uint_eq(o.v[0].number, 10 << 20);
    opts_free(&o);
    ck_assert_int_eq(parse_line("-q --help cmd", &o), OPTS_HELP);
    ck_assert_ptr_null(o.v);
    static const char *const refused[] = {
        "--gate 20XB cmd", "--gate= cmd", "--top 11 cmd", "--top x cmd", "--top -1 cmd", "--top",
        "--colour blue cmd", "--file", "--file -- cmd", "--quiet=1 cmd", "--frob cmd", "-c=red cmd",
        "--gatex cmd", "", "--quiet",
    };
    /* Each refusal says one line on stderr; the suite's output needs none. */
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ck_assert_msg(parse_line(refused[i], &o) == OPTS_ERROR, "accepted \"%s\"", refused[i]);
        ck_assert_ptr_null(o.v);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpuleak-cli");
    TCase *units = tcase_create("units");
    tcase_add_test(units, sizes_parse);
    tcase_add_test(units, sizes_reject);
    tcase_add_test(units, times_parse);
    tcase_add_test(units, sizes_format);
    tcase_add_test(units, options_parse);
    suite_add_tcase(s, units);
    TCase *supp = tcase_create("suppressions");
    tcase_add_test(supp, supp_matching);
    tcase_add_test(supp, supp_file_syntax);
    tcase_add_test(supp, supp_defaults);
    suite_add_tcase(s, supp);
    TCase *load = tcase_create("loader");
    tcase_add_test(load, loader_accepts_good);
    tcase_add_test(load, loader_rejects_bad);
    tcase_add_test(load, loader_reads_piecewise);
    tcase_add_test(load, plain_json_is_read_as_jansson_reads_it);
    tcase_add_test(load, loader_dumps_what_it_read);
    tcase_add_test(load, dump_parts_make_the_report);
    tcase_add_test(load, loader_resolves_version_2_tables);
    tcase_add_test(load, views_name_the_shims_origin);
    tcase_add_test(load, loader_file_errors);
    tcase_add_test(load, loader_reads_status);
    tcase_add_test(load, loader_reads_oom);
    tcase_add_test(load, loader_reads_python_layout);
    suite_add_tcase(s, load);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
