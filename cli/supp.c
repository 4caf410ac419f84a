/* supp.c: suppression rules. A site is suppressed when any of its frames,
 * native or Python, matches a rule; matching follows LeakSanitizer (a plain
 * pattern matches as a substring) with fnmatch globs for patterns that use
 * *, ? or [. */
#define _GNU_SOURCE
#include "supp.h"
#include "frames.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

enum rule_scope {
    SCOPE_ANY_FRAME, /* any native or Python frame */
    SCOPE_RUNTIME_INTERNAL, /* cudart allocating on its own behalf, see below */
    SCOPE_SEGMENTS, /* any frame, of a driver allocation: PyTorch's cached
                       segments, never its tensors, whose stacks pass through
                       the same allocator (a tensor kept is the user's leak) */
};

typedef struct {
    char *pattern;
    char *source;
    enum rule_scope scope;
    int glob;
    uint64_t count, bytes;
} rule_t;

/* Which rules a text matches, remembered by its content (memo_t.hash, a
 * 64-bit hash of it, odd; 0: empty): a big report's 100,000 sites share a
 * few thousand names, each then matched once, not once per site. */
#define MEMO_SLOTS 16384
#define MEMO_MAX_RULES 64

typedef struct {
    uint64_t hash;
    uint64_t matches; /* bit i: rule i matches the text */
} memo_t;

struct supp_set {
    rule_t *rules;
    size_t n, cap;
    memo_t *memo; /* made at the first match; dropped when a rule is added */
};

/* The built-in list; docs/suppressions.md says why each entry is benign. */
static const struct {
    const char *pattern;
    enum rule_scope scope;
} default_rules[] = {
    { "*c10*cuda*CUDACachingAllocator*", SCOPE_SEGMENTS },
    { "libcublas*", SCOPE_ANY_FRAME },
    { "libcudnn*", SCOPE_ANY_FRAME },
    { "libnccl*", SCOPE_ANY_FRAME },
    { "libcudart*", SCOPE_RUNTIME_INTERNAL },
};

/* An empty set; NULL when out of memory. */
supp_set_t *supp_new(void)
{
    return calloc(1, sizeof(supp_set_t));
}

/* Frees the set and its rules; NULL is a no-op. */
void supp_free(supp_set_t *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n; i++) {
        free(set->rules[i].pattern);
        free(set->rules[i].source);
    }
    free(set->rules);
    free(set->memo);
    free(set);
}

static int add_rule(supp_set_t *set, const char *pattern, size_t len, const char *source,
                    enum rule_scope scope)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        rule_t *bigger = realloc(set->rules, cap * sizeof *bigger);
        if (bigger == NULL)
            return -1;
        set->rules = bigger;
        set->cap = cap;
    }
    rule_t *r = &set->rules[set->n];
    memset(r, 0, sizeof *r);
    r->pattern = strndup(pattern, len);
    r->source = strdup(source);
    if (r->pattern == NULL || r->source == NULL) {
        free(r->pattern);
        free(r->source);
        return -1;
    }
    r->scope = scope;
    r->glob = strpbrk(r->pattern, "*?[") != NULL;
    set->n++;
    free(set->memo);
    set->memo = NULL;
    return 0;
}

/* Adds the built-in rules. Returns 0, or -1 when out of memory. */
int supp_add_defaults(supp_set_t *set)
{
    for (size_t i = 0; i < sizeof default_rules / sizeof default_rules[0]; i++)
        if (add_rule(set, default_rules[i].pattern, strlen(default_rules[i].pattern), "default",
                     default_rules[i].scope) != 0)
            return -1;
    return 0;
}

/* Parses one line of a suppressions file: blank lines and "#" comments are
 * skipped, "leak:PATTERN" adds a rule, anything else is an error (a typo
 * that silently suppressed nothing would turn into a confusing failure).
 * Returns 0, or -1 with *error a malloc'd message without the file name. */
