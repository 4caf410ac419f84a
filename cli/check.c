/* check.c: judging reports against budgets. A failure names the budget,
 * the site and the site's origin on one line, because that line is what a
 * CI log shows and what a person greps for. */
#define _GNU_SOURCE
#include "check.h"
#include "diagnosis.h"
#include "frames.h"
#include "text.h"
#include "units.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *suite;   /* the report file */
    char *name;    /* the budget */
    char *failure; /* NULL when it passed */
    char *detail;  /* every failure line, or NULL */
    int error;     /* the report could not be judged */
    char *skipped; /* why the budget was not judged, or NULL */
} junit_case_t;

struct check_junit {
    junit_case_t *cases;
    size_t n, cap;
};

/* An empty collection of test cases; NULL when out of memory. */
check_junit_t *check_junit_new(void)
{
    return calloc(1, sizeof(check_junit_t));
}

static void junit_add(check_junit_t *j, const char *suite, const char *name, const char *failure,
                      const char *detail, int error)
{
    if (j == NULL)
        return;
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 8;
        junit_case_t *bigger = realloc(j->cases, cap * sizeof *bigger);
        if (bigger == NULL)
            return; /* the verdict on stdout and the exit code still hold */
        j->cases = bigger;
        j->cap = cap;
    }
    junit_case_t *c = &j->cases[j->n++];
    c->suite = strdup(suite);
    c->name = strdup(name);
    c->failure = failure ? strdup(failure) : NULL;
    c->detail = detail ? strdup(detail) : NULL;
    c->error = error;
    c->skipped = NULL;
}

/* Records a budget not judged on a report, and why: JUnit's <skipped>, so
 * a CI system shows it neither passed nor failed. */
static void junit_skip(check_junit_t *j, const char *suite, const char *name, const char *why)
{
    size_t before = j ? j->n : 0;
    junit_add(j, suite, name, NULL, NULL, 0);
    if (j != NULL && j->n > before)
        j->cases[j->n - 1].skipped = strdup(why);
}

/* Records a report that could not be read, so the XML shows it as an
 * error instead of leaving the file out. */
void check_junit_error(check_junit_t *junit, const char *file, const char *message)
{
    junit_add(junit, file, "read", message, NULL, 1);
}

void check_junit_free(check_junit_t *j)
{
    if (j == NULL)
        return;
    for (size_t i = 0; i < j->n; i++) {
        free(j->cases[i].suite);
        free(j->cases[i].name);
        free(j->cases[i].failure);
        free(j->cases[i].detail);
        free(j->cases[i].skipped);
    }
    free(j->cases);
    free(j);
}

/* XML 1.0 cannot carry most control characters even escaped; they become
 * '?' so xmllint (and Jenkins) accept any report's function names. */
static void xml_put(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
                fputc('?', f);
            else
                fputc(*p, f);
        }
    }
}

/* Writes the JUnit XML: one testsuite per report, one testcase per budget
 * (a budget not judged on a report is a skipped one). Returns 0, or -1
 * with errno set when the file cannot be written. */
int check_junit_write(const check_junit_t *j, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    size_t failures = 0, errors = 0, skipped = 0;
    for (size_t i = 0; i < j->n; i++) {
        failures += j->cases[i].failure && !j->cases[i].error;
        errors += j->cases[i].error;
        skipped += j->cases[i].skipped != NULL;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites name=\"gpuleak\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
            j->n, failures, errors, skipped);
    for (size_t i = 0; i < j->n;) {
        size_t end = i, sf = 0, se = 0, ss = 0;
        while (end < j->n && strcmp(j->cases[end].suite, j->cases[i].suite) == 0) {
            sf += j->cases[end].failure && !j->cases[end].error;
            se += j->cases[end].error;
            ss += j->cases[end].skipped != NULL;
            end++;
        }
        fputs("  <testsuite name=\"", f);
        xml_put(f, j->cases[i].suite);
        fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
                end - i, sf, se, ss);
        for (; i < end; i++) {
            const junit_case_t *c = &j->cases[i];
            fputs("    <testcase classname=\"gpuleak\" name=\"", f);
            xml_put(f, c->name);
            fputs("\"", f);
            if (c->skipped != NULL) {
                fputs(">\n      <skipped message=\"", f);
                xml_put(f, c->skipped);
                fputs("\"/>\n    </testcase>\n", f);
                continue;
            }
            if (c->failure == NULL) {
                fputs("/>\n", f);
                continue;
            }
            fprintf(f, ">\n      <%s message=\"", c->error ? "error" : "failure");
            xml_put(f, c->failure);
            fputs("\">", f);
            xml_put(f, c->detail);
            fprintf(f, "</%s>\n    </testcase>\n", c->error ? "error" : "failure");
        }
        fputs("  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        if (errno == 0)
            errno = EIO;
        return -1;
    }
    return 0;
}

