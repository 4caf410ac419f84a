/* html.h: `gpuleak html FILE... -o OUT.html`: the reports as one
 * self-contained interactive page (report/html/, third_party/js/). */
#ifndef GPULEAK_CLI_HTML_H
#define GPULEAK_CLI_HTML_H

/* Writes one page holding every report given (each checked as the other
 * commands check it), the page's template, style, script and the vendored
 * libraries inlined, so it opens with no network and no other file. argv
 * holds the arguments after "html". Returns 0 when the page was written;
 * 2, after one line on stderr, for bad usage, a report that cannot be read
 * or a failed write (OUT is then left as it was). */
int html_main(int argc, char **argv);

#endif
