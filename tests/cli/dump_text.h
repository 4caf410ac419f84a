/* dump_text.h: what the report tests (test_cli.c) and the fuzzer
 * (fuzz_load.c) both need of report/dump.h: its text in a string, and a
 * page's two parts put together as page.js does. */
#ifndef GPULEAK_TESTS_DUMP_TEXT_H
#define GPULEAK_TESTS_DUMP_TEXT_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A dump_sink_t into a growing malloc'd string (data: its char **);
 * -1 out of memory. */
static int dump_to_text(const char *buf, size_t size, void *data)
{
    char **text = data;
    size_t used = strlen(*text);
    char *more = realloc(*text, used + size + 1);
    if (more == NULL)
        return -1;
    memcpy(more + used, buf, size);
    more[used + size] = '\0';
    *text = more;
    return 0;
}

/* page.js's extend: each list of more appended to into's, each object's
 * members added. */
static void dump_extend(json_t *into, json_t *more)
{
    const char *key;
    json_t *v;
    json_object_foreach(more, key, v) {
        json_t *at = json_object_get(into, key);
        if (json_is_array(v) && json_is_array(at))
            json_array_extend(at, v);
        else if (json_is_object(v) && json_is_object(at))
            dump_extend(at, v);
        else
            json_object_set(into, key, v);
    }
}

#endif