/* The failing sites that share an origin line, summed: what one FAIL line
 * is about. top is the largest of them, whose kind and origin it names. */
typedef struct {
    char *key;
    const load_site_t *top;
    uint64_t bytes, allocations;
    size_t sites;
} line_group_t;

static int by_group_bytes(const void *a, const void *b)
{
    const line_group_t *x = a, *y = b;
    return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1) : strcmp(x->key, y->key);
}

/* A site and its grouping key, for sorting sites into groups. */
typedef struct {
    char *key;
    const load_site_t *site;
} keyed_site_t;

static int by_key(const void *a, const void *b)
{
    return strcmp(((const keyed_site_t *)a)->key, ((const keyed_site_t *)b)->key);
}

/* Groups the sites of list that keep() holds by kind, device and origin
 * line (one entry names one kind on one device), largest first, into *out
 * (malloc'd); sorted by key first, so a report of many lines costs n log n.
 * Returns how many groups; 0 with *out NULL when out of memory. */
static size_t group_by_line(const load_list_t *list, int (*keep)(const load_site_t *, void *),
                            void *arg, line_group_t **out)
{
    keyed_site_t *k = calloc(list->n ? list->n : 1, sizeof *k);
    line_group_t *g = calloc(list->n ? list->n : 1, sizeof *g);
    size_t nk = 0, n = 0;
    *out = NULL;
    if (k == NULL || g == NULL) {
        free(k);
        free(g);
        return 0;
    }
    for (size_t i = 0; i < list->n; i++) {
        const load_site_t *s = &list->v[i];
        if (!keep(s, arg))
            continue;
        char *line = frames_origin_line(s);
        char *key = NULL;
        if (line == NULL || asprintf(&key, "%s/%ld/%s", s->kind ? s->kind : "?", s->device, line) < 0)
            key = NULL;
        free(line);
        if (key == NULL) {
            for (size_t j = 0; j < nk; j++)
                free(k[j].key);
            free(k);
            free(g);
            return 0;
        }
        k[nk++] = (keyed_site_t){ key, s };
    }
    qsort(k, nk, sizeof *k, by_key);
    for (size_t i = 0; i < nk; i++) {
        if (n == 0 || strcmp(g[n - 1].key, k[i].key) != 0)
            g[n++] = (line_group_t){ k[i].key, k[i].site, 0, 0, 0 };
        else
            free(k[i].key);
        line_group_t *cur = &g[n - 1];
        cur->bytes = units_add(cur->bytes, k[i].site->bytes);
        cur->allocations += k[i].site->allocations;
        cur->sites++;
        if (k[i].site->bytes > cur->top->bytes)
            cur->top = k[i].site;
    }
    free(k);
    qsort(g, n, sizeof *g, by_group_bytes);
    *out = g;
    return n;
}

static void free_groups(line_group_t *g, size_t n)
{
    for (size_t j = 0; j < n && g != NULL; j++)
        free(g[j].key);
    free(g);
}

/* One verdict line per failing origin line (its sites summed, the largest
 * site's kind and origin named); the lines also go into the JUnit detail,
 * which is why they are collected in a memstream first. */
