/* holder_set.c: holders.py's answer read into a table (holder_set.h). */
#include "holder_set.h"
#include "clock.h"
#include "report_format.h"

#include <stdlib.h>
#include <string.h>

/* An allocation the search named, by start then site. */
typedef struct named_key {
    uint64_t key;
    uint32_t site;
} named_key_t;

struct holder_set {
    char *answer;          /* the entries' strings point into it */
    holder_t *holders;     /* by site, then bytes */
    size_t holder_count;
    named_key_t *keys;
    size_t key_count;
    holder_search_t search;
};

static int by_site_then_bytes(const void *a, const void *b)
{
    const holder_t *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_named_key(const void *a, const void *b)
{
    const named_key_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* One allocation the search named: the line's fields stay in the answer,
 * the holder's part (after the id) compared whole. */
typedef struct named {
    uint32_t site;
    int kind;
    uint64_t size;
    char *holder;
} named_t;

static int by_site_then_holder(const void *a, const void *b)
{
    const named_t *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return strcmp(x->holder, y->holder);
}

/* Splits the next tab-separated field off *text. */
static char *field(char **text)
{
    char *start = *text, *tab = strchr(start, '\t');
    if (tab != NULL) {
        *tab = '\0';
        *text = tab + 1;
    } else {
        *text = start + strlen(start);
    }
    return start;
}

/* The last line: "#\tobjects\thow it ended". */
static void read_ending(holder_search_t *search, char *line)
{
    char *rest = line + 1;
    field(&rest);
    search->objects = strtoull(field(&rest), NULL, 10);
    static const char *const endings[] = { "done", "all", "budget", REPORT_SEARCH_AUDIT_HOOKS };
    const char *how = field(&rest);
    search->ended = "error";
    for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++)
        if (strcmp(how, endings[i]) == 0)
            search->ended = endings[i];
}

/* Groups the named allocations by site and holder into set->holders. */
static int group(holder_set_t *set, named_t *found, size_t n)
{
    qsort(found, n, sizeof *found, by_site_then_holder);
    set->holders = calloc(n ? n : 1, sizeof *set->holders);
    if (set->holders == NULL)
        return -1;
    for (size_t i = 0, next; i < n; i = next) {
        holder_t *h = &set->holders[set->holder_count++];
        h->site = found[i].site;
        h->kind = found[i].kind;
        for (next = i; next < n && by_site_then_holder(&found[next], &found[i]) == 0; next++) {
            h->bytes += found[next].size;
            h->allocations++;
        }
        /* Split only once the run is counted: the comparisons need it whole. */
        char *text = found[i].holder;
        h->graph = strcmp(field(&text), "1") == 0;
        h->name = field(&text);
        h->type = field(&text);
        h->owner = field(&text);
        h->file = field(&text);
        h->path = field(&text);
        h->role = composition_role_of_word(field(&text));
        if (h->role < 0)
            h->role = h->graph ? COMPOSITION_saved_for_backward : COMPOSITION_other_tensors;
        /* Memory outside PyTorch's tensors is that whatever holds it (a
         * CuPy array, a hand-made wrapper). */
        if (h->kind != REPORT_KIND_tensor)
            h->role = COMPOSITION_outside_torch;
        h->part = field(&text);
        if (*h->part == '\0')
            h->part = h->name;
    }
    qsort(set->holders, set->holder_count, sizeof *set->holders, by_site_then_bytes);
    return 0;
}

/* Orders holders by role, then owner: an owner's bytes are added at once. */
static int by_role_then_part(const void *a, const void *b)
{
    const holder_t *x = *(const holder_t *const *)a, *y = *(const holder_t *const *)b;
    if (x->role != y->role)
        return x->role < y->role ? -1 : 1;
    return strcmp(x->part, y->part);
}

/* The set's composition (composition.h): the named memory by its holders'
 * roles and owners, the rest of the records' tensors as unnamed, their
 * other GPU memory as outside PyTorch's allocator, and what the driver's
 * gpu_bytes holds beyond both as PyTorch's cache. */
static int compose(holder_set_t *set, const tracker_record_t *records, size_t count,
                   uint64_t gpu_bytes)
{
    uint64_t tensors = 0, outside = 0, named[2] = { 0, 0 };
    for (size_t i = 0; i < count; i++) {
        if (records[i].kind == REPORT_KIND_tensor)
            tensors += records[i].size;
        else if (tracker_is_driver_gpu_kind(records[i].kind))
            outside += records[i].size;
    }
    const holder_t **order = malloc((set->holder_count ? set->holder_count : 1) * sizeof *order);
    if (order == NULL)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < set->holder_count; i++)
        if (set->holders[i].kind == REPORT_KIND_tensor
            || tracker_is_driver_gpu_kind(set->holders[i].kind))
            order[n++] = &set->holders[i];
    qsort(order, n, sizeof *order, by_role_then_part);
    composition_t *c = &set->search.composition;
    for (size_t i = 0, next; i < n; i = next) {
        uint64_t bytes = 0;
        for (next = i; next < n && by_role_then_part(&order[next], &order[i]) == 0; next++)
            bytes += order[next]->bytes;
        composition_add(c, (composition_role_t)order[i]->role, order[i]->part, bytes);
        named[order[i]->kind == REPORT_KIND_tensor] += bytes;
    }
    free(order);
    composition_add(c, COMPOSITION_unnamed_tensors, NULL, tensors - named[1]);
    composition_add(c, COMPOSITION_outside_torch, NULL, outside - named[0]);
    if (gpu_bytes > tensors + outside)
        composition_add(c, COMPOSITION_torch_cache, NULL, gpu_bytes - tensors - outside);
    return 0;
}

