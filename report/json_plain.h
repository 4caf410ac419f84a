/* json_plain.h: the plain JSON a report is made of, parsed without jansson's
 * lexer. The shim writes ASCII strings without escapes, numbers, true,
 * false and null in arrays and objects; for that subset this parser is
 * three times faster than jansson (its tree is still jansson's: the same
 * values, keys in the same order). Anything outside the subset (an escape,
 * a byte above 127, an integer beyond a long long, a real of 64
 * characters or more or one that overflows, a key written twice, deep
 * nesting) is not judged here: the caller hands the text to jansson, which
 * parses it or says what is wrong with it. So no text jansson refuses is
 * ever accepted, and what is accepted is the tree jansson would make
 * (tests/cli/fuzz_load.c checks both). */
#ifndef GPULEAK_CLI_JSON_PLAIN_H
#define GPULEAK_CLI_JSON_PLAIN_H

#include <jansson.h>

/* Parses the value at *pp (before limit) and moves *pp past it, looking no
 * further (a number or a word must end at whitespace, a separator, a
 * closing bracket or the limit, as jansson's lexer reads them). NULL, *pp
 * unchanged, when the value is not plain JSON as above, or out of memory. */
json_t *plain_parse(const char **pp, const char *limit);

#endif