static void group_line(FILE *out, FILE *detail, const char *file, const char *flag, uint64_t budget,
                       const char *what, const line_group_t *g)
{
    char b[UNITS_SIZE_BUF];
    char *origin = frames_origin(g->top);
    for (int pass = 0; pass < 2; pass++) {
        FILE *f = pass ? detail : out;
        if (f == NULL)
            continue;
        fputs("FAIL ", f);
        frame_text_put(f, file);
        fprintf(f, ": %s %s: %s %llu byte(s)", flag, units_format_size(budget, b), what,
                (unsigned long long)g->bytes);
        /* A leak's allocations are those live at exit; a growth entry's
         * are the site's whole run ("growth of 6 MiB in 5 allocation(s)"
         * of 2 MiB each read wrong), so none is given. */
        if (strcmp(what, "growth of") != 0)
            fprintf(f, " in %llu allocation(s)", (unsigned long long)g->allocations);
        fprintf(f, " of %s at ", frames_site_phrase(g->top));
        frame_text_put(f, origin ? origin : "?");
        if (g->sites > 1)
            fprintf(f, " (%zu sites)", g->sites);
        const load_holder_t *h = g->top->nholders > 0 ? &g->top->holders[0] : NULL;
        if (h != NULL) {
            char phrase[1024];
            report_holder_phrase(phrase, sizeof phrase, h->name, h->type, h->owner, h->file, h->graph, h->path);
            fputs(", held by ", f);
            frame_text_put(f, phrase);
        }
        fputc('\n', f);
        if (h != NULL)
            diagnosis_holder(f, 2, h->name, h->graph, h->role, g->bytes, strcmp(what, "growth of") == 0,
                             g->top->framework);
    }
    free(origin);
}

/* How a budget's total reads: "13.0 MiB leaked", "grew by 6.0 MiB". */
typedef struct {
    const char *before, *after;
} total_words_t;

/* The first FAIL line of a budget, on f: the total against it, and over
 * how many sites ("13.0 MiB leaked in all (13631488 byte(s)), at 3
 * site(s)"), so that sites each under the budget still say why together
 * they fail. */
static void total_line(FILE *f, const char *file, const char *flag, uint64_t budget,
                       total_words_t words, uint64_t total, size_t sites)
{
    char b[UNITS_SIZE_BUF], t[UNITS_SIZE_BUF];
    fputs("FAIL ", f);
    frame_text_put(f, file);
    fprintf(f, ": %s %s: %s%s%s in all (%llu byte(s)), ", flag, units_format_size(budget, b),
            words.before, units_format_size(total, t), words.after, (unsigned long long)total);
    if (sites > 0)
        fprintf(f, "at %zu site(s)\n", sites);
    else
        fputs("at no site recorded\n", f);
}

/* Prints the total line, then the groups of list that keep() holds, one
 * FAIL line each. */
static void group_lines(FILE *out, FILE *detail, const char *file, const char *flag,
                        uint64_t budget, const char *what, total_words_t words, uint64_t total,
                        const load_list_t *list, int (*keep)(const load_site_t *, void *), void *arg)
{
    line_group_t *g;
    size_t n = group_by_line(list, keep, arg, &g), sites = 0;
    for (size_t j = 0; j < n; j++)
        sites += g[j].sites;
    total_line(out, file, flag, budget, words, total, sites);
    if (detail != NULL)
        total_line(detail, file, flag, budget, words, total, sites);
    for (size_t j = 0; j < n; j++)
        group_line(out, detail, file, flag, budget, what, &g[j]);
    free_groups(g, n);
}

static int unsuppressed(const load_site_t *s, void *supp)
{
    return supp_match(supp, s) < 0;
}

static int grew(const load_site_t *s, void *unused)
{
    (void)unused;
    return s->bytes > 0;
}

static void pass_line(FILE *out, const char *file, const char *flag, uint64_t budget,
                      const char *what, uint64_t value)
{
    if (out == NULL)
        return;
    char a[UNITS_SIZE_BUF], b[UNITS_SIZE_BUF];
    fputs("PASS ", out);
    frame_text_put(out, file);
    fprintf(out, ": %s %s: %s %s\n", flag, units_format_size(budget, b), what, units_format_size(value, a));
}

typedef struct {
    char *text;
    size_t len;
    FILE *f;
} memout_t;

static void memout_open(memout_t *m)
{
    m->text = NULL;
    m->len = 0;
    m->f = open_memstream(&m->text, &m->len);
}

static void memout_close(memout_t *m)
{
    if (m->f != NULL)
        fclose(m->f);
    m->f = NULL;
}

