/* frames.h: how a site's stack is shown and named, shared by every view so
 * that a site reads the same in report, check, diff and merge. */
#ifndef GPULEAK_CLI_FRAMES_H
#define GPULEAK_CLI_FRAMES_H

#include "frame_text.h"
#include "load.h"

#include <stdio.h>

/* How the views name site's memory: its kind's phrase, a tensor site's
 * framework's ("JAX array memory"), as the shim's exit summary does. */
const char *frames_site_phrase(const load_site_t *site);
void frames_print_stack(FILE *f, const load_site_t *site, size_t limit);
char *frames_origin(const load_site_t *site);

/* The line a site's origin names, as a key that sites share when they
 * share that line ("file:line", or "module+0xoffset" for a native frame
 * without one); a site without an origin is its own key. Malloc'd; NULL
 * when out of memory. */
char *frames_origin_line(const load_site_t *site);

/* A site's identity across runs and rebuilds. Site ids and addresses change
 * from run to run (ASLR, allocation order), and offsets and line numbers
 * with every rebuild (one comment line added shifts both), so the name is
 * what survives them: the kind, each native frame's function (its module's
 * basename and offset only when it has none) and each Python frame's
 * function and file basename. The frames' lines (0 where unknown), in the
 * same order, tell apart sites that share a name (two calls in one
 * function). */
typedef struct {
    char *name;
    long *lines;
    size_t nlines;
} frames_id_t;

/* Fills *id for site (malloc'd; frames_id_free). Returns 0, or -1 when out
 * of memory, with *id freed. */
int frames_id(const load_site_t *site, frames_id_t *id);
void frames_id_free(frames_id_t *id);

/* Orders ids by name, then lines (frames_id_cmp), or by lines alone
 * (frames_id_cmp_lines); a negative, zero or positive result as strcmp's. */
int frames_id_cmp(const frames_id_t *a, const frames_id_t *b);
int frames_id_cmp_lines(const frames_id_t *a, const frames_id_t *b);

/* The innermost native frame that the origin rules keep (the built-in
 * table, or the rules a re-judge set: common/origin_rules.h), else the
 * innermost native frame; NULL when the site has no native stack. For a
 * report without the shim's origin, and for export's columns. */
const load_frame_t *frames_innermost_user(const load_site_t *site);

/* Prints, a line each after indent, up to limit of the Python objects that
 * held the site's memory when Python finished ("held by ..."), and how many
 * more there were. Prints nothing for a site without them. */
void frames_print_holders(FILE *f, const load_site_t *site, const char *indent, size_t limit);

#endif
