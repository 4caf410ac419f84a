#include "chart.h"
#include "units.h"

#include <stdlib.h>

/* The axis unit that keeps the largest label to four digits. */
static void axis_unit(uint64_t max, const char **name, double *scale)
{
    static const struct { uint64_t size; const char *name; } units[] = {
        { 1ull << 40, "TiB" }, { 1ull << 30, "GiB" }, { 1ull << 20, "MiB" }, { 1ull << 10, "KiB" },
    };
    *name = "B";
    *scale = 1.0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (max >= units[i].size) {
            *name = units[i].name;
            *scale = (double)units[i].size;
            return;
        }
}

static int column_of(uint64_t t_ns, uint64_t span, int width)
{
    int c = span ? (int)((double)t_ns / (double)span * (width - 1)) : 0;
    return c < 0 || c >= width ? width - 1 : c;
}

/* The columns of a chart: the highest bytes each held, and the '#'
 * column of the peak. */
typedef struct columns {
    uint64_t *top;
    uint64_t max;
    int peak_col;
} columns_t;

/* Fills cols->top from the points (a slice with no sample holds what the
 * slice before it ended with; left blank it would read as 0 B) and the
 * exact peak, where it is known, as the chart's top and its '#'. Returns
 * 0, or -1 when memory is lacking. */
static int fill_columns(const chart_t *chart, uint64_t span, int width, columns_t *cols)
{
    uint64_t *last = calloc((size_t)width, sizeof *last);
    char *seen = calloc((size_t)width, 1);
    cols->top = calloc((size_t)width, sizeof *cols->top);
    cols->max = 0;
    cols->peak_col = -1;
    int ok = cols->top != NULL && last != NULL && seen != NULL;
    for (size_t i = 0; ok && i < chart->npoints; i++) {
        const chart_point_t *p = &chart->points[i];
        int c = column_of(p->t_ns, span, width);
        uint64_t high = p->max_bytes > p->bytes ? p->max_bytes : p->bytes;
        if (high > cols->top[c])
            cols->top[c] = high;
        last[c] = p->bytes;
        seen[c] = 1;
        if (high > cols->max) {
            cols->max = high;
            cols->peak_col = c;
        }
    }
    for (int c = 1; ok && c < width; c++)
        if (!seen[c])
            cols->top[c] = last[c] = last[c - 1];
    free(last);
    free(seen);
    if (!ok)
        return -1;
    if (chart->peak_bytes > cols->max)
        cols->max = chart->peak_bytes;
    if (chart->peak_t_ns >= 0 && (uint64_t)chart->peak_t_ns <= span && chart->peak_bytes > 0) {
        cols->peak_col = column_of((uint64_t)chart->peak_t_ns, span, width);
        if (cols->top[cols->peak_col] < chart->peak_bytes)
            cols->top[cols->peak_col] = chart->peak_bytes;
    }
    return 0;
}

/* The time axis, with a '|' at each mark. */
static void print_axis(FILE *f, const chart_t *chart, uint64_t span, int width)
{
    fputs("      0 +", f);
    for (int c = 0; c < width; c++) {
        int marked = 0;
        for (size_t m = 0; m < chart->nmarks && !marked; m++)
            marked = column_of(chart->marks_t_ns[m], span, width) == c;
        fputc(marked ? '|' : '-', f);
    }
    fputs(">s\n", f);
    fprintf(f, "        0%*.*f\n", width - 1, 2, (double)span / 1e9);
}

void chart_print(FILE *f, const chart_t *chart, int width, int height)
{
    if (chart->npoints == 0 || width < 8 || height < 2)
        return;
    uint64_t span = chart->points[chart->npoints - 1].t_ns;
    columns_t cols;
    if (fill_columns(chart, span, width, &cols) != 0 || cols.max == 0) {
        free(cols.top);
        return;
    }
    const char *unit;
    double scale;
    axis_unit(cols.max, &unit, &scale);
    char size[UNITS_SIZE_BUF];
    double peak_s = chart->peak_t_ns >= 0 ? (double)chart->peak_t_ns / 1e9
                  : (double)span / (width - 1) * cols.peak_col / 1e9;
    fprintf(f, "\nGPU memory over time: peak %s at %.2f s ('#' marks it)\n",
            units_format_size(cols.max, size), peak_s);
    fprintf(f, "    %s\n", unit);
    for (int row = height; row >= 1; row--) {
        if (row == height)
            fprintf(f, "%7.2f^", (double)cols.max / scale);
        else if (row == (height + 1) / 2)
            fprintf(f, "%7.2f|", (double)cols.max / scale * row / height);
        else
            fputs("       |", f);
        for (int c = 0; c < width; c++) {
            /* A column reaches row k when it holds at least k/height of the max. */
            int filled = (double)cols.top[c] * height >= (double)cols.max * row - (double)cols.max / 2;
            fputc(filled ? (c == cols.peak_col ? '#' : ':') : ' ', f);
        }
        fputc('\n', f);
    }
    print_axis(f, chart, span, width);
    free(cols.top);
}