int check_exit_code(int verdict, bool allow_unjudged)
{
    return verdict == CHECK_PASS ? 0
         : verdict == CHECK_UNJUDGED ? (allow_unjudged ? 0 : CHECK_EXIT_UNJUDGED)
         : verdict == CHECK_FAIL ? 1 : CLI_EXIT_USAGE;
}

/* A budget not judged on a report: one SKIP line naming it and why, and
 * a skipped JUnit case. Said always (gpuleak run's quiet gates too): a
 * budget silently not judged would read as passed. Unjudged: nothing was
 * judged, so a gate does not pass on it unless told to. */
static int skip_line(FILE *out, const load_report_t *r, const char *flag, uint64_t budget,
                     check_junit_t *junit, const char *name, const char *why)
{
    char c[UNITS_SIZE_BUF];
    fputs("SKIP ", out);
    frame_text_put(out, r->path);
    fprintf(out, ": %s %s: ", flag, units_format_size(budget, c));
    frame_text_put(out, why);
    fputc('\n', out);
    junit_skip(junit, r->path, name, why);
    return CHECK_UNJUDGED;
}

/* A report taken while the program ran (a snapshot, a dump on request)
 * lists what was live then as its leaks: memory in use, not leaked, so
 * the leak budget is not judged on it. Nor on one written as a signal
 * killed the program (SIGTERM from a scheduler, ^C, a crash): its frees
 * never ran, so what was live then is not what it leaks. Growth and peak
 * mean the same in a running program and are judged as ever. */
static int skip_leaked(FILE *out, const load_report_t *r, const check_budget_t *b, check_junit_t *junit)
{
    const char *what = r->moment && strcmp(r->moment, "snapshot") == 0 ? "a snapshot"
                     : r->moment && strcmp(r->moment, "request") == 0 ? "a dump on request"
                     : "a report";
    const char *name = text_signal_name(r->signal);
    char *why = NULL;
    int n;
    if (text_killed(r) && r->signal > 0)
        n = asprintf(&why, "a report taken when the program was killed by signal %ld%s%s%s: "
                           "live is not leaked; growth and peak are judged",
                     r->signal, name ? " (" : "", name ? name : "", name ? ")" : "");
    else if (text_killed(r))
        n = asprintf(&why, "a report taken when the program was killed by a signal: "
                           "live is not leaked; growth and peak are judged");
    else
        n = asprintf(&why, "%s taken while the program ran (moment %s): live is not leaked; "
                           "growth and peak are judged",
                     what, r->moment ? r->moment : "unknown");
    if (n < 0)
        why = NULL;
    int verdict = skip_line(out, r, b->leaked_flag, b->max_leaked, junit, "max-leaked",
                            why ? why : "taken while the program ran");
    free(why);
    return verdict;
}

/* A run too short for the growth rule (status.growth_judged false) has an
 * empty growth section that says nothing: "growth 0 B" would be a false
 * assurance, so the growth budget is not judged on it. */
static int skip_growth(FILE *out, const load_report_t *r, const check_budget_t *b, check_junit_t *junit)
{
    char *why = NULL;
    if (asprintf(&why, "growth not judged: the run was too short (%llu sample(s) of live memory, "
                       "too few for the growth rule; docs/growth.md)",
                 (unsigned long long)r->growth_samples) < 0)
        why = NULL;
    int verdict = skip_line(out, r, b->growth_flag, b->max_growth, junit, "max-growth",
                            why ? why : "growth not judged: the run was too short");
    free(why);
    /* check's default judges growth where a report could: a short run's
     * leaks were judged, its growth left be. */
    return b->growth ? verdict : CHECK_PASS;
}

/* Leaks: every unsuppressed leak site counts; teardown leaks do not (the
 * driver reclaimed them) but are mentioned so they are not forgotten. */
