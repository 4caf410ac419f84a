/* report_json.h: the report file, JSON in docs/report-format.md's format,
 * formatted from a gathered view. */
#ifndef GPULEAK_REPORT_JSON_H
#define GPULEAK_REPORT_JSON_H

#include "report_view.h"

/* What report_json_write may do to a file already at its path. */
typedef enum report_place {
    REPORT_REPLACE_REPORT, /* replace it only when it is a gpuleak report */
    REPORT_CREATE_ONLY,    /* never replace anything: a shared directory's name */
} report_place_t;

/* Writes the report as JSON to path, through a temporary file of an
 * unguessable name in the same directory (created O_EXCL | O_NOFOLLOW)
 * moved into place as place allows. Returns 0, or -1 with errno set:
 * EEXIST when a file at path may not be replaced. */
int report_json_write(const char *path, const report_view_t *view, report_place_t place);

#endif
