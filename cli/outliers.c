/* outliers.c: the rule of docs/merge.md. */
#include "outliers.h"
#include "units.h"

#include <stdlib.h>
#include <string.h>

const char *const outliers_metric_names[OUTLIERS_METRICS] = { "peak", "leaked", "grew" };

void outliers_values(const load_report_t *r, uint64_t out[OUTLIERS_METRICS])
{
    out[OUTLIERS_PEAK] = r->totals.peak_bytes;
    out[OUTLIERS_LEAKED] = r->totals.leaked_bytes;
    out[OUTLIERS_GROWTH] = r->has_growth && r->growth_judged ? r->growth_bytes : 0;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The median of n values (n > 0), sorting them. */
static uint64_t median(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, by_u64);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
}

uint64_t outliers_threshold(const uint64_t *values, size_t n, uint64_t *middle)
{
    *middle = 0;
    uint64_t *v = n >= 3 ? malloc(n * sizeof *v) : NULL;
    if (v == NULL)
        return UINT64_MAX;
    memcpy(v, values, n * sizeof *v);
    uint64_t med = median(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = values[i] > med ? values[i] - med : med - values[i];
    double spread = 6.0 * 1.4826 * (double)median(v, n);
    free(v);
    double margin = spread > (double)med / 4 ? spread : (double)med / 4;
    if (margin < (double)(1 << 20))
        margin = (double)(1 << 20);
    *middle = med;
    return units_add(med, (uint64_t)margin);
}