static int judge_leaked(FILE *out, const load_report_t *r, const check_budget_t *b, supp_set_t *supp,
                        check_junit_t *junit)
{
    if (!r->complete || text_killed(r))
        return skip_leaked(out, r, b, junit);
    uint64_t leaked = 0;
    for (size_t i = 0; i < r->leaks.n; i++) {
        const load_site_t *s = &r->leaks.v[i];
        int rule = supp_match(supp, s);
        if (rule >= 0)
            supp_record(supp, rule, s->allocations, s->bytes);
        else
            leaked = units_add(leaked, s->bytes);
    }
    if (leaked <= b->max_leaked) {
        pass_line(b->quiet_pass ? NULL : out, r->path, b->leaked_flag, b->max_leaked, "unsuppressed leaks", leaked);
        junit_add(junit, r->path, "max-leaked", NULL, NULL, 0);
        return CHECK_PASS;
    }
    memout_t d;
    memout_open(&d);
    group_lines(out, d.f, r->path, b->leaked_flag, b->max_leaked, "leak of",
                (total_words_t){ "", " leaked" }, leaked, &r->leaks, unsuppressed, supp);
    memout_close(&d);
    char *msg = NULL;
    char a[UNITS_SIZE_BUF], c[UNITS_SIZE_BUF];
    if (asprintf(&msg, "%llu byte(s) (%s) leaked, over the budget of %s",
                 (unsigned long long)leaked, units_format_size(leaked, a),
                 units_format_size(b->max_leaked, c)) < 0)
        msg = NULL;
    junit_add(junit, r->path, "max-leaked", msg ? msg : "leaked over budget", d.text, 0);
    free(msg);
    free(d.text);
    return CHECK_FAIL;
}

static int judge_growth(FILE *out, const load_report_t *r, const check_budget_t *b, check_junit_t *junit)
{
    if (!r->has_growth) {
        fputs("gpuleak: ", stderr);
        frame_text_put(stderr, r->path);
        fprintf(stderr, ": %s needs a \"growth\" section, which this report does not have\n", b->growth_flag);
        junit_add(junit, r->path, "max-growth", "the report has no growth section", NULL, 1);
        return CHECK_ERROR;
    }
    if (!r->growth_judged)
        return skip_growth(out, r, b, junit);
    if (r->growth_bytes <= b->max_growth) {
        pass_line(b->quiet_pass ? NULL : out, r->path, b->growth_flag, b->max_growth, "growth", r->growth_bytes);
        junit_add(junit, r->path, "max-growth", NULL, NULL, 0);
        return CHECK_PASS;
    }
    memout_t d;
    memout_open(&d);
    group_lines(out, d.f, r->path, b->growth_flag, b->max_growth, "growth of",
                (total_words_t){ "grew by ", "" }, r->growth_bytes, &r->growth, grew, NULL);
    memout_close(&d);
    junit_add(junit, r->path, "max-growth", "growth over budget", d.text, 0);
    free(d.text);
    return CHECK_FAIL;
}

/* The site named for a peak failure: the largest one in the peak section
 * when the report has it, else the site whose own peak was largest. */
static const load_site_t *peak_site(const load_report_t *r)
{
    const load_list_t *list = r->has_peak && r->peak_sites.n ? &r->peak_sites : &r->sites;
    const load_site_t *best = NULL;
    for (size_t i = 0; i < list->n; i++) {
        uint64_t v = list == &r->sites ? list->v[i].peak_live_bytes : list->v[i].bytes;
        uint64_t bv = best == NULL ? 0 : list == &r->sites ? best->peak_live_bytes : best->bytes;
        if (best == NULL || v > bv)
            best = &list->v[i];
    }
    return best;
}

static int judge_peak(FILE *out, const load_report_t *r, const check_budget_t *b, check_junit_t *junit)
{
    uint64_t peak = r->totals.peak_bytes;
    if (peak <= b->max_peak) {
        pass_line(b->quiet_pass ? NULL : out, r->path, b->peak_flag, b->max_peak, "peak", peak);
        junit_add(junit, r->path, "max-peak", NULL, NULL, 0);
        return CHECK_PASS;
    }
    memout_t d;
    memout_open(&d);
    char a[UNITS_SIZE_BUF], c[UNITS_SIZE_BUF];
    const load_site_t *s = peak_site(r);
    char *origin = s ? frames_origin(s) : NULL;
    for (int pass = 0; pass < 2; pass++) {
        FILE *f = pass ? d.f : out;
        if (f == NULL)
            continue;
        fputs("FAIL ", f);
        frame_text_put(f, r->path);
        fprintf(f, ": %s %s: peak GPU memory %llu byte(s) (%s)", b->peak_flag,
                units_format_size(b->max_peak, c), (unsigned long long)peak, units_format_size(peak, a));
        if (s != NULL) {
            uint64_t sb = r->has_peak && r->peak_sites.n ? s->bytes : s->peak_live_bytes;
            fprintf(f, "; largest site %llu byte(s) of %s at ", (unsigned long long)sb,
                    frames_site_phrase(s));
            frame_text_put(f, origin ? origin : "?");
        }
        fputc('\n', f);
    }
    free(origin);
    memout_close(&d);
    junit_add(junit, r->path, "max-peak", "peak over budget", d.text, 0);
    free(d.text);
    return CHECK_FAIL;
}