int supp_add_line(supp_set_t *set, const char *line, const char *source, char **error)
{
    *error = NULL;
    while (isspace((unsigned char)*line))
        line++;
    size_t len = strlen(line);
    while (len > 0 && isspace((unsigned char)line[len - 1]))
        len--;
    if (len == 0 || line[0] == '#')
        return 0;
    if (len < 5 || strncmp(line, "leak:", 5) != 0) {
        const char *colon = memchr(line, ':', len);
        if (colon != NULL && asprintf(error, "unknown suppression type \"%.*s\" (only leak: is read)",
                                      (int)(colon - line > 40 ? 40 : colon - line), line) >= 0)
            return -1;
        *error = strdup("expected \"leak:PATTERN\"");
        return -1;
    }
    const char *pattern = line + 5;
    size_t plen = len - 5;
    while (plen > 0 && isspace((unsigned char)*pattern)) {
        pattern++;
        plen--;
    }
    if (plen == 0) {
        *error = strdup("empty pattern after \"leak:\"");
        return -1;
    }
    if (add_rule(set, pattern, plen, source, SCOPE_ANY_FRAME) != 0) {
        *error = strdup("out of memory");
        return -1;
    }
    return 0;
}

/* Reads a suppressions file. Returns 0, or -1 with *error a malloc'd line
 * "PATH:LINE: problem" (or "PATH: problem"). */
