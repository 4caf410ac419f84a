/* frames.h: how a site's stack is shown and named, shared by every view so
 * that a site reads the same in report, check, diff and merge. */
#ifndef GPULEAK_CLI_FRAMES_H
#define GPULEAK_CLI_FRAMES_H

#include "load.h"

#include <stdio.h>

const char *frames_basename(const char *path);
const char *frames_kind_phrase(const char *kind);
void frames_put(FILE *f, const char *text);
void frames_print_stack(FILE *f, const load_site_t *site, size_t limit);
char *frames_origin(const load_site_t *site);

/* The line a site's origin names, as a key that sites share when they
 * share that line ("file:line", or "module+0xoffset" for a native frame
 * without one); a site without an origin is its own key. Malloc'd; NULL
 * when out of memory. */
char *frames_origin_line(const load_site_t *site);
char *frames_key(const load_site_t *site);
const load_frame_t *frames_innermost_user(const load_site_t *site);

/* Prints, a line each after indent, up to limit of the Python objects that
 * held the site's memory when Python finished ("held by ..."), and how many
 * more there were. Prints nothing for a site without them. */
void frames_print_holders(FILE *f, const load_site_t *site, const char *indent, size_t limit);

#endif