holder_set_t *holder_set_make(char *answer, const tracker_record_t *records, size_t count,
                              uint64_t elapsed_ns, uint64_t gpu_bytes)
{
    holder_set_t *set = calloc(1, sizeof *set);
    size_t lines = 1;
    for (const char *p = answer; p != NULL && *p != '\0'; p++)
        lines += *p == '\n';
    named_t *found = malloc(lines * sizeof *found);
    if (set != NULL)
        set->keys = malloc(lines * sizeof *set->keys);
    if (set == NULL || found == NULL || set->keys == NULL) {
        free(found);
        holder_set_free(set);
        free(answer);
        return NULL;
    }
    set->answer = answer;
    set->search = (holder_search_t){ .ran = 1, .ended = "error", .elapsed_ns = elapsed_ns,
                                     .made_ns = clock_monotonic_ns() };
    size_t n = 0;
    char *save = NULL;
    for (char *line = answer != NULL ? strtok_r(answer, "\n", &save) : NULL; line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') {
            read_ending(&set->search, line);
            continue;
        }
        char *end;
        unsigned long long id = strtoull(line, &end, 10);
        if (*end != '\t' || id >= count)
            continue;
        set->keys[set->key_count++] = (named_key_t){ records[id].key, records[id].site };
        found[n++] = (named_t){ records[id].site, records[id].kind, records[id].size, end + 1 };
        set->search.named_allocations++;
        set->search.named_bytes += records[id].size;
    }
    int failed = group(set, found, n) || compose(set, records, count, gpu_bytes);
    free(found);
    if (failed) {
        holder_set_free(set);
        return NULL;
    }
    qsort(set->keys, set->key_count, sizeof *set->keys, by_named_key);
    return set;
}

void holder_set_free(holder_set_t *set)
{
    if (set == NULL)
        return;
    free(set->answer);
    free(set->holders);
    free(set->keys);
    free(set);
}

size_t holder_set_site(const holder_set_t *set, uint32_t site, const holder_t **out)
{
    *out = NULL;
    if (set == NULL)
        return 0;
    size_t lo = 0, hi = set->holder_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (set->holders[mid].site < site)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t n = 0;
    while (lo + n < set->holder_count && set->holders[lo + n].site == site)
        n++;
    *out = n ? &set->holders[lo] : NULL;
    return n;
}

int holder_set_named(const holder_set_t *set, uint64_t key, uint32_t site)
{
    if (set == NULL || set->key_count == 0)
        return 0;
    named_key_t want = { key, site };
    return bsearch(&want, set->keys, set->key_count, sizeof *set->keys, by_named_key) != NULL;
}

void holder_set_search(const holder_set_t *set, holder_search_t *out)
{
    if (set != NULL)
        *out = set->search;
    else
        memset(out, 0, sizeof *out);
}
