/* json_plain.c: the plain subset of JSON (json_plain.h), parsed directly
 * into jansson's values. */
#include "json_plain.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deeper values are rare in a report and left to jansson, which allows
 * 2,048 levels. */
#define PLAIN_DEPTH 32
/* Longer keys are left to jansson: a report's keys are field names and
 * site ids. */
#define PLAIN_KEY_MAX 256
/* 19 decimal digits fit a uint64_t, so a long long's range (jansson's
 * json_int_t) is checked on the value: a time in nanoseconds has 19. */
#define PLAIN_DIGITS 19
/* Longer reals are left to jansson: the shim writes at most 17 digits. */
#define PLAIN_REAL_MAX 64

typedef struct {
    const char *p, *end;
} cursor_t;

static void skip_space(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

/* Whether the value just read ends where a value may end. */
static int at_boundary(const cursor_t *c)
{
    return c->p == c->end || (*c->p != '\0' && strchr(" \t\r\n,]}:", *c->p) != NULL);
}

/* The string at the quote c->p: its content at *start, *len bytes; 0 when
 * it holds an escape, a control character or a byte above 127, or does
 * not end. */
static int read_string(cursor_t *c, const char **start, size_t *len)
{
    const char *p = c->p + 1;
    for (const char *q = p; q < c->end; q++) {
        unsigned char ch = (unsigned char)*q;
        if (ch == '"') {
            *start = p;
            *len = (size_t)(q - p);
            c->p = q + 1;
            return 1;
        }
        if (ch < 0x20 || ch >= 0x80 || ch == '\\')
            return 0;
    }
    return 0;
}

static json_t *read_value(cursor_t *c, int depth);

static json_t *read_object(cursor_t *c, int depth)
{
    json_t *obj = json_object();
    c->p++;
    skip_space(c);
    if (obj != NULL && c->p < c->end && *c->p == '}') {
        c->p++;
        return obj;
    }
    while (obj != NULL) {
        const char *name;
        size_t len;
        char key[PLAIN_KEY_MAX];
        if (c->p >= c->end || *c->p != '"' || !read_string(c, &name, &len) || len >= sizeof key)
            break;
        memcpy(key, name, len);
        key[len] = '\0';
        skip_space(c);
        if (c->p >= c->end || *c->p != ':' || json_object_get(obj, key) != NULL)
            break;
        c->p++;
        skip_space(c);
        json_t *v = read_value(c, depth + 1);
        if (v == NULL || json_object_set_new_nocheck(obj, key, v) != 0)
            break;
        skip_space(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return obj;
        }
        if (c->p >= c->end || *c->p != ',')
            break;
        c->p++;
        skip_space(c);
    }
    json_decref(obj);
    return NULL;
}

static json_t *read_array(cursor_t *c, int depth)
{
    json_t *arr = json_array();
    c->p++;
    skip_space(c);
    if (arr != NULL && c->p < c->end && *c->p == ']') {
        c->p++;
        return arr;
    }
    while (arr != NULL) {
        json_t *v = read_value(c, depth + 1);
        if (v == NULL || json_array_append_new(arr, v) != 0)
            break;
        skip_space(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return arr;
        }
        if (c->p >= c->end || *c->p != ',')
            break;
        c->p++;
        skip_space(c);
    }
    json_decref(arr);
    return NULL;
}

/* A run of decimal digits at p (before end): its end. */
static const char *digits_end(const char *p, const char *end)
{
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p;
}

/* A real number in JSON's spelling, as jansson reads it: strtod of the
 * text, refused when it overflows. Left to jansson where the locale's
 * decimal point is not '.', as strtod would then misread it. */
static json_t *read_real(cursor_t *c, const char *start, const char *p)
{
    if (p < c->end && *p == '.') {
        const char *fraction = p + 1;
        p = digits_end(fraction, c->end);
        if (p == fraction)
            return NULL;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        p++;
        p += p < c->end && (*p == '+' || *p == '-');
        const char *exponent = p;
        p = digits_end(exponent, c->end);
        if (p == exponent)
            return NULL;
    }
    char text[PLAIN_REAL_MAX];
    size_t len = (size_t)(p - start);
    if (len >= sizeof text || localeconv()->decimal_point[0] != '.')
        return NULL;
    memcpy(text, start, len);
    text[len] = '\0';
    char *stop;
    errno = 0;
    double value = strtod(text, &stop);
    if (stop != text + len || (errno == ERANGE && isinf(value)))
        return NULL;
    c->p = p;
    return at_boundary(c) ? json_real(value) : NULL;
}

/* A number in JSON's spelling (no leading zero, no plus): an integer
 * without fraction or exponent, else a real. */
static json_t *read_number(cursor_t *c)
{
    const char *p = c->p;
    p += *p == '-';
    const char *digits = p;
    p = digits_end(digits, c->end);
    size_t count = (size_t)(p - digits);
    if (count == 0 || (*digits == '0' && count > 1))
        return NULL;
    if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return read_real(c, c->p, p);
    if (count > PLAIN_DIGITS)
        return NULL;
    uint64_t n = 0;
    for (const char *d = digits; d < p; d++)
        n = n * 10 + (uint64_t)(*d - '0');
    int negative = *c->p == '-';
    if (n > (uint64_t)LLONG_MAX + (uint64_t)negative)
        return NULL;  /* jansson: "too big integer" */
    c->p = p;
    return at_boundary(c) ? json_integer(negative ? (long long)(0 - n) : (long long)n) : NULL;
}

/* A literal: the word at c->p, then a boundary. */
static int read_word(cursor_t *c, const char *word, size_t len)
{
    if ((size_t)(c->end - c->p) < len || memcmp(c->p, word, len) != 0)
        return 0;
    c->p += len;
    return at_boundary(c);
}

static json_t *read_value(cursor_t *c, int depth)
{
    if (c->p >= c->end || depth > PLAIN_DEPTH)
        return NULL;
    switch (*c->p) {
    case '{':
        return read_object(c, depth);
    case '[':
        return read_array(c, depth);
    case '"': {
        const char *s;
        size_t len;
        return read_string(c, &s, &len) ? json_stringn_nocheck(s, len) : NULL;
    }
    case 't':
        return read_word(c, "true", 4) ? json_true() : NULL;
    case 'f':
        return read_word(c, "false", 5) ? json_false() : NULL;
    case 'n':
        return read_word(c, "null", 4) ? json_null() : NULL;
    default:
        return *c->p == '-' || (*c->p >= '0' && *c->p <= '9') ? read_number(c) : NULL;
    }
}

json_t *plain_parse(const char **pp, const char *limit)
{
    cursor_t c = { *pp, limit };
    json_t *v = read_value(&c, 0);
    if (v != NULL)
        *pp = c.p;
    return v;
}
