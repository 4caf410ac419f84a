/* json_split.h: a JSON document read in pieces, so that a big report is
 * never one jansson tree. Parsed whole, a 66 MB report of 100,000 sites
 * took 13 times its size; here the top-level object (and, one level down,
 * the objects a rule names) is read member by member, and the members a
 * rule streams (the site lists, the stack table) stay text until a reader
 * walks them, one element parsed at a time and freed at the next.
 *
 * Every piece is parsed by jansson, or, when it is plain JSON as the shim
 * writes it, into jansson's values by json_plain.h (three times faster, the
 * same tree); the text between pieces is checked as strictly as jansson
 * would (separators, brackets, nothing after the document), so a document
 * read this way is well-formed JSON. Where a piece is not, the reader gives
 * up and the caller parses the text whole, for jansson's own message. */
#ifndef GPULEAK_CLI_JSON_SPLIT_H
#define GPULEAK_CLI_JSON_SPLIT_H

#include <jansson.h>
#include <stddef.h>

typedef enum {
    SPLIT_PARSE,   /* the value parsed whole */
    SPLIT_STREAM,  /* an array or object left as text, walked with split_iter */
    SPLIT_MEMBERS, /* an object whose own members follow the rule (one level
                      down only); an array is streamed */
    SPLIT_SKIP,    /* the member left out */
    SPLIT_EMPTY,   /* the member kept as an empty array */
} split_rule_t;

/* The rule for a member: path is its key at the top level, "key.sub" one
 * level down; data is split_open's. */
typedef split_rule_t (*split_rule_fn)(const char *path, const void *data);

typedef struct split_doc split_doc_t;

/* Reads the object in text[0..len) by rule. Its tree (split_root) holds
 * every parsed member; a streamed one is an empty array or object that
 * split_iter_begin recognises. NULL when the text is not a JSON object this
 * reader can split (or out of memory): the caller parses it whole. text
 * must outlive the document. */
split_doc_t *split_open(const char *text, size_t len, split_rule_fn rule, const void *data);

/* The tree; owned by the document. */
json_t *split_root(const split_doc_t *doc);

/* Whether v is a streamed member's stand-in. */
int split_is_streamed(const split_doc_t *doc, const json_t *v);

/* A streamed member's text, from its opening to its closing bracket
 * inclusive, at *start and *end; 0 when v is not a stand-in. */
int split_text(const split_doc_t *doc, const json_t *v, const char **start, const char **end);

/* Frees the document (the text is the caller's). NULL is a no-op. */
void split_close(split_doc_t *doc);

/* A walk over an array's elements or an object's values, streamed or
 * parsed alike (doc may be NULL for a tree parsed whole). */
typedef struct {
    json_t *tree;          /* a parsed container, walked in place; or NULL */
    size_t index;
    void *member;          /* json_object_iter position in tree */
    const char *p, *close; /* text: the next piece, the closing bracket */
    const char *piece;     /* text: where the last value handed out starts */
    int object, started, failed;
    json_t *value, *key;   /* text: the last piece handed out (owned) */
} split_iter_t;

void split_iter_begin(split_iter_t *it, const split_doc_t *doc, json_t *container);

/* The next element (or member's value), borrowed until the next call or
 * split_iter_end; NULL at the end, or when the text is not JSON
 * (split_iter_failed). */
json_t *split_iter_next(split_iter_t *it);

/* The next piece's text, [*start, *end), found without parsing its value,
 * for a document already read whole once; its key (objects) as
 * split_iter_key gives it. 0 at the end, for a parsed tree, or when the
 * text is not JSON (split_iter_failed). */
int split_iter_next_text(split_iter_t *it, const char **start, const char **end);

/* The key of the member split_iter_next returned last (objects only). */
const char *split_iter_key(const split_iter_t *it);

/* The text of the value split_iter_next returned last, [*start, *end);
 * 0 when it came from a parsed tree. */
int split_iter_text(const split_iter_t *it, const char **start, const char **end);

int split_iter_failed(const split_iter_t *it);
void split_iter_end(split_iter_t *it);

#endif
