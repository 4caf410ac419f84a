/* supp.h: LeakSanitizer-style suppressions ("leak:PATTERN" lines) and the
 * built-in list of allocations that are kept on purpose by libraries. */
#ifndef GPULEAK_CLI_SUPP_H
#define GPULEAK_CLI_SUPP_H

#include "load.h"

#include <stdint.h>
#include <stdio.h>

typedef struct supp_set supp_set_t;

typedef struct {
    const char *pattern;
    const char *source; /* "default" or the file it came from */
    uint64_t count;     /* allocations suppressed */
    uint64_t bytes;
} supp_rule_info_t;

supp_set_t *supp_new(void);
void supp_free(supp_set_t *set);
int supp_add_defaults(supp_set_t *set);
int supp_add_line(supp_set_t *set, const char *line, const char *source, char **error);
int supp_load_file(supp_set_t *set, const char *path, char **error);
int supp_match(const supp_set_t *set, const load_site_t *site);
void supp_record(supp_set_t *set, int rule, uint64_t allocations, uint64_t bytes);
size_t supp_count(const supp_set_t *set);
supp_rule_info_t supp_info(const supp_set_t *set, size_t rule);
void supp_print_used(FILE *f, const supp_set_t *set);

#endif
