/* units.c: parsing of the sizes and durations the options take. Every
 * parser here rejects what it does not fully understand, so a typo in a
 * budget is a usage error instead of a silently different budget. */
#include "units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct unit {
    const char *suffix;
    uint64_t scale;
};

/* Decimal prefixes are powers of 1000 and binary ones powers of 1024, as in
 * IEC 80000-13: "1.5MB" and "1.5MiB" differ and both are common in logs. A
 * bare letter (10K, 10M, 10G) is binary, as memory limits are written for
 * docker, ulimit and Kubernetes: a budget typed that way means what the
 * person who copied it from there meant. */
static const struct unit size_units[] = {
    { "", 1 }, { "b", 1 },
    { "kb", 1000ULL }, { "kib", 1024ULL }, { "k", 1024ULL },
    { "mb", 1000000ULL }, { "mib", 1048576ULL }, { "m", 1048576ULL },
    { "gb", 1000000000ULL }, { "gib", 1073741824ULL }, { "g", 1073741824ULL },
    { "tb", 1000000000000ULL }, { "tib", 1099511627776ULL }, { "t", 1099511627776ULL },
};

/* A bare number of seconds is accepted because that is what people type. */
static const struct unit time_units[] = {
    { "", 1000000000ULL }, { "ns", 1 }, { "us", 1000ULL }, { "ms", 1000000ULL },
    { "s", 1000000000ULL }, { "m", 60000000000ULL }, { "h", 3600000000000ULL },
};

/* Parses "DIGITS[.DIGITS]SUFFIX" into value * scale(SUFFIX), rounding a
 * fraction down to a whole unit of the result. Integer arithmetic only, so
 * "1.1GB" is exact and a value past 2^64 is refused instead of wrapping.
 * Returns 0 on success, -1 for anything else (empty, sign, junk, overflow). */
static int parse_scaled(const char *text, const struct unit *units, size_t nunits, uint64_t *out)
{
    if (text == NULL || !isdigit((unsigned char)*text))
        return -1;
    const char *p = text;
    uint64_t whole = 0;
    for (; isdigit((unsigned char)*p); p++) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (whole > (UINT64_MAX - digit) / 10)
            return -1;
        whole = whole * 10 + digit;
    }
    uint64_t frac = 0, frac_div = 1;
    int has_frac = 0;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        has_frac = 1;
        for (; isdigit((unsigned char)*p); p++) {
            if (frac_div >= 1000000000ULL)
                continue; /* digits past 1e-9 cannot change a whole result */
            frac = frac * 10 + (uint64_t)(*p - '0');
            frac_div *= 10;
        }
    }
    for (size_t i = 0; i < nunits; i++) {
        if (strcasecmp(p, units[i].suffix) != 0)
            continue;
        uint64_t scale = units[i].scale;
        if (has_frac && scale == 1)
            return -1; /* "1.5" bytes or ns has no meaning */
        if (whole != 0 && scale > UINT64_MAX / whole)
            return -1;
        uint64_t value = whole * scale;
        /* frac < frac_div <= 1e9 and scale <= 2^42, so this cannot overflow. */
        uint64_t part = (frac * (scale / frac_div)) + (frac * (scale % frac_div)) / frac_div;
        if (value > UINT64_MAX - part)
            return -1;
        *out = value + part;
        return 0;
    }
    return -1;
}

/* Sizes: 123, 4KiB, 1.5MB, 2GiB, 10M (KB=1000, KiB=K=1024, case-insensitive).
 * Returns 0 and sets *bytes, or -1 leaving it untouched. */
int units_parse_size(const char *text, uint64_t *bytes)
{
    return parse_scaled(text, size_units, sizeof size_units / sizeof size_units[0], bytes);
}

/* Durations: 100ms, 30s, 5m, 2h, 250us, 10ns; a bare number is seconds.
 * Returns 0 and sets *ns, or -1 leaving it untouched. */
int units_parse_time(const char *text, uint64_t *ns)
{
    return parse_scaled(text, time_units, sizeof time_units / sizeof time_units[0], ns);
}

/* Formats bytes the way the shim's summary does (B below 1 KiB, else one
 * decimal in the largest binary unit), so both views read alike. */
const char *units_format_size(uint64_t bytes, char buf[UNITS_SIZE_BUF])
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double value = (double)bytes;
    int unit = 0;
    while (value >= 1024.0 && unit < 6) {
        value /= 1024.0;
        unit++;
    }
    if (unit == 0)
        snprintf(buf, UNITS_SIZE_BUF, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, UNITS_SIZE_BUF, "%.1f %s", value, names[unit]);
    return buf;
}

/* Saturating addition: totals over untrusted reports must not wrap to a
 * small number and pass a budget they exceed. */
uint64_t units_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