supp_set_t *check_setup(check_budget_t *b, const opt_value_t *v)
{
    const opt_value_t *leaked = &v[CHECK_OPT_LEAKED], *growth = &v[CHECK_OPT_GROWTH],
                      *peak = &v[CHECK_OPT_PEAK], *files = &v[CHECK_OPT_SUPP];
    b->leaked = leaked->set;
    b->max_leaked = leaked->number;
    b->leaked_flag = leaked->set ? leaked->given : "--max-leaked";
    b->growth = growth->set;
    b->max_growth = growth->number;
    b->growth_flag = growth->set ? growth->given : "--max-growth";
    b->peak = peak->set;
    b->max_peak = peak->number;
    b->peak_flag = "--max-peak";
    b->allow_unjudged = v[CHECK_OPT_ALLOW_UNJUDGED].set;
    supp_set_t *supp = supp_new();
    if (supp == NULL || (!v[CHECK_OPT_NO_DEFAULTS].set && supp_add_defaults(supp) != 0)) {
        fputs("gpuleak: out of memory\n", stderr);
        supp_free(supp);
        return NULL;
    }
    for (size_t i = 0; i < files->count; i++) {
        char *err = NULL;
        if (supp_load_file(supp, files->all[i], &err) != 0) {
            frame_text_error_line(err);
            free(err);
            supp_free(supp);
            return NULL;
        }
    }
    return supp;
}

/* Judges every budget set in b on one report, printing a PASS or FAIL line
 * per budget (FAIL: one per site) on out and adding test cases to junit
 * (may be NULL). Suppression counters in supp accumulate across calls. The
 * leak budget is not judged on an incomplete report (r->complete false: a
 * snapshot or a dump on request, taken while the program ran) or on one
 * written as a signal killed the program (moment "signal"), nor the
 * growth budget on a run too short to judge growth: a SKIP line and a
 * skipped test case instead, which count as a pass. Returns the
 * worst verdict: CHECK_ERROR when a budget cannot be judged. */
int check_report(FILE *out, const load_report_t *r, const check_budget_t *b, supp_set_t *supp,
                 check_junit_t *junit)
{
    int verdict = CHECK_PASS, v;
    if (b->leaked) {
        v = judge_leaked(out, r, b, supp, junit);
        verdict = v > verdict ? v : verdict;
    }
    if (b->growth || (b->growth_where_judged && r->has_growth)) {
        v = judge_growth(out, r, b, junit);
        verdict = v > verdict ? v : verdict;
    }
    if (b->peak) {
        v = judge_peak(out, r, b, junit);
        verdict = v > verdict ? v : verdict;
    }
    /* A report whose tracking stopped early holds only what came before:
     * a pass there is not the pass of a whole run, so say so, quiet or not. */
    if (r->tracking != NULL && strcmp(r->tracking, "on") != 0) {
        fputs("note: ", out);
        frame_text_put(out, r->path);
        fputs(": tracking stopped early (", out);
        frame_text_put(out, r->reason ? r->reason : "no reason given");
        fputs("); the verdict covers only what was recorded before\n", out);
    }
    if (r->teardown.n > 0 && b->leaked && !b->quiet_pass) {
        char a[UNITS_SIZE_BUF];
        fputs("note: ", out);
        frame_text_put(out, r->path);
        fprintf(out, ": %s were still live at context teardown (not counted; see `gpuleak report`)\n",
                units_format_size(r->totals.teardown_leaked_bytes, a));
    }
    return verdict;
}