int supp_load_file(supp_set_t *set, const char *path, char **error)
{
    *error = NULL;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (asprintf(error, "%s: cannot open: %s", path, strerror(errno)) < 0)
            *error = NULL;
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int rc = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        char *why = NULL;
        if ((ssize_t)strlen(line) != got)
            why = strdup("contains a NUL byte");
        else if (supp_add_line(set, line, path, &why) == 0)
            continue;
        if (asprintf(error, "%s:%ld: %s", path, lineno, why ? why : "out of memory") < 0)
            *error = NULL;
        free(why);
        rc = -1;
        break;
    }
    if (rc == 0 && ferror(f)) {
        if (asprintf(error, "%s: cannot read: %s", path, strerror(errno)) < 0)
            *error = NULL;
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* A glob must match the whole text or, for paths, the last component (so
 * "libcublas*" matches "/usr/lib/x86_64-linux-gnu/libcublas.so.12"); a plain
 * pattern matches anywhere, as in LeakSanitizer. */
static int text_matches(const rule_t *r, const char *text)
{
    if (text == NULL)
        return 0;
    if (!r->glob)
        return strstr(text, r->pattern) != NULL;
    if (fnmatch(r->pattern, text, 0) == 0)
        return 1;
    const char *base = frame_text_basename(text);
    return base != text && fnmatch(r->pattern, base, 0) == 0;
}

/* The rules text matches, as bits (bit i: rule i), through the set's
 * memo; the set must have at most MEMO_MAX_RULES rules. */
static uint64_t text_rules(const supp_set_t *set, const char *text)
{
    if (text == NULL)
        return 0;
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (const char *c = text; *c != '\0'; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    h |= 1;
    memo_t scratch, *m = set->memo != NULL ? &set->memo[h & (MEMO_SLOTS - 1)] : &scratch;
    if (m == &scratch || m->hash != h) {
        m->hash = h;
        m->matches = 0;
        for (size_t k = 0; k < set->n; k++)
            if (text_matches(&set->rules[k], text))
                m->matches |= 1ull << k;
    }
    return m->matches;
}

/* Whether rule i matches text. */
static int rule_matches(const supp_set_t *set, size_t i, const char *text)
{
    if (set->n > MEMO_MAX_RULES)
        return text_matches(&set->rules[i], text);
    return (int)((text_rules(set, text) >> i) & 1);
}

/* The rules any frame of site matches, as bits. */
static uint64_t site_rules(const supp_set_t *set, const load_site_t *site)
{
    uint64_t bits = 0;
    for (size_t k = 0; k < site->nstack; k++)
        bits |= text_rules(set, site->stack[k]->function) | text_rules(set, site->stack[k]->file)
              | text_rules(set, site->stack[k]->module);
    for (size_t k = 0; k < site->npython; k++)
        bits |= text_rules(set, site->python[k]->function) | text_rules(set, site->python[k]->file);
    return bits;
}

/* Whether rule i matches any frame of site, from site_rules' bits when the
 * set is small enough to have them (*bits computed at the first call). */
static int any_frame_matches(const supp_set_t *set, size_t i, const load_site_t *site,
                             uint64_t *bits, bool *have_bits)
{
    if (set->n <= MEMO_MAX_RULES) {
        if (!*have_bits)
            *bits = site_rules(set, site);
        *have_bits = true;
        return (int)((*bits >> i) & 1);
    }
    const rule_t *r = &set->rules[i];
    for (size_t k = 0; k < site->nstack; k++)
        if (text_matches(r, site->stack[k]->function) || text_matches(r, site->stack[k]->file)
            || text_matches(r, site->stack[k]->module))
            return 1;
    for (size_t k = 0; k < site->npython; k++)
        if (text_matches(r, site->python[k]->function) || text_matches(r, site->python[k]->file))
            return 1;
    return 0;
}

static int is_alloc_entry(const char *function)
{
    static const char *const entries[] = {
        "cudaMalloc", "cudaHostAlloc", "cudaMallocHost", "cudaMallocManaged", "cudaMallocPitch",
        "cudaMalloc3D", "cudaMallocArray", "cudaMalloc3DArray", "cudaMallocMipmappedArray",
        "cudaMallocAsync", "cudaMallocFromPoolAsync",
    };
    if (function == NULL)
        return 1; /* unknown: assume the user asked, never hide a real leak */
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        size_t n = strlen(entries[i]);
        if (strncmp(function, entries[i], n) == 0 &&
            (function[n] == '\0' || strncmp(function + n, "_v", 2) == 0 || strncmp(function + n, "_ptsz", 5) == 0))
            return 1;
    }
    return 0;
}

/* cudart's own allocations (module loading, lazy init) are benign, but a
 * cudaMalloc the program forgot to free also has cudart innermost. So the
 * rule applies only when the innermost frame past the driver is in the
 * library and the call that entered the library is not an allocation API. */
static int runtime_internal_matches(const supp_set_t *set, size_t rule, const load_site_t *site)
{
    size_t i = 0;
    while (i < site->nstack && fnmatch("libcuda.so*", frame_text_basename(site->stack[i]->module), 0) == 0)
        i++;
    if (i == site->nstack || !rule_matches(set, rule, site->stack[i]->module))
        return 0;
    size_t entry = i;
    while (entry + 1 < site->nstack && rule_matches(set, rule, site->stack[entry + 1]->module))
        entry++;
    return !is_alloc_entry(site->stack[entry]->function);
}

/* The index of the first rule that suppresses site, or -1. */
int supp_match(const supp_set_t *set, const load_site_t *site)
{
    uint64_t bits = 0;
    bool have_bits = false;
    if (set != NULL && set->memo == NULL && set->n <= MEMO_MAX_RULES)
        ((supp_set_t *)set)->memo = calloc(MEMO_SLOTS, sizeof *set->memo); /* NULL: no memo */
    for (size_t i = 0; set != NULL && i < set->n; i++) {
        const rule_t *r = &set->rules[i];
        if (r->scope == SCOPE_RUNTIME_INTERNAL) {
            if (runtime_internal_matches(set, i, site))
                return (int)i;
            continue;
        }
        if (r->scope == SCOPE_SEGMENTS && site->kind != NULL && strcmp(site->kind, "tensor") == 0)
            continue;
        if (any_frame_matches(set, i, site, &bits, &have_bits))
            return (int)i;
    }
    return -1;
}

/* Counts what a rule suppressed, for the "Suppressions used" list. */
void supp_record(supp_set_t *set, int rule, uint64_t allocations, uint64_t bytes)
{
    if (rule < 0 || (size_t)rule >= set->n)
        return;
    rule_t *r = &set->rules[rule];
    r->count = r->count > UINT64_MAX - allocations ? UINT64_MAX : r->count + allocations;
    r->bytes = r->bytes > UINT64_MAX - bytes ? UINT64_MAX : r->bytes + bytes;
}

size_t supp_count(const supp_set_t *set)
{
    return set ? set->n : 0;
}

/* A read-only view of one rule and its counters. */
supp_rule_info_t supp_info(const supp_set_t *set, size_t rule)
{
    const rule_t *r = &set->rules[rule];
    supp_rule_info_t info = { r->pattern, r->source, r->count, r->bytes };
    return info;
}

/* LeakSanitizer's "Suppressions used" block, listing only rules that
 * matched, so a stale rule is visible by its absence. */
void supp_print_used(FILE *f, const supp_set_t *set)
{
    int any = 0;
    for (size_t i = 0; set != NULL && i < set->n; i++) {
        const rule_t *r = &set->rules[i];
        if (r->count == 0 && r->bytes == 0)
            continue;
        if (!any)
            fputs("-----------------------------------------------------\n"
                  "Suppressions used:\n  count      bytes template\n", f);
        any = 1;
        fprintf(f, "%7llu %10llu ", (unsigned long long)r->count, (unsigned long long)r->bytes);
        frame_text_put(f, r->pattern);
        fprintf(f, "%s\n", strcmp(r->source, "default") == 0 ? " (default)" : "");
    }
    if (any)
        fputs("-----------------------------------------------------\n", f);
}
