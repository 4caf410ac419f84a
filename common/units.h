/* units.h: sizes and durations as people write them (4KiB, 1.5MB, 30s),
 * and sizes as people read them: the one way every view, the shim's exit
 * summary and the command's alike, prints a size. */
#ifndef GPULEAK_UNITS_H
#define GPULEAK_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* How sizes may be written, for help and messages. */
#define UNITS_SIZE_FORMS "123, 4KiB, 1.5MB, 2GiB, 10M (KB=1000, KiB=1024; a bare K, M, G or T is binary)"

/* Longest text units_format_size writes, terminator included. */
#define UNITS_SIZE_BUF 32

int units_parse_size(const char *text, uint64_t *bytes);
int units_parse_time(const char *text, uint64_t *ns);
const char *units_format_size(uint64_t bytes, char buf[UNITS_SIZE_BUF]);
uint64_t units_add(uint64_t a, uint64_t b);

#endif
